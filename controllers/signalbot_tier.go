package controllers

import (
	"context"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/registry"
)

const (
	// tierRecheckPeriod is how often a live bot refused for its owner's tier looks again.
	tierRecheckPeriod = time.Minute
	// tierRetryPeriod is how soon a live bot disabled because its owner's tier could not be
	// read looks again: it should trade again as soon as the store answers.
	tierRetryPeriod = 5 * time.Second
)

// Reasons of a live bot whose owner may not trade live.
const (
	reasonOwnerAccountNotFound  = "OwnerAccountNotFound"
	reasonOwnerLacksLiveTrading = "OwnerLacksLiveTrading"
	// reasonOwnerTierUnavailable: the tier could not be read, so live trading is refused
	// (fail closed) rather than left as it was.
	reasonOwnerTierUnavailable = "OwnerTierUnavailable"
)

// checkLiveTier disables a live bot whose owner has no account, or whose tier lacks live
// trading, unless a Downgrade pause already holds it (authd set it when the tier was
// lowered; the bot then shows as paused with reason Downgrade and resumes on an upgrade).
// A tier that cannot be read disables the bot too: the projection already in Redis may
// say active, and leaving it there would let a bot trade live that perhaps may not.
func (r *SignalBotReconciler) checkLiveTier(ctx context.Context, bot *tradingv1.SignalBot, c accountCheck) accountCheck {
	if r.Redis == nil {
		return c
	}
	tier, found, err := auth.OwnerTier(ctx, r.Redis, bot.Spec.Owner)
	switch {
	case err != nil:
		log.FromContext(ctx).Error(err, "cannot read the owner's tier; live bot disabled until it can be read")
		c.refuse(registry.DisabledTierUnavailable, reasonOwnerTierUnavailable,
			"cannot read the owner's tier; live trading is off until it can be read (retrying)")
	case !found:
		c.refuse(registry.DisabledTierNotAllowed, reasonOwnerAccountNotFound,
			"live trading needs an account for owner "+emails.Canonical(bot.Spec.Owner))
	case !tier.Capabilities.AllowLiveTrading:
		c.refuse(registry.DisabledTierNotAllowed, reasonOwnerLacksLiveTrading,
			"the owner's tier ("+tier.Slug+") does not include live trading")
		pause, err := r.Registry.ReadPause(ctx, string(bot.UID), r.now())
		if err != nil {
			// Cannot tell whether a Downgrade pause holds it: disabled is the safe answer.
			log.FromContext(ctx).Error(err, "cannot read the bot's runtime pause; live bot disabled")
		} else if pause != nil && pause.Reason == registry.PauseDowngrade {
			// Paused, not disabled: the pause says why and ends with an upgrade.
			c.code, c.reason, c.message = "", "", ""
		}
	}
	return c
}

// tierRecheck is when a bot refused for its owner's tier looks again (false: the tier is
// not why it was refused). Tiers live in authd's store, which sends no event for these bots.
func tierRecheck(reason string) (time.Duration, bool) {
	switch reason {
	case reasonOwnerAccountNotFound, reasonOwnerLacksLiveTrading:
		return tierRecheckPeriod, true
	case reasonOwnerTierUnavailable:
		return tierRetryPeriod, true
	}
	return 0, false
}

// liveTradingAllowed reports whether the owner's tier allows live trading now. An error
// always comes with false: callers must not read a failed check as permission.
func (r *SignalBotReconciler) liveTradingAllowed(ctx context.Context, bot *tradingv1.SignalBot) (bool, error) {
	if r.Redis == nil {
		return true, nil
	}
	tier, found, err := auth.OwnerTier(ctx, r.Redis, bot.Spec.Owner)
	if err != nil {
		return false, err
	}
	return found && tier.Capabilities.AllowLiveTrading, nil
}
