package executor_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
)

// The booking of a signal's last leg stores its result in the same script: the result, the
// bot's signal index, the reply to the waiting webhookd and the results event, with the
// progress record deleted (a single-leg paper signal never writes one).
func TestLastBookingStoresTheResult(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01"}`))
	sub := h.srv.Client()
	defer sub.Close()
	ps := sub.Subscribe(h.ctx, store.ReplyChannel("w1"), store.ResultEvents())
	defer ps.Close()
	if _, err := ps.Receive(h.ctx); err != nil {
		t.Fatal(err)
	}
	env := h.envelope(`{"action":"sell","symbol":"BTCUSDT"}`)
	env.ReplyTo = store.ReplyChannel("w1")
	if !strings.HasPrefix(store.SignalResult(env.SignalID), "sigops:result:{") {
		t.Fatalf("result key %s has no partition tag", store.SignalResult(env.SignalID))
	}
	res := h.ok(h.run(env))
	testkit.EqualD(t, "sold", res.Order.FilledAmount.Decimal, "0.01")
	if n := h.rdb.Exists(h.ctx, store.SignalProgress(env.BotID, env.SignalID)).Val(); n != 0 {
		t.Fatal("a progress record was left")
	}
	// The sell's only order record holds the result (TestResultKeptInTheOrderRecord), and
	// lives at least as long as a result would.
	ttl := h.rdb.TTL(h.ctx, store.BookOrder(h.bot.ID, position.ClientOrderID(env.SignalID, ""))).Val()
	if ttl <= queue.ResultTTL()-time.Minute || h.rdb.Exists(h.ctx, store.SignalResult(env.SignalID)).Val() != 0 {
		t.Fatalf("the order record holding the result lives %s, want at least %s", ttl, queue.ResultTTL())
	}
	recent, err := queue.RecentSignals(h.ctx, h.rdb, h.bot.ID)
	if err != nil || len(recent) != 2 || recent[0].SignalID != env.SignalID || recent[0].Action != "sell" {
		t.Fatalf("recent signals = %+v, %v", recent, err)
	}
	got := map[string]string{}
	for len(got) < 2 {
		ctx, cancel := context.WithTimeout(h.ctx, 5*time.Second)
		m, err := ps.ReceiveMessage(ctx)
		cancel()
		if err != nil {
			t.Fatalf("announcements %v: %v", got, err)
		}
		got[m.Channel] = m.Payload
	}
	if reply := got[store.ReplyChannel("w1")]; !strings.HasPrefix(reply, env.SignalID+"\n{") || !strings.Contains(reply, `"filledAmount":0.01,`) {
		t.Fatalf("reply = %q", reply)
	}
	if ev := got[store.ResultEvents()]; !strings.Contains(ev, env.SignalID) || !strings.Contains(ev, h.bot.ID) {
		t.Fatalf("results event = %q", ev)
	}
}

// A paper leg is placed without a staged request. An attempt that dies after the fill and
// before its booking leaves the book as it was; the retry plans the same legs with the same
// client order IDs, and its placement finds the fill. Here the fill took the whole balance,
// so the retry cannot even size the order again: it books the fill it finds, once.
func TestPaperFillFoundWhenTheRetryCannotSize(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	h.px.set(exchange.Spot, "ETH/USDT", "3000")
	h.ok(h.send(`{"action":"buy","symbol":"ETHUSDT","size":"0.01"}`)) // records the starting equity
	h.ok(h.send(`{"action":"close"}`))
	before := h.balance()
	crash := errors.New("killed")
	executor.SetAfterPlace(h.ex, func(string) error { return crash })
	env := h.envelope(`{"action":"buy","symbol":"BTCUSDT","size":"100%"}`)
	if err := h.ex.Handle(h.ctx, env); !errors.Is(err, crash) {
		t.Fatalf("handle = %v, want the crash", err)
	}
	if h.position("BTC/USDT") != nil {
		t.Fatal("booked before the crash point")
	}
	if n := h.rdb.Exists(h.ctx, store.SignalProgress(env.BotID, env.SignalID)).Val(); n != 0 {
		t.Fatal("a paper leg staged its request")
	}
	executor.SetAfterPlace(h.ex, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "70000") // a new order would fill here
	res := h.ok(h.run(env))
	testkit.EqualD(t, "fill price", res.Order.AvgPrice.Decimal, "65000")
	// 100 % of the free balance at 65000 with the 0.1 % fee: before / (65000 × 1.001),
	// rounded down to the 0.00001 step; the position holds what was bought.
	amount := before.Div(testkit.D("65065")).RoundFloor(5)
	testkit.EqualD(t, "position", (h.position("BTC/USDT").Size).Decimal, amount.String())
	testkit.EqualD(t, "order amount", res.Order.Amount.Decimal, amount.String())
	// The balance lost the cost and the fee once: amount × 65000 × 1.001.
	testkit.EqualD(t, "balance", h.balance(), before.Sub(amount.Mul(testkit.D("65065"))).String())
	if n := h.exchangeOrders(); n != 3 {
		t.Fatalf("%d exchange orders, want 3", n)
	}
	orders, err := position.NewBook(h.rdb).Orders(h.ctx, h.bot.ID, 0)
	if err != nil || len(orders) != 3 || orders[0].Status != exchange.StatusFilled || !orders[0].Amount.Equal(amount) {
		t.Fatalf("order records = %+v, %v", orders, err)
	}
}

// A retry of a paper entry that waited past the bot's maxSignalAge is not expired when the
// earlier attempt placed its order: the fill is booked.
func TestPaperFillBookedPastMaxSignalAge(t *testing.T) {
	h := newHarness(t, func(b *registry.Bot) { b.MaxSignalAgeMillis = 60_000 })
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.001"}`))
	h.ok(h.send(`{"action":"close"}`))
	crash := errors.New("killed")
	executor.SetAfterPlace(h.ex, func(string) error { return crash })
	env := h.envelope(`{"action":"buy","symbol":"BTCUSDT","size":"0.002"}`)
	if err := h.ex.Handle(h.ctx, env); !errors.Is(err, crash) {
		t.Fatalf("handle = %v, want the crash", err)
	}
	executor.SetAfterPlace(h.ex, nil)
	h.now = h.now.Add(2 * time.Minute)
	res := h.ok(h.run(env))
	testkit.EqualD(t, "position", (h.position("BTC/USDT").Size).Decimal, "0.002")
	testkit.EqualD(t, "filled", res.Order.FilledAmount.Decimal, "0.002")
	if n := h.exchangeOrders(); n != 3 {
		t.Fatalf("%d exchange orders, want 3", n)
	}
	// Without an earlier placement the same wait expires the entry.
	late := h.envelope(`{"action":"buy","symbol":"ETHUSDT","size":"0.01"}`)
	late.ReceivedAt = h.now.Add(-2 * time.Minute).UnixMilli()
	h.px.set(exchange.Spot, "ETH/USDT", "3000")
	h.fails(h.run(late), "SIGNAL_EXPIRED")
}
