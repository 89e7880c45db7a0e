// Package position is the trade book of the executor: a bot's open positions (one per
// symbol, never netted with another bot's), its orders with the status machine of decision
// 10 in docs/decisions.md, and its realised trades, kept in Redis. This file holds the
// money arithmetic that the paper exchange shares, so that the exchange's balance and the book's
// realised PnL agree to the last decimal.
package position

import (
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange"
)

// Places is the number of decimal places kept where an amount comes out of a division
// (margin = notional / leverage, a share of a position's cost on a partial close, an
// average entry price). Products of amounts, prices and fee rates are kept exact.
const Places = 8

// MaintenanceMarginRate is the paper futures maintenance margin rate used for the
// liquidation price (0.5 %, the tier-1 rate of the large linear perpetual venues).
var MaintenanceMarginRate = decimal.RequireFromString("0.005")

var hundred = decimal.NewFromInt(100)

// Side of a position.
type Side string

const (
	Long  Side = "long"
	Short Side = "short"
)

// Opposite is the other side.
func (s Side) Opposite() Side {
	if s == Long {
		return Short
	}
	return Long
}

// EntrySide is the order side that opens or adds to a position of this side.
func (s Side) EntrySide() exchange.Side {
	if s == Long {
		return exchange.SideBuy
	}
	return exchange.SideSell
}

// ExitSide is the order side that reduces a position of this side.
func (s Side) ExitSide() exchange.Side {
	if s == Long {
		return exchange.SideSell
	}
	return exchange.SideBuy
}

// SideOf is the position side an entry order of side opens.
func SideOf(side exchange.Side) Side {
	if side == exchange.SideSell {
		return Short
	}
	return Long
}

// InitialMargin is the margin a futures fill reserves: notional / leverage, rounded up to
// Places so that the account never reserves less than the exact margin. Leverage 1 or
// below (and spot) reserves the whole notional.
func InitialMargin(notional decimal.Decimal, leverage int) decimal.Decimal {
	if leverage <= 1 {
		return notional
	}
	return notional.Div(decimal.NewFromInt(int64(leverage))).RoundUp(Places)
}

// Fee is notional × rate, exact.
func Fee(notional, rate decimal.Decimal) decimal.Decimal { return notional.Mul(rate) }

// share is total × part / whole: all of total when part is the whole (so that nothing is
// left behind by rounding), otherwise rounded down to Places.
func share(total, part, whole decimal.Decimal) decimal.Decimal {
	if part.GreaterThanOrEqual(whole) || whole.IsZero() {
		return total
	}
	return total.Mul(part).Div(whole).RoundDown(Places)
}

// Settlement is what closing qty of a position moves.
type Settlement struct {
	// CostShare, MarginShare and FeeShare are the closed part's share of the position's
	// entry cost, used margin and entry fees.
	CostShare, MarginShare, FeeShare decimal.Decimal
	// Gross is the price PnL of the closed part (before fees).
	Gross decimal.Decimal
	// ExitFee is the fee of the closing fill.
	ExitFee decimal.Decimal
	// Credit is what the account's quote balance receives: spot qty×exit − fee; futures the
	// released margin plus Gross minus the fee, never below zero (an isolated position can
	// lose at most its margin).
	Credit decimal.Decimal
	// Capped is true when a futures loss was capped at the margin (a bankrupt position).
	Capped bool
}

// Net is the realised PnL after all fees (entry share and exit): what the close changed
// the account by relative to the money put in.
func (s Settlement) Net() decimal.Decimal { return s.Gross.Sub(s.ExitFee).Sub(s.FeeShare) }

// Fees is the entry-fee share plus the exit fee.
func (s Settlement) Fees() decimal.Decimal { return s.FeeShare.Add(s.ExitFee) }

// Settle computes closing qty (≤ size) of a position at exitPrice with exitFee.
func Settle(kind exchange.Kind, side Side, size, cost, margin, entryFees, qty, exitPrice, exitFee decimal.Decimal) Settlement {
	s := Settlement{
		CostShare:   share(cost, qty, size),
		MarginShare: share(margin, qty, size),
		FeeShare:    share(entryFees, qty, size),
		ExitFee:     exitFee,
	}
	exitValue := qty.Mul(exitPrice)
	if side == Long {
		s.Gross = exitValue.Sub(s.CostShare)
	} else {
		s.Gross = s.CostShare.Sub(exitValue)
	}
	if kind != exchange.Futures {
		s.Credit = exitValue.Sub(exitFee)
		return s
	}
	s.Credit = s.MarginShare.Add(s.Gross).Sub(exitFee)
	if s.Credit.IsNegative() {
		// Bankrupt: the loss beyond the margin is absorbed (as an insurance fund would);
		// the reported gross PnL is what the account actually lost.
		s.Capped = true
		s.Credit = decimal.Zero
		s.Gross = exitFee.Sub(s.MarginShare)
	}
	return s
}

// LiquidationPrice of an isolated-margin linear position: the price at which the
// position's equity (margin + unrealised PnL) equals the maintenance margin
// (mmr × price × size):
//
//	long:  (cost − margin) / (size × (1 − mmr))
//	short: (cost + margin) / (size × (1 + mmr))
//
// rounded to Places towards the entry (up for a long, down for a short); zero when the
// position cannot be liquidated (a long at leverage 1).
func LiquidationPrice(side Side, size, cost, margin, mmr decimal.Decimal) decimal.Decimal {
	if !size.IsPositive() {
		return decimal.Zero
	}
	one := decimal.NewFromInt(1)
	var p decimal.Decimal
	if side == Long {
		p = cost.Sub(margin).Div(size.Mul(one.Sub(mmr))).RoundUp(Places)
	} else {
		p = cost.Add(margin).Div(size.Mul(one.Add(mmr))).RoundDown(Places)
	}
	if !p.IsPositive() {
		return decimal.Zero
	}
	return p
}

// PriceFromPercent turns a stop-loss or take-profit percentage into a price from entry:
// a stop-loss is pct below entry for a long and above for a short; a take-profit the
// reverse.
func PriceFromPercent(entry, pct decimal.Decimal, side Side, stopLoss bool) decimal.Decimal {
	f := pct.Div(hundred)
	below := (side == Long) == stopLoss
	if below {
		return entry.Mul(decimal.NewFromInt(1).Sub(f))
	}
	return entry.Mul(decimal.NewFromInt(1).Add(f))
}
