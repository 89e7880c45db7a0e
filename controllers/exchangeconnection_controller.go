package controllers

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/registry"
)

const indexCredentialsSecret = "spec.credentialsSecretRef.name"

// Defaults of the ExchangeConnectionReconciler's periods.
const (
	DefaultExchangeRevalidatePeriod  = 10 * time.Minute
	DefaultExchangeValidationTimeout = 5 * time.Second
	DefaultExchangeRetryBackoff      = 5 * time.Second
)

// ExchangeConnectionReconciler validates a connection's API key against its exchange and
// projects the connection into Redis with the credentials sealed under the master key.
// It runs the reconcile skeleton (reconcile.go); its concerns are split across files: the credentials Secret (exchangeconnection_secret.go),
// the exchange call and its verdict (exchangeconnection_validate.go) and the projection
// (exchangeconnection_projection.go).
//
// Secret values are held in memory only for the exchange call and the seal; they never reach
// logs, events, status or errors, and Redis only ever sees them sealed.
type ExchangeConnectionReconciler struct {
	client.Client
	// APIReader reads the credentials Secret directly: the manager's cache holds only
	// Secrets labelled trading.sigops.dev/secret-kind, and a user's new Secret is not yet.
	APIReader client.Reader
	// Connections is the Redis projection.
	Connections *credentials.Connections
	// Registry records the symbols validated keys can trade (for webhookd); nil skips it.
	Registry *registry.Registry
	// Keys seals the credentials; nil leaves every connection not Ready (MasterKeyMissing).
	Keys *credentials.Ring
	// Connectors by exchange name (spec.exchange); a missing one is ExchangeNotSupported.
	Connectors map[string]exchange.Connector
	// Recorder, when set, records an event when the Ready verdict changes.
	Recorder events.EventRecorder
	// RetryPeriod is how often a connection whose Secret is missing looks again (a Secret
	// without our label is not watched until the controller labels it).
	RetryPeriod time.Duration
	// RevalidatePeriod is how often the key is checked with the exchange again
	// (default DefaultExchangeRevalidatePeriod). Secret changes re-validate at once.
	RevalidatePeriod time.Duration
	// ValidationTimeout bounds the authenticated exchange call (default 5 s).
	ValidationTimeout time.Duration
	// RetryBackoff is the first retry delay while the exchange is unreachable; it doubles
	// on each failure up to RevalidatePeriod (default 5 s).
	RetryBackoff time.Duration
	// MaxConcurrentReconciles bounds parallel validations (default 1). Each may wait up to
	// ValidationTimeout on an exchange, so a manager with many connections needs several.
	MaxConcurrentReconciles int
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Reproject, when set, wakes the reconciler for every connection after Redis lost its
	// data (reproject.go).
	Reproject <-chan event.GenericEvent
	// Tell, when set, tells the connection's owner that it stopped working (notifyd): a
	// validated key now refused, able to withdraw, or lacking a permission.
	Tell func(ctx context.Context, owner, connection, reason string)

	retries backoff
}

// +kubebuilder:rbac:groups=trading.sigops.dev,resources=exchangeconnections,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=trading.sigops.dev,resources=exchangeconnections/status,verbs=get;patch
// +kubebuilder:rbac:groups=trading.sigops.dev,resources=exchangeconnections/finalizers,verbs=update

// Reconcile validates one connection and projects it.
func (r *ExchangeConnectionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	return reconcileObject[tradingv1.ExchangeConnection](ctx, r.Client, req, r)
}

// finalizerOnObject: the object itself carries the runtime-cleanup finalizer.
func (r *ExchangeConnectionReconciler) finalizerOnObject() bool { return true }

func (r *ExchangeConnectionReconciler) statusFields(conn *tradingv1.ExchangeConnection) (*[]metav1.Condition, *int64) {
	return &conn.Status.Conditions, &conn.Status.ObservedGeneration
}

// reconcileKind validates and projects the connection, and records an event when the
// verdict changes.
func (r *ExchangeConnectionReconciler) reconcileKind(ctx context.Context, conn *tradingv1.ExchangeConnection) (outcome, ctrl.Result, error) {
	var was string
	if ready := meta.FindStatusCondition(conn.Status.Conditions, tradingv1.ConditionReady); ready != nil {
		was = ready.Reason
	}
	o, res, err := r.validateAndProject(ctx, conn)
	r.recordVerdict(conn, was, o)
	if why, ok := invalidReasons[o.reason]; ok && was == reasonValidated && r.Tell != nil {
		r.Tell(ctx, conn.Spec.Owner, conn.Name, why)
	}
	return o, res, err
}

// invalidReasons are the Ready reasons that turn a working connection invalid, as the
// owner's notification names them (runtime/notify): an unreachable exchange is not one of
// them (it is the exchange's outage, not the key's).
var invalidReasons = map[string]string{
	reasonInvalidCredentials:          "KeyRevoked",
	reasonWithdrawalPermissionEnabled: "WithdrawEnabled",
	reasonMissingReadPermission:       "MissingPermission",
	reasonMissingTradePermission:      "MissingPermission",
}

// validateAndProject checks the Secret, the connector and the key. Every refusal is
// projected (ready=0, no credentials) before status says so.
func (r *ExchangeConnectionReconciler) validateAndProject(ctx context.Context, conn *tradingv1.ExchangeConnection) (outcome, ctrl.Result, error) {
	secret, err := r.credentialsSecret(ctx, conn)
	if err != nil {
		return outcome{}, ctrl.Result{}, err
	}
	name := conn.Spec.CredentialsSecretRef.Name
	if secret == nil {
		return r.refuse(ctx, conn, verdict{outcome: stalledOutcome(reasonSecretNotFound,
			"credentials Secret "+name+" not found")}, r.RetryPeriod)
	}
	if missing := missingCredentialKeys(secret, conn.Spec.Exchange); len(missing) > 0 {
		return r.refuse(ctx, conn, verdict{outcome: stalledOutcome(reasonSecretMissingKeys,
			"credentials Secret "+name+" lacks "+joinNames(missing))}, 0)
	}
	connector := r.Connectors[string(conn.Spec.Exchange)]
	if connector == nil {
		return r.refuse(ctx, conn, verdict{outcome: stalledOutcome(reasonExchangeNotSupported,
			"this manager has no connector for exchange "+string(conn.Spec.Exchange))}, 0)
	}
	if r.Keys == nil {
		return r.refuse(ctx, conn, verdict{outcome: stalledOutcome(reasonMasterKeyMissing,
			"the manager has no master key (--master-key-file), so credentials cannot be stored encrypted")}, 0)
	}

	creds := credentialsOf(secret)
	v := r.validate(ctx, connector, creds, endpointsOf(conn), conn.Status.PositionMode)
	if !v.ready {
		requeue := r.nextValidation()
		switch {
		case v.reconciling:
			requeue = r.retries.next(conn.UID, r.retryBackoff(), r.revalidatePeriod())
		case v.reason == reasonPositionModeChanged:
			// The user resolves it on the exchange, where no event reaches us: look again soon.
			requeue = min(time.Minute, r.revalidatePeriod())
		}
		return r.refuse(ctx, conn, v, requeue)
	}
	return r.accept(ctx, conn, creds, v)
}

// finalize removes the projection (and with it the sealed credentials) from Redis.
func (r *ExchangeConnectionReconciler) finalize(ctx context.Context, conn *tradingv1.ExchangeConnection) error {
	if err := r.Connections.Delete(ctx, string(conn.UID)); err != nil {
		return fmt.Errorf("remove exchange connection from the runtime store: %w", err)
	}
	r.retries.reset(conn.UID)
	log.FromContext(ctx).Info("exchange connection runtime state removed", "connection", conn.Name)
	return nil
}

// recordVerdict records an event when the Ready reason changes from was ("" before the first
// verdict) to o's: Normal when the key is validated, Warning when it is refused. Messages are
// the outcome's (no secret values).
func (r *ExchangeConnectionReconciler) recordVerdict(conn *tradingv1.ExchangeConnection, was string, o outcome) {
	if r.Recorder == nil || !o.shown() || was == o.reason {
		return
	}
	typ := corev1.EventTypeWarning
	if o.ready {
		typ = corev1.EventTypeNormal
	}
	r.Recorder.Eventf(conn, nil, typ, o.reason, "Validate", "%s", o.message)
}

func (r *ExchangeConnectionReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

func (r *ExchangeConnectionReconciler) revalidatePeriod() time.Duration {
	return orDefault(r.RevalidatePeriod, DefaultExchangeRevalidatePeriod)
}

// nextValidation is the revalidate period plus up to a fifth of it at random, so that the
// connections validated together at start-up do not all call their exchange again in the
// same second (exchanges rate-limit per IP).
func (r *ExchangeConnectionReconciler) nextValidation() time.Duration {
	p := r.revalidatePeriod()
	if p < 5 {
		return p
	}
	return p + rand.N(p/5)
}

func (r *ExchangeConnectionReconciler) retryBackoff() time.Duration {
	return orDefault(r.RetryBackoff, DefaultExchangeRetryBackoff)
}

// SetupWithManager watches connections and their (labelled) credentials Secrets: any change
// of a Secret re-validates the connections that use it.
func (r *ExchangeConnectionReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &tradingv1.ExchangeConnection{}, indexCredentialsSecret,
		func(o client.Object) []string {
			return []string{o.(*tradingv1.ExchangeConnection).Spec.CredentialsSecretRef.Name}
		}); err != nil {
		return err
	}
	workers := r.MaxConcurrentReconciles
	if workers < 1 {
		workers = 1
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named("exchangeconnection").
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&tradingv1.ExchangeConnection{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.connectionsUsing),
			builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
				return o.GetLabels()[LabelSecretKind] == secretKindCredentials
			})))
	if r.Reproject != nil {
		b = b.WatchesRawSource(source.Channel(r.Reproject, &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(r)
}

func (r *ExchangeConnectionReconciler) connectionsUsing(ctx context.Context, secret client.Object) []reconcile.Request {
	var conns tradingv1.ExchangeConnectionList
	if err := r.List(ctx, &conns, client.InNamespace(secret.GetNamespace()), client.MatchingFields{indexCredentialsSecret: secret.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(conns.Items))
	for _, c := range conns.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: c.Namespace, Name: c.Name}})
	}
	return reqs
}
