package bybit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/bybit/bybitfake"
)

// Tests of the venue's published v5 rules that the adapter follows: fees from
// cumFeeDetail, spot conditional types, the contract permission and hedge mode. They use
// only the Exchange interface, so that they also run against an adapter without these
// fixes (see modes_test.go for the mode cache and AccountMode).

// TestFeeInTheCoinBybitNames: the fee is cumFeeDetail's, in the coin it names: the base
// coin of a spot buy, the quote coin of a spot sell, the settle coin of linear, and a third
// coin when Bybit charged one.
func TestFeeInTheCoinBybitNames(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	buy, err := a.PlaceOrder(ctx, spotMarket(exchange.SideBuy, "0.01"))
	if err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "spot buy fee", buy.Fee, "0.00001")
	if buy.FeeAsset != "BTC" {
		t.Errorf("spot buy fee asset %q", buy.FeeAsset)
	}
	lin, err := a.PlaceOrder(ctx, linear(exchange.SideBuy, exchange.Market, "0.01"))
	if err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "linear fee", lin.Fee, "0.5")
	if lin.FeeAsset != "USDT" {
		t.Errorf("linear fee asset %q", lin.FeeAsset)
	}

	// The account pays fees in MNT (worth 0.5 USDT): a spot buy of 500 USDT costs 1 MNT
	// and leaves the BTC bought whole.
	srv.SetBalance("MNT", testkit.D("100"))
	srv.SetFeeCoin("MNT", testkit.D("0.5"))
	btcBefore := srv.Balance("BTC")
	req := spotMarket(exchange.SideBuy, "0.01")
	o, err := a.PlaceOrder(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if fo, _ := srv.Order(req.ClientOrderID); fo.FeeCoin != "MNT" {
		t.Fatalf("the fake charged %s", fo.FeeCoin)
	}
	testkit.EqualD(t, "MNT fee", o.Fee, "1")
	if o.FeeAsset != "MNT" {
		t.Errorf("a fee charged in MNT is booked in %q", o.FeeAsset)
	}
	testkit.EqualD(t, "BTC received whole", srv.Balance("BTC").Sub(btcBefore), "0.01")
	testkit.EqualD(t, "MNT left", srv.Balance("MNT"), "99")
	// Read back, the same.
	g, err := a.GetOrder(ctx, exchange.Spot, "BTC/USDT", req.ClientOrderID)
	if err != nil || !g.Fee.Equal(testkit.D("1")) || g.FeeAsset != "MNT" {
		t.Errorf("read back %+v %v", g, err)
	}
	// Linear too.
	lr := linear(exchange.SideSell, exchange.Market, "0.01")
	lo, err := a.PlaceOrder(ctx, lr)
	if err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "linear MNT fee", lo.Fee, "1")
	if lo.FeeAsset != "MNT" {
		t.Errorf("linear fee asset %q", lo.FeeAsset)
	}
}

// TestSpotConditionalTypesReadBack: spot answers no triggerDirection and no
// lastPriceOnCreated; a stop-loss and a take-profit read back (GetOrder, CancelOrder)
// without the request are told apart by basePrice.
func TestSpotConditionalTypesReadBack(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	srv.SetBalance("BTC", testkit.D("1"))
	for _, c := range []struct {
		side    exchange.Side
		typ     exchange.OrderType
		trigger string
	}{
		{exchange.SideSell, exchange.StopLoss, "45000"},
		{exchange.SideSell, exchange.TakeProfit, "55000"},
		{exchange.SideBuy, exchange.StopLoss, "55000"},
		{exchange.SideBuy, exchange.TakeProfit, "45000"},
	} {
		req := spotMarket(c.side, "0.001")
		req.Type, req.StopPrice = c.typ, testkit.D(c.trigger)
		if _, err := a.PlaceOrder(ctx, req); err != nil {
			t.Fatal(err)
		}
		g, err := a.GetOrder(ctx, exchange.Spot, "BTC/USDT", req.ClientOrderID)
		if err != nil || g.Type != c.typ {
			t.Errorf("%s %s: GetOrder %s %v", c.side, c.typ, g.Type, err)
		}
		o, err := a.CancelOrder(ctx, exchange.Spot, "BTC/USDT", req.ClientOrderID)
		if err != nil || o.Type != c.typ || o.Status != exchange.StatusCancelled {
			t.Errorf("%s %s: CancelOrder %s %s %v", c.side, c.typ, o.Type, o.Status, err)
		}
	}
}

// TestKeyWithoutContractTrade: a unified key without ContractTrade carries Derivatives
// [DerivativesTrade] all the same; it is not a futures key, and Bybit refuses its linear
// orders.
func TestKeyWithoutContractTrade(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	srv.SetPermissions(bybitfake.SpotOnly())
	p, err := a.Permissions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p.CanTrade(exchange.Futures) || !p.CanTrade(exchange.Spot) {
		t.Errorf("permissions %v", p.List())
	}
	_, err = a.PlaceOrder(ctx, linear(exchange.SideBuy, exchange.Market, "0.01"))
	code(t, err, errs.ExchangeDisconnected)
	if srv.Answered(10005) == 0 {
		t.Error("the fake did not refuse the key")
	}
	if _, err := a.PlaceOrder(ctx, spotMarket(exchange.SideBuy, "0.001")); err != nil {
		t.Errorf("spot order: %v", err)
	}
}

// TestHedgeModeOrders: in hedge mode every linear order names its side: positionIdx 1 for
// the long (buying to open, selling to exit), 2 for the short; exits are reduce-only.
func TestHedgeModeOrders(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	srv.SetPositionMode(bybitfake.BothSides)
	long := linear(exchange.SideBuy, exchange.Market, "0.01")
	short := linear(exchange.SideSell, exchange.Market, "0.02")
	for _, req := range []exchange.OrderRequest{long, short} {
		if o, err := a.PlaceOrder(ctx, req); err != nil || o.Status != exchange.StatusFilled {
			t.Fatalf("%s: %+v %v", req.Side, o, err)
		}
	}
	if fo, _ := srv.Order(long.ClientOrderID); fo.PositionIdx != 1 || fo.ReduceOnly {
		t.Errorf("long entry sent %+v", fo)
	}
	if fo, _ := srv.Order(short.ClientOrderID); fo.PositionIdx != 2 || fo.ReduceOnly {
		t.Errorf("short entry sent %+v", fo)
	}
	size, _, _ := srv.PositionAt("BTCUSDT", 1)
	testkit.EqualD(t, "long", size, "0.01")
	size, _, _ = srv.PositionAt("BTCUSDT", 2)
	testkit.EqualD(t, "short", size, "-0.02")

	// Exits: selling out of the long is positionIdx 1, reduce-only; a stop-loss on the
	// short buys on positionIdx 2.
	exit := linear(exchange.SideSell, exchange.Market, "0.004")
	exit.ReduceOnly = true
	if _, err := a.PlaceOrder(ctx, exit); err != nil {
		t.Fatal(err)
	}
	if fo, _ := srv.Order(exit.ClientOrderID); fo.PositionIdx != 1 || !fo.ReduceOnly {
		t.Errorf("long exit sent %+v", fo)
	}
	size, _, _ = srv.PositionAt("BTCUSDT", 1)
	testkit.EqualD(t, "long after exit", size, "0.006")
	size, _, _ = srv.PositionAt("BTCUSDT", 2)
	testkit.EqualD(t, "short untouched", size, "-0.02")
	sl := linear(exchange.SideBuy, exchange.StopLoss, "0.02")
	sl.StopPrice = testkit.D("52000")
	if _, err := a.PlaceOrder(ctx, sl); err != nil {
		t.Fatal(err)
	}
	if fo, _ := srv.Order(sl.ClientOrderID); fo.PositionIdx != 2 || !fo.ReduceOnly || !fo.CloseOnTrigger || fo.TriggerDirection != 1 {
		t.Errorf("short stop-loss sent %+v", fo)
	}
	srv.SetPrice("BTCUSDT", testkit.D("52100"))
	size, _, _ = srv.PositionAt("BTCUSDT", 2)
	testkit.EqualD(t, "short stopped out", size, "0")
	size, _, _ = srv.PositionAt("BTCUSDT", 1)
	testkit.EqualD(t, "long kept", size, "0.006")
	// USDC contracts are one-way only, whatever the USDT perpetuals' mode.
	srv.SetBalance("USDC", testkit.D("1000"))
	usdc := linear(exchange.SideBuy, exchange.Market, "0.01")
	usdc.Symbol = "BTC/USDC"
	if _, err := a.PlaceOrder(ctx, usdc); err != nil {
		t.Fatal(err)
	}
	if fo, _ := srv.Order(usdc.ClientOrderID); fo.PositionIdx != 0 {
		t.Errorf("USDC perpetual sent positionIdx %d", fo.PositionIdx)
	}
}

// TestModeChangedIsRefusedNotResent: the mode changes after it was read; Bybit refuses the
// order's positionIdx, and the adapter answers EXCHANGE_ERROR saying the mode changed
// without sending the order again in the other mode. The next order reads the mode anew.
func TestModeChangedIsRefusedNotResent(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	if _, err := a.PlaceOrder(ctx, linear(exchange.SideBuy, exchange.Market, "0.01")); err != nil {
		t.Fatal(err)
	}
	srv.SetPositionMode(bybitfake.BothSides) // by hand on the website, positions open
	creates := srv.Calls("/v5/order/create")
	req := linear(exchange.SideBuy, exchange.Market, "0.01")
	_, err := a.PlaceOrder(ctx, req)
	e := code(t, err, errs.ExchangeError)
	if !strings.Contains(e.Message, "position mode changed") || !strings.Contains(e.Message, "10001") {
		t.Errorf("message %q", e.Message)
	}
	if n := srv.Calls("/v5/order/create") - creates; n != 1 || srv.OrdersCreated(req.ClientOrderID) != 0 {
		t.Errorf("create sent %d times, %d orders", n, srv.OrdersCreated(req.ClientOrderID))
	}
	// The next order is built for hedge mode.
	next := linear(exchange.SideBuy, exchange.Market, "0.01")
	if _, err := a.PlaceOrder(ctx, next); err != nil {
		t.Fatal(err)
	}
	if fo, _ := srv.Order(next.ClientOrderID); fo.PositionIdx != 1 {
		t.Errorf("after the change sent positionIdx %d", fo.PositionIdx)
	}
}
