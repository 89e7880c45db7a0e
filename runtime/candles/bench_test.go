package candles_test

import (
	"slices"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/candles"
)

// BenchmarkCandlesCached is Get of a hot series from the replica's memory (the default 1h
// limit, 168 candles), with its p99.
func BenchmarkCandlesCached(b *testing.B) {
	w := newWorld(b)
	s := w.service()
	req := candles.Request{Symbol: "BTCUSDT", ExchangeID: "binance", Timeframe: "1h"}
	if _, err := s.Get(b.Context(), req); err != nil {
		b.Fatal(err)
	}
	durs := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if _, err := s.Get(b.Context(), req); err != nil {
			b.Fatal(err)
		}
		durs = append(durs, time.Since(t0))
	}
	b.StopTimer()
	slices.Sort(durs)
	b.ReportMetric(float64(durs[len(durs)*99/100].Nanoseconds()), "p99-ns")
	if w.fake.Calls() != 1 {
		b.Fatalf("%d venue calls", w.fake.Calls())
	}
}
