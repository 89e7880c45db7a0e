package binance_test

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/binance"
	"github.com/sigops/sigops/runtime/exchange/binance/binancefake"
)

// RequestWindow is counted from the start of a PlaceOrder call: every request the call
// sends, resends after lost answers included, carries a timestamp inside the call's budget,
// so none can be executed after start + RequestWindow.
func TestRequestWindowBoundsEverySendOfACall(t *testing.T) {
	f := newFixture(t, func(c *binance.Connector) {
		c.Timeout, c.MaxElapsed, c.Backoff, c.Attempts = 80*time.Millisecond, 700*time.Millisecond, 5*time.Millisecond, 5
		c.RecvWindow, c.ClockMargin = 120*time.Millisecond, 30*time.Millisecond
	})
	if w := f.x.RequestWindow(); w != 850*time.Millisecond {
		t.Fatalf("RequestWindow = %s, want MaxElapsed + RecvWindow + ClockMargin", w)
	}
	if w := exchange.WindowOf(f.x.ForKind(exchange.Futures)); w != 850*time.Millisecond {
		t.Fatalf("the futures view's window = %s", w)
	}
	f.fake.FailNext(100, binancefake.Drop().On(http.MethodPost, "/api/v3/order"))
	req := spotMarket(cid(), exchange.SideBuy, "0.01")
	start := time.Now()
	_, err := f.x.PlaceOrder(ctx, req)
	wantUnknown(t, err)
	var sends []time.Time
	for _, p := range paramsOf(f.fake, http.MethodPost, "/api/v3/order") {
		ms, err := strconv.ParseInt(p["timestamp"], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		sends = append(sends, time.UnixMilli(ms))
	}
	if len(sends) < 2 {
		t.Fatalf("%d order requests; the test needs a resend inside the call", len(sends))
	}
	for _, s := range sends {
		if s.Before(start.Truncate(time.Millisecond)) || s.After(start.Add(700*time.Millisecond)) {
			t.Fatalf("a request stamped %s after the call began, outside its budget", s.Sub(start))
		}
	}
}

// A request held in transit while its sender gives up (or dies) lands when it arrives
// inside its recvWindow, after a lookup found nothing: "not found" proves nothing yet. One
// that arrives after the recvWindow is refused.
func TestHeldOrderRequestLandsLateOnlyInsideItsWindow(t *testing.T) {
	f := newFixture(t, func(c *binance.Connector) {
		c.MaxElapsed, c.RecvWindow, c.ClockMargin = 300*time.Millisecond, time.Second, 100*time.Millisecond
	})
	// Another account stands for another process: it has no memory of the lost request.
	other := f.account(t, binance.Connector{}, creds)

	held := f.fake.HoldNext(http.MethodPost, "/api/v3/order")
	req := spotMarket(cid(), exchange.SideBuy, "0.01")
	_, err := f.x.PlaceOrder(ctx, req)
	wantUnknown(t, err)
	<-held.Arrived()
	if _, err := other.GetOrder(ctx, exchange.Spot, "BTC/USDT", req.ClientOrderID); !errors.Is(err, exchange.ErrOrderNotFound) {
		t.Fatalf("lookup while held: %v", err)
	}
	held.Release()
	o, err := other.GetOrder(ctx, exchange.Spot, "BTC/USDT", req.ClientOrderID)
	if err != nil || o.Status != exchange.StatusFilled || f.fake.Placed(req.ClientOrderID) != 1 {
		t.Fatalf("after the late arrival: %v %+v, placed %d", err, o, f.fake.Placed(req.ClientOrderID))
	}

	held = f.fake.HoldNext(http.MethodPost, "/api/v3/order")
	req = spotMarket(cid(), exchange.SideBuy, "0.01")
	start := time.Now()
	_, err = f.x.PlaceOrder(ctx, req)
	wantUnknown(t, err)
	<-held.Arrived()
	time.Sleep(time.Until(start.Add(1100 * time.Millisecond)))
	held.Release()
	if n := f.fake.Placed(req.ClientOrderID); n != 0 {
		t.Fatalf("a request older than its recvWindow was executed (%d orders)", n)
	}

	// Dropped: lost for good.
	held = f.fake.HoldNext(http.MethodPost, "/api/v3/order")
	req = spotMarket(cid(), exchange.SideBuy, "0.01")
	_, err = f.x.PlaceOrder(ctx, req)
	wantUnknown(t, err)
	<-held.Arrived()
	held.Drop()
	if n := f.fake.Placed(req.ClientOrderID); n != 0 {
		t.Fatalf("a dropped request was executed (%d orders)", n)
	}
}
