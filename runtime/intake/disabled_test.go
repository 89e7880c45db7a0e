package intake_test

import (
	"context"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/registry"
)

// disabledAnswer is the code a signal to a bot disabled with this code must get: the user
// fixes an exchange connection, or something else.
func disabledAnswer(c registry.DisabledCode) errs.Code {
	if c == registry.DisabledExchangeDisconnected {
		return errs.ExchangeDisconnected
	}
	return errs.BotDisabled
}

// The intake's Lua script cannot call Go, so it repeats registry.Bot.DisabledError's rule.
// For every disabled code, a real signal through the real script and the Go rule (which
// runtime/trading and the executor use) must both give the spec's answer, whatever the
// human-readable reason says; and a projection without a code (written by a controller
// that wrote none) must be answered by its exact reason until it is re-projected.
func TestDisabledCodesAgreeWithGo(t *testing.T) {
	ctx := context.Background()
	b := activeBot("bot-disabled")
	b.Availability = "disabled"
	in, _, reg := setup(t, b)
	now := time.UnixMilli(1_800_000_000_000)
	check := func(dc registry.DisabledCode, reason string, want errs.Code) {
		t.Helper()
		b.DisabledCode, b.DisabledReason = dc, reason
		if err := reg.Project(ctx, b, hookHash); err != nil {
			t.Fatal(err)
		}
		goCode := b.DisabledError().Code
		_, err := in.Admit(ctx, req(now))
		luaCode := code(err)
		if goCode != want || luaCode != want {
			t.Errorf("disabledCode %q, reason %q: Go rule %s, intake script %s; want %s", dc, reason, goCode, luaCode, want)
		}
	}
	for _, c := range registry.DisabledCodes {
		check(c, "", disabledAnswer(c))
		// The reason is only shown: one that reads like the other kind changes nothing.
		check(c, "ExchangeConnectionNotReady", disabledAnswer(c))
		check(c, "PaperAccountNotFound", disabledAnswer(c))
	}
	// Projections without a code: the reasons a controller without codes wrote.
	for _, c := range []struct {
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
		{"", errs.BotDisabled},
		// Only the exact names count: no prefix rule.
		{"ExchangeConnection", errs.BotDisabled},
		{"ExchangeConnectionNotReadyYet", errs.BotDisabled},
		{"exchangeConnectionNotReady", errs.BotDisabled},
	} {
		check("", c.reason, c.want)
	}
}
