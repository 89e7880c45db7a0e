package executor_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// BenchmarkPaperMarketBuySell is one paper round trip per iteration: a market buy of 10 %
// of the balance and the market sell that closes it, each through Handle (result check,
// bot and pause reads, plan, sizing, exchange transaction, booking transaction, result).
// It reports ns per round trip (two signals).
func BenchmarkPaperMarketBuySell(b *testing.B) {
	h := newHarness(b, nil)
	benchBuySell(b, h, nil)
	if n := h.exchangeOrders(); n != int64(2*b.N) {
		b.Fatalf("%d exchange orders for %d round trips", n, b.N)
	}
}

// BenchmarkPaperMarketBuySellRecorded is BenchmarkPaperMarketBuySell as `make run` and a
// deployment with PostgreSQL run it: each commit also appends the bot's book state, and
// each paper fill raises the account's change number and appends the change to the
// account's stream (runtime/bookstate, paper's record.go). No archiver runs: the appends
// cost the same whether or not the streams are trimmed meanwhile.
func BenchmarkPaperMarketBuySellRecorded(b *testing.B) {
	h := newHarness(b, nil)
	h.ex.WithBookRecord(dbtest.New(b))
	benchBuySell(b, h, nil)
}

// BenchmarkPaperMarketBuySellTenFollowers is BenchmarkPaperMarketBuySell for a master with
// ten followers: each signal also reads the followers' projections and enqueues ten copy
// signals (one pipeline each). The copies are not executed; the streams are emptied
// outside the timer.
func BenchmarkPaperMarketBuySellTenFollowers(b *testing.B) {
	h := newHarness(b, nil)
	var followers []string
	for i := 0; i < 10; i++ {
		id := fmt.Sprintf("bot-f%d", i)
		h.follower(id, "1000", nil)
		followers = append(followers, id)
	}
	benchBuySell(b, h, func(i int) {
		if i == 0 {
			if n := len(h.copies(followers[0])); n != 2 {
				b.Fatalf("%d copies for a follower after one round trip, want 2", n)
			}
		}
		for p := 1; p <= 4; p++ {
			for _, f := range followers {
				h.rdb.Del(h.ctx, queue.StreamOf(f, queue.Priority(p)))
			}
		}
	})
}

// benchBuySell times b.N market buy-and-sell round trips of the harness bot; after, if
// given, runs outside the timer after each.
func benchBuySell(b *testing.B, h *harness, after func(i int)) {
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	buy, sell := `{"action":"buy","symbol":"BTCUSDT"}`, `{"action":"sell","symbol":"BTCUSDT"}`
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		eb, es := h.envelope(buy), h.envelope(sell)
		b.StartTimer()
		if err := h.ex.Handle(h.ctx, eb); err != nil {
			b.Fatal(err)
		}
		if err := h.ex.Handle(h.ctx, es); err != nil {
			b.Fatal(err)
		}
		if after != nil {
			b.StopTimer()
			after(i)
			b.StartTimer()
		}
	}
	b.StopTimer()
	if h.position("BTC/USDT") != nil {
		b.Fatal("position left open")
	}
}

// BenchmarkRedisPing is the bare reference of the paper benchmarks: one PING round trip
// on the harness's Redis client, measured in the same run, so that a fill's cost reads as
// a multiple of the cheapest possible round trip on this machine.
func BenchmarkRedisPing(b *testing.B) {
	h := newHarness(b, nil)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if err := h.rdb.Ping(h.ctx).Err(); err != nil {
			b.Fatal(err)
		}
	}
}

// paperFillTripBudget is the most Redis round trips a steady-state paper fill may cost from
// its dequeue to its stored result: the XREADGROUP that delivers it, the first pipeline,
// the paper exchange's fill and the booking's commit script (which stores the result).
const paperFillTripBudget = 4

// BenchmarkPaperFillTrips runs market buys and sells of one paper bot through a real queue
// consumer and counts, per fill, the round trips from the XREADGROUP that delivered it to
// its stored result: that XREADGROUP and every trip of Handle on the executor's client.
// A successful fill's acknowledgement rides in the commit script (no trip of its own). It
// fails above paperFillTripBudget.
func BenchmarkPaperFillTrips(b *testing.B) {
	h := newHarness(b, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	// The bot's first fills load the scripts, record its starting equity and the hints.
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT"}`))
	h.ok(h.send(`{"action":"sell","symbol":"BTCUSDT"}`))
	exTrips, qTrips := &storetest.Trips{}, &storetest.Trips{}
	h.rdb.AddHook(exTrips)
	qc := queueClient(b, h.srv)
	qc.AddHook(qTrips)
	handled := make(chan error)
	consumer := queue.NewConsumer(qc, queue.Options{Name: "bench", LeaseTTL: 5 * time.Second, Logger: h.quiet})
	ctx, stop := context.WithCancel(h.ctx)
	defer stop()
	go func() {
		_ = consumer.Run(ctx, func(ctx context.Context, env queue.Envelope) error {
			exTrips.Take()
			err := h.ex.Handle(ctx, env)
			handled <- err
			return err
		})
	}()
	enq := h.srv.Client()
	defer enq.Close()
	fills, trips := 0, 0
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		for _, body := range []string{`{"action":"buy","symbol":"BTCUSDT"}`, `{"action":"sell","symbol":"BTCUSDT"}`} {
			env := h.envelope(body)
			if _, err := queue.Enqueue(h.ctx, enq, env); err != nil {
				b.Fatal(err)
			}
			if err := <-handled; err != nil {
				b.Fatal(err)
			}
			n, reads := len(exTrips.Take()), 0
			for _, t := range qTrips.Take() {
				if strings.HasPrefix(t, "xreadgroup") {
					reads++
				}
			}
			if reads < 1 {
				b.Fatalf("fill %d: no XREADGROUP delivered it", fills)
			}
			// One XREADGROUP delivered it; others before it (blocking reads that timed out)
			// delivered nothing and are not the fill's.
			trips += n + 1
			fills++
			if n+1 > paperFillTripBudget {
				b.Fatalf("fill %d (%s): %d round trips from the dequeue to the result, budget %d", fills, body, n+1, paperFillTripBudget)
			}
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(trips)/float64(fills), "trips/fill")
	if h.exchangeOrders() != int64(2*b.N+2) {
		b.Fatalf("%d exchange orders for %d fills", h.exchangeOrders(), fills+2)
	}
}
