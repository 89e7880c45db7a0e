package fleet_test

import (
	"testing"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/lab"
	"github.com/sigops/sigops/runtime/strategy"
)

// A finished job's experiment becomes the spec's symbol, market and strategy block, in each
// family's own parameter block, levels as the decimal strings the CRD takes.
func TestLabSpecAppliesTheExperimentsParameters(t *testing.T) {
	job := func(family strategy.Family, tf string, exps ...lab.Experiment) lab.Job {
		return lab.Job{ID: "j1", State: lab.StateDone, Request: lab.Request{Family: family, Symbol: "ETH/USDT",
			Market: "futures", Timeframe: tf}, Result: &lab.Result{Experiments: exps}}
	}
	cases := []struct {
		job   lab.Job
		index int
		check func(s *tradingv1.StrategySpec) bool
	}{
		{job(strategy.EMACrossover, "1h", lab.Experiment{Index: 0, Params: strategy.Params{FastPeriod: 12, SlowPeriod: 26}},
			lab.Experiment{Index: 3, Params: strategy.Params{FastPeriod: 7, SlowPeriod: 91}}), 3,
			func(s *tradingv1.StrategySpec) bool {
				return s.EMACrossover != nil && s.EMACrossover.FastPeriod == 7 && s.EMACrossover.SlowPeriod == 91 && s.RSIReversion == nil
			}},
		{job(strategy.RSIReversion, "15m", lab.Experiment{Index: 1, Params: strategy.Params{Period: 9, Oversold: 23, Overbought: 77}}), 1,
			func(s *tradingv1.StrategySpec) bool {
				return s.RSIReversion != nil && s.RSIReversion.Period == 9 && s.RSIReversion.Oversold == "23" && s.RSIReversion.Overbought == "77"
			}},
		{job(strategy.DonchianBreakout, "4h", lab.Experiment{Index: 2, Params: strategy.Params{Period: 40, ExitPeriod: 15}}), 2,
			func(s *tradingv1.StrategySpec) bool {
				return s.DonchianBreakout != nil && s.DonchianBreakout.Period == 40 && s.DonchianBreakout.ExitPeriod == 15
			}},
		// 2.3 is the grid's exact decimal, and stays that text.
		{job(strategy.BollingerReversion, "1d", lab.Experiment{Index: 5, Params: strategy.Params{Period: 33, StdDev: 2.3}}), 5,
			func(s *tradingv1.StrategySpec) bool {
				return s.BollingerReversion != nil && s.BollingerReversion.Period == 33 && s.BollingerReversion.StdDev == "2.3"
			}},
		{job(strategy.MACDCrossover, "1h", lab.Experiment{Index: 4, Params: strategy.Params{FastPeriod: 8, SlowPeriod: 21, SignalPeriod: 5}}), 4,
			func(s *tradingv1.StrategySpec) bool {
				return s.MACDCrossover != nil && s.MACDCrossover.FastPeriod == 8 && s.MACDCrossover.SlowPeriod == 21 &&
					s.MACDCrossover.SignalPeriod == 5 && s.EMACrossover == nil
			}},
		{job(strategy.Supertrend, "4h", lab.Experiment{Index: 7, Params: strategy.Params{Period: 14, Multiplier: 2.7}}), 7,
			func(s *tradingv1.StrategySpec) bool {
				return s.Supertrend != nil && s.Supertrend.Period == 14 && s.Supertrend.Multiplier == "2.7"
			}},
	}
	for _, c := range cases {
		spec, err := fleet.LabSpec(c.job, c.index)
		if err != nil {
			t.Fatalf("%s: %v", c.job.Request.Family, err)
		}
		s := spec.Strategy
		if spec.Symbol != "ETH/USDT" || spec.Market != tradingv1.MarketFutures || s == nil ||
			string(s.Family) != string(c.job.Request.Family) || s.Timeframe != c.job.Request.Timeframe || !c.check(s) {
			t.Fatalf("%s: spec %+v strategy %+v", c.job.Request.Family, spec, s)
		}
	}
}

func TestLabSpecRefusesWhatCannotBeApplied(t *testing.T) {
	r := lab.Request{Family: strategy.EMACrossover, Symbol: "BTC/USDT", Market: "spot", Timeframe: "1m"}
	running := lab.Job{ID: "j2", State: lab.StateRunning, Request: r}
	done := lab.Job{ID: "j3", State: lab.StateDone, Request: r, Result: &lab.Result{Experiments: []lab.Experiment{
		{Index: 0, Params: strategy.Params{FastPeriod: 12, SlowPeriod: 26}},
		{Index: 1, Error: &lab.ExperimentError{Code: lab.InsufficientCandles, Message: "too few"}}}}}
	for _, c := range []struct {
		job   lab.Job
		index int
		code  errs.Code
	}{{running, 0, errs.InvalidParameter}, {done, 1, errs.InvalidParameter}, {done, 7, errs.NotFound}} {
		if _, err := fleet.LabSpec(c.job, c.index); errs.CodeOf(err) != c.code {
			t.Fatalf("job %s experiment %d: %v, want %s", c.job.ID, c.index, err, c.code)
		}
	}
}
