package archive

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	rows         *prometheus.CounterVec
	failures     prometheus.Counter
	backlog, lag prometheus.Gauge
}

func newMetrics() *metrics {
	return &metrics{
		rows: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sigops_archive_entries_total",
			Help: "Archive stream entries copied to PostgreSQL, by kind (trade, order, result); a copy repeated after a crash counts again.",
		}, []string{"kind"}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sigops_archive_failures_total",
			Help: "Archiver steps that failed (PostgreSQL or Redis unreachable); the entries stay in the stream and are copied later.",
		}),
		backlog: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sigops_archive_backlog_entries",
			Help: "Entries in this executor's archive streams not yet trimmed (at most what PostgreSQL has not committed, plus one step).",
		}),
		lag: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sigops_archive_lag_seconds",
			Help: "Age of the oldest archive entry this executor has not committed to PostgreSQL (0 when caught up).",
		}),
	}
}

// Collectors are the archiver's metrics, for the executor's registry.
func (a *Archiver) Collectors() []prometheus.Collector {
	return []prometheus.Collector{a.m.rows, a.m.failures, a.m.backlog, a.m.lag}
}
