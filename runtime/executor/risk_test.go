package executor_test

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/risk"
	"github.com/sigops/sigops/runtime/store"
)

func (h *harness) pauseFields() (string, string) {
	h.t.Helper()
	v, err := h.rdb.HMGet(h.ctx, store.Bot(h.bot.ID), registry.FieldPause, registry.FieldPauseUntil).Result()
	if err != nil {
		h.t.Fatal(err)
	}
	s := func(x any) string { r, _ := x.(string); return r }
	return s(v[0]), s(v[1])
}

// loseOnce buys 0.01 BTC at 65,000 and sells at 63,000: gross −20, fees 0.65 + 0.63, net −21.28.
func (h *harness) loseOnce() {
	h.t.Helper()
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01"}`))
	h.px.set(exchange.Spot, "BTC/USDT", "63000")
	h.ok(h.send(`{"action":"sell","symbol":"BTCUSDT"}`))
}

func TestDailyLossLimitPausesUntilTheNextUTCDay(t *testing.T) {
	h := newHarness(t, func(b *registry.Bot) { b.Risk.DailyLossLimit = "30" })
	sub := h.rdb.Subscribe(h.ctx, store.BotEvents())
	defer sub.Close()
	if _, err := sub.Receive(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.loseOnce() // 21.28 of 30 used
	if p, _ := h.pauseFields(); p != "" {
		t.Fatalf("paused after one loss: %s", p)
	}
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01"}`))
	h.px.set(exchange.Spot, "BTC/USDT", "63000")
	res := h.ok(h.send(`{"action":"sell","symbol":"BTCUSDT"}`)) // 42.56 ≥ 30
	if res.Message == "" {
		t.Fatal("no message")
	}
	reason, until := h.pauseFields()
	next := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC).UnixMilli()
	if reason != "Risk" || until != strconv.FormatInt(next, 10) {
		t.Fatalf("pause = %q until %q", reason, until)
	}
	msg, err := sub.ReceiveMessage(h.ctx)
	if err != nil || msg.Payload != h.bot.ID {
		t.Fatalf("event = %v, %v", msg, err)
	}
	h.fails(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01"}`), errs.BotPaused)
	c, _ := risk.ReadCounters(h.ctx, h.rdb, h.bot.ID)
	testkit.EqualD(t, "daily loss used", c.DailyLossUsed(h.now), "42.56")

	// The next UTC day the pause is over (and cleared on the way).
	h.now = time.Date(2026, 11, 22, 0, 0, 1, 0, time.UTC)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01"}`))
	if reason, _ := h.pauseFields(); reason != "" {
		t.Fatalf("expired pause not cleared: %s", reason)
	}
}

func TestConsecutiveLossesPause(t *testing.T) {
	h := newHarness(t, func(b *registry.Bot) { b.Risk.MaxConsecutiveLosses = 2 })
	h.loseOnce()
	// A win in between restarts the run.
	h.px.set(exchange.Spot, "BTC/USDT", "60000")
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01"}`))
	h.px.set(exchange.Spot, "BTC/USDT", "61000")
	h.ok(h.send(`{"action":"sell","symbol":"BTCUSDT"}`))
	h.loseOnce()
	if p, _ := h.pauseFields(); p != "" {
		t.Fatalf("paused after one loss in a row: %s", p)
	}
	h.loseOnce()
	if reason, until := h.pauseFields(); reason != "Risk" || until == "0" {
		t.Fatalf("pause = %q until %q", reason, until)
	}
	h.fails(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01"}`), errs.BotPaused)
}

func TestFiveExecutionErrorsPauseWithErrors(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	tooBig := `{"action":"buy","symbol":"BTCUSDT","size":"1"}`
	for i := 0; i < 4; i++ {
		h.fails(h.send(tooBig), errs.InsufficientBalance)
	}
	// A success ends the run of errors; validation failures neither count nor reset.
	h.px.set(exchange.Spot, "ETH/USDT", "3000")
	h.px.set(exchange.Spot, "SOL/USDT", "150")
	h.ok(h.send(`{"action":"buy","symbol":"ETHUSDT","size":"0.01"}`))
	for i := 0; i < 4; i++ {
		h.fails(h.send(tooBig), errs.InsufficientBalance)
		h.fails(h.send(`{"action":"buy","symbol":"NOPEUSDT"}`), errs.InvalidSymbol)
	}
	// Handling the same failed signal again does not count twice.
	env := h.envelope(tooBig)
	h.fails(h.run(env), errs.InsufficientBalance)
	if reason, until := h.pauseFields(); reason != "Errors" || until != "0" {
		t.Fatalf("pause = %q until %q", reason, until)
	}
	c, _ := risk.ReadCounters(h.ctx, h.rdb, h.bot.ID)
	if c.ConsecutiveErrors != 0 {
		t.Fatalf("errors counter = %d after the pause", c.ConsecutiveErrors)
	}
	h.fails(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.001"}`), errs.BotPaused)
	// A resume (the controller lifts the pause) lets it trade.
	if ok, err := h.reg.Resume(h.ctx, h.bot.ID, registry.Pause{Reason: registry.PauseErrors}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	h.ok(h.send(`{"action":"buy","symbol":"SOLUSDT","size":"1"}`))
}

func TestMaxExposure(t *testing.T) {
	h := newHarness(t, func(b *registry.Bot) { b.Risk.MaxExposure = "0.15" })
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	h.px.set(exchange.Spot, "ETH/USDT", "3000")
	// 999.70 of 10,000 equity: 0.09997.
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT"}`))
	// 10 % of the 8999.3003 left = 0.2999 ETH (899.70): (999.70 + 899.70) / 9999.0003 > 0.15.
	res := h.fails(h.send(`{"action":"buy","symbol":"ETHUSDT"}`), errs.InvalidAmount)
	if res.Details["maxExposure"] == nil || res.Details["exposure"] == nil {
		t.Fatalf("details = %v", res.Details)
	}
	// A smaller order fits: 0.1 ETH = 300 → 0.12997.
	h.ok(h.send(`{"action":"buy","symbol":"ETHUSDT","size":"0.1"}`))
}

func TestRiskPauseDoesNotShortenAnErrorsPause(t *testing.T) {
	h := newHarness(t, nil)
	if _, err := h.reg.Pause(h.ctx, h.bot.ID, registry.Pause{Reason: registry.PauseErrors}, h.now); err != nil {
		t.Fatal(err)
	}
	written, err := h.reg.Pause(h.ctx, h.bot.ID, registry.Pause{Reason: registry.PauseRisk, Until: risk.NextUTCDay(h.now)}, h.now)
	if err != nil || written {
		t.Fatalf("risk pause replaced an open-ended one: %v %v", written, err)
	}
	if reason, until := h.pauseFields(); reason != "Errors" || until != "0" {
		t.Fatalf("pause = %q until %q", reason, until)
	}
	// A deleted bot's hash is never re-created by a pause.
	h.reg.Remove(h.ctx, h.bot.ID, time.Hour)
	if w, _ := h.reg.Pause(h.ctx, h.bot.ID, registry.Pause{Reason: registry.PauseRisk}, h.now); w {
		t.Fatal("paused a deleted bot")
	}
	if n, _ := h.rdb.Exists(h.ctx, store.Bot(h.bot.ID)).Result(); n != 0 {
		t.Fatal("bot hash re-created")
	}
}

func TestARiskPauseStopsTheRestOfAReversal(t *testing.T) {
	h := newHarness(t, func(b *registry.Bot) { b.Market, b.Leverage, b.Risk.DailyLossLimit = "futures", 2, "10" })
	h.px.set(exchange.Futures, "BTC/USDT", "65000")
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01"}`))
	h.px.set(exchange.Futures, "BTC/USDT", "60000")
	res := h.ok(h.send(`{"action":"sell","symbol":"BTCUSDT","size":"0.01"}`)) // the close loses 50 + fees
	if !strings.Contains(res.Message, "closed long") || !strings.Contains(res.Message, "bot paused (Risk)") {
		t.Fatalf("message = %q", res.Message)
	}
	if h.position("BTC/USDT") != nil || h.exchangeOrders() != 2 {
		t.Fatal("the short was opened after the pause")
	}
	if reason, _ := h.pauseFields(); reason != "Risk" {
		t.Fatalf("pause = %q", reason)
	}
}
