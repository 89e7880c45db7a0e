package lab

import (
	"cmp"
	"encoding/json"
	"slices"
	"strconv"

	"sigs.k8s.io/yaml"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/strategy"
)

// Objective is the metric experiments are ranked by.
const Objective = "sharpeRatio"

// Experiment is the outcome of one experiment, stored as it completes (HSETNX on its index).
type Experiment struct {
	// Index is the parameter set's place in the search (0: the family's defaults).
	Index int `json:"index"`
	// Rank is the place in the ranking, from 1; failed experiments are ranked last.
	Rank   int             `json:"rank"`
	Params strategy.Params `json:"params"`
	// Candles is how many candles the period had.
	Candles int `json:"candles"`
	// Eligible: the experiment has at least MinTrades trades, so it ranks by the objective
	// ahead of every experiment with fewer.
	Eligible bool `json:"eligible"`
	// Trades, Metrics and FinalEquity are the ranked window's: the in-sample part (the
	// latest fold's in-sample window in a walk-forward job). The ranking reads nothing else.
	Trades      int                `json:"trades"`
	Metrics     *analytics.Metrics `json:"metrics,omitempty"`
	FinalEquity *httpapi.Number    `json:"finalEquity,omitempty"`
	// OutOfSample are the figures on the window after the ranked one, which the search
	// never saw.
	OutOfSample *Figures `json:"outOfSample,omitempty"`
	// Windows are the figures on every window of the job, oldest first.
	Windows []Figures `json:"windows,omitempty"`
	// Returns are the daily returns over all windows, for the overfitting estimate; stored
	// with the outcome and left out of the job's result.
	Returns []float64 `json:"returns,omitempty"`
	// Error says why the experiment could not run (its cost is refunded).
	Error *ExperimentError `json:"error,omitempty"`
	// equity is the thinned equity curve (curveOf), stored apart from the outcome (Equity).
	equity []EquityPoint
}

// ExperimentError is a failed experiment's code and message.
type ExperimentError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// Result is a finished job's ranked experiments and the best parameter set.
type Result struct {
	Objective string `json:"objective"`
	MinTrades int    `json:"minTrades"`
	Seed      int64  `json:"seed"`
	Candles   int    `json:"candles"`
	Failed    int    `json:"failed"`
	// Validation is how the period was split; absent in jobs finished before the split.
	Validation *Validation `json:"validation,omitempty"`
	// Overfitting estimates how much of the best in-sample result is luck.
	Overfitting *Overfitting `json:"overfitting,omitempty"`
	// WalkForward is a walk-forward job's stitched out-of-sample record.
	WalkForward *WalkForward `json:"walkForward,omitempty"`
	Experiments []Experiment `json:"experiments"`
	// Best is the first-ranked experiment that ran, ready to apply; nil when all failed.
	Best *Best `json:"best,omitempty"`
}

// Best is the winning parameter set as a SignalBot spec fragment: symbol, market and the
// spec.strategy block, as JSON and YAML text.
type Best struct {
	Index  int             `json:"index"`
	Params strategy.Params `json:"params"`
	JSON   string          `json:"json"`
	YAML   string          `json:"yaml"`
	// InSample and OutOfSample are its figures on the ranked window and on the window
	// after it, side by side.
	InSample    *Figures `json:"inSample,omitempty"`
	OutOfSample *Figures `json:"outOfSample,omitempty"`
}

// Rank orders experiments by the objective: those with at least minTrades trades first,
// by Sharpe ratio (highest first), then those with fewer, by the same order, then the
// failed ones. Ties are broken by total PnL (highest first), then by index, so the order is
// a function of the outcomes alone.
func Rank(exps []Experiment, minTrades int) {
	for i := range exps {
		exps[i].Eligible = exps[i].Error == nil && exps[i].Trades >= minTrades
	}
	group := func(e Experiment) int {
		switch {
		case e.Error != nil:
			return 2
		case e.Eligible:
			return 0
		}
		return 1
	}
	slices.SortStableFunc(exps, func(a, b Experiment) int {
		if c := cmp.Compare(group(a), group(b)); c != 0 {
			return c
		}
		if a.Error == nil && b.Error == nil {
			if c := cmp.Compare(b.Metrics.SharpeRatio, a.Metrics.SharpeRatio); c != 0 {
				return c
			}
			if c := b.Metrics.TotalPnL.Cmp(a.Metrics.TotalPnL.Decimal); c != 0 {
				return c
			}
		}
		return cmp.Compare(a.Index, b.Index)
	})
	for i := range exps {
		exps[i].Rank = i + 1
	}
}

// botSpec is the part of a SignalBot's spec that applies a parameter set.
type botSpec struct {
	Symbol   string         `json:"symbol"`
	Market   string         `json:"market"`
	Strategy map[string]any `json:"strategy"`
}

// bestOf renders the first-ranked experiment that ran as a SignalBot spec fragment.
func bestOf(r Request, e Experiment) (*Best, error) {
	js, err := r.SpecFragment(e)
	if err != nil {
		return nil, err
	}
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		return nil, err
	}
	b := &Best{Index: e.Index, Params: e.Params, JSON: string(js), YAML: string(y), OutOfSample: e.OutOfSample}
	if n := len(e.Windows); n >= 2 {
		b.InSample = &e.Windows[n-2]
	}
	return b, nil
}

// SpecFragment is experiment e of a job of r as the part of a SignalBot spec that applies
// it, indented JSON: symbol, market and the strategy block (family, timeframe and the
// family's parameter block, periods as integers and levels as decimal strings, the API's
// convention for non-integers).
func (r Request) SpecFragment(e Experiment) ([]byte, error) {
	block := map[string]any{}
	for _, rg := range r.Family.Ranges() {
		v := e.Params.Get(rg.Name)
		if rg.Integer {
			block[rg.Name] = int64(v)
		} else {
			block[rg.Name] = strconv.FormatFloat(v, 'f', -1, 64)
		}
	}
	spec := botSpec{Symbol: r.Symbol, Market: r.Market, Strategy: map[string]any{
		"family": string(r.Family), "timeframe": r.Timeframe, string(r.Family): block}}
	return json.MarshalIndent(spec, "", "  ")
}

// OverfitHigh reports whether the finished job's overfitting estimate is high: applying
// one of its parameter sets as a bot then asks for a confirmation.
func (j Job) OverfitHigh() bool {
	return j.Result != nil && j.Result.Overfitting != nil && j.Result.Overfitting.High
}

// Experiment is the outcome of experiment index (Experiment.Index, its place in the search)
// of the finished job j, to apply: NOT_FOUND when the job has no such experiment,
// INVALID_PARAMETER while the job runs or when the experiment failed (nothing to apply).
func (j Job) Experiment(index int) (Experiment, error) {
	if j.Result == nil {
		return Experiment{}, invalid("index", "job %s has no result yet (state %s)", j.ID, j.State)
	}
	for _, e := range j.Result.Experiments {
		if e.Index != index {
			continue
		}
		if e.Error != nil {
			return Experiment{}, invalid("index", "experiment %d did not run (%s)", index, e.Error.Code)
		}
		return e, nil
	}
	return Experiment{}, errs.New(errs.NotFound, "job %s has no experiment %d", j.ID, index)
}
