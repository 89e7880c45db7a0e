package controllers

import (
	"context"
	"errors"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
)

// kindReconciler is what one kind adds to the reconcile skeleton (reconcileObject).
type kindReconciler[O client.Object] interface {
	// finalize removes the object's runtime state; the skeleton then removes the finalizer.
	// It runs only while the finalizer is on and must be safe to repeat after a partial run.
	finalize(ctx context.Context, obj O) error
	// reconcileKind does the kind's work, recording what it finds in obj's status, and says
	// how it ended: the outcome to show, when to look again, and an error that makes
	// controller-runtime retry.
	reconcileKind(ctx context.Context, obj O) (outcome, ctrl.Result, error)
	// statusFields are the parts of obj's status the skeleton sets from the outcome.
	statusFields(obj O) (conditions *[]metav1.Condition, observedGeneration *int64)
	// finalizerOnObject says whether the skeleton keeps the runtime-cleanup finalizer on a
	// live object. A kind that records its runtime state elsewhere (a SignalBot: on its
	// webhook Secret) answers false and saves the API write; the skeleton still finalizes an
	// object that carries the finalizer.
	finalizerOnObject() bool
}

// reconcileObject is the one reconcile every kind runs: get the object; when it is being
// deleted, finalize it and drop the finalizer; otherwise make sure of the finalizer (for a
// kind that keeps it on the object), do the
// kind's work, show its outcome in the conditions and patch the status once, at the end,
// whatever the work returned.
func reconcileObject[T any, O interface {
	*T
	client.Object
}](ctx context.Context, c client.Client, req ctrl.Request, kind kindReconciler[O]) (res ctrl.Result, err error) {
	obj := O(new(T))
	if err := c.Get(ctx, req.NamespacedName, obj); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !obj.GetDeletionTimestamp().IsZero() {
		if !controllerutil.ContainsFinalizer(obj, tradingv1.FinalizerRuntimeCleanup) {
			return ctrl.Result{}, nil
		}
		if err := kind.finalize(ctx, obj); err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, setFinalizer(ctx, c, obj, false)
	}
	if kind.finalizerOnObject() {
		if err := setFinalizer(ctx, c, obj, true); err != nil {
			return ctrl.Result{}, err
		}
	}

	base := obj.DeepCopyObject().(client.Object)
	defer func() {
		if perr := patchStatus(ctx, c, base, obj); perr != nil {
			res, err = ctrl.Result{}, errors.Join(err, perr)
		}
	}()
	o, res, err := kind.reconcileKind(ctx, obj)
	conds, observed := kind.statusFields(obj)
	o.record(conds, observed, obj.GetGeneration())
	return res, err
}

// patchStatus writes obj's status through the status subresource when it differs from
// base's. The patch carries base's resourceVersion: the object may come from a cache that
// is behind, and a merge patch computed from a stale base would leave alone a field the
// reconcile set back to its cached value while the server holds another. The conflict
// makes controller-runtime retry on a fresh read instead.
func patchStatus(ctx context.Context, c client.Client, base, obj client.Object) error {
	diff, err := client.MergeFrom(base).Data(obj)
	if err != nil {
		return err
	}
	if string(diff) == "{}" {
		return nil
	}
	return c.Status().Patch(ctx, obj, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{}))
}
