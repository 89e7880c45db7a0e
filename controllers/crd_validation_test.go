package controllers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
)

// The CRD schema (OpenAPI + CEL) refuses bad bots before any controller sees them.
func TestSignalBotValidation(t *testing.T) {
	ns := namespace(t)
	ref := &tradingv1.LocalObjectReference{Name: "acct"}
	cases := []struct {
		name    string
		mutate  func(*tradingv1.SignalBotSpec)
		wantErr string
	}{
		{"no account", func(s *tradingv1.SignalBotSpec) { s.PaperAccountRef = nil }, "exactly one of paperAccountRef or exchangeConnectionRef"},
		{"both accounts", func(s *tradingv1.SignalBotSpec) { s.ExchangeConnectionRef = ref }, "exactly one of paperAccountRef or exchangeConnectionRef"},
		{"leverage on spot", func(s *tradingv1.SignalBotSpec) { s.Leverage = 5 }, "leverage above 1 needs market futures"},
		{"leverage too high", func(s *tradingv1.SignalBotSpec) { s.Market, s.Leverage = tradingv1.MarketFutures, 126 }, "spec.leverage"},
		{"percentage above 100", func(s *tradingv1.SignalBotSpec) { s.PositionSize = "150%" }, "a percentage must be above 0 and at most 100"},
		{"zero percentage", func(s *tradingv1.SignalBotSpec) { s.PositionSize = "0%" }, "a percentage must be above 0 and at most 100"},
		{"zero amount", func(s *tradingv1.SignalBotSpec) { s.PositionSize = "0" }, "an amount must be above 0"},
		{"size not a number", func(s *tradingv1.SignalBotSpec) { s.PositionSize = "ten" }, "spec.positionSize"},
		{"symbol without slash", func(s *tradingv1.SignalBotSpec) { s.Symbol = "BTCUSDT" }, "spec.symbol"},
		{"bad market", func(s *tradingv1.SignalBotSpec) { s.Market = "margin" }, "spec.market"},
		{"exposure above 1", func(s *tradingv1.SignalBotSpec) { s.Risk.MaxExposure = "1.5" }, "spec.risk.maxExposure"},
		{"owner not an email", func(s *tradingv1.SignalBotSpec) { s.Owner = "nobody" }, "spec.owner"},
		{"stop loss garbage", func(s *tradingv1.SignalBotSpec) { s.StopLoss = "-2%" }, "spec.stopLoss"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bot := paperBot(ns, "bad-"+string(rune('a'+i)), "a@x.io", "acct")
			tc.mutate(&bot.Spec)
			err := k8s.Create(context.Background(), bot)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("create: err = %v, want one mentioning %q", err, tc.wantErr)
			}
		})
	}
}

func TestSignalBotDefaults(t *testing.T) {
	ns := namespace(t)
	bot := &tradingv1.SignalBot{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "defaults"},
		Spec:       tradingv1.SignalBotSpec{Owner: "a@x.io", PaperAccountRef: &tradingv1.LocalObjectReference{Name: "acct"}},
	}
	create(t, bot)
	s := bot.Spec // Create fills in what the API server returned
	if s.Market != tradingv1.MarketSpot || s.PositionSize != "10%" || s.Leverage != 1 {
		t.Fatalf("market/size/leverage defaults: %q %q %d", s.Market, s.PositionSize, s.Leverage)
	}
	if s.Reversals == nil || !*s.Reversals || s.Webhook.Enabled == nil || !*s.Webhook.Enabled {
		t.Fatalf("reversals/webhook defaults: %v %v", s.Reversals, s.Webhook.Enabled)
	}
	if s.RateLimit.PerMinute != 60 || s.RateLimit.Burst != 10 || s.DedupeWindow == nil || s.DedupeWindow.Duration != 0 {
		t.Fatalf("rate limit / dedupe defaults: %+v %v", s.RateLimit, s.DedupeWindow)
	}
	if s.MaxSignalAge == nil || s.MaxSignalAge.Duration != 60*time.Second {
		t.Fatalf("maxSignalAge default: %v", s.MaxSignalAge)
	}
	// An explicit false survives (a bool default of true must not swallow it).
	off := false
	bot2 := paperBot(ns, "no-reversals", "a@x.io", "acct")
	bot2.Spec.Reversals = &off
	create(t, bot2)
	if bot2.Spec.Reversals == nil || *bot2.Spec.Reversals {
		t.Fatal("reversals: false was replaced by the default")
	}
}

func TestPaperAccountDefaultsAndValidation(t *testing.T) {
	ns := namespace(t)
	acct := paperAccount(ns, "defaults", "a@x.io")
	create(t, acct)
	if acct.Spec.InitialBalance != "10000" || acct.Spec.Currency != "USDT" || acct.Spec.FeeRate != "0.001" {
		t.Fatalf("defaults: %+v", acct.Spec)
	}
	bad := paperAccount(ns, "bad", "a@x.io")
	bad.Spec.InitialBalance = "0"
	if err := k8s.Create(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "initialBalance must be above 0") {
		t.Fatalf("zero balance: err = %v", err)
	}
}
