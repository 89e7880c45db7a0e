package executor_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
)

func TestSpotBuyAndSellToTheDecimal(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	// 10 % of 10,000 = 1,000 USDT at 65,000: floor(0.0153846…, 5 dp) = 0.01538 BTC;
	// notional 999.70, fee 0.9997; balance 10000 − 1000.6997 = 8999.3003.
	res := h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT"}`))
	o := res.Order
	if o == nil || o.Status != "filled" || o.Symbol != "BTC/USDT" || o.Side != "buy" || o.Type != "market" || !o.Success {
		t.Fatalf("order = %+v", o)
	}
	testkit.EqualD(t, "amount", o.Amount.Decimal, "0.01538")
	testkit.EqualD(t, "filled", o.FilledAmount.Decimal, "0.01538")
	testkit.EqualD(t, "avgPrice", o.AvgPrice.Decimal, "65000")
	testkit.EqualD(t, "fee", o.Fee.Decimal, "0.9997")
	testkit.EqualD(t, "balance", h.balance(), "8999.3003")
	p := h.position("BTC/USDT")
	if p == nil || p.Side != position.Long || p.DCALevel != 1 {
		t.Fatalf("position = %+v", p)
	}
	testkit.EqualD(t, "size", p.Size.Decimal, "0.01538")
	testkit.EqualD(t, "entry", p.EntryPrice(), "65000")
	// Decimals go out as JSON numbers.
	data, _ := json.Marshal(res)
	if !strings.Contains(string(data), `"avgPrice":65000`) || !strings.Contains(string(data), `"fee":0.9997`) {
		t.Fatalf("result JSON: %s", data)
	}

	// Sell at 66,000 closes the holding: 1015.08 − 1.01508 fee = +1014.06492;
	// balance 10013.36522; realised net 15.38 − 0.9997 − 1.01508 = 13.36522.
	h.px.set(exchange.Spot, "BTC/USDT", "66000")
	res = h.ok(h.send(`{"action":"sell","symbol":"BTC/USDT"}`))
	testkit.EqualD(t, "sell fee", res.Order.Fee.Decimal, "1.01508")
	testkit.EqualD(t, "balance after sell", h.balance(), "10013.36522")
	if h.position("BTC/USDT") != nil {
		t.Fatal("position still open")
	}
	tr := h.trades()
	if len(tr) != 1 || !tr[0].Closed || tr[0].Reason != "signal" {
		t.Fatalf("trades = %+v", tr)
	}
	testkit.EqualD(t, "trade pnl", tr[0].Pnl.Decimal, "15.38")
	testkit.EqualD(t, "trade fees", tr[0].Fees.Decimal, "2.01478")
	testkit.EqualD(t, "trade net", tr[0].NetPnl.Decimal, "13.36522")
	orders, _ := position.NewBook(h.rdb).Orders(h.ctx, h.bot.ID, 0)
	if len(orders) != 2 || orders[0].Status != exchange.StatusFilled || orders[0].Side != exchange.SideSell {
		t.Fatalf("orders = %+v", orders)
	}
}

func TestSpotDOGEStepAndMinimums(t *testing.T) {
	h := newHarness(t, func(b *registry.Bot) { b.Symbol = "DOGE/USDT" })
	h.px.set(exchange.Spot, "DOGE/USDT", "0.12345")
	// floor(1000 / 0.12345 = 8100.44…) = 8100 DOGE (step 1), notional 999.945.
	res := h.ok(h.send(`{"action":"buy"}`))
	testkit.EqualD(t, "amount", res.Order.Amount.Decimal, "8100")
	testkit.EqualD(t, "balance", h.balance(), "8999.055055") // 10000 − 999.945 − 0.999945
	// 30 DOGE = 3.7035 USDT is below the 5 USDT minimum.
	h.ok(h.send(`{"action":"sell"}`))
	res = h.fails(h.send(`{"action":"buy","size":"30"}`), errs.InvalidAmount)
	if res.Details["minNotional"] == nil {
		t.Fatalf("details = %v", res.Details)
	}
	// A bot with a fixed pair trades only that pair.
	h.fails(h.send(`{"action":"buy","symbol":"BTCUSDT"}`), errs.InvalidSymbol)
}

func TestInsufficientBalanceHasDetails(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	res := h.fails(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"1"}`), errs.InsufficientBalance)
	data, _ := json.Marshal(res)
	if !strings.Contains(string(data), `"required":65065`) || !strings.Contains(string(data), `"available":10000`) {
		t.Fatalf("result = %s", data)
	}
	orders, _ := position.NewBook(h.rdb).Orders(h.ctx, h.bot.ID, 0)
	if len(orders) != 1 || orders[0].Status != exchange.StatusRejected || orders[0].Code != "INSUFFICIENT_BALANCE" {
		t.Fatalf("orders = %+v", orders)
	}
	testkit.EqualD(t, "balance", h.balance(), "10000")
}

func TestFuturesLongThenReversal(t *testing.T) {
	h := newHarness(t, func(b *registry.Bot) { b.Market, b.Leverage = "futures", 10 })
	h.px.set(exchange.Futures, "BTC/USDT", "65000")
	// 10 % of 10,000 as margin × 10 = 10,000 notional: 0.15384 BTC; margin 999.96, fee 9.9996.
	h.ok(h.send(`{"action":"long","symbol":"BTCUSDT.P"}`))
	testkit.EqualD(t, "balance", h.balance(), "8990.0404")
	p := h.position("BTC/USDT")
	testkit.EqualD(t, "margin", p.Margin.Decimal, "999.96")
	if p.Leverage != 10 || !p.Liquidation().IsPositive() {
		t.Fatalf("position = %+v", p)
	}

	// Sell at 66,000 reverses: the close credits 999.96 + 153.84 − 10.15344 = 1143.64656
	// (balance 10133.68696); the short takes 10 % of that × 10 / 66,000 = 0.15354 BTC:
	// notional 10133.64, margin 1013.364, fee 10.13364 → balance 9110.18932.
	h.px.set(exchange.Futures, "BTC/USDT", "66000")
	res := h.ok(h.send(`{"action":"short","symbol":"BTCUSDT"}`))
	if !strings.Contains(res.Message, "closed long") || !strings.Contains(res.Message, "opened short") {
		t.Fatalf("message = %q", res.Message)
	}
	testkit.EqualD(t, "reversal order amount", res.Order.Amount.Decimal, "0.15354")
	testkit.EqualD(t, "balance", h.balance(), "9110.18932")
	p = h.position("BTC/USDT")
	if p == nil || p.Side != position.Short {
		t.Fatalf("position = %+v", p)
	}
	testkit.EqualD(t, "short size", p.Size.Decimal, "0.15354")
	testkit.EqualD(t, "short margin", p.Margin.Decimal, "1013.364")
	tr := h.trades()
	if len(tr) != 1 || tr[0].Reason != "reversal" {
		t.Fatalf("trades = %+v", tr)
	}
	testkit.EqualD(t, "reversal net", tr[0].NetPnl.Decimal, "133.68696") // 153.84 − 9.9996 − 10.15344
	if h.exchangeOrders() != 3 {
		t.Fatalf("%d exchange orders, want 3", h.exchangeOrders())
	}
}

func TestReversalsOffRejects(t *testing.T) {
	h := newHarness(t, func(b *registry.Bot) { b.Market, b.Reversals = "futures", false })
	h.px.set(exchange.Futures, "ETH/USDT", "3000")
	h.ok(h.send(`{"action":"buy","symbol":"ETHUSDT","size":"1"}`))
	before := h.balance()
	res := h.fails(h.send(`{"action":"sell","symbol":"ETHUSDT","size":"1"}`), errs.InvalidAction)
	if !strings.Contains(res.Error, "does not reverse") {
		t.Fatalf("error = %q", res.Error)
	}
	if !h.balance().Equal(before) || h.position("ETH/USDT").Side != position.Long {
		t.Fatal("a refused reversal traded")
	}
}

func TestEntryOnAnOpenPositionWithoutDCAIsRefused(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT"}`))
	res := h.fails(h.send(`{"action":"buy","symbol":"BTCUSDT"}`), errs.InvalidAction)
	if !strings.Contains(res.Error, "dcaLevel 2") {
		t.Fatalf("error = %q", res.Error)
	}
}

func TestDCA(t *testing.T) {
	dca := func(b *registry.Bot) { b.DCA = registry.DCA{Enabled: true, MaxLevels: 3} }
	t.Run("disabled", func(t *testing.T) {
		h := newHarness(t, nil)
		h.px.set(exchange.Spot, "BTC/USDT", "60000")
		h.fails(h.send(`{"action":"buy","symbol":"BTCUSDT","dca":true}`), errs.DCADisabled)
		h.fails(h.send(`{"action":"buy","symbol":"BTCUSDT","dcaLevel":2}`), errs.DCADisabled)
	})
	t.Run("no position", func(t *testing.T) {
		h := newHarness(t, dca)
		h.px.set(exchange.Spot, "BTC/USDT", "60000")
		h.fails(h.send(`{"action":"buy","symbol":"BTCUSDT","dca":true,"dcaLevel":2}`), errs.DCANoPosition)
	})
	t.Run("levels", func(t *testing.T) {
		h := newHarness(t, dca)
		h.px.set(exchange.Spot, "BTC/USDT", "60000")
		// Level 1 creates: 0.01 × 60000 = 600 + 0.6 fee.
		h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01","dca":true,"dcaLevel":1}`))
		p := h.position("BTC/USDT")
		if p.DCALevel != 1 {
			t.Fatalf("level = %d", p.DCALevel)
		}
		testkit.EqualD(t, "balance", h.balance(), "9399.4")
		h.fails(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01","dca":true,"dcaLevel":3}`), errs.DCAInvalidLevel)
		h.fails(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01","dca":true,"dcaLevel":1}`), errs.DCAInvalidLevel)
		h.fails(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01","dca":true,"dcaLevel":4}`), errs.DCAMaxLevels)
		// Level 2 at 62,000 adds and re-averages: (600 + 620) / 0.02 = 61,000.
		h.px.set(exchange.Spot, "BTC/USDT", "62000")
		res := h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01","dca":true,"dcaLevel":2}`))
		if !strings.Contains(res.Message, "DCA level 2") {
			t.Fatalf("message = %q", res.Message)
		}
		p = h.position("BTC/USDT")
		testkit.EqualD(t, "size", p.Size.Decimal, "0.02")
		testkit.EqualD(t, "entry", p.EntryPrice(), "61000")
		testkit.EqualD(t, "entry fees", p.EntryFees.Decimal, "1.22")
		if p.DCALevel != 2 {
			t.Fatalf("level = %d", p.DCALevel)
		}
		testkit.EqualD(t, "balance", h.balance(), "8778.78") // 9399.4 − 620 − 0.62
		h.fails(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01","dca":true,"dcaLevel":2}`), errs.DCAInvalidLevel)
		h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01","dca":true,"dcaLevel":3}`))
		h.fails(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01","dca":true,"dcaLevel":4}`), errs.DCAMaxLevels)
		// A DCA sell on spot has no short to add to.
		h.fails(h.send(`{"action":"sell","symbol":"BTCUSDT","dca":true,"dcaLevel":2}`), errs.DCANoPosition)
	})
	t.Run("percent stop follows the averaged entry", func(t *testing.T) {
		h := newHarness(t, dca)
		h.px.set(exchange.Spot, "BTC/USDT", "60000")
		h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01","dca":true,"stopLoss":"5%"}`))
		testkit.EqualD(t, "stop", (h.position("BTC/USDT").StopLoss.Price).Decimal, "57000")
		h.px.set(exchange.Spot, "BTC/USDT", "62000")
		h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01","dca":true,"dcaLevel":2}`))
		testkit.EqualD(t, "stop after level 2", (h.position("BTC/USDT").StopLoss.Price).Decimal, "57950") // 61000 × 0.95
	})
}

func TestCloses(t *testing.T) {
	h := newHarness(t, func(b *registry.Bot) { b.Market, b.Leverage = "futures", 5 })
	h.px.set(exchange.Futures, "ETH/USDT", "3000")
	h.px.set(exchange.Futures, "BTC/USDT", "60000")
	h.fails(h.send(`{"action":"close_long","symbol":"ETHUSDT"}`), errs.PositionNotFound)
	h.fails(h.send(`{"action":"close","symbol":"ETHUSDT"}`), errs.PositionNotFound)
	h.fails(h.send(`{"action":"close"}`), errs.PositionNotFound)

	h.ok(h.send(`{"action":"sell","symbol":"ETHUSDT","size":"1"}`)) // short 1 ETH
	h.fails(h.send(`{"action":"close_long","symbol":"ETHUSDT"}`), errs.PositionNotFound)
	// Close half with a size, then the rest.
	res := h.ok(h.send(`{"action":"exit_short","symbol":"ETHUSDT","size":"50%"}`))
	testkit.EqualD(t, "half", res.Order.Amount.Decimal, "0.5")
	testkit.EqualD(t, "left", (h.position("ETH/USDT").Size).Decimal, "0.5")
	h.ok(h.send(`{"action":"close_short","symbol":"ETHUSDT"}`))
	if h.position("ETH/USDT") != nil {
		t.Fatal("short still open")
	}

	// close without a symbol (and no fixed pair) flattens every position of the bot.
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01"}`))
	h.ok(h.send(`{"action":"sell","symbol":"ETHUSDT","size":"1"}`))
	res = h.ok(h.send(`{"action":"flatten"}`))
	if !strings.Contains(res.Message, "BTC/USDT") || !strings.Contains(res.Message, "ETH/USDT") {
		t.Fatalf("message = %q", res.Message)
	}
	if h.position("ETH/USDT") != nil || h.position("BTC/USDT") != nil {
		t.Fatal("positions left")
	}
	// Flat again: everything margin-reserved came back.
	st, _ := h.rdb.HGet(h.ctx, store.PaperAccount("acct-1"), "margin").Result()
	testkit.EqualD(t, "account margin", testkit.D(st), "0")
}

func TestSpotSellWithNothingHeld(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	h.fails(h.send(`{"action":"sell","symbol":"BTCUSDT"}`), errs.PositionNotFound)
	h.fails(h.send(`{"action":"close","symbol":"BTCUSDT"}`), errs.PositionNotFound)
	// Partial sells reduce the holding.
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01"}`))
	h.ok(h.send(`{"action":"sell","symbol":"BTCUSDT","size":"0.004"}`))
	testkit.EqualD(t, "left", (h.position("BTC/USDT").Size).Decimal, "0.006")
	h.ok(h.send(`{"action":"sell","symbol":"BTCUSDT","size":"5"}`)) // capped at the holding
	if h.position("BTC/USDT") != nil {
		t.Fatal("holding left")
	}
}

func TestGates(t *testing.T) {
	cases := []struct {
		name string
		edit func(*registry.Bot)
		body string
		code errs.Code
	}{
		{"missing symbol", nil, `{"action":"buy"}`, errs.MissingSymbol},
		{"unknown symbol", nil, `{"action":"buy","symbol":"PEPEUSDT"}`, errs.InvalidSymbol},
		{"paused", func(b *registry.Bot) { b.Availability, b.PausedReason = "paused", "Manual" }, `{"action":"buy","symbol":"BTCUSDT"}`, errs.BotPaused},
		{"disabled", func(b *registry.Bot) { b.Availability = "disabled" }, `{"action":"buy","symbol":"BTCUSDT"}`, errs.BotDisabled},
		{"exchange disconnected", func(b *registry.Bot) {
			b.Availability, b.DisabledCode, b.DisabledReason = "disabled", registry.DisabledExchangeDisconnected, "ExchangeConnectionNotReady"
		},
			`{"action":"buy","symbol":"BTCUSDT"}`, errs.ExchangeDisconnected},
		{"someone else's account", func(b *registry.Bot) { b.Owner = "mallory@x.io" }, `{"action":"buy","symbol":"BTCUSDT"}`, errs.BotDisabled},
		{"missing account", func(b *registry.Bot) { b.Account.ID = "acct-gone" }, `{"action":"buy","symbol":"BTCUSDT"}`, errs.BotDisabled},
		{"live account", func(b *registry.Bot) {
			b.Account = registry.Account{Kind: registry.AccountExchange, Name: "bn", ID: "x"}
		},
			`{"action":"buy","symbol":"BTCUSDT"}`, errs.ExchangeDisconnected},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t, c.edit)
			h.px.set(exchange.Spot, "BTC/USDT", "65000")
			h.fails(h.send(c.body), c.code)
			testkit.EqualD(t, "balance", h.balance(), "10000")
		})
	}
	t.Run("deleted", func(t *testing.T) {
		h := newHarness(t, nil)
		if err := h.reg.Remove(h.ctx, h.bot.ID, time.Hour); err != nil {
			t.Fatal(err)
		}
		h.fails(h.send(`{"action":"buy","symbol":"BTCUSDT"}`), errs.BotDeleted)
	})
}

func TestHandlingTheSameEnvelopeTwiceTradesOnce(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	env := h.envelope(`{"action":"buy","symbol":"BTCUSDT"}`)
	first := h.ok(h.run(env))
	second := h.ok(h.run(env))
	if first.Order.OrderID != second.Order.OrderID || first.Timestamp != second.Timestamp {
		t.Fatalf("second result differs: %+v vs %+v", second, first)
	}
	if h.exchangeOrders() != 1 {
		t.Fatalf("%d exchange orders", h.exchangeOrders())
	}
	testkit.EqualD(t, "balance", h.balance(), "8999.3003")
}

func TestDeathBetweenFillAndBookingRecordsOnce(t *testing.T) {
	h := newHarness(t, func(b *registry.Bot) { b.Market, b.Leverage = "futures", 10 })
	h.px.set(exchange.Futures, "BTC/USDT", "65000")
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT"}`))

	// The reversal dies after each exchange fill, before the booking: once per leg (a
	// paper leg's retry places again and finds the fill under its client order ID).
	crash := errors.New("killed")
	crashed := map[string]bool{}
	executor.SetAfterPlace(h.ex, func(leg string) error {
		if crashed[leg] {
			return nil
		}
		crashed[leg] = true
		return crash
	})
	h.px.set(exchange.Futures, "BTC/USDT", "66000")
	env := h.envelope(`{"action":"sell","symbol":"BTCUSDT"}`)
	if err := h.ex.Handle(h.ctx, env); !errors.Is(err, crash) {
		t.Fatalf("handle = %v, want the crash", err)
	}
	// The close filled at the exchange (money moved) but is not booked.
	if h.exchangeOrders() != 2 || h.position("BTC/USDT").Side != position.Long {
		t.Fatal("unexpected state after the crash")
	}
	testkit.EqualD(t, "balance after the close", h.balance(), "10133.68696")
	// The next attempt dies after the open leg.
	if err := h.ex.Handle(h.ctx, env); !errors.Is(err, crash) {
		t.Fatalf("handle = %v, want the crash", err)
	}
	if h.exchangeOrders() != 3 {
		t.Fatalf("%d exchange orders", h.exchangeOrders())
	}
	// The retry after a restart books both legs once and places nothing.
	executor.SetAfterPlace(h.ex, nil)
	h.px.set(exchange.Futures, "BTC/USDT", "70000") // a re-placed order would show this price
	res := h.ok(h.run(env))
	if h.exchangeOrders() != 3 {
		t.Fatalf("%d exchange orders after the retry", h.exchangeOrders())
	}
	testkit.EqualD(t, "fill price", res.Order.AvgPrice.Decimal, "66000")
	testkit.EqualD(t, "balance", h.balance(), "9110.18932")
	p := h.position("BTC/USDT")
	if p.Side != position.Short {
		t.Fatalf("position = %+v", p)
	}
	testkit.EqualD(t, "short size", p.Size.Decimal, "0.15354")
	if tr := h.trades(); len(tr) != 1 {
		t.Fatalf("%d trades", len(tr))
	}
	// The stored result is the signal's guard from now on: the progress record (plan, done
	// markers) went with the last booking, and handling again only re-publishes.
	if h.rdb.Exists(h.ctx, store.SignalProgress(env.BotID, env.SignalID)).Val() != 0 {
		t.Fatal("the progress record outlived the stored result")
	}
	again := h.ok(h.run(env))
	if again.Order.OrderID != res.Order.OrderID || h.exchangeOrders() != 3 || len(h.trades()) != 1 {
		t.Fatal("re-handling traded or booked again")
	}
	orders, _ := position.NewBook(h.rdb).Orders(h.ctx, h.bot.ID, 0)
	if len(orders) != 3 {
		t.Fatalf("%d order records", len(orders))
	}
	for _, o := range orders {
		if o.Status != exchange.StatusFilled {
			t.Fatalf("order %s is %s", o.ClientOrderID, o.Status)
		}
	}
}

func TestExitPricesOnEntry(t *testing.T) {
	h := newHarness(t, func(b *registry.Bot) { b.StopLoss, b.TakeProfit = "2%", "70000" })
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	h.fails(h.send(`{"action":"buy","symbol":"BTCUSDT","stopLoss":"66000"}`), errs.InvalidPrice)
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT"}`))
	p := h.position("BTC/USDT")
	testkit.EqualD(t, "stop (bot default 2%)", p.StopLoss.Price.Decimal, "63700")
	testkit.EqualD(t, "take (bot default)", p.TakeProfit.Price.Decimal, "70000")
	w, _ := position.Watched(h.ctx, h.rdb)
	if len(w) != 1 || w[0].PositionID != p.ID {
		t.Fatalf("watch = %+v", w)
	}
}

func TestQueuedEnvelopeDecodes(t *testing.T) {
	// The executor reads what queue.Enqueue wrote.
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	env := h.envelope(`{"action":"buy","symbol":"BTCUSDT","price":"64000.009"}`)
	if _, err := queue.Enqueue(h.ctx, h.rdb, env); err != nil {
		t.Fatal(err)
	}
	got := readStream(t, h, queue.PriorityWebhook)
	res := h.ok(h.run(got[0]))
	if res.Order.Type != "limit" {
		t.Fatalf("order = %+v", res.Order)
	}
	testkit.EqualD(t, "limit price rounded to the tick", res.Order.AvgPrice.Decimal, "64000")
}

func readStream(t testing.TB, h *harness, p queue.Priority) []queue.Envelope {
	t.Helper()
	out, _ := streamEntries(t, h, queue.StreamOf(h.bot.ID, p))
	return out
}

// streamEntries are the envelopes in a stream and their entry IDs.
func streamEntries(t testing.TB, h *harness, stream string) ([]queue.Envelope, []string) {
	t.Helper()
	msgs, err := h.rdb.XRange(h.ctx, stream, "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []queue.Envelope
	var ids []string
	for _, m := range msgs {
		var env queue.Envelope
		if err := json.Unmarshal([]byte(m.Values[queue.EnvelopeField].(string)), &env); err != nil {
			t.Fatal(err)
		}
		out, ids = append(out, env), append(ids, m.ID)
	}
	return out, ids
}
