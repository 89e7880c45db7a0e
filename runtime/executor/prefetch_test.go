package executor_test

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
)

// The first pipeline reads ahead what the bot's previous signal used (its paper account,
// its symbol). Whatever changed since, each signal acts on what Redis holds when it runs.
func TestReadAheadFollowsChangesBetweenSignals(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	h.px.set(exchange.Spot, "ETH/USDT", "3000")
	accounts := paper.NewAccounts(h.rdb)
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01"}`)) // hints: acct-1, BTC/USDT

	// The balance changed between two signals (a refill, another bot on the account): a
	// "N%" entry is sized from the balance as it is now.
	h.rdb.HSet(h.ctx, store.PaperAccount("acct-1"), "balance", "5000")
	res := h.ok(h.send(`{"action":"buy","symbol":"ETHUSDT"}`)) // 10 % of 5000 at 3000
	testkit.EqualD(t, "ETH amount", res.Order.Amount.Decimal, "0.1666")

	// Another symbol than the hinted one, then a close of everything (both open).
	res = h.ok(h.send(`{"action":"close"}`))
	if !strings.Contains(res.Message, "BTC/USDT") || !strings.Contains(res.Message, "ETH/USDT") {
		t.Fatalf("close message = %q", res.Message)
	}
	if h.position("BTC/USDT") != nil || h.position("ETH/USDT") != nil {
		t.Fatal("positions left open")
	}
	h.fails(h.send(`{"action":"close"}`), errs.PositionNotFound)

	// The bot moved to another paper account: the new one pays.
	if _, err := accounts.Ensure(h.ctx, paper.Config{ID: "acct-2", Owner: "a@x.io", Currency: "USDT",
		InitialBalance: testkit.D("2000"), FeeRate: testkit.D("0.001")}); err != nil {
		t.Fatal(err)
	}
	before := h.balance()
	h.bot.Account.ID, h.bot.Account.Name = "acct-2", "paper-2"
	h.project()
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01"}`))
	testkit.EqualD(t, "acct-1 balance", h.balance(), before.String())
	st, err := accounts.Get(h.ctx, "acct-2")
	if err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "acct-2 balance", st.Balance, "1349.35") // 2000 − 650 − 0.65

	// The account changed hands: refused, as the first signal would be.
	if _, err := accounts.Ensure(h.ctx, paper.Config{ID: "acct-2", Owner: "mallory@x.io", Currency: "USDT",
		InitialBalance: testkit.D("2000"), FeeRate: testkit.D("0.001")}); err != nil {
		t.Fatal(err)
	}
	h.fails(h.send(`{"action":"sell","symbol":"BTCUSDT"}`), errs.BotDisabled)
	// The account is gone.
	if err := accounts.Delete(h.ctx, "acct-2"); err != nil {
		t.Fatal(err)
	}
	h.fails(h.send(`{"action":"sell","symbol":"BTCUSDT"}`), errs.BotDisabled)

	// Back on acct-1; a runtime pause refuses, one whose time is over is cleared.
	h.bot.Account.ID, h.bot.Account.Name = "acct-1", "paper"
	h.project()
	h.rdb.HSet(h.ctx, store.Bot(h.bot.ID), registry.FieldPause, "Risk",
		registry.FieldPauseUntil, strconv.FormatInt(h.now.Add(time.Hour).UnixMilli(), 10))
	h.fails(h.send(`{"action":"buy","symbol":"ETHUSDT","size":"0.1"}`), errs.BotPaused)
	h.rdb.HSet(h.ctx, store.Bot(h.bot.ID), registry.FieldPauseUntil, strconv.FormatInt(h.now.Add(-time.Hour).UnixMilli(), 10))
	h.ok(h.send(`{"action":"buy","symbol":"ETHUSDT","size":"0.1"}`))
	if reason, _ := h.pauseFields(); reason != "" {
		t.Fatalf("expired pause not cleared: %q", reason)
	}

	// Deleted.
	if err := h.reg.Remove(h.ctx, h.bot.ID, time.Hour); err != nil {
		t.Fatal(err)
	}
	h.fails(h.send(`{"action":"close"}`), errs.BotDeleted)
}

// A watcher exit never looks at the pause: an expired one is not cleared by it either.
func TestWatcherExitSkipsThePauseRead(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01"}`))
	until := strconv.FormatInt(h.now.Add(-time.Hour).UnixMilli(), 10)
	h.rdb.HSet(h.ctx, store.Bot(h.bot.ID), registry.FieldPause, "Risk", registry.FieldPauseUntil, until)
	env := h.envelope(`{"action":"close_long","symbol":"BTC/USDT"}`)
	env.Source, env.Priority = queue.SourceWatcher, queue.PriorityStrategyExit
	h.ok(h.run(env))
	if reason, u := h.pauseFields(); reason != "Risk" || u != until {
		t.Fatalf("pause = %q until %q: the watcher exit touched it", reason, u)
	}
}

// The commit script writes only while the keys the booking was computed from hold what it
// read: a write to one of them between the reads and the commit makes the booking read
// again and apply the leg to what Redis then holds, keeping the other writer's change.
func TestBookingCommitChecksItsReads(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01"}`))
	other := h.srv.Client()
	defer other.Close()
	commits := 0
	h.rdb.AddHook(&planRacer{f: func() {
		// Another writer moves the risk counters the booking read ahead.
		other.HSet(context.Background(), store.RiskCounters(h.bot.ID), "consecutiveLosses", "2")
	}, count: &commits})
	h.ok(h.send(`{"action":"sell","symbol":"BTCUSDT"}`))
	if commits != 2 {
		t.Fatalf("%d commit attempts, want 2: the interfering write did not refuse the first", commits)
	}
	// The sell at the buy's price loses the fees: a third loss in a row after the other
	// writer's 2 (0.01 × 65000 × 0.001 × 2 = 1.3 of fees).
	n, err := h.rdb.HGet(h.ctx, store.RiskCounters(h.bot.ID), "consecutiveLosses").Result()
	if err != nil || n != "3" {
		t.Fatalf("consecutiveLosses = %q, %v, want 3: the booking lost the concurrent write", n, err)
	}
	if h.position("BTC/USDT") != nil || h.exchangeOrders() != 2 || len(h.trades()) != 1 {
		t.Fatal("not booked once")
	}
}

// planRacer runs f right before the first script on a signal's progress record (the
// commit script of a steady-state paper leg) and counts those scripts (count, if given).
type planRacer struct {
	once  sync.Once
	f     func()
	count *int
}

func (r *planRacer) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *planRacer) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		r.seen(cmd)
		return next(ctx, cmd)
	}
}

// ProcessPipelineHook: the commit goes out in a pipeline when it is coalesced with others
// (store.Coalescer), alone or not.
func (r *planRacer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		for _, cmd := range cmds {
			r.seen(cmd)
		}
		return next(ctx, cmds)
	}
}

// seen runs f before the first commit script call (its third key is a signal's progress).
func (r *planRacer) seen(cmd redis.Cmder) {
	args := cmd.Args()
	if cmd.Name() == "evalsha" && len(args) > 3 && strings.HasPrefix(fmt.Sprint(args[3]), "sigops:sig:") {
		r.once.Do(r.f)
		if r.count != nil {
			*r.count++
		}
	}
}

// When another attempt of the signal stored its plan before this attempt's booking, this
// attempt's commit writes nothing and the attempt follows the stored plan. A paper leg is
// placed before its plan is stored, so the order placed first under the leg's client order
// ID is the one booked, once: here this attempt's 0.001 (the stored plan's leg has the same
// name, so its placement finds that order).
func TestAttemptFollowsAPlanStoredFirst(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	// A signal whose ID is not in its bot's partition keeps its progress record (its result
	// is published after the booking): its plan is the other attempt's.
	first := h.envelope(`{"action":"buy","symbol":"BTCUSDT","size":"0.002"}`)
	first.SignalID = outsidePartition(h.bot.ID)
	h.ok(h.run(first))
	stored := h.rdb.HGet(h.ctx, store.SignalProgress(first.BotID, first.SignalID), "plan").Val()
	if stored == "" {
		t.Fatal("no plan stored")
	}
	h.ok(h.send(`{"action":"close"}`))

	env := h.envelope(`{"action":"buy","symbol":"BTCUSDT","size":"0.001"}`)
	other := h.srv.Client()
	defer other.Close()
	h.rdb.AddHook(&planRacer{f: func() {
		other.HSet(context.Background(), store.SignalProgress(env.BotID, env.SignalID), "plan", stored)
	}})
	res := h.ok(h.run(env))
	testkit.EqualD(t, "amount (the order placed)", res.Order.Amount.Decimal, "0.001")
	if n := h.exchangeOrders(); n != 3 {
		t.Fatalf("%d exchange orders, want 3", n)
	}
	testkit.EqualD(t, "position", (h.position("BTC/USDT").Size).Decimal, "0.001")
	if n := h.rdb.Exists(h.ctx, store.SignalProgress(env.BotID, env.SignalID)).Val(); n != 0 {
		t.Fatal("the progress record outlived the stored result")
	}
}

// outsidePartition is a signal ID whose result key is not in bot botID's partition slot (a
// signal queued before IDs were chosen by queue.SignalIDFor).
func outsidePartition(botID string) string {
	for i := 0; ; i++ {
		id := fmt.Sprintf("old-%d", i)
		if store.SignalPartition(id) != store.PartitionOf(botID) {
			return id
		}
	}
}
