package executor_test

import (
	"testing"

	"github.com/sigops/sigops/runtime/exchange"
)

// BenchmarkPaperMarketBuySell is one paper round trip per iteration: a market buy of 10 %
// of the balance and the market sell that closes it, each through Handle (result check,
// bot and pause reads, plan, sizing, exchange transaction, booking transaction, result).
// It reports ns per round trip (two signals).
func BenchmarkPaperMarketBuySell(b *testing.B) {
	h := newHarness(b, nil)
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
	}
	b.StopTimer()
	if h.position("BTC/USDT") != nil {
		b.Fatal("position left open")
	}
	if n := h.exchangeOrders(); n != int64(2*b.N) {
		b.Fatalf("%d exchange orders for %d round trips", n, b.N)
	}
}
