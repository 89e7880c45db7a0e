package okx_test

import (
	"context"
	"errors"
	"net/http"
	"testing"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/okx"
	"github.com/sigops/sigops/runtime/exchange/okx/okxfake"
)

func TestSwapStopLossTakeProfitNetMode(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	if _, err := a.PlaceOrder(ctx, swap(exchange.SideBuy, exchange.Market, "0.01")); err != nil {
		t.Fatal(err)
	}
	sl := swap(exchange.SideSell, exchange.StopLoss, "0.01")
	sl.StopPrice = testkit.D("48000")
	o, err := a.PlaceOrder(ctx, sl)
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != exchange.StatusOpen || o.Type != exchange.StopLoss || o.ID[:5] != "algo-" || o.ClientOrderID != sl.ClientOrderID {
		t.Errorf("stop-loss %+v", o)
	}
	testkit.EqualD(t, "stop amount", o.Amount, "0.01")
	fa, _ := srv.Algo(okx.ClOrdID(sl.ClientOrderID))
	if fa.SlTriggerPx != "48000" || fa.SlOrdPx != "-1" || fa.SlTriggerPxType != "last" || !fa.ReduceOnly ||
		fa.TdMode != "cross" || fa.PosSide != "net" || fa.Sz.String() != "1" || fa.CloseFraction != "" || fa.State != "live" {
		t.Errorf("stop-loss sent %+v", fa)
	}
	tp := swap(exchange.SideSell, exchange.TakeProfit, "0.01")
	tp.StopPrice = testkit.D("52000")
	if _, err := a.PlaceOrder(ctx, tp); err != nil {
		t.Fatal(err)
	}
	if fa, _ := srv.Algo(okx.ClOrdID(tp.ClientOrderID)); fa.TpTriggerPx != "52000" || fa.TpOrdPx != "-1" || fa.SlTriggerPx != "" {
		t.Errorf("take-profit sent %+v", fa)
	}
	// Read back without the request, the types are recognised.
	if o, _ := a.GetOrder(ctx, exchange.Futures, "BTC/USDT", sl.ClientOrderID); o.Type != exchange.StopLoss || o.Status != exchange.StatusOpen {
		t.Errorf("read stop-loss %+v", o)
	}
	if o, _ := a.GetOrder(ctx, exchange.Futures, "BTC/USDT", tp.ClientOrderID); o.Type != exchange.TakeProfit {
		t.Errorf("read take-profit %+v", o)
	}
	// Placing the same stop again returns it.
	if again, err := a.PlaceOrder(ctx, sl); err != nil || again.ID != o.ID || srv.OrdersCreated(okx.ClOrdID(sl.ClientOrderID)) != 1 {
		t.Errorf("again %+v %v", again, err)
	}
	// The price falls through the stop: its order fills and closes the position.
	srv.SetPrice("BTC-USDT", testkit.D("47900"))
	o, err = a.GetOrder(ctx, exchange.Futures, "BTC/USDT", sl.ClientOrderID)
	if err != nil || o.Status != exchange.StatusFilled {
		t.Fatalf("triggered stop %+v %v", o, err)
	}
	testkit.EqualD(t, "stop avg", o.AvgPrice, "47900")
	testkit.EqualD(t, "stop filled", o.FilledAmount, "0.01")
	testkit.EqualD(t, "stop fee", o.Fee, "0.479")
	pos, _, _ := srv.Position("BTC-USDT-SWAP", "net")
	testkit.EqualD(t, "closed", pos, "0")
	// The take-profit is left over: cancel it (cancel-algos).
	o, err = a.CancelOrder(ctx, exchange.Futures, "BTC/USDT", tp.ClientOrderID)
	if err != nil || o.Status != exchange.StatusCancelled || srv.Calls("/api/v5/trade/cancel-algos") != 1 {
		t.Errorf("cancel take-profit %+v %v", o, err)
	}
	// A finished stop cannot be cancelled.
	code(t, errOf(a.CancelOrder(ctx, exchange.Futures, "BTC/USDT", sl.ClientOrderID)), errs.ExchangeError)
	// A trigger on the wrong side of the price is INVALID_PRICE (51280).
	bad := swap(exchange.SideSell, exchange.StopLoss, "0.01")
	bad.StopPrice = testkit.D("49000")
	code(t, errOf(a.PlaceOrder(ctx, bad)), errs.InvalidPrice)
	if srv.Answered(51280) != 1 {
		t.Errorf("51280 answered %d", srv.Answered(51280))
	}
}

// A futures stop without an amount closes the whole position: closeFraction=1, no sz,
// reduceOnly in net mode; its fill is the position's size. OKX keeps one such order per
// position (51088). A limit one is refused before anything is sent.
func TestWholePositionStop(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	if _, err := a.PlaceOrder(ctx, swap(exchange.SideBuy, exchange.Market, "0.03")); err != nil {
		t.Fatal(err)
	}
	sl := swap(exchange.SideSell, exchange.StopLoss, "0")
	sl.StopPrice = testkit.D("48000")
	o, err := a.PlaceOrder(ctx, sl)
	if err != nil {
		t.Fatal(err)
	}
	fa, _ := srv.Algo(okx.ClOrdID(sl.ClientOrderID))
	if fa.CloseFraction != "1" || !fa.Sz.IsZero() || !fa.ReduceOnly || fa.SlOrdPx != "-1" || o.Status != exchange.StatusOpen {
		t.Errorf("sent %+v, got %+v", fa, o)
	}
	tp := swap(exchange.SideSell, exchange.TakeProfit, "0")
	tp.StopPrice = testkit.D("55000")
	code(t, errOf(a.PlaceOrder(ctx, tp)), errs.ExchangeError) // 51088
	limit := swap(exchange.SideSell, exchange.TakeProfit, "0")
	limit.StopPrice, limit.Price = testkit.D("55000"), testkit.D("55000")
	calls := srv.Calls("POST /api/v5/trade/order-algo")
	code(t, errOf(a.PlaceOrder(ctx, limit)), errs.InvalidAmount)
	if srv.Calls("POST /api/v5/trade/order-algo") != calls {
		t.Error("a limit whole-position stop was sent")
	}
	srv.SetPrice("BTC-USDT", testkit.D("47000"))
	o, err = a.GetOrder(ctx, exchange.Futures, "BTC/USDT", sl.ClientOrderID)
	if err != nil || o.Status != exchange.StatusFilled {
		t.Fatalf("triggered %+v %v", o, err)
	}
	testkit.EqualD(t, "closed the whole position", o.FilledAmount, "0.03")
	testkit.EqualD(t, "amount read back", o.Amount, "0.03")
}

func TestLongShortStop(t *testing.T) {
	srv, a := setup(t)
	srv.SetPositionMode(okxfake.LongShortMode)
	ctx := context.Background()
	if _, err := a.PlaceOrder(ctx, swap(exchange.SideSell, exchange.Market, "0.01")); err != nil {
		t.Fatal(err)
	}
	sl := swap(exchange.SideBuy, exchange.StopLoss, "0") // exits the short
	sl.StopPrice = testkit.D("51000")
	if _, err := a.PlaceOrder(ctx, sl); err != nil {
		t.Fatal(err)
	}
	fa, _ := srv.Algo(okx.ClOrdID(sl.ClientOrderID))
	if fa.PosSide != "short" || fa.ReduceOnly || fa.CloseFraction != "1" {
		t.Errorf("sent %+v", fa)
	}
	srv.SetPrice("BTC-USDT", testkit.D("51500"))
	o, err := a.GetOrder(ctx, exchange.Futures, "BTC/USDT", sl.ClientOrderID)
	if err != nil || o.Status != exchange.StatusFilled {
		t.Fatalf("triggered %+v %v", o, err)
	}
	s, _, _ := srv.Position("BTC-USDT-SWAP", "short")
	testkit.EqualD(t, "short closed", s, "0")
}

func TestSpotStopLoss(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	if _, err := a.PlaceOrder(ctx, spotMarket(exchange.SideBuy, "0.01")); err != nil {
		t.Fatal(err)
	}
	sl := spotMarket(exchange.SideSell, "0.005")
	sl.Type, sl.StopPrice = exchange.StopLoss, testkit.D("45000")
	o, err := a.PlaceOrder(ctx, sl)
	if err != nil {
		t.Fatal(err)
	}
	fa, _ := srv.Algo(okx.ClOrdID(sl.ClientOrderID))
	if fa.TdMode != "cash" || fa.TgtCcy != "base_ccy" || fa.ReduceOnly || fa.PosSide != "" || o.Status != exchange.StatusOpen {
		t.Errorf("sent %+v got %+v", fa, o)
	}
	o, err = a.CancelOrder(ctx, exchange.Spot, "BTC/USDT", sl.ClientOrderID)
	if err != nil || o.Status != exchange.StatusCancelled {
		t.Errorf("cancel %+v %v", o, err)
	}
	tp := spotMarket(exchange.SideSell, "0.005")
	tp.Type, tp.StopPrice, tp.Price = exchange.TakeProfit, testkit.D("55000"), testkit.D("54990")
	if _, err := a.PlaceOrder(ctx, tp); err != nil {
		t.Fatal(err)
	}
	if fa, _ := srv.Algo(okx.ClOrdID(tp.ClientOrderID)); fa.TpOrdPx != "54990" {
		t.Errorf("limit take-profit sent %+v", fa)
	}
	srv.SetPrice("BTC-USDT", testkit.D("55000"))
	o, err = a.GetOrder(ctx, exchange.Spot, "BTC/USDT", tp.ClientOrderID)
	if err != nil || o.Status != exchange.StatusFilled || o.Type != exchange.TakeProfit {
		t.Errorf("take-profit %+v %v", o, err)
	}
	testkit.EqualD(t, "proceeds fee", o.Fee, "0.275") // its limit order filled at the last price
}

// Exactly once for algo orders: a duplicate algoClOrdId answer returns the order, a lost
// answer is found, no answer at all is ErrOrderUnconfirmed and never re-sent.
func TestAlgoExactlyOnce(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	if _, err := a.PlaceOrder(ctx, swap(exchange.SideBuy, exchange.Market, "0.02")); err != nil {
		t.Fatal(err)
	}
	sl := swap(exchange.SideSell, exchange.StopLoss, "0.01")
	sl.StopPrice = testkit.D("48000")
	first, err := a.PlaceOrder(ctx, sl)
	if err != nil {
		t.Fatal(err)
	}
	srv.FailNext(okxfake.Fault{Path: "/api/v5/trade/order-algo", Method: http.MethodGet, Code: 51603, Msg: "Order does not exist."})
	o, err := a.PlaceOrder(ctx, sl)
	if err != nil || o.ID != first.ID || srv.Answered(51065) != 1 {
		t.Errorf("duplicate: %+v %v (51065 answered %d)", o, err, srv.Answered(51065))
	}
	lost := swap(exchange.SideSell, exchange.TakeProfit, "0.01")
	lost.StopPrice = testkit.D("52000")
	srv.FailNext(okxfake.Fault{Path: "/api/v5/trade/order-algo", Method: http.MethodPost, DropAfterApply: true})
	if o, err := a.PlaceOrder(ctx, lost); err != nil || o.Status != exchange.StatusOpen {
		t.Errorf("lost answer: %+v %v", o, err)
	}
	held := srv.HoldNext(http.MethodPost, "/api/v5/trade/order-algo")
	tp := swap(exchange.SideSell, exchange.TakeProfit, "0.01")
	tp.StopPrice = testkit.D("53000")
	posts := srv.Calls("POST /api/v5/trade/order-algo")
	_, err = a.PlaceOrder(ctx, tp)
	if !errors.Is(err, okx.ErrOrderUnconfirmed) || srv.Calls("POST /api/v5/trade/order-algo") != posts+1 {
		t.Errorf("held: %v", err)
	}
	<-held.Arrived()
	held.Release()
	if o, err := a.GetOrder(ctx, exchange.Futures, "BTC/USDT", tp.ClientOrderID); err != nil || o.Type != exchange.TakeProfit {
		t.Errorf("landed late: %+v %v", o, err)
	}
}
