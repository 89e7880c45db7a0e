// Command mcpd serves the hosted MCP server: {mcp_url}/mcp over streamable HTTP, stateless,
// authenticated by the bearer tokens authd issues.
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

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/userapi"
	"github.com/sigops/sigops/mcpd"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/daemon"
	"github.com/sigops/sigops/runtime/intake"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/trustedproxy"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

type config struct {
	listen, metricsAddr, tlsCert, tlsKey, proxies string
	baseURL, mcpURL, keyFile, prevKeyFile         string
	instance                                      string
	rateLimit                                     int
	sessionIdle                                   time.Duration
	redis                                         store.Options
	apis                                          userapi.Flags
}

func main() {
	var (
		c        config
		logLevel slog.Level
	)
	flag.StringVar(&c.listen, "listen", ":8444", "address of the MCP endpoint")
	flag.StringVar(&c.tlsCert, "tls-cert", "", "TLS certificate file; without it only requests a trusted proxy marks as HTTPS are served")
	flag.StringVar(&c.tlsKey, "tls-key", "", "TLS key file")
	flag.StringVar(&c.proxies, "trusted-proxies", "", "comma-separated CIDRs whose X-Forwarded-Proto is believed (e.g. 10.0.0.0/8)")
	flag.StringVar(&c.metricsAddr, "metrics-bind-address", ":9090", "Prometheus metrics, /healthz and /readyz (plain HTTP, cluster-internal)")
	flag.StringVar(&c.baseURL, "base-url", "", "the service's public origin ({base_url}): authd, the tokens' issuer and the authorization server")
	flag.StringVar(&c.mcpURL, "mcp-url", "", "this server's public origin ({mcp_url}; default --base-url): OAuth tokens must name {mcp_url}/mcp as audience")
	flag.StringVar(&c.keyFile, "jwt-key-file", "", "file holding authd's HS256 signing key")
	flag.StringVar(&c.prevKeyFile, "jwt-previous-key-file", "", "file holding authd's previous signing key during a rotation")
	flag.IntVar(&c.rateLimit, "rate-limit", mcpd.DefaultRateLimit, "requests a minute per OAuth client of a user, or per user for bearer JWTs, across replicas")
	flag.DurationVar(&c.sessionIdle, "session-idle", mcpd.DefaultSessionIdle, "how long an MCP session lives without a request (sessions are in Redis, shared by the replicas)")
	c.apis.Bind(flag.CommandLine,
		"serve create_bot, update_bot, delete_bot, pause_bot, resume_bot and regenerate_webhook, which need the Kubernetes API (in-cluster, or --kubeconfig)")
	host, _ := os.Hostname()
	flag.StringVar(&c.instance, "instance-id", fmt.Sprintf("mcpd-%s-%d", host, os.Getpid()),
		"this replica's name: the channel send_signal's results come back on")
	store.BindFlags(flag.CommandLine, &c.redis)
	flag.TextVar(&logLevel, "log-level", slog.LevelInfo, "log level")
	flag.Parse()

	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel}))
	if err := run(logger, c); err != nil {
		logger.Error("mcpd stopped", "error", err)
		os.Exit(1)
	}
}

func run(logger *slog.Logger, c config) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if c.baseURL == "" || c.keyFile == "" {
		return errors.New("give --base-url and --jwt-key-file: every request is authenticated by a token authd signs")
	}
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
	reg := daemon.NewRegistry()
	o, closeWaiter, err := options(ctx, logger, c, rdb, reg)
	if err != nil {
		return err
	}
	defer closeWaiter()
	o.TrustedProxies = trusted
	srv, err := mcpd.New(o)
	if err != nil {
		return err
	}
	api := &http.Server{Addr: c.listen, Handler: srv.Handler(), ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout: 30 * time.Second, WriteTimeout: 2 * time.Minute, IdleTimeout: 2 * time.Minute}
	logger.Info("mcpd listening", "addr", c.listen, "tls", c.tlsCert != "", "resource", o.MCPURL+mcpd.Path)
	// Live while send_signal's result waiter goes round (through a Redis outage too), ready
	// while Redis answers.
	probes := daemon.NewProbes()
	probes.Ready("redis", daemon.RedisReady(rdb))
	probes.Watch("the result waiter's loop", 2*time.Minute, o.Waiter.LoopRound)
	return daemon.Serve(ctx, api, daemon.OpsServer(c.metricsAddr, reg, probes), c.tlsCert, c.tlsKey, 30*time.Second)
}

// options wires the Go APIs the tools call, on rdb, with their metrics on reg; the
// function returned closes send_signal's result waiter.
func options(ctx context.Context, logger *slog.Logger, c config, rdb redis.UniversalClient, reg *prometheus.Registry) (mcpd.Options, func(), error) {
	none := func() {}
	keys, err := auth.LoadKeyring(c.keyFile, c.prevKeyFile)
	if err != nil {
		return mcpd.Options{}, none, err
	}
	base := strings.TrimRight(c.baseURL, "/")
	mcpURL := strings.TrimRight(c.mcpURL, "/")
	if mcpURL == "" {
		mcpURL = base
	}
	// Bearer JWTs name the API ({base_url}/api); OAuth tokens must name the MCP resource,
	// which the server checks on top.
	verifier, err := auth.NewVerifier(auth.VerifierOptions{Redis: rdb, Keys: keys, Issuer: base,
		Audiences: []string{mcpURL + mcpd.Path, base + "/api"}})
	if err != nil {
		return mcpd.Options{}, none, err
	}
	apis, err := userapi.Build(ctx, c.apis, rdb, reg, logger)
	if err != nil {
		return mcpd.Options{}, none, err
	}
	// send_signal's wait: results come back on this replica's channel, as webhookd's do.
	waiter, err := queue.NewWaiter(ctx, rdb, c.instance)
	if err != nil {
		return mcpd.Options{}, none, err
	}
	return mcpd.Options{Redis: rdb, BaseURL: base, MCPURL: mcpURL, Verifier: verifier,
		Users: apis.Users, OAuth: auth.NewOAuth(rdb, auth.OAuthOptions{DB: apis.DB}),
		Trading: apis.Trading, Audit: apis.Audit, AppPolicies: apis.AppPolicies, SessionIdle: c.sessionIdle, Lab: apis.Lab,
		Portfolio: apis.Portfolio, Exchanges: apis.Exchanges, Candles: apis.Candles, Analytics: apis.Analytics,
		// send_signal resolves symbols against the same index as the webhook.
		Fleet: apis.Fleet, Intake: intake.New(rdb).WithMemoryGuard(apis.Memory), Symbols: apis.Symbols, Waiter: waiter, Previews: apis.Previews,
		RateLimit: c.rateLimit, Logger: logger, Version: version, Registerer: reg,
		Ready: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }}, func() { _ = waiter.Close() }, nil
}
