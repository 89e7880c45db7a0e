package executor_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// A consumer that reads one signal of each of N bots runs them together: their first
// pipelines, their paper fills and their commits each go to Redis as one round trip
// (store.Coalescer, entered by the consumer for all N before any starts), so the batch
// costs the same few round trips for 3 bots as for 24, where one at a time it costs 3 per
// signal.
func TestBatchOfBotsCostsAConstantNumberOfRoundTrips(t *testing.T) {
	for _, n := range []int{3, 24} {
		t.Run(fmt.Sprintf("%d bots", n), func(t *testing.T) {
			h := newHarness(t, nil)
			// Only "every running signal is waiting" sends a step: the count does not then
			// depend on how fast this machine runs the steps between two round trips.
			h.ex = executor.New(executor.Deps{Redis: h.rdb, Prices: h.px, Logger: h.quiet, Now: func() time.Time { return h.now },
				CoalesceWait: time.Minute})
			h.px.set(exchange.Spot, "BTC/USDT", "65000")
			bots := batchBots(t, h, n)
			exTrips := &storetest.Trips{}
			h.rdb.AddHook(exTrips)
			// Round 1 warms each bot up (scripts, read-ahead hints, its starting equity);
			// round 2 is measured. Each round's signals are all queued before its consumer
			// starts, so that one read delivers them all.
			for round, body := range []string{`{"action":"buy","symbol":"BTCUSDT"}`, `{"action":"sell","symbol":"BTCUSDT"}`} {
				var envs []queue.Envelope
				for _, b := range bots {
					env := h.envelope(body)
					env.BotID = b.ID
					env.SignalID = queue.SignalIDFor(b.ID, env.SignalID)
					envs = append(envs, env)
					if _, err := queue.Enqueue(h.ctx, h.rdb, env); err != nil {
						t.Fatal(err)
					}
				}
				exTrips.Take()
				runBatch(t, h, n)
				trips := exTrips.Take()
				for _, env := range envs {
					st, err := queue.GetResult(h.ctx, h.rdb, env.SignalID)
					if err != nil || !st.Found || !st.Result.Success {
						t.Fatalf("round %d, %s: %+v %v", round+1, env.BotID, st, err)
					}
				}
				if round == 0 {
					continue
				}
				t.Logf("%d signals of %d bots: %d round trips", n, n, len(trips))
				for i, tr := range trips {
					t.Logf("  %2d  %d commands: %.60s...", i+1, len(strings.Fields(tr)), tr)
				}
				// The first pipeline, the paper fill and the commit, each once for all of them.
				if len(trips) != 3 {
					t.Errorf("%d signals of %d bots cost %d round trips, want 3", n, n, len(trips))
				}
			}
		})
	}
}

// runBatch runs a consumer, with the executor's Gate, until it has handled n signals.
func runBatch(t *testing.T, h *harness, n int) {
	t.Helper()
	handled := make(chan error, n)
	consumer := queue.NewConsumer(queueClient(t, h.srv), queue.Options{Name: "batch", LeaseTTL: 5 * time.Second,
		Logger: h.quiet, MaxInFlight: n, BatchSize: n, Gate: h.ex.Gate()})
	ctx, stop := context.WithCancel(h.ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = consumer.Run(ctx, func(ctx context.Context, env queue.Envelope) error {
			err := h.ex.Handle(ctx, env)
			handled <- err
			return err
		})
	}()
	for range n {
		if err := <-handled; err != nil {
			t.Fatal(err)
		}
	}
	stop()
	<-done
}

// batchBots projects n spot bots like the harness's, in its bot's partition (one consumer
// worker reads them all), each on a paper account of its own.
func batchBots(t *testing.T, h *harness, n int) []registry.Bot {
	t.Helper()
	var bots []registry.Bot
	for i := 0; len(bots) < n; i++ {
		id := fmt.Sprintf("bot-b%d", i)
		if store.PartitionOf(id) != store.PartitionOf(h.bot.ID) {
			continue
		}
		acct := "acct-" + id
		if _, err := paper.NewAccounts(h.rdb).Ensure(h.ctx, paper.Config{ID: acct, Owner: "a@x.io", Currency: "USDT",
			InitialBalance: testkit.D("10000"), FeeRate: testkit.D("0.001")}); err != nil {
			t.Fatal(err)
		}
		b := h.bot
		b.ID, b.Name, b.Account.ID = id, id, acct
		if err := h.reg.Project(h.ctx, b, "hook-"+id); err != nil {
			t.Fatal(err)
		}
		bots = append(bots, b)
	}
	return bots
}
