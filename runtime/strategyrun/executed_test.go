package strategyrun_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/signal"
)

// The queued strategy signals, executed by the real executor on a paper account in queue
// order (exits before entries), leave the bot with the position the strategy implies: on
// futures, long after an up-cross and short after a down-cross, one trade per reversal.
func TestStrategySignalsExecuteOnPaper(t *testing.T) {
	f := newFixture(t, "futures")
	if _, err := paper.NewAccounts(f.rdb).Ensure(f.ctx, paper.Config{ID: "acct-1", Owner: "a@x.io", Currency: "USDT",
		InitialBalance: testkit.D("10000"), FeeRate: testkit.D("0.001")}); err != nil {
		t.Fatal(err)
	}
	ex := executor.New(executor.Deps{Redis: f.rdb, Prices: f.mkt, Logger: f.quiet, Now: f.clock.Now})
	o := &owner{}
	o.set(f.part)
	r := f.runner(o)
	after := map[queue.Priority]string{} // the last stream ID handled
	var actions []signal.Action
	for m := 0; m < 90; m++ {
		r.Evaluate(f.ctx)
		// What the queue serves: priority 2 before 3.
		for _, p := range []queue.Priority{queue.PriorityStrategyExit, queue.PriorityStrategyEntry} {
			from := "-"
			if after[p] != "" {
				from = "(" + after[p]
			}
			msgs, err := f.rdb.XRange(f.ctx, queue.StreamOf(f.bot.ID, p), from, "+").Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, msg := range msgs {
				after[p] = msg.ID
				var env queue.Envelope
				if err := json.Unmarshal([]byte(msg.Values[queue.EnvelopeField].(string)), &env); err != nil {
					t.Fatal(err)
				}
				if err := ex.Handle(f.ctx, env); err != nil {
					t.Fatalf("handle %s: %v", env.SignalID, err)
				}
				st, err := queue.GetResult(f.ctx, f.rdb, env.SignalID)
				if err != nil || !st.Found {
					t.Fatalf("no result for %s: %v", env.SignalID, err)
				}
				var sig signal.Signal
				_ = json.Unmarshal(env.Signal, &sig)
				// The first exit may find nothing to close; everything else must succeed.
				if !st.Result.Success && !(len(actions) == 0 && !sig.Action.IsEntry()) {
					t.Fatalf("%s %s failed: %s %s", env.SignalID, sig.Action, st.Result.Code, st.Result.Error)
				}
				if st.Result.Success {
					actions = append(actions, sig.Action)
				}
			}
		}
		f.clock.Advance(time.Minute)
	}
	entries := 0
	var last signal.Action
	for _, a := range actions {
		if a.IsEntry() {
			entries++
			last = a
		}
	}
	if entries < 3 {
		t.Fatalf("only %d entries executed in 90 minutes: the test proves nothing", entries)
	}
	pos, err := position.NewBook(f.rdb).Get(f.ctx, f.bot.ID, "BTC/USDT")
	if err != nil {
		t.Fatal(err)
	}
	wantSide := position.Long
	if last == signal.Sell {
		wantSide = position.Short
	}
	if pos == nil || pos.Side != wantSide {
		t.Fatalf("position %+v, want %s after the last entry %s", pos, wantSide, last)
	}
	// Every entry but the last was closed by the next crossing's exit: one trade each.
	trades, err := position.NewBook(f.rdb).Trades(f.ctx, f.bot.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(trades) != entries-1 {
		t.Fatalf("%d trades, want %d (entries %d, actions %v)", len(trades), entries-1, entries, actions)
	}
}
