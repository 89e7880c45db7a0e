// Command executor runs the signal pipeline: it consumes its share of the queue partitions,
// executes each signal (risk, order, exchange, record, confirm), watches open positions'
// stop-loss and take-profit, and runs the strategy bots and the Strategy Lab's jobs of the
// partitions it holds.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"syscall"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/sigops/sigops/runtime/archive"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/daemon"
	"github.com/sigops/sigops/runtime/database"
	"github.com/sigops/sigops/runtime/exchange/connectors"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/lab"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/retention"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/strategyrun"
)

func main() {
	var (
		metricsAddr, marketData, instance string
		labHistory, databaseURL           string
		labWorkers                        int
		masterKeys                        credentials.KeyFlags
		leaseTTL, watchInterval           time.Duration
		history                           retention.Options
		strategies                        strategyrun.Options
		budget                            queue.Options
		redisOpts                         store.Options
		logLevel                          slog.Level
	)
	host, _ := os.Hostname()
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":9090", "Prometheus metrics, /healthz and /readyz")
	flag.StringVar(&marketData, "market-data", marketdata.FlagSimulated, "market prices: simulated (deterministic random walk) or binance (public REST)")
	flag.StringVar(&instance, "instance-id", fmt.Sprintf("%s-%d", host, os.Getpid()), "this replica's consumer name (unique among live replicas)")
	flag.DurationVar(&leaseTTL, "lease-ttl", 5*time.Second, "partition lease; bounds how long a dead replica's signals wait")
	flag.IntVar(&budget.MaxAttempts, "signal-max-attempts", queue.DefaultMaxAttempts, "handler attempts per signal before it is dead-lettered (counted across replicas)")
	flag.DurationVar(&budget.MaxElapsed, "signal-max-elapsed", queue.DefaultMaxElapsed, "time after a signal's first failure before it is dead-lettered")
	flag.IntVar(&budget.MaxInFlight, "partition-concurrency", queue.DefaultMaxInFlight, "signals of different bots one queue partition executes at once")
	flag.StringVar(&labHistory, "lab-history", "", "Strategy Lab candle history: simulated, binance, bybit or okx (default: the --market-data source)")
	flag.IntVar(&labWorkers, "lab-workers", runtime.GOMAXPROCS(0), "Strategy Lab experiments run at once")
	flag.DurationVar(&watchInterval, "watch-interval", executor.DefaultWatchInterval, "how often stop-loss and take-profit are checked")
	flag.Float64Var(&strategies.Headroom, "memory-headroom", store.DefaultHeadroom,
		"share of Redis maxmemory kept free for what was accepted: strategy bots' entries are not queued while less is free (exits are)")
	flag.StringVar(&databaseURL, "database-url", os.Getenv(database.URLEnv), "PostgreSQL, where this executor archives the history of the partitions it holds (default $"+database.URLEnv+"); empty: history is not archived and the archive streams grow in Redis")
	flag.DurationVar(&history.Retention, "history-retention", 0, "how long Redis keeps bots' trade lists and finished orders: with --database-url the hot window in front of the archive (default 24h, at least 10m; only what PostgreSQL holds is removed), without it the whole history (default 2160h, at least 168h); per-day analytics are kept for all time")
	flag.DurationVar(&strategies.Settle, "strategy-settle", strategyrun.DefaultSettle, "delay after each candle's close before strategy bots evaluate it (exchanges publish a closed candle a moment late)")
	flag.IntVar(&strategies.Concurrency, "strategy-concurrency", strategyrun.DefaultConcurrency, "strategy bots evaluated at once (each waits mostly on its candle fetch)")
	masterKeys.Bind(flag.CommandLine, "opens exchange credentials; mount a Secret. Without it bots on exchange connections answer EXCHANGE_DISCONNECTED")
	store.BindFlags(flag.CommandLine, &redisOpts)
	flag.TextVar(&logLevel, "log-level", slog.LevelInfo, "log level")
	flag.Parse()

	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel}))
	keys, err := masterKeys.Load(logger, "bots on exchange connections answer EXCHANGE_DISCONNECTED")
	if err != nil {
		logger.Error("executor stopped", "error", err)
		os.Exit(1)
	}
	budget.Name, budget.LeaseTTL, budget.Logger = instance, leaseTTL, logger
	strategies.Logger = logger
	if labHistory == "" {
		labHistory = marketData
	}
	candles, err := marketdata.HistoryFromFlag(labHistory)
	if err != nil {
		logger.Error("executor stopped", "error", err)
		os.Exit(1)
	}
	labOpts := lab.EngineOptions{History: candles, Workers: labWorkers, Logger: logger}
	history.Logger = logger
	if err := run(logger, metricsAddr, marketData, databaseURL, budget, watchInterval, strategies, history, redisOpts, keys, labOpts); err != nil {
		logger.Error("executor stopped", "error", err)
		os.Exit(1)
	}
}

func run(logger *slog.Logger, metricsAddr, marketData, databaseURL string, qopts queue.Options, watchInterval time.Duration,
	sopts strategyrun.Options, hopts retention.Options, ro store.Options, keys *credentials.Ring, lo lab.EngineOptions) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rdb, err := store.Connect(ctx, ro)
	if err != nil {
		return err
	}
	defer rdb.Close()
	// The consumer's 32 blocking readers get their own pool, so they never starve the
	// pipeline's own Redis calls.
	qrdb, err := queue.DedicatedClient(ctx, ro)
	if err != nil {
		return err
	}
	defer qrdb.Close()
	prices, err := marketdata.FromFlag(marketData)
	if err != nil {
		return err
	}

	exchanges := connectors.All()
	venues := &executor.Paper{Redis: rdb, Prices: prices,
		Live: &executor.LiveVenues{Redis: rdb, Clients: &connectors.Clients{Keys: keys, Connectors: exchanges}}}

	exec := executor.New(executor.Deps{Redis: rdb, Prices: prices, Venues: venues, Logger: logger})
	watcher := exec.NewWatcher(executor.WatcherDeps{Redis: rdb, Prices: prices, Interval: watchInterval, Logger: logger})
	qopts.OnDeadLetter = exec.DeadLettered
	// Signals a partition starts together send their Redis commands together.
	qopts.Gate = exec.Gate()
	probes := executorProbes(rdb, &qopts)
	consumer := queue.NewConsumer(qrdb, qopts)
	// Strategy bots run where their partition's lease is held.
	sopts.Redis, sopts.Market, sopts.Owner = rdb, prices, consumer
	strategies := strategyrun.New(sopts)
	archiver, progress, db, err := archiverOf(ctx, databaseURL, rdb, consumer, logger)
	if err != nil {
		return err
	}
	if db != nil {
		defer db.Close()
		// A partition Redis lost is restored from PostgreSQL's copy of the book.
		exec.WithBookRecord(db)
	}
	books := exec.BookRestorer()
	restoreBooks := func(ctx context.Context) error { return books.Run(ctx, consumer.Owned, 0, logger) }
	// History is compacted where its partition's lease is held.
	hopts.Redis, hopts.Owner, hopts.Archive = rdb, consumer, progress
	compactor, err := historyOf(hopts, db != nil)
	if err != nil {
		return err
	}
	// The Strategy Lab's wallet and job outbox are in the same database.
	lo.DB = db
	engine, closeLab, err := labEngine(ctx, ro, consumer, &lo)
	if err != nil {
		return err
	}
	defer closeLab()

	ops := opsServer(metricsAddr, probes, exec.Collectors(), consumer.Collectors(), strategies.Collectors(),
		lo.Metrics.Collectors(), compactor.Collectors(), archiver.Collectors(), books.Collectors())

	logger.Info("executor starting", "instance", consumer.Name(), "marketData", marketData)
	// The consumer's Run returns after finishing the signal in hand once ctx ends
	// (graceful shutdown).
	return runAll(ctx, ops, func(ctx context.Context) error { return consumer.Run(ctx, exec.Handle) },
		watcher.Run, strategies.Run, engine.Run, compactor.Run, archiver.Run, restoreBooks)
}

// historyOf is the history compactor of hopts, and sets the lives in Redis that follow from
// its retention: finished order records live as long. With the archive (archived), Redis
// keeps only the hot window of what PostgreSQL holds: results live the hot window too (the
// archive keeps them after, and a late entry looks them up there, executor late.go); a
// paper order, the venue's copy of a fill the book and PostgreSQL also hold, lives only as
// long as a retry of its signal can need it (paper.MinOrderTTL), and an older entry asks
// PostgreSQL before it places anything under the same client order ID.
func historyOf(hopts retention.Options, archived bool) (*retention.Compactor, error) {
	compactor, err := retention.New(hopts)
	if err != nil {
		return nil, err
	}
	position.SetOrderTTL(compactor.Retention())
	if archived {
		queue.SetResultTTL(compactor.Retention())
		paper.SetOrderTTL(paper.MinOrderTTL)
	}
	return compactor, nil
}

// runAll runs every loop and the ops server until ctx ends or one of them fails, then shuts
// the server down; a cancelled context is a clean end.
func runAll(ctx context.Context, ops *http.Server, loops ...func(context.Context) error) error {
	g, gctx := errgroup.WithContext(ctx)
	for _, loop := range loops {
		g.Go(func() error { return loop(gctx) })
	}
	g.Go(func() error {
		if err := ops.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		return ops.Shutdown(shutdown)
	})
	err := g.Wait()
	if errors.Is(err, context.Canceled) {
		return nil
	}
	return err
}

// archiverOf builds the archiver of the partitions this executor's consumer holds. Its pool
// connects on first use and the schema is migrated once PostgreSQL answers: the executor
// starts, and signals fill, while the database is down. Without a URL it archives nothing
// (a warning says so, and the pool is nil), and its Run waits for the end.
func archiverOf(ctx context.Context, url string, rdb redis.UniversalClient, consumer *queue.Consumer,
	logger *slog.Logger) (*archive.Archiver, retention.Archive, *pgxpool.Pool, error) {
	if url == "" {
		logger.Warn("no --database-url: trading history is not archived to PostgreSQL, and the archive streams grow in Redis")
		return archive.Disabled(), nil, nil, nil
	}
	pool, err := database.Pool(ctx, url)
	if err != nil {
		return nil, nil, nil, err
	}
	a := archive.New(archive.Options{Redis: rdb, DB: pool, Owner: consumer, Logger: logger, Migrate: database.MigrateWhenUp})
	return a, archive.Keeper{DB: pool}, pool, nil
}

// labEngine builds the Strategy Lab's engine. It serves the jobs of the partitions this
// executor's queue consumer holds (the partition lease is the job lease), and its blocking
// reads (one per partition) get a pool of their own, for the same reason as the
// consumer's. lo.Metrics is set for registration.
func labEngine(ctx context.Context, ro store.Options, consumer *queue.Consumer, lo *lab.EngineOptions) (*lab.Engine, func() error, error) {
	lrdb, err := queue.DedicatedClient(ctx, ro)
	if err != nil {
		return nil, nil, err
	}
	lo.Redis, lo.Owned, lo.Name, lo.Metrics = lrdb, consumer.Owned, consumer.Name(), lab.NewMetrics()
	return lab.NewEngine(*lo), lrdb.Close, nil
}

// executorProbes are the executor's probes: live while the queue consumer's lease loop goes
// round (it does through a Redis outage: its renewals fail and are retried), ready while
// Redis answers too. It hooks the loop into qopts, for the consumer built from them.
func executorProbes(rdb redis.UniversalClient, qopts *queue.Options) *daemon.Probes {
	probes := daemon.NewProbes()
	probes.Ready("redis", daemon.RedisReady(rdb))
	// A round takes at most two renewal periods (LeaseTTL/5 each) even when Redis hangs.
	qopts.OnRound = probes.Loop("the queue's lease loop", max(leaseLoopBound, 10*qopts.LeaseTTL)).Beat
	return probes
}

// leaseLoopBound is the least time the lease loop may go without a round before the
// executor counts as stuck (a variable for the test).
var leaseLoopBound = time.Minute

// opsServer serves /metrics with the given collectors, /healthz and /readyz.
func opsServer(addr string, probes *daemon.Probes, collectors ...[]prometheus.Collector) *http.Server {
	reg := daemon.NewRegistry()
	for _, c := range collectors {
		reg.MustRegister(c...)
	}
	return daemon.OpsServer(addr, reg, probes)
}
