package lab

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/strategy"
)

// tamperedHistory serves the simulated candles, with every candle opening at or after cut
// replaced by a different market (prices mirrored around the first tampered open), and
// records the latest open time it served.
type tamperedHistory struct {
	marketdata.History
	cut time.Time
}

func (h tamperedHistory) CandlesBetween(ctx context.Context, kind exchange.Kind, symbol, tf string, from, to time.Time) ([]marketdata.Candle, error) {
	cs, err := h.History.CandlesBetween(ctx, kind, symbol, tf, from, to)
	if err != nil {
		return nil, err
	}
	out := append([]marketdata.Candle(nil), cs...)
	var pivot decimal.Decimal
	for i, c := range out {
		if c.Timestamp < h.cut.UnixMilli() {
			continue
		}
		if pivot.IsZero() {
			pivot = c.Open
		}
		m := func(p decimal.Decimal) decimal.Decimal { return pivot.Mul(decimal.NewFromInt(2)).Sub(p) }
		out[i].Open, out[i].Close, out[i].High, out[i].Low = m(c.Open), m(c.Close), m(c.Low), m(c.High)
	}
	return out, nil
}

// TestOutOfSampleNeverReadByTheSearch: the same job on two markets that agree on the
// in-sample part and differ after it ranks the experiments alike, with the same in-sample
// figures, while their out-of-sample figures differ: nothing after the split reaches the
// ranking.
func TestOutOfSampleNeverReadByTheSearch(t *testing.T) {
	f := newFixture(t)
	c := f.user(t, "oos@example.com", auth.TierPro, "100")
	ctx := context.Background()
	r := request(strategy.EMACrossover, 6, 4000, 3)
	// 4000 candles, 30 % out of sample: the split is at candle 2800.
	cut := now.Add(-1200 * time.Minute)
	run := func(name string, h marketdata.History) Job {
		out, err := f.lab.Generate(ctx, c, r)
		if err != nil {
			t.Fatal(err)
		}
		_, stop := f.engine(t, name, h, all, 2)
		defer stop()
		return f.waitDone(t, c, out.Job.ID)
	}
	plain := run("plain", f.sim)
	tampered := run("tampered", tamperedHistory{History: f.sim, cut: cut})
	v := plain.Result.Validation
	if v == nil || v.Mode != ModeHoldout || v.OutOfSamplePercent != 30 || len(v.Windows) != 2 ||
		v.Windows[1].From != cut.UnixMilli() || v.Windows[0].Candles != 2800 || v.Windows[1].Candles != 1200 {
		t.Fatalf("validation %+v, want a holdout split at %d (2800 + 1200 candles)", v, cut.UnixMilli())
	}
	differ := false
	for i, x := range plain.Result.Experiments {
		y := tampered.Result.Experiments[i]
		if x.Index != y.Index || x.Rank != y.Rank {
			t.Fatalf("rank %d: experiment %d on the plain market, %d on the tampered one", i+1, x.Index, y.Index)
		}
		if x.Error != nil {
			continue
		}
		a, _ := json.Marshal(x.Metrics)
		b, _ := json.Marshal(y.Metrics)
		if string(a) != string(b) || x.Trades != y.Trades || !x.FinalEquity.Equal(y.FinalEquity.Decimal) {
			t.Fatalf("experiment %d's in-sample figures moved with the out-of-sample candles:\n%s\n%s", x.Index, a, b)
		}
		if !x.OutOfSample.FinalEquity.Equal(y.OutOfSample.FinalEquity.Decimal) {
			differ = true
		}
	}
	if !differ {
		t.Fatal("no out-of-sample figure changed with the out-of-sample candles: the test shows nothing")
	}
	b := plain.Result.Best
	if b == nil || b.InSample == nil || b.OutOfSample == nil || b.OutOfSample.From != cut.UnixMilli() ||
		b.InSample.Metrics.SharpeRatio != plain.Result.Experiments[0].Metrics.SharpeRatio {
		t.Fatalf("best %+v: want the first-ranked experiment's in-sample and out-of-sample figures", b)
	}
	if o := plain.Result.Overfitting; o == nil || o.Level == "" || o.Message == "" {
		t.Fatalf("overfitting %+v", o)
	}
	for _, x := range plain.Result.Experiments {
		if x.Returns != nil {
			t.Fatal("the result carries the experiments' daily returns")
		}
	}
}

// TestWalkForwardChainsEachFoldsChoice: four folds over five windows; each fold's choice
// is the first-ranked on its in-sample window, scored on the next, the runs chained; the
// job's best is the latest fold's choice.
func TestWalkForwardChainsEachFoldsChoice(t *testing.T) {
	f := newFixture(t)
	c := f.user(t, "wf@example.com", auth.TierPro, "100")
	r := request(strategy.EMACrossover, 8, 5000, 9)
	r.WalkForwardFolds = 4
	out, err := f.lab.Generate(context.Background(), c, r)
	if err != nil {
		t.Fatal(err)
	}
	if out.Job.Request.OutOfSamplePercent != 0 || !out.Job.CostUsd.Equal(d("4")) {
		t.Fatalf("request %+v cost %v: want no holdout share and 8 × 0.50 = 4 USD whatever the folds", out.Job.Request, out.Job.CostUsd)
	}
	f.engine(t, "wf", nil, all, 2)
	job := f.waitDone(t, c, out.Job.ID)
	res := job.Result
	wf := res.WalkForward
	if wf == nil || len(wf.Folds) != 4 || len(res.Validation.Windows) != 5 {
		t.Fatalf("walk-forward %+v, validation %+v: want 4 folds over 5 windows", wf, res.Validation)
	}
	for j, fold := range wf.Folds {
		w, _ := foldWinner(res.Experiments, j, job.Request.MinTrades)
		if fold.Chosen != w.Index || fold.OutOfSample.From != res.Validation.Windows[j+1].From {
			t.Fatalf("fold %d chose %d scored from %d; want %d, scored on window %d", j, fold.Chosen, fold.OutOfSample.From, w.Index, j+1)
		}
		// Chained: each fold's run starts from the previous one's final equity.
		if j > 0 {
			prev := wf.Folds[j-1].OutOfSample.FinalEquity
			if fold.OutOfSample.Trades > 0 && fold.OutOfSample.Metrics.TotalPnL.Add(prev.Decimal).Cmp(fold.OutOfSample.FinalEquity.Decimal) != 0 {
				t.Fatalf("fold %d: %v + %v != %v", j, prev, fold.OutOfSample.Metrics.TotalPnL, fold.OutOfSample.FinalEquity)
			}
		}
	}
	last := wf.Folds[3]
	if wf.Chosen != last.Chosen || res.Best == nil || res.Best.Index != last.Chosen || res.Experiments[0].Index != last.Chosen {
		t.Fatalf("the latest fold chose %d; walk-forward says %d, best %+v", last.Chosen, wf.Chosen, res.Best)
	}
	total := decimal.Zero
	trades := 0
	for _, fold := range wf.Folds {
		total = total.Add(fold.OutOfSample.Metrics.TotalPnL.Decimal)
		trades += fold.OutOfSample.Trades
	}
	if !wf.OutOfSample.Metrics.TotalPnL.Equal(total) || wf.OutOfSample.Trades != trades ||
		!wf.OutOfSample.FinalEquity.Equal(last.OutOfSample.FinalEquity.Decimal) || !d("10000").Add(total).Equal(last.OutOfSample.FinalEquity.Decimal) {
		t.Fatalf("stitched %+v: want the folds' total %v over %d trades, ending at the last fold's equity", wf.OutOfSample, total, trades)
	}
	if c := wf.OutOfSample.Costs; c == nil || !c.GrossPnl.Sub(c.Fees.Decimal).Sub(c.Funding.Decimal).Equal(total) {
		t.Fatalf("stitched costs %+v do not add up to the total %v", c, total)
	}
	if len(wf.Equity) < 2 || !wf.Equity[0].Equity.Equal(d("10000")) || !wf.Equity[len(wf.Equity)-1].Equity.Equal(last.OutOfSample.FinalEquity.Decimal) {
		t.Fatalf("stitched curve from %v to %v", wf.Equity[0], wf.Equity[len(wf.Equity)-1])
	}
}

func TestValidationBounds(t *testing.T) {
	f := newFixture(t)
	c := f.user(t, "vb@example.com", auth.TierPro, "100")
	for _, tc := range []struct {
		pct, folds int
		param      string
	}{{9, 0, "outOfSamplePercent"}, {51, 0, "outOfSamplePercent"}, {0, 1, "walkForwardFolds"}, {0, 7, "walkForwardFolds"}, {20, 3, "outOfSamplePercent"}} {
		r := request(strategy.EMACrossover, 2, 3000, 1)
		r.OutOfSamplePercent, r.WalkForwardFolds = tc.pct, tc.folds
		_, err := f.lab.Generate(context.Background(), c, r)
		e, ok := errs.As(err)
		if !ok || e.Code != errs.InvalidParameter || e.Details["parameter"] != tc.param {
			t.Fatalf("%+v: %v, want INVALID_PARAMETER on %s", tc, err, tc.param)
		}
	}
	r := request(strategy.EMACrossover, 2, 3000, 1)
	r.AcknowledgeCost = false
	out, err := f.lab.Generate(context.Background(), c, r)
	if err != nil || out.Estimate.Proceed.OutOfSamplePercent != DefaultOutOfSamplePercent {
		t.Fatalf("default: %v %+v, want outOfSamplePercent %d", err, out.Estimate, DefaultOutOfSamplePercent)
	}
}

func TestWindows(t *testing.T) {
	for _, tc := range []struct {
		r    Request
		n    int
		want []window
	}{
		{Request{OutOfSamplePercent: 30}, 1000, []window{{0, 700}, {700, 1000}}},
		{Request{OutOfSamplePercent: 25}, 1001, []window{{0, 751}, {751, 1001}}},
		{Request{WalkForwardFolds: 4}, 1000, []window{{0, 200}, {200, 400}, {400, 600}, {600, 800}, {800, 1000}}},
		{Request{WalkForwardFolds: 2}, 10, []window{{0, 3}, {3, 6}, {6, 10}}},
	} {
		got := tc.r.windows(tc.n)
		if len(got) != len(tc.want) {
			t.Fatalf("%+v on %d: %v, want %v", tc.r, tc.n, got, tc.want)
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Fatalf("%+v on %d: %v, want %v", tc.r, tc.n, got, tc.want)
			}
		}
	}
}
