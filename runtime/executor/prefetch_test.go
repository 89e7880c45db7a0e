package executor_test

import (
	"context"
	"slices"
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
	"github.com/sigops/sigops/runtime/executor"
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
	testkit.EqualD(t, "ETH amount", res.Order.Amount, "0.1666")

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

// interferer is a go-redis hook that runs f once, right after the first pipeline that
// starts with WATCH, i.e. between a booking's reads and its MULTI/EXEC.
type interferer struct {
	once sync.Once
	f    func()
	seen []string
	mu   sync.Mutex
}

func (i *interferer) DialHook(next redis.DialHook) redis.DialHook { return next }

func (i *interferer) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		i.mu.Lock()
		i.seen = append(i.seen, cmd.Name())
		i.mu.Unlock()
		return next(ctx, cmd)
	}
}

func (i *interferer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		i.mu.Lock()
		i.seen = append(i.seen, "pipeline:"+cmds[0].Name())
		i.mu.Unlock()
		if cmds[0].Name() == "watch" {
			i.once.Do(i.f)
		}
		return err
	}
}

// The booking's WATCH travels with its reads: a write to a watched key after them still
// aborts the EXEC, and the booking is redone on what Redis then holds.
func TestBookingWatchStillGuardsItsReads(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	if h.srv.Cluster() {
		t.Skip("a cluster client sends the WATCH on its own (the keys name the node); this is the single server's WATCH in the reads' pipeline")
	}
	other := h.srv.Client()
	defer other.Close()
	hook := &interferer{f: func() {
		// Another writer moves the risk counters the booking read.
		other.HSet(context.Background(), store.RiskCounters(h.bot.ID), "consecutiveLosses", "2")
	}}
	h.rdb.AddHook(hook)
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01"}`))
	watches := 0 // the paper exchange's WATCH goes alone; the booking's leads a pipeline
	for _, s := range hook.seen {
		if s == "pipeline:watch" {
			watches++
		}
	}
	if watches != 2 {
		t.Fatalf("%d booking attempts (%v), want 2: the interfering write did not abort the first", watches, hook.seen)
	}
	n, err := h.rdb.HGet(h.ctx, store.RiskCounters(h.bot.ID), "consecutiveLosses").Result()
	if err != nil || n != "2" {
		t.Fatalf("consecutiveLosses = %q, %v: the booking overwrote a concurrent write", n, err)
	}
	if h.position("BTC/USDT") == nil || h.exchangeOrders() != 1 {
		t.Fatal("not booked once")
	}
}

// A booking that returns before EXEC releases its watch: the connection it goes back on
// (a pool of one here) runs the next transaction normally.
func TestBookingWithoutExecReleasesItsWatch(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01"}`))

	if h.srv.Cluster() {
		t.Skip("the UNWATCH of a WATCH sent in the reads' pipeline, which only a single server's client does")
	}
	one := redis.NewClient(&redis.Options{Addr: h.srv.Addr, PoolSize: 1})
	defer one.Close()
	hook := &interferer{f: func() {}}
	one.AddHook(hook)
	ex := executor.New(executor.Deps{Redis: one, Prices: h.px, Logger: h.quiet, Now: func() time.Time { return h.now }})
	// The holding disappears between the fill and its booking: the booking refuses it
	// (INTERNAL_ERROR) without EXEC.
	executor.SetAfterPlace(ex, func(string) error {
		return h.rdb.Del(h.ctx, store.BookPosition(h.bot.ID, "BTC/USDT")).Err()
	})
	env := h.envelope(`{"action":"sell","symbol":"BTCUSDT"}`)
	if err := ex.Handle(h.ctx, env); err != nil {
		t.Fatal(err)
	}
	st, err := queue.GetResult(h.ctx, h.rdb, env.SignalID)
	res := st.Result
	if err != nil || res.Success || res.Code != errs.InternalError {
		t.Fatalf("result = %+v, %v", res, err)
	}
	if !slices.Contains(hook.seen, "unwatch") {
		t.Fatalf("no UNWATCH after a booking without EXEC: %v", hook.seen)
	}
	// A watched key changes; a transaction on the pool's only connection must still commit.
	h.rdb.HSet(h.ctx, store.RiskCounters(h.bot.ID), "consecutiveLosses", "1")
	conn := one.Conn()
	defer conn.Close()
	if err := conn.Do(h.ctx, "multi").Err(); err != nil {
		t.Fatal(err)
	}
	conn.Do(h.ctx, "set", "probe", "1")
	if v, err := conn.Do(h.ctx, "exec").Slice(); err != nil || len(v) != 1 {
		t.Fatalf("EXEC after the booking = %v, %v: a watch was left on the connection", v, err)
	}
}

// planRacer stores another attempt's plan right before the first EVALSHA (the script that
// stores a new plan with its first pending order).
type planRacer struct {
	once sync.Once
	f    func()
}

func (r *planRacer) DialHook(next redis.DialHook) redis.DialHook { return next }

func (r *planRacer) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if cmd.Name() == "evalsha" || cmd.Name() == "eval" {
			r.once.Do(r.f)
		}
		return next(ctx, cmd)
	}
}

func (r *planRacer) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}

// When another attempt of the signal stored its plan between this attempt's read of the
// progress record and its own plan's storing, this attempt stages nothing of its plan and
// follows the stored one: one order, of the stored plan.
func TestAttemptFollowsAPlanStoredFirst(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	first := h.envelope(`{"action":"buy","symbol":"BTCUSDT","size":"0.002"}`)
	h.ok(h.run(first))
	stored := h.rdb.HGet(h.ctx, store.SignalProgress(first.BotID, first.SignalID), "plan").Val()
	h.ok(h.send(`{"action":"close"}`))

	env := h.envelope(`{"action":"buy","symbol":"BTCUSDT","size":"0.001"}`)
	other := h.srv.Client()
	defer other.Close()
	h.rdb.AddHook(&planRacer{f: func() {
		other.HSet(context.Background(), store.SignalProgress(env.BotID, env.SignalID), "plan", stored)
	}})
	res := h.ok(h.run(env))
	testkit.EqualD(t, "amount (the stored plan's)", res.Order.Amount, "0.002")
	if got := h.rdb.HGet(h.ctx, store.SignalProgress(env.BotID, env.SignalID), "plan").Val(); got != stored {
		t.Fatalf("plan = %s, want the stored %s", got, stored)
	}
	if n := h.exchangeOrders(); n != 3 {
		t.Fatalf("%d exchange orders, want 3", n)
	}
	testkit.EqualD(t, "position", h.position("BTC/USDT").Size, "0.002")
}
