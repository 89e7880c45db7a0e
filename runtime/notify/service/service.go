// Package service is notifyd: the feed reads the runtime's streams and queues each event
// for the channels of its user that want it (runtime/notify/feed, route, outbox); the
// deliverer sends what is due, gathering bursts and retrying for a day (outbox.Deliverer,
// channels); the Telegram bot's updates link and unlink chats (chatbot). It runs apart from
// webhookd and the executor, so a channel that is down never slows a fill: the runtime
// only appends facts it writes anyway, and notifyd reads them at its own pace.
//
// One notifyd works at a time: a replica takes a PostgreSQL advisory lock before it reads
// or delivers, and a standby waits for it, so a burst's messages are gathered by one
// process.
package service

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/notify/feed"
	"github.com/sigops/sigops/runtime/notify/outbox"
	"github.com/sigops/sigops/runtime/notify/summary"
)

// lockKey is notifyd's advisory lock (any constant the schema does not use elsewhere).
const lockKey = 0x5167_6e74_6679

// Options configure a Service.
type Options struct {
	Redis     redis.UniversalClient
	DB        *pgxpool.Pool
	Router    feed.Router
	Deliverer *outbox.Deliverer
	// Summaries, when set, sends the daily summaries (checked every minute).
	Summaries *summary.Scheduler
	// Poll, when set, receives the Telegram bot's updates until ctx ends.
	Poll func(ctx context.Context) error
	// Interval is the pause between steps that found nothing (200 ms when zero).
	Interval time.Duration
	Now      func() time.Time
	Logger   *slog.Logger
}

// Service is notifyd's work.
type Service struct {
	o Options
	m metrics
}

// New is a Service of o.
func New(o Options) *Service {
	if o.Interval <= 0 {
		o.Interval = 200 * time.Millisecond
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Service{o: o, m: newMetrics()}
}

// Collectors are the service's metrics.
func (s *Service) Collectors() []prometheus.Collector { return s.m.collectors() }

// Run works until ctx ends: it waits for the lock, then reads and delivers.
func (s *Service) Run(ctx context.Context) error {
	conn, err := s.o.DB.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	for {
		var got bool
		if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, int64(lockKey)).Scan(&got); err != nil {
			return err
		}
		if got {
			break
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(2 * time.Second):
		}
	}
	s.o.Logger.Info("notifyd holds the lock: reading and delivering")
	if s.o.Poll != nil {
		go func() {
			if err := s.o.Poll(ctx); err != nil {
				s.o.Logger.Error("Telegram updates stopped: links, buttons and commands are not received", "err", err)
			}
		}()
	}
	go s.deliverLoop(ctx)
	if s.o.Summaries != nil {
		go s.summaryLoop(ctx)
	}
	s.readLoop(ctx)
	return nil
}

func (s *Service) readLoop(ctx context.Context) {
	r := &feed.Reader{Redis: s.o.Redis, DB: s.o.DB, Router: s.o.Router}
	backoff := s.o.Interval
	for ctx.Err() == nil {
		n, err := r.Step(ctx, s.o.Now())
		switch {
		case err != nil:
			s.o.Logger.Warn("notify feed step failed", "err", err)
			backoff = min(2*backoff, 5*time.Second)
		case n > 0:
			s.m.events.Add(float64(n))
			backoff = s.o.Interval
			continue
		default:
			backoff = s.o.Interval
		}
		sleep(ctx, backoff)
	}
}

func (s *Service) deliverLoop(ctx context.Context) {
	var pruned, counted time.Time
	for ctx.Err() == nil {
		now := s.o.Now()
		out, err := s.o.Deliverer.Step(ctx, now)
		if err != nil && ctx.Err() == nil {
			s.o.Logger.Warn("notify delivery step failed", "err", err)
		}
		s.m.count(out)
		for _, r := range out.Dropped {
			s.o.Logger.Warn("notification dropped after a day of failed deliveries", "channel", r.Channel, "kind", r.Event.Kind, "event", r.Event.ID)
		}
		if now.Sub(pruned) > time.Hour {
			if _, err := outbox.Prune(ctx, s.o.DB, now); err == nil {
				pruned = now
			}
		}
		if now.Sub(counted) >= 10*time.Second {
			if err := s.m.observePending(ctx, s.o.DB); err != nil && ctx.Err() == nil {
				s.o.Logger.Warn("count pending notifications", "err", err)
			}
			counted = now
		}
		if out.Messages == 0 {
			sleep(ctx, s.o.Interval)
		}
	}
}

func (s *Service) summaryLoop(ctx context.Context) {
	for ctx.Err() == nil {
		if _, err := s.o.Summaries.Step(ctx); err != nil && ctx.Err() == nil {
			s.o.Logger.Warn("daily summaries", "err", err)
		}
		sleep(ctx, time.Minute)
	}
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
