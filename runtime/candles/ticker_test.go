package candles_test

import (
	"testing"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/candles"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/marketdata"
)

func TestTicker(t *testing.T) {
	w := newWorld(t)
	s := w.service()
	ctx := t.Context()
	venue, err := w.sim.Price(ctx, exchange.Futures, "ETH/USDT")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Ticker(ctx, candles.TickerRequest{Symbol: "ethusdt.p", ExchangeID: "bybit", Market: "futures"})
	want := candles.Ticker{Symbol: "ETH/USDT", Market: "futures", Price: httpapi.Num(venue), AsOf: start.UnixMilli()}
	if err != nil || !got.Price.Equal(want.Price.Decimal) || got.Symbol != want.Symbol || got.Market != want.Market ||
		got.AsOf != want.AsOf || got.UsingFallback {
		t.Fatalf("bybit: %+v, %v; want %+v", got, err, want)
	}
	// The venue down, and paper trading: the public source (another seed) answers.
	fallback := marketdata.NewSimulated(marketdata.SimulatedOptions{Seed: fallbackSeed, Now: w.clk.Now})
	public, err := fallback.Price(ctx, exchange.Spot, "BTC/USDT")
	if err != nil || public.Equal(testkit.D("0")) {
		t.Fatal(public, err)
	}
	w.fake.SetDown(true)
	for _, id := range []string{"bybit", "paper", ""} {
		got, err := s.Ticker(ctx, candles.TickerRequest{Symbol: "BTC-USDT", ExchangeID: id})
		if err != nil || !got.Price.Equal(public) || !got.UsingFallback || got.Market != "spot" {
			t.Fatalf("%q: %+v, %v; want %s from the public source", id, got, err, public)
		}
	}
	for _, tc := range []struct {
		req  candles.TickerRequest
		code errs.Code
	}{
		{candles.TickerRequest{Symbol: "NOPE/USDT"}, errs.InvalidSymbol},
		{candles.TickerRequest{Symbol: ""}, errs.MissingSymbol},
		{candles.TickerRequest{Symbol: "BTCUSDT", Market: "options"}, errs.InvalidParameter},
		{candles.TickerRequest{Symbol: "BTCUSDT", ExchangeID: "conn-x", Owner: "bob@example.com"}, errs.NotFound},
	} {
		if _, err := s.Ticker(ctx, tc.req); errs.CodeOf(err) != tc.code {
			t.Fatalf("%+v: %v, want %s", tc.req, err, tc.code)
		}
	}
}
