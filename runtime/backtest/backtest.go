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
// high and low are visited, no pyramiding, the end-of-series close) and the optional cost
// model (Costs: maker and taker fees, slippage, funding) are in docs/decisions.md,
// "Strategies and backtests".
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
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/position"
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
	// paper.DefaultFeeRate, 0.001. With Costs it must be zero: Costs' rates replace it.
	FeeRate decimal.Decimal
	// Costs, when set, charges the fills as a venue does: maker and taker fees, slippage
	// and futures funding. Nil: FeeRate on every fill, no slippage, no funding, and the
	// result is what it was before Costs existed, to the byte.
	Costs *Costs
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

// Costs is a venue's cost model. Each part turns off on its own: zero fees, a nil
// Slippage, an empty Funding.
type Costs struct {
	// MakerFee and TakerFee are fractions of the notional (e.g. 0.0002 and 0.0005); zero is
	// no fee (not FeeRate's default). A resting limit entry filled at its price is a maker
	// fill; every other fill (market entries and exits at an open, a limit entry at an open
	// that was already at or beyond its price, reversals, stop-loss, take-profit and
	// liquidation closes, the end-of-series close) takes liquidity and is a taker fill.
	// Negative (rebate) rates are not modelled.
	MakerFee, TakerFee decimal.Decimal
	// Slippage, when set, moves every taker fill but a liquidation against the order.
	Slippage *Slippage
	// Funding are the perpetual's settlements (Time in ms, oldest first, no repeats); on
	// futures a position open at a settlement pays (a long at a positive rate) or receives
	// rate × its notional at the open of the first candle opening at or after the
	// settlement, rounded to 8 places. Ignored on spot; empty: no funding.
	Funding []marketdata.FundingRate
}

// Slippage moves a taker fill's price against the order (up for a buy, down for a sell) by
// the candle's half range × the order's amount / the candle's volume, at most Cap × the
// reference price (the price the fill would have without slippage), in whole ticks rounded
// up: ceil(min(that, the cap) / tick) ticks. The candle is the one the fill happens in; a
// candle without volume (zero or negative) takes the cap. A sell never fills below one
// tick, and a limit entry filled at an open never beyond its limit price.
type Slippage struct {
	// Cap is a fraction of the reference price, from 0 to below 1 (e.g. 0.005).
	Cap decimal.Decimal
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
	// NetPnl is the price PnL at the fill prices minus Fees and Funding.
	NetPnl decimal.Decimal
	Reason string // signal, reversal, stop_loss, take_profit, liquidation, end
	// Slippage is what slippage cost the entry and the exit (Σ |fill price − reference
	// price| × amount): information, as the fill prices, and so the PnL, include it.
	// Funding is the net funding the position paid while open (negative: received). Both
	// are zero without Config.Costs.
	Slippage, Funding decimal.Decimal
}

// CostBreakdown itemises a run's costs over its trades: GrossPnl − Fees − Funding is the sum
// of the trades' NetPnl, to the digit.
type CostBreakdown struct {
	// GrossPnl is the trades' price PnL at their fill prices (position.Settle's gross: for a
	// bankrupt close, what the margin lost): slippage is inside it.
	GrossPnl decimal.Decimal
	Fees     decimal.Decimal
	// Slippage is what slippage cost, already in GrossPnl: reported, not subtracted again.
	Slippage decimal.Decimal
	// Funding is the net funding paid, negative when received.
	Funding decimal.Decimal
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
	// Costs itemises the costs when Config.Costs was set; nil otherwise.
	Costs *CostBreakdown
}

// config is a Config checked and with its defaults.
type config struct {
	Config
	lev int
	// from is the index of the first candle traded on (TradeFrom's).
	from int
	// maker and taker are the fee rates of a maker and a taker fill (both FeeRate without
	// Costs); slip is the slippage (nil: none); funding the settlements a futures position
	// pays (nil: none, and always on spot).
	maker, taker decimal.Decimal
	slip         *Slippage
	funding      []marketdata.FundingRate
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
	if err := c.costs(cfg.FeeRate, m.Kind); err != nil {
		return config{}, err
	}
	if c.TradeFrom != 0 {
		c.from = s.IndexOf(c.TradeFrom)
		if c.from == len(s.ts) {
			return config{}, invalid("tradeFrom", "is after the series' last candle")
		}
	}
	return c, nil
}

// costs checks Costs (feeRate: the rate the caller gave, before its default) and sets the
// fill rates, the slippage and the funding.
func (c *config) costs(feeRate decimal.Decimal, kind exchange.Kind) error {
	k := c.Costs
	if k == nil {
		c.maker, c.taker = c.FeeRate, c.FeeRate
		return nil
	}
	if !feeRate.IsZero() {
		return invalid("feeRate", "must not be set with costs, whose makerFee and takerFee replace it")
	}
	if k.MakerFee.IsNegative() || k.TakerFee.IsNegative() {
		return invalid("costs.makerFee", "and takerFee must not be negative")
	}
	if sl := k.Slippage; sl != nil && (sl.Cap.IsNegative() || !sl.Cap.LessThan(one)) {
		return invalid("costs.slippage.cap", "must be a fraction from 0 to below 1")
	}
	for j := 1; j < len(k.Funding); j++ {
		if k.Funding[j].Time <= k.Funding[j-1].Time {
			return invalid("costs.funding", "must be oldest first without repeats (settlement %d at %d)", j, k.Funding[j].Time)
		}
	}
	c.maker, c.taker, c.slip = k.MakerFee, k.TakerFee, k.Slippage
	if kind == exchange.Futures && len(k.Funding) > 0 {
		c.funding = k.Funding
	}
	return nil
}

var one = decimal.NewFromInt(1)

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

// RunWindow runs cfg on the candles [lo, hi) of s: the candles before lo, up to the
// strategy's Lookback (what the live runner reads), only warm it up (TradeFrom), and
// nothing after hi is read (Slice). The Strategy Lab's in-sample and out-of-sample windows
// and `cmd/backtest run --out-of-sample` are such runs.
func RunWindow(ctx context.Context, s *Series, cfg Config, lo, hi int) (Result, error) {
	if lo < 0 || hi > s.Len() || lo >= hi {
		return Result{}, invalid("window", "[%d, %d) is not a window of a series of %d candles", lo, hi, s.Len())
	}
	cfg.TradeFrom = s.OpenTime(lo)
	return Run(ctx, s.Slice(max(0, lo-cfg.Strategy.Lookback()), hi), cfg)
}

// SplitAt is where a series of n candles splits when its last outOfSamplePercent (0 to
// 100) is kept out of sample: that share rounded down to a candle.
func SplitAt(n, outOfSamplePercent int) int { return n - n*outOfSamplePercent/100 }

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

// reportQuery is the period a run's report covers: the UTC days from the one the first
// candle traded on opens on to the one the last candle closes in (from and end in ms). A
// position closed at the run's end is booked at end, which is the next day's first instant
// when the run ends at a UTC midnight: that day is then reported too (closedAtEnd), or the
// report would leave out the trade that the final equity includes.
func reportQuery(from, end int64, closedAtEnd bool) (analytics.Query, error) {
	last := end - 1
	if closedAtEnd {
		last = end
	}
	return analytics.ParseQuery("", analytics.DateOfMS(from).String(), analytics.DateOfMS(last).String(), "", time.UnixMilli(end))
}

// ReportOf is runtime/analytics' report of trades (oldest first, as runs return them),
// begun at start, over the candles from the one opening at from to the one ending at end
// (ms), as a run reports its own: the Strategy Lab's report of chained runs.
func ReportOf(symbol string, trades []Trade, start decimal.Decimal, from, end int64) (analytics.Report, error) {
	n := len(trades)
	q, err := reportQuery(from, end, n > 0 && trades[n-1].ExitTime >= end)
	if err != nil {
		return analytics.Report{}, err
	}
	return analytics.ReportOf(analytics.Header{Symbol: symbol}, positionTrades(trades), &start, q), nil
}

// positionTrades are trades as runtime/analytics reads them: close time, net result, fees.
func positionTrades(trades []Trade) []position.Trade {
	out := make([]position.Trade, len(trades))
	for i, t := range trades {
		out[i] = position.Trade{ClosedAt: t.ExitTime, NetPnl: httpapi.Num(t.NetPnl), Fees: httpapi.Num(t.Fees)}
	}
	return out
}

// result assembles the Result of a finished run.
func (e *engine) result() (Result, error) {
	s := e.s
	end := s.EndTime(len(s.ts) - 1)
	q, err := reportQuery(s.ts[e.c.from], end, e.closedAtEnd)
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
	if e.c.Costs != nil {
		b := CostBreakdown{GrossPnl: decimal.Zero, Fees: decimal.Zero, Slippage: decimal.Zero, Funding: decimal.Zero}
		for i, t := range e.trades {
			tc := e.tc[i]
			r.Trades[i].Slippage, r.Trades[i].Funding = tc.slip, tc.fund
			b.GrossPnl, b.Fees = b.GrossPnl.Add(t.Pnl.Decimal), b.Fees.Add(t.Fees.Decimal)
			b.Slippage, b.Funding = b.Slippage.Add(tc.slip), b.Funding.Add(tc.fund)
		}
		r.Costs = &b
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
	// Slippage and Funding are there when the run had costs.
	Slippage *httpapi.Number `json:"slippage,omitempty"`
	Funding  *httpapi.Number `json:"funding,omitempty"`
	NetPnl   httpapi.Number  `json:"netPnl"`
	Reason   string          `json:"reason"`
}

// costsJSON is a CostBreakdown in JSON.
type costsJSON struct {
	GrossPnl httpapi.Number `json:"grossPnl"`
	Fees     httpapi.Number `json:"fees"`
	Slippage httpapi.Number `json:"slippage"`
	Funding  httpapi.Number `json:"funding"`
}

// JSON is the result as JSON, deterministic: the same input gives byte-identical output
// (structs only, no maps; money as exact decimal numbers). The costs (the breakdown, each
// trade's slippage and funding) are there only when the run had them, so that a run
// without costs gives the bytes it gave before they existed.
func (r Result) JSON() ([]byte, error) {
	trades := make([]tradeJSON, len(r.Trades))
	for i, t := range r.Trades {
		trades[i] = tradeJSON{Side: t.Side, EntryTime: t.EntryTime, ExitTime: t.ExitTime,
			EntryPrice: httpapi.Num(t.EntryPrice), ExitPrice: httpapi.Num(t.ExitPrice), Amount: httpapi.Num(t.Amount),
			Fees: httpapi.Num(t.Fees), NetPnl: httpapi.Num(t.NetPnl), Reason: t.Reason}
		if r.Costs != nil {
			trades[i].Slippage, trades[i].Funding = httpapi.NumPtr(t.Slippage), httpapi.NumPtr(t.Funding)
		}
	}
	equity := r.Equity
	if equity == nil {
		equity = []analytics.Point{}
	}
	var costs *costsJSON
	if b := r.Costs; b != nil {
		costs = &costsJSON{httpapi.Num(b.GrossPnl), httpapi.Num(b.Fees), httpapi.Num(b.Slippage), httpapi.Num(b.Funding)}
	}
	return json.Marshal(struct {
		Candles int               `json:"candles"`
		Final   httpapi.Number    `json:"finalEquity"`
		Costs   *costsJSON        `json:"costs,omitempty"`
		Report  analytics.Report  `json:"report"`
		Trades  []tradeJSON       `json:"trades"`
		Equity  []analytics.Point `json:"equity"`
	}{r.Candles, httpapi.Num(r.Final), costs, r.Report, trades, equity})
}
