package controllers

import (
	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/registry"
)

// projection is the bot as the runtime sees it. Defaults that the API server applies are
// applied again here so that an object written before a default existed still projects
// a complete config.
func projection(bot *tradingv1.SignalBot, acct accountCheck) registry.Bot {
	s := bot.Spec
	b := registry.Bot{
		ID:        string(bot.UID),
		Namespace: bot.Namespace,
		Name:      bot.Name,
		Owner:     emails.Canonical(s.Owner),
		Account:   registry.Account{Kind: acct.kind, Name: acct.name, ID: acct.id},

		Market:       string(orDefault(s.Market, tradingv1.MarketSpot)),
		Symbol:       s.Symbol,
		PositionSize: orDefault(s.PositionSize, "10%"),
		Leverage:     orDefault(s.Leverage, 1),
		StopLoss:     s.StopLoss,
		TakeProfit:   s.TakeProfit,
		DCA:          registry.DCA{Enabled: s.DCA.Enabled, MaxLevels: orDefault(s.DCA.MaxLevels, 5)},
		Risk: registry.Risk{
			MaxExposure:          s.Risk.MaxExposure,
			DailyLossLimit:       s.Risk.DailyLossLimit,
			MaxConsecutiveLosses: s.Risk.MaxConsecutiveLosses,
		},
		RateLimit:      registry.Limit{PerMinute: orDefault(s.RateLimit.PerMinute, 60), Burst: orDefault(s.RateLimit.Burst, 10)},
		Reversals:      s.Reversals == nil || *s.Reversals,
		Copyable:       s.Copyable,
		WebhookEnabled: s.Webhook.Enabled == nil || *s.Webhook.Enabled,

		Availability: string(bot.Status.Availability),
		PausedReason: string(bot.Status.PausedReason),
		Generation:   bot.Generation,
	}
	if s.DedupeWindow != nil {
		b.DedupeWindowMillis = s.DedupeWindow.Milliseconds()
	}
	b.MaxSignalAgeMillis = tradingv1.DefaultMaxSignalAge.Milliseconds()
	if s.MaxSignalAge != nil {
		b.MaxSignalAgeMillis = s.MaxSignalAge.Milliseconds()
	}
	if bot.Status.Availability == tradingv1.AvailabilityDisabled {
		b.DisabledCode, b.DisabledReason = acct.code, acct.reason
	}
	return b
}

func orDefault[T comparable](v, def T) T {
	var zero T
	if v == zero {
		return def
	}
	return v
}
