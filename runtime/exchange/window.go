package exchange

import "time"

// RequestWindow is implemented by exchanges that may execute an order request some time
// after it was sent: a request whose answer was lost, or whose sender died waiting for it,
// can still land. Until the window has passed, "the exchange has no such order" proves
// nothing, so a caller that finds no order must not place it again yet (the executor waits
// it out; see docs/trading.md, "Exactly once").
//
// The window is counted from the start of the PlaceOrder call, not from the request on the
// wire: a caller that dies mid-call only knows when it called. An adapter's window is
// therefore its bound on one PlaceOrder call (every request the call sends, retries
// included, leaves within it) plus the time the exchange still accepts a request after its
// timestamp (recvWindow) plus a margin for the clock error between the adapter and the
// exchange.
//
// Exchanges without the method (the paper exchange, which executes synchronously inside the
// call) have no window: once GetOrder says "not found", the order was never placed.
type RequestWindow interface {
	RequestWindow() time.Duration
}

// WindowOf is ex's request window, zero for an exchange without one.
func WindowOf(ex Exchange) time.Duration {
	if w, ok := ex.(RequestWindow); ok {
		return max(w.RequestWindow(), 0)
	}
	return 0
}

// RequestWindowFor is implemented by exchanges whose window depends on the request: OKX
// bounds an ordinary order's request with its expiry header, which its conditional orders
// do not take, so those alone wait out the longer timestamp window.
type RequestWindowFor interface {
	RequestWindowFor(req OrderRequest) time.Duration
}

// WindowFor is ex's request window for req: RequestWindowFor when ex has it, else WindowOf.
func WindowFor(ex Exchange, req OrderRequest) time.Duration {
	if w, ok := ex.(RequestWindowFor); ok {
		return max(w.RequestWindowFor(req), 0)
	}
	return WindowOf(ex)
}
