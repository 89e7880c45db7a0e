package executor_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/store"
)

func TestWatcherEnqueuesOneStopLossExit(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","stopLoss":"2%","takeProfit":"70000"}`))
	pos := h.position("BTC/USDT")
	testkit.EqualD(t, "stop", pos.StopLoss.Price.Decimal, "63700")
	w := h.ex.NewWatcher(executor.WatcherDeps{Redis: h.rdb, Prices: h.px, Logger: h.quiet})

	h.px.set(exchange.Spot, "BTC/USDT", "63701")
	if ids, err := w.Scan(h.ctx); err != nil || len(ids) != 0 {
		t.Fatalf("above the stop: %v %v", ids, err)
	}
	h.px.set(exchange.Spot, "BTC/USDT", "63000")
	ids, err := w.Scan(h.ctx)
	name := executor.TriggerSignalID(pos.ID, executor.TriggerStopLoss, decimal.RequireFromString("63700"))
	want := executor.TriggerAttemptID(h.bot.ID, name, 0)
	if err != nil || len(ids) != 1 || ids[0] != want || !queue.InBotPartition(h.bot.ID, want) {
		t.Fatalf("scan = %v, %v; want [%s], in the bot's partition", ids, err, want)
	}
	// Another scan (or another replica) does not enqueue it again.
	if ids, err := w.Scan(h.ctx); err != nil || len(ids) != 0 {
		t.Fatalf("second scan: %v %v", ids, err)
	}
	envs := readStream(t, h, queue.PriorityStrategyExit)
	if len(envs) != 1 {
		t.Fatalf("%d exit envelopes", len(envs))
	}
	env := envs[0]
	if env.SignalID != want || env.Priority != queue.PriorityStrategyExit || env.Source != queue.SourceWatcher || env.BotID != h.bot.ID {
		t.Fatalf("envelope = %+v", env)
	}
	var sig signal.Signal
	if err := json.Unmarshal(env.Signal, &sig); err != nil || sig.Action != signal.CloseLong || sig.Symbol != "BTC/USDT" {
		t.Fatalf("signal = %+v, %v", sig, err)
	}

	// A stop-loss exit runs even while the bot is paused.
	if _, err := h.reg.Pause(h.ctx, h.bot.ID, registry.Pause{Reason: registry.PauseErrors}, h.now); err != nil {
		t.Fatal(err)
	}
	res := h.ok(h.run(env))
	testkit.EqualD(t, "exit price", res.Order.AvgPrice.Decimal, "63000")
	if h.position("BTC/USDT") != nil {
		t.Fatal("position still open")
	}
	if tr := h.trades(); len(tr) != 1 || tr[0].Reason != executor.TriggerStopLoss {
		t.Fatalf("trades = %+v", tr)
	}
	if items, _ := position.Watched(h.ctx, h.rdb); len(items) != 0 {
		t.Fatalf("watch index = %+v", items)
	}
	// The same trigger enqueued again (a lost marker) is answered from its result.
	h.ok(h.run(env))
	if h.exchangeOrders() != 2 {
		t.Fatalf("%d exchange orders", h.exchangeOrders())
	}
}

func TestWatcherPartialTakeProfitAndLiquidation(t *testing.T) {
	h := newHarness(t, func(b *registry.Bot) { b.Market, b.Leverage = "futures", 20 })
	h.px.set(exchange.Futures, "ETH/USDT", "3000")
	h.ok(h.send(`{"action":"sell","symbol":"ETHUSDT","size":"1"}`)) // short 1 ETH ×20
	// Manual take_profit closing half at 2800.
	manual(t, h, `{"type":"take_profit","symbol":"ETH/USDT","takeProfitPrice":2800,"closePercent":50}`)
	w := h.ex.NewWatcher(executor.WatcherDeps{Prices: h.px, Logger: h.quiet})
	h.px.set(exchange.Futures, "ETH/USDT", "2799")
	ids, err := w.Scan(h.ctx)
	if err != nil || len(ids) != 1 {
		t.Fatalf("scan = %v %v", ids, err)
	}
	h.ok(h.run(readStream(t, h, queue.PriorityStrategyExit)[0]))
	p := h.position("ETH/USDT")
	testkit.EqualD(t, "half left", p.Size.Decimal, "0.5")
	if p.TakeProfit != nil {
		t.Fatal("fired take-profit kept")
	}
	// liquidation: (cost 1500 + margin 75) / (0.5 × 1.005) = 3134.32835820…
	liq := p.Liquidation()
	testkit.EqualD(t, "liquidation", liq, "3134.32835820")
	trig, level, _ := executor.Crossed(position.WatchItem{Side: position.Short, Liquidate: httpapi.Num(liq)}, decimal.RequireFromString("3135"))
	if trig != executor.TriggerLiquidation || !level.Equal(liq) {
		t.Fatalf("crossed = %s %s", trig, level)
	}
}

// manual runs an internal trading API order through the executor.
func manual(t *testing.T, h *harness, body string) {
	t.Helper()
	h.seq++
	env := queue.Envelope{SignalID: fmt.Sprintf("m-%d", h.seq), BotID: h.bot.ID, Priority: queue.PriorityManualClose,
		Source: queue.SourceManual, Signal: json.RawMessage(body), ReceivedAt: h.now.UnixMilli()}
	h.ok(h.run(env))
}

// crossedStopLoss is a long BTC/USDT position whose stop-loss at 64,000 the price (63,000)
// has crossed, its watcher, and the trigger's name.
func crossedStopLoss(t *testing.T) (*harness, *executor.Watcher, string) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","stopLoss":"64000"}`))
	name := executor.TriggerSignalID(h.position("BTC/USDT").ID, executor.TriggerStopLoss, decimal.RequireFromString("64000"))
	w := h.ex.NewWatcher(executor.WatcherDeps{Prices: h.px, Logger: h.quiet})
	h.px.set(exchange.Spot, "BTC/USDT", "63000")
	return h, w, name
}

func TestWatcherRetriesAFailedExitUnderTheNextAttempt(t *testing.T) {
	h, w, name := crossedStopLoss(t)
	ids, _ := w.Scan(h.ctx)
	if len(ids) != 1 || ids[0] != executor.TriggerAttemptID(h.bot.ID, name, 0) {
		t.Fatalf("ids = %v", ids)
	}
	// The exit fails (the bot is disabled at that moment).
	h.bot.Availability = "disabled"
	h.project()
	h.fails(h.run(readStream(t, h, queue.PriorityStrategyExit)[0]), "BOT_DISABLED")
	h.bot.Availability = "active"
	h.project()
	// Once the marker (named by the attempt's name) lapses the trigger is enqueued again
	// under the next attempt's signalId, placed in the bot's partition too.
	h.rdb.Del(h.ctx, store.WatchFired(h.bot.ID, name))
	again, err := w.Scan(h.ctx)
	next := executor.TriggerAttemptID(h.bot.ID, name, 1)
	if err != nil || len(again) != 1 || again[0] != next || !queue.InBotPartition(h.bot.ID, next) {
		t.Fatalf("retry = %v %v; want [%s]", again, err, next)
	}
	envs := readStream(t, h, queue.PriorityStrategyExit)
	h.ok(h.run(envs[len(envs)-1]))
	if h.position("BTC/USDT") != nil {
		t.Fatal("position still open")
	}
	// Purging the book removes the bot's positions, trades and watch entries.
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","stopLoss":"60000"}`))
	if err := position.Purge(h.ctx, h.rdb, h.bot.ID); err != nil {
		t.Fatal(err)
	}
	if h.position("BTC/USDT") != nil || len(h.trades()) != 0 {
		t.Fatal("state left")
	}
	if items, _ := position.Watched(h.ctx, h.rdb); len(items) != 0 {
		t.Fatalf("watch = %+v", items)
	}
}

// Attempt IDs are placed in the bot's partition and deterministic: the same trigger,
// attempt and bot give the same ID; another attempt or bot another.
func TestTriggerAttemptIDsArePlacedAndDeterministic(t *testing.T) {
	seen := map[string]bool{}
	for b := range 40 {
		bot := fmt.Sprintf("bot-%d", b)
		name := executor.TriggerSignalID(fmt.Sprintf("pos-%d", b), executor.TriggerTakeProfit, decimal.RequireFromString("70000.5"))
		for attempt := range executor.MaxTriggerAttempts {
			id := executor.TriggerAttemptID(bot, name, attempt)
			if !queue.InBotPartition(bot, id) || id != executor.TriggerAttemptID(bot, name, attempt) || seen[id] {
				t.Fatalf("attempt %d of %s for %s: %s (placed %v, seen %v)", attempt, name, bot, id,
					queue.InBotPartition(bot, id), seen[id])
			}
			seen[id] = true
		}
	}
}

// A trigger an older version (one that queued exits under their unplaced names) has acted
// on is recognised: its marker and its results are under the attempt's name.
func TestWatcherHonoursAttemptsQueuedUnplaced(t *testing.T) {
	h, w, name := crossedStopLoss(t)
	legacy := func(id, body string) {
		t.Helper()
		if err := h.rdb.Set(h.ctx, store.LegacySignalResult(id), body, time.Hour).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Its exit is queued and not yet done: the older version's marker holds this scan off.
	h.rdb.Set(h.ctx, store.WatchFired(h.bot.ID, name), "1", executor.FiredTTL)
	if ids, err := w.Scan(h.ctx); err != nil || len(ids) != 0 {
		t.Fatalf("under the older version's marker: %v %v", ids, err)
	}
	h.rdb.Del(h.ctx, store.WatchFired(h.bot.ID, name))
	// Its first attempt failed: the next attempt is queued.
	legacy(name, `{"signalId":"`+name+`","success":false,"code":"EXCHANGE_ERROR"}`)
	ids, err := w.Scan(h.ctx)
	if err != nil || len(ids) != 1 || ids[0] != executor.TriggerAttemptID(h.bot.ID, name, 1) {
		t.Fatalf("after a failed unplaced attempt: %v %v", ids, err)
	}
	// Its second attempt succeeded: nothing more is queued, whatever the markers.
	h.rdb.Del(h.ctx, store.WatchFired(h.bot.ID, name+"-1"))
	legacy(name+"-1", `{"signalId":"`+name+`-1","success":true}`)
	if ids, err := w.Scan(h.ctx); err != nil || len(ids) != 0 {
		t.Fatalf("after a successful unplaced attempt: %v %v", ids, err)
	}
	if n := len(readStream(t, h, queue.PriorityStrategyExit)); n != 1 {
		t.Fatalf("%d exits queued, want 1", n)
	}
}
