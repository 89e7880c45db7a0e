// Command notifyd tells users what their bots did: it reads the facts the runtime appends
// to its streams, queues each for the user's channels in PostgreSQL and delivers them to
// Telegram and outbound webhooks (runtime/notify/service). It also receives the Telegram
// bot's updates (linking and unlinking chats) by long polling.
package main

import (
	"context"
	"errors"
	"flag"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/approval"
	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/daemon"
	"github.com/sigops/sigops/runtime/database"
	"github.com/sigops/sigops/runtime/egress"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/notify/channels"
	"github.com/sigops/sigops/runtime/notify/chatbot"
	"github.com/sigops/sigops/runtime/notify/outbox"
	"github.com/sigops/sigops/runtime/notify/route"
	"github.com/sigops/sigops/runtime/notify/service"
	"github.com/sigops/sigops/runtime/notify/settings"
	"github.com/sigops/sigops/runtime/notify/summary"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/telegram"
)

type config struct {
	databaseURL, metricsAddr, tokenFile, telegramURL string
	// webhookURL, secretFile and listen: Telegram's updates by webhook (production).
	webhookURL, secretFile, listen string
	loopbackHTTP                   bool
	redis                          store.Options
}

func main() {
	var c config
	var logLevel slog.Level
	flag.StringVar(&c.databaseURL, "database-url", os.Getenv(database.URLEnv), "PostgreSQL, where preferences, chats, destinations and the delivery queue live (default $"+database.URLEnv+"; required)")
	flag.StringVar(&c.metricsAddr, "metrics-bind-address", ":9090", "Prometheus metrics, /healthz and /readyz")
	flag.StringVar(&c.tokenFile, "telegram-token-file", "", "file holding the Telegram bot's token (a Secret's key); empty: Telegram is off")
	flag.StringVar(&c.telegramURL, "telegram-api-url", telegram.DefaultAPIURL, "the Telegram Bot API's address (a local stand-in for tests and the local stack)")
	flag.StringVar(&c.webhookURL, "telegram-webhook-url", "", "the public HTTPS URL Telegram posts the bot's updates to (routed to --listen's /telegram/updates); empty: updates by long polling (a stack with no public address)")
	flag.StringVar(&c.secretFile, "telegram-webhook-secret-file", "", "file holding the webhook's secret token (1-256 of A-Z a-z 0-9 _ -); required with --telegram-webhook-url")
	flag.StringVar(&c.listen, "listen", ":8080", "address of the Telegram webhook endpoint (with --telegram-webhook-url)")
	flag.BoolVar(&c.loopbackHTTP, "webhook-loopback-http", false, "allow plain-HTTP webhook destinations on 127.0.0.1 and ::1 (the local stack only; never in production)")
	store.BindFlags(flag.CommandLine, &c.redis)
	flag.TextVar(&logLevel, "log-level", slog.LevelInfo, "log level")
	flag.Parse()
	logger := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: logLevel}))
	if err := run(logger, c); err != nil {
		logger.Error("notifyd stopped", "error", err)
		os.Exit(1)
	}
}

func run(logger *slog.Logger, c config) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if c.databaseURL == "" {
		return errors.New("give --database-url: notifyd keeps its queue in PostgreSQL")
	}
	rdb, err := store.Connect(ctx, c.redis)
	if err != nil {
		return err
	}
	defer rdb.Close()
	db, err := database.Pool(ctx, c.databaseURL)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := database.MigrateWhenUp(ctx, db, logger); err != nil {
		return err
	}
	set := &settings.Store{DB: db}
	users := auth.NewUsers(rdb, auth.UsersOptions{DB: db})
	acct := &chatbot.Runtime{Users: users, Bots: registry.New(rdb), Book: position.NewBook(rdb), Analytics: analytics.New(rdb),
		Paper:     paper.NewAccounts(rdb),
		Approvals: approval.New(rdb, apppolicy.New(rdb, apppolicy.Options{DB: db}), nil), Audit: audit.New(rdb, audit.Options{DB: db})}
	tg, err := telegramOf(c, set, acct, logger)
	if err != nil {
		return err
	}
	ch := &channels.Channels{Settings: set, Telegram: tg, Egress: egress.New(egress.Options{LoopbackHTTP: c.loopbackHTTP}),
		Disabled: channels.TellDisabled(rdb, logger)}
	svc := service.New(service.Options{Redis: rdb, DB: db, Logger: logger,
		Router:    &route.Router{Settings: set, Owner: route.OwnerOf(registry.New(rdb), users)},
		Deliverer: &outbox.Deliverer{DB: db, Sender: ch}, Poll: updatesOf(c, tg, logger),
		Summaries: &summary.Scheduler{DB: db, Redis: rdb, Summarize: acct.Summary}})
	reg := daemon.NewRegistry()
	reg.MustRegister(svc.Collectors()...)
	probes := daemon.NewProbes()
	probes.Ready("redis", daemon.RedisReady(rdb))
	probes.Ready("postgres", func(ctx context.Context) error { return db.Ping(ctx) })
	ops := daemon.OpsServer(c.metricsAddr, reg, probes)
	go func() {
		if err := ops.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
			logger.Error("ops server", "err", err)
		}
	}()
	defer ops.Close()
	logger.Info("notifyd started", "telegram", tg != nil, "telegramApi", c.telegramURL)
	return svc.Run(ctx)
}

// telegramOf is the Telegram client, its updates answered by the chat bot on the account
// stores the dashboard uses; nil without a token.
func telegramOf(c config, set *settings.Store, acct *chatbot.Runtime, logger *slog.Logger) (*telegram.Client, error) {
	if c.tokenFile == "" {
		return nil, nil
	}
	raw, err := os.ReadFile(c.tokenFile)
	if errors.Is(err, os.ErrNotExist) {
		// the Secret is optional (config/notifyd): Telegram is off, webhooks still go
		logger.Warn("no Telegram token file: Telegram is off", "file", c.tokenFile)
		return nil, nil
	}
	if err != nil {
		return nil, errors.New("read the Telegram token file: " + err.Error())
	}
	cb := &chatbot.Bot{Settings: set, Account: acct, Logger: logger}
	tg, err := telegram.New(telegram.Options{Token: strings.TrimSpace(string(raw)), APIURL: c.telegramURL, OnUpdate: cb.Handle,
		Logger: logger})
	cb.Chat = tg
	return tg, err
}

// updatesOf receives the bot's updates: by webhook when a public URL is given (the
// secret token checked on every post), else by long polling.
func updatesOf(c config, tg *telegram.Client, logger *slog.Logger) func(context.Context) error {
	if tg == nil {
		return nil
	}
	if c.webhookURL == "" {
		return tg.Poll
	}
	return func(ctx context.Context) error {
		raw, err := os.ReadFile(c.secretFile)
		if err != nil {
			return errors.New("read the Telegram webhook secret file: " + err.Error())
		}
		secret := strings.TrimSpace(string(raw))
		h, err := tg.WebhookHandler(secret)
		if err != nil {
			return err
		}
		if err := tg.SetWebhook(ctx, c.webhookURL, secret); err != nil {
			return err
		}
		mux := http.NewServeMux()
		mux.Handle("/telegram/updates", h)
		srv := &http.Server{Addr: c.listen, Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 10 * time.Second}
		go func() { <-ctx.Done(); _ = srv.Close() }()
		logger.Info("Telegram updates by webhook", "listen", c.listen)
		if err := srv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
			logger.Error("Telegram webhook endpoint", "err", err)
			return err
		}
		return nil
	}
}
