package backtest

import (
	"context"
	"sync"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/backtest/candlegen"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/strategy"
)

var (
	benchOnce   sync.Once
	benchSeries *Series
)

// benchSeriesOf is 100,000 generated one-minute BTC/USDT candles (seed 1) as a futures
// Series, made once.
func benchSeriesOf(b *testing.B) *Series {
	benchOnce.Do(func() {
		cs, err := candlegen.Generate(candlegen.Options{Seed: 1, Count: 100000, Symbol: "BTC/USDT"})
		if err != nil {
			b.Fatal(err)
		}
		if benchSeries, err = NewSeries(cs, futBTC(), "1m"); err != nil {
			b.Fatal(err)
		}
	})
	return benchSeries
}

// BenchmarkRun is one experiment per family with its default parameters on 100,000
// one-minute candles (futures, so both sides trade), and the same with costs: maker 0.02 %,
// taker 0.05 %, slippage capped at 0.5 %, funding every 8 hours (fundingFor).
func BenchmarkRun(b *testing.B) {
	s := benchSeriesOf(b)
	costs := &Costs{MakerFee: decimal.RequireFromString("0.0002"), TakerFee: decimal.RequireFromString("0.0005"),
		Slippage: &Slippage{Cap: decimal.RequireFromString("0.005")}, Funding: fundingFor(s, 1)}
	for _, f := range strategy.Families() {
		b.Run(string(f), func(b *testing.B) { benchRun(b, s, f, nil) })
	}
	for _, f := range strategy.Families() {
		b.Run("costs/"+string(f), func(b *testing.B) { benchRun(b, s, f, costs) })
	}
}

// benchRun runs family f's defaults on s with costs (nil: none) as one benchmark.
func benchRun(b *testing.B, s *Series, f strategy.Family, costs *Costs) {
	cfg := baseConfig()
	cfg.Strategy.Family, cfg.Strategy.Params = f, f.Defaults()
	cfg.Costs = costs
	var trades int
	b.ReportAllocs()
	for b.Loop() {
		r, err := Run(context.Background(), s, cfg)
		if err != nil {
			b.Fatal(err)
		}
		trades = len(r.Trades)
	}
	b.ReportMetric(float64(s.Len())*float64(b.N)/b.Elapsed().Seconds(), "candles/s")
	b.ReportMetric(float64(trades), "trades")
}

// BenchmarkLoopOnly is the candle loop with a strategy that never signals: the cost of the
// loop without indicators or fills.
func BenchmarkLoopOnly(b *testing.B) {
	s := benchSeriesOf(b)
	c, err := normalise(baseConfig(), s)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := runWith(context.Background(), s, c, never{}, true); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(s.Len())*float64(b.N)/b.Elapsed().Seconds(), "candles/s")
}

var sink float64

// BenchmarkBareSum is the reference: a loop that only sums the closes of the same Series'
// bars.
func BenchmarkBareSum(b *testing.B) {
	s := benchSeriesOf(b)
	for b.Loop() {
		var sum float64
		for i := range s.bars {
			sum += s.bars[i].Close
		}
		sink = sum
	}
	b.ReportMetric(float64(s.Len())*float64(b.N)/b.Elapsed().Seconds(), "candles/s")
}

// BenchmarkNewSeries converts 100,000 candles.
func BenchmarkNewSeries(b *testing.B) {
	cs, err := candlegen.Generate(candlegen.Options{Seed: 1, Count: 100000, Symbol: "BTC/USDT"})
	if err != nil {
		b.Fatal(err)
	}
	m := futBTC()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewSeries(cs, m, "1m"); err != nil {
			b.Fatal(err)
		}
	}
}

var _ = exchange.Futures
