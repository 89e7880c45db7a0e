package exchange

import "github.com/sigops/sigops/runtime/errs"

// Validate refuses, before any call, a request that no venue takes: it needs a client order
// ID, a known kind and side, a positive price on a limit order, a positive trigger (and no
// negative price) on a stop_loss or take_profit, and a positive amount unless it closes a
// position (ClosesPosition). Adapters add their venue's own rules around it.
func (r OrderRequest) Validate() error {
	if r.ClientOrderID == "" {
		return errs.New(errs.ExchangeError, "a client order ID is required")
	}
	if r.Kind != Spot && r.Kind != Futures {
		return errs.New(errs.InvalidSymbol, "unknown market kind %q", r.Kind)
	}
	if r.Side != SideBuy && r.Side != SideSell {
		return errs.New(errs.ExchangeError, "unknown side %q", r.Side)
	}
	switch r.Type {
	case Market:
	case Limit:
		if !r.Price.IsPositive() {
			return errs.New(errs.InvalidPrice, "a limit order needs a positive price")
		}
	case StopLoss, TakeProfit:
		if !r.StopPrice.IsPositive() {
			return errs.New(errs.InvalidPrice, "a %s order needs a positive trigger price", r.Type)
		}
		if r.Price.IsNegative() {
			return errs.New(errs.InvalidPrice, "negative price %s", r.Price)
		}
	default:
		return errs.New(errs.ExchangeError, "orders are market, limit, stop_loss or take_profit, not %q", r.Type)
	}
	if !r.Amount.IsPositive() && !r.ClosesPosition() {
		return errs.New(errs.InvalidAmount, "amount %s is not positive", r.Amount)
	}
	return nil
}

// ClosesPosition reports whether the request is a futures stop_loss or take_profit without an
// amount: when it triggers it closes the whole position, whatever its size is by then.
func (r OrderRequest) ClosesPosition() bool {
	return r.Kind == Futures && (r.Type == StopLoss || r.Type == TakeProfit) && r.Amount.IsZero()
}
