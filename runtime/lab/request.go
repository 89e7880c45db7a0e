package lab

import (
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/backtest"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/strategy"
)

// Bounds and prices of a job (docs/decisions.md, "Strategy Lab").
const (
	// MaxExperiments is the most experiments one job runs.
	MaxExperiments = 30
	// DefaultMinTrades is how many trades an experiment needs to be ranked by the
	// objective ahead of those with fewer.
	DefaultMinTrades = 10
	// DefaultOutOfSamplePercent, MinOutOfSamplePercent and MaxOutOfSamplePercent: the
	// share of a job's period kept out of the search.
	DefaultOutOfSamplePercent = 30
	MinOutOfSamplePercent     = 10
	MaxOutOfSamplePercent     = 50
	// MinFolds and MaxFolds bound a walk-forward job's folds.
	MinFolds = 2
	MaxFolds = 6
	// MaxJobCandles bounds a job's period: marketdata.MaxHistoryCandles.
	MaxJobCandles = marketdata.MaxHistoryCandles
)

// UnitCostUsd is the price of one experiment, drawn from the Strategy Lab wallet.
var UnitCostUsd = decimal.RequireFromString("0.50")

// Request is one generate_strategy call: a search over one family's parameters on one
// symbol, market, timeframe and period, and the backtest settings every experiment shares.
type Request struct {
	Family    strategy.Family `json:"family"`
	Symbol    string          `json:"symbol"`
	Market    string          `json:"market"` // spot (default) or futures
	Timeframe string          `json:"timeframe"`
	From      time.Time       `json:"from"`
	To        time.Time       `json:"to"`
	// Experiments is how many parameter sets are backtested, 1 to MaxExperiments.
	Experiments int `json:"experiments"`
	// Seed selects the parameter sets; absent, one is chosen and returned, so that the
	// same request with that seed gives the same sets.
	Seed *int64 `json:"seed,omitempty"`
	// MinTrades is the trades an experiment needs to rank by the objective (0: 10).
	MinTrades int `json:"minTrades,omitempty"`
	// The backtest settings, as on a bot: initial balance in quote currency (default
	// 10000), positionSize (default "10%"), leverage (futures; default 1), stopLoss and
	// takeProfit ("2%" or a price; optional).
	InitialBalance string `json:"initialBalance,omitempty"`
	PositionSize   string `json:"positionSize,omitempty"`
	Leverage       int    `json:"leverage,omitempty"`
	StopLoss       string `json:"stopLoss,omitempty"`
	TakeProfit     string `json:"takeProfit,omitempty"`
	// OutOfSamplePercent is the share of the period's candles, at its end, that the search
	// never sees: the experiments are ranked on the rest, and every experiment is also
	// scored on this part (10 to 50; 0: DefaultOutOfSamplePercent). Not with
	// WalkForwardFolds.
	OutOfSamplePercent int `json:"outOfSamplePercent,omitempty"`
	// WalkForwardFolds, 2 to 6, cuts the period into that many + 1 equal windows instead:
	// fold j ranks the experiments on window j and scores its choice on window j + 1
	// (validation.go). 0: one in-sample / out-of-sample split.
	WalkForwardFolds int `json:"walkForwardFolds,omitempty"`
	// Costs is the backtests' cost model; absent, every cost is on with its defaults.
	Costs *Costs `json:"costs,omitempty"`
	// AcknowledgeCost confirms the charge; without it (and not from the dashboard) the call
	// answers an Estimate and queues nothing.
	AcknowledgeCost bool `json:"acknowledgeCost,omitempty"`
}

func invalid(param, format string, args ...any) *errs.Error {
	return errs.New(errs.InvalidParameter, param+" "+format, args...).WithDetails(map[string]any{"parameter": param})
}

// normalize checks r and fills its defaults; market finds the symbol's market rules.
func (r Request) normalize(market func(exchange.Kind, string) (exchange.MarketInfo, bool)) (Request, error) {
	if !r.Family.Valid() {
		return r, (strategy.Spec{Family: r.Family}).Validate()
	}
	r.Symbol = strings.ToUpper(strings.TrimSpace(r.Symbol))
	switch r.Market = strings.ToLower(strings.TrimSpace(r.Market)); r.Market {
	case "":
		r.Market = string(exchange.Spot)
	case string(exchange.Spot), string(exchange.Futures):
	default:
		return r, invalid("market", "must be spot or futures (got %q)", clip(r.Market))
	}
	if _, ok := market(exchange.Kind(r.Market), r.Symbol); !ok {
		return r, errs.New(errs.InvalidSymbol, "symbol %q is not a %s market the Strategy Lab backtests", clip(r.Symbol), r.Market)
	}
	if r.Experiments < 1 || r.Experiments > MaxExperiments {
		return r, invalid("experiments", "must be 1 to %d (got %d)", MaxExperiments, r.Experiments)
	}
	if _, err := marketdata.TimeframeDuration(r.Timeframe); err != nil {
		return r, invalid("timeframe", "must be one of %s", strings.Join(marketdata.Timeframes(), ", "))
	}
	r.From, r.To = r.From.UTC(), r.To.UTC()
	if r.From.IsZero() || !r.To.After(r.From) {
		return r, invalid("to", "must be after from")
	}
	n, _ := marketdata.HistoryCount(r.Timeframe, r.From, r.To)
	if n > MaxJobCandles {
		return r, invalid("from", "the period holds %d %s candles; at most %d", n, r.Timeframe, MaxJobCandles)
	}
	if r.MinTrades < 0 {
		return r, invalid("minTrades", "cannot be negative")
	}
	if r.MinTrades == 0 {
		r.MinTrades = DefaultMinTrades
	}
	if err := r.normalizeValidation(); err != nil {
		return r, err
	}
	if err := r.normalizeCosts(exchange.Kind(r.Market)); err != nil {
		return r, err
	}
	if _, err := r.config(strategy.Spec{}); err != nil {
		return r, err
	}
	return r, nil
}

// config is the backtest configuration of one experiment.
func (r Request) config(spec strategy.Spec) (backtest.Config, error) {
	cfg := backtest.Config{Strategy: spec, InitialBalance: decimal.NewFromInt(10000), Leverage: 1}
	if r.InitialBalance != "" {
		b, err := decimal.NewFromString(r.InitialBalance)
		if err != nil || !b.IsPositive() {
			return cfg, invalid("initialBalance", "must be a positive amount")
		}
		cfg.InitialBalance = b
	}
	size := r.PositionSize
	if size == "" {
		size = "10%"
	}
	a, err := order.ParseAmount(size)
	if err != nil {
		return cfg, invalid("positionSize", "must be a positive amount or percentage")
	}
	cfg.PositionSize = *a
	if r.Leverage != 0 {
		if r.Leverage < 1 || r.Leverage > 125 || (r.Leverage > 1 && r.Market != string(exchange.Futures)) {
			return cfg, invalid("leverage", "must be 1 to 125, above 1 only on futures")
		}
		cfg.Leverage = r.Leverage
	}
	if cfg.StopLoss, err = order.ParseAmount(r.StopLoss); err != nil {
		return cfg, invalid("stopLoss", "must be a positive amount or percentage")
	}
	if cfg.TakeProfit, err = order.ParseAmount(r.TakeProfit); err != nil {
		return cfg, invalid("takeProfit", "must be a positive amount or percentage")
	}
	return cfg, nil
}

// configWith is config with the cost model and m's funding settlements.
func (r Request) configWith(spec strategy.Spec, m *jobMarket) (backtest.Config, error) {
	cfg, err := r.config(spec)
	if err != nil {
		return cfg, err
	}
	var funding []marketdata.FundingRate
	if r.Costs != nil && on(r.Costs.Funding) && r.Market == string(exchange.Futures) {
		if m.fundingErr != nil {
			return cfg, m.fundingErr
		}
		funding = m.funding
	}
	cfg.Costs, err = r.backtestCosts(funding)
	return cfg, err
}

// spec is the strategy of one parameter set.
func (r Request) spec(p strategy.Params) strategy.Spec {
	return strategy.Spec{Family: r.Family, Timeframe: r.Timeframe, Symbol: r.Symbol, Params: p}
}

func clip(s string) string {
	if len(s) > 32 {
		return s[:32]
	}
	return s
}
