package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/store"
)

// follower adds a bot copying the harness's bot, on a paper account of its own (fee 0.1 %)
// holding balance USDT; edit changes it before it is projected.
func (h *harness) follower(id, balance string, edit func(*registry.Bot)) registry.Bot {
	h.t.Helper()
	acct := "acct-" + id
	owner := "a@x.io"
	b := registry.Bot{ID: id, Namespace: "ns", Name: id, Owner: owner,
		Account: registry.Account{Kind: registry.AccountPaper, Name: acct, ID: acct},
		Market:  h.bot.Market, PositionSize: "10%", Leverage: 1, DCA: registry.DCA{MaxLevels: 5},
		Reversals: true, Availability: "active",
		CopyFrom: &registry.CopyFrom{MasterID: h.bot.ID, Ratio: "1"}}
	if edit != nil {
		edit(&b)
	}
	if _, err := paper.NewAccounts(h.rdb).Ensure(h.ctx, paper.Config{ID: acct, Owner: b.Owner, Currency: "USDT",
		InitialBalance: testkit.D(balance), FeeRate: testkit.D("0.001")}); err != nil {
		h.t.Fatal(err)
	}
	if err := h.reg.Project(h.ctx, b, "hook-"+id); err != nil {
		h.t.Fatal(err)
	}
	return b
}

// copies are the copy envelopes waiting for a follower (reduces first). Bots of one
// partition share its streams, so the envelopes are picked by bot.
func (h *harness) copies(followerID string) []queue.Envelope {
	h.t.Helper()
	envs, _ := h.copyEntries(followerID)
	return envs
}

func (h *harness) copyEntries(followerID string) ([]queue.Envelope, []string) {
	h.t.Helper()
	var out []queue.Envelope
	var ids []string
	for _, p := range []queue.Priority{queue.PriorityStrategyExit, queue.PriorityStrategyEntry} {
		envs, entryIDs := streamEntries(h.t, h, queue.StreamOf(followerID, p))
		for i, env := range envs {
			if env.BotID != followerID || env.Source != queue.SourceCopy {
				continue
			}
			if env.Priority != p {
				h.t.Fatalf("copy envelope %+v in stream of priority %d", env, p)
			}
			out, ids = append(out, env), append(ids, entryIDs[i])
		}
	}
	return out, ids
}

// takeCopy runs the one copy waiting for a follower (and deletes it from its stream) and
// returns its result.
func (h *harness) takeCopy(followerID string) (queue.Envelope, result.Result) {
	h.t.Helper()
	envs, ids := h.copyEntries(followerID)
	if len(envs) != 1 {
		h.t.Fatalf("%d copies waiting for %s, want 1", len(envs), followerID)
	}
	if err := h.rdb.XDel(h.ctx, queue.StreamOf(followerID, envs[0].Priority), ids[0]).Err(); err != nil {
		h.t.Fatal(err)
	}
	return envs[0], h.run(envs[0])
}

// apart returns n bot IDs starting with prefix whose partitions differ from each other's
// and from the harness bot's, so that a consumer of one partition runs none of the others'.
func (h *harness) apart(prefix string, n int) []string {
	used := map[int]bool{store.PartitionOf(h.bot.ID): true}
	var out []string
	for i := 0; len(out) < n; i++ {
		id := prefix + string(rune('a'+i%26)) + string(rune('a'+i/26))
		if p := store.PartitionOf(id); !used[p] {
			used[p] = true
			out = append(out, id)
		}
	}
	return out
}

func (h *harness) copyState(botID string) registry.CopyState {
	h.t.Helper()
	st, err := h.reg.ReadCopy(h.ctx, botID)
	if err != nil {
		h.t.Fatal(err)
	}
	return st
}

// A futures master's entry, partial close and stop-loss exit, each copied by a follower
// with a quarter of its equity at ratio 0.5.
func TestCopyEntryPartialCloseAndStopLoss(t *testing.T) {
	h := newHarness(t, func(b *registry.Bot) { b.Market, b.Leverage = "futures", 4 })
	h.px.set(exchange.Futures, "BTC/USDT", "50000")
	h.follower("bot-f", "2500", func(b *registry.Bot) { b.CopyFrom.Ratio = "0.5" })

	// The master (equity 10,000 USDT) buys 0.4 BTC at 50,000 ×4: margin 20,000 / 4 = 5,000,
	// fee 20,000 × 0.001 = 20 → 10,000 − 5,020 = 4,980.
	master := h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.4","stopLoss":"2%"}`))
	testkit.EqualD(t, "master balance", h.balance(), "4980")
	env, res := h.takeCopy("bot-f")
	if env.Priority != executor.CopyPriority || env.SignalID != executor.CopySignalID(master.SignalID, "", "bot-f") ||
		!queue.InBotPartition("bot-f", env.SignalID) {
		t.Fatalf("copy envelope = %+v (its ID in the follower's partition)", env)
	}
	var req executor.CopyRequest
	if err := json.Unmarshal(env.Signal, &req); err != nil {
		t.Fatal(err)
	}
	if req.MasterBotID != h.bot.ID || req.MasterSignalID != master.SignalID || req.Op != executor.CopyOpen ||
		req.Side != position.Long || req.Leverage != 4 || req.MasterEquity == nil {
		t.Fatalf("copy request = %+v", req)
	}
	testkit.EqualD(t, "master equity", (*req.MasterEquity).Decimal, "10000")
	// The follower: 0.4 × 2,500 / 10,000 × 0.5 = 0.05 BTC at 50,000 ×4: margin 2,500 / 4 =
	// 625, fee 2,500 × 0.001 = 2.5 → 2,500 − 627.5 = 1,872.5.
	h.ok(res)
	testkit.EqualD(t, "follower amount", res.Order.FilledAmount.Decimal, "0.05")
	testkit.EqualD(t, "follower fee", res.Order.Fee.Decimal, "2.5")
	testkit.EqualD(t, "follower balance", h.balanceOf("acct-bot-f"), "1872.5")
	p := h.positionOf("bot-f", "BTC/USDT")
	if p == nil || p.Side != position.Long || p.Leverage != 4 {
		t.Fatalf("follower position = %+v", p)
	}
	testkit.EqualD(t, "follower size", p.Size.Decimal, "0.05")
	if st := h.copyState("bot-f"); st.Last == nil || st.Last.Outcome != registry.CopyOutcomeSuccess || st.Last.SignalID != env.SignalID || st.Error != nil {
		t.Fatalf("copy state = %+v", st)
	}

	// The master closes half (0.2 of 0.4) at 52,000: the follower closes the same fraction,
	// 0.05 × 0.2 / 0.4 = 0.025: margin back 312.5, PnL 2,000 × 0.025 = 50, fee 0.025 ×
	// 52,000 × 0.001 = 1.3 → 1,872.5 + 312.5 + 50 − 1.3 = 2,233.7.
	h.px.set(exchange.Futures, "BTC/USDT", "52000")
	h.ok(h.send(`{"action":"close_long","symbol":"BTCUSDT","size":"50%"}`))
	env, res = h.takeCopy("bot-f")
	if env.Priority != executor.CopyPriority {
		t.Fatalf("reduce copy priority %d", env.Priority)
	}
	h.ok(res)
	testkit.EqualD(t, "partial close amount", res.Order.FilledAmount.Decimal, "0.025")
	testkit.EqualD(t, "follower balance after the partial close", h.balanceOf("acct-bot-f"), "2233.7")
	testkit.EqualD(t, "follower rest", (h.positionOf("bot-f", "BTC/USDT").Size).Decimal, "0.025")

	// The master's stop-loss (2 % under 50,000: 49,000) fires at 48,000; the watcher's exit
	// closes the master's 0.2 in full, and so the follower's 0.025: margin back 312.5, PnL
	// −2,000 × 0.025 = −50, fee 0.025 × 48,000 × 0.001 = 1.2 → 2,233.7 + 312.5 − 50 − 1.2 =
	// 2,495.
	h.px.set(exchange.Futures, "BTC/USDT", "48000")
	w := h.ex.NewWatcher(executor.WatcherDeps{Redis: h.rdb, Prices: h.px, Logger: h.quiet})
	ids, err := w.Scan(h.ctx)
	if err != nil || len(ids) != 1 {
		t.Fatalf("scan = %v, %v", ids, err)
	}
	exits := readStream(t, h, queue.PriorityStrategyExit)
	if len(exits) != 1 {
		t.Fatalf("%d master exits", len(exits))
	}
	h.ok(h.run(exits[0]))
	if h.position("BTC/USDT") != nil {
		t.Fatal("master position still open")
	}
	env, res = h.takeCopy("bot-f")
	var exit executor.CopyRequest
	if err := json.Unmarshal(env.Signal, &exit); err != nil || exit.Reason != executor.TriggerStopLoss || exit.Op != executor.CopyReduce {
		t.Fatalf("stop-loss copy = %+v, %v", exit, err)
	}
	h.ok(res)
	testkit.EqualD(t, "stop-loss copy amount", res.Order.FilledAmount.Decimal, "0.025")
	if h.positionOf("bot-f", "BTC/USDT") != nil {
		t.Fatal("follower position still open")
	}
	testkit.EqualD(t, "follower balance at the end", h.balanceOf("acct-bot-f"), "2495")
	// Copies are the follower's own trades; a copy signal fans out to nobody.
	if tr, _ := position.NewBook(h.rdb).Trades(h.ctx, "bot-f"); len(tr) != 2 || tr[0].Reason != "copy" {
		t.Fatalf("follower trades = %+v", tr)
	}
}

// A follower that cannot copy records why in its result and copy state; the master's
// result and booking are those of a bot without followers.
func TestCopyFailuresRecordedOnTheFollowerOnly(t *testing.T) {
	h := newHarness(t, func(b *registry.Bot) { b.Market, b.Leverage = "futures", 4 })
	h.px.set(exchange.Futures, "BTC/USDT", "50000")
	h.follower("bot-paused", "2500", nil)
	// 0.1 × 100 / 10,000 × 100 = 0.1 BTC: margin 1,250 + fee 5 on a balance of 100.
	h.follower("bot-poor", "100", func(b *registry.Bot) { b.CopyFrom.Ratio = "100" })
	h.follower("bot-spot", "2500", func(b *registry.Bot) { b.Market, b.Leverage = "spot", 1 })
	if _, err := h.reg.Pause(h.ctx, "bot-paused", registry.Pause{Reason: registry.PauseErrors}, h.now); err != nil {
		t.Fatal(err)
	}

	// 0.1 BTC short at 50,000 ×4: margin 1,250, fee 5 → 8,745.
	master := h.ok(h.send(`{"action":"sell","symbol":"BTCUSDT","size":"0.1"}`))
	testkit.EqualD(t, "master fill", master.Order.FilledAmount.Decimal, "0.1")
	testkit.EqualD(t, "master balance", h.balance(), "8745")

	for _, tc := range []struct {
		bot  string
		code errs.Code
	}{
		{"bot-paused", errs.BotPaused},
		{"bot-poor", errs.InsufficientBalance},
		{"bot-spot", errs.InvalidAction},
	} {
		env, res := h.takeCopy(tc.bot)
		h.fails(res, tc.code)
		st := h.copyState(tc.bot)
		if st.Last == nil || st.Last.Outcome != string(tc.code) || st.Error == nil || st.Error.Code != string(tc.code) ||
			st.Error.Message != res.Error || st.Last.SignalID != env.SignalID {
			t.Fatalf("%s: copy state = %+v %+v", tc.bot, st.Last, st.Error)
		}
	}
	// The master's stored result is untouched by its followers' failures.
	stored, err := queue.GetResult(h.ctx, h.rdb, master.SignalID)
	if err != nil || !stored.Found || !stored.Result.Success || stored.Result.Message != master.Message {
		t.Fatalf("master result = %+v, %v", stored, err)
	}
	testkit.EqualD(t, "master balance after the copies", h.balance(), "8745")
	testkit.EqualD(t, "the poor follower's balance", h.balanceOf("acct-bot-poor"), "100")

	// A reduce the follower has no position for is recorded as POSITION_NOT_FOUND.
	if _, err := h.reg.Resume(h.ctx, "bot-paused", registry.Pause{Reason: registry.PauseErrors}); err != nil {
		t.Fatal(err)
	}
	h.ok(h.send(`{"action":"close","symbol":"BTCUSDT"}`))
	_, res := h.takeCopy("bot-paused")
	h.fails(res, errs.PositionNotFound)
}

// Another owner's bot is fed only while the master is copyable, and a master that stops
// being copyable stops feeding it at once; its own owner's bots need no opt-in. A deleted
// follower gets nothing.
func TestCopyOnlyWhatTheMasterAllows(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "50000")
	h.follower("bot-own", "1000", nil)
	h.follower("bot-foreign", "1000", func(b *registry.Bot) { b.Owner = "b@x.io" })
	h.follower("bot-gone", "1000", nil)
	if err := h.reg.Remove(h.ctx, "bot-gone", time.Hour); err != nil {
		t.Fatal(err)
	}

	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01"}`))
	if n := len(h.copies("bot-foreign")); n != 0 {
		t.Fatalf("not copyable: %d copies for another owner's bot", n)
	}
	if n := len(h.copies("bot-gone")); n != 0 {
		t.Fatalf("%d copies for a deleted follower", n)
	}
	h.takeCopy("bot-own")

	h.bot.Copyable = true
	h.project()
	h.ok(h.send(`{"action":"sell","symbol":"BTCUSDT"}`))
	h.takeCopy("bot-foreign")
	h.takeCopy("bot-own")

	h.bot.Copyable = false
	h.project()
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01"}`))
	if n := len(h.copies("bot-foreign")); n != 0 {
		t.Fatalf("no longer copyable: %d copies for another owner's bot", n)
	}
	h.takeCopy("bot-own")

	// A master that copies a bot itself feeds nobody (the controller refuses such chains;
	// the fan-out holds the rule too).
	h.bot.CopyFrom = &registry.CopyFrom{MasterID: "bot-x", Ratio: "1"}
	h.project()
	h.ok(h.send(`{"action":"sell","symbol":"BTCUSDT"}`))
	if n := len(h.copies("bot-own")); n != 0 {
		t.Fatalf("a master copying another bot fed %d copies", n)
	}
}

// An executor dies after a master fill's booking committed and before its copies were
// enqueued; another executor takes the signal over, finds the leg booked and fans out:
// one copy per follower, however often the master signal runs again.
func TestCopyFanOutExactlyOnceAfterAnExecutorDies(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "50000")
	ids := h.apart("bot-f-", 2)
	f1, f2 := ids[0], ids[1]
	h.follower(f1, "1000", nil)
	h.follower(f2, "5000", nil)
	env := h.envelope(`{"action":"buy","symbol":"BTCUSDT","size":"0.02"}`)

	h.runUntilKilled(env, "the fan-out", executor.SetBeforeFanOut)
	if n := len(h.copies(f1)) + len(h.copies(f2)); n != 0 {
		t.Fatalf("%d copies before the fan-out ran", n)
	}

	// Executor B runs the master signal; the copies it dequeues are only counted here, so
	// that a second enqueue of one would show.
	var mu sync.Mutex
	seen := map[string][]queue.Envelope{}
	handleB := func(ctx context.Context, e queue.Envelope) error {
		if e.Source == queue.SourceCopy {
			mu.Lock()
			defer mu.Unlock()
			seen[e.BotID] = append(seen[e.BotID], e)
			return nil
		}
		return h.ex.Handle(ctx, e)
	}
	clientB := queueClient(t, h.srv)
	ctxB, stopB := context.WithCancel(h.ctx)
	defer stopB()
	consumerB := queue.NewConsumer(clientB, queue.Options{Name: "executor-b", LeaseTTL: time.Second, Logger: h.quiet})
	doneB := make(chan struct{})
	go func() { defer close(doneB); _ = consumerB.Run(ctxB, handleB) }()
	testkit.EventuallyTrue(t, 15*time.Second, "executor B finishes the master signal and fans out", func() bool {
		st, err := queue.GetResult(h.ctx, h.rdb, env.SignalID)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		defer mu.Unlock()
		return st.Found && len(seen[f1]) > 0 && len(seen[f2]) > 0
	})
	stopB()
	<-doneB
	if n := h.exchangeOrders(); n != 1 {
		t.Fatalf("%d master orders, want 1", n)
	}
	// The master signal once more from the start, its result gone (expired): the leg is
	// booked, the fan-out runs again and enqueues nothing new.
	if err := h.rdb.Del(h.ctx, store.SignalResult(env.SignalID)).Err(); err != nil {
		t.Fatal(err)
	}
	h.ok(h.run(env))
	for _, f := range []string{f1, f2} {
		if len(seen[f]) != 1 || seen[f][0].SignalID != executor.CopySignalID(env.SignalID, "", f) {
			t.Fatalf("%s: copies dequeued = %+v", f, seen[f])
		}
		if n := len(h.copies(f)); n != 0 {
			t.Fatalf("%s: %d copies enqueued again", f, n)
		}
	}
	// Follower 2 (equity 5,000) copies 0.02 × 5,000 / 10,000 = 0.01 BTC.
	testkit.EqualD(t, "follower 2 amount", (h.ok(h.run(seen[f2][0])).Order.FilledAmount).Decimal, "0.01")
}

// Copy IDs are placed in the follower's partition and deterministic: the same master
// signal, leg and follower give the same ID, another follower or leg another.
func TestCopySignalIDsArePlacedAndDeterministic(t *testing.T) {
	seen := map[string]bool{}
	for m := range 20 {
		master := queue.NewSignalID("master")
		for f := range 10 {
			follower := fmt.Sprintf("follower-%d", f)
			for _, leg := range []string{"", "close:BTC/USDT"} {
				id := executor.CopySignalID(master, leg, follower)
				if !queue.InBotPartition(follower, id) || id != executor.CopySignalID(master, leg, follower) || seen[id] {
					t.Fatalf("copy %d of %s/%q for %s: %s (placed %v, seen %v)", m, master, leg, follower, id,
						queue.InBotPartition(follower, id), seen[id])
				}
				seen[id] = true
			}
		}
	}
}

// A copy an older version queued under its unplaced name left its marker under that name:
// the master signal's fan-out repeated by this version queues no second copy.
func TestCopyMarkerOfAnUnplacedCopyHoldsOffASecondCopy(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "50000")
	h.follower("bot-f", "2500", nil)
	env := h.envelope(`{"action":"buy","symbol":"BTCUSDT","size":"0.01"}`)
	if err := h.rdb.Set(h.ctx, store.CopyMarker("bot-f", executor.CopyName(env.SignalID, "", "bot-f")), "1", executor.CopyMarkerTTL).Err(); err != nil {
		t.Fatal(err)
	}
	h.ok(h.run(env))
	if n := len(h.copies("bot-f")); n != 0 {
		t.Fatalf("%d copies queued under the older version's marker, want 0", n)
	}
	// The control: without the marker the master's next signal is copied.
	h.ok(h.send(`{"action":"close_long","symbol":"BTCUSDT"}`))
	if n := len(h.copies("bot-f")); n != 1 {
		t.Fatalf("%d copies of an unmarked master signal, want 1", n)
	}
}
