package binance_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/binance"
)

const (
	pathOrder = "/fapi/v1/order"
	pathAlgo  = "/fapi/v1/algoOrder"
	pathMode  = "/fapi/v1/positionSide/dual"
)

func futStop(id string, typ exchange.OrderType, side exchange.Side, amount, stop, price string) exchange.OrderRequest {
	r := exchange.OrderRequest{ClientOrderID: id, Symbol: "BTC/USDT", Kind: exchange.Futures, Side: side, Type: typ,
		StopPrice: testkit.D(stop), Amount: decimal.Zero, Price: decimal.Zero}
	if amount != "" {
		r.Amount = testkit.D(amount)
	}
	if price != "" {
		r.Price = testkit.D(price)
	}
	return r
}

// last is the params of the last request to method path.
func last(t *testing.T, f *fixture, method, path string) map[string]string {
	t.Helper()
	p := paramsOf(f.fake, method, path)
	if len(p) == 0 {
		t.Fatalf("no %s %s", method, path)
	}
	return p[len(p)-1]
}

// In hedge mode every futures order names its side (positionSide LONG or SHORT, from
// OrderRequest.HedgeLong) and never sends reduceOnly; the fake keeps the long and the short
// position apart, as Binance does.
func TestHedgeModeOrders(t *testing.T) {
	f := newFixture(t)
	f.fake.SetHedgeMode(true)

	step := func(req exchange.OrderRequest, wantSide string) exchange.Order {
		t.Helper()
		o, err := f.x.PlaceOrder(ctx, req)
		if err != nil {
			t.Fatalf("%s %s %s: %v", req.Side, req.Type, req.ClientOrderID, err)
		}
		path := pathOrder
		if req.Type == exchange.StopLoss || req.Type == exchange.TakeProfit {
			path = pathAlgo
		}
		p := last(t, f, http.MethodPost, path)
		if p["positionSide"] != wantSide {
			t.Errorf("%s %s: positionSide %q, want %q (%v)", req.Side, req.Type, p["positionSide"], wantSide, p)
		}
		if _, sent := p["reduceOnly"]; sent {
			t.Errorf("%s %s: reduceOnly sent in hedge mode: %v", req.Side, req.Type, p)
		}
		return o
	}
	// Buy to open: long. Sell to open: short, beside the long.
	step(futMarket(cid(), exchange.SideBuy, "0.01", 10), "LONG")
	step(futMarket(cid(), exchange.SideSell, "0.02", 10), "SHORT")
	long, _ := f.fake.SidePosition("BTCUSDT", "LONG")
	short, _ := f.fake.SidePosition("BTCUSDT", "SHORT")
	testkit.EqualD(t, "long", long, "0.01")
	testkit.EqualD(t, "short", short, "-0.02")

	// Exits: a reduce-only sell takes from the long, a reduce-only buy from the short.
	exit := futMarket(cid(), exchange.SideSell, "0.004", 10)
	exit.ReduceOnly = true
	step(exit, "LONG")
	exit = futMarket(cid(), exchange.SideBuy, "0.005", 10)
	exit.ReduceOnly = true
	step(exit, "SHORT")
	long, _ = f.fake.SidePosition("BTCUSDT", "LONG")
	short, _ = f.fake.SidePosition("BTCUSDT", "SHORT")
	testkit.EqualD(t, "long after exit", long, "0.006")
	testkit.EqualD(t, "short after exit", short, "-0.015")

	// A limit order on the long side, resting.
	lim := futMarket(cid(), exchange.SideBuy, "0.003", 10)
	lim.Type, lim.Price = exchange.Limit, testkit.D("40000")
	if o := step(lim, "LONG"); o.Status != exchange.StatusOpen {
		t.Fatalf("resting limit %+v", o)
	}

	// Stops exit: the long's stop-loss sells on LONG with an amount (no reduceOnly), the
	// short's closes the whole short (closePosition with positionSide SHORT).
	sl := cid()
	step(futStop(sl, exchange.StopLoss, exchange.SideSell, "0.006", "49000", ""), "LONG")
	if p := last(t, f, http.MethodPost, pathAlgo); p["quantity"] != "0.006" || p["type"] != "STOP_MARKET" {
		t.Fatalf("long stop %v", p)
	}
	all := cid()
	step(futStop(all, exchange.StopLoss, exchange.SideBuy, "", "51000", ""), "SHORT")
	if p := last(t, f, http.MethodPost, pathAlgo); p["closePosition"] != "true" || p["quantity"] != "" {
		t.Fatalf("short close-all %v", p)
	}
	// A limit take-profit with its amount.
	step(futStop(cid(), exchange.TakeProfit, exchange.SideSell, "0.003", "60000", "59900"), "LONG")
	if p := last(t, f, http.MethodPost, pathAlgo); p["type"] != "TAKE_PROFIT" || p["price"] != "59900" {
		t.Fatalf("limit take-profit %v", p)
	}

	// The price rises through 51000: the short's stop closes the whole short, the long stays.
	f.fake.SetPrice("BTCUSDT", "51100")
	o, err := f.x.GetOrder(ctx, exchange.Futures, "BTC/USDT", all)
	if err != nil || o.Status != exchange.StatusFilled {
		t.Fatalf("close-all: %v %+v", err, o)
	}
	testkit.EqualD(t, "short closed", o.FilledAmount, "0.015")
	short, _ = f.fake.SidePosition("BTCUSDT", "SHORT")
	long, _ = f.fake.SidePosition("BTCUSDT", "LONG")
	testkit.EqualD(t, "short flat", short, "0")
	testkit.EqualD(t, "long kept", long, "0.006")

	// One mode read served every order of the call series.
	if n := f.fake.Count(http.MethodGet, pathMode); n != 1 {
		t.Fatalf("%d position mode reads, want 1", n)
	}
	// Spot orders never read it and never name a side.
	if _, err := f.x.PlaceOrder(ctx, spotMarket(cid(), exchange.SideBuy, "0.001")); err != nil {
		t.Fatal(err)
	}
	if p := last(t, f, http.MethodPost, "/api/v3/order"); p["positionSide"] != "" {
		t.Fatalf("spot order %v", p)
	}
}

// In one-way mode the requests stay what they were: no positionSide, reduceOnly on exits.
func TestOneWayModeSendsNoPositionSide(t *testing.T) {
	f := newFixture(t)
	if _, err := f.x.PlaceOrder(ctx, futMarket(cid(), exchange.SideBuy, "0.01", 10)); err != nil {
		t.Fatal(err)
	}
	exit := futMarket(cid(), exchange.SideSell, "0.01", 10)
	exit.ReduceOnly = true
	if _, err := f.x.PlaceOrder(ctx, exit); err != nil {
		t.Fatal(err)
	}
	for _, p := range paramsOf(f.fake, http.MethodPost, pathOrder) {
		if _, sent := p["positionSide"]; sent {
			t.Fatalf("positionSide sent in one-way mode: %v", p)
		}
	}
	if p := last(t, f, http.MethodPost, pathOrder); p["reduceOnly"] != "true" {
		t.Fatalf("one-way exit %v", p)
	}
}

// The mode is read lazily, before the first futures order, and again once ModeTTL has passed.
func TestModeReadLazilyAndRefreshed(t *testing.T) {
	f := newFixture(t)
	x := f.account(t, binance.Connector{ModeTTL: 300 * time.Millisecond}, creds)
	if _, err := x.PlaceOrder(ctx, spotMarket(cid(), exchange.SideBuy, "0.001")); err != nil {
		t.Fatal(err)
	}
	if n := f.fake.Count(http.MethodGet, pathMode); n != 0 {
		t.Fatalf("a spot order read the futures mode (%d)", n)
	}
	for i := 0; i < 2; i++ {
		if _, err := x.PlaceOrder(ctx, futMarket(cid(), exchange.SideBuy, "0.002", 10)); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.fake.Count(http.MethodGet, pathMode); n != 1 {
		t.Fatalf("%d mode reads for two orders within the TTL, want 1", n)
	}
	// Changed on Binance's site: the account keeps the mode it read until the TTL passes,
	// then reads it again and follows it.
	f.fake.SetHedgeMode(true)
	time.Sleep(350 * time.Millisecond)
	if _, err := x.PlaceOrder(ctx, futMarket(cid(), exchange.SideBuy, "0.002", 10)); err != nil {
		t.Fatal(err)
	}
	if n := f.fake.Count(http.MethodGet, pathMode); n != 2 {
		t.Fatalf("%d mode reads after the TTL, want 2", n)
	}
	if p := last(t, f, http.MethodPost, pathOrder); p["positionSide"] != "LONG" {
		t.Fatalf("order after the re-read %v", p)
	}
	// The default TTL is a minute.
	if binance.DefaultModeTTL != time.Minute {
		t.Fatalf("DefaultModeTTL %s", binance.DefaultModeTTL)
	}
}

// When the mode changes under a cached account, Binance answers -4061: the call returns an
// EXCHANGE_ERROR saying the mode changed (never re-sent in the other mode within the call),
// the mode read is dropped, and the next order reads it again and goes through.
func TestModeChangeIsRefusedThenReadAgain(t *testing.T) {
	for _, c := range []struct {
		name           string
		from, to       bool // hedge before and after
		wantSideBefore string
		wantSideAfter  string
	}{
		{"one-way to hedge", false, true, "", "SHORT"},
		{"hedge to one-way", true, false, "SHORT", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t)
			f.fake.SetHedgeMode(c.from)
			if _, err := f.x.PlaceOrder(ctx, futMarket(cid(), exchange.SideSell, "0.002", 10)); err != nil {
				t.Fatal(err)
			}
			if p := last(t, f, http.MethodPost, pathOrder); p["positionSide"] != c.wantSideBefore {
				t.Fatalf("first order %v", p)
			}
			f.fake.SetHedgeMode(c.to)
			sends := f.fake.Count(http.MethodPost, pathOrder)
			id := cid()
			_, err := f.x.PlaceOrder(ctx, futMarket(id, exchange.SideSell, "0.002", 10))
			e := wantCode(t, err, errs.ExchangeError)
			if !strings.Contains(e.Message, "position mode changed") || e.Details["binanceCode"] != int64(-4061) {
				t.Fatalf("refusal %q %v", e.Message, e.Details)
			}
			if n := f.fake.Count(http.MethodPost, pathOrder) - sends; n != 1 || f.fake.Placed(id) != 0 {
				t.Fatalf("%d order requests in the refused call (want 1), placed %d", n, f.fake.Placed(id))
			}
			if n := f.fake.Count(http.MethodGet, pathMode); n != 1 {
				t.Fatalf("the refused call read the mode again (%d reads)", n)
			}
			// The next call reads the mode and follows it.
			if _, err := f.x.PlaceOrder(ctx, futMarket(id, exchange.SideSell, "0.002", 10)); err != nil {
				t.Fatal(err)
			}
			if n := f.fake.Count(http.MethodGet, pathMode); n != 2 {
				t.Fatalf("%d mode reads, want 2", n)
			}
			if p := last(t, f, http.MethodPost, pathOrder); p["positionSide"] != c.wantSideAfter || f.fake.Placed(id) != 1 {
				t.Fatalf("order after the re-read %v placed %d", p, f.fake.Placed(id))
			}
		})
	}
	// A conditional order is refused the same way.
	f := newFixture(t)
	if _, err := f.x.PlaceOrder(ctx, futMarket(cid(), exchange.SideBuy, "0.01", 10)); err != nil {
		t.Fatal(err)
	}
	f.fake.SetHedgeMode(true)
	_, err := f.x.PlaceOrder(ctx, futStop(cid(), exchange.StopLoss, exchange.SideSell, "0.01", "49000", ""))
	if e := wantCode(t, err, errs.ExchangeError); !strings.Contains(e.Message, "position mode changed") {
		t.Fatalf("algo refusal %q", e.Message)
	}
}

// AccountMode reads the mode and counts the open positions (each side of a hedge account
// once), through the exchange.ModeReader interface; the mode it reads is kept for orders.
func TestAccountMode(t *testing.T) {
	f := newFixture(t)
	live, err := binance.Connector{Logger: logger}.Connect(creds, exchange.Endpoints{Spot: f.fake.URL(), Futures: f.fake.URL()})
	if err != nil {
		t.Fatal(err)
	}
	mr, ok := live.(exchange.ModeReader)
	if !ok {
		t.Fatal("the Binance account is not an exchange.ModeReader")
	}
	m, err := mr.AccountMode(ctx)
	if err != nil || m != (exchange.AccountMode{Mode: exchange.OneWay}) {
		t.Fatalf("fresh account: %+v %v", m, err)
	}
	if _, err := f.x.PlaceOrder(ctx, futMarket(cid(), exchange.SideBuy, "0.01", 10)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.x.PlaceOrder(ctx, exchange.OrderRequest{ClientOrderID: cid(), Symbol: "ETH/USDT", Kind: exchange.Futures,
		Side: exchange.SideSell, Type: exchange.Market, Amount: testkit.D("0.1"), Leverage: 10}); err != nil {
		t.Fatal(err)
	}
	if m, err = mr.AccountMode(ctx); err != nil || m != (exchange.AccountMode{Mode: exchange.OneWay, OpenPositions: 2}) {
		t.Fatalf("two positions: %+v %v", m, err)
	}
	// Switching is refused while positions are open (-4068), as on Binance.
	req, _ := http.NewRequest(http.MethodPost, f.fake.URL()+pathMode+"?"+signedQuery("dualSidePosition=true"), nil)
	req.Header.Set("X-MBX-APIKEY", creds.APIKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if body := readAll(resp); resp.StatusCode != 400 || !strings.Contains(body, "-4068") {
		t.Fatalf("switch with positions: %d %s", resp.StatusCode, body)
	}

	// A hedge account holding a long and a short on one symbol has two positions.
	g := newFixture(t)
	g.fake.SetHedgeMode(true)
	for _, side := range []exchange.Side{exchange.SideBuy, exchange.SideSell} {
		if _, err := g.x.PlaceOrder(ctx, futMarket(cid(), side, "0.01", 10)); err != nil {
			t.Fatal(err)
		}
	}
	m, err = g.x.AccountMode(ctx)
	if err != nil || m != (exchange.AccountMode{Mode: exchange.Hedge, OpenPositions: 2}) {
		t.Fatalf("hedge: %+v %v", m, err)
	}
	if n := g.fake.Count(http.MethodGet, "/fapi/v3/positionRisk"); n != 1 {
		t.Fatalf("%d position reads", n)
	}
	// The mode AccountMode read serves the next order: no further read.
	reads := g.fake.Count(http.MethodGet, pathMode)
	if _, err := g.x.PlaceOrder(ctx, futMarket(cid(), exchange.SideBuy, "0.01", 10)); err != nil {
		t.Fatal(err)
	}
	if n := g.fake.Count(http.MethodGet, pathMode); n != reads {
		t.Fatalf("the order read the mode again (%d reads, was %d)", n, reads)
	}
}

// A futures stop with a limit price and no amount would be a limit close-all, which Binance
// refuses (closePosition only with STOP_MARKET / TAKE_PROFIT_MARKET): refused before any call.
func TestFuturesLimitStopWithoutAmountRefusedBeforeAnyCall(t *testing.T) {
	f := newFixture(t)
	for _, typ := range []exchange.OrderType{exchange.StopLoss, exchange.TakeProfit} {
		_, err := f.x.PlaceOrder(ctx, futStop(cid(), typ, exchange.SideSell, "", "49000", "48900"))
		e := wantCode(t, err, errs.InvalidAmount)
		if !strings.Contains(e.Message, "needs an amount") {
			t.Fatalf("%s: message %q", typ, e.Message)
		}
	}
	if reqs := f.fake.Requests(); len(reqs) != 0 {
		t.Fatalf("%d requests sent, first %s %s", len(reqs), reqs[0].Method, reqs[0].Path)
	}
}
