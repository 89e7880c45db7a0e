package controllers

import (
	"context"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/registry"
)

// Field indexes of bots by the account they reference.
const (
	indexPaperAccountRef       = "spec.paperAccountRef.name"
	indexExchangeConnectionRef = "spec.exchangeConnectionRef.name"
)

// accountCheck is what the bot's referenced account allows.
type accountCheck struct {
	kind, name, id  string
	ready           bool
	code            registry.DisabledCode // why not ready, for the runtime (the projection's disabledCode)
	reason, message string                // why not ready, for people: the bot's Ready=False reason
	err             error                 // transient: retry
}

// refuse records why the account does not let the bot trade.
func (c *accountCheck) refuse(code registry.DisabledCode, reason, message string) {
	c.code, c.reason, c.message = code, reason, message
}

// checkAccount resolves the bot's paper account or exchange connection. The account must
// exist, be Ready and belong to the bot's owner: a bot must never trade on an account that
// is not its owner's, whatever the YAML says. An exchange connection's key must also hold
// the trade permission of the bot's market (status.permissions).
//
// Each refusal has a code, which the projection carries for the runtime (disabledCode),
// and a reason for status and messages (disabledReason). A missing or not Ready exchange
// connection is DisabledExchangeDisconnected, which webhookd answers with 403
// EXCHANGE_DISCONNECTED; every other code (a missing trade permission and an owner mismatch
// included: the connection works, the bot's settings do not fit it) answers 403
// BOT_DISABLED.
func (r *SignalBotReconciler) checkAccount(ctx context.Context, bot *tradingv1.SignalBot) accountCheck {
	var (
		obj  client.Object
		kind string
		ref  *tradingv1.LocalObjectReference
	)
	if bot.Spec.PaperAccountRef != nil {
		obj, kind, ref = &tradingv1.PaperAccount{}, "PaperAccount", bot.Spec.PaperAccountRef
	} else {
		obj, kind, ref = &tradingv1.ExchangeConnection{}, "ExchangeConnection", bot.Spec.ExchangeConnectionRef
	}
	c := accountCheck{kind: registry.AccountPaper, name: ref.Name}
	missing, notReady := registry.DisabledAccountMissing, registry.DisabledAccountNotReady
	if kind == "ExchangeConnection" {
		c.kind = registry.AccountExchange
		missing, notReady = registry.DisabledExchangeDisconnected, registry.DisabledExchangeDisconnected
	}
	err := r.Get(ctx, types.NamespacedName{Namespace: bot.Namespace, Name: ref.Name}, obj)
	if apierrors.IsNotFound(err) {
		c.refuse(missing, kind+"NotFound", kind+" "+ref.Name+" not found")
		return c
	}
	if err != nil {
		c.err = err
		return c
	}
	c.id = string(obj.GetUID())
	ready, owner := accountReadiness(obj)
	if !emails.Same(owner, bot.Spec.Owner) {
		c.refuse(registry.DisabledOwnerMismatch, "AccountOwnerMismatch", kind+" "+ref.Name+" belongs to another owner")
		return c
	}
	if (ready == nil || ready.Status != metav1.ConditionTrue) && !storeOutageOnly(bot, ready) {
		msg := kind + " " + ref.Name + " is not Ready"
		if ready != nil && ready.Message != "" {
			msg += ": " + ready.Message
		}
		c.refuse(notReady, kind+"NotReady", msg)
		return c
	}
	if xc, ok := obj.(*tradingv1.ExchangeConnection); ok {
		need := credentials.TradePermission(botMarket(bot))
		if !slices.Contains(xc.Status.Permissions, need) {
			c.refuse(registry.DisabledPermissionMissing, reasonMissingTradePermission,
				kind+" "+ref.Name+"'s API key lacks the "+need+" trading permission the bot's market needs")
			return c
		}
		// Live trading is a tier capability (decisions 11 and 12 in docs/decisions.md).
		if c = r.checkLiveTier(ctx, bot, c); c.reason != "" || c.err != nil {
			return c
		}
	}
	c.ready = true
	return c
}

// storeOutageOnly reports whether the account's only fault is that the manager could not
// reach Redis (Ready=False, RuntimeStoreUnavailable: a failover, a restart, a periodic
// balance read that failed) while the bot was already trading on it (active or paused).
// Such an account stays the bot's: disabling the bot would make the intake refuse its
// signals with 403 BOT_DISABLED, which senders do not retry, for the outage and the two
// reconciles after it, and would protect nothing, since without Redis nothing trades. The
// chaos test met exactly this during a Redis failover. A bot not yet trading waits for the
// account as before: its balance may never have been written.
func storeOutageOnly(bot *tradingv1.SignalBot, ready *metav1.Condition) bool {
	trading := bot.Status.Availability == tradingv1.AvailabilityActive || bot.Status.Availability == tradingv1.AvailabilityPaused
	return trading && ready != nil && ready.Reason == reasonRuntimeStoreUnavailable
}

// botMarket is the exchange kind the bot trades (spot unless futures).
func botMarket(bot *tradingv1.SignalBot) exchange.Kind {
	if bot.Spec.Market == tradingv1.MarketFutures {
		return exchange.Futures
	}
	return exchange.Spot
}

// accountReadiness returns the Ready condition and owner of a PaperAccount or ExchangeConnection.
func accountReadiness(obj client.Object) (*metav1.Condition, string) {
	switch a := obj.(type) {
	case *tradingv1.PaperAccount:
		return meta.FindStatusCondition(a.Status.Conditions, tradingv1.ConditionReady), a.Spec.Owner
	case *tradingv1.ExchangeConnection:
		return meta.FindStatusCondition(a.Status.Conditions, tradingv1.ConditionReady), a.Spec.Owner
	}
	return nil, ""
}

// accountReadinessChanged passes account events that can change a bot: creation,
// deletion, a Ready flip, an owner change or (connections) a permissions change. Balance
// updates and periodic re-validations pass nothing.
func accountReadinessChanged() predicate.Predicate {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			oldReady, oldOwner := accountReadiness(e.ObjectOld)
			newReady, newOwner := accountReadiness(e.ObjectNew)
			return conditionStatus(oldReady) != conditionStatus(newReady) || oldOwner != newOwner ||
				!slices.Equal(accountPermissions(e.ObjectOld), accountPermissions(e.ObjectNew))
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// accountPermissions are an exchange connection's key permissions (nil for paper accounts).
func accountPermissions(obj client.Object) []string {
	if xc, ok := obj.(*tradingv1.ExchangeConnection); ok {
		return xc.Status.Permissions
	}
	return nil
}

func conditionStatus(c *metav1.Condition) metav1.ConditionStatus {
	if c == nil {
		return metav1.ConditionUnknown
	}
	return c.Status
}

// botsReferencing maps an account to the bots in its namespace that reference it.
func (r *SignalBotReconciler) botsReferencing(index string) func(context.Context, client.Object) []reconcile.Request {
	return func(ctx context.Context, obj client.Object) []reconcile.Request {
		var bots tradingv1.SignalBotList
		if err := r.List(ctx, &bots, client.InNamespace(obj.GetNamespace()), client.MatchingFields{index: obj.GetName()}); err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(bots.Items))
		for _, b := range bots.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: b.Name}})
		}
		return reqs
	}
}
