package controllers

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/registry"
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
}

// Setup registers every reconciler with the manager.
func Setup(mgr ctrl.Manager, o Options) error {
	events := newBotEvents(o.Redis)
	if err := mgr.Add(events); err != nil {
		return err
	}
	if err := (&SignalBotReconciler{
		Client:                  mgr.GetClient(),
		Registry:                registry.New(o.Redis),
		Recorder:                mgr.GetEventRecorder("signalbot-controller"),
		BaseURL:                 o.BaseURL,
		TombstoneTTL:            o.TombstoneTTL,
		MaxConcurrentReconciles: o.MaxConcurrentReconciles,
		Now:                     o.Clock,
		Events:                  events.out,
		Forget: func(ctx context.Context, botID string) error {
			return executor.Forget(ctx, o.Redis, botID)
		},
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	if err := (&PaperAccountReconciler{
		Client:     mgr.GetClient(),
		Accounts:   paper.NewAccounts(o.Redis),
		Recorder:   mgr.GetEventRecorder("paperaccount-controller"),
		SyncPeriod: o.PaperSyncPeriod,
		Now:        o.Clock,
	}).SetupWithManager(mgr); err != nil {
		return err
	}
	return (&ExchangeConnectionReconciler{
		Client:      mgr.GetClient(),
		APIReader:   mgr.GetAPIReader(),
		RetryPeriod: o.CredentialsRetryPeriod,
	}).SetupWithManager(mgr)
}

// CacheOptions limits the manager's Secret cache to the Secrets sigops labels (webhook and
// credentials Secrets), so memory does not grow with every Secret in the cluster.
func CacheOptions() cache.Options {
	req, err := labels.NewRequirement(LabelSecretKind, selection.Exists, nil)
	if err != nil {
		panic(err) // a constant key; cannot fail
	}
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Secret{}: {Label: labels.NewSelector().Add(*req)},
	}}
}
