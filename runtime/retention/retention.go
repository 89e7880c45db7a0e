// Package retention bounds a bot's trade and order history in Redis: the executor's
// compactor removes the trades closed and the finished orders last changed before the
// retention's cutoff, after checking that the bot's per-day aggregates (runtime/analytics)
// hold every trade it removes. Reports over any period stay exact, since they read the
// per-day aggregates alone; trade and order lists go back to the cutoff.
//
// With PostgreSQL's archive (Options.Archive), the retention is Redis's hot window: the
// history itself is in PostgreSQL (runtime/history reads both), the window may be as short
// as MinHot, and nothing is removed from Redis before PostgreSQL holds it: the compactor
// writes what it removes to PostgreSQL first (the archiver's own rows, so a fact written
// both ways is one row), which also carries history booked before the archive existed.
//
// The compactor works the bots of the queue partitions this executor holds (the partition
// lease spreads the work; the writes are guarded scripts, so two compactors on one bot
// are safe). Order records expire on their own after the same retention
// (position.SetOrderTTL): the compactor drops their IDs from the order list.
package retention

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
)

const (
	// Default is the history retention when none is configured: the order records' life.
	Default = position.OrderTTL
	// Min is the shortest retention without an archive, where Redis is the only copy: an
	// order record must outlive the signal that wrote it (a signal's retry looks its
	// orders up for the seven days its progress is kept).
	Min = 7 * 24 * time.Hour
	// DefaultHot is the hot window with an archive: a day, the life of a signal's result
	// and of its idempotency key in Redis.
	DefaultHot = 24 * time.Hour
	// MinHot is the shortest hot window: what a retried signal needs of its orders is
	// re-read from the venue or rebuilt (an open order's record is never removed), so the
	// floor is only a sanity bound, short enough to show the window fill and flatten.
	MinHot = 10 * time.Minute
	// DefaultInterval is how often the compactor runs.
	DefaultInterval = time.Hour
	// tradeBatch bounds the trades one script removes, so that a long backlog (the first
	// run after an upgrade) blocks Redis for a few milliseconds at a time.
	tradeBatch = 10_000
)

// Ownership says which queue partitions this executor holds; queue.Consumer implements it.
type Ownership interface {
	Owned() []int
}

// Archive writes facts to PostgreSQL before they leave Redis; archive.Keeper implements it.
type Archive interface {
	Trades(ctx context.Context, trades []position.Trade) error
	Orders(ctx context.Context, recs []position.OrderRecord) error
}

// Options configure a Compactor.
type Options struct {
	Redis redis.UniversalClient
	Owner Ownership
	// Archive, when set, makes the retention the hot window in front of PostgreSQL.
	Archive Archive
	// Retention is how long history is kept in Redis (Default, at least Min; with an
	// Archive DefaultHot, at least MinHot).
	Retention time.Duration
	// Interval is the time between runs (DefaultInterval).
	Interval time.Duration
	// Now is the clock (time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// Compactor removes history older than the retention. See the package comment.
type Compactor struct {
	rdb       redis.UniversalClient
	owner     Ownership
	archive   Archive
	retention time.Duration
	interval  time.Duration
	now       func() time.Time
	log       *slog.Logger
	m         *metrics
}

// New builds a Compactor; its metrics are in Collectors.
func New(o Options) (*Compactor, error) {
	c := &Compactor{rdb: o.Redis, owner: o.Owner, archive: o.Archive, retention: o.Retention, interval: o.Interval,
		now: o.Now, log: o.Logger, m: newMetrics()}
	floor := Min
	if c.archive != nil {
		floor = MinHot
		if c.retention == 0 {
			c.retention = DefaultHot
		}
	}
	if c.retention == 0 {
		c.retention = Default
	}
	if c.retention < floor {
		return nil, fmt.Errorf("history retention %s is shorter than %s", c.retention, floor)
	}
	if c.interval <= 0 {
		// A short hot window is compacted often enough to stay near its length.
		c.interval = min(DefaultInterval, max(time.Minute, c.retention/10))
	}
	if c.now == nil {
		c.now = time.Now
	}
	if c.log == nil {
		c.log = slog.Default()
	}
	c.log = c.log.With("component", "retention")
	return c, nil
}

// Collectors are the Compactor's Prometheus metrics, for the daemon to register.
func (c *Compactor) Collectors() []prometheus.Collector { return c.m.collectors() }

// Retention is how long history is kept.
func (c *Compactor) Retention() time.Duration { return c.retention }

// Cutoff is the start of the UTC day the retention reaches back to from now: history
// before it is removed, so that lists always hold whole days. With an archive, where the
// lists are only the hot window, it is now less the window, to the second.
func (c *Compactor) Cutoff(now time.Time) time.Time {
	if c.archive != nil {
		return now.Add(-c.retention).UTC().Truncate(time.Second)
	}
	return now.Add(-c.retention).UTC().Truncate(24 * time.Hour)
}

// Removed counts what one compaction removed.
type Removed struct{ Trades, Orders int }

// Bot compacts one bot's history at cutoff: its trades (in batches, until none before the
// cutoff is left), then its order list.
func (c *Compactor) Bot(ctx context.Context, botID string, cutoff time.Time) (Removed, error) {
	var r Removed
	for {
		var keep analytics.KeepTrades
		if c.archive != nil {
			keep = c.archive.Trades
		}
		n, err := analytics.CompactKept(ctx, c.rdb, botID, cutoff, tradeBatch, keep)
		r.Trades += n
		if err != nil {
			return r, err
		}
		if n < tradeBatch {
			break
		}
	}
	var keep position.KeepOrders
	if c.archive != nil {
		keep = c.archive.Orders
	}
	n, err := position.CompactKeptOrders(ctx, c.rdb, botID, cutoff.UnixMilli(), keep)
	r.Orders += n
	return r, err
}

// Partitions compacts every bot of the given partitions at cutoff (the bots from the
// registry's set of all bots). A bot's failure is logged and counted; the others go on.
func (c *Compactor) Partitions(ctx context.Context, partitions []int, cutoff time.Time) (Removed, error) {
	var total Removed
	if len(partitions) == 0 {
		return total, nil
	}
	ids, err := registry.BotIDs(ctx, c.rdb)
	if err != nil {
		return total, err
	}
	slices.Sort(ids)
	for _, id := range ids {
		if !slices.Contains(partitions, store.PartitionOf(id)) {
			continue
		}
		if ctx.Err() != nil {
			return total, ctx.Err()
		}
		r, err := c.Bot(ctx, id, cutoff)
		total.Trades += r.Trades
		total.Orders += r.Orders
		c.m.trades.Add(float64(r.Trades))
		c.m.orders.Add(float64(r.Orders))
		if err != nil {
			c.m.errors.Inc()
			c.log.Warn("compacting a bot's history failed", "bot", id, "error", err)
		}
	}
	return total, nil
}

// Run compacts the held partitions at start and every Interval until ctx ends; it returns
// nil then.
func (c *Compactor) Run(ctx context.Context) error {
	c.log.Info("history compactor started", "retention", c.retention, "interval", c.interval)
	// The first run waits for the consumer to take its partitions.
	t := time.NewTimer(min(c.interval, time.Minute))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		start := c.now()
		r, err := c.Partitions(ctx, c.owner.Owned(), c.Cutoff(start))
		if err != nil && ctx.Err() == nil {
			c.m.errors.Inc()
			c.log.Warn("history compaction failed", "error", err)
		}
		c.m.last.Set(float64(start.Unix()))
		c.log.Info("history compacted", "cutoff", c.Cutoff(start), "trades", r.Trades, "orders", r.Orders,
			"took", c.now().Sub(start))
		t.Reset(c.interval)
	}
}
