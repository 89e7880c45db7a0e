package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/shopspring/decimal"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/exchange/paper"
)

// PaperAccountReconciler initialises a paper account's simulated balance in Redis, applies
// refill requests (at most one per 24 hours) and mirrors the balance into status. It runs
// the reconcile skeleton (reconcile.go).
type PaperAccountReconciler struct {
	client.Client
	Accounts *paper.Accounts
	Recorder events.EventRecorder
	// SyncPeriod is how often status re-reads the balance, which trades change in Redis.
	SyncPeriod time.Duration
	// Now is the clock; tests move it.
	Now func() time.Time
	// Reproject, when set, wakes the reconciler for every account after Redis lost its data
	// (reproject.go).
	Reproject <-chan event.GenericEvent
}

// +kubebuilder:rbac:groups=trading.sigops.dev,resources=paperaccounts,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=trading.sigops.dev,resources=paperaccounts/status,verbs=get;patch
// +kubebuilder:rbac:groups=trading.sigops.dev,resources=paperaccounts/finalizers,verbs=update

// Reconcile initialises, refills and mirrors one paper account.
func (r *PaperAccountReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return reconcileObject[tradingv1.PaperAccount](ctx, r.Client, req, r)
}

// finalizerOnObject: the object itself carries the runtime-cleanup finalizer.
func (r *PaperAccountReconciler) finalizerOnObject() bool { return true }

func (r *PaperAccountReconciler) statusFields(acct *tradingv1.PaperAccount) (*[]metav1.Condition, *int64) {
	return &acct.Status.Conditions, &acct.Status.ObservedGeneration
}

// finalize removes the simulated balance from Redis.
func (r *PaperAccountReconciler) finalize(ctx context.Context, acct *tradingv1.PaperAccount) error {
	return r.Accounts.Delete(ctx, string(acct.UID))
}

// reconcileKind initialises the balance, applies a pending refill request and mirrors the
// balance and the refill cooldown into status.
func (r *PaperAccountReconciler) reconcileKind(ctx context.Context, acct *tradingv1.PaperAccount) (outcome, ctrl.Result, error) {
	cfg, err := paperConfig(acct)
	if err != nil {
		return stalledOutcome(reasonInvalidSpec, err.Error()), ctrl.Result{}, nil
	}
	state, err := r.Accounts.Ensure(ctx, cfg)
	if err != nil {
		return retryingOutcome(reasonRuntimeStoreUnavailable, "cannot write the balance to Redis; retrying"),
			ctrl.Result{}, fmt.Errorf("initialise paper balance: %w", err)
	}

	now := r.now()
	if want := acct.Annotations[tradingv1.AnnotationRefill]; want != "" && want != acct.Status.LastHandledRefill {
		refilled, err := r.Accounts.Refill(ctx, cfg.ID, now)
		var cooldown *paper.CooldownError
		switch {
		case errors.As(err, &cooldown):
			refills.WithLabelValues("refused").Inc()
			// A refused request is handled too: it is not queued for later, so a new
			// annotation value is needed once the cooldown ends.
			r.Recorder.Eventf(acct, nil, corev1.EventTypeWarning, "RefillRefused", "Refill",
				"refill refused: the 24-hour cooldown runs until %s", cooldown.NextAllowed.UTC().Format(time.RFC3339))
		case err != nil:
			return retryingOutcome(reasonRuntimeStoreUnavailable, "cannot refill in Redis; retrying"),
				ctrl.Result{}, fmt.Errorf("refill: %w", err)
		default:
			state = refilled
			refills.WithLabelValues("applied").Inc()
			r.Recorder.Eventf(acct, nil, corev1.EventTypeNormal, "Refilled", "Refill",
				"balance reset to %s %s", cfg.InitialBalance.String(), cfg.Currency)
		}
		acct.Status.LastHandledRefill = want
	}

	acct.Status.Balance = state.Balance.String()
	acct.Status.Equity = state.Equity.String()
	if !state.LastRefillAt.IsZero() {
		t := metav1.NewTime(state.LastRefillAt)
		acct.Status.LastRefillAt = &t
	}

	requeue := r.SyncPeriod
	refill := metav1.Condition{Type: tradingv1.ConditionRefillAllowed, Status: metav1.ConditionTrue,
		Reason: "CooldownElapsed", Message: "a refill may be requested", ObservedGeneration: acct.Generation}
	if !state.LastRefillAt.IsZero() {
		if next := state.LastRefillAt.Add(paper.RefillCooldown); now.Before(next) {
			refill.Status, refill.Reason = metav1.ConditionFalse, "Cooldown"
			refill.Message = "next refill allowed at " + next.UTC().Format(time.RFC3339)
			if wait := next.Sub(now); requeue == 0 || wait < requeue {
				requeue = wait
			}
		}
	}
	meta.SetStatusCondition(&acct.Status.Conditions, refill)
	return readyOutcome("Initialised", "balance "+state.Balance.String()+" "+state.Currency),
		ctrl.Result{RequeueAfter: requeue}, nil
}

func (r *PaperAccountReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// paperConfig turns the spec into the runtime's config. The CRD validates the formats;
// the parse here is the last guard before money state is written.
func paperConfig(acct *tradingv1.PaperAccount) (paper.Config, error) {
	initial, err := decimal.NewFromString(orDefault(acct.Spec.InitialBalance, "10000"))
	if err != nil || !initial.IsPositive() {
		return paper.Config{}, fmt.Errorf("initialBalance %q is not a positive decimal", acct.Spec.InitialBalance)
	}
	fee, err := decimal.NewFromString(orDefault(acct.Spec.FeeRate, "0.001"))
	if err != nil || fee.IsNegative() || fee.GreaterThanOrEqual(decimal.NewFromInt(1)) {
		return paper.Config{}, fmt.Errorf("feeRate %q must be a decimal in [0, 1)", acct.Spec.FeeRate)
	}
	return paper.Config{
		ID:             string(acct.UID),
		Namespace:      acct.Namespace,
		Name:           acct.Name,
		Owner:          emails.Canonical(acct.Spec.Owner),
		Currency:       orDefault(acct.Spec.Currency, "USDT"),
		InitialBalance: initial,
		FeeRate:        fee,
	}, nil
}

// SetupWithManager watches paper accounts; status writes do not retrigger it.
func (r *PaperAccountReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ctrl.NewControllerManagedBy(mgr).
		Named("paperaccount").
		For(&tradingv1.PaperAccount{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{})))
	if r.Reproject != nil {
		b = b.WatchesRawSource(source.Channel(r.Reproject, &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(r)
}
