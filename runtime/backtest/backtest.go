// Package backtest replays a candle series through a built-in strategy (runtime/strategy,
// the code the live runner runs) with the paper exchange's fill and fee rules, and reports
// the trades with the same analytics as a live bot (runtime/analytics).
//
// The candle loop reads integer tick columns and the strategy's float64 bars and does not
// allocate. Money follows the functions the paper exchange and the trade book use
// (runtime/order's sizing, runtime/position's fees, margin and settlement), so a backtest
// trade's figures are what the paper exchange would book: computed in int64 fixed point
// by the ledger (ledger.go) where the config can be represented exactly, else with those
// decimal functions themselves, which are also the ledger's test oracle. The fill model (next-open execution, limit entries, the order in which a candle's
// high and low are visited, no pyramiding, the end-of-series close) is in
// docs/decisions.md, "Strategies and backtests".
package backtest

import (
	"context"
	"encoding/json"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/strategy"
)

// Config is one experiment.
type Config struct {
	Strategy strategy.Spec
	// InitialBalance is the quote balance at the start; default 10000.
	InitialBalance decimal.Decimal
	// PositionSize sizes each entry as the executor does (order.EntryAmount): a percentage of
	// the available balance or a base amount; default 10 % (the bot default).
	PositionSize signal.Amount
	// Leverage is the futures leverage, 1 to paper.MaxLeverage; default 1; spot takes 1 only.
	Leverage int
	// StopLoss and TakeProfit are optional, as on a bot: a percentage from the entry ("2%")
	// or an absolute price.
	StopLoss   *signal.Amount
	TakeProfit *signal.Amount
	// FeeRate is the fee per fill, a fraction of the notional; default (zero)
	// paper.DefaultFeeRate, 0.001.
	FeeRate decimal.Decimal
	// LimitOffset, when set, enters with a limit order at the signal candle's close minus
	// (long) or plus (short) this percentage instead of at the market at the next open.
	LimitOffset *decimal.Decimal
	// TradeFrom is the open time (ms) of the first candle the run trades on: the candles
	// before it only warm the strategy up, as the live runner's lookback does, and the
	// result (trades, report, equity, Candles) covers the candles from it on. Zero: the
	// series' first candle. A signal decided at the last warm-up candle's close is carried
	// out at TradeFrom's open, as a bot started then would.
	TradeFrom int64
}

// Defaults.
var (
	DefaultInitialBalance = decimal.NewFromInt(10000)
	DefaultPositionSize   = signal.Amount{Value: httpapi.Num(decimal.NewFromInt(10)), Percent: true}
)

// Trade reasons beyond runtime/position's (signal, reversal, stop_loss, take_profit,
// liquidation).
const ReasonEnd = "end"

// Trade is one closed position.
type Trade struct {
	Side       string // long, short
	EntryTime  int64  // ms
	ExitTime   int64  // ms
	EntryPrice decimal.Decimal
	ExitPrice  decimal.Decimal
	Amount     decimal.Decimal
	Fees       decimal.Decimal // entry and exit fee
	NetPnl     decimal.Decimal
	Reason     string // signal, reversal, stop_loss, take_profit, liquidation, end
}

// Result is an experiment's outcome.
type Result struct {
	Candles int
	Trades  []Trade
	// Report is runtime/analytics' report of the trades over the series' whole range
	// (starting equity: the initial balance).
	Report analytics.Report
	// Equity is the realised equity (initial balance plus the trades' net results): at the
	// first candle's open, at every UTC midnight a candle opens on, after every exit, and at
	// the series' end.
	Equity []analytics.Point
	// Final is the final equity: the balance once the end-of-series close is booked.
	Final decimal.Decimal
}

// config is a Config checked and with its defaults.
type config struct {
	Config
	lev int
	// from is the index of the first candle traded on (TradeFrom's).
	from int
}

func invalid(name, format string, args ...any) error {
	return errs.New(errs.InvalidParameter, name+" "+format, args...).WithDetails(map[string]any{"parameter": name})
}

var hundred = decimal.NewFromInt(100)

// normalise checks cfg against s and fills in its defaults.
func normalise(cfg Config, s *Series) (config, error) {
	if err := cfg.Strategy.Validate(); err != nil {
		return config{}, err
	}
	m := s.market
	if cfg.Strategy.Symbol != m.Symbol {
		return config{}, invalid("symbol", "%s is not the series' symbol %s", cfg.Strategy.Symbol, m.Symbol)
	}
	if cfg.Strategy.Timeframe != s.timeframe {
		return config{}, invalid("timeframe", "%s is not the series' timeframe %s", cfg.Strategy.Timeframe, s.timeframe)
	}
	c := config{Config: cfg, lev: cfg.Leverage}
	switch {
	case c.InitialBalance.IsZero():
		c.InitialBalance = DefaultInitialBalance
	case c.InitialBalance.IsNegative():
		return config{}, invalid("initialBalance", "must be positive")
	}
	switch {
	case c.PositionSize.Value.IsZero():
		c.PositionSize = DefaultPositionSize
	case c.PositionSize.Value.IsNegative(), c.PositionSize.Percent && c.PositionSize.Value.GreaterThan(hundred):
		return config{}, invalid("positionSize", "must be a positive amount or a percentage up to 100")
	}
	if c.lev == 0 {
		c.lev = 1
	}
	if m.Kind == exchange.Futures && (c.lev < 1 || c.lev > paper.MaxLeverage) {
		return config{}, invalid("leverage", "must be between 1 and %d", paper.MaxLeverage)
	}
	if m.Kind != exchange.Futures && c.lev != 1 {
		return config{}, invalid("leverage", "must be 1 on spot")
	}
	switch {
	case c.FeeRate.IsZero():
		c.FeeRate = paper.DefaultFeeRate
	case c.FeeRate.IsNegative():
		return config{}, invalid("feeRate", "must not be negative")
	}
	for _, x := range [...]struct {
		name string
		a    *signal.Amount
	}{{"stopLoss", c.StopLoss}, {"takeProfit", c.TakeProfit}} {
		name, a := x.name, x.a
		if a != nil && (!a.Value.IsPositive() || (a.Percent && name == "stopLoss" && !a.Value.LessThan(hundred))) {
			return config{}, invalid(name, "must be a positive price or percentage (a stop-loss below 100%%)")
		}
	}
	if o := c.LimitOffset; o != nil && (o.IsNegative() || !o.LessThan(hundred)) {
		return config{}, invalid("limitOffset", "must be a percentage from 0 to below 100")
	}
	if c.TradeFrom != 0 {
		c.from = s.IndexOf(c.TradeFrom)
		if c.from == len(s.ts) {
			return config{}, invalid("tradeFrom", "is after the series' last candle")
		}
	}
	return c, nil
}

// Run replays s through cfg. It stops early with ctx's error when ctx ends.
func Run(ctx context.Context, s *Series, cfg Config) (Result, error) {
	c, err := normalise(cfg, s)
	if err != nil {
		return Result{}, err
	}
	st, err := strategy.New(c.Strategy)
	if err != nil {
		return Result{}, err
	}
	r, ok, err := runWith(ctx, s, c, st, true)
	if err != nil || ok {
		return r, err
	}
	// The integer ledger cannot hold this run: again on decimals, with a fresh strategy.
	if st, err = strategy.New(c.Strategy); err != nil {
		return Result{}, err
	}
	r, _, err = runWith(ctx, s, c, st, false)
	return r, err
}

// runWith runs the checked config c with the strategy st, on the integer ledger when fixed
// (ok false when c cannot be represented in it or an amount overflowed it: the run is
// void), else on decimals.
func runWith(ctx context.Context, s *Series, c config, st strategy.Strategy, fixed bool) (Result, bool, error) {
	e := newEngine(s, c, fixed)
	if fixed && e.fx == nil {
		return Result{}, false, nil
	}
	if err := e.run(ctx, st); err != nil {
		return Result{}, false, err
	}
	if e.fx != nil && e.fx.failed {
		return Result{}, false, nil
	}
	r, err := e.result()
	return r, err == nil, err
}

// result assembles the Result of a finished run.
func (e *engine) result() (Result, error) {
	s := e.s
	end := s.ts[len(s.ts)-1] + s.tfMs
	q, err := analytics.ParseQuery("", analytics.DateOfMS(s.ts[e.c.from]).String(), analytics.DateOfMS(end-1).String(), "", time.UnixMilli(end))
	if err != nil {
		return Result{}, err
	}
	start := e.c.InitialBalance
	hdr := analytics.Header{Symbol: s.market.Symbol}
	if e.fx != nil {
		r := Result{Candles: len(s.ts) - e.c.from}
		if n := len(e.fx.points); e.fx.points[n-1].at != end {
			e.fx.point(end)
		}
		e.fx.result(&r, hdr, start, q)
		return r, nil
	}
	if n := len(e.points); e.points[n-1].Timestamp != end {
		e.point(end)
	}
	r := Result{
		Candles: len(s.ts) - e.c.from,
		Trades:  make([]Trade, len(e.trades)),
		Report:  analytics.ReportOf(hdr, e.trades, &start, q),
		Equity:  e.points,
		Final:   e.balance,
	}
	for i, t := range e.trades {
		r.Trades[i] = Trade{Side: string(t.Side), EntryTime: t.OpenedAt, ExitTime: t.ClosedAt, EntryPrice: t.EntryPrice.Decimal,
			ExitPrice: t.ExitPrice.Decimal, Amount: t.Size.Decimal, Fees: t.Fees.Decimal, NetPnl: t.NetPnl.Decimal, Reason: t.Reason}
	}
	return r, nil
}

// tradeJSON is a Trade in JSON, money as exact numbers.
type tradeJSON struct {
	Side       string         `json:"side"`
	EntryTime  int64          `json:"entryTime"`
	ExitTime   int64          `json:"exitTime"`
	EntryPrice httpapi.Number `json:"entryPrice"`
	ExitPrice  httpapi.Number `json:"exitPrice"`
	Amount     httpapi.Number `json:"amount"`
	Fees       httpapi.Number `json:"fees"`
	NetPnl     httpapi.Number `json:"netPnl"`
	Reason     string         `json:"reason"`
}

// JSON is the result as JSON, deterministic: the same input gives byte-identical output
// (structs only, no maps; money as exact decimal numbers).
func (r Result) JSON() ([]byte, error) {
	trades := make([]tradeJSON, len(r.Trades))
	for i, t := range r.Trades {
		trades[i] = tradeJSON{Side: t.Side, EntryTime: t.EntryTime, ExitTime: t.ExitTime,
			EntryPrice: httpapi.Num(t.EntryPrice), ExitPrice: httpapi.Num(t.ExitPrice), Amount: httpapi.Num(t.Amount),
			Fees: httpapi.Num(t.Fees), NetPnl: httpapi.Num(t.NetPnl), Reason: t.Reason}
	}
	equity := r.Equity
	if equity == nil {
		equity = []analytics.Point{}
	}
	return json.Marshal(struct {
		Candles int               `json:"candles"`
		Final   httpapi.Number    `json:"finalEquity"`
		Report  analytics.Report  `json:"report"`
		Trades  []tradeJSON       `json:"trades"`
		Equity  []analytics.Point `json:"equity"`
	}{r.Candles, httpapi.Num(r.Final), r.Report, trades, equity})
}
