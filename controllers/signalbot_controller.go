package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/redis/go-redis/v9"
	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/strategy"
)

// SignalBotReconciler keeps a SignalBot's webhook Secret and its Redis projection in step
// with the object. It runs the reconcile skeleton (reconcile.go); its concerns are split
// across files: the webhook Secret
// (signalbot_webhook_secret.go), the account reference (signalbot_account.go), the copied
// master (signalbot_copy.go), the projection into Redis (signalbot_projection.go) and the
// strategy (signalbot_strategy.go).
type SignalBotReconciler struct {
	client.Client
	// APIReader reads from the API server, past the cache: whether a bot whose Secret
	// outlives it in the cache is really gone.
	APIReader client.Reader
	Registry  *registry.Registry
	// Redis reads owners' tiers (live bots need live trading); nil skips the check.
	Redis    redis.UniversalClient
	Recorder events.EventRecorder
	// BaseURL is the public origin written into each webhook Secret's url.
	BaseURL string
	// TombstoneTTL is how long a deleted bot's URL answers BOT_DELETED before it answers
	// INVALID_WEBHOOK like any unknown ID.
	TombstoneTTL time.Duration
	// MaxConcurrentReconciles bounds parallel reconciles (default 1).
	MaxConcurrentReconciles int
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Forget removes a deleted bot's trading state (positions book, watch entries, risk
	// counters; Setup passes forgetTrading); nil skips it.
	Forget func(ctx context.Context, botID string) error
	// Events, when set, wakes the reconciler for bots the executor paused.
	Events <-chan event.GenericEvent
	// Reproject, when set, wakes the reconciler for every bot after Redis lost its data
	// (reproject.go).
	Reproject <-chan event.GenericEvent
	// RiskRecordPeriod is how often a bot with a loss rule has its risk counters recorded
	// in status (signalbot_risk_record.go; 0: DefaultRiskRecordPeriod).
	RiskRecordPeriod time.Duration
}

// +kubebuilder:rbac:groups=trading.sigops.dev,resources=signalbots,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=trading.sigops.dev,resources=signalbots/status,verbs=get;patch
// +kubebuilder:rbac:groups=trading.sigops.dev,resources=signalbots/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete

// Reconcile brings one bot's runtime state in line with its spec.
func (r *SignalBotReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if err := r.forgetDeparted(ctx, req.NamespacedName); err != nil {
		return ctrl.Result{}, err
	}
	return reconcileObject[tradingv1.SignalBot](ctx, r.Client, req, r)
}

func (r *SignalBotReconciler) statusFields(bot *tradingv1.SignalBot) (*[]metav1.Condition, *int64) {
	return &bot.Status.Conditions, &bot.Status.ObservedGeneration
}

// reconcileKind ensures the webhook Secret, checks the account and projects the bot.
func (r *SignalBotReconciler) reconcileKind(ctx context.Context, bot *tradingv1.SignalBot) (outcome, ctrl.Result, error) {
	hook, err := r.ensureWebhookSecret(ctx, bot)
	if err != nil {
		var invalid *invalidSecretError
		if errors.As(err, &invalid) {
			return stalledOutcome("WebhookSecretInvalid", invalid.Error()), ctrl.Result{}, nil
		}
		return outcome{}, ctrl.Result{}, err
	}
	bot.Status.WebhookSecretName = hook.secretName

	strat, err := strategyOf(bot)
	if err != nil {
		return stalledOutcome("StrategyInvalid", "spec.strategy: "+err.Error()), ctrl.Result{}, nil
	}

	acct := r.checkAccount(ctx, bot)
	if acct.err != nil {
		return outcome{}, ctrl.Result{}, acct.err
	}
	bot.Status.Availability, bot.Status.PausedReason = availability(bot, acct)
	cp := r.checkCopy(ctx, bot)
	if cp.err != nil {
		return outcome{}, ctrl.Result{}, cp.err
	}

	proj := projection(bot, acct)
	proj.Strategy = strat
	proj.CopyFrom = cp.from
	if failed, err := r.writeProjection(ctx, bot, proj, hook); failed != nil {
		return *failed, ctrl.Result{}, err
	}
	requeue, failed, err := r.mirrorRuntime(ctx, bot, strat, cp)
	if failed != nil {
		return *failed, ctrl.Result{}, err
	}
	if hook.regenerated != "" {
		regenerations.Inc()
		bot.Status.LastHandledRegenerate = hook.regenerated
		r.Recorder.Eventf(bot, nil, corev1.EventTypeNormal, "WebhookRegenerated", "Regenerate",
			"new webhook ID issued; the previous URL no longer works")
	}
	o, res := settled(bot, acct, cp, requeue)
	return o, res, nil
}

// writeProjection writes the bot's projection into Redis with the runtime state its status
// records (written back where Redis lost it). It returns the outcome to report when the
// write failed (nil when it succeeded) and the error to retry on.
func (r *SignalBotReconciler) writeProjection(ctx context.Context, bot *tradingv1.SignalBot, proj registry.Bot, hook webhookState) (*outcome, error) {
	err := r.Registry.ProjectRecorded(ctx, proj, hook.hash, recorded(bot.Status), r.now())
	switch {
	case err == nil:
		projections.WithLabelValues("ok").Inc()
		return nil, nil
	case errors.Is(err, registry.ErrWebhookInUse):
		projections.WithLabelValues("conflict").Inc()
		o := stalledOutcome("WebhookIDConflict",
			"the webhook ID in Secret "+hook.secretName+" already belongs to another bot; delete the Secret or set the regenerate annotation to get a new ID")
		return &o, nil
	}
	projections.WithLabelValues("error").Inc()
	o := retryingOutcome(reasonRuntimeStoreUnavailable, "cannot write the bot to Redis; retrying")
	return &o, fmt.Errorf("project bot: %w", err)
}

// mirrorRuntime records in status what the runtime holds for the bot (its runtime pause,
// risk counters, strategy state and copy state) and returns when to look again. On a
// Redis failure it returns the outcome to report and the error to retry on.
func (r *SignalBotReconciler) mirrorRuntime(ctx context.Context, bot *tradingv1.SignalBot, strat *strategy.Spec, cp copyCheck) (time.Duration, *outcome, error) {
	unavailable := func(what string, err error) (time.Duration, *outcome, error) {
		o := retryingOutcome(reasonRuntimeStoreUnavailable, "cannot read the bot's "+what+" from Redis; retrying")
		return 0, &o, err
	}
	requeue, err := r.mirrorRuntimePause(ctx, bot)
	if err != nil {
		return unavailable("runtime state", err)
	}
	if err := r.mirrorRiskCounters(ctx, bot); err != nil {
		return unavailable("risk counters", err)
	}
	if err := r.mirrorStrategy(ctx, bot, strat); err != nil {
		return unavailable("strategy state", err)
	}
	if err := r.mirrorCopy(ctx, bot, cp); err != nil {
		return unavailable("runtime state", err)
	}
	return r.riskRequeue(bot, requeue), nil, nil
}

// settled is the outcome of a bot whose projection and status are written: waiting for
// its account or its master, paused, or active, and when to look again.
func settled(bot *tradingv1.SignalBot, acct accountCheck, cp copyCheck, requeue time.Duration) (outcome, ctrl.Result) {
	if !acct.ready {
		if after, ok := tierRecheck(acct.reason); ok {
			return waitingOutcome(acct.reason, acct.message), ctrl.Result{RequeueAfter: after}
		}
		return waitingOutcome(acct.reason, acct.message), ctrl.Result{}
	}
	again := ctrl.Result{RequeueAfter: requeue}
	if cp.reason != "" {
		if cp.stalled {
			return stalledOutcome(cp.reason, cp.message), again
		}
		return waitingOutcome(cp.reason, cp.message), again
	}
	if bot.Status.Availability == tradingv1.AvailabilityPaused {
		return readyOutcome("Paused", "paused: "+string(bot.Status.PausedReason)), again
	}
	return readyOutcome("Active", "taking signals"), again
}

// availability decides active, paused or disabled from the spec and the account.
// A disabled reason wins over a pause: a bot that cannot trade is not merely paused.
func availability(bot *tradingv1.SignalBot, acct accountCheck) (tradingv1.Availability, tradingv1.PausedReason) {
	switch {
	case !acct.ready:
		return tradingv1.AvailabilityDisabled, ""
	case bot.Spec.Suspend:
		return tradingv1.AvailabilityPaused, tradingv1.PausedManual
	default:
		return tradingv1.AvailabilityActive, ""
	}
}

// finalize runs for a bot that carries the finalizer itself: it removes the runtime state
// the way a departed bot's is removed (forget), with the webhook Secret this very bot owns.
func (r *SignalBotReconciler) finalize(ctx context.Context, bot *tradingv1.SignalBot) error {
	secret, err := r.ownWebhookSecret(ctx, bot)
	if err != nil {
		return err
	}
	return r.forget(ctx, string(bot.UID), secret)
}

// SetupWithManager wires the watches: the bot itself (spec and annotation changes), its
// webhook Secret (deleted or edited), and the accounts it references (readiness or owner
// changes only, so balance updates do not wake every bot).
func (r *SignalBotReconciler) SetupWithManager(mgr ctrl.Manager) error {
	ctx := context.Background()
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &tradingv1.SignalBot{}, indexPaperAccountRef, func(o client.Object) []string {
		if ref := o.(*tradingv1.SignalBot).Spec.PaperAccountRef; ref != nil {
			return []string{ref.Name}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &tradingv1.SignalBot{}, indexExchangeConnectionRef, func(o client.Object) []string {
		if ref := o.(*tradingv1.SignalBot).Spec.ExchangeConnectionRef; ref != nil {
			return []string{ref.Name}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &tradingv1.SignalBot{}, indexCopyFrom, copyIndex); err != nil {
		return err
	}
	workers := r.MaxConcurrentReconciles
	if workers < 1 {
		workers = 1
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("signalbot").
		For(&tradingv1.SignalBot{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		// Edits and deletions of a webhook Secret wake its bot; a creation only when the
		// bot is not in the cache (signalbot_departed.go).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(botOfSecret),
			builder.WithPredicates(r.secretCreateWakes(mgr.GetCache()))).
		Watches(&tradingv1.PaperAccount{}, handler.EnqueueRequestsFromMapFunc(r.botsReferencing(indexPaperAccountRef)),
			builder.WithPredicates(accountReadinessChanged())).
		Watches(&tradingv1.ExchangeConnection{}, handler.EnqueueRequestsFromMapFunc(r.botsReferencing(indexExchangeConnectionRef)),
			builder.WithPredicates(accountReadinessChanged())).
		// A master's changes wake its followers (signalbot_copy.go).
		Watches(&tradingv1.SignalBot{}, handler.EnqueueRequestsFromMapFunc(r.followersOf),
			builder.WithPredicates(masterChanged())).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers})
	if r.Events != nil {
		b = b.WatchesRawSource(source.Channel(r.Events, &handler.EnqueueRequestForObject{}))
	}
	if r.Reproject != nil {
		b = b.WatchesRawSource(source.Channel(r.Reproject, &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(r)
}
