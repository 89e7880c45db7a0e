package controllers

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
)

const indexCredentialsSecret = "spec.credentialsSecretRef.name"

// ExchangeConnectionReconciler checks that a connection's credentials Secret exists and
// holds the required keys. (Validation against the exchange itself is a later issue.)
// Secret values are read only to test for presence; they never reach logs, events or status.
type ExchangeConnectionReconciler struct {
	client.Client
	// APIReader reads the credentials Secret directly: the manager's cache holds only
	// Secrets labelled trading.sigops.dev/secret-kind, and a user's new Secret is not yet.
	APIReader client.Reader
	// RetryPeriod is how often a connection whose Secret is missing looks again (a Secret
	// without our label is not watched until the controller labels it).
	RetryPeriod time.Duration
}

// +kubebuilder:rbac:groups=trading.sigops.dev,resources=exchangeconnections,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=trading.sigops.dev,resources=exchangeconnections/status,verbs=get;update;patch

// Reconcile checks one connection's credentials Secret.
func (r *ExchangeConnectionReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	conn := &tradingv1.ExchangeConnection{}
	if err := r.Get(ctx, req.NamespacedName, conn); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	before := conn.Status.DeepCopy()
	res, err := r.reconcileConnection(ctx, conn)
	if !equality.Semantic.DeepEqual(before, &conn.Status) {
		if uerr := r.Status().Update(ctx, conn); uerr != nil {
			return ctrl.Result{}, errors.Join(err, uerr)
		}
	}
	return res, err
}

func (r *ExchangeConnectionReconciler) reconcileConnection(ctx context.Context, conn *tradingv1.ExchangeConnection) (ctrl.Result, error) {
	name := conn.Spec.CredentialsSecretRef.Name
	secret := &corev1.Secret{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: conn.Namespace, Name: name}, secret)
	if apierrors.IsNotFound(err) {
		r.setOutcome(conn, outcome{reason: "SecretNotFound", message: "credentials Secret " + name + " not found"})
		return ctrl.Result{RequeueAfter: r.RetryPeriod}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	if secret.Labels[LabelSecretKind] == "" {
		// Label the Secret so the cache (and so this controller) sees its later changes.
		orig := secret.DeepCopy()
		if secret.Labels == nil {
			secret.Labels = map[string]string{}
		}
		secret.Labels[LabelSecretKind] = secretKindCredentials
		if err := r.Patch(ctx, secret, client.MergeFrom(orig)); err != nil {
			return ctrl.Result{}, err
		}
	}
	if missing := missingCredentialKeys(secret); len(missing) > 0 {
		r.setOutcome(conn, outcome{reason: "SecretMissingKeys",
			message: "credentials Secret " + name + " lacks " + strings.Join(missing, ", ")})
		return ctrl.Result{}, nil
	}
	r.setOutcome(conn, outcome{ready: true, reason: "CredentialsPresent",
		message: "credentials Secret has apiKey and apiSecret"})
	return ctrl.Result{}, nil
}

// missingCredentialKeys names the required keys that are absent or empty (names only).
func missingCredentialKeys(s *corev1.Secret) []string {
	var missing []string
	for _, k := range []string{tradingv1.CredentialsKeyAPIKey, tradingv1.CredentialsKeyAPISecret} {
		if len(strings.TrimSpace(string(s.Data[k]))) == 0 {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	return missing
}

func (r *ExchangeConnectionReconciler) setOutcome(conn *tradingv1.ExchangeConnection, o outcome) {
	o.apply(&conn.Status.Conditions, conn.Generation)
	if !o.reconciling {
		conn.Status.ObservedGeneration = conn.Generation
	}
}

// SetupWithManager watches connections and their (labelled) credentials Secrets.
func (r *ExchangeConnectionReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &tradingv1.ExchangeConnection{}, indexCredentialsSecret,
		func(o client.Object) []string {
			return []string{o.(*tradingv1.ExchangeConnection).Spec.CredentialsSecretRef.Name}
		}); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named("exchangeconnection").
		For(&tradingv1.ExchangeConnection{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.connectionsUsing),
			builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
				return o.GetLabels()[LabelSecretKind] == secretKindCredentials
			}))).
		Complete(r)
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
