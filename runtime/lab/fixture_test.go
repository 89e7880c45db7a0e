package lab

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/backtest/candlegen"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/strategy"
)

// fixtureHistory serves fixed candles (the generated fixture) for any period within them,
// and the simulated market's funding.
type fixtureHistory struct {
	candles []marketdata.Candle
	sim     *marketdata.Simulated
}

func (h fixtureHistory) CandlesBetween(_ context.Context, _ exchange.Kind, _, _ string, from, to time.Time) ([]marketdata.Candle, error) {
	var out []marketdata.Candle
	for _, c := range h.candles {
		if c.Timestamp >= from.UnixMilli() && c.Timestamp < to.UnixMilli() {
			out = append(out, c)
		}
	}
	return out, nil
}

func (h fixtureHistory) FundingBetween(ctx context.Context, symbol string, from, to time.Time) ([]marketdata.FundingRate, error) {
	return h.sim.FundingBetween(ctx, symbol, from, to)
}

// TestThirtyExperimentsOnTheFixture: a job of 30 experiments on the generated fixture
// (100,000 one-minute BTC/USDT candles, seed 1, about 69 days) reports every experiment's
// in-sample and out-of-sample figures and the overfitting estimate over 16 blocks.
func TestThirtyExperimentsOnTheFixture(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cs, err := candlegen.Generate(candlegen.Options{Seed: 1, Count: 100_000, Symbol: "BTC/USDT", Start: start})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	c := f.user(t, "fixture@example.com", auth.TierPro, "100")
	f.engine(t, "fixture", fixtureHistory{candles: cs, sim: f.sim}, all, 0)
	seed := int64(1)
	r := Request{Family: strategy.EMACrossover, Symbol: "BTC/USDT", Market: "spot", Timeframe: "1m", From: start,
		To: start.Add(100_000 * time.Minute), Experiments: MaxExperiments, Seed: &seed, AcknowledgeCost: true}
	out, err := f.lab.Generate(context.Background(), c, r)
	if err != nil {
		t.Fatal(err)
	}
	j := f.waitDone(t, c, out.Job.ID)
	res := j.Result
	if j.State != StateDone || res.Candles != 100_000 || res.Failed != 0 || len(res.Experiments) != MaxExperiments {
		t.Fatalf("job %s: %d candles, %d failed, %d experiments", j.State, res.Candles, res.Failed, len(res.Experiments))
	}
	for _, x := range res.Experiments {
		if x.Metrics == nil || x.OutOfSample == nil || x.OutOfSample.Candles != 30_000 || x.Windows[0].Candles != 70_000 {
			t.Fatalf("experiment %d: in-sample %+v out-of-sample %+v", x.Index, x.Metrics, x.OutOfSample)
		}
	}
	o := res.Overfitting
	if o == nil || o.Estimate == nil || o.Estimate.Strategies != 30 || o.Estimate.Blocks != 16 || o.Estimate.Combinations != 12870 {
		t.Fatalf("overfitting %+v", o)
	}
	b := res.Best
	if b.OutOfSample.Metrics.TotalPnL.IsNegative() != strings.Contains(o.Message, "Out of sample the best parameter set lost money") {
		t.Fatalf("out-of-sample PnL %v, reading %q", b.OutOfSample.Metrics.TotalPnL, o.Message)
	}
	t.Logf("PBO %.3f (%s, median logit %.3f over %d days); best experiment %d: in-sample Sharpe %.2f, return %.2f %%; out-of-sample Sharpe %.2f, return %.2f %%",
		o.Estimate.Probability, o.Level, o.Estimate.MedianLogit, o.Estimate.Days, b.Index, b.InSample.Metrics.SharpeRatio,
		b.InSample.Metrics.TotalPnLPercent, b.OutOfSample.Metrics.SharpeRatio, b.OutOfSample.Metrics.TotalPnLPercent)
}
