package intake_test

import (
	"context"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/errs"
)

// disabledReasons are the disabledReasons the controllers write into a projection
// (controllers/signalbot_account.go, controllers/signalbot_tier.go), each with the code a
// signal to such a bot must get, plus edge cases of the prefix rule.
var disabledReasons = []struct {
	reason string
	want   errs.Code
}{
	{"ExchangeConnectionNotFound", errs.ExchangeDisconnected},
	{"ExchangeConnectionNotReady", errs.ExchangeDisconnected},
	{"PaperAccountNotFound", errs.BotDisabled},
	{"PaperAccountNotReady", errs.BotDisabled},
	{"AccountOwnerMismatch", errs.BotDisabled},
	{"MissingTradePermission", errs.BotDisabled},
	{"OwnerAccountNotFound", errs.BotDisabled},
	{"OwnerLacksLiveTrading", errs.BotDisabled},
	{"OwnerTierUnavailable", errs.BotDisabled},
	// Edge cases: no reason, the bare prefix, a shorter or differently cased one.
	{"", errs.BotDisabled},
	{"ExchangeConnection", errs.ExchangeDisconnected},
	{"Exchange", errs.BotDisabled},
	{"exchangeConnectionNotReady", errs.BotDisabled},
}

// The intake's Lua script cannot call Go, so it repeats registry.Bot.DisabledError's rule.
// For every reason the controllers write, a real signal through the real script must get
// the code the Go rule gives (runtime/trading and the executor use the Go rule).
func TestDisabledCodesAgreeWithGo(t *testing.T) {
	ctx := context.Background()
	b := activeBot("bot-disabled")
	b.Availability = "disabled"
	in, _, reg := setup(t, b)
	now := time.UnixMilli(1_800_000_000_000)
	for _, c := range disabledReasons {
		b.DisabledReason = c.reason
		if err := reg.Project(ctx, b, hookHash); err != nil {
			t.Fatal(err)
		}
		goCode := b.DisabledError().Code
		_, err := in.Admit(ctx, req(now))
		luaCode := code(err)
		if goCode != c.want || luaCode != c.want {
			t.Errorf("disabledReason %q: Go rule %s, intake script %s; want %s", c.reason, goCode, luaCode, c.want)
		}
	}
}
