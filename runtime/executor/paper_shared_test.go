package executor_test

import (
	"fmt"
	"sync"
	"testing"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
)

// Bots sharing one paper account trade at the same time, each its signals in order (as
// its lane runs them). From their second signal on, each reads the account ahead in its
// first pipeline, and those values go stale as the other bots fill: the fill script finds
// them changed and Go computes again. Every fill lands once and the shared balance is
// exactly the sum of them.
func TestSharedPaperAccountUnderConcurrentBots(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "SOL/USDT", "150")
	const bots, rounds = 4, 3
	lanes := make([][]queue.Envelope, bots)
	var ids []string
	for b := 0; b < bots; b++ {
		bot := h.bot
		bot.ID, bot.Name = fmt.Sprintf("bot-s%d", b), fmt.Sprintf("s%d", b)
		if err := h.reg.Project(h.ctx, bot, "hook-"+bot.ID); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, bot.ID)
		for r := 0; r < rounds; r++ {
			for _, body := range []string{`{"action":"buy","symbol":"SOLUSDT","size":"1"}`, `{"action":"sell","symbol":"SOLUSDT"}`} {
				env := h.envelope(body)
				env.BotID = bot.ID
				lanes[b] = append(lanes[b], env)
			}
		}
	}
	var wg sync.WaitGroup
	for b, lane := range lanes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, env := range lane {
				if err := h.ex.Handle(h.ctx, env); err != nil {
					t.Errorf("%s %s: %v", ids[b], env.SignalID, err)
					return
				}
				st, err := queue.GetResult(h.ctx, h.rdb, env.SignalID)
				if err != nil || !st.Found || !st.Result.Success {
					t.Errorf("%s %s: %+v %v", ids[b], env.SignalID, st.Result, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	// Each round: buy 1 SOL at 150, paying 150 + 0.15 fee; sell it for 150 − 0.15.
	// −0.3 per round, 4 bots × 3 rounds: 10000 − 3.6 = 9996.4.
	testkit.EqualD(t, "shared balance", h.balance(), "9996.4")
	if n := h.exchangeOrders(); n != bots*rounds*2 {
		t.Fatalf("%d exchange orders, want %d", n, bots*rounds*2)
	}
	for _, id := range ids {
		if p := h.positionOf(id, "SOL/USDT"); p != nil {
			t.Fatalf("%s: position left %+v", id, p)
		}
		trades, err := position.NewBook(h.rdb).Trades(h.ctx, id)
		if err != nil || len(trades) != rounds {
			t.Fatalf("%s: %d trades (%v), want %d", id, len(trades), err, rounds)
		}
	}
}
