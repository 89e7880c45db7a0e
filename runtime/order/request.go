// Package order builds orders: the internal trading API's order shapes with their
// validation, and the sizing, rounding and exit-price rules that turn a bot's config and a
// signal into an exchange.OrderRequest (decision 6 in docs/decisions.md).
package order

import (
	"strings"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
)

var hundred = decimal.NewFromInt(100)

// Request is an order of the internal trading API (spec: Order requests):
//
//	market       type, side, symbol, amount (base currency; absent: the bot's positionSize,
//	             for an order that opens or adds to a position)
//	limit        as market plus price
//	stop_loss    type, symbol, stopPrice, closePercent
//	take_profit  type, symbol, takeProfitPrice, closePercent
//	close        type, symbol (empty: every open position of the bot), closePercent (empty: 100)
//	cancel       type, clientOrderId (an order of the bot still open on its exchange)
//
// A market or limit order that opens a position may carry stopLoss and takeProfit, absolute
// prices that replace the bot's default exits for that position.
//
// close is the manual signal's close and close-all: it is not an exchange order type, it
// reduces whatever position is open when the executor runs it, so a close queued behind
// another order closes the position that order left. Numbers are JSON numbers (strings are
// accepted too) and are kept as decimals.
type Request struct {
	Type            exchange.OrderType `json:"type"`
	Side            exchange.Side      `json:"side,omitempty"`
	Symbol          string             `json:"symbol"`
	Amount          *httpapi.Number    `json:"amount,omitempty"`
	Price           *httpapi.Number    `json:"price,omitempty"`
	StopPrice       *httpapi.Number    `json:"stopPrice,omitempty"`
	TakeProfitPrice *httpapi.Number    `json:"takeProfitPrice,omitempty"`
	ClosePercent    *httpapi.Number    `json:"closePercent,omitempty"`
	StopLoss        *httpapi.Number    `json:"stopLoss,omitempty"`
	TakeProfit      *httpapi.Number    `json:"takeProfit,omitempty"`
	ClientOrderID   string             `json:"clientOrderId,omitempty"`
}

// Validate checks a request's shape. Failures carry the internal API's numeric codes:
// INVALID_SYMBOL (1001) for a symbol not written BASE/QUOTE, INVALID_AMOUNT (1002) for an
// amount or closePercent out of range, INVALID_PRICE (1003) for a price that is not
// positive. An unknown type or side is INVALID_ACTION (the spec has no numeric code for it).
func (r Request) Validate() error {
	switch r.Type {
	case Close:
		return r.validateClose()
	case Cancel:
		return r.validateCancel()
	}
	if r.ClientOrderID != "" {
		return errs.New(errs.InvalidAction, "only a cancel names a clientOrderId")
	}
	if err := validSymbol(r.Symbol); err != nil {
		return err
	}
	positive := func(d *httpapi.Number) bool { return d != nil && d.IsPositive() }
	switch r.Type {
	case exchange.Market, exchange.Limit:
		if r.Side != exchange.SideBuy && r.Side != exchange.SideSell {
			return errs.New(errs.InvalidAction, "side must be buy or sell")
		}
		if r.Amount != nil && !positive(r.Amount) {
			return errs.New(errs.InvalidAmount, "amount must be a positive base-currency amount")
		}
		if r.Type == exchange.Limit && !positive(r.Price) {
			return errs.New(errs.InvalidPrice, "a limit order needs a positive price")
		}
		if r.Type == exchange.Market && r.Price != nil {
			return errs.New(errs.InvalidPrice, "a market order takes no price; use type limit")
		}
		if r.StopLoss != nil && !positive(r.StopLoss) {
			return errs.New(errs.InvalidPrice, "stopLoss must be a positive price")
		}
		if r.TakeProfit != nil && !positive(r.TakeProfit) {
			return errs.New(errs.InvalidPrice, "takeProfit must be a positive price")
		}
	case exchange.StopLoss, exchange.TakeProfit:
		if r.StopLoss != nil || r.TakeProfit != nil {
			return errs.New(errs.InvalidAction, "stop_loss and take_profit take stopPrice or takeProfitPrice, not stopLoss or takeProfit")
		}
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
		return errs.New(errs.InvalidAction, "type must be market, limit, stop_loss, take_profit, close or cancel")
	}
	return nil
}

// Close is the manual close request's type (see Request).
const Close exchange.OrderType = "close"

// Cancel is the manual cancel request's type (see Request): the executor cancels the
// bot's order ClientOrderID on its exchange and books what the exchange reports.
const Cancel exchange.OrderType = "cancel"

// validateCancel checks a cancel: a clientOrderId, and nothing else.
func (r Request) validateCancel() error {
	if r.ClientOrderID == "" || len(r.ClientOrderID) > 64 {
		return errs.New(errs.InvalidParameter, "a cancel needs the clientOrderId of the order (at most 64 characters)")
	}
	if r.Symbol != "" || r.Side != "" || r.Amount != nil || r.Price != nil || r.StopPrice != nil ||
		r.TakeProfitPrice != nil || r.ClosePercent != nil || r.StopLoss != nil || r.TakeProfit != nil {
		return errs.New(errs.InvalidAction, "a cancel takes only clientOrderId")
	}
	return nil
}

// validateClose checks a close: an optional symbol, an optional closePercent in (0, 100],
// and nothing that belongs to an order (side, amount, prices).
func (r Request) validateClose() error {
	if r.Symbol != "" {
		if err := validSymbol(r.Symbol); err != nil {
			return err
		}
	}
	if r.Side != "" || r.Amount != nil || r.Price != nil || r.StopPrice != nil || r.TakeProfitPrice != nil ||
		r.StopLoss != nil || r.TakeProfit != nil || r.ClientOrderID != "" {
		return errs.New(errs.InvalidAction, "a close takes only symbol and closePercent")
	}
	if p := r.ClosePercent; p != nil && (!p.IsPositive() || p.GreaterThan(hundred)) {
		return errs.New(errs.InvalidAmount, "closePercent must be above 0 and at most 100")
	}
	return nil
}

// IsExit: the request only reduces or protects what is open (close, stop_loss,
// take_profit) or withdraws an order (cancel), so it may run while the bot is paused.
func (r Request) IsExit() bool {
	return r.Type == Close || r.Type == Cancel || r.Type == exchange.StopLoss || r.Type == exchange.TakeProfit
}

func validSymbol(sym string) error {
	base, quote, ok := strings.Cut(sym, "/")
	if !ok || base == "" || quote == "" || strings.ContainsAny(quote, "/ ") || len(sym) > 41 ||
		strings.ToUpper(sym) != sym {
		return errs.New(errs.InvalidSymbol, "symbol must be BASE/QUOTE in capitals, e.g. BTC/USDT")
	}
	return nil
}

// ClientOrderID is the client order ID of one leg of a signal (position.ClientOrderID, where
// the book, which derives it again to store its records without it, keeps the rule).
func ClientOrderID(signalID, leg string) string { return position.ClientOrderID(signalID, leg) }
