// Command webhookd serves POST /api/webhooks/trade/{webhookId}: it admits signals into the
// Redis queues and waits a bounded time for the executor's result.
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
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/daemon"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/intake"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/trustedproxy"
	"github.com/sigops/sigops/webhookd"
)

func main() {
	var (
		listen, metricsAddr, tlsCert, tlsKey, proxies, instance string
		waitBound                                               time.Duration
		redisOpts                                               store.Options
		logLevel                                                slog.Level
	)
	host, _ := os.Hostname()
	flag.StringVar(&listen, "listen", ":8443", "address of the webhook endpoint")
	flag.StringVar(&tlsCert, "tls-cert", "", "TLS certificate file; without it only requests a trusted proxy marks as HTTPS are served")
	flag.StringVar(&tlsKey, "tls-key", "", "TLS key file")
	flag.StringVar(&proxies, "trusted-proxies", "", "comma-separated CIDRs whose X-Forwarded-Proto is believed (e.g. 10.0.0.0/8)")
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":9090", "Prometheus metrics, /healthz and /readyz (plain HTTP, cluster-internal)")
	flag.DurationVar(&waitBound, "wait-bound", webhookd.DefaultWaitBound, "how long a request waits for the execution result")
	flag.StringVar(&instance, "instance-id", fmt.Sprintf("%s-%d", host, os.Getpid()), "this replica's name (its result channel)")
	store.BindFlags(flag.CommandLine, &redisOpts)
	flag.TextVar(&logLevel, "log-level", slog.LevelInfo, "log level")
	flag.Parse()

	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel}))
	if err := run(logger, config{listen, metricsAddr, tlsCert, tlsKey, proxies, instance, waitBound, redisOpts}); err != nil {
		logger.Error("webhookd stopped", "error", err)
		os.Exit(1)
	}
}

type config struct {
	listen, metricsAddr, tlsCert, tlsKey, proxies, instance string
	waitBound                                               time.Duration
	redis                                                   store.Options
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
	known := webhookd.NewKnownSymbols(paper.Symbols())
	go known.Run(ctx, registry.New(rdb), 30*time.Second, logger)
	srv, err := webhookd.New(webhookd.Options{
		Intake: intake.New(rdb), Waiter: waiter, Results: resultStore{rdb}, Symbols: known.Get,
		WaitBound: c.waitBound, TrustedProxies: trusted, Logger: logger, Registerer: reg,
		Ready: func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
	})
	if err != nil {
		return err
	}

	api := &http.Server{Addr: c.listen, Handler: srv.Handler(), ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout: 10 * time.Second, WriteTimeout: webhookd.DefaultWaitBound + c.waitBound + 5*time.Second, IdleTimeout: 2 * time.Minute}
	logger.Info("webhookd listening", "addr", c.listen, "tls", c.tlsCert != "", "instance", c.instance)
	// Graceful: stop taking requests, let in-flight ones get their results (bounded).
	return daemon.Serve(ctx, api, daemon.OpsServer(c.metricsAddr, reg, srv.Handler()), c.tlsCert, c.tlsKey, c.waitBound+5*time.Second)
}

// resultStore reads stored results for duplicate signals.
type resultStore struct{ rdb redis.UniversalClient }

func (s resultStore) GetResult(ctx context.Context, id string) (result.Stored, error) {
	return queue.GetResult(ctx, s.rdb, id)
}
