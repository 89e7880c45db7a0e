// Package exchange is the one interface the executor trades through, for the paper exchange
// and the live adapters alike, with the shared order and market types.
package exchange

import (
	"context"
	"strings"

	"github.com/shopspring/decimal"
)

// Kind is spot or futures (USDⓈ-M / linear perpetuals).
type Kind string

const (
	Spot    Kind = "spot"
	Futures Kind = "futures"
)

// Side of an order.
type Side string

const (
	SideBuy  Side = "buy"
	SideSell Side = "sell"
)

// OrderType is the internal trading API's order type.
type OrderType string

const (
	Market     OrderType = "market"
	Limit      OrderType = "limit"
	StopLoss   OrderType = "stop_loss"
	TakeProfit OrderType = "take_profit"
)

// OrderStatus is the spec's order status (decision 10 in docs/decisions.md).
type OrderStatus string

const (
	StatusPending         OrderStatus = "pending"
	StatusOpen            OrderStatus = "open"
	StatusPartiallyFilled OrderStatus = "partially_filled"
	StatusFilled          OrderStatus = "filled"
	StatusCancelled       OrderStatus = "cancelled"
	StatusRejected        OrderStatus = "rejected"
	StatusExpired         OrderStatus = "expired"
)

// Terminal states never change.
func (s OrderStatus) Terminal() bool {
	switch s {
	case StatusFilled, StatusCancelled, StatusRejected, StatusExpired:
		return true
	}
	return false
}

// CanBecome reports whether decision 10 allows s -> next: pending -> open ->
// partially_filled -> filled; pending/open/partially_filled -> cancelled or expired;
// pending -> rejected. (pending -> filled and open -> filled are allowed: a market order
// or a limit order can fill at once, skipping intermediate states.)
func (s OrderStatus) CanBecome(next OrderStatus) bool {
	if s.Terminal() || s == next {
		return false
	}
	switch next {
	case StatusOpen:
		return s == StatusPending
	case StatusPartiallyFilled:
		return s == StatusPending || s == StatusOpen
	case StatusFilled, StatusCancelled, StatusExpired:
		return true
	case StatusRejected:
		return s == StatusPending
	}
	return false
}

// SymbolAssets is the base and quote asset of a canonical BASE/QUOTE symbol (quote empty
// for a symbol without a slash).
func SymbolAssets(symbol string) (base, quote string) {
	base, quote, _ = strings.Cut(symbol, "/")
	return base, quote
}

// MarketInfo is a tradable symbol with its precision and minimums, from the exchange.
type MarketInfo struct {
	Symbol      string // BASE/QUOTE
	Base, Quote string
	Kind        Kind
	TickSize    decimal.Decimal // price increment
	StepSize    decimal.Decimal // amount increment
	MinQty      decimal.Decimal
	MinNotional decimal.Decimal
}

// RoundAmount rounds an amount down to the step (decision 6 in docs/decisions.md): never more
// than asked.
func (m MarketInfo) RoundAmount(a decimal.Decimal) decimal.Decimal { return floorTo(a, m.StepSize) }

// RoundPrice rounds a price down to the tick.
func (m MarketInfo) RoundPrice(p decimal.Decimal) decimal.Decimal { return floorTo(p, m.TickSize) }

func floorTo(v, step decimal.Decimal) decimal.Decimal {
	if !step.IsPositive() {
		return v
	}
	return v.Div(step).Floor().Mul(step)
}

// OrderRequest is an order to place. ClientOrderID is derived from the signalId, so placing
// the same request twice never makes two orders.
type OrderRequest struct {
	ClientOrderID string
	Symbol        string
	Kind          Kind
	Side          Side
	Type          OrderType
	Amount        decimal.Decimal // zero only when the order closes a position (ClosesPosition)
	Price         decimal.Decimal // limit price; zero for market
	StopPrice     decimal.Decimal // trigger of stop_loss / take_profit
	ReduceOnly    bool
	Leverage      int
}

// Order is an order as the exchange reports it.
type Order struct {
	ID            string
	ClientOrderID string
	Symbol        string
	Kind          Kind
	Side          Side
	Type          OrderType
	Status        OrderStatus
	Amount        decimal.Decimal
	FilledAmount  decimal.Decimal
	AvgPrice      decimal.Decimal
	Fee           decimal.Decimal
	FeeAsset      string
	CreatedAt     int64 // ms
	UpdatedAt     int64 // ms
}

// Balance of one asset.
type Balance struct {
	Asset  string
	Free   decimal.Decimal
	Locked decimal.Decimal
}

// Exchange is what the executor needs of an exchange account. Errors are *errs.Error with
// the spec's codes (INSUFFICIENT_BALANCE with details, INVALID_AMOUNT, EXCHANGE_ERROR, ...).
type Exchange interface {
	// Markets lists the tradable symbols of a kind (cached by implementations).
	Markets(ctx context.Context, kind Kind) ([]MarketInfo, error)
	// Ticker is the last price.
	Ticker(ctx context.Context, kind Kind, symbol string) (decimal.Decimal, error)
	// Balance of one asset.
	Balance(ctx context.Context, asset string) (Balance, error)
	// PlaceOrder places an order; placing the same ClientOrderID again returns the first
	// order instead of making a second.
	PlaceOrder(ctx context.Context, req OrderRequest) (Order, error)
	// GetOrder finds an order by client order ID (errs POSITION_NOT_FOUND is not used here:
	// an unknown order is ErrOrderNotFound).
	GetOrder(ctx context.Context, kind Kind, symbol, clientOrderID string) (Order, error)
	// CancelOrder cancels an open order.
	CancelOrder(ctx context.Context, kind Kind, symbol, clientOrderID string) (Order, error)
	// SetLeverage sets a futures symbol's leverage.
	SetLeverage(ctx context.Context, symbol string, leverage int) error
}

// Exits reports whether the order takes from a position rather than opening or adding to
// one: a reduce-only order, and every stop_loss and take_profit (which only ever exit).
func (r OrderRequest) Exits() bool {
	return r.ReduceOnly || r.Type == StopLoss || r.Type == TakeProfit
}

// HedgeLong is the position an order acts on in hedge mode: the long one when it buys to
// open or sells to exit, the short one when it sells to open or buys to exit.
func (r OrderRequest) HedgeLong() bool { return (r.Side == SideBuy) != r.Exits() }
