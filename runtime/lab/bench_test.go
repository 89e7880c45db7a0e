package lab

import (
	"context"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/backtest"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/strategy"
)

const benchCandles = 100_000

// BenchmarkJob is one 30-experiment job on 100,000 one-minute candles end to end: Generate
// with the cost acknowledged (debit, record, dispatch), the engine (claim, 30 experiments on
// GOMAXPROCS workers over the cached Series, each outcome stored), the finish (rank, the
// overfitting estimate, a walk-forward job's stitched runs, result, state), and the caller
// seeing the job done. The series is fetched once before the timer (the engine's cache
// serves repeated jobs); BenchmarkSeries is that cost. Sub-benchmarks: holdout (the
// default split, 70 % in-sample and 30 % out-of-sample) and walkForward4 (4 folds over 5
// windows), each with the default costs (spot: binance fees and slippage; futures adds
// funding) and with fees and slippage off.
func BenchmarkJob(b *testing.B) {
	f := newFixture(b)
	c := f.user(b, "bench@example.com", auth.TierPro, "1000000")
	f.engine(b, "bench", nil, all, 0)
	no := false
	off := func(r *Request) { r.Costs = &Costs{Fees: &no, Slippage: &no} }
	for _, v := range []struct {
		name string
		set  func(*Request)
	}{
		{"holdout/costsOn", func(*Request) {}},
		{"holdout/costsOff", off},
		{"holdout/futuresCostsOn", func(r *Request) { r.Market = "futures" }},
		{"walkForward4/costsOn", func(r *Request) { r.WalkForwardFolds = 4 }},
		{"walkForward4/costsOff", func(r *Request) { r.WalkForwardFolds = 4; off(r) }},
	} {
		r := request(strategy.EMACrossover, MaxExperiments, benchCandles, 1)
		v.set(&r)
		b.Run(v.name, func(b *testing.B) { benchJob(b, f, c, r) })
	}
}

func benchJob(b *testing.B, f *fixture, c Caller, r Request) {
	ctx := context.Background()
	run := func() {
		out, err := f.lab.Generate(ctx, c, r)
		if err != nil {
			b.Fatal(err)
		}
		for {
			j, err := f.lab.Job(ctx, c.UserID, out.Job.ID)
			if err != nil {
				b.Fatal(err)
			}
			if j.State == StateDone {
				return
			}
			if j.State == StateFailed {
				b.Fatalf("job failed: %+v", j)
			}
			time.Sleep(200 * time.Microsecond)
		}
	}
	run() // fills the series cache
	for b.Loop() {
		run()
	}
}

// BenchmarkBare is the reference measured beside BenchmarkJob: the same 30 parameter sets
// backtested directly by backtest.Run in a loop on one goroutine, no Redis, no engine.
func BenchmarkBare(b *testing.B) {
	f := newFixture(b)
	r := request(strategy.EMACrossover, MaxExperiments, benchCandles, 1)
	candles, err := f.sim.CandlesBetween(context.Background(), exchange.Spot, r.Symbol, r.Timeframe, r.From, r.To)
	if err != nil {
		b.Fatal(err)
	}
	m, _ := paper.Market(exchange.Spot, r.Symbol)
	s, err := backtest.NewSeries(candles, m, r.Timeframe)
	if err != nil {
		b.Fatal(err)
	}
	sets := ParameterSets(r.Family, r.Experiments, *r.Seed)
	for b.Loop() {
		for _, p := range sets {
			cfg, _ := r.config(r.spec(p))
			if _, err := backtest.Run(context.Background(), s, cfg); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkSeries is what a job pays once for a period the cache does not hold: 100,000
// simulated one-minute candles computed, then the Series built.
func BenchmarkSeries(b *testing.B) {
	f := newFixture(b)
	r := request(strategy.EMACrossover, 1, benchCandles, 1)
	m, _ := paper.Market(exchange.Spot, r.Symbol)
	for b.Loop() {
		candles, err := f.sim.CandlesBetween(context.Background(), exchange.Spot, r.Symbol, r.Timeframe, r.From, r.To)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := backtest.NewSeries(candles, m, r.Timeframe); err != nil {
			b.Fatal(err)
		}
	}
}
