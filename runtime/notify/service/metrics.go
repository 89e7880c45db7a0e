package service

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sigops/sigops/runtime/notify/outbox"
)

// metrics: sigops_notify_* (docs/operations.md).
type metrics struct {
	events   prometheus.Counter
	sent     prometheus.Counter
	messages prometheus.Counter
	failed   prometheus.Counter
	dropped  prometheus.Counter
	queued   prometheus.Gauge
}

func newMetrics() metrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	return metrics{
		events:   c("sigops_notify_events_total", "events read from the runtime's streams"),
		sent:     c("sigops_notify_deliveries_sent_total", "deliveries sent (an event gathered into a burst's message counts once)"),
		messages: c("sigops_notify_messages_sent_total", "messages sent (a burst's gathered events are one message)"),
		failed:   c("sigops_notify_deliveries_failed_total", "delivery attempts that failed (retried with backoff)"),
		dropped:  c("sigops_notify_deliveries_dropped_total", "deliveries given up after a day of failures"),
		queued: prometheus.NewGauge(prometheus.GaugeOpts{Name: "sigops_notify_deliveries_queued",
			Help: "deliveries waiting to be sent"}),
	}
}

func (m metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.events, m.sent, m.messages, m.failed, m.dropped, m.queued}
}

func (m metrics) count(o outbox.Outcome) {
	m.sent.Add(float64(o.Sent))
	m.messages.Add(float64(o.Messages))
	m.failed.Add(float64(o.Failed))
	m.dropped.Add(float64(len(o.Dropped)))
}

func (m metrics) observePending(ctx context.Context, db *pgxpool.Pool) error {
	var n int64
	if err := db.QueryRow(ctx, `SELECT count(*) FROM notify_outbox WHERE state = 'pending'`).Scan(&n); err != nil {
		return err
	}
	m.queued.Set(float64(n))
	return nil
}
