package lab

import (
	"context"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/strategy"
)

// checkItemised fails unless every window of every experiment that ran itemises its costs
// and they add up to its total PnL exactly: gross − fees − funding.
func checkItemised(t *testing.T, j Job) (fees, slippage, funding bool) {
	t.Helper()
	ran := 0
	for _, x := range j.Result.Experiments {
		if x.Error != nil {
			continue
		}
		ran++
		for k, w := range x.Windows {
			c := w.Costs
			if c == nil {
				t.Fatalf("experiment %d window %d: no costs", x.Index, k)
			}
			if got := c.GrossPnl.Sub(c.Fees.Decimal).Sub(c.Funding.Decimal); !got.Equal(w.Metrics.TotalPnL.Decimal) {
				t.Fatalf("experiment %d window %d: gross %v − fees %v − funding %v = %v, total PnL %v", x.Index, k, c.GrossPnl, c.Fees, c.Funding, got, w.Metrics.TotalPnL)
			}
			fees = fees || c.Fees.IsPositive()
			slippage = slippage || c.Slippage.IsPositive()
			funding = funding || !c.Funding.IsZero()
		}
	}
	if ran == 0 {
		t.Fatal("no experiment ran")
	}
	return fees, slippage, funding
}

// TestCostsOnByDefault: a job names no costs and gets them all, written into its request;
// every window itemises them and they add up; a futures job pays funding.
func TestCostsOnByDefault(t *testing.T) {
	f := newFixture(t)
	c := f.user(t, "costs@example.com", auth.TierPro, "100")
	f.engine(t, "costs", nil, all, 2)
	ctx := context.Background()

	spot, err := f.lab.Generate(ctx, c, request(strategy.EMACrossover, 4, 4000, 2))
	if err != nil {
		t.Fatal(err)
	}
	got := spot.Job.Request.Costs
	if got == nil || got.Venue != "binance" || got.FeeTier != "regular" || !*got.Fees || !*got.Slippage || *got.Funding ||
		got.SlippageCapPercent != DefaultSlippageCapPercent {
		t.Fatalf("spot job's costs %+v: want binance regular fees and slippage, no funding", got)
	}
	fees, slippage, funding := checkItemised(t, f.waitDone(t, c, spot.Job.ID))
	if !fees || !slippage || funding {
		t.Fatalf("spot: fees %v slippage %v funding %v, want fees and slippage only", fees, slippage, funding)
	}

	r := request(strategy.EMACrossover, 4, 4000, 2)
	r.Market = "futures"
	fut, err := f.lab.Generate(ctx, c, r)
	if err != nil {
		t.Fatal(err)
	}
	if !*fut.Job.Request.Costs.Funding {
		t.Fatal("a futures job without funding")
	}
	// 4,000 minutes hold eight 8-hour settlements: a position held through one pays or
	// receives.
	if _, _, funding := checkItemised(t, f.waitDone(t, c, fut.Job.ID)); !funding {
		t.Fatal("no futures window paid or received funding")
	}

	// A venue and tier as a person types them are stored as the schedule names them.
	typed := request(strategy.EMACrossover, 1, 4000, 2)
	typed.AcknowledgeCost = false
	typed.Costs = &Costs{Venue: " Bybit", FeeTier: "VIP 1"}
	est, err := f.lab.Generate(ctx, c, typed)
	if err != nil || est.Estimate.Proceed.Costs.Venue != "bybit" || est.Estimate.Proceed.Costs.FeeTier != "vip1" {
		t.Fatalf("typed venue and tier: %v %+v, want bybit vip1", err, est.Estimate)
	}

	off := request(strategy.EMACrossover, 2, 4000, 2)
	no := false
	off.Costs = &Costs{Fees: &no, Slippage: &no}
	job, err := f.lab.Generate(ctx, c, off)
	if err != nil {
		t.Fatal(err)
	}
	if fees, slippage, _ := checkItemised(t, f.waitDone(t, c, job.Job.ID)); fees || slippage {
		t.Fatalf("costs off: fees %v slippage %v", fees, slippage)
	}
}

func TestCostBounds(t *testing.T) {
	f := newFixture(t)
	c := f.user(t, "cb@example.com", auth.TierPro, "100")
	yes := true
	for _, tc := range []struct {
		market string
		costs  Costs
		param  string
	}{
		{"spot", Costs{Venue: "kraken"}, "venue"},
		{"spot", Costs{Venue: "binance", FeeTier: "vip99"}, "feeTier"},
		{"spot", Costs{Venue: "okx", FeeTier: "vip6"}, "feeTier"},
		{"spot", Costs{SlippageCapPercent: "11"}, "slippageCapPercent"},
		{"spot", Costs{SlippageCapPercent: "x"}, "slippageCapPercent"},
		{"spot", Costs{Funding: &yes}, "funding"},
	} {
		r := request(strategy.EMACrossover, 2, 3000, 1)
		r.Market, r.Costs = tc.market, &tc.costs
		_, err := f.lab.Generate(context.Background(), c, r)
		e, ok := errs.As(err)
		if !ok || e.Code != errs.InvalidParameter || e.Details["parameter"] != tc.param {
			t.Fatalf("%+v: %v, want INVALID_PARAMETER on %s", tc.costs, err, tc.param)
		}
	}
}

// candlesOnly is a market data source without a funding history.
type candlesOnly struct{ h marketdata.History }

func (c candlesOnly) CandlesBetween(ctx context.Context, kind exchange.Kind, symbol, tf string, from, to time.Time) ([]marketdata.Candle, error) {
	return c.h.CandlesBetween(ctx, kind, symbol, tf, from, to)
}

// A futures job charging funding on a source without funding history fails its
// experiments (refunded) in words; the same job with funding off runs.
func TestFundingWithoutAFundingHistory(t *testing.T) {
	f := newFixture(t)
	c := f.user(t, "nofund@example.com", auth.TierPro, "100")
	f.engine(t, "nofund", candlesOnly{f.sim}, all, 2)
	r := request(strategy.EMACrossover, 2, 3000, 1)
	r.Market = "futures"
	out, err := f.lab.Generate(context.Background(), c, r)
	if err != nil {
		t.Fatal(err)
	}
	j := f.waitDone(t, c, out.Job.ID)
	if j.State != StateFailed || !j.RefundedUsd.Equal(d("1")) || j.Result.Experiments[0].Error.Code != string(errs.ExchangeError) {
		t.Fatalf("job %s refunded %v: %+v", j.State, j.RefundedUsd, j.Result.Experiments[0].Error)
	}
	no := false
	r.Costs = &Costs{Funding: &no}
	out, err = f.lab.Generate(context.Background(), c, r)
	if err != nil {
		t.Fatal(err)
	}
	if j := f.waitDone(t, c, out.Job.ID); j.State != StateDone {
		t.Fatalf("funding off: %s", j.State)
	}
}
