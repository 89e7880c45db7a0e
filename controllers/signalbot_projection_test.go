package controllers

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/registry"
)

// An object stored before a default existed (empty fields) still projects a complete config.
func TestProjectionFillsDefaults(t *testing.T) {
	bot := &tradingv1.SignalBot{
		ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "n", UID: "uid", Generation: 3},
		Spec:       tradingv1.SignalBotSpec{Owner: " Mixed@Case.IO "},
		Status:     tradingv1.SignalBotStatus{Availability: tradingv1.AvailabilityActive},
	}
	p := projection(bot, accountCheck{kind: registry.AccountPaper, name: "acct", id: "acct-uid", ready: true})
	want := registry.Bot{
		ID: "uid", Namespace: "n", Name: "b", Owner: "mixed@case.io",
		Account: registry.Account{Kind: "paper", Name: "acct", ID: "acct-uid"},
		Market:  "spot", PositionSize: "10%", Leverage: 1,
		DCA:                registry.DCA{MaxLevels: 5},
		RateLimit:          registry.Limit{PerMinute: 60, Burst: 10},
		MaxSignalAgeMillis: 60_000,
		Reversals:          true, WebhookEnabled: true, Availability: "active", Generation: 3,
	}
	if p != want {
		t.Fatalf("projection =\n%+v\nwant\n%+v", p, want)
	}
}

func TestProjectionCarriesSpecAndDisabledReason(t *testing.T) {
	off := false
	bot := &tradingv1.SignalBot{
		ObjectMeta: metav1.ObjectMeta{Name: "b", UID: "uid"},
		Spec: tradingv1.SignalBotSpec{
			Owner: "a@x.io", Market: tradingv1.MarketFutures, Leverage: 10, PositionSize: "0.5",
			StopLoss: "2%", TakeProfit: "65000", DCA: tradingv1.DCASpec{Enabled: true, MaxLevels: 3},
			Risk:      tradingv1.RiskSpec{MaxExposure: "0.25", DailyLossLimit: "100.5", MaxConsecutiveLosses: 4},
			RateLimit: tradingv1.RateLimitSpec{PerMinute: 5, Burst: 1}, DedupeWindow: &metav1.Duration{Duration: 1500 * time.Millisecond},
			MaxSignalAge: &metav1.Duration{Duration: 90 * time.Second}, Reversals: &off, Webhook: tradingv1.WebhookSpec{Enabled: &off},
		},
		Status: tradingv1.SignalBotStatus{Availability: tradingv1.AvailabilityDisabled},
	}
	p := projection(bot, accountCheck{kind: registry.AccountExchange, name: "x",
		code: registry.DisabledExchangeDisconnected, reason: "ExchangeConnectionNotReady"})
	if p.Market != "futures" || p.Leverage != 10 || p.PositionSize != "0.5" || p.StopLoss != "2%" || p.TakeProfit != "65000" ||
		!p.DCA.Enabled || p.DCA.MaxLevels != 3 || p.Risk.MaxExposure != "0.25" || p.Risk.DailyLossLimit != "100.5" ||
		p.Risk.MaxConsecutiveLosses != 4 || p.RateLimit != (registry.Limit{PerMinute: 5, Burst: 1}) || p.DedupeWindowMillis != 1500 ||
		p.MaxSignalAgeMillis != 90_000 || p.Reversals || p.WebhookEnabled || p.DisabledReason != "ExchangeConnectionNotReady" ||
		p.DisabledCode != registry.DisabledExchangeDisconnected {
		t.Fatalf("projection = %+v", p)
	}
	// Not set (a bot projected from an object the API server did not default): 60 s.
	bot.Spec.MaxSignalAge = nil
	if p := projection(bot, accountCheck{}); p.MaxSignalAgeMillis != 60_000 {
		t.Fatalf("default maxSignalAge = %d ms", p.MaxSignalAgeMillis)
	}
}

func TestAvailability(t *testing.T) {
	cases := []struct {
		suspend, ready bool
		want           tradingv1.Availability
		reason         tradingv1.PausedReason
	}{
		{false, true, tradingv1.AvailabilityActive, ""},
		{true, true, tradingv1.AvailabilityPaused, tradingv1.PausedManual},
		{true, false, tradingv1.AvailabilityDisabled, ""}, // disabled wins over a pause
		{false, false, tradingv1.AvailabilityDisabled, ""},
	}
	for _, c := range cases {
		bot := &tradingv1.SignalBot{Spec: tradingv1.SignalBotSpec{Suspend: c.suspend}}
		got, reason := availability(bot, accountCheck{ready: c.ready})
		if got != c.want || reason != c.reason {
			t.Errorf("suspend=%v ready=%v: %s/%s, want %s/%s", c.suspend, c.ready, got, reason, c.want, c.reason)
		}
	}
}

func TestValidWebhookID(t *testing.T) {
	for id, ok := range map[string]bool{
		"3f1c2d4e-5a6b-4c7d-8e9f-0a1b2c3d4e5f": true,
		"3f1c2d4e-5a6b-1c7d-8e9f-0a1b2c3d4e5f": false, // version 1
		"3f1c2d4e5a6b4c7d8e9f0a1b2c3d4e5f":     false, // not the 36-character form
		"":                                     false,
		"not-a-uuid":                           false,
	} {
		if validWebhookID(id) != ok {
			t.Errorf("validWebhookID(%q) = %v", id, !ok)
		}
	}
}
