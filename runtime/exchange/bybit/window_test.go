package bybit_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/bybit"
	"github.com/sigops/sigops/runtime/exchange/bybit/bybitfake"
)

func TestRequestWindow(t *testing.T) {
	srv := bybitfake.New()
	t.Cleanup(srv.Close)
	if w := exchange.WindowOf(account(t, srv, bybit.Connector{})); w != 8*time.Second {
		t.Fatalf("default window %s, want Timeout 2 s + recv window 5 s + margin 1 s", w)
	}
	a := account(t, srv, bybit.Connector{Timeout: 400 * time.Millisecond, RecvWindow: time.Second, ClockMargin: 100 * time.Millisecond})
	if w := a.RequestWindow(); w != 1500*time.Millisecond {
		t.Fatalf("window %s", w)
	}
}

// A create held in transit while its sender gives up (or dies) lands when it arrives
// inside its recv window, after a lookup found nothing; one that arrives after the
// configured recv window (sent as X-BAPI-RECV-WINDOW) is refused.
func TestHeldCreateLandsLateOnlyInsideItsWindow(t *testing.T) {
	srv := bybitfake.New()
	t.Cleanup(srv.Close)
	ctx := context.Background()
	// Timeout 400 ms: one create attempt (200 ms), a lookup, and no time for a second.
	a := account(t, srv, bybit.Connector{Timeout: 400 * time.Millisecond, RecvWindow: 600 * time.Millisecond})
	if _, err := a.Markets(ctx, exchange.Spot); err != nil {
		t.Fatal(err)
	}

	held := srv.HoldNext("/v5/order/create")
	req := spotMarket(exchange.SideBuy, "0.01")
	if _, err := a.PlaceOrder(ctx, req); !errors.Is(err, bybit.ErrOrderUnconfirmed) {
		t.Fatalf("place while held: %v", err)
	}
	<-held.Arrived()
	if _, err := a.GetOrder(ctx, exchange.Spot, "BTC/USDT", req.ClientOrderID); !errors.Is(err, exchange.ErrOrderNotFound) {
		t.Fatalf("lookup while held: %v", err)
	}
	held.Release()
	o, err := a.GetOrder(ctx, exchange.Spot, "BTC/USDT", req.ClientOrderID)
	if err != nil || o.Status != exchange.StatusFilled || srv.OrdersCreated(req.ClientOrderID) != 1 {
		t.Fatalf("after the late arrival: %v %+v", err, o)
	}
	if n := srv.Calls("/v5/order/create"); n != 1 {
		t.Fatalf("%d creates, want 1", n)
	}

	held = srv.HoldNext("/v5/order/create")
	req = spotMarket(exchange.SideBuy, "0.01")
	start := time.Now()
	if _, err := a.PlaceOrder(ctx, req); !errors.Is(err, bybit.ErrOrderUnconfirmed) {
		t.Fatalf("place while held: %v", err)
	}
	<-held.Arrived()
	time.Sleep(time.Until(start.Add(700 * time.Millisecond)))
	held.Release()
	if n := srv.OrdersCreated(req.ClientOrderID); n != 0 || srv.Answered(10002) != 1 {
		t.Fatalf("a create older than its recv window: %d orders, %d refusals", n, srv.Answered(10002))
	}
}
