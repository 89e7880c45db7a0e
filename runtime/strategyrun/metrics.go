package strategyrun

import "github.com/prometheus/client_golang/prometheus"

// metrics of one Runner; per Runner, not global, so a test may run two and the daemon
// decides where they are registered.
type metrics struct {
	evaluations prometheus.Counter
	signals     *prometheus.CounterVec
	suppressed  prometheus.Counter
	errors      prometheus.Counter
	skipped     prometheus.Counter
	latency     prometheus.Histogram
}

func newMetrics() *metrics {
	m := &metrics{
		evaluations: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sigops_strategy_evaluations_total",
			Help: "Closed candles evaluated and marked (each candle of each strategy bot once, across replicas).",
		}),
		signals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sigops_strategy_signals_total",
			Help: "Strategy signals queued, by action (buy, sell, close_long, close_short).",
		}, []string{"action"}),
		suppressed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sigops_strategy_signals_suppressed_total",
			Help: "Strategy signals not queued because the bot was paused or disabled at its candle, or (entries) Redis was above its memory watermark.",
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sigops_strategy_evaluation_errors_total",
			Help: "Bot evaluations that failed (candles unavailable, Redis, bad spec); retried at the next wake.",
		}),
		skipped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sigops_strategy_catchup_skipped_total",
			Help: "Closed candles never evaluated because they were older than the catch-up bound when the runner resumed.",
		}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sigops_strategy_evaluation_seconds",
			Help:    "Time of one bot's evaluation: candle fetch, strategy, the emit script.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}),
	}
	for _, a := range []string{"buy", "sell", "close_long", "close_short"} {
		m.signals.WithLabelValues(a)
	}
	return m
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.evaluations, m.signals, m.suppressed, m.errors, m.skipped, m.latency}
}
