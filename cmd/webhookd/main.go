// Command webhookd serves POST /api/webhooks/trade/{webhookId}, which admits signals into the
// Redis queues and waits a bounded time for the executor's result, and the read API beside
// it (candles, bot analytics and risk, the portfolio, the OpenAPI document).
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
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/candles"
	"github.com/sigops/sigops/runtime/daemon"
	"github.com/sigops/sigops/runtime/database"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/history"
	"github.com/sigops/sigops/runtime/intake"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/portfolio"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
	sigsignal "github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/trading"
	"github.com/sigops/sigops/runtime/trustedproxy"
	"github.com/sigops/sigops/webhookd"
	"github.com/sigops/sigops/webhookd/readapi"
)

func main() {
	var (
		listen, metricsAddr, tlsCert, tlsKey, proxies, instance string
		waitBound                                               time.Duration
		headroom                                                float64
		redisOpts                                               store.Options
		read                                                    readConfig
		logLevel                                                slog.Level
	)
	host, _ := os.Hostname()
	flag.StringVar(&listen, "listen", ":8443", "address of the webhook endpoint")
	flag.StringVar(&tlsCert, "tls-cert", "", "TLS certificate file; without it only requests a trusted proxy marks as HTTPS are served")
	flag.StringVar(&tlsKey, "tls-key", "", "TLS key file")
	flag.StringVar(&proxies, "trusted-proxies", "", "comma-separated CIDRs whose X-Forwarded-Proto is believed (e.g. 10.0.0.0/8)")
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":9090", "Prometheus metrics, /healthz and /readyz (plain HTTP, cluster-internal)")
	flag.DurationVar(&waitBound, "wait-bound", webhookd.DefaultWaitBound, "how long a request waits for the execution result")
	flag.Float64Var(&headroom, "memory-headroom", store.DefaultHeadroom,
		"share of Redis maxmemory kept free for signals already accepted: new signals are refused (503, SERVICE_UNAVAILABLE, Retry-After) while less is free")
	flag.StringVar(&instance, "instance-id", fmt.Sprintf("%s-%d", host, os.Getpid()), "this replica's name (its result channel)")
	flag.StringVar(&read.baseURL, "base-url", "", "the service's public origin ({base_url}): the issuer of the tokens the read API accepts, whose audience must be {base_url}/api")
	flag.StringVar(&read.keyFile, "jwt-key-file", "", "file holding authd's HS256 signing key, to verify the read API's bearer tokens; without it the read API accepts dashboard session cookies only")
	flag.StringVar(&read.prevKeyFile, "jwt-previous-key-file", "", "file holding authd's previous signing key during a rotation")
	flag.StringVar(&read.marketData, "market-data", "simulated", "public market data for candles and valuations: simulated or binance")
	flag.StringVar(&read.databaseURL, "database-url", os.Getenv(database.URLEnv),
		"PostgreSQL, whose archive of trades the analytics' equity curve draws past Redis's hot window (default $"+database.URLEnv+"; empty: Redis alone)")
	read.portfolio.Bind(flag.CommandLine)
	store.BindFlags(flag.CommandLine, &redisOpts)
	flag.TextVar(&logLevel, "log-level", slog.LevelInfo, "log level")
	flag.Parse()

	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel}))
	if err := run(logger, config{listen, metricsAddr, tlsCert, tlsKey, proxies, instance, waitBound, headroom, redisOpts, read}); err != nil {
		logger.Error("webhookd stopped", "error", err)
		os.Exit(1)
	}
}

type config struct {
	listen, metricsAddr, tlsCert, tlsKey, proxies, instance string
	waitBound                                               time.Duration
	headroom                                                float64
	redis                                                   store.Options
	read                                                    readConfig
}

func run(logger *slog.Logger, c config) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	trusted, err := trustedproxy.Parse(c.proxies)
	if err != nil {
		return err
	}
	if c.tlsCert == "" && len(trusted) == 0 {
		return errors.New("give --tls-cert/--tls-key or --trusted-proxies: the endpoint is HTTPS only")
	}
	rdb, err := store.Connect(ctx, c.redis)
	if err != nil {
		return err
	}
	defer rdb.Close()
	waiter, err := queue.NewWaiter(ctx, rdb, c.instance)
	if err != nil {
		return err
	}

	reg := daemon.NewRegistry()
	// Symbols: the paper catalogue plus what validated exchange connections recorded.
	known := registry.NewKnownSymbols(paper.Symbols())
	go known.Run(ctx, registry.New(rdb), 30*time.Second, logger)
	readAPI, err := newReadAPI(ctx, rdb, c.read, trusted, known.Get, logger)
	if err != nil {
		return err
	}
	srv, err := webhookd.New(webhookd.Options{
		Intake: intake.New(rdb).WithMemoryGuard(store.NewMemoryGuard(rdb, store.MemoryOptions{Headroom: c.headroom})), Waiter: waiter, Results: resultStore{rdb}, Symbols: known.Get,
		WaitBound: c.waitBound, TrustedProxies: trusted, Logger: logger, Registerer: reg,
		Ready: func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
		Read:  readAPI,
	})
	if err != nil {
		return err
	}

	api := &http.Server{Addr: c.listen, Handler: srv.Handler(), ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout: 10 * time.Second, WriteTimeout: webhookd.DefaultWaitBound + c.waitBound + 5*time.Second, IdleTimeout: 2 * time.Minute}
	logger.Info("webhookd listening", "addr", c.listen, "tls", c.tlsCert != "", "instance", c.instance)
	// Graceful: stop taking requests, let in-flight ones get their results (bounded).
	return daemon.Serve(ctx, api, daemon.OpsServer(c.metricsAddr, reg, waiterProbes(rdb, waiter)), c.tlsCert, c.tlsKey, c.waitBound+5*time.Second)
}

// readConfig are the read API's flags.
type readConfig struct {
	baseURL, keyFile, prevKeyFile, marketData, databaseURL string
	portfolio                                              portfolio.Flags
}

// newReadAPI builds the read API served beside the webhook endpoint; its database pool, if
// any, closes when ctx ends.
func newReadAPI(ctx context.Context, rdb redis.UniversalClient, c readConfig, trusted trustedproxy.Proxies, symbols func() *sigsignal.Symbols,
	logger *slog.Logger) (*readapi.API, error) {
	prices, err := marketdata.FromFlag(c.marketData)
	if err != nil {
		return nil, err
	}
	po, err := c.portfolio.Options(rdb, prices, logger)
	if err != nil {
		return nil, err
	}
	o := readapi.Options{Redis: rdb, Sessions: auth.NewSessions(rdb, nil), Users: auth.NewUsers(rdb, auth.UsersOptions{}),
		Proxies: trusted, Trading: trading.New(rdb, nil, prices), Portfolio: portfolio.New(po), Logger: logger,
		// The --market-data source is the candles' fallback: paper trading, and any exchange
		// that cannot be reached.
		Candles: candles.New(candles.Options{Redis: rdb, Symbols: symbols, Fallback: prices, Logger: logger})}
	// The equity curve draws the trades the history keeps, as mcpd's and the dashboard's
	// (userapi): Redis's trade lists and PostgreSQL's archive. The executors migrate the
	// schema; until it is there, the curve draws Redis's trades alone.
	var db *pgxpool.Pool
	if c.databaseURL != "" {
		if db, err = database.Pool(ctx, c.databaseURL); err != nil {
			return nil, err
		}
		go func() { <-ctx.Done(); db.Close() }()
	}
	o.Analytics = analytics.New(rdb).WithTrades(history.New(rdb, db, logger))
	if c.keyFile != "" {
		if c.baseURL == "" {
			return nil, errors.New("--jwt-key-file needs --base-url: tokens are checked against its issuer and audience")
		}
		keys, err := auth.LoadKeyring(c.keyFile, c.prevKeyFile)
		if err != nil {
			return nil, err
		}
		base := strings.TrimRight(c.baseURL, "/")
		if o.Verifier, err = auth.NewVerifier(auth.VerifierOptions{Redis: rdb, Keys: keys, Issuer: base,
			Audiences: []string{base + "/api"}}); err != nil {
			return nil, err
		}
		o.ResourceMetadata = base + "/.well-known/oauth-protected-resource/api"
	} else {
		logger.Warn("no --jwt-key-file: the read API accepts dashboard session cookies only, not bearer tokens")
	}
	return readapi.New(o), nil
}

// resultStore reads stored results for duplicate signals.
type resultStore struct{ rdb redis.UniversalClient }

func (s resultStore) GetResult(ctx context.Context, id string) (result.Stored, error) {
	return queue.GetResult(ctx, s.rdb, id)
}
