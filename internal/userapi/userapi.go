// Package userapi builds, from one set of flags, the Go APIs that answer a user's own
// requests: the trading reads and manual orders, the portfolio, candles, the Strategy Lab,
// the audit journal and (with Kubernetes access) the fleet of bots. mcpd's tools and authd's
// dashboard both call these, built by the same code with the same flags, so a figure shown
// by one is the figure shown by the other.
package userapi

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/config"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/candles"
	"github.com/sigops/sigops/runtime/database"
	"github.com/sigops/sigops/runtime/exchange/connectors"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/history"
	"github.com/sigops/sigops/runtime/lab"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/portfolio"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/trading"
)

// Flags are the command-line settings of the APIs.
type Flags struct {
	// MarketData is the public market data source: simulated or binance.
	MarketData string
	Portfolio  portfolio.Flags
	Audit      audit.Options
	// BotActions builds the fleet, which needs the Kubernetes API (in-cluster config or
	// controller-runtime's --kubeconfig).
	BotActions bool
	// DatabaseURL is PostgreSQL, whose archive the history reads past Redis's hot window
	// (empty: Redis alone).
	DatabaseURL string
	// MemoryHeadroom is the share of Redis's maxmemory kept free for what was accepted:
	// new signals and manual orders are refused while less is free.
	MemoryHeadroom float64
}

// Bind declares the flags on fs; botActions is the help text of --bot-actions, which names
// what the daemon serves with it.
func (f *Flags) Bind(fs *flag.FlagSet, botActions string) {
	fs.StringVar(&f.MarketData, "market-data", "simulated", "public market data for valuations and candles: simulated or binance")
	f.Portfolio.Bind(fs)
	audit.BindFlags(fs, &f.Audit)
	fs.BoolVar(&f.BotActions, "bot-actions", true, botActions)
	fs.Float64Var(&f.MemoryHeadroom, "memory-headroom", store.DefaultHeadroom,
		"share of Redis maxmemory kept free for signals already accepted: new signals and manual orders are refused (SERVICE_UNAVAILABLE) while less is free; exits never are")
	fs.StringVar(&f.DatabaseURL, "database-url", os.Getenv(database.URLEnv),
		"PostgreSQL, whose archive answers history past Redis's hot window (default $"+database.URLEnv+"; empty: Redis alone)")
	if fs != flag.CommandLine {
		// controller-runtime declares --kubeconfig on the default set only.
		config.RegisterFlags(fs)
	}
}

// APIs are the built Go APIs.
type APIs struct {
	Users     *auth.Users
	Trading   *trading.API
	Portfolio *portfolio.Service
	// Exchanges connects a user's exchange connections (nil without a master key).
	Exchanges portfolio.Clients
	Candles   *candles.Service
	// Symbols is webhookd's symbol index: the paper catalogue plus what validated exchange
	// connections recorded, refreshed every 30 s while Build's ctx lives.
	Symbols func() *signal.Symbols
	Lab     *lab.Lab
	Audit   *audit.Journal
	// AppPolicies are the connected apps' policies and the users' kill switches, recorded
	// in DB when there is one.
	AppPolicies *apppolicy.Policies
	// Fleet is nil without BotActions.
	Fleet *fleet.Fleet
	// DB is PostgreSQL (nil without --database-url): the accounts' record and the history
	// archive.
	DB *pgxpool.Pool
	// Memory is the Redis memory watermark the daemon refuses new signals and orders at
	// (nil: never; Build sets it from the flags).
	Memory *store.MemoryGuard
	// Previews size orders as the executor would, on the same venues (paper on Redis,
	// exchange connections through Exchanges), with nothing written: dry runs and
	// connected apps' notional caps.
	Previews *executor.Executor
	// Analytics are the bots' analytics, whose equity curves draw the trades the history
	// keeps (Redis's trade lists and, with DB, PostgreSQL's archive).
	Analytics *analytics.Analytics
}

// Build wires the APIs on rdb, with their metrics on reg (not nil); background refreshes run until ctx
// ends.
func Build(ctx context.Context, f Flags, rdb redis.UniversalClient, reg prometheus.Registerer, logger *slog.Logger) (*APIs, error) {
	prices, err := marketdata.FromFlag(f.MarketData)
	if err != nil {
		return nil, err
	}
	po, err := f.Portfolio.Options(rdb, prices, logger)
	if err != nil {
		return nil, err
	}
	known := registry.NewKnownSymbols(paper.Symbols())
	go known.Run(ctx, registry.New(rdb), 30*time.Second, logger)
	labMetrics := lab.NewMetrics()
	for _, c := range labMetrics.Collectors() {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	var pool *pgxpool.Pool
	if f.DatabaseURL != "" {
		if pool, err = database.Pool(ctx, f.DatabaseURL); err != nil {
			return nil, err
		}
		go func() { <-ctx.Done(); pool.Close() }()
	}
	a := assemble(rdb, pool, prices, po, known.Get, labMetrics, f.Audit, logger)
	a.Memory = store.NewMemoryGuard(rdb, store.MemoryOptions{Headroom: f.MemoryHeadroom})
	a.Trading.WithMemoryGuard(a.Memory)
	if pool != nil {
		a.DB = pool
		a.Trading.WithHistory(history.New(rdb, pool, logger))
		// The executor applies the schema too; whoever is first does it (advisory lock).
		// Then the accounts made before PostgreSQL held them are written to it, once.
		go func() {
			if database.MigrateWhenUp(ctx, pool, logger) != nil {
				return
			}
			if n, err := a.Users.Backfill(ctx); err != nil {
				logger.Warn("accounts: backfill to PostgreSQL failed; retried at the next start", "error", err)
			} else if n > 0 {
				logger.Info("accounts: written to PostgreSQL", "accounts", n)
			}
			if n, err := adoptAppPolicies(ctx, rdb, pool, a.AppPolicies); err != nil {
				logger.Warn("connected apps: backfill of policies to PostgreSQL failed; retried at the next start", "error", err)
			} else if n > 0 {
				logger.Info("connected apps: policies and kill switches written to PostgreSQL", "users", n)
			}
			restoreAccounts(ctx, a.Users, logger)
		}()
	}
	if f.BotActions {
		if a.Fleet, err = newFleet(rdb); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// adoptAppPolicies records the app policies and kill switches Redis held before
// PostgreSQL did (apppolicy.Adopt), for every user and each app they authorized, and
// returns how many users had something to record.
func adoptAppPolicies(ctx context.Context, rdb redis.UniversalClient, db *pgxpool.Pool, ps *apppolicy.Policies) (int, error) {
	ids, err := rdb.SMembers(ctx, store.Users()).Result()
	if err != nil {
		return 0, err
	}
	oauth := auth.NewOAuth(rdb, auth.OAuthOptions{DB: db})
	n := 0
	for _, id := range ids {
		auths, err := oauth.ListAuthorizations(ctx, id)
		if err != nil {
			return n, err
		}
		clients := make([]string, 0, len(auths))
		for _, a := range auths {
			clients = append(clients, a.ClientID)
		}
		if k, err := ps.Adopt(ctx, id, clients); err != nil {
			return n, err
		} else if k > 0 {
			n++
		}
	}
	return n, nil
}

// restoreEvery is how often a daemon checks that Redis still holds the accounts.
const restoreEvery = 5 * time.Second

// restoreAccounts puts the accounts back into a Redis that lost them (auth.Users.Restore)
// until ctx ends: checked every restoreEvery, one EXISTS when nothing was lost.
func restoreAccounts(ctx context.Context, users *auth.Users, logger *slog.Logger) {
	t := time.NewTicker(restoreEvery)
	defer t.Stop()
	for {
		if n, err := users.Restore(ctx); err != nil && ctx.Err() == nil {
			logger.Warn("accounts: copying them back to Redis failed; retrying", "error", err)
		} else if n > 0 {
			logger.Warn("accounts: Redis had lost them; copied back from PostgreSQL", "accounts", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// OnRedis is the APIs on rdb with simulated market data, the paper catalogue's symbols, no
// exchange access and no fleet: what a test, or a daemon given no flags, reads with.
func OnRedis(rdb redis.UniversalClient) *APIs {
	prices := marketdata.NewSimulated(marketdata.SimulatedOptions{})
	return assemble(rdb, nil, prices, portfolio.Options{Redis: rdb, Prices: prices},
		registry.NewKnownSymbols(paper.Symbols()).Get, nil, audit.Options{}, slog.Default())
}

// assemble builds the APIs from their parts (labMetrics nil: counted nowhere).
func assemble(rdb redis.UniversalClient, db *pgxpool.Pool, prices marketdata.Provider, po portfolio.Options, symbols func() *signal.Symbols,
	labMetrics *lab.Metrics, ao audit.Options, logger *slog.Logger) *APIs {
	users := auth.NewUsers(rdb, auth.UsersOptions{DB: db})
	// The exchange clients the portfolio reads with (nil without a master key: previews of
	// exchange bots answer EXCHANGE_DISCONNECTED, as the executor would).
	clients, _ := po.Clients.(*connectors.Clients)
	previews := executor.New(executor.Deps{Redis: rdb, Prices: prices, Logger: logger,
		Venues: &executor.Paper{Redis: rdb, Prices: prices, Live: &executor.LiveVenues{Redis: rdb, Clients: clients}}})
	return &APIs{Previews: previews, Users: users, Trading: trading.New(rdb, nil, prices),
		Analytics: analytics.New(rdb).WithTrades(history.New(rdb, db, logger)),
		Portfolio: portfolio.New(po), Exchanges: po.Clients, Symbols: symbols, Audit: audit.New(rdb, withDB(ao, db)),
		AppPolicies: apppolicy.New(rdb, apppolicy.Options{DB: db}),
		// The market data source is the candles' fallback, as in webhookd.
		Candles: candles.New(candles.Options{Redis: rdb, Symbols: symbols, Fallback: prices, Logger: logger}),
		// The Lab queues jobs and charges the wallet; the executors run them.
		Lab: lab.New(lab.Options{Redis: rdb, DB: db, Wallets: users.Wallets, Users: users, Metrics: labMetrics})}
}

// withDB is o recording to db (nil: Redis alone).
func withDB(o audit.Options, db *pgxpool.Pool) audit.Options {
	o.DB = db
	return o
}

// newFleet is the fleet on the API server of the in-cluster config or --kubeconfig
// (controller-runtime's flag), acting as the daemon's ServiceAccount (config/rbac/mcpd).
func newFleet(rdb redis.UniversalClient) (*fleet.Fleet, error) {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig (or --bot-actions=false): %w", err)
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := tradingv1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	k8s, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return nil, err
	}
	return fleet.New(fleet.Options{Client: k8s, Redis: rdb}), nil
}
