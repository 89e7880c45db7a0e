package executor_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
)

// aged is env as if it had arrived age before the executor's now.
func aged(env queue.Envelope, h *harness, age time.Duration) queue.Envelope {
	env.ReceivedAt = h.now.Add(-age).UnixMilli()
	return env
}

// An entry older than maxSignalAge is not placed: SIGNAL_EXPIRED, its order recorded as
// expired, no money moved. One just inside the limit runs; a close of any age runs.
func TestStaleEntryExpiresAndStaleCloseRuns(t *testing.T) {
	h := newHarness(t, func(b *registry.Bot) { b.MaxSignalAgeMillis = 60_000 })
	h.px.set(exchange.Spot, "BTC/USDT", "65000")

	env := aged(h.envelope(`{"action":"buy","symbol":"BTCUSDT"}`), h, 61*time.Second)
	res := h.fails(h.run(env), errs.SignalExpired)
	if res.Order == nil || res.Order.Status != string(exchange.StatusExpired) || res.Order.Symbol != "BTC/USDT" || res.Order.Side != "buy" {
		t.Fatalf("expired result order = %+v", res.Order)
	}
	if !strings.Contains(res.Error, "maxSignalAge") {
		t.Errorf("message %q does not say why", res.Error)
	}
	testkit.EqualD(t, "balance after an expired entry", h.balance(), "10000")
	if h.exchangeOrders() != 0 || h.position("BTC/USDT") != nil {
		t.Fatal("an expired entry reached the exchange")
	}
	rec, err := position.ReadOrder(h.ctx, h.rdb, h.bot.ID, order.ClientOrderID(env.SignalID, ""))
	if err != nil || rec == nil || rec.Status != exchange.StatusExpired || rec.Code != string(errs.SignalExpired) {
		t.Fatalf("order record = %+v, %v", rec, err)
	}
	// Handled again (a redelivery): the same result, the order listed once.
	if err := h.ex.Handle(h.ctx, env); err != nil {
		t.Fatal(err)
	}
	if n := h.rdb.LLen(h.ctx, store.BookOrders(h.bot.ID)).Val(); n != 1 {
		t.Errorf("%d orders listed, want 1", n)
	}

	h.ok(h.run(aged(h.envelope(`{"action":"buy","symbol":"BTCUSDT"}`), h, 59*time.Second)))
	if h.position("BTC/USDT") == nil {
		t.Fatal("an entry inside maxSignalAge did not open a position")
	}
	h.ok(h.run(aged(h.envelope(`{"action":"close","symbol":"BTCUSDT"}`), h, time.Hour)))
	if h.position("BTC/USDT") != nil {
		t.Fatal("an hour-old close did not close the position")
	}
}

// maxSignalAge 0 never expires anything.
func TestMaxSignalAgeZeroIsOff(t *testing.T) {
	h := newHarness(t, func(b *registry.Bot) { b.MaxSignalAgeMillis = 0 })
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	h.ok(h.run(aged(h.envelope(`{"action":"buy","symbol":"BTCUSDT"}`), h, 24*time.Hour)))
}

// A stale DCA add expires; a stale reversal closes the old side and does not open the new.
func TestStaleAddAndReversal(t *testing.T) {
	h := newHarness(t, func(b *registry.Bot) {
		b.Market, b.Leverage, b.MaxSignalAgeMillis = "futures", 5, 10_000
		b.DCA = registry.DCA{Enabled: true, MaxLevels: 3}
	})
	h.px.set(exchange.Futures, "BTC/USDT", "65000")
	h.ok(h.send(`{"action":"long","symbol":"BTCUSDT"}`))
	before := h.position("BTC/USDT").Size
	res := h.fails(h.run(aged(h.envelope(`{"action":"long","symbol":"BTCUSDT","dca":true,"dcaLevel":2}`), h, 11*time.Second)), errs.SignalExpired)
	if !strings.Contains(res.Error, "DCA add") {
		t.Errorf("message %q", res.Error)
	}
	testkit.EqualD(t, "size after an expired add", (h.position("BTC/USDT").Size).Decimal, before.String())

	res = h.fails(h.run(aged(h.envelope(`{"action":"short","symbol":"BTCUSDT"}`), h, 11*time.Second)), errs.SignalExpired)
	if !strings.Contains(res.Error, "closed long") {
		t.Errorf("the reversal's close is not reported: %q", res.Error)
	}
	if p := h.position("BTC/USDT"); p != nil {
		t.Fatalf("position after a stale reversal = %+v; the long should be closed and no short opened", p)
	}
	if tr := h.trades(); len(tr) != 1 {
		t.Fatalf("trades = %+v", tr)
	}
}
