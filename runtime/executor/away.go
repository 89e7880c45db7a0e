package executor

import (
	"context"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/store"
)

// awayExchange is an exchange whose every call tells the coalescer the signal is away
// (store.Coalescer.Away): while it waits on an exchange's API, the other signals' Redis
// commands go out without it. A paper venue's calls are not away: its fills go through the
// coalescer, and its prices come from memory (a feed's cache miss, an HTTP request, is
// left to the coalescer's longest wait).
type awayExchange struct {
	x  exchange.Exchange
	co *store.Coalescer
}

// RequestWindowFor is the wrapped exchange's request window (exchange.WindowFor): the
// executor's exactly-once rule for orders whose answer was lost reads it, and a wrapper
// must not hide it.
func (a awayExchange) RequestWindowFor(req exchange.OrderRequest) time.Duration {
	return exchange.WindowFor(a.x, req)
}

func (a awayExchange) Markets(ctx context.Context, kind exchange.Kind) ([]exchange.MarketInfo, error) {
	defer a.co.Away()()
	return a.x.Markets(ctx, kind)
}

func (a awayExchange) Ticker(ctx context.Context, kind exchange.Kind, symbol string) (decimal.Decimal, error) {
	defer a.co.Away()()
	return a.x.Ticker(ctx, kind, symbol)
}

func (a awayExchange) Balance(ctx context.Context, asset string) (exchange.Balance, error) {
	defer a.co.Away()()
	return a.x.Balance(ctx, asset)
}

func (a awayExchange) PlaceOrder(ctx context.Context, req exchange.OrderRequest) (exchange.Order, error) {
	defer a.co.Away()()
	return a.x.PlaceOrder(ctx, req)
}

func (a awayExchange) GetOrder(ctx context.Context, kind exchange.Kind, symbol, clientOrderID string) (exchange.Order, error) {
	defer a.co.Away()()
	return a.x.GetOrder(ctx, kind, symbol, clientOrderID)
}

func (a awayExchange) CancelOrder(ctx context.Context, kind exchange.Kind, symbol, clientOrderID string) (exchange.Order, error) {
	defer a.co.Away()()
	return a.x.CancelOrder(ctx, kind, symbol, clientOrderID)
}

func (a awayExchange) SetLeverage(ctx context.Context, symbol string, leverage int) error {
	defer a.co.Away()()
	return a.x.SetLeverage(ctx, symbol, leverage)
}
