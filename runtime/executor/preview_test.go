package executor_test

import (
	"testing"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// previewed previews env and asserts Redis is byte for byte what it was before.
func (h *harness) previewed(body string) (executor.Preview, string) {
	h.t.Helper()
	env := h.envelope(body)
	before, err := storetest.Snapshot(h.ctx, h.rdb)
	if err != nil {
		h.t.Fatal(err)
	}
	pv, err := h.ex.Preview(h.ctx, env)
	if err != nil {
		h.t.Fatal(err)
	}
	after, err := storetest.Snapshot(h.ctx, h.rdb)
	if err != nil {
		h.t.Fatal(err)
	}
	if changed := storetest.Changed(before, after); len(changed) > 0 {
		h.t.Fatalf("the preview changed %v", changed)
	}
	return pv, env.SignalID
}

func TestPreviewIsTheOrderTheExecutorPlaces(t *testing.T) {
	h := newHarness(t, func(b *registry.Bot) { b.Market, b.Leverage = "futures", 5 })
	h.px.set(exchange.Futures, "BTC/USDT", "50000")
	// 10 % of 10,000 USDT is 1,000 of margin, × 5 = 5,000 notional: 0.1 BTC at 50,000, a fee
	// of 0.1 % of it.
	pv, _ := h.previewed(`{"action":"buy","symbol":"BTCUSDT"}`)
	if pv.Refusal != nil || len(pv.Legs) != 1 {
		t.Fatalf("preview %+v", pv)
	}
	l := pv.Legs[0]
	if l.Op != "open" || l.Side != exchange.SideBuy || !l.Amount.Equal(testkit.D("0.1")) || !l.ReferencePrice.Equal(testkit.D("50000")) ||
		!l.Notional.Equal(testkit.D("5000")) || !l.Fee.Equal(testkit.D("5")) || !l.Margin.Equal(testkit.D("1000")) || l.Leverage != 5 {
		t.Fatalf("leg %+v", l)
	}
	for _, c := range pv.Checks {
		if !c.Passed {
			t.Fatalf("check %+v", c)
		}
	}
	if len(pv.Checks) != 5 || !pv.EntryNotional().Equal(testkit.D("5000")) {
		t.Fatalf("checks %+v, entry notional %s", pv.Checks, pv.EntryNotional())
	}
	// Queued with what was admitted, the executor places that amount after the price fell
	// (a fresh sizing of 10 % at 40,000 would place 0.125).
	h.px.set(exchange.Futures, "BTC/USDT", "40000")
	env := h.envelope(`{"action":"buy","symbol":"BTCUSDT"}`)
	env.Admitted = pv.Admitted()
	h.ok(h.run(env))
	if p := h.position("BTC/USDT"); p == nil || !p.Size.Equal(l.Amount.Decimal) {
		t.Fatalf("position %+v, want %s", p, l.Amount)
	}
}

func TestPreviewNamesTheCheckThatRefuses(t *testing.T) {
	h := newHarness(t, func(b *registry.Bot) { b.Risk = registry.Risk{MaxExposure: "0.05"} })
	h.px.set(exchange.Spot, "BTC/USDT", "50000")
	pv, _ := h.previewed(`{"action":"buy","symbol":"BTCUSDT","size":"10%"}`)
	if pv.Refusal == nil || len(pv.Legs) != 0 {
		t.Fatalf("preview %+v", pv)
	}
	last := pv.Checks[len(pv.Checks)-1]
	if last.Name != executor.CheckExposure || last.Passed || last.Code != errs.InvalidAmount {
		t.Fatalf("checks %+v", pv.Checks)
	}
	// A close with nothing open fails the plan, and nothing after it is run.
	pv, _ = h.previewed(`{"action":"close","symbol":"BTCUSDT"}`)
	if last := pv.Checks[len(pv.Checks)-1]; last.Name != executor.CheckPlan || last.Code != errs.PositionNotFound || len(pv.Checks) != 3 {
		t.Fatalf("checks %+v", pv.Checks)
	}
	// A paused bot fails the first check.
	h.bot.Availability, h.bot.PausedReason = "paused", "manual"
	h.project()
	pv, _ = h.previewed(`{"action":"buy","symbol":"BTCUSDT"}`)
	if len(pv.Checks) != 1 || pv.Checks[0].Code != errs.BotPaused {
		t.Fatalf("checks %+v", pv.Checks)
	}
}
