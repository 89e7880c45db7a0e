// Package order builds orders: the internal trading API's order shapes with their
// validation, and the sizing, rounding and exit-price rules that turn a bot's config and a
// signal into an exchange.OrderRequest (decision 6 in docs/decisions.md).
package order

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
)

var hundred = decimal.NewFromInt(100)

// Request is an order of the internal trading API (spec: Order requests):
//
//	market       type, side, symbol, amount (base currency)
//	limit        as market plus price
//	stop_loss    type, symbol, stopPrice, closePercent
//	take_profit  type, symbol, takeProfitPrice, closePercent
//	close        type, symbol (empty: every open position of the bot), closePercent (empty: 100)
//
// close is the manual signal's close and close-all: it is not an exchange order type, it
// reduces whatever position is open when the executor runs it, so a close queued behind
// another order closes the position that order left. Numbers are JSON numbers (strings are
// accepted too) and are kept as decimals.
type Request struct {
	Type            exchange.OrderType `json:"type"`
	Side            exchange.Side      `json:"side,omitempty"`
	Symbol          string             `json:"symbol"`
	Amount          *decimal.Decimal   `json:"amount,omitempty"`
	Price           *decimal.Decimal   `json:"price,omitempty"`
	StopPrice       *decimal.Decimal   `json:"stopPrice,omitempty"`
	TakeProfitPrice *decimal.Decimal   `json:"takeProfitPrice,omitempty"`
	ClosePercent    *decimal.Decimal   `json:"closePercent,omitempty"`
}

// Validate checks a request's shape. Failures carry the internal API's numeric codes:
// INVALID_SYMBOL (1001) for a symbol not written BASE/QUOTE, INVALID_AMOUNT (1002) for an
// amount or closePercent out of range, INVALID_PRICE (1003) for a price that is not
// positive. An unknown type or side is INVALID_ACTION (the spec has no numeric code for it).
func (r Request) Validate() error {
	if r.Type == Close {
		return r.validateClose()
	}
	if err := validSymbol(r.Symbol); err != nil {
		return err
	}
	positive := func(d *decimal.Decimal) bool { return d != nil && d.IsPositive() }
	switch r.Type {
	case exchange.Market, exchange.Limit:
		if r.Side != exchange.SideBuy && r.Side != exchange.SideSell {
			return errs.New(errs.InvalidAction, "side must be buy or sell")
		}
		if !positive(r.Amount) {
			return errs.New(errs.InvalidAmount, "amount must be a positive base-currency amount")
		}
		if r.Type == exchange.Limit && !positive(r.Price) {
			return errs.New(errs.InvalidPrice, "a limit order needs a positive price")
		}
		if r.Type == exchange.Market && r.Price != nil {
			return errs.New(errs.InvalidPrice, "a market order takes no price; use type limit")
		}
	case exchange.StopLoss, exchange.TakeProfit:
		trigger, name := r.StopPrice, "stopPrice"
		if r.Type == exchange.TakeProfit {
			trigger, name = r.TakeProfitPrice, "takeProfitPrice"
		}
		if !positive(trigger) {
			return errs.New(errs.InvalidPrice, "%s must be a positive price", name)
		}
		if !positive(r.ClosePercent) || r.ClosePercent.GreaterThan(hundred) {
			return errs.New(errs.InvalidAmount, "closePercent must be above 0 and at most 100")
		}
	default:
		return errs.New(errs.InvalidAction, "type must be market, limit, stop_loss, take_profit or close")
	}
	return nil
}

// Close is the manual close request's type (see Request).
const Close exchange.OrderType = "close"

// validateClose checks a close: an optional symbol, an optional closePercent in (0, 100],
// and nothing that belongs to an order (side, amount, prices).
func (r Request) validateClose() error {
	if r.Symbol != "" {
		if err := validSymbol(r.Symbol); err != nil {
			return err
		}
	}
	if r.Side != "" || r.Amount != nil || r.Price != nil || r.StopPrice != nil || r.TakeProfitPrice != nil {
		return errs.New(errs.InvalidAction, "a close takes only symbol and closePercent")
	}
	if p := r.ClosePercent; p != nil && (!p.IsPositive() || p.GreaterThan(hundred)) {
		return errs.New(errs.InvalidAmount, "closePercent must be above 0 and at most 100")
	}
	return nil
}

// IsExit: the request only reduces or protects what is open (close, stop_loss,
// take_profit), so it may run while the bot is paused.
func (r Request) IsExit() bool {
	return r.Type == Close || r.Type == exchange.StopLoss || r.Type == exchange.TakeProfit
}

func validSymbol(sym string) error {
	base, quote, ok := strings.Cut(sym, "/")
	if !ok || base == "" || quote == "" || strings.ContainsAny(quote, "/ ") || len(sym) > 41 ||
		strings.ToUpper(sym) != sym {
		return errs.New(errs.InvalidSymbol, "symbol must be BASE/QUOTE in capitals, e.g. BTC/USDT")
	}
	return nil
}

// ClientOrderID is the client order ID of one leg of a signal: "sg-" and 32 hex digits of
// SHA-256, 35 characters (Binance and Bybit take 36). The main leg ("") hashes the signal
// ID alone; other legs (a reversal's close, one close per symbol) hash "signalId#leg".
// A retried signal derives the same IDs, so an exchange never receives a second order.
func ClientOrderID(signalID, leg string) string {
	in := signalID
	if leg != "" {
		in += "#" + leg
	}
	sum := sha256.Sum256([]byte(in))
	return "sg-" + hex.EncodeToString(sum[:])[:32]
}
