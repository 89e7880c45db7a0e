package webhookd

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sigops/sigops/runtime/result"
)

type resultT = result.Result

type metrics struct {
	signals       *prometheus.CounterVec
	intakeLatency prometheus.Histogram
	totalLatency  prometheus.Histogram
}

func newMetrics() *metrics {
	buckets := []float64{.0005, .001, .002, .005, .01, .025, .05, .1, .25, .5, 1, 2, 3}
	return &metrics{
		signals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sigops_webhook_signals_total",
			Help: "Webhook signals by outcome (executed, failed, queued, duplicate, refused, error) and code.",
		}, []string{"outcome", "code"}),
		intakeLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "sigops_webhook_receive_to_queued_seconds", Help: "From request received to signal queued.", Buckets: buckets,
		}),
		totalLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "sigops_webhook_receive_to_result_seconds", Help: "From request received to the executor's result.", Buckets: buckets,
		}),
	}
}

func (m *metrics) register(r prometheus.Registerer) error {
	for _, c := range []prometheus.Collector{m.signals, m.intakeLatency, m.totalLatency} {
		if err := r.Register(c); err != nil {
			return err
		}
	}
	return nil
}
