package okx_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/okx"
	"github.com/sigops/sigops/runtime/exchange/okx/okxfake"
)

func TestAccountMode(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	m, err := a.AccountMode(ctx)
	if err != nil || m.Mode != exchange.OneWay || m.OpenPositions != 0 {
		t.Fatalf("net, flat: %+v %v", m, err)
	}
	if _, err := a.PlaceOrder(ctx, swap(exchange.SideBuy, exchange.Market, "0.01")); err != nil {
		t.Fatal(err)
	}
	if m, err = a.AccountMode(ctx); err != nil || m.OpenPositions != 1 {
		t.Fatalf("net, long: %+v %v", m, err)
	}
	srv.SetPositionMode(okxfake.LongShortMode)
	if m, err = a.AccountMode(ctx); err != nil || m.Mode != exchange.Hedge {
		t.Fatalf("long/short: %+v %v", m, err)
	}
	var _ exchange.ModeReader = a
}

// Long/short mode: every swap order names its position side (posSide), exits included, and
// none is reduceOnly.
func TestLongShortMode(t *testing.T) {
	srv, a := setup(t)
	srv.SetPositionMode(okxfake.LongShortMode)
	ctx := context.Background()
	long := swap(exchange.SideBuy, exchange.Market, "0.02")
	if _, err := a.PlaceOrder(ctx, long); err != nil {
		t.Fatal(err)
	}
	short := swap(exchange.SideSell, exchange.Market, "0.01")
	if _, err := a.PlaceOrder(ctx, short); err != nil {
		t.Fatal(err)
	}
	exitLong := swap(exchange.SideSell, exchange.Market, "0.01")
	exitLong.ReduceOnly = true
	o, err := a.PlaceOrder(ctx, exitLong)
	if err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "exit filled", o.FilledAmount, "0.01")
	for _, c := range []struct {
		req     exchange.OrderRequest
		posSide string
	}{{long, "long"}, {short, "short"}, {exitLong, "long"}} {
		fo, _ := srv.Order(okx.ClOrdID(c.req.ClientOrderID))
		if fo.PosSide != c.posSide || fo.ReduceOnly || fo.TdMode != "cross" {
			t.Errorf("%s %v reduceOnly %v: sent %+v", c.req.Side, c.req.ReduceOnly, c.req.ReduceOnly, fo)
		}
	}
	l, _, _ := srv.Position("BTC-USDT-SWAP", "long")
	s, _, _ := srv.Position("BTC-USDT-SWAP", "short")
	testkit.EqualD(t, "long contracts", l, "1")
	testkit.EqualD(t, "short contracts", s, "1")
	m, err := a.AccountMode(ctx)
	if err != nil || m.Mode != exchange.Hedge || m.OpenPositions != 2 {
		t.Errorf("mode %+v %v", m, err)
	}
	// An exit of a side with no position is refused (51169).
	exitShort := swap(exchange.SideBuy, exchange.Market, "0.02")
	exitShort.ReduceOnly = true
	if _, err := a.PlaceOrder(ctx, exitShort); err != nil {
		t.Fatal(err) // 0.02 closes the 1-contract short (capped)
	}
	code(t, errOf(a.PlaceOrder(ctx, func() exchange.OrderRequest { r := exitShort; r.ClientOrderID = cid(); return r }())), errs.InvalidAmount)
}

// The mode is read before the first swap order and kept for ModeTTL; spot orders never
// read it.
func TestModeCachedAndRefreshed(t *testing.T) {
	srv := okxfake.New()
	defer srv.Close()
	ctx := context.Background()
	a := account(t, srv, okx.Connector{ModeTTL: 300 * time.Millisecond})
	if _, err := a.PlaceOrder(ctx, spotMarket(exchange.SideBuy, "0.01")); err != nil {
		t.Fatal(err)
	}
	if n := srv.Calls("/api/v5/account/config"); n != 0 {
		t.Errorf("a spot order read the mode (%d)", n)
	}
	for i := 0; i < 2; i++ {
		if _, err := a.PlaceOrder(ctx, swap(exchange.SideBuy, exchange.Market, "0.01")); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.Calls("/api/v5/account/config"); n != 1 {
		t.Errorf("two swap orders read the mode %d times", n)
	}
	time.Sleep(350 * time.Millisecond)
	srv.SetPositionMode(okxfake.LongShortMode)
	req := swap(exchange.SideBuy, exchange.Market, "0.01")
	if _, err := a.PlaceOrder(ctx, req); err != nil {
		t.Fatal(err)
	}
	if fo, _ := srv.Order(okx.ClOrdID(req.ClientOrderID)); srv.Calls("/api/v5/account/config") != 2 || fo.PosSide != "long" {
		t.Errorf("after the TTL: %d reads, sent %+v", srv.Calls("/api/v5/account/config"), fo)
	}
}

// A mode changed behind the account's back: the order sent in the old mode is refused
// (51000 "Parameter posSide error"), reported as EXCHANGE_ERROR saying so, not sent again
// in the other mode; the next order reads the mode again.
func TestModeChangedRefused(t *testing.T) {
	for _, from := range []string{okxfake.NetMode, okxfake.LongShortMode} {
		srv := okxfake.New()
		ctx := context.Background()
		srv.SetPositionMode(from)
		a := account(t, srv, okx.Connector{})
		if _, err := a.PlaceOrder(ctx, swap(exchange.SideBuy, exchange.Market, "0.01")); err != nil {
			t.Fatal(err)
		}
		to := okxfake.LongShortMode
		if from == to {
			to = okxfake.NetMode
		}
		srv.SetPositionMode(to)
		places := srv.Calls("POST /api/v5/trade/order")
		req := swap(exchange.SideBuy, exchange.Market, "0.01")
		e := code(t, errOf(a.PlaceOrder(ctx, req)), errs.ExchangeError)
		if !strings.Contains(e.Message, "position mode changed") || !strings.Contains(e.Message, "51000") {
			t.Errorf("%s → %s: %q", from, to, e.Message)
		}
		if n := srv.Calls("POST /api/v5/trade/order") - places; n != 1 || srv.OrdersCreated(okx.ClOrdID(req.ClientOrderID)) != 0 {
			t.Errorf("%s → %s: %d placements", from, to, n)
		}
		reads := srv.Calls("/api/v5/account/config")
		o, err := a.PlaceOrder(ctx, req)
		if err != nil || o.Status != exchange.StatusFilled || srv.Calls("/api/v5/account/config") != reads+1 {
			t.Errorf("%s → %s: next order %+v %v", from, to, o, err)
		}
		srv.Close()
	}
}
