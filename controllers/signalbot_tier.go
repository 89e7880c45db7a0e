package controllers

import (
	"context"
	"time"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/auth"
)

// tierRecheckPeriod is how often a live bot refused for its owner's tier looks again.
const tierRecheckPeriod = time.Minute

// Reasons of a live bot whose owner may not trade live.
const (
	reasonOwnerAccountNotFound  = "OwnerAccountNotFound"
	reasonOwnerLacksLiveTrading = "OwnerLacksLiveTrading"
)

// checkLiveTier disables a live bot whose owner has no account, or whose tier lacks live
// trading, unless a Downgrade pause already holds it (authd set it when the tier was
// lowered; the bot then shows as paused with reason Downgrade and resumes on an upgrade).
func (r *SignalBotReconciler) checkLiveTier(ctx context.Context, bot *tradingv1.SignalBot, c accountCheck) accountCheck {
	if r.Redis == nil {
		return c
	}
	tier, found, err := auth.OwnerTier(ctx, r.Redis, bot.Spec.Owner)
	switch {
	case err != nil:
		c.err = err
	case !found:
		c.reason, c.message = reasonOwnerAccountNotFound, "live trading needs an account for owner "+normalizeOwner(bot.Spec.Owner)
	case !tier.Capabilities.AllowLiveTrading:
		pause, err := r.Registry.GetRuntimePause(ctx, string(bot.UID), r.now().UnixMilli())
		if err != nil {
			c.err = err
		} else if pause.Reason != auth.ReasonDowngrade {
			c.reason, c.message = reasonOwnerLacksLiveTrading, "the owner's tier ("+tier.Slug+") does not include live trading"
		}
	}
	return c
}

// liveTradingAllowed reports whether the owner's tier allows live trading now.
func (r *SignalBotReconciler) liveTradingAllowed(ctx context.Context, bot *tradingv1.SignalBot) (bool, error) {
	if r.Redis == nil {
		return true, nil
	}
	tier, found, err := auth.OwnerTier(ctx, r.Redis, bot.Spec.Owner)
	return found && tier.Capabilities.AllowLiveTrading, err
}
