package order

import (
	"strings"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/signal"
)

// ParseAmount reads a bot config amount: "10%" or "0.01". Empty is nil.
func ParseAmount(s string) (*signal.Amount, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	a := signal.Amount{}
	if strings.HasSuffix(s, "%") {
		a.Percent = true
		s = strings.TrimSpace(strings.TrimSuffix(s, "%"))
	}
	d, err := decimal.NewFromString(s)
	if err != nil || !d.IsPositive() || (a.Percent && d.GreaterThan(hundred)) {
		return nil, errs.New(errs.InvalidAmount, "bot amount %q is not a positive amount or percentage", s)
	}
	a.Value = httpapi.Num(d)
	return &a, nil
}

// Leverage is the signal's leverage, else the bot's, on futures; always 1 on spot.
func Leverage(kind exchange.Kind, signalLeverage int, botLeverage int32) int {
	if kind != exchange.Futures {
		return 1
	}
	if signalLeverage > 0 {
		return signalLeverage
	}
	if botLeverage > 0 {
		return int(botLeverage)
	}
	return 1
}

// Entry is what sizing an opening (or adding) order needs.
type Entry struct {
	Market exchange.MarketInfo
	// Size is a percentage of the available quote balance or a base amount.
	Size signal.Amount
	// Price is the expected fill price: the limit price, or the market price.
	Price decimal.Decimal
	// Available is the free quote balance.
	Available decimal.Decimal
	// FeeRate is the account's fee rate (for the fee on top of the notional).
	FeeRate decimal.Decimal
	// Leverage is 1 on spot.
	Leverage int
}

// EntryAmount sizes an entry, rounded down to the step:
//
//   - "N%" on spot: N % of the available quote balance is the notional: amount =
//     floor(available × N/100 / price). On futures N % of the available balance is the
//     margin, so the notional is that × leverage.
//   - a fixed size is a base amount (decision 6), rounded down to the step.
//
// A percentage size whose fee (and margin rounding) would take it past the available
// balance is cut to what the balance pays for, so that "100%" works. The result is
// checked against the market's minimums: INVALID_AMOUNT (1002) below them.
func EntryAmount(e Entry) (decimal.Decimal, error) {
	if !e.Price.IsPositive() {
		return decimal.Zero, errs.New(errs.InvalidPrice, "no price to size the order with")
	}
	lev := e.Leverage
	if lev < 1 || e.Market.Kind != exchange.Futures {
		lev = 1
	}
	m := e.Market
	var amount decimal.Decimal
	if e.Size.Percent {
		budget := e.Available.Mul(e.Size.Value.Decimal).Div(hundred).Mul(decimal.NewFromInt(int64(lev)))
		amount = m.RoundAmount(budget.Div(e.Price))
		if cost := required(amount, e.Price, e.FeeRate, lev); cost.GreaterThan(e.Available) && amount.IsPositive() {
			one := decimal.NewFromInt(1)
			perUnit := e.Price.Mul(one.Add(e.FeeRate.Mul(decimal.NewFromInt(int64(lev)))))
			amount = m.RoundAmount(e.Available.Mul(decimal.NewFromInt(int64(lev))).Div(perUnit))
			for i := 0; i < 3 && amount.IsPositive() && required(amount, e.Price, e.FeeRate, lev).GreaterThan(e.Available); i++ {
				amount = amount.Sub(m.StepSize)
			}
		}
	} else {
		amount = m.RoundAmount(e.Size.Value.Decimal)
	}
	return amount, CheckMinimums(m, amount, e.Price)
}

// required is what an entry takes from the balance: margin (the notional on spot) + fee.
func required(amount, price, feeRate decimal.Decimal, lev int) decimal.Decimal {
	notional := amount.Mul(price)
	return position.InitialMargin(notional, lev).Add(position.Fee(notional, feeRate))
}

// CheckMinimums refuses an opening order below the market's minimum quantity or notional.
func CheckMinimums(m exchange.MarketInfo, amount, price decimal.Decimal) error {
	details := map[string]any{"amount": amount, "minQty": m.MinQty, "minNotional": m.MinNotional}
	if !amount.IsPositive() || amount.LessThan(m.MinQty) {
		return errs.New(errs.InvalidAmount, "amount %s %s is below the minimum %s after rounding to the step %s",
			amount, m.Base, m.MinQty, m.StepSize).WithDetails(details)
	}
	if n := amount.Mul(price); n.LessThan(m.MinNotional) {
		details["notional"] = n
		return errs.New(errs.InvalidAmount, "order value %s %s is below the minimum %s", n, m.Quote, m.MinNotional).WithDetails(details)
	}
	return nil
}

// ExitAmount sizes a reducing order against what is held: no size closes all, "N%" is that
// share of the holding, a fixed amount is capped at the holding; rounded down to the step.
// Closing is never refused for being below the minimum notional.
func ExitAmount(m exchange.MarketInfo, size *signal.Amount, held decimal.Decimal) (decimal.Decimal, error) {
	var amount decimal.Decimal
	switch {
	case size == nil, size.Percent && size.Value.GreaterThanOrEqual(hundred):
		amount = held
	case size.Percent:
		amount = m.RoundAmount(held.Mul(size.Value.Decimal).Div(hundred))
	default:
		amount = decimal.Min(m.RoundAmount(size.Value.Decimal), held)
	}
	if !amount.IsPositive() {
		return decimal.Zero, errs.New(errs.InvalidAmount, "amount to close rounds to 0 at the step %s", m.StepSize).
			WithDetails(map[string]any{"held": held, "stepSize": m.StepSize})
	}
	return amount, nil
}

// LimitPrice rounds a limit price down to the tick; INVALID_PRICE if nothing is left.
func LimitPrice(m exchange.MarketInfo, p decimal.Decimal) (decimal.Decimal, error) {
	r := m.RoundPrice(p)
	if !r.IsPositive() {
		return decimal.Zero, errs.New(errs.InvalidPrice, "price %s rounds to 0 at the tick %s", p, m.TickSize)
	}
	return r, nil
}

// CheckExit refuses an absolute stop-loss or take-profit on the wrong side of the entry
// price (a long's stop-loss must be below it, its take-profit above; a short the reverse),
// which would trigger at once. Percentages are always on the right side.
func CheckExit(side position.Side, exit *signal.Amount, ref decimal.Decimal, stopLoss bool) error {
	if exit == nil || exit.Percent {
		return nil
	}
	name := "takeProfit"
	if stopLoss {
		name = "stopLoss"
	}
	below := (side == position.Long) == stopLoss
	if below && !exit.Value.LessThan(ref) {
		return errs.New(errs.InvalidPrice, "%s %s must be below the entry price %s for a %s", name, exit.Value, ref, side)
	}
	if !below && !exit.Value.GreaterThan(ref) {
		return errs.New(errs.InvalidPrice, "%s %s must be above the entry price %s for a %s", name, exit.Value, ref, side)
	}
	return nil
}
