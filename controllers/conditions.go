package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
)

// outcome is the result of one reconcile, turned into the kstatus trio of conditions:
// Ready always; Reconciling while the controller is still retrying; Stalled while it cannot
// progress without a change from the user.
type outcome struct {
	ready       bool
	reason      string
	message     string
	reconciling bool // transient failure, retrying
	stalled     bool // needs a spec or environment change
}

func (o outcome) apply(conds *[]metav1.Condition, generation int64) {
	status := metav1.ConditionFalse
	if o.ready {
		status = metav1.ConditionTrue
	}
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: tradingv1.ConditionReady, Status: status, Reason: o.reason, Message: o.message,
		ObservedGeneration: generation,
	})
	setWhileTrue(conds, tradingv1.ConditionReconciling, o.reconciling, o.reason, o.message, generation)
	setWhileTrue(conds, tradingv1.ConditionStalled, o.stalled, o.reason, o.message, generation)
}

func setWhileTrue(conds *[]metav1.Condition, typ string, on bool, reason, msg string, gen int64) {
	if !on {
		meta.RemoveStatusCondition(conds, typ)
		return
	}
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: typ, Status: metav1.ConditionTrue, Reason: reason, Message: msg, ObservedGeneration: gen,
	})
}

// Reasons used across kinds.
const (
	reasonRuntimeStoreUnavailable = "RuntimeStoreUnavailable"
	reasonInvalidSpec             = "InvalidSpec"
)

// setFinalizer adds (on) or removes the runtime-cleanup finalizer with an optimistic-lock
// patch, so a concurrent change to the finalizer list is never overwritten. It is a no-op
// when the object already has the wanted state.
func setFinalizer(ctx context.Context, c client.Client, obj client.Object, on bool) error {
	if controllerutil.ContainsFinalizer(obj, tradingv1.FinalizerRuntimeCleanup) == on {
		return nil
	}
	orig := obj.DeepCopyObject().(client.Object)
	if on {
		controllerutil.AddFinalizer(obj, tradingv1.FinalizerRuntimeCleanup)
	} else {
		controllerutil.RemoveFinalizer(obj, tradingv1.FinalizerRuntimeCleanup)
	}
	return client.IgnoreNotFound(c.Patch(ctx, obj, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})))
}
