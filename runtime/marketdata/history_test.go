package marketdata_test

import (
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/marketdata/marketdatafake"
)

// The simulated period is the same candles Candles gives for those open times.
func TestSimulatedCandlesBetween(t *testing.T) {
	clk := testkit.NewClock(time.Date(2026, 11, 24, 12, 0, 10, 0, time.UTC))
	sim := marketdata.NewSimulated(marketdata.SimulatedOptions{Now: clk.Now})
	ctx := t.Context()
	recent, err := sim.Candles(ctx, exchange.Spot, "BTC/USDT", "1m", 100) // 99 closed, then the open one
	if err != nil {
		t.Fatal(err)
	}
	// From 30 s into the candle of recent[10] (so it starts with recent[11]) to the open
	// candle's open time plus a minute: the open candle (recent[99]) is left out.
	from := time.UnixMilli(recent[10].Timestamp + 30_000)
	to := time.UnixMilli(recent[99].Timestamp + 60_000)
	got, err := sim.CandlesBetween(ctx, exchange.Spot, "BTC/USDT", "1m", from, to)
	if err != nil {
		t.Fatal(err)
	}
	want := recent[11:99] // 88 candles
	if len(got) != len(want) {
		t.Fatalf("%d candles, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Timestamp != want[i].Timestamp || !got[i].Close.Equal(want[i].Close) || !got[i].High.Equal(want[i].High) ||
			!got[i].Volume.Equal(want[i].Volume) {
			t.Fatalf("candle %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	// 200,001 one-minute candles: refused before any work.
	far := from.Add(-(marketdata.MaxHistoryCandles + 1) * time.Minute)
	if _, err := sim.CandlesBetween(ctx, exchange.Spot, "BTC/USDT", "1m", far, from); errs.CodeOf(err) != errs.InvalidParameter {
		t.Fatalf("over the bound: %v", err)
	}
	if _, err := sim.CandlesBetween(ctx, exchange.Spot, "BTC/USDT", "1m", to, from); errs.CodeOf(err) != errs.InvalidParameter {
		t.Fatalf("reversed period: %v", err)
	}
}

// Binance and Bybit page through a period longer than one request (2,500 one-minute
// candles: three requests each) and return exactly the simulated candles, repeats dropped.
func TestVenuesCandlesBetweenPage(t *testing.T) {
	clk := testkit.NewClock(time.Date(2026, 11, 24, 12, 0, 10, 0, time.UTC))
	sim := marketdata.NewSimulated(marketdata.SimulatedOptions{Now: clk.Now})
	fake := marketdatafake.New(sim)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	to := time.Date(2026, 11, 24, 11, 0, 0, 0, time.UTC)
	from := to.Add(-2500 * time.Minute)
	want, err := sim.CandlesBetween(t.Context(), exchange.Futures, "ETH/USDT", "1m", from, to)
	if err != nil || len(want) != 2500 {
		t.Fatalf("simulated: %d, %v", len(want), err)
	}
	fake.Duplicate(from.Add(1000 * time.Minute))
	for name, h := range map[string]marketdata.History{
		"binance": marketdata.NewBinancePublic(srv.URL, srv.URL, nil),
		"bybit":   marketdata.NewBybitPublic(srv.URL, "", nil),
	} {
		before := fake.Calls()
		got, err := h.CandlesBetween(t.Context(), exchange.Futures, "ETH/USDT", "1m", from, to)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if calls := fake.Calls() - before; calls != 3 {
			t.Errorf("%s: %d requests, want 3 (1000 + 1000 + 500)", name, calls)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d candles, want %d", name, len(got), len(want))
		}
		for i := range want {
			if got[i].Timestamp != want[i].Timestamp || !got[i].Open.Equal(want[i].Open) || !got[i].Close.Equal(want[i].Close) {
				t.Fatalf("%s candle %d: %+v, want %+v", name, i, got[i], want[i])
			}
		}
	}
	fake.SetDown(true)
	if _, err := marketdata.NewBybitPublic(srv.URL, "", nil).CandlesBetween(t.Context(), exchange.Spot, "BTC/USDT", "1h", from, to); errs.CodeOf(err) != errs.ExchangeError {
		t.Fatalf("venue down: %v", err)
	}
}
