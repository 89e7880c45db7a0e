package exchange

import "github.com/sigops/sigops/runtime/errs"

// Validate refuses, before any call, a request that no venue takes: it needs a client order
// ID, a known kind and side, a positive price on a limit order, a positive trigger (and no
// negative price) on a stop_loss or take_profit, and a positive amount unless it closes a
// position (ClosesPosition). A futures stop_loss or take_profit with a limit price and no
// amount is refused too: a whole-position close triggers a market order (Binance takes
// closePosition only on STOP_MARKET and TAKE_PROFIT_MARKET), so a limit stop must say how
// much it sells or buys. Adapters add their venue's own rules around it.
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
	if r.Kind == Futures && (r.Type == StopLoss || r.Type == TakeProfit) && r.Amount.IsZero() && r.Price.IsPositive() {
		return errs.New(errs.InvalidAmount, "a limit %s (price %s) needs an amount: only a market stop can close the whole position", r.Type, r.Price)
	}
	if !r.Amount.IsPositive() && !r.ClosesPosition() {
		return errs.New(errs.InvalidAmount, "amount %s is not positive", r.Amount)
	}
	return nil
}

// ClosesPosition reports whether the request is a futures stop_loss or take_profit without an
// amount and without a limit price: when it triggers it closes the whole position, whatever
// its size is by then, at the market. (With a limit price it closes nothing: Validate
// refuses it.)
func (r OrderRequest) ClosesPosition() bool {
	return r.Kind == Futures && (r.Type == StopLoss || r.Type == TakeProfit) && r.Amount.IsZero() && r.Price.IsZero()
}
