// Command authd serves accounts, dashboard sessions, bearer JWTs and the OAuth 2.1
// authorization server (`authd serve`), and administers accounts (`authd users ...`).
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

	"github.com/sigops/sigops/authd"
	"github.com/sigops/sigops/internal/userapi"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/daemon"
	"github.com/sigops/sigops/runtime/egress"
	"github.com/sigops/sigops/runtime/notify/manage"
	"github.com/sigops/sigops/runtime/notify/settings"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/trustedproxy"
)

// version is set at build time (-ldflags "-X main.version=...").
var version = "dev"

const usage = `usage:
  authd serve [flags]                 serve HTTP (authd serve -h for flags)
  authd users create        --email E [--name N] [--tier free|pro|team] [--wallet USD] [--password-file F | --password-stdin]
  authd users ensure        --email E [--name N] [--tier T] [--wallet USD] (--password-file F | --password-stdin)
  authd users set-tier      --email E --tier T          (or: set-tier E T)
  authd users set-password  --email E [--password-file F | --password-stdin]
  authd users credit-wallet --email E --amount USD      (or: credit-wallet E USD)
  authd users show          --email E
  authd users suspend-apps  --email E                 suspend every connected app's trading (the kill switch)
  authd users lift-apps     --email E                 lift it
Every users command takes the Redis flags of serve: --redis-addr, --redis-db,
--redis-password-file, --redis-sentinel-addrs with --redis-master-name (and
--redis-sentinel-password-file), --redis-cluster-addrs.
Passwords are read from a file, from standard input, or typed at a terminal without echo;
never from a flag value.
`

func main() {
	if len(os.Args) < 2 {
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "serve":
		err = serve(os.Args[2:])
	case "users":
		err = users(os.Args[2:], os.Stdin, os.Stdout)
	case "-h", "--help", "help":
		fmt.Print(usage)
		return
	default:
		fmt.Fprint(os.Stderr, usage)
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "authd:", err)
		os.Exit(1)
	}
}

type serveConfig struct {
	listen, metricsAddr, tlsCert, tlsKey, proxies string
	baseURL, mcpURL, keyFile, prevKeyFile         string
	allowLocalhost, webhookLoopback               bool
	telegramBot                                   string
	hashConcurrency, hashQueue                    int
	registerPer48, registerGlobal                 int
	redis                                         store.Options
	apis                                          userapi.Flags
}

func serve(args []string) error {
	fs := flag.NewFlagSet("serve", flag.ExitOnError)
	var c serveConfig
	var logLevel slog.Level
	fs.StringVar(&c.listen, "listen", ":8080", "address of the HTTP server")
	fs.StringVar(&c.tlsCert, "tls-cert", "", "TLS certificate file; without it only requests a trusted proxy marks as HTTPS are served")
	fs.StringVar(&c.tlsKey, "tls-key", "", "TLS key file")
	fs.StringVar(&c.proxies, "trusted-proxies", "", "comma-separated CIDRs whose X-Forwarded-Proto and X-Forwarded-For are believed")
	fs.StringVar(&c.baseURL, "issuer", "", "{base_url}: the issuer and public origin, e.g. https://127.0.0.1:8443 (required)")
	fs.StringVar(&c.baseURL, "base-url", "", "alias of --issuer")
	fs.StringVar(&c.mcpURL, "mcp-url", "", "{mcp_url}: origin of the hosted MCP server (default: the issuer)")
	fs.StringVar(&c.keyFile, "jwt-key-file", "", "file holding the HS256 signing key, at least 32 bytes (required)")
	fs.StringVar(&c.prevKeyFile, "jwt-previous-key-file", "", "file holding the previous signing key during a rotation")
	fs.BoolVar(&c.allowLocalhost, "allow-localhost-redirects", false, "accept http://localhost redirect URIs as loopback (RFC 8252 §8.3 advises against)")
	fs.IntVar(&c.hashConcurrency, "hash-concurrency", auth.DefaultHashConcurrency, "argon2id computations at once per replica (each takes 64 MiB)")
	fs.IntVar(&c.hashQueue, "hash-queue", auth.DefaultHashQueue, "argon2id computations that may wait for a slot; beyond it a login is refused at once with 429")
	fs.IntVar(&c.registerPer48, "register-per-48-per-hour", auth.RegisterPerNet48.Max, "client registrations per IPv6 /48 per hour")
	fs.IntVar(&c.registerGlobal, "register-global-per-hour", auth.RegisterGlobal.Max, "client registrations of the whole service per hour")
	fs.StringVar(&c.metricsAddr, "metrics-bind-address", ":9090", "Prometheus metrics, /healthz and /readyz (plain HTTP, cluster-internal)")
	fs.StringVar(&c.telegramBot, "telegram-bot-username", "", "the Telegram bot's username, for the link the Notifications page gives (empty: it shows the /start command instead)")
	fs.BoolVar(&c.webhookLoopback, "webhook-loopback-http", false, "allow plain-HTTP webhook destinations on 127.0.0.1 and ::1 (the local stack only; never in production)")
	daemon.ProfilingFlag(fs)
	store.BindFlags(fs, &c.redis)
	// The dashboard's Go APIs take mcpd's flags: the same market data, master key and audit
	// retention (authd reads the journal mcpd writes), so both show the same figures.
	c.apis.Bind(fs, "serve the dashboard's bot pages (create, edit, delete, pause, resume, webhooks), which need the Kubernetes API (in-cluster, or --kubeconfig)")
	fs.TextVar(&logLevel, "log-level", slog.LevelInfo, "log level")
	_ = fs.Parse(args)

	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel}))
	if err := run(logger, c); err != nil {
		logger.Error("authd stopped", "error", err)
		return err
	}
	return nil
}

// hashQueue maps the flag to authd.Options, where 0 means the default: --hash-queue=0 means
// that nobody waits.
func hashQueue(n int) int {
	if n <= 0 {
		return -1
	}
	return n
}

// perHour is lim with n events an hour (n ≤ 0 keeps the default).
func perHour(lim auth.Limit, n int) auth.Limit {
	if n > 0 {
		lim.Max, lim.Window = n, time.Hour
	}
	return lim
}

func run(logger *slog.Logger, c serveConfig) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	trusted, err := trustedproxy.Parse(c.proxies)
	if err != nil {
		return err
	}
	if c.tlsCert == "" && len(trusted) == 0 {
		return errors.New("give --tls-cert/--tls-key or --trusted-proxies: authd is HTTPS only")
	}
	if c.baseURL == "" {
		return errors.New("--issuer is required")
	}
	keys, err := auth.LoadKeyring(c.keyFile, c.prevKeyFile)
	if err != nil {
		return err
	}
	rdb, err := store.Connect(ctx, c.redis)
	if err != nil {
		return err
	}
	defer rdb.Close()

	reg := daemon.NewRegistry()
	apis, err := userapi.Build(ctx, c.apis, rdb, reg, logger)
	if err != nil {
		return err
	}
	srv, err := authd.New(authd.Options{Redis: rdb, DB: apis.DB, Keys: keys, BaseURL: c.baseURL, MCPURL: c.mcpURL, Audit: apis.Audit, APIs: apis,
		AllowLocalhostRedirects: c.allowLocalhost, TrustedProxies: trusted, Version: version, Notifications: notificationsOf(apis, c),
		HashConcurrency: c.hashConcurrency, HashQueue: hashQueue(c.hashQueue),
		RegisterPerNet48: perHour(auth.RegisterPerNet48, c.registerPer48), RegisterGlobal: perHour(auth.RegisterGlobal, c.registerGlobal),
		Logger: logger, Registerer: reg, Ready: func(ctx context.Context) error { return rdb.Ping(ctx).Err() }})
	if err != nil {
		return err
	}
	api := &http.Server{Addr: c.listen, Handler: srv.Handler(), ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout: 15 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 32 << 10}
	// The dashboard's live events: one Redis subscription for this replica.
	go func() {
		if err := srv.Run(ctx); err != nil {
			logger.Error("dashboard events stopped", "error", err)
		}
	}()
	logger.Info("authd listening", "addr", c.listen, "tls", c.tlsCert != "", "issuer", c.baseURL, "kid", keys.KID())
	// Live while the process answers (its HTTP handlers are its work), ready while Redis
	// answers too.
	probes := daemon.NewProbes()
	probes.Ready("redis", daemon.RedisReady(rdb))
	return daemon.Serve(ctx, api, daemon.OpsServer(c.metricsAddr, reg, probes), c.tlsCert, c.tlsKey, 15*time.Second)
}

// notificationsOf serves the notification settings when authd has PostgreSQL, where they
// live.
func notificationsOf(apis *userapi.APIs, c serveConfig) *manage.Manager {
	if apis.DB == nil {
		return nil
	}
	return &manage.Manager{Settings: &settings.Store{DB: apis.DB}, BotUsername: c.telegramBot,
		Egress: egress.New(egress.Options{LoopbackHTTP: c.webhookLoopback})}
}
