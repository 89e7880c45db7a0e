package lab

import (
	"cmp"
	"context"
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/backtest"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/overfit"
	"github.com/sigops/sigops/runtime/strategy"
)

// Validation modes (Validation.Mode).
const (
	ModeHoldout     = "holdout"
	ModeWalkForward = "walkForward"
)

// normalizeValidation checks the split settings and fills the default.
func (r *Request) normalizeValidation() error {
	if k := r.WalkForwardFolds; k != 0 {
		if k < MinFolds || k > MaxFolds {
			return invalid("walkForwardFolds", "must be %d to %d (got %d)", MinFolds, MaxFolds, k)
		}
		if r.OutOfSamplePercent != 0 {
			return invalid("outOfSamplePercent", "cannot be set with walkForwardFolds: each fold's next window is its out-of-sample part")
		}
		return nil
	}
	p := cmp.Or(r.OutOfSamplePercent, DefaultOutOfSamplePercent)
	if p < MinOutOfSamplePercent || p > MaxOutOfSamplePercent {
		return invalid("outOfSamplePercent", "must be %d to %d (got %d)", MinOutOfSamplePercent, MaxOutOfSamplePercent, p)
	}
	r.OutOfSamplePercent = p
	return nil
}

// window is the candles [lo, hi) of a job's series.
type window struct{ lo, hi int }

// windows cuts a series of n candles as r asks: the in-sample part and the last
// OutOfSamplePercent (rounded down to a candle) of it, or WalkForwardFolds + 1 equal
// windows (the first ones a candle shorter when n does not divide). The ranked window is
// the second last: the in-sample part, or the latest fold's in-sample window.
func (r Request) windows(n int) []window {
	if k := r.WalkForwardFolds; k > 0 {
		out := make([]window, k+1)
		for j := range out {
			out[j] = window{j * n / (k + 1), (j + 1) * n / (k + 1)}
		}
		return out
	}
	split := backtest.SplitAt(n, cmp.Or(r.OutOfSamplePercent, DefaultOutOfSamplePercent))
	return []window{{0, split}, {split, n}}
}

// Span is a window of a job's period: the open time of its first candle and the end of its
// last (Unix ms), and its candles.
type Span struct {
	From    int64 `json:"from"`
	To      int64 `json:"to"`
	Candles int   `json:"candles"`
}

// Figures are one experiment's figures over one window.
type Figures struct {
	Span
	Trades      int               `json:"trades"`
	Metrics     analytics.Metrics `json:"metrics"`
	FinalEquity httpapi.Number    `json:"finalEquity"`
	// Costs itemise the window's costs (absent for a job run before the cost model).
	Costs *CostFigures `json:"costs,omitempty"`
}

// Validation is how a job's period was split.
type Validation struct {
	Mode               string `json:"mode"`
	OutOfSamplePercent int    `json:"outOfSamplePercent,omitempty"`
	Folds              int    `json:"folds,omitempty"`
	// Windows are the period's windows, oldest first: in-sample then out-of-sample, or
	// the walk-forward windows (fold j: in-sample j, out-of-sample j + 1).
	Windows []Span `json:"windows"`
}

func (r Request) validation(s *backtest.Series) Validation {
	v := Validation{Mode: ModeHoldout, OutOfSamplePercent: r.OutOfSamplePercent}
	if r.WalkForwardFolds > 0 {
		v = Validation{Mode: ModeWalkForward, Folds: r.WalkForwardFolds}
	}
	for _, w := range r.windows(s.Len()) {
		v.Windows = append(v.Windows, spanOf(s, w))
	}
	return v
}

func spanOf(s *backtest.Series, w window) Span {
	return Span{From: s.OpenTime(w.lo), To: s.EndTime(w.hi - 1), Candles: w.hi - w.lo}
}

// runWindows backtests cfg on each window of s: the candles before a window (up to the
// strategy's lookback, as the live runner reads) only warm the strategy up, and each
// window starts again from the initial balance, so the windows' figures compare. A run on
// window j reads no candle after it: the in-sample runs never see the out-of-sample part.
func runWindows(ctx context.Context, s *backtest.Series, cfg backtest.Config, ws []window) ([]backtest.Result, error) {
	out := make([]backtest.Result, 0, len(ws))
	for _, w := range ws {
		res, err := backtest.RunWindow(ctx, s, cfg, w.lo, w.hi)
		if err != nil {
			return nil, err
		}
		out = append(out, res)
	}
	return out, nil
}

// figuresOf are a window's figures from its run.
func figuresOf(s *backtest.Series, w window, res backtest.Result) Figures {
	return Figures{Span: spanOf(s, w), Trades: len(res.Trades), Metrics: res.Report.Metrics, FinalEquity: httpapi.Num(res.Final),
		Costs: costFiguresOf(res.Costs)}
}

// chained is the windows' equity curves as one: each window's points shifted by the
// results of the windows before it, so the curve is the initial balance plus the running
// total of every window's net result.
func chained(parts []backtest.Result, initial decimal.Decimal) []analytics.Point {
	var out []analytics.Point
	offset := decimal.Zero
	for _, p := range parts {
		for _, pt := range p.Equity {
			pt.Equity = httpapi.Num(pt.Equity.Add(offset))
			out = append(out, pt)
		}
		offset = offset.Add(p.Final.Sub(initial))
	}
	return out
}

// dailyReturns are a run's returns between its equity at the start, at each UTC midnight
// a candle opened on (the first point recorded there, before that candle's fills) and at
// the end: the same instants for every experiment of a job, so their returns line up.
func dailyReturns(eq []analytics.Point) []float64 {
	if len(eq) < 2 {
		return nil
	}
	const day = 24 * 60 * 60 * 1000
	at := []float64{eq[0].Equity.InexactFloat64()}
	last := eq[0].Timestamp
	for _, p := range eq[1 : len(eq)-1] {
		if p.Timestamp%day == 0 && p.Timestamp != last {
			at = append(at, p.Equity.InexactFloat64())
			last = p.Timestamp
		}
	}
	at = append(at, eq[len(eq)-1].Equity.InexactFloat64())
	out := make([]float64, len(at)-1)
	for i := range out {
		if at[i] > 0 {
			out[i] = at[i+1]/at[i] - 1
		}
	}
	return out
}

// Overfitting is the job's overfitting estimate (runtime/overfit) and how to read it.
type Overfitting struct {
	// Estimate is absent when the job has too few experiments that ran, or too few days,
	// for one.
	Estimate *overfit.Estimate `json:"estimate,omitempty"`
	// Level is low (probability below 0.2), moderate (below HighOverfitting), high, or
	// unknown (no estimate).
	Level string `json:"level"`
	// High asks for a confirmation before the best parameter set is applied as a bot.
	High    bool   `json:"high"`
	Message string `json:"message"`
}

// HighOverfitting is the probability of backtest overfitting from which a job's best
// result is flagged: at 0.5 the search's winner is as likely as not to do no better than
// the median parameter set on data it has not seen.
const HighOverfitting = 0.5

// overfittingOf estimates the overfitting of the experiments that ran.
func overfittingOf(exps []Experiment) Overfitting {
	var returns [][]float64
	for _, x := range exps {
		if x.Error == nil && len(x.Returns) > 0 {
			returns = append(returns, x.Returns)
		}
	}
	e, ok := overfit.PBO(returns)
	if !ok {
		return Overfitting{Level: "unknown", Message: fmt.Sprintf("no estimate: it needs at least 2 experiments that ran and %d days of candles",
			4*overfit.MinBlockDays)}
	}
	o := Overfitting{Estimate: &e}
	pct := fmt.Sprintf("%.0f%%", e.Probability*100)
	switch {
	case e.Probability >= HighOverfitting:
		o.Level, o.High = "high", true
		o.Message = "high risk of overfitting: in " + pct + " of the ways to split this period, the parameter set that ranked first did no better than the median on the other half. Expect the out-of-sample figures, not the in-sample ones."
	case e.Probability >= 0.2:
		o.Level = "moderate"
		o.Message = "moderate risk of overfitting (" + pct + "): part of the in-sample lead is luck; weigh the out-of-sample figures."
	default:
		o.Level = "low"
		o.Message = "low risk of overfitting (" + pct + "): the ranking held on the halves of the period the search did not choose on."
	}
	return o
}

// noteLoss adds to the reading that the best set lost money out of sample: the estimate
// measures whether the ranking holds on unseen data, not whether the leader makes money,
// and a search where every set loses can rank consistently.
func (o *Overfitting) noteLoss(b *Best) {
	if o == nil || b == nil || b.OutOfSample == nil || !b.OutOfSample.Metrics.TotalPnL.IsNegative() {
		return
	}
	o.Message += fmt.Sprintf(" Out of sample the best parameter set lost money (%.2f %% return, Sharpe %.2f).",
		b.OutOfSample.Metrics.TotalPnLPercent, b.OutOfSample.Metrics.SharpeRatio)
}

// WalkForward is a walk-forward job's out-of-sample record: each fold's choice scored on
// the next window, the runs chained (each starts from the equity the previous one ended
// with).
type WalkForward struct {
	Folds []Fold `json:"folds"`
	// OutOfSample are the stitched out-of-sample windows' figures: every fold's choice on
	// its next window, in order.
	OutOfSample Figures `json:"outOfSample"`
	// Equity is the stitched curve, thinned to MaxEquityPoints.
	Equity []EquityPoint `json:"equity"`
	// Chosen is the experiment index the latest fold chose: the job's best.
	Chosen int `json:"chosen"`
}

// Fold is one fold: the experiment its in-sample window ranked first and that
// experiment's figures on both windows.
type Fold struct {
	Chosen      int             `json:"chosen"`
	Params      strategy.Params `json:"params"`
	InSample    Figures         `json:"inSample"`
	OutOfSample Figures         `json:"outOfSample"`
}

// foldWinner ranks the experiments on window j's figures (Rank's order) and returns the
// first that ran; ok false when none did.
func foldWinner(exps []Experiment, j, minTrades int) (Experiment, bool) {
	c := make([]Experiment, 0, len(exps))
	for _, x := range exps {
		if x.Error != nil || j >= len(x.Windows) {
			continue
		}
		w := x.Windows[j]
		m := w.Metrics
		x.Metrics, x.Trades = &m, w.Trades
		c = append(c, x)
	}
	if len(c) == 0 {
		return Experiment{}, false
	}
	Rank(c, minTrades)
	return c[0], true
}

// walkForward chains each fold's choice over its out-of-sample window on s.
func walkForward(ctx context.Context, m *jobMarket, r Request, exps []Experiment) (*WalkForward, error) {
	s := m.series
	ws := r.windows(s.Len())
	wf := &WalkForward{}
	base, err := r.config(strategy.Spec{})
	if err != nil {
		return nil, err
	}
	balance := base.InitialBalance
	var parts []backtest.Result
	for j := 0; j+1 < len(ws); j++ {
		x, ok := foldWinner(exps, j, r.MinTrades)
		if !ok {
			return nil, nil
		}
		cfg, err := r.configWith(r.spec(x.Params), m)
		if err != nil {
			return nil, err
		}
		cfg.InitialBalance = balance
		res, err := runWindows(ctx, s, cfg, ws[j+1:j+2])
		if err != nil {
			return nil, err
		}
		parts = append(parts, res[0])
		wf.Folds = append(wf.Folds, Fold{Chosen: x.Index, Params: x.Params, InSample: x.Windows[j], OutOfSample: figuresOf(s, ws[j+1], res[0])})
		wf.Chosen = x.Index
		if balance = res[0].Final; !balance.IsPositive() {
			break // nothing left to trade with
		}
	}
	stitched, err := stitch(s, ws[1], ws[len(ws)-1], parts, base.InitialBalance)
	if err != nil {
		return nil, err
	}
	wf.OutOfSample = stitched
	var curve []analytics.Point
	for _, p := range parts {
		curve = append(curve, p.Equity...)
	}
	wf.Equity = curveOf(curve)
	return wf, nil
}

// stitch is the figures of chained runs from window first to window last: their trades
// reported together from the initial balance, by runtime/analytics as any run's.
func stitch(s *backtest.Series, first, last window, parts []backtest.Result, initial decimal.Decimal) (Figures, error) {
	span := spanOf(s, window{first.lo, last.hi})
	var trades []backtest.Trade
	costs := make([]*backtest.CostBreakdown, len(parts))
	for i, p := range parts {
		costs[i] = p.Costs
		trades = append(trades, p.Trades...)
	}
	rep, err := backtest.ReportOf(s.Market().Symbol, trades, initial, span.From, span.To)
	if err != nil {
		return Figures{}, err
	}
	final := initial
	if len(parts) > 0 {
		final = parts[len(parts)-1].Final
	}
	return Figures{Span: span, Trades: len(trades), Metrics: rep.Metrics, FinalEquity: httpapi.Num(final), Costs: costFiguresOf(costs...)}, nil
}
