package controllers

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/bookstate"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/notify"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/risk"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/strategyrun"
)

// Options configure the controllers; cmd/manager fills them from flags.
type Options struct {
	Redis                   redis.UniversalClient
	BaseURL                 string
	TombstoneTTL            time.Duration
	MaxConcurrentReconciles int
	// PaperSyncPeriod is how often paper account status re-reads the balance.
	PaperSyncPeriod time.Duration
	// CredentialsRetryPeriod is how often a connection whose Secret is missing looks again.
	CredentialsRetryPeriod time.Duration
	// Clock is the time source of refill cooldowns (nil: time.Now); tests move it.
	Clock func() time.Time

	// MasterKeys seal exchange credentials before they reach Redis (--master-key-file,
	// --previous-master-key-files). Nil: no connection becomes Ready (MasterKeyMissing).
	MasterKeys *credentials.Ring
	// Connectors by exchange name as ExchangeConnection.spec.exchange spells it ("binance",
	// "bybit"); each must answer that name from Name(). An exchange without one is
	// ExchangeNotSupported.
	Connectors map[string]exchange.Connector
	// ExchangeRevalidatePeriod is how often a connection's key is checked with the exchange
	// again (0: 10 minutes). A change of its Secret re-validates at once.
	ExchangeRevalidatePeriod time.Duration
	// ExchangeValidationTimeout bounds the authenticated validation call (0: 5 s).
	ExchangeValidationTimeout time.Duration
	// ExchangeRetryBackoff is the first retry delay while an exchange is unreachable; it
	// doubles up to ExchangeRevalidatePeriod (0: 5 s).
	ExchangeRetryBackoff time.Duration
	// ReprojectCheckPeriod is how often the leader checks that Redis still holds its
	// projection marker, and projects every object again when it does not (0: 5 s).
	ReprojectCheckPeriod time.Duration
	// RiskRecordPeriod is how often a bot with a daily-loss or consecutive-loss rule has its
	// risk counters recorded in its status (0: a minute).
	RiskRecordPeriod time.Duration
}

// Setup registers every reconciler with the manager.
func Setup(mgr ctrl.Manager, o Options) error {
	events := newBotEvents(o.Redis)
	if err := mgr.Add(events); err != nil {
		return err
	}
	reproject := newReprojector(o.Redis, mgr.GetClient(), o.ReprojectCheckPeriod, o.Clock)
	if err := mgr.Add(reproject); err != nil {
		return err
	}
	o.Redis.AddHook(reproject)
	bots := &SignalBotReconciler{
		Client:                  mgr.GetClient(),
		APIReader:               mgr.GetAPIReader(),
		Registry:                registry.New(o.Redis),
		Redis:                   o.Redis,
		Recorder:                mgr.GetEventRecorder("signalbot-controller"),
		BaseURL:                 o.BaseURL,
		TombstoneTTL:            o.TombstoneTTL,
		MaxConcurrentReconciles: o.MaxConcurrentReconciles,
		Now:                     o.Clock,
		Events:                  events.out,
		Reproject:               reproject.bots,
		RiskRecordPeriod:        o.RiskRecordPeriod,
		Forget: func(ctx context.Context, botID string) error {
			return forgetTrading(ctx, o.Redis, botID)
		},
	}
	reproject.apiReader = mgr.GetAPIReader()
	reproject.forget = func(ctx context.Context, uid string) error { return bots.forget(ctx, uid, nil) }
	if err := bots.SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&PaperAccountReconciler{
		Client:     mgr.GetClient(),
		Accounts:   paper.NewAccounts(o.Redis),
		Recorder:   mgr.GetEventRecorder("paperaccount-controller"),
		SyncPeriod: o.PaperSyncPeriod,
		Now:        o.Clock,
		Reproject:  reproject.papers,
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	for name, c := range o.Connectors {
		if c == nil || c.Name() != name {
			return fmt.Errorf("exchange connector registered as %q answers to another name", name)
		}
	}
	return (&ExchangeConnectionReconciler{
		Client:            mgr.GetClient(),
		APIReader:         mgr.GetAPIReader(),
		Connections:       credentials.NewConnections(o.Redis),
		Registry:          registry.New(o.Redis),
		Keys:              o.MasterKeys,
		Connectors:        o.Connectors,
		Recorder:          mgr.GetEventRecorder("exchangeconnection-controller"),
		RetryPeriod:       o.CredentialsRetryPeriod,
		RevalidatePeriod:  o.ExchangeRevalidatePeriod,
		ValidationTimeout: o.ExchangeValidationTimeout,
		RetryBackoff:      o.ExchangeRetryBackoff,
		Reproject:         reproject.conns,
		Tell:              tellConnection(o.Redis),
		// Validations wait on exchanges; they get as many workers as bots do.
		MaxConcurrentReconciles: o.MaxConcurrentReconciles,
	}).SetupWithManager(mgr)
}

// forgetTrading removes a deleted bot's trading state, each part by the package that owns
// it: the book and its watch entries (runtime/position), the per-day aggregates
// (runtime/analytics), the risk counters (runtime/risk), the strategy runner's state
// (runtime/strategyrun), and PostgreSQL's copy of the book state, through the archive
// (runtime/bookstate). The runtime pause and the strategy index go with the bot's hash
// (registry.Remove). Each part can be repeated, so a finalizer retried after a partial run
// finishes the job.
func forgetTrading(ctx context.Context, rdb redis.UniversalClient, botID string) error {
	if err := bookstate.Purge(ctx, rdb, botID); err != nil {
		return err
	}
	if err := position.Purge(ctx, rdb, botID); err != nil {
		return err
	}
	if err := analytics.Purge(ctx, rdb, botID); err != nil {
		return err
	}
	if err := risk.Purge(ctx, rdb, botID); err != nil {
		return err
	}
	return strategyrun.Purge(ctx, rdb, botID)
}

// CacheOptions limits the manager's Secret cache to the Secrets sigops labels (webhook and
// credentials Secrets), so memory does not grow with every Secret in the cluster, and drops
// every cached object's managedFields: no controller reads them, and they are the larger
// part of a small object (a SignalBot's or a webhook Secret's) held once per bot.
func CacheOptions() cache.Options {
	req, err := labels.NewRequirement(LabelSecretKind, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant key; cannot fail
	}
	return cache.Options{
		DefaultTransform: cache.TransformStripManagedFields(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Label: labels.NewSelector().Add(*req)},
		},
	}
}

// tellConnection appends a connection_invalid fact for the owner's account (notifyd tells
// them); an owner without an account in Redis has no one to tell.
func tellConnection(rdb redis.UniversalClient) func(ctx context.Context, owner, connection, reason string) {
	return func(ctx context.Context, owner, connection, reason string) {
		user, err := rdb.Get(ctx, store.UserByEmail(owner)).Result()
		if err != nil {
			return
		}
		now := time.Now()
		_ = notify.Tell(ctx, rdb, notify.Event{ID: "connection_invalid:" + user + ":" + connection + ":" + strconv.FormatInt(now.UnixMilli(), 10),
			Kind: notify.ConnectionInvalid, At: now, User: user, Connection: connection, Reason: reason})
	}
}
