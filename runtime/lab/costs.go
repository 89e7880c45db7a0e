package lab

import (
	"cmp"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/backtest"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/feeschedule"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/marketdata"
)

// Costs is the cost model of a job's backtests: the venue's maker and taker fees for a
// tier, slippage, and funding on perpetual futures, each on unless turned off.
type Costs struct {
	// Venue's published fee schedule (runtime/feeschedule): binance (default), bybit, okx.
	Venue string `json:"venue,omitempty"`
	// FeeTier is the venue's tier (default its base tier: binance regular, bybit vip0, okx
	// lv1).
	FeeTier string `json:"feeTier,omitempty"`
	// Fees: the tier's maker and taker fees (false: no fee at all).
	Fees *bool `json:"fees,omitempty"`
	// Slippage: taker fills move against the order by the candle's half range × the
	// order's share of its volume, at most SlippageCapPercent of the price.
	Slippage           *bool  `json:"slippage,omitempty"`
	SlippageCapPercent string `json:"slippageCapPercent,omitempty"`
	// Funding: a futures position pays or receives the perpetual's funding at each
	// settlement it is held through, from the market data's funding history (default on
	// futures; spot has none).
	Funding *bool `json:"funding,omitempty"`
}

// Cost model defaults.
const (
	DefaultVenue = feeschedule.Binance
	// DefaultSlippageCapPercent bounds one fill's slippage: the half-range model on a
	// candle with little volume would otherwise move a fill across the whole candle.
	DefaultSlippageCapPercent = "0.5"
)

func on(b *bool) bool { return b == nil || *b }

func flag(b bool) *bool { return &b }

// normalizeCosts checks the cost model against the market kind and fills its defaults, so
// that the stored request says which costs its results carry.
func (r *Request) normalizeCosts(kind exchange.Kind) error {
	c := Costs{}
	if r.Costs != nil {
		c = *r.Costs
	}
	c.Venue = string(feeschedule.VenueName(feeschedule.Venue(cmp.Or(c.Venue, string(DefaultVenue)))))
	c.FeeTier = feeschedule.TierName(c.FeeTier)
	if c.FeeTier == "" {
		if ts := feeschedule.Tiers(feeschedule.Venue(c.Venue)); len(ts) > 0 {
			c.FeeTier = ts[0]
		}
	}
	rates, err := feeschedule.Lookup(feeschedule.Venue(c.Venue), kind, c.FeeTier)
	if err != nil {
		return err
	}
	if rates.Maker.IsNegative() || rates.Taker.IsNegative() {
		return invalid("feeTier", "%s %s pays a maker rebate, which the backtester does not model; choose a lower tier", c.Venue, c.FeeTier)
	}
	c.Fees, c.Slippage = flag(on(c.Fees)), flag(on(c.Slippage))
	c.SlippageCapPercent = cmp.Or(c.SlippageCapPercent, DefaultSlippageCapPercent)
	if p, err := decimal.NewFromString(c.SlippageCapPercent); err != nil || p.IsNegative() || p.GreaterThan(decimal.NewFromInt(10)) {
		return invalid("slippageCapPercent", "must be a percentage from 0 to 10 (got %q)", clip(c.SlippageCapPercent))
	}
	switch {
	case kind != exchange.Futures && c.Funding != nil && *c.Funding:
		return invalid("funding", "applies to futures only: a spot position pays no funding")
	case kind != exchange.Futures:
		c.Funding = flag(false)
	default:
		c.Funding = flag(on(c.Funding))
	}
	r.Costs = &c
	return nil
}

// backtestCosts is the backtester's cost model of r's (normalized) Costs, with the
// period's funding settlements.
func (r Request) backtestCosts(funding []marketdata.FundingRate) (*backtest.Costs, error) {
	c := r.Costs
	if c == nil {
		// A job queued before costs existed keeps the backtests it was charged for.
		return nil, nil
	}
	out := &backtest.Costs{}
	if on(c.Fees) {
		rates, err := feeschedule.Lookup(feeschedule.Venue(c.Venue), exchange.Kind(r.Market), c.FeeTier)
		if err != nil {
			return nil, err
		}
		out.MakerFee, out.TakerFee = rates.Maker, rates.Taker
	}
	if on(c.Slippage) {
		p, err := decimal.NewFromString(c.SlippageCapPercent)
		if err != nil {
			return nil, invalid("slippageCapPercent", "must be a percentage")
		}
		out.Slippage = &backtest.Slippage{Cap: p.Shift(-2)}
	}
	if on(c.Funding) && r.Market == string(exchange.Futures) {
		if funding == nil {
			return nil, errs.New(errs.ExchangeError, "the market data has no funding history for %s; run with funding off", r.Symbol)
		}
		out.Funding = funding
	}
	return out, nil
}

// CostFigures itemise a window's costs: the trades' gross PnL at their fill prices, the
// fees, what slippage cost (already inside the gross PnL) and the net funding paid
// (negative: received). Gross PnL − fees − funding is the total PnL.
type CostFigures struct {
	GrossPnl httpapi.Number `json:"grossPnl"`
	Fees     httpapi.Number `json:"fees"`
	Slippage httpapi.Number `json:"slippage"`
	Funding  httpapi.Number `json:"funding"`
}

func costFiguresOf(parts ...*backtest.CostBreakdown) *CostFigures {
	var sum backtest.CostBreakdown
	found := false
	for _, p := range parts {
		if p == nil {
			continue
		}
		found = true
		sum.GrossPnl, sum.Fees = sum.GrossPnl.Add(p.GrossPnl), sum.Fees.Add(p.Fees)
		sum.Slippage, sum.Funding = sum.Slippage.Add(p.Slippage), sum.Funding.Add(p.Funding)
	}
	if !found {
		return nil
	}
	return &CostFigures{GrossPnl: httpapi.Num(sum.GrossPnl), Fees: httpapi.Num(sum.Fees), Slippage: httpapi.Num(sum.Slippage),
		Funding: httpapi.Num(sum.Funding)}
}
