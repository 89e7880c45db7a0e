package controllers

import (
	"context"
	"time"

	"github.com/shopspring/decimal"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/risk"
)

// DefaultRiskRecordPeriod is how often a bot with a loss rule has its risk counters mirrored
// into status when Options.RiskRecordPeriod is zero.
const DefaultRiskRecordPeriod = time.Minute

// mirrorRiskCounters records the bot's risk counters in status (status.riskCounters), so
// that a Redis that loses them, or is restored from an older backup, gets them back with
// the projection (recorded) instead of starting the bot's loss rules from zero. The record
// moves only forward: counters with fewer trades taken in than the record are a Redis that
// lost the latest ones, which the projection has just written back or will at the next
// reconcile. It runs at every reconcile, so at every runtime pause (the moment a rule
// stops the bot its counters are recorded exactly), and every riskRecordPeriod while the
// bot has a loss rule (riskRequeue).
func (r *SignalBotReconciler) mirrorRiskCounters(ctx context.Context, bot *tradingv1.SignalBot) error {
	c, err := risk.ReadCounters(ctx, r.Registry.Client(), string(bot.UID))
	if err != nil {
		return err
	}
	rec := bot.Status.RiskCounters
	if c.Trades <= 0 || rec != nil && c.Trades < rec.Trades {
		return nil
	}
	bot.Status.RiskCounters = &tradingv1.RiskCountersStatus{
		Day: c.Day, DayPnl: c.DayPnl.String(),
		ConsecutiveLosses: int32(c.ConsecutiveLosses), ConsecutiveErrors: int32(c.ConsecutiveErrors),
		Trades: c.Trades,
	}
	return nil
}

// riskRequeue is when to mirror the counters again: a bot with a daily-loss or
// consecutive-loss rule every riskRecordPeriod (at most that much trading is missing from
// the record after a loss without PostgreSQL), others not at all.
func (r *SignalBotReconciler) riskRequeue(bot *tradingv1.SignalBot, requeue time.Duration) time.Duration {
	if bot.Spec.Risk.DailyLossLimit == "" && bot.Spec.Risk.MaxConsecutiveLosses == 0 {
		return requeue
	}
	period := orDefault(r.RiskRecordPeriod, DefaultRiskRecordPeriod)
	if requeue == 0 || period < requeue {
		return period
	}
	return requeue
}

// recorded is the runtime state the status records, as the projection writes it back.
func recorded(st tradingv1.SignalBotStatus) *registry.Recorded {
	out := recordedPause(st.RuntimePause)
	if rc := st.RiskCounters; rc != nil {
		pnl, err := decimal.NewFromString(rc.DayPnl)
		if rc.DayPnl != "" && err != nil {
			return out // not written by this controller: nothing to write back
		}
		if out == nil {
			out = &registry.Recorded{}
		}
		risk.Counters{Day: rc.Day, DayPnl: pnl, ConsecutiveLosses: int(rc.ConsecutiveLosses),
			ConsecutiveErrors: int(rc.ConsecutiveErrors), Trades: rc.Trades}.RecordInto(out)
	}
	return out
}
