package trading_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/history"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
	"github.com/sigops/sigops/runtime/trading"
)

type fixedPrice decimal.Decimal

func (p fixedPrice) Price(context.Context, exchange.Kind, string) (decimal.Decimal, error) {
	return decimal.Decimal(p), nil
}

func setup(t testing.TB) (context.Context, redis.UniversalClient, *trading.API, *executor.Executor) {
	t.Helper()
	ctx := context.Background()
	_, rdb := storetest.New(t)
	if _, err := paper.NewAccounts(rdb).Ensure(ctx, paper.Config{ID: "acct", Owner: "a@x.io", Currency: "USDT",
		InitialBalance: decimal.NewFromInt(10000), FeeRate: decimal.RequireFromString("0.001")}); err != nil {
		t.Fatal(err)
	}
	bot := registry.Bot{ID: "bot-1", Owner: "a@x.io", Market: "futures", PositionSize: "10%", Leverage: 5,
		Account: registry.Account{Kind: registry.AccountPaper, Name: "p", ID: "acct"}, Availability: "active",
		Reversals: true, DCA: registry.DCA{MaxLevels: 5}, Risk: registry.Risk{MaxExposure: "0.5"}}
	if err := registry.New(rdb).Project(ctx, bot, "hook"); err != nil {
		t.Fatal(err)
	}
	px := fixedPrice(decimal.NewFromInt(3000))
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	return ctx, rdb, trading.New(rdb, nil, px), executor.New(executor.Deps{Redis: rdb, Prices: px, Logger: quiet})
}

// drain runs every queued envelope of the bot at priority p through the executor.
func drain(t *testing.T, ctx context.Context, rdb redis.UniversalClient, ex *executor.Executor, p queue.Priority) int {
	t.Helper()
	msgs, err := rdb.XRange(ctx, queue.StreamOf("bot-1", p), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		var env queue.Envelope
		if err := json.Unmarshal([]byte(m.Values[queue.EnvelopeField].(string)), &env); err != nil {
			t.Fatal(err)
		}
		if err := ex.Handle(ctx, env); err != nil {
			t.Fatal(err)
		}
		rdb.XDel(ctx, queue.StreamOf("bot-1", p), m.ID)
	}
	return len(msgs)
}

func TestManualOrders(t *testing.T) {
	ctx, rdb, api, ex := setup(t)
	buy := order.Request{Type: exchange.Market, Side: exchange.SideBuy, Symbol: "ETH/USDT", Amount: httpapi.NumOrNil(testkit.DP("0.5"))}
	id, err := api.PlaceManual(ctx, "bot-1", buy)
	if err != nil {
		t.Fatal(err)
	}
	// "m-" and a UUID, in the bot's partition.
	if _, uerr := uuid.Parse(strings.TrimPrefix(id, "m-")); !strings.HasPrefix(id, "m-") || uerr != nil || !queue.InBotPartition("bot-1", id) {
		t.Fatalf("manual signal ID %s: want m-<uuid> in the bot's partition", id)
	}
	if st, _ := api.Result(ctx, id); st.Found {
		t.Fatal("result before execution")
	}
	if drain(t, ctx, rdb, ex, queue.PriorityStrategyEntry) != 1 {
		t.Fatal("entry not queued at priority 3")
	}
	st, err := api.Result(ctx, id)
	res, ok := st.Result, st.Found
	if err != nil || !ok || !res.Success || !res.Order.Amount.Equal(*testkit.DP("0.5")) {
		t.Fatalf("result = %+v %v %v", res, ok, err)
	}

	// A stop-loss and a reducing sell go at priority 1.
	if _, err := api.PlaceManual(ctx, "bot-1", order.Request{Type: exchange.StopLoss, Symbol: "ETH/USDT",
		StopPrice: httpapi.NumOrNil(testkit.DP("2700")), ClosePercent: httpapi.NumOrNil(testkit.DP("100"))}); err != nil {
		t.Fatal(err)
	}
	sell := order.Request{Type: exchange.Market, Side: exchange.SideSell, Symbol: "ETH/USDT", Amount: httpapi.NumOrNil(testkit.DP("0.2"))}
	sellID, err := api.PlaceManual(ctx, "bot-1", sell)
	if err != nil {
		t.Fatal(err)
	}
	if drain(t, ctx, rdb, ex, queue.PriorityManualClose) != 2 {
		t.Fatal("closes not queued at priority 1")
	}
	if st, _ := api.Result(ctx, sellID); !st.Result.Success {
		t.Fatalf("sell = %+v", res)
	}
	pos, err := api.Positions(ctx, "bot-1")
	if err != nil || len(pos) != 1 {
		t.Fatalf("positions = %+v %v", pos, err)
	}
	p := pos[0]
	// A manual sell opposite to the long reduces it (no reversal): 0.5 − 0.2.
	if p.Side != "long" || !p.Size.Equal(*testkit.DP("0.3")) || p.StopLoss == nil || !p.StopLoss.Equal(*testkit.DP("2700")) ||
		p.Leverage != 5 || p.LiquidationPrice == nil || !p.CurrentPrice.Equal(*testkit.DP("3000")) {
		t.Fatalf("position = %+v", p)
	}
	orders, err := api.Orders(ctx, "bot-1", 10)
	if err != nil || len(orders) != 2 || orders[0].Side != exchange.SideSell {
		t.Fatalf("orders = %+v %v", orders, err)
	}
	page, err := api.Trades(ctx, "bot-1", history.TradeQuery{Limit: 10})
	trades := page.Trades
	if err != nil || len(trades) != 1 || trades[0].Reason != "manual" {
		t.Fatalf("trades = %+v %v", trades, err)
	}
	m, err := api.RiskMetrics(ctx, "bot-1")
	if err != nil || m.BotID != "bot-1" || !m.CurrentExposure.IsPositive() || !m.MaxExposureAllowed.Equal(*testkit.DP("0.5")) || m.RiskLevel == "" {
		t.Fatalf("metrics = %+v %v", m, err)
	}
}

func TestPlaceManualRefusals(t *testing.T) {
	ctx, rdb, api, _ := setup(t)
	ok := order.Request{Type: exchange.Market, Side: exchange.SideBuy, Symbol: "ETH/USDT", Amount: httpapi.NumOrNil(testkit.DP("0.5"))}
	cases := []struct {
		name  string
		bot   string
		req   order.Request
		setup func()
		code  errs.Code
	}{
		{"invalid amount", "bot-1", order.Request{Type: exchange.Market, Side: exchange.SideBuy, Symbol: "ETH/USDT", Amount: httpapi.NumOrNil(testkit.DP("-1"))}, nil, errs.InvalidAmount},
		{"invalid symbol", "bot-1", order.Request{Type: exchange.Market, Side: exchange.SideBuy, Symbol: "ETHUSDT", Amount: httpapi.NumOrNil(testkit.DP("1"))}, nil, errs.InvalidSymbol},
		{"unknown bot", "bot-x", ok, nil, errs.BotDeleted},
		{"runtime pause", "bot-1", ok, func() {
			_, _ = registry.New(rdb).Pause(ctx, "bot-1", registry.Pause{Reason: registry.PauseErrors}, api.Now())
		}, errs.BotPaused},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.setup != nil {
				c.setup()
			}
			if _, err := api.PlaceManual(ctx, c.bot, c.req); errs.CodeOf(err) != c.code {
				t.Fatalf("err = %v, want %s", err, c.code)
			}
		})
	}
}

// A disabled bot refuses manual orders with the same code a webhook signal gets: an
// exchange connection that is missing or not Ready is EXCHANGE_DISCONNECTED (the user fixes
// the connection), any other cause BOT_DISABLED. Nothing is queued either way.
func TestPlaceManualDisabledBot(t *testing.T) {
	ctx, rdb, api, _ := setup(t)
	ok := order.Request{Type: exchange.Market, Side: exchange.SideBuy, Symbol: "ETH/USDT", Amount: httpapi.NumOrNil(testkit.DP("0.5"))}
	reg := registry.New(rdb)
	bot, err := reg.Get(ctx, "bot-1")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		disabled registry.DisabledCode
		reason   string
		code     errs.Code
	}{
		{registry.DisabledExchangeDisconnected, "ExchangeConnectionNotReady", errs.ExchangeDisconnected},
		{registry.DisabledExchangeDisconnected, "ExchangeConnectionNotFound", errs.ExchangeDisconnected},
		{registry.DisabledTierNotAllowed, "OwnerLacksLiveTrading", errs.BotDisabled},
		{registry.DisabledTierUnavailable, "OwnerTierUnavailable", errs.BotDisabled},
		{registry.DisabledAccountMissing, "PaperAccountNotFound", errs.BotDisabled},
		// A projection without a code is answered by its exact reason.
		{"", "ExchangeConnectionNotReady", errs.ExchangeDisconnected},
		{"", "PaperAccountNotFound", errs.BotDisabled},
	} {
		bot.Availability, bot.DisabledCode, bot.DisabledReason = "disabled", c.disabled, c.reason
		if err := reg.Project(ctx, bot, "hook"); err != nil {
			t.Fatal(err)
		}
		if _, err := api.PlaceManual(ctx, "bot-1", ok); errs.CodeOf(err) != c.code {
			t.Errorf("disabled by %s: err = %v, want %s", c.reason, err, c.code)
		}
	}
	for _, p := range []queue.Priority{queue.PriorityManualClose, queue.PriorityStrategyEntry} {
		if n := rdb.XLen(ctx, queue.StreamOf("bot-1", p)).Val(); n != 0 {
			t.Fatalf("%d orders queued for a disabled bot at priority %d", n, p)
		}
	}
}

// Close and CloseAll are manual signals at priority 1: a close takes a share of the
// position open when it runs, close-all one leg per symbol, and both run on a paused bot.
func TestManualCloseAndCloseAll(t *testing.T) {
	ctx, rdb, api, ex := setup(t)
	for _, sym := range []string{"ETH/USDT", "BTC/USDT"} {
		if _, err := api.PlaceManual(ctx, "bot-1", order.Request{Type: exchange.Market, Side: exchange.SideBuy,
			Symbol: sym, Amount: httpapi.NumOrNil(testkit.DP("0.5"))}); err != nil {
			t.Fatal(err)
		}
	}
	if drain(t, ctx, rdb, ex, queue.PriorityStrategyEntry) != 2 {
		t.Fatal("entries not queued at priority 3")
	}
	// The bot is paused for risk; a new entry is refused, exits are not.
	if _, err := registry.New(rdb).Pause(ctx, "bot-1", registry.Pause{Reason: registry.PauseRisk}, api.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := api.PlaceManual(ctx, "bot-1", order.Request{Type: exchange.Market, Side: exchange.SideBuy,
		Symbol: "ETH/USDT", Amount: httpapi.NumOrNil(testkit.DP("0.1"))}); errs.CodeOf(err) != errs.BotPaused {
		t.Fatalf("entry on a paused bot: %v", err)
	}
	partID, err := api.Close(ctx, "bot-1", "ETH/USDT", testkit.DP("40"))
	if err != nil {
		t.Fatal(err)
	}
	if drain(t, ctx, rdb, ex, queue.PriorityManualClose) != 1 {
		t.Fatal("close not queued at priority 1")
	}
	if st, _ := api.Result(ctx, partID); !st.Found || !st.Result.Success {
		t.Fatalf("close 40%% = %+v", st)
	}
	pos, err := api.Positions(ctx, "bot-1")
	if err != nil || len(pos) != 2 {
		t.Fatalf("positions = %+v %v", pos, err)
	}
	for _, p := range pos {
		// 40 % of 0.5 ETH is 0.2, leaving 0.3; BTC untouched.
		want := map[string]string{"ETH/USDT": "0.3", "BTC/USDT": "0.5"}[p.Symbol]
		if !p.Size.Equal(*testkit.DP(want)) {
			t.Fatalf("%s size %s, want %s", p.Symbol, p.Size, want)
		}
	}

	allID, err := api.CloseAll(ctx, "bot-1")
	if err != nil {
		t.Fatal(err)
	}
	drain(t, ctx, rdb, ex, queue.PriorityManualClose)
	if st, _ := api.Result(ctx, allID); !st.Found || !st.Result.Success {
		t.Fatalf("close-all = %+v", st)
	}
	if pos, err := api.Positions(ctx, "bot-1"); err != nil || len(pos) != 0 {
		t.Fatalf("positions after close-all = %+v %v", pos, err)
	}
	page, err := api.Trades(ctx, "bot-1", history.TradeQuery{Limit: 10})
	trades := page.Trades
	if err != nil || len(trades) != 3 {
		t.Fatalf("trades = %+v %v", trades, err)
	}
	for _, tr := range trades {
		if tr.Reason != "manual" {
			t.Fatalf("trade reason %q, want manual", tr.Reason)
		}
	}

	// Nothing left: the close fails in its result with POSITION_NOT_FOUND (3002).
	noneID, err := api.Close(ctx, "bot-1", "ETH/USDT", nil)
	if err != nil {
		t.Fatal(err)
	}
	drain(t, ctx, rdb, ex, queue.PriorityManualClose)
	st, _ := api.Result(ctx, noneID)
	if !st.Found || st.Result.Success || st.Result.Code != errs.PositionNotFound || errs.PositionNotFound.Numeric() != 3002 {
		t.Fatalf("close with nothing open = %+v", st)
	}
}

func TestManualCloseValidation(t *testing.T) {
	ctx, _, api, _ := setup(t)
	for _, c := range []struct {
		name string
		req  order.Request
		code errs.Code
	}{
		{"side on a close", order.Request{Type: order.Close, Symbol: "ETH/USDT", Side: exchange.SideSell}, errs.InvalidAction},
		{"amount on a close", order.Request{Type: order.Close, Amount: httpapi.NumOrNil(testkit.DP("1"))}, errs.InvalidAction},
		{"zero percent", order.Request{Type: order.Close, ClosePercent: httpapi.NumOrNil(testkit.DP("0"))}, errs.InvalidAmount},
		{"over 100 percent", order.Request{Type: order.Close, ClosePercent: httpapi.NumOrNil(testkit.DP("100.5"))}, errs.InvalidAmount},
		{"bad symbol", order.Request{Type: order.Close, Symbol: "ethusdt"}, errs.InvalidSymbol},
	} {
		if _, err := api.PlaceManual(ctx, "bot-1", c.req); errs.CodeOf(err) != c.code {
			t.Errorf("%s: err = %v, want %s", c.name, err, c.code)
		}
	}
	if _, err := api.Close(ctx, "bot-1", "", nil); errs.CodeOf(err) != errs.InvalidSymbol {
		t.Errorf("close without a symbol: %v", err)
	}
}

// streamLen is how many envelopes wait in bot-1's stream at priority p.
func streamLen(t *testing.T, ctx context.Context, rdb redis.UniversalClient, p queue.Priority) int64 {
	t.Helper()
	n, err := rdb.XLen(ctx, queue.StreamOf("bot-1", p)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// The same idempotency key twice, even from two replicas at once, queues one order and
// answers its signal ID; another request under the key is refused; another user's key of
// the same text is another key.
func TestPlaceManualOnce(t *testing.T) {
	ctx, rdb, api, ex := setup(t)
	other := trading.New(rdb, nil, nil) // a second replica
	buy := order.Request{Type: exchange.Market, Side: exchange.SideBuy, Symbol: "ETH/USDT", Amount: httpapi.NumOrNil(testkit.DP("0.5")),
		StopLoss: httpapi.NumOrNil(testkit.DP("2700"))}
	answers := make(chan trading.Placed, 2)
	failures := make(chan error, 2)
	for _, a := range []*trading.API{api, other} {
		go func() {
			p, err := a.PlaceManualOnce(ctx, "bot-1", "user-a", "key-1", buy)
			if err != nil {
				failures <- err
				return
			}
			answers <- p
		}()
	}
	var got []trading.Placed
	for range 2 {
		select {
		case err := <-failures:
			t.Fatal(err)
		case p := <-answers:
			got = append(got, p)
		}
	}
	if got[0].SignalID != got[1].SignalID || got[0].Repeat == got[1].Repeat || streamLen(t, ctx, rdb, queue.PriorityStrategyEntry) != 1 {
		t.Fatalf("answers %+v; %d queued, want one order", got, streamLen(t, ctx, rdb, queue.PriorityStrategyEntry))
	}
	first := got[0].SignalID

	// After execution a repeat still answers the first order, even on a paused bot.
	drain(t, ctx, rdb, ex, queue.PriorityStrategyEntry)
	if _, err := registry.New(rdb).Pause(ctx, "bot-1", registry.Pause{Reason: registry.PauseRisk}, api.Now()); err != nil {
		t.Fatal(err)
	}
	p, err := api.PlaceManualOnce(ctx, "bot-1", "user-a", "key-1", buy)
	if err != nil || p.SignalID != first || !p.Repeat {
		t.Fatalf("repeat = %+v %v, want %s", p, err, first)
	}
	st, err := api.Result(ctx, first)
	if err != nil || !st.Found || !st.Result.Success || !st.Result.Order.FilledAmount.Equal(testkit.D("0.5")) {
		t.Fatalf("result %+v %v", st, err)
	}
	// The stop-loss the order carried is the position's exit.
	pos, err := api.Positions(ctx, "bot-1")
	if err != nil || len(pos) != 1 || pos[0].StopLoss == nil || !pos[0].StopLoss.Equal(testkit.D("2700")) {
		t.Fatalf("positions %+v %v", pos, err)
	}

	// Another amount under the same key: refused, naming the first order; nothing queued.
	more := buy
	more.Amount = httpapi.NumOrNil(testkit.DP("0.6"))
	_, err = api.PlaceManualOnce(ctx, "bot-1", "user-a", "key-1", more)
	e, ok := errs.As(err)
	if !ok || e.Code != errs.InvalidParameter || e.Details["signalId"] != first || e.Details["parameter"] != "idempotencyKey" {
		t.Fatalf("reused key: %v", err)
	}
	// Another user's key of the same text is its own (the bot is paused: entries refused).
	if _, err := api.PlaceManualOnce(ctx, "bot-1", "user-b", "key-1", buy); errs.CodeOf(err) != errs.BotPaused {
		t.Fatalf("user-b's key-1 on a paused bot: %v", err)
	}
	if n := streamLen(t, ctx, rdb, queue.PriorityStrategyEntry); n != 0 {
		t.Fatalf("%d queued after refusals", n)
	}
}

// Cancel queues a cancel request at priority 1; WaitResult answers not Found when nothing
// executes within the bound, and the result once the executor stores it.
func TestCancelAndWaitResult(t *testing.T) {
	ctx, rdb, api, ex := setup(t)
	id, err := api.Cancel(ctx, "bot-1", "sg-0123")
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := rdb.XRange(ctx, queue.StreamOf("bot-1", queue.PriorityManualClose), "-", "+").Result()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("queued %v %v", msgs, err)
	}
	var env queue.Envelope
	if err := json.Unmarshal([]byte(msgs[0].Values[queue.EnvelopeField].(string)), &env); err != nil {
		t.Fatal(err)
	}
	if env.SignalID != id || env.Source != queue.SourceManual || string(env.Signal) != `{"type":"cancel","symbol":"","clientOrderId":"sg-0123"}` {
		t.Fatalf("envelope %+v %s", env, env.Signal)
	}
	if _, err := api.Cancel(ctx, "bot-1", ""); errs.CodeOf(err) != errs.InvalidParameter {
		t.Fatalf("cancel without an order: %v", err)
	}
	if st, err := api.WaitResult(ctx, id, 0); err != nil || st.Found {
		t.Fatalf("before execution: %+v %v", st, err)
	}
	type waited struct {
		st  result.Stored
		err error
	}
	wait := make(chan waited, 1)
	go func() {
		st, err := api.WaitResult(ctx, id, 10*time.Second)
		wait <- waited{st, err}
	}()
	drain(t, ctx, rdb, ex, queue.PriorityManualClose)
	w := <-wait
	st, err := w.st, w.err
	if err != nil || !st.Found || st.Result.Code != errs.NotFound {
		t.Fatalf("after execution: %+v %v", st, err)
	}
}

// Result and Results answer a result stored under the legacy key (by an older version) as
// well as one under the partition key, Results in one round trip.
func TestResultsReadLegacyResults(t *testing.T) {
	ctx, rdb, api, _ := setup(t)
	id, err := api.PlaceManual(ctx, "bot-1", order.Request{Type: order.Close})
	if err != nil {
		t.Fatal(err)
	}
	if err := queue.PublishResult(ctx, rdb, queue.Envelope{SignalID: id, BotID: "bot-1"}, result.Result{Success: true, Message: "new"}); err != nil {
		t.Fatal(err)
	}
	if err := rdb.Set(ctx, store.LegacySignalResult("m-old"), `{"signalId":"m-old","success":true,"message":"old"}`, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if st, err := api.Result(ctx, "m-old"); err != nil || !st.Found || st.Result.Message != "old" {
		t.Fatalf("legacy result = %+v, %v", st, err)
	}
	trips := &storetest.Trips{}
	rdb.AddHook(trips)
	got, err := api.Results(ctx, []string{id, "m-old", "m-none"})
	if err != nil || len(got) != 3 || got[0].Result.Message != "new" || got[1].Result.Message != "old" || got[2].Found {
		t.Fatalf("results = %+v, %v", got, err)
	}
	if n := len(trips.Take()); n != 1 {
		t.Fatalf("%d round trips, want 1", n)
	}
}

// Above Redis's memory watermark a new manual order is refused before anything is written
// (SERVICE_UNAVAILABLE, Retry-After), as a webhook signal is; an exit still goes through.
func TestManualOrdersAtTheMemoryWatermark(t *testing.T) {
	ctx, rdb, api, ex := setup(t)
	buy := order.Request{Type: exchange.Market, Side: exchange.SideBuy, Symbol: "ETH/USDT", Amount: httpapi.NumOrNil(testkit.DP("0.5"))}
	if _, err := api.PlaceManual(ctx, "bot-1", buy); err != nil {
		t.Fatal(err)
	}
	if drain(t, ctx, rdb, ex, queue.PriorityStrategyEntry) != 1 {
		t.Fatal("entry not queued")
	}
	used, err := storetest.UsedMemory(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	// Half of maxmemory free, and 90 % asked for: above the watermark, while Redis itself
	// still takes writes.
	if err := storetest.ConfigSet(ctx, rdb, "maxmemory", fmt.Sprint(2*used)); err != nil {
		t.Fatal(err)
	}
	api.WithMemoryGuard(store.NewMemoryGuard(rdb, store.MemoryOptions{Headroom: 0.9}))
	_, err = api.PlaceManual(ctx, "bot-1", buy)
	if e, ok := errs.As(err); !ok || e.Code != errs.ServiceUnavailable || e.RetryAfter != store.MemoryRetryAfter {
		t.Fatalf("a new order above the watermark: %v", err)
	}
	if n := rdb.XLen(ctx, queue.StreamOf("bot-1", queue.PriorityStrategyEntry)).Val(); n != 0 {
		t.Fatalf("the refused order was queued (%d entries)", n)
	}
	if _, err := api.PlaceManual(ctx, "bot-1", order.Request{Type: order.Close, Symbol: "ETH/USDT"}); err != nil {
		t.Fatalf("an exit above the watermark: %v", err)
	}
	if drain(t, ctx, rdb, ex, queue.PriorityManualClose) != 1 {
		t.Fatal("the exit was not queued")
	}
}
