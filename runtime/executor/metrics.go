package executor

import (
	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	signals  *prometheus.CounterVec
	queued   prometheus.Histogram
	execute  prometheus.Histogram
	exchange *prometheus.HistogramVec
	pauses   *prometheus.CounterVec
	triggers *prometheus.CounterVec
}

// latency buckets from 0.5 ms to 10 s.
var buckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

func newMetrics() *metrics {
	return &metrics{
		signals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sigops_executor_signals_total",
			Help: "Signals handled, by outcome (success, failure, duplicate, retry, dead_letter) and error code.",
		}, []string{"outcome", "code"}),
		queued: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sigops_executor_queued_to_executed_seconds",
			Help:    "Time from intake (Envelope.ReceivedAt) to the result.",
			Buckets: buckets,
		}),
		execute: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sigops_executor_execute_seconds",
			Help:    "Time the executor spent on one signal.",
			Buckets: buckets,
		}),
		exchange: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "sigops_executor_exchange_seconds",
			Help:    "Time of exchange order calls, by venue.",
			Buckets: buckets,
		}, []string{"venue"}),
		pauses: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sigops_executor_pauses_total",
			Help: "Runtime pauses written, by reason (Errors, Risk).",
		}, []string{"reason"}),
		triggers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sigops_watcher_triggers_total",
			Help: "Exit signals enqueued by the price watcher, by trigger.",
		}, []string{"trigger"}),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.signals, m.queued, m.execute, m.exchange, m.pauses, m.triggers}
}
