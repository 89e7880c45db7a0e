package okx_test

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/okx"
	"github.com/sigops/sigops/runtime/exchange/okx/okxfake"
)

func TestRequestWindow(t *testing.T) {
	srv := okxfake.New()
	t.Cleanup(srv.Close)
	a := account(t, srv, okx.Connector{})
	if w := exchange.WindowOf(a); w != 33*time.Second {
		t.Fatalf("default window %s, want Timeout 2 s + OKX's 30 s timestamp window + margin 1 s", w)
	}
	if w := a.RequestWindowFor(spotMarket(exchange.SideBuy, "0.01")); w != 8*time.Second {
		t.Fatalf("market order window %s, want Timeout 2 s + expTime 5 s + margin 1 s", w)
	}
	sl := swap(exchange.SideSell, exchange.StopLoss, "0.01")
	if w := a.RequestWindowFor(sl); w != 33*time.Second {
		t.Fatalf("algo order window %s", w)
	}
	a = account(t, srv, okx.Connector{Timeout: 400 * time.Millisecond, Expiry: time.Second, ClockMargin: 100 * time.Millisecond})
	if w := a.RequestWindowFor(spotMarket(exchange.SideBuy, "0.01")); w != 1500*time.Millisecond {
		t.Fatalf("window %s", w)
	}
}

// The order is looked up before it is placed: the same request twice is one order and
// one placement.
func TestPlaceLooksUpFirst(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	req := spotMarket(exchange.SideBuy, "0.01")
	first, err := a.PlaceOrder(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	again, err := a.PlaceOrder(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if again.ID != first.ID || again.Status != exchange.StatusFilled || srv.OrdersCreated(okx.ClOrdID(req.ClientOrderID)) != 1 {
		t.Errorf("again %+v", again)
	}
	if n := srv.OrderCount(); n != 1 {
		t.Errorf("%d orders", n)
	}
	testkit.EqualD(t, "one fill", srv.Balance("USDT"), "9500")
}

// A placement whose answer is lost after OKX applied it is found by the lookup.
func TestLostAnswerFound(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	if _, err := a.Markets(ctx, exchange.Spot); err != nil {
		t.Fatal(err)
	}
	srv.FailNext(okxfake.Fault{Path: "/api/v5/trade/order", Method: http.MethodPost, DropAfterApply: true})
	req := spotMarket(exchange.SideBuy, "0.01")
	o, err := a.PlaceOrder(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != exchange.StatusFilled || srv.OrdersCreated(okx.ClOrdID(req.ClientOrderID)) != 1 {
		t.Errorf("%+v", o)
	}
	if n := srv.Calls("/api/v5/trade/order"); n < 3 {
		t.Errorf("%d requests to /trade/order: lookup, place, lookup expected", n)
	}
}

// A duplicate clOrdId answer (51016: an order holding it is pending) returns that order;
// an order of another size holding it is EXCHANGE_ERROR.
func TestDuplicateClOrdID(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	req := exchange.OrderRequest{ClientOrderID: cid(), Symbol: "BTC/USDT", Kind: exchange.Spot, Side: exchange.SideBuy,
		Type: exchange.Limit, Amount: testkit.D("0.01"), Price: testkit.D("40000")}
	first, err := a.PlaceOrder(ctx, req)
	if err != nil || first.Status != exchange.StatusOpen {
		t.Fatal(first, err)
	}
	// The lookup before placing misses (as a lagging read would): the placement meets 51016.
	srv.FailNext(okxfake.Fault{Path: "/api/v5/trade/order", Method: http.MethodGet, Code: 51603, Msg: "Order does not exist."})
	o, err := a.PlaceOrder(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if o.ID != first.ID || srv.Answered(51016) != 1 || srv.OrdersCreated(okx.ClOrdID(req.ClientOrderID)) != 1 {
		t.Errorf("%+v, 51016 answered %d", o, srv.Answered(51016))
	}
	other := req
	other.Amount = testkit.D("0.02")
	code(t, errOf(a.PlaceOrder(ctx, other)), errs.ExchangeError)
}

// A placement without an answer is never sent again inside the call: it is
// ErrOrderUnconfirmed, untyped. Released before its expTime, it lands, and the lookup finds
// it; released after, OKX refuses it unprocessed (50036).
func TestHeldPlacementLandsOnlyBeforeItsExpTime(t *testing.T) {
	srv := okxfake.New()
	t.Cleanup(srv.Close)
	ctx := context.Background()
	a := account(t, srv, okx.Connector{Timeout: 400 * time.Millisecond, Expiry: 600 * time.Millisecond})
	if _, err := a.Markets(ctx, exchange.Spot); err != nil {
		t.Fatal(err)
	}
	const place = "POST /api/v5/trade/order"

	held := srv.HoldNext(http.MethodPost, "/api/v5/trade/order")
	req := spotMarket(exchange.SideBuy, "0.01")
	_, err := a.PlaceOrder(ctx, req)
	if _, typed := errs.As(err); typed || !errors.Is(err, okx.ErrOrderUnconfirmed) || !errors.Is(err, exchange.ErrUnreachable) {
		t.Fatalf("place while held: %v", err)
	}
	noSecret(t, err)
	<-held.Arrived()
	if _, err := a.GetOrder(ctx, exchange.Spot, "BTC/USDT", req.ClientOrderID); !errors.Is(err, exchange.ErrOrderNotFound) {
		t.Fatalf("lookup while held: %v", err)
	}
	held.Release()
	o, err := a.GetOrder(ctx, exchange.Spot, "BTC/USDT", req.ClientOrderID)
	if err != nil || o.Status != exchange.StatusFilled || srv.OrdersCreated(okx.ClOrdID(req.ClientOrderID)) != 1 {
		t.Fatalf("after the late arrival: %v %+v", err, o)
	}
	if n := srv.Calls(place); n != 1 {
		t.Fatalf("%d placements, want 1: never re-sent inside the window", n)
	}

	held = srv.HoldNext(http.MethodPost, "/api/v5/trade/order")
	req = spotMarket(exchange.SideBuy, "0.01")
	start := time.Now()
	if _, err := a.PlaceOrder(ctx, req); !errors.Is(err, okx.ErrOrderUnconfirmed) {
		t.Fatalf("place while held: %v", err)
	}
	<-held.Arrived()
	time.Sleep(time.Until(start.Add(700 * time.Millisecond)))
	held.Release()
	if n := srv.OrdersCreated(okx.ClOrdID(req.ClientOrderID)); n != 0 || srv.Answered(50036) != 1 {
		t.Fatalf("a placement past its expTime: %d orders, %d refusals", n, srv.Answered(50036))
	}
	// After the window the order is placed again (the executor's retry), once.
	o, err = a.PlaceOrder(ctx, req)
	if err != nil || o.Status != exchange.StatusFilled || srv.OrdersCreated(okx.ClOrdID(req.ClientOrderID)) != 1 {
		t.Fatalf("after the window: %v %+v", err, o)
	}
}

// Every call is bounded by the timeout, retries included; a placement that gets no answer
// in time is ErrOrderUnconfirmed and lands at most once.
func TestCallTimeoutBounded(t *testing.T) {
	srv := okxfake.New()
	a := account(t, srv, okx.Connector{}) // the default 2 s
	ctx := context.Background()
	if _, err := a.Markets(ctx, exchange.Spot); err != nil {
		t.Fatal(err)
	}
	srv.FailNext(okxfake.Fault{Path: "/api/v5/account/balance", Delay: 2200 * time.Millisecond, Times: 1000})
	start := time.Now()
	_, err := a.Balance(ctx, "USDT")
	if took := time.Since(start); took > okx.DefaultTimeout+150*time.Millisecond {
		t.Errorf("balance took %s", took)
	}
	code(t, err, errs.ExchangeError)
	if !errors.Is(err, exchange.ErrUnreachable) {
		t.Errorf("not unreachable: %v", err)
	}

	srv.FailNext(okxfake.Fault{Path: "/api/v5/trade/order", Method: http.MethodPost, Delay: 2200 * time.Millisecond, Times: 1000})
	req := spotMarket(exchange.SideBuy, "0.01")
	start = time.Now()
	_, err = a.PlaceOrder(ctx, req)
	if took := time.Since(start); took > okx.DefaultTimeout+150*time.Millisecond {
		t.Errorf("place order took %s", took)
	}
	if _, typed := errs.As(err); typed || !errors.Is(err, okx.ErrOrderUnconfirmed) || !errors.Is(err, exchange.ErrUnreachable) {
		t.Errorf("unconfirmed: %v", err)
	}
	noSecret(t, err)
	srv.Close() // the delayed placement lands now, inside its expTime: one order
	if n := srv.OrdersCreated(okx.ClOrdID(req.ClientOrderID)); n != 1 {
		t.Errorf("%d orders", n)
	}

	srv2 := okxfake.New()
	defer srv2.Close()
	a2 := account(t, srv2, okx.Connector{Timeout: 300 * time.Millisecond})
	srv2.FailNext(okxfake.Fault{Delay: time.Second, Times: 100})
	start = time.Now()
	_, err = a2.Permissions(ctx)
	if took := time.Since(start); took > 450*time.Millisecond || !errors.Is(err, exchange.ErrUnreachable) {
		t.Errorf("permissions: %s %v", took, err)
	}
}
