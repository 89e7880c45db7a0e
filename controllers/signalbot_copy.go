package controllers

import (
	"context"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/registry"
)

// indexCopyFrom indexes bots by the master they copy ("namespace/name").
const indexCopyFrom = "spec.copyFrom.botRef"

// Ready=False reasons of a follower whose spec.copyFrom is refused (docs/decisions.md,
// "Copy signals"). The bot still takes its other signals; it receives no copies.
const (
	reasonCopyMasterNotFound = "CopyMasterNotFound"
	reasonCopyCycle          = "CopyCycle"
	reasonCopyChain          = "CopyChain"
	reasonCopyNotAllowed     = "CopyNotAllowed"
)

// copyCheck is what a bot's spec.copyFrom allows.
type copyCheck struct {
	// from is the projection's CopyFrom (nil: the bot copies nothing, or is refused).
	from *registry.CopyFrom
	// master is the master as namespace/name, when accepted.
	master string
	// reason and message say why the copy is refused ("": not refused).
	reason, message string
	stalled         bool
	err             error // transient: retry
}

// masterKey is the master a bot's spec.copyFrom names, as namespace/name.
func masterKey(bot *tradingv1.SignalBot) types.NamespacedName {
	ref := bot.Spec.CopyFrom.BotRef
	ns := ref.Namespace
	if ns == "" {
		ns = bot.Namespace
	}
	return types.NamespacedName{Namespace: ns, Name: ref.Name}
}

// checkCopy resolves spec.copyFrom. The master must exist, must not be the bot itself, must
// copy no bot itself (this one rule refuses chains and every cycle: in a cycle each bot's
// master copies another), and must be the same owner's or copyable. The CRD refuses the
// plain self-reference (no namespace) by CEL; the one with the bot's own namespace spelt
// out is refused here.
func (r *SignalBotReconciler) checkCopy(ctx context.Context, bot *tradingv1.SignalBot) copyCheck {
	if bot.Spec.CopyFrom == nil {
		return copyCheck{}
	}
	key := masterKey(bot)
	name := key.Namespace + "/" + key.Name
	self := bot.Namespace + "/" + bot.Name
	if key.Namespace == bot.Namespace && key.Name == bot.Name {
		return copyCheck{reason: reasonCopyCycle, message: "bot " + self + " cannot copy itself", stalled: true}
	}
	var master tradingv1.SignalBot
	if err := r.Get(ctx, key, &master); apierrors.IsNotFound(err) {
		return copyCheck{reason: reasonCopyMasterNotFound, message: "master bot " + name + " not found"}
	} else if err != nil {
		return copyCheck{err: err}
	}
	if !master.DeletionTimestamp.IsZero() {
		return copyCheck{reason: reasonCopyMasterNotFound, message: "master bot " + name + " is being deleted"}
	}
	if mf := master.Spec.CopyFrom; mf != nil {
		next := masterKey(&master)
		if next.Namespace == bot.Namespace && next.Name == bot.Name {
			return copyCheck{reason: reasonCopyCycle,
				message: "bots " + self + " and " + name + " copy each other; a master must not copy another bot"}
		}
		return copyCheck{reason: reasonCopyChain,
			message: "master bot " + name + " copies bot " + next.Namespace + "/" + next.Name + " itself; a master must not copy another bot"}
	}
	if !master.Spec.Copyable && !emails.Same(master.Spec.Owner, bot.Spec.Owner) {
		return copyCheck{reason: reasonCopyNotAllowed,
			message: "master bot " + name + " belongs to another owner and is not copyable"}
	}
	return copyCheck{master: name,
		from: &registry.CopyFrom{MasterID: string(master.UID), Ratio: orDefault(bot.Spec.CopyFrom.Ratio, "1")}}
}

// mirrorCopy shows the follower's copy state in status.copy: the master it copies and its
// last copy outcome and failure, as the executor recorded them (registry.RecordCopy, which
// also wakes this reconciler through the bot events).
func (r *SignalBotReconciler) mirrorCopy(ctx context.Context, bot *tradingv1.SignalBot, cp copyCheck) error {
	st, err := r.Registry.ReadCopy(ctx, string(bot.UID))
	if err != nil {
		return err
	}
	if cp.master == "" && st.Last == nil && st.Error == nil {
		bot.Status.Copy = nil
		return nil
	}
	c := &tradingv1.CopyStatus{Master: cp.master}
	if e := st.Last; e != nil {
		c.LastCopy = &tradingv1.CopyEvent{SignalID: e.SignalID, At: metav1.NewTime(time.UnixMilli(e.At)), Outcome: e.Outcome}
	}
	if e := st.Error; e != nil {
		c.LastError = &tradingv1.CopyError{Code: e.Code, Message: e.Message, At: metav1.NewTime(time.UnixMilli(e.At))}
	}
	bot.Status.Copy = c
	return nil
}

// followersOf maps a bot to the bots that copy it, so that a follower's check runs again
// when its master appears, goes, starts copying another bot or changes copyable or owner.
func (r *SignalBotReconciler) followersOf(ctx context.Context, obj client.Object) []reconcile.Request {
	var bots tradingv1.SignalBotList
	if err := r.List(ctx, &bots, client.MatchingFields{indexCopyFrom: obj.GetNamespace() + "/" + obj.GetName()}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(bots.Items))
	for _, b := range bots.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: b.Name}})
	}
	return reqs
}

// copyIndex is indexCopyFrom's value of a bot.
func copyIndex(o client.Object) []string {
	b := o.(*tradingv1.SignalBot)
	if b.Spec.CopyFrom == nil {
		return nil
	}
	k := masterKey(b)
	return []string{k.Namespace + "/" + k.Name}
}

// masterChanged passes the bot events that can change its followers' checks: creation,
// deletion (its start, too) and a change of copyFrom, copyable or owner.
func masterChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*tradingv1.SignalBot), e.ObjectNew.(*tradingv1.SignalBot)
			return o.Spec.Copyable != n.Spec.Copyable || o.Spec.Owner != n.Spec.Owner ||
				!reflect.DeepEqual(o.Spec.CopyFrom, n.Spec.CopyFrom) ||
				o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero()
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}
