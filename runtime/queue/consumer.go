package queue

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
)

// Handler executes one signal. A nil error means the signal is done: its outcome, success or
// business failure (INSUFFICIENT_BALANCE, EXCHANGE_ERROR…), has been published with
// PublishResult, and the queue acknowledges and deletes the entry. An error means the signal
// could not be executed for an infrastructure reason (Redis unreachable, exchange not
// answering, an order outcome still unknown…): the queue keeps it and calls the Handler again
// with the same signal after a backoff, holding back that bot's later signals (so they never
// overtake it) but no other bot's. When the signal's retry budget (Options.MaxAttempts,
// Options.MaxElapsed) is spent, or the Handler panics, the queue finishes it itself: a
// failure result with the last error's code, and an entry in the dead-letter stream (see
// DeadLetter).
//
// Signals of different bots of one partition run concurrently (up to Options.MaxInFlight),
// so the Handler must be safe for concurrent use; the queue never runs two signals of one
// bot at once.
//
// Delivery is at least once: a signal whose executor died mid-way is handed to the Handler
// again on another instance. For exactly-once effect the Handler checks GetResult first and
// does nothing but re-publish when a result is already stored, and it stores the result
// before returning. ctx is cancelled when this instance loses the partition's lease
// (another instance may already be redoing the signal); it is not cancelled on shutdown,
// which lets the signal in hand finish.
type Handler func(ctx context.Context, env Envelope) error

// Defaults of Options.
const (
	DefaultLeaseTTL  = 5 * time.Second
	DefaultBlock     = time.Second
	DefaultBatchSize = 10
	// DefaultMaxAttempts and DefaultMaxElapsed are a signal's retry budget: with the
	// backoff of signalBackoff (100 ms doubling to 15 s) 15 attempts take about two minutes,
	// which rides out an exchange's brief outage or a Redis failover, and the elapsed bound
	// stops a signal whose every attempt hangs for a long time-out.
	DefaultMaxAttempts = 15
	DefaultMaxElapsed  = 3 * time.Minute
	// DefaultMaxInFlight is how many signals of different bots one partition runs at once:
	// enough that a few bots whose exchanges hang leave the partition's other bots at their
	// normal latency, few enough that 32 partitions do not open hundreds of exchange calls
	// and Redis connections at once.
	DefaultMaxInFlight = 8
	// DefaultMaxHeld bounds the entries one partition holds in memory (running, or waiting
	// behind their bot's running signal) before it stops reading its streams, which would
	// hold up the partition's other bots too. It is well above what one stuck bot can
	// queue: at the default rate limit (60 a minute) a bot adds about 190 signals over a
	// signal's whole retry budget. At about 1 kB an entry, 32 full partitions are 32 MB.
	DefaultMaxHeld = 1024
)

// MinPoolSize is the smallest connection pool a Consumer's client should have: up to one
// blocking reader per partition, plus lease renewal, acknowledgements and the depth metric.
// go-redis's default (10 per CPU) is below it on small pods, and a reader waiting for a
// connection delays its partition's signals by up to the pool timeout. Use DedicatedClient.
const MinPoolSize = Partitions + 16

// DedicatedClient connects a new client for a Consumer to the Redis o describes, of the same
// kind as the daemon's (a single server, a Sentinel-managed master or a Cluster), with a pool
// of at least MinPoolSize connections per server. It is built from the options rather than
// copied from a live client, because a failover client's connections depend on Sentinel
// state that belongs to that client alone. A dedicated client also keeps the Consumer's 32
// long-blocking reads from starving the Handler's own Redis calls.
func DedicatedClient(ctx context.Context, o store.Options) (redis.UniversalClient, error) {
	o.PoolSize = max(o.PoolSize, MinPoolSize)
	// Its reads must fail visibly (see worker.readFailed); everything it sends, the worker
	// retries itself.
	o.NoRetry = true
	return store.Connect(ctx, o)
}

// poolSize is rdb's connection pool per server (per node of a Cluster); ok is false for a
// client whose pool it cannot read.
func poolSize(rdb redis.UniversalClient) (size int, ok bool) {
	switch c := rdb.(type) {
	case *redis.Client: // a single server or a Sentinel-managed master
		return c.Options().PoolSize, true
	case *redis.ClusterClient:
		return c.Options().PoolSize, true
	}
	return 0, false
}

// Options configure a Consumer. Zero values take the defaults.
type Options struct {
	// Name is this instance's consumer name in the groups and lease keys; it must be unique
	// among live instances. Default: hostname-pid-random.
	Name string
	// LeaseTTL is how long a partition stays owned without renewal; it is renewed every
	// LeaseTTL/5. It bounds how long a dead instance's partitions stall. Minimum 500 ms.
	LeaseTTL time.Duration
	// Block is the longest one idle read waits (XREADGROUP BLOCK); a new signal ends it at
	// once, so it only bounds how fast an idle reader notices a stop. At most LeaseTTL/4.
	Block time.Duration
	// BatchSize is how many entries one read takes per stream (COUNT).
	BatchSize int
	// MaxAttempts is how many times the Handler is called for one signal before the signal
	// is dead-lettered; counted in Redis, so across executors. Default DefaultMaxAttempts.
	MaxAttempts int
	// MaxElapsed is how long after a signal's first failure it is dead-lettered, whatever
	// the attempts. Default DefaultMaxElapsed.
	MaxElapsed time.Duration
	// MaxInFlight is how many signals (of different bots) one partition runs at once.
	// Default DefaultMaxInFlight.
	MaxInFlight int
	// MaxHeld bounds the entries a partition holds in memory. Default DefaultMaxHeld.
	MaxHeld int
	// OnDeadLetter, if set, is called after a signal was dead-lettered (its failure result
	// is stored); the executor counts it as an execution error of the bot there. An error is
	// logged, not retried.
	OnDeadLetter func(ctx context.Context, env Envelope, dl DeadLetter) error
	// OnRound, if set, is called after every round of Run's lease loop (renewals and
	// rebalancing, every LeaseTTL/5), whether Redis answered or not: the executor's liveness
	// probe watches it (runtime/daemon.Probes), so a stuck loop restarts the pod and a Redis
	// outage does not.
	OnRound func()
	// Gate, if set, is told how many signals run at once: a partition's signals started
	// together enter it together, before any of them runs, and each leaves when its
	// Handler returns. The executor's Gate (store.Coalescer) then sends their Redis
	// commands as one pipeline per step.
	Gate Gate
	// Logger receives the queue's logs; default slog.Default().
	Logger *slog.Logger
}

// Gate counts running signals (store.Coalescer is one).
type Gate interface {
	// Enter counts n more running signals and returns what each calls once when done.
	Enter(n int) (leave func())
}

// Consumer is one executor instance's side of the queue: it holds leases on its share of the
// partitions and runs the Handler on their signals, highest priority first, one at a time
// per bot. See Run.
type Consumer struct {
	rdb        redis.UniversalClient
	opt        Options
	name       string
	log        *slog.Logger
	m          *metrics
	epoch      time.Time
	renewEvery time.Duration
	offset     int
	running    atomic.Bool

	mu   sync.Mutex
	held map[int]*lease
}

// NewConsumer returns a Consumer reading through rdb. Give it a client with a pool of at least
// MinPoolSize connections (DedicatedClient); a smaller pool is logged as a warning.
func NewConsumer(rdb redis.UniversalClient, opts Options) *Consumer {
	if opts.Name == "" {
		opts.Name = defaultName()
	}
	if opts.LeaseTTL <= 0 {
		opts.LeaseTTL = DefaultLeaseTTL
	}
	opts.LeaseTTL = max(opts.LeaseTTL, 500*time.Millisecond)
	if opts.Block <= 0 {
		opts.Block = DefaultBlock
	}
	opts.Block = min(opts.Block, opts.LeaseTTL/4)
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = DefaultMaxAttempts
	}
	if opts.MaxElapsed <= 0 {
		opts.MaxElapsed = DefaultMaxElapsed
	}
	if opts.MaxInFlight <= 0 {
		opts.MaxInFlight = DefaultMaxInFlight
	}
	if opts.MaxHeld <= 0 {
		opts.MaxHeld = DefaultMaxHeld
	}
	opts.MaxHeld = max(opts.MaxHeld, opts.MaxInFlight)
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	log := opts.Logger.With("component", "queue", "consumer", opts.Name)
	h := fnv.New32a()
	_, _ = h.Write([]byte(opts.Name))
	c := &Consumer{
		rdb:        rdb,
		opt:        opts,
		name:       opts.Name,
		log:        log,
		m:          newMetrics(rdb, log),
		epoch:      time.Now(),
		renewEvery: opts.LeaseTTL / 5,
		offset:     int(h.Sum32() % Partitions),
		held:       map[int]*lease{},
	}
	if n, ok := poolSize(rdb); ok && n < MinPoolSize {
		log.Warn("redis pool smaller than the queue needs; use queue.DedicatedClient",
			"poolSize", n, "want", MinPoolSize)
	}
	return c
}

func defaultName() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "executor"
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b))
}

// Name is the consumer name (Options.Name or the generated one).
func (c *Consumer) Name() string { return c.name }

// Collectors are the Consumer's Prometheus metrics, for the daemon to register.
func (c *Consumer) Collectors() []prometheus.Collector { return c.m.collectors() }

// Owned lists the partitions this instance currently holds, ascending (for readiness
// reporting and tests).
func (c *Consumer) Owned() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]int, 0, len(c.held))
	for p, l := range c.held {
		if !l.lost.Load() {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out
}

// Run serves signals until ctx is done. Every LeaseTTL/5 it renews its leases and its
// heartbeat, then takes free partitions up to its share (Partitions over live instances,
// rounded up) or hands back those above it, so load rebalances as replicas come and go; each
// partition it holds is read by one goroutine (see worker).
//
// When ctx is done Run leaves the heartbeat set, lets every partition finish the signal in
// hand (renewing the leases meanwhile, so nobody else takes them), releases the leases and
// returns nil. A Handler that never returns therefore keeps Run from returning: the pod's
// termination grace period is the hard bound. Redis failures are logged and retried, never
// returned: the executor keeps running through a Redis outage.
func (c *Consumer) Run(ctx context.Context, h Handler) error {
	if h == nil {
		return errors.New("queue: nil handler")
	}
	if !c.running.CompareAndSwap(false, true) {
		return errors.New("queue: Consumer.Run is already running")
	}
	defer c.running.Store(false)
	// Redis work during shutdown (renewals while signals finish, releases) outlives ctx.
	bg := context.WithoutCancel(ctx)
	exited := make(chan *lease, Partitions)
	ticker := time.NewTicker(c.renewEvery)
	defer ticker.Stop()
	c.log.Info("queue consumer started", "leaseTTL", c.opt.LeaseTTL)

	done := ctx.Done()
	stopping := ctx.Err() != nil
	if !stopping {
		c.tick(bg, h, exited, false)
		c.round()
	}
	for !stopping || c.heldCount() > 0 {
		select {
		case <-done:
			done, stopping = nil, true
			c.leave(bg)
			c.stopAll()
		case <-ticker.C:
			c.tick(bg, h, exited, stopping)
			c.round()
		case l := <-exited:
			c.finish(bg, l)
		}
	}
	c.leave(bg)
	c.log.Info("queue consumer stopped")
	return nil
}

func (c *Consumer) round() {
	if c.opt.OnRound != nil {
		c.opt.OnRound()
	}
}

// tick renews, then rebalances (not while stopping).
func (c *Consumer) tick(ctx context.Context, h Handler, exited chan<- *lease, stopping bool) {
	live := c.renewAll(ctx, !stopping)
	defer c.m.owned.Set(float64(c.heldCount()))
	if stopping || live <= 0 {
		return
	}
	share := (Partitions + live - 1) / live
	var active []*lease
	for _, l := range c.heldLeases() {
		if !l.releasing && !l.lost.Load() {
			active = append(active, l)
		}
	}
	switch {
	case len(active) > share:
		extra := active[share:]
		for _, l := range extra {
			l.releasing = true
			close(l.stop)
		}
		c.log.Info("handing partitions back", "count", len(extra), "share", share, "instances", live)
	case len(active) < share:
		got := c.acquire(ctx, share-len(active))
		for _, g := range got {
			c.start(ctx, g, h, exited)
		}
		if len(got) > 0 {
			c.log.Info("took partitions", "count", len(got), "share", share, "instances", live)
		}
	}
}

// start runs a worker on a freshly acquired partition.
func (c *Consumer) start(ctx context.Context, g grant, h Handler, exited chan<- *lease) {
	lctx, cancel := context.WithCancel(ctx)
	l := &lease{p: g.p, stop: make(chan struct{}), ctx: lctx, cancel: cancel}
	l.validUntil.Store(int64(g.until))
	c.mu.Lock()
	c.held[g.p] = l
	c.mu.Unlock()
	c.m.leases.WithLabelValues(leaseAcquired).Inc()
	go func() {
		defer func() { exited <- l }()
		c.work(l, h)
	}()
}

// finish releases the lease of a worker that exited.
func (c *Consumer) finish(ctx context.Context, l *lease) {
	l.cancel()
	c.release(ctx, l)
	c.mu.Lock()
	delete(c.held, l.p)
	c.mu.Unlock()
	c.m.owned.Set(float64(c.heldCount()))
}

// stopAll asks every worker to finish its signal in hand and exit.
func (c *Consumer) stopAll() {
	for _, l := range c.heldLeases() {
		if !l.releasing {
			l.releasing = true
			close(l.stop)
		}
	}
}

func (c *Consumer) since() time.Duration { return time.Since(c.epoch) }

// heldLeases returns the held leases ordered by partition.
func (c *Consumer) heldLeases() []*lease {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*lease, 0, len(c.held))
	for _, l := range c.held {
		out = append(out, l)
	}
	slices.SortFunc(out, func(a, b *lease) int { return a.p - b.p })
	return out
}

func (c *Consumer) heldCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.held)
}

func (c *Consumer) holds(p int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.held[p]
	return ok
}
