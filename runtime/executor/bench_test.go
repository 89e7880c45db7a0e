package executor_test

import (
	"fmt"
	"testing"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/queue"
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
