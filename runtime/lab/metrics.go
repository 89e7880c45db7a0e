package lab

import "github.com/prometheus/client_golang/prometheus"

// Job events counted by sigops_lab_jobs_total.
const (
	jobQueued   = "queued"
	jobFinished = "finished"
	jobFailed   = "failed"
)

// Metrics of the Strategy Lab: the Lab counts queued jobs (in the daemon that serves
// generate_strategy), the Engine the rest (in the executors). Per instance, not global, so
// a process or a test may run several; the daemon registers Collectors.
type Metrics struct {
	jobs        *prometheus.CounterVec
	experiments *prometheus.CounterVec
	duration    prometheus.Histogram
	refunds     prometheus.Counter
}

// NewMetrics makes a set of Strategy Lab metrics.
func NewMetrics() *Metrics {
	return &Metrics{
		jobs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sigops_lab_jobs_total",
			Help: "Strategy Lab jobs by event: queued (charged), finished (ranked, at least one experiment ran), failed (every experiment failed, all refunded).",
		}, []string{"event"}),
		experiments: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sigops_lab_experiments_total",
			Help: "Strategy Lab experiments run, by outcome: ok or failed (refunded).",
		}, []string{"outcome"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "sigops_lab_experiment_seconds",
			Help:    "Time one experiment's backtest took.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}),
		refunds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sigops_lab_refunded_experiments_total",
			Help: "Failed experiments refunded to their users' wallets (0.50 USD each).",
		}),
	}
}

// Collectors are the metrics, for the daemon to register.
func (m *Metrics) Collectors() []prometheus.Collector {
	return []prometheus.Collector{m.jobs, m.experiments, m.duration, m.refunds}
}
