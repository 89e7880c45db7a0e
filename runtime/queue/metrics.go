package queue

import (
	"context"
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
)

// Lease events counted by sigops_queue_lease_changes_total.
const (
	leaseAcquired = "acquired"
	leaseReleased = "released"
	leaseLost     = "lost"
)

// metrics of one Consumer. They are per Consumer, not global, so a process (or a test) may
// run several and the daemon decides where they are registered.
type metrics struct {
	processed     *prometheus.CounterVec
	handlerErrors *prometheus.CounterVec
	wait          *prometheus.HistogramVec
	malformed     prometheus.Counter
	deadLetters   *prometheus.CounterVec
	reclaimed     prometheus.Counter
	unconfirmed   prometheus.Counter
	lost          prometheus.Counter
	leases        *prometheus.CounterVec
	owned         prometheus.Gauge
	depth         *depthCollector
}

func newMetrics(rdb redis.UniversalClient, log *slog.Logger) *metrics {
	prio := []string{"priority"}
	m := &metrics{
		processed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sigops_queue_signals_processed_total",
			Help: "Signals the handler finished and the queue acknowledged, by priority.",
		}, prio),
		handlerErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sigops_queue_handler_errors_total",
			Help: "Handler calls that failed and will be retried (infrastructure failures), by priority.",
		}, prio),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "sigops_queue_wait_seconds",
			Help: "Time from intake (Envelope.ReceivedAt) to the first handler call, by priority. " +
				"The spec's targets: 0.1 s for priority 1 up to 0.5 s for priority 4.",
			Buckets: []float64{.005, .01, .025, .05, .1, .2, .3, .5, 1, 2.5, 5, 10, 30},
		}, prio),
		malformed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sigops_queue_malformed_total",
			Help: "Stream entries that could not be decoded (dead-lettered).",
		}),
		deadLetters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sigops_queue_dead_letters_total",
			Help: "Signals moved to the dead-letter stream with a failure result, by reason: " +
				"retry_budget_spent, handler_panic, malformed_entry.",
		}, []string{"reason"}),
		reclaimed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sigops_queue_reclaimed_total",
			Help: "Pending entries taken over (XAUTOCLAIM) from a previous owner of a partition.",
		}),
		unconfirmed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sigops_queue_unconfirmed_total",
			Help: "Finished signals run again because their writes were not confirmed: the " +
				"acknowledgement or the replicas' WAIT failed, or the Redis master changed while they ran.",
		}),
		lost: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "sigops_queue_lost_entries_total",
			Help: "Entries read from a Redis master that failed before a replica had them, not run: " +
				"the master now serving lacks them, and their senders were not acknowledged.",
		}),
		leases: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "sigops_queue_lease_changes_total",
			Help: "Partition lease changes of this instance: acquired, released, lost.",
		}, []string{"event"}),
		owned: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "sigops_queue_partitions_owned",
			Help: "Partitions this instance holds a lease on.",
		}),
		depth: &depthCollector{rdb: rdb, log: log, desc: prometheus.NewDesc(
			"sigops_queue_depth",
			"Signals waiting or in flight, summed over all partitions, by priority (XLEN; "+
				"the same cluster-wide value on every instance).",
			prio, nil)},
	}
	// Every reason is exported from the start, at zero, so an alert on its rate has a series.
	for _, r := range []string{ReasonBudget, ReasonPanic, ReasonMalformed} {
		m.deadLetters.WithLabelValues(r)
	}
	return m
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.processed, m.handlerErrors, m.wait, m.malformed, m.deadLetters, m.reclaimed, m.unconfirmed, m.lost,
		m.leases, m.owned, m.depth}
}

func prioLabel(p Priority) string { return strconv.Itoa(int(p)) }

// depthCollector reads the queue depth on scrape rather than on a timer: one pipelined XLEN
// per stream (128 commands, one round trip), only as often as Prometheus asks.
type depthCollector struct {
	rdb  redis.UniversalClient
	log  *slog.Logger
	desc *prometheus.Desc
}

func (d *depthCollector) Describe(ch chan<- *prometheus.Desc) { ch <- d.desc }

func (d *depthCollector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var cmds [numPriorities][]*redis.IntCmd
	_, err := d.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, prio := range Priorities {
			for part := 0; part < Partitions; part++ {
				cmds[i] = append(cmds[i], p.XLen(ctx, store.QueueStream(part, int(prio))))
			}
		}
		return nil
	})
	if err != nil {
		// Leave the gauge out of this scrape rather than report a wrong zero; the other
		// collectors still answer.
		d.log.Warn("queue depth unavailable", "err", err)
		return
	}
	for i, prio := range Priorities {
		var n int64
		for _, c := range cmds[i] {
			n += c.Val()
		}
		ch <- prometheus.MustNewConstMetric(d.desc, prometheus.GaugeValue, float64(n), prioLabel(prio))
	}
}
