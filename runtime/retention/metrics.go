package retention

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	trades, orders, errors prometheus.Counter
	last                   prometheus.Gauge
}

func newMetrics() *metrics {
	return &metrics{
		trades: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sigops_retention_trades_removed_total",
			Help: "Trades removed from bots' trade lists after the history retention (their days keep them).",
		}),
		orders: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sigops_retention_orders_removed_total",
			Help: "Order IDs removed from bots' order lists after the history retention.",
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sigops_retention_errors_total",
			Help: "Bots whose history compaction failed (retried on the next run).",
		}),
		last: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sigops_retention_last_run_timestamp_seconds",
			Help: "When the history compactor last ran (Unix seconds).",
		}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.trades, m.orders, m.errors, m.last}
}
