package controllers

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
)

// outcome is how one reconcile ended, shown as the kstatus trio of conditions: Ready
// always; Reconciling while the controller is still retrying; Stalled while it cannot
// progress without a change from the user. The zero outcome shows nothing: the conditions
// stay as they are (a failure before anything about the object is known).
type outcome struct {
	ready       bool
	reason      string
	message     string
	reconciling bool // transient failure, retrying
	stalled     bool // needs a spec or environment change
}

// readyOutcome: the object does what it is for.
func readyOutcome(reason, message string) outcome {
	return outcome{ready: true, reason: reason, message: message}
}

// waitingOutcome: not Ready until another object or a timer changes; the controller has
// done all it can and the user need not act on this object.
func waitingOutcome(reason, message string) outcome {
	return outcome{reason: reason, message: message}
}

// stalledOutcome: not Ready until the user changes the spec or its environment.
func stalledOutcome(reason, message string) outcome {
	return outcome{reason: reason, message: message, stalled: true}
}

// retryingOutcome: not Ready while a transient failure is retried (Reconciling).
func retryingOutcome(reason, message string) outcome {
	return outcome{reason: reason, message: message, reconciling: true}
}

// shown reports whether the outcome sets conditions (the zero outcome does not).
func (o outcome) shown() bool { return o.reason != "" }

// record sets the conditions and observedGeneration of a status. observedGeneration
// advances only when the controller did all it could for this generation, not while it is
// still retrying.
func (o outcome) record(conds *[]metav1.Condition, observedGeneration *int64, generation int64) {
	if !o.shown() {
		return
	}
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
	if !o.reconciling {
		*observedGeneration = generation
	}
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
