package binance_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/binance"
	"github.com/sigops/sigops/runtime/exchange/binance/binancefake"
	"github.com/sigops/sigops/runtime/order"
)

var ctx = context.Background()

func TestConnector(t *testing.T) {
	var c exchange.Connector = binance.Connector{}
	if c.Name() != "binance" {
		t.Fatalf("name %q", c.Name())
	}
	// Connect makes no network call: an unroutable endpoint is fine until used.
	live, err := c.Connect(creds, exchange.Endpoints{Spot: "http://192.0.2.1:9", Futures: "http://192.0.2.1:9"})
	if err != nil || live == nil {
		t.Fatalf("connect: %v", err)
	}
	if _, err := c.Connect(exchange.Credentials{APIKey: "k"}, exchange.Endpoints{}); !errors.Is(err, exchange.ErrInvalidCredentials) {
		t.Fatalf("no secret: %v", err)
	}
	if _, err := c.Connect(creds, exchange.Endpoints{Spot: "ftp://x"}); err == nil {
		t.Fatal("ftp endpoint accepted")
	}
	// testnet: Binance Demo Trading (demo-api / demo-fapi), not the older testnets.
	x, _ := binance.Connector{}.Open(creds, exchange.Endpoints{Testnet: true})
	if s := x.String(); s != "binance account (https://demo-api.binance.com, https://demo-fapi.binance.com)" {
		t.Fatalf("testnet defaults: %s", s)
	}
	// An endpoint given explicitly wins over the demo default, for each API alone.
	x, _ = binance.Connector{}.Open(creds, exchange.Endpoints{Testnet: true, Futures: "https://testnet.binancefuture.com/"})
	if s := x.String(); s != "binance account (https://demo-api.binance.com, https://testnet.binancefuture.com)" {
		t.Fatalf("testnet with a futures endpoint: %s", s)
	}
	x, _ = binance.Connector{}.Open(creds, exchange.Endpoints{})
	if s := fmt.Sprintf("%v %+v %#v %s", x, x, x, x); !strings.Contains(s, "api.binance.com") || strings.Contains(s, binancefake.APISecret) {
		t.Fatalf("production defaults / redaction: %s", s)
	}
}

// The executor's client order IDs fit Binance's newClientOrderId pattern.
func TestExecutorClientOrderIDsFit(t *testing.T) {
	re := regexp.MustCompile(`^[\.A-Z\:/a-z0-9_-]{1,36}$`)
	for _, leg := range []string{"", "open", "close", "reverse-open", "dca-7"} {
		id := order.ClientOrderID("7f9c2ba4-e88f-4d3c-9c9e-1a2b3c4d5e6f", leg)
		if !re.MatchString(id) {
			t.Fatalf("client order ID %q (%d chars) does not fit Binance", id, len(id))
		}
	}
	f := newFixture(t)
	o, err := f.x.PlaceOrder(ctx, spotMarket(order.ClientOrderID("sig-1", "open"), exchange.SideBuy, "0.001"))
	if err != nil || o.Status != exchange.StatusFilled {
		t.Fatalf("place with executor ID: %v %+v", err, o)
	}
	// An ID Binance would refuse is refused before any request.
	_, err = f.x.PlaceOrder(ctx, spotMarket("has space", exchange.SideBuy, "0.001"))
	wantCode(t, err, errs.ExchangeError)
	_, err = f.x.PlaceOrder(ctx, spotMarket(strings.Repeat("a", 37), exchange.SideBuy, "0.001"))
	wantCode(t, err, errs.ExchangeError)
	if n := f.fake.Count(http.MethodPost, "/api/v3/order"); n != 1 {
		t.Fatalf("%d place requests, want 1", n)
	}
}

func TestMarketsWithFilters(t *testing.T) {
	f := newFixture(t)
	spot, err := f.x.Markets(ctx, exchange.Spot)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][4]string{ // tick, step, minQty, minNotional
		"BTC/USDT":  {"0.01", "0.00001", "0.00001", "5"},
		"ETH/USDT":  {"0.01", "0.0001", "0.0001", "5"},
		"DOGE/USDT": {"0.00001", "1", "1", "1"},
	}
	if len(spot) != 3 { // LUNAUSDT is in BREAK
		t.Fatalf("spot markets %+v", spot)
	}
	for _, m := range spot {
		w, ok := want[m.Symbol]
		if !ok || m.Kind != exchange.Spot || m.Base+"/"+m.Quote != m.Symbol {
			t.Fatalf("unexpected market %+v", m)
		}
		testkit.EqualD(t, m.Symbol+" tick", m.TickSize, w[0])
		testkit.EqualD(t, m.Symbol+" step", m.StepSize, w[1])
		testkit.EqualD(t, m.Symbol+" minQty", m.MinQty, w[2])
		testkit.EqualD(t, m.Symbol+" minNotional", m.MinNotional, w[3])
	}
	fut, err := f.x.Markets(ctx, exchange.Futures)
	if err != nil {
		t.Fatal(err)
	}
	wantF := map[string][4]string{
		"BTC/USDT":  {"0.1", "0.001", "0.001", "100"},
		"ETH/USDT":  {"0.01", "0.001", "0.001", "20"},
		"DOGE/USDT": {"0.00001", "1", "1", "5"},
	}
	if len(fut) != 3 { // the quarterly contract and the SETTLING symbol are left out
		t.Fatalf("futures markets %+v", fut)
	}
	for _, m := range fut {
		w := wantF[m.Symbol]
		testkit.EqualD(t, m.Symbol+" tick", m.TickSize, w[0])
		testkit.EqualD(t, m.Symbol+" step", m.StepSize, w[1])
		testkit.EqualD(t, m.Symbol+" minQty", m.MinQty, w[2])
		testkit.EqualD(t, m.Symbol+" minNotional", m.MinNotional, w[3])
	}
	// Rounding with Binance's filters (decision 6 in docs/decisions.md).
	testkit.EqualD(t, "rounded amount", spot[0].RoundAmount(testkit.D("0.0153846")), "0.01538")

	// Cached: shared by every account of the endpoint, one fetch per TTL.
	f.account(t, binance.Connector{}, creds).Markets(ctx, exchange.Spot)
	f.x.Markets(ctx, exchange.Spot)
	if n := f.fake.Count(http.MethodGet, "/api/v3/exchangeInfo"); n != 1 {
		t.Fatalf("%d exchangeInfo fetches, want 1", n)
	}
}

func TestMarketsStaleOnRefreshFailureAndEmptyCacheIsAnError(t *testing.T) {
	f := newFixture(t, func(c *binance.Connector) { c.MarketsTTL = time.Nanosecond; c.Attempts = 1 })
	if _, err := f.x.Markets(ctx, exchange.Futures); err != nil {
		t.Fatal(err)
	}
	f.fake.FailNext(1, binancefake.ServerError(502).On(http.MethodGet, "/fapi/v1/exchangeInfo"))
	list, err := f.x.Markets(ctx, exchange.Futures)
	if err != nil || len(list) != 3 {
		t.Fatalf("stale copy not served: %v %d", err, len(list))
	}
	if !logs.Contains("serving the cached copy") {
		t.Fatal("stale serve not logged")
	}
	// Nothing cached for spot yet: the failure is the answer.
	f.fake.FailNext(1, binancefake.ServerError(500).On(http.MethodGet, "/api/v3/exchangeInfo"))
	_, err = f.x.Markets(ctx, exchange.Spot)
	wantCode(t, err, errs.ExchangeError)
	if !errors.Is(err, exchange.ErrUnreachable) {
		t.Fatalf("not ErrUnreachable: %v", err)
	}
	_, err = f.x.Markets(ctx, "options")
	wantCode(t, err, errs.InvalidSymbol)
}

func TestTickerAndBalances(t *testing.T) {
	f := newFixture(t)
	p, err := f.x.Ticker(ctx, exchange.Spot, "BTC/USDT")
	if err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "spot ticker", p, "50000")
	f.fake.SetPrice("ETHUSDT", "3123.45")
	p, err = f.x.Ticker(ctx, exchange.Futures, "ETHUSDT") // BASEQUOTE resolves through the markets
	if err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "futures ticker", p, "3123.45")
	_, err = f.x.Ticker(ctx, exchange.Spot, "FOO/USDT")
	wantCode(t, err, errs.InvalidSymbol)

	f.fake.SetSpotBalance("USDT", "1234.5")
	f.fake.SetFuturesBalance("USDT", "777.25")
	b, err := f.x.Balance(ctx, "USDT")
	if err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "spot free", b.Free, "1234.5")
	testkit.EqualD(t, "spot locked", b.Locked, "0")
	b, err = f.x.ForKind(exchange.Futures).Balance(ctx, "usdt")
	if err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "futures available", b.Free, "777.25")
	b, err = f.x.Balance(ctx, "XRP")
	if err != nil || !b.Free.IsZero() || b.Asset != "XRP" {
		t.Fatalf("unheld asset: %v %+v", err, b)
	}
}

func TestSpotMarketBuyAndSellExactFills(t *testing.T) {
	f := newFixture(t)
	buyID := cid()
	o, err := f.x.PlaceOrder(ctx, spotMarket(buyID, exchange.SideBuy, "0.01"))
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != exchange.StatusFilled || o.Side != exchange.SideBuy || o.Type != exchange.Market ||
		o.ClientOrderID != buyID || o.Symbol != "BTC/USDT" || o.Kind != exchange.Spot || o.ID == "" {
		t.Fatalf("order %+v", o)
	}
	testkit.EqualD(t, "amount", o.Amount, "0.01")
	testkit.EqualD(t, "filled", o.FilledAmount, "0.01")
	testkit.EqualD(t, "avg", o.AvgPrice, "50000")
	// 0.1 % charged in BTC (0.00001), reported in BTC: the holding is 0.00999 BTC.
	testkit.EqualD(t, "fee", o.Fee, "0.00001")
	if o.FeeAsset != "BTC" {
		t.Fatalf("fee asset %q", o.FeeAsset)
	}
	free, _ := f.fake.SpotBalance("USDT")
	testkit.EqualD(t, "USDT after buy", free, "9500")
	btc, _ := f.fake.SpotBalance("BTC")
	testkit.EqualD(t, "BTC after buy", btc, "0.00999")
	// The request carried the exact decimal strings and the client ID.
	p := paramsOf(f.fake, http.MethodPost, "/api/v3/order")[0]
	if p["quantity"] != "0.01" || p["newClientOrderId"] != buyID || p["type"] != "MARKET" || p["side"] != "BUY" ||
		p["newOrderRespType"] != "FULL" || p["recvWindow"] != "5000" {
		t.Fatalf("request %v", p)
	}

	f.fake.SetPrice("BTCUSDT", "51000")
	o, err = f.x.PlaceOrder(ctx, spotMarket(cid(), exchange.SideSell, "0.00999"))
	if err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "sell filled", o.FilledAmount, "0.00999")
	testkit.EqualD(t, "sell avg", o.AvgPrice, "51000")
	testkit.EqualD(t, "sell fee", o.Fee, "0.50949")
	free, _ = f.fake.SpotBalance("USDT")
	testkit.EqualD(t, "USDT after sell", free, "10008.98051")

	// GetOrder reads the fee from the account's trades.
	g, err := f.x.GetOrder(ctx, exchange.Spot, "BTC/USDT", buyID)
	if err != nil {
		t.Fatal(err)
	}
	if g.ID == "" || g.Status != exchange.StatusFilled {
		t.Fatalf("get %+v", g)
	}
	testkit.EqualD(t, "get filled", g.FilledAmount, "0.01")
	testkit.EqualD(t, "get avg", g.AvgPrice, "50000")
	testkit.EqualD(t, "get fee (in BTC)", g.Fee, "0.00001")
	if g.FeeAsset != "BTC" {
		t.Fatalf("get fee asset %q", g.FeeAsset)
	}
}

func TestFuturesMarketAndReduceOnlyExactFills(t *testing.T) {
	f := newFixture(t)
	open := cid()
	o, err := f.x.PlaceOrder(ctx, futMarket(open, exchange.SideBuy, "0.01", 10))
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != exchange.StatusFilled || o.Kind != exchange.Futures {
		t.Fatalf("order %+v", o)
	}
	testkit.EqualD(t, "filled", o.FilledAmount, "0.01")
	testkit.EqualD(t, "avg", o.AvgPrice, "50000")
	testkit.EqualD(t, "fee (userTrades)", o.Fee, "0.25")
	if o.FeeAsset != "USDT" || f.fake.Leverage("BTCUSDT") != 10 {
		t.Fatalf("fee asset %q, leverage %d", o.FeeAsset, f.fake.Leverage("BTCUSDT"))
	}
	amt, entry := f.fake.Position("BTCUSDT")
	testkit.EqualD(t, "position", amt, "0.01")
	testkit.EqualD(t, "entry", entry, "50000")
	wallet, avail := f.fake.FuturesBalance("USDT")
	testkit.EqualD(t, "wallet", wallet, "9999.75")
	testkit.EqualD(t, "available", avail, "9949.75")
	b, _ := f.x.ForKind(exchange.Futures).Balance(ctx, "USDT")
	testkit.EqualD(t, "adapter futures free", b.Free, "9949.75")
	testkit.EqualD(t, "adapter futures locked", b.Locked, "50")

	// The same leverage again needs no call.
	f.x.PlaceOrder(ctx, futMarket(cid(), exchange.SideBuy, "0.002", 10))
	if n := f.fake.Count(http.MethodPost, "/fapi/v1/leverage"); n != 1 {
		t.Fatalf("%d leverage calls", n)
	}

	f.fake.SetPrice("BTCUSDT", "51000")
	closeReq := futMarket(cid(), exchange.SideSell, "0.012", 10)
	closeReq.ReduceOnly = true
	o, err = f.x.PlaceOrder(ctx, closeReq)
	if err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "close avg", o.AvgPrice, "51000")
	testkit.EqualD(t, "close fee", o.Fee, "0.306")
	amt, _ = f.fake.Position("BTCUSDT")
	testkit.EqualD(t, "flat", amt, "0")
	wallet, _ = f.fake.FuturesBalance("USDT")
	// 10000 − 0.25 − 0.05 (fees in) + 12 (PnL: 0.012 × 1000) − 0.306 (fee out)
	testkit.EqualD(t, "wallet after close", wallet, "10011.394")
	p := paramsOf(f.fake, http.MethodPost, "/fapi/v1/order")
	if last := p[len(p)-1]; last["reduceOnly"] != "true" || last["quantity"] != "0.012" || last["newOrderRespType"] != "RESULT" {
		t.Fatalf("reduce-only request %v", last)
	}
	if p[0]["reduceOnly"] != "" {
		t.Fatalf("opening order sent reduceOnly: %v", p[0])
	}
	// Reduce-only with nothing to reduce.
	closeReq.ClientOrderID = cid()
	_, err = f.x.PlaceOrder(ctx, closeReq)
	wantCode(t, err, errs.PositionNotFound)
}

func TestLimitOrdersRestFillAndCancel(t *testing.T) {
	f := newFixture(t)
	id := cid()
	req := exchange.OrderRequest{ClientOrderID: id, Symbol: "BTC/USDT", Kind: exchange.Spot, Side: exchange.SideBuy,
		Type: exchange.Limit, Amount: testkit.D("0.01"), Price: testkit.D("49000")}
	o, err := f.x.PlaceOrder(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != exchange.StatusOpen || !o.FilledAmount.IsZero() || o.Type != exchange.Limit {
		t.Fatalf("resting order %+v", o)
	}
	if p := paramsOf(f.fake, http.MethodPost, "/api/v3/order")[0]; p["price"] != "49000" || p["timeInForce"] != "GTC" {
		t.Fatalf("limit request %v", p)
	}
	_, locked := f.fake.SpotBalance("USDT")
	testkit.EqualD(t, "locked", locked, "490")
	f.fake.SetPrice("BTCUSDT", "48900")
	o, err = f.x.GetOrder(ctx, exchange.Spot, "BTC/USDT", id)
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != exchange.StatusFilled {
		t.Fatalf("not filled: %+v", o)
	}
	testkit.EqualD(t, "limit avg", o.AvgPrice, "49000")
	testkit.EqualD(t, "limit fee (in BTC)", o.Fee, "0.00001")
	_, err = f.x.CancelOrder(ctx, exchange.Spot, "BTC/USDT", id)
	wantCode(t, err, errs.ExchangeError) // filled: cannot be cancelled

	// A marketable limit fills at once at the better market price.
	o, err = f.x.PlaceOrder(ctx, exchange.OrderRequest{ClientOrderID: cid(), Symbol: "BTC/USDT", Kind: exchange.Spot,
		Side: exchange.SideBuy, Type: exchange.Limit, Amount: testkit.D("0.01"), Price: testkit.D("50000")})
	if err != nil || o.Status != exchange.StatusFilled {
		t.Fatalf("marketable: %v %+v", err, o)
	}
	testkit.EqualD(t, "marketable avg", o.AvgPrice, "48900")

	// Cancel a resting futures limit order.
	fid := cid()
	o, err = f.x.PlaceOrder(ctx, exchange.OrderRequest{ClientOrderID: fid, Symbol: "ETH/USDT", Kind: exchange.Futures,
		Side: exchange.SideSell, Type: exchange.Limit, Amount: testkit.D("0.5"), Price: testkit.D("3100.5"), Leverage: 5})
	if err != nil || o.Status != exchange.StatusOpen {
		t.Fatalf("futures limit: %v %+v", err, o)
	}
	o, err = f.x.CancelOrder(ctx, exchange.Futures, "ETH/USDT", fid)
	if err != nil || o.Status != exchange.StatusCancelled {
		t.Fatalf("cancel: %v %+v", err, o)
	}
	_, err = f.x.CancelOrder(ctx, exchange.Futures, "ETH/USDT", cid())
	if !errors.Is(keep(err), exchange.ErrOrderNotFound) {
		t.Fatalf("cancel unknown: %v", err)
	}
}

func TestGetOrderNotFound(t *testing.T) {
	f := newFixture(t)
	for _, k := range []exchange.Kind{exchange.Spot, exchange.Futures} {
		_, err := f.x.GetOrder(ctx, k, "BTC/USDT", cid())
		if !errors.Is(keep(err), exchange.ErrOrderNotFound) {
			t.Fatalf("%s: %v", k, err)
		}
	}
	// Futures looks in the Algo Order API too.
	if n := f.fake.Count(http.MethodGet, "/fapi/v1/algoOrder"); n != 1 {
		t.Fatalf("%d algo lookups", n)
	}
}

func TestFuturesStopLossTakeProfitThroughAlgoOrderAPI(t *testing.T) {
	f := newFixture(t)
	if _, err := f.x.PlaceOrder(ctx, futMarket(cid(), exchange.SideBuy, "0.01", 20)); err != nil {
		t.Fatal(err)
	}
	sl, tp := cid(), cid()
	o, err := f.x.PlaceOrder(ctx, exchange.OrderRequest{ClientOrderID: sl, Symbol: "BTC/USDT", Kind: exchange.Futures,
		Side: exchange.SideSell, Type: exchange.StopLoss, Amount: testkit.D("0.01"), StopPrice: testkit.D("49000")})
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != exchange.StatusOpen || o.Type != exchange.StopLoss || !strings.HasPrefix(o.ID, "algo-") {
		t.Fatalf("stop-loss %+v", o)
	}
	testkit.EqualD(t, "sl amount", o.Amount, "0.01")
	o, err = f.x.PlaceOrder(ctx, exchange.OrderRequest{ClientOrderID: tp, Symbol: "BTC/USDT", Kind: exchange.Futures,
		Side: exchange.SideSell, Type: exchange.TakeProfit, Amount: testkit.D("0.01"), StopPrice: testkit.D("52000")})
	if err != nil || o.Type != exchange.TakeProfit {
		t.Fatalf("take-profit: %v %+v", err, o)
	}
	algo := paramsOf(f.fake, http.MethodPost, "/fapi/v1/algoOrder")
	if len(algo) != 2 {
		t.Fatalf("%d algo requests", len(algo))
	}
	want := map[string]string{"algoType": "CONDITIONAL", "type": "STOP_MARKET", "side": "SELL", "symbol": "BTCUSDT",
		"triggerPrice": "49000", "quantity": "0.01", "reduceOnly": "true", "clientAlgoId": sl, "workingType": "CONTRACT_PRICE"}
	for k, v := range want {
		if algo[0][k] != v {
			t.Errorf("stop-loss param %s = %q, want %q", k, algo[0][k], v)
		}
	}
	if algo[1]["type"] != "TAKE_PROFIT_MARKET" || algo[1]["triggerPrice"] != "52000" {
		t.Errorf("take-profit params %v", algo[1])
	}
	// The regular order endpoint never saw a conditional type.
	for _, p := range paramsOf(f.fake, http.MethodPost, "/fapi/v1/order") {
		if p["type"] != "MARKET" && p["type"] != "LIMIT" {
			t.Fatalf("conditional order sent to /fapi/v1/order: %v", p)
		}
	}
	// Placing again returns the same conditional order.
	again, err := f.x.PlaceOrder(ctx, exchange.OrderRequest{ClientOrderID: sl, Symbol: "BTC/USDT", Kind: exchange.Futures,
		Side: exchange.SideSell, Type: exchange.StopLoss, Amount: testkit.D("0.01"), StopPrice: testkit.D("49000")})
	if err != nil || f.fake.Placed(sl) != 1 || f.fake.Count(http.MethodPost, "/fapi/v1/algoOrder") != 2 {
		t.Fatalf("duplicate algo: %v placed=%d", err, f.fake.Placed(sl))
	}
	_ = again

	// The price falls through the stop: the stop-loss closes the position.
	f.fake.SetPrice("BTCUSDT", "48900")
	o, err = f.x.GetOrder(ctx, exchange.Futures, "BTC/USDT", sl)
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != exchange.StatusFilled || o.Type != exchange.StopLoss {
		t.Fatalf("triggered stop-loss %+v", o)
	}
	testkit.EqualD(t, "sl filled", o.FilledAmount, "0.01")
	testkit.EqualD(t, "sl avg", o.AvgPrice, "48900")
	testkit.EqualD(t, "sl fee", o.Fee, "0.2445")
	amt, _ := f.fake.Position("BTCUSDT")
	testkit.EqualD(t, "position", amt, "0")

	// Cancel the take-profit.
	o, err = f.x.CancelOrder(ctx, exchange.Futures, "BTC/USDT", tp)
	if err != nil || o.Status != exchange.StatusCancelled {
		t.Fatalf("cancel tp: %v %+v", err, o)
	}
	if n := f.fake.Count(http.MethodDelete, "/fapi/v1/algoOrder"); n != 1 {
		t.Fatalf("%d algo cancels", n)
	}

	// Amount zero closes the whole position (closePosition, no reduceOnly).
	if _, err := f.x.PlaceOrder(ctx, futMarket(cid(), exchange.SideSell, "0.02", 20)); err != nil {
		t.Fatal(err)
	}
	all := cid()
	o, err = f.x.PlaceOrder(ctx, exchange.OrderRequest{ClientOrderID: all, Symbol: "BTC/USDT", Kind: exchange.Futures,
		Side: exchange.SideBuy, Type: exchange.StopLoss, StopPrice: testkit.D("50000")})
	if err != nil {
		t.Fatal(err)
	}
	algo = paramsOf(f.fake, http.MethodPost, "/fapi/v1/algoOrder")
	if last := algo[len(algo)-1]; last["closePosition"] != "true" || last["reduceOnly"] != "" || last["quantity"] != "" {
		t.Fatalf("close-all params %v", last)
	}
	f.fake.SetPrice("BTCUSDT", "50100")
	o, _ = f.x.GetOrder(ctx, exchange.Futures, "BTC/USDT", all)
	if o.Status != exchange.StatusFilled {
		t.Fatalf("close-all %+v", o)
	}
	testkit.EqualD(t, "close-all filled", o.FilledAmount, "0.02")

	// A trigger already crossed is an invalid price.
	_, err = f.x.PlaceOrder(ctx, exchange.OrderRequest{ClientOrderID: cid(), Symbol: "BTC/USDT", Kind: exchange.Futures,
		Side: exchange.SideSell, Type: exchange.StopLoss, Amount: testkit.D("0.01"), StopPrice: testkit.D("51000")})
	wantCode(t, err, errs.InvalidPrice)
}

// Binance refuses conditional types on the old endpoint with -4120 (the fake does too),
// and the adapter never sends them there.
func TestOldOrderEndpointRefusesConditionalTypes(t *testing.T) {
	f := newFixture(t)
	req, _ := http.NewRequest(http.MethodPost, f.fake.URL()+"/fapi/v1/order?"+signedQuery(
		"symbol=BTCUSDT&side=SELL&type=STOP_MARKET&quantity=0.01&stopPrice=49000"), nil)
	req.Header.Set("X-MBX-APIKEY", binancefake.APIKey)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body := readAll(resp)
	if resp.StatusCode != 400 || !strings.Contains(body, "-4120") || !strings.Contains(body, "Algo Order API") {
		t.Fatalf("old endpoint: %d %s", resp.StatusCode, body)
	}
}

func TestSpotStopLossAndTakeProfit(t *testing.T) {
	f := newFixture(t)
	if _, err := f.x.PlaceOrder(ctx, spotMarket(cid(), exchange.SideBuy, "0.02")); err != nil {
		t.Fatal(err)
	}
	sl := cid()
	o, err := f.x.PlaceOrder(ctx, exchange.OrderRequest{ClientOrderID: sl, Symbol: "BTC/USDT", Kind: exchange.Spot,
		Side: exchange.SideSell, Type: exchange.StopLoss, Amount: testkit.D("0.01"), StopPrice: testkit.D("49000")})
	if err != nil || o.Status != exchange.StatusOpen || o.Type != exchange.StopLoss {
		t.Fatalf("spot stop-loss: %v %+v", err, o)
	}
	tp := cid()
	o, err = f.x.PlaceOrder(ctx, exchange.OrderRequest{ClientOrderID: tp, Symbol: "BTC/USDT", Kind: exchange.Spot,
		Side: exchange.SideSell, Type: exchange.TakeProfit, Amount: testkit.D("0.00998"), StopPrice: testkit.D("55000"), Price: testkit.D("54900")})
	if err != nil || o.Status != exchange.StatusOpen || o.Type != exchange.TakeProfit {
		t.Fatalf("spot take-profit: %v %+v", err, o)
	}
	p := paramsOf(f.fake, http.MethodPost, "/api/v3/order")
	if p[1]["type"] != "STOP_LOSS" || p[1]["stopPrice"] != "49000" || p[2]["type"] != "TAKE_PROFIT_LIMIT" ||
		p[2]["price"] != "54900" || p[2]["timeInForce"] != "GTC" {
		t.Fatalf("spot conditional params %v %v", p[1], p[2])
	}
	f.fake.SetPrice("BTCUSDT", "48000")
	o, err = f.x.GetOrder(ctx, exchange.Spot, "BTC/USDT", sl)
	if err != nil || o.Status != exchange.StatusFilled {
		t.Fatalf("triggered: %v %+v", err, o)
	}
	testkit.EqualD(t, "stop avg", o.AvgPrice, "48000")
	testkit.EqualD(t, "stop fee", o.Fee, "0.48")
	o, err = f.x.CancelOrder(ctx, exchange.Spot, "BTC/USDT", tp)
	if err != nil || o.Status != exchange.StatusCancelled {
		t.Fatalf("cancel tp: %v %+v", err, o)
	}
	_, locked := f.fake.SpotBalance("BTC")
	testkit.EqualD(t, "BTC unlocked", locked, "0")
	// A stop already crossed is refused as an invalid price.
	_, err = f.x.PlaceOrder(ctx, exchange.OrderRequest{ClientOrderID: cid(), Symbol: "BTC/USDT", Kind: exchange.Spot,
		Side: exchange.SideSell, Type: exchange.StopLoss, Amount: testkit.D("0.001"), StopPrice: testkit.D("49000")})
	wantCode(t, err, errs.InvalidPrice)
}

func TestPermissions(t *testing.T) {
	f := newFixture(t)
	p, err := f.x.Permissions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (exchange.Permissions{Read: true, SpotTrade: true, FuturesTrade: true}); p != want {
		t.Fatalf("default %+v", p)
	}
	f.fake.SetPermissions(binancefake.Restrictions{EnableReading: true, EnableSpotAndMarginTrading: true,
		EnableWithdrawals: true, IPRestrict: true})
	p, _ = f.x.Permissions(ctx)
	if want := (exchange.Permissions{Read: true, SpotTrade: true, Withdraw: true, IPRestricted: true}); p != want {
		t.Fatalf("withdrawals %+v", p)
	}
	if got := strings.Join(p.List(), ","); got != "ipRestricted,read,spot,withdraw" {
		t.Fatalf("list %s", got)
	}
	f.fake.SetPermissions(binancefake.Restrictions{EnableReading: true, EnableFutures: true, PermitsUniversalTransfer: true})
	p, _ = f.x.Permissions(ctx)
	if want := (exchange.Permissions{Read: true, FuturesTrade: true, Transfer: true}); p != want {
		t.Fatalf("transfer %+v", p)
	}
	f.fake.SetPermissions(binancefake.Restrictions{EnableReading: true, EnableInternalTransfer: true})
	if p, _ = f.x.Permissions(ctx); !p.Transfer {
		t.Fatalf("internal transfer %+v", p)
	}
	// A key without futures permission is refused on futures trading with -2015.
	_, err = f.x.PlaceOrder(ctx, futMarket(cid(), exchange.SideBuy, "0.01", 5))
	wantCode(t, err, errs.ExchangeDisconnected)

	// Unknown key, wrong secret.
	other := f.account(t, binance.Connector{}, exchange.Credentials{APIKey: "nobody", APISecret: "x"})
	_, err = other.Permissions(ctx)
	if !errors.Is(keep(err), exchange.ErrInvalidCredentials) {
		t.Fatalf("unknown key: %v", err)
	}
	wrong := f.account(t, binance.Connector{}, exchange.Credentials{APIKey: binancefake.APIKey, APISecret: "wrong-secret"})
	_, err = wrong.Permissions(ctx)
	if !errors.Is(keep(err), exchange.ErrInvalidCredentials) {
		t.Fatalf("wrong secret: %v", err)
	}
	// Unreachable: 5xx then time-outs.
	slow := f.account(t, binance.Connector{Timeout: 50 * time.Millisecond, MaxElapsed: 300 * time.Millisecond, Backoff: 10 * time.Millisecond}, creds)
	f.fake.FailNext(1, binancefake.ServerError(502))
	f.fake.FailNext(10, binancefake.Delay(2*time.Second))
	_, err = slow.Permissions(ctx)
	if !errors.Is(keep(err), exchange.ErrUnreachable) || errors.Is(err, exchange.ErrInvalidCredentials) {
		t.Fatalf("unreachable: %v", err)
	}
}

func TestBadSignatureBadKeyAndClockSkew(t *testing.T) {
	f := newFixture(t)
	wrong := f.account(t, binance.Connector{}, exchange.Credentials{APIKey: binancefake.APIKey, APISecret: "not-the-secret"})
	_, err := wrong.Balance(ctx, "USDT")
	e := wantCode(t, err, errs.ExchangeDisconnected)
	if !errors.Is(err, exchange.ErrInvalidCredentials) || e.Details["binanceCode"] != int64(-1022) {
		t.Fatalf("bad signature: %v %v", err, e.Details)
	}
	unknown := f.account(t, binance.Connector{}, exchange.Credentials{APIKey: "unknown", APISecret: binancefake.APISecret})
	_, err = unknown.PlaceOrder(ctx, spotMarket(cid(), exchange.SideBuy, "0.001"))
	e = wantCode(t, err, errs.ExchangeDisconnected)
	if e.Details["binanceCode"] != int64(-2015) {
		t.Fatalf("bad key: %v", e.Details)
	}

	// The server's clock runs 30 s ahead: the first refusal (-1021) re-syncs the offset.
	f.fake.SetClockSkew(30 * time.Second)
	b, err := f.x.Balance(ctx, "USDT")
	if err != nil {
		t.Fatalf("after re-sync: %v", err)
	}
	testkit.EqualD(t, "balance", b.Free, "10000")
	if n := f.fake.Count(http.MethodGet, "/api/v3/time"); n != 1 {
		t.Fatalf("%d time syncs", n)
	}
	if _, err := f.x.Balance(ctx, "USDT"); err != nil || f.fake.Count(http.MethodGet, "/api/v3/time") != 1 {
		t.Fatalf("offset not kept: %v", err)
	}
	// A timestamp refused again after the re-sync is an exchange error.
	f.fake.FailNext(2, binancefake.Reject(-1021, "Timestamp for this request is outside of the recvWindow.").On(http.MethodGet, "/fapi/v3/balance"))
	_, err = f.x.ForKind(exchange.Futures).Balance(ctx, "USDT")
	e = wantCode(t, err, errs.ExchangeError)
	if !strings.Contains(e.Message, "timestamp") {
		t.Fatalf("message %q", e.Message)
	}
}

// Every row of the mapping from Binance codes to the spec's codes.
func TestErrorMapping(t *testing.T) {
	f := newFixture(t)
	rows := []struct {
		code int
		msg  string
		want errs.Code
	}{
		{-2010, "Account has insufficient balance for requested action.", errs.InsufficientBalance},
		{-2019, "Margin is insufficient.", errs.InsufficientBalance},
		{-2018, "Balance is insufficient.", errs.InsufficientBalance},
		{-1013, "Filter failure: LOT_SIZE", errs.InvalidAmount},
		{-1013, "Filter failure: MARKET_LOT_SIZE", errs.InvalidAmount},
		{-1013, "Filter failure: NOTIONAL", errs.InvalidAmount},
		{-1013, "Filter failure: MIN_NOTIONAL", errs.InvalidAmount},
		{-1013, "Filter failure: PRICE_FILTER", errs.InvalidPrice},
		{-1013, "Filter failure: PERCENT_PRICE_BY_SIDE", errs.InvalidPrice},
		{-1013, "Filter failure: MAX_NUM_ORDERS", errs.ExchangeError},
		{-1111, "Parameter 'quantity' has too much precision.", errs.InvalidAmount},
		{-1111, "Parameter 'price' has too much precision.", errs.InvalidPrice},
		{-1111, "Precision is over the maximum defined for this asset.", errs.InvalidAmount},
		{-4003, "Quantity less than or equal to zero.", errs.InvalidAmount},
		{-4004, "Quantity less than min quantity.", errs.InvalidAmount},
		{-4005, "Quantity greater than max quantity.", errs.InvalidAmount},
		{-4023, "Qty not increased by step size.", errs.InvalidAmount},
		{-4164, "Order's notional must be no smaller than 100 (unless you choose reduce only).", errs.InvalidAmount},
		{-4014, "Price not increased by tick size.", errs.InvalidPrice},
		{-4013, "Price less than min price.", errs.InvalidPrice},
		{-4016, "Price is higher than mark price multiplier cap.", errs.InvalidPrice},
		{-4024, "Price is lower than mark price multiplier floor.", errs.InvalidPrice},
		{-2021, "Order would immediately trigger.", errs.InvalidPrice},
		{-2010, "Stop price would trigger immediately.", errs.InvalidPrice},
		{-1121, "Invalid symbol.", errs.InvalidSymbol},
		{-2022, "ReduceOnly Order is rejected.", errs.PositionNotFound},
		{-2015, "Invalid API-key, IP, or permissions for action.", errs.ExchangeDisconnected},
		{-2014, "API-key format invalid.", errs.ExchangeDisconnected},
		{-1022, "Signature for this request is not valid.", errs.ExchangeDisconnected},
		{-1015, "Too many new orders; current limit is 100 orders per 10 SECOND.", errs.RateLimited},
		{-2010, "Market is closed.", errs.ExchangeError},
		{-4061, "Order's position side does not match user's setting.", errs.ExchangeError},
		{-4120, "Order type not supported for this endpoint. Please use the Algo Order API endpoints instead.", errs.ExchangeError},
	}
	for _, r := range rows {
		t.Run(fmt.Sprintf("%d %s", r.code, r.msg), func(t *testing.T) {
			for _, kind := range []exchange.Kind{exchange.Spot, exchange.Futures} {
				path := "/api/v3/order"
				req := spotMarket(cid(), exchange.SideBuy, "0.01")
				if kind == exchange.Futures {
					path, req = "/fapi/v1/order", futMarket(cid(), exchange.SideBuy, "0.01", 20)
				}
				f.fake.FailNext(1, binancefake.Reject(r.code, r.msg).On(http.MethodPost, path))
				_, err := f.x.PlaceOrder(ctx, req)
				e := wantCode(t, err, r.want)
				if !strings.Contains(e.Error(), r.msg) {
					t.Errorf("%s: Binance's message missing: %v", kind, err)
				}
				if e.Details["binanceCode"] != int64(r.code) {
					t.Errorf("%s: details %v", kind, e.Details)
				}
				if f.fake.Placed(req.ClientOrderID) != 0 {
					t.Errorf("%s: an order was placed", kind)
				}
			}
		})
	}
}

func TestInsufficientBalanceDetails(t *testing.T) {
	f := newFixture(t)
	// Natural spot refusal: 1 BTC at 50000 with 10000 USDT.
	_, err := f.x.PlaceOrder(ctx, spotMarket(cid(), exchange.SideBuy, "1"))
	e := wantCode(t, err, errs.InsufficientBalance)
	testkit.EqualD(t, "required", asDec(t, e.Details["required"]), "50050")
	testkit.EqualD(t, "available", asDec(t, e.Details["available"]), "10000")
	if e.Details["asset"] != "USDT" || !strings.Contains(e.Message, "50050 required, 10000 available") {
		t.Fatalf("details %v %q", e.Details, e.Message)
	}
	// Spot sell of a base asset not held.
	_, err = f.x.PlaceOrder(ctx, spotMarket(cid(), exchange.SideSell, "0.5"))
	e = wantCode(t, err, errs.InsufficientBalance)
	testkit.EqualD(t, "sell required", asDec(t, e.Details["required"]), "0.5")
	testkit.EqualD(t, "sell available", asDec(t, e.Details["available"]), "0")
	if e.Details["asset"] != "BTC" {
		t.Fatalf("asset %v", e.Details["asset"])
	}
	// Natural futures refusal (-2019): 1 BTC at leverage 2 needs 25000 margin + 25 fee.
	_, err = f.x.PlaceOrder(ctx, futMarket(cid(), exchange.SideBuy, "1", 2))
	e = wantCode(t, err, errs.InsufficientBalance)
	testkit.EqualD(t, "futures required", asDec(t, e.Details["required"]), "25025")
	testkit.EqualD(t, "futures available", asDec(t, e.Details["available"]), "10000")
	if e.Details["binanceCode"] != int64(-2019) {
		t.Fatalf("details %v", e.Details)
	}
	// Limit: the required amount uses the limit price.
	_, err = f.x.PlaceOrder(ctx, exchange.OrderRequest{ClientOrderID: cid(), Symbol: "ETH/USDT", Kind: exchange.Spot,
		Side: exchange.SideBuy, Type: exchange.Limit, Amount: testkit.D("4"), Price: testkit.D("2600")})
	e = wantCode(t, err, errs.InsufficientBalance)
	testkit.EqualD(t, "limit required", asDec(t, e.Details["required"]), "10410.4")
}

func TestNaturalFilterRefusals(t *testing.T) {
	f := newFixture(t)
	cases := []struct {
		name string
		req  exchange.OrderRequest
		want errs.Code
	}{
		{"spot step", spotMarket(cid(), exchange.SideBuy, "0.000015"), errs.InvalidAmount},
		{"spot notional", spotMarket(cid(), exchange.SideBuy, "0.00001"), errs.InvalidAmount},
		{"spot precision", spotMarket(cid(), exchange.SideBuy, "0.000000001"), errs.InvalidAmount},
		{"spot tick", exchange.OrderRequest{ClientOrderID: cid(), Symbol: "BTC/USDT", Kind: exchange.Spot, Side: exchange.SideBuy,
			Type: exchange.Limit, Amount: testkit.D("0.01"), Price: testkit.D("49000.005")}, errs.InvalidPrice},
		{"spot closed market", exchange.OrderRequest{ClientOrderID: cid(), Symbol: "LUNA/USDT", Kind: exchange.Spot, Side: exchange.SideBuy,
			Type: exchange.Market, Amount: testkit.D("1")}, errs.ExchangeError},
		{"unknown symbol", exchange.OrderRequest{ClientOrderID: cid(), Symbol: "FOO/USDT", Kind: exchange.Spot, Side: exchange.SideBuy,
			Type: exchange.Market, Amount: testkit.D("1")}, errs.InvalidSymbol},
		{"futures notional", futMarket(cid(), exchange.SideBuy, "0.001", 5), errs.InvalidAmount},
		{"futures precision", futMarket(cid(), exchange.SideBuy, "0.0101", 5), errs.InvalidAmount},
		{"futures tick", exchange.OrderRequest{ClientOrderID: cid(), Symbol: "BTC/USDT", Kind: exchange.Futures, Side: exchange.SideBuy,
			Type: exchange.Limit, Amount: testkit.D("0.01"), Price: testkit.D("49000.05"), Leverage: 5}, errs.InvalidPrice},
		{"futures leverage", futMarket(cid(), exchange.SideBuy, "0.01", 200), errs.InvalidAmount},
		{"zero amount", spotMarket(cid(), exchange.SideBuy, "0"), errs.InvalidAmount},
		{"limit without price", exchange.OrderRequest{ClientOrderID: cid(), Symbol: "BTC/USDT", Kind: exchange.Spot,
			Side: exchange.SideBuy, Type: exchange.Limit, Amount: testkit.D("0.01")}, errs.InvalidPrice},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := f.x.PlaceOrder(ctx, c.req)
			wantCode(t, err, c.want)
			if f.fake.Placed(c.req.ClientOrderID) != 0 {
				t.Fatal("placed")
			}
		})
	}
}

func TestRateLimitedWithRetryAfter(t *testing.T) {
	f := newFixture(t)
	f.fake.FailNext(1, binancefake.RateLimited(7).On(http.MethodPost, "/api/v3/order"))
	req := spotMarket(cid(), exchange.SideBuy, "0.01")
	_, err := f.x.PlaceOrder(ctx, req)
	e := wantCode(t, err, errs.RateLimited)
	if e.RetryAfter != 7*time.Second || f.fake.Count(http.MethodPost, "/api/v3/order") != 1 || f.fake.Placed(req.ClientOrderID) != 0 {
		t.Fatalf("429: retryAfter %s, %d requests", e.RetryAfter, f.fake.Count(http.MethodPost, "/api/v3/order"))
	}
	f.fake.FailNext(1, binancefake.Banned(120))
	_, err = f.x.Ticker(ctx, exchange.Spot, "BTC/USDT")
	e = wantCode(t, err, errs.RateLimited)
	if e.RetryAfter != 2*time.Minute {
		t.Fatalf("418: retryAfter %s", e.RetryAfter)
	}
	// Not retried: rate limits are the caller's to wait out.
	if n := f.fake.Count(http.MethodGet, "/api/v3/ticker/price"); n != 1 {
		t.Fatalf("%d ticker requests", n)
	}
}

func Test5xxRetriedThenSuccess(t *testing.T) {
	f := newFixture(t, func(c *binance.Connector) {
		c.Backoff = 5 * time.Millisecond
		c.RecvWindow = 300 * time.Millisecond
		c.ClockMargin = 50 * time.Millisecond
	})
	f.fake.FailNext(2, binancefake.ServerError(502).On(http.MethodGet, "/fapi/v2/ticker/price"))
	p, err := f.x.Ticker(ctx, exchange.Futures, "BTC/USDT")
	if err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "price", p, "50000")
	if n := f.fake.Count(http.MethodGet, "/fapi/v2/ticker/price"); n != 3 {
		t.Fatalf("%d attempts", n)
	}
	// Three failures exhaust the attempts.
	f.fake.FailNext(3, binancefake.ServerError(503).On(http.MethodGet, "/api/v3/account"))
	_, err = f.x.Balance(ctx, "USDT")
	wantCode(t, err, errs.ExchangeError)
	if !errors.Is(err, exchange.ErrUnreachable) {
		t.Fatal(err)
	}

	// A 5xx on a place is an unknown outcome: looked up, and sent again only once the lost
	// request's recvWindow is over.
	f.fake.FailNext(1, binancefake.ServerError(500).On(http.MethodPost, "/api/v3/order"))
	req := spotMarket(cid(), exchange.SideBuy, "0.01")
	start := time.Now()
	o, err := f.x.PlaceOrder(ctx, req)
	if err != nil || o.Status != exchange.StatusFilled {
		t.Fatalf("place after 500: %v %+v", err, o)
	}
	if el := time.Since(start); el < 300*time.Millisecond {
		t.Fatalf("re-sent after %s, inside the recvWindow", el)
	}
	if f.fake.Placed(req.ClientOrderID) != 1 || f.fake.Count(http.MethodPost, "/api/v3/order") != 2 {
		t.Fatalf("placed %d", f.fake.Placed(req.ClientOrderID))
	}
}

func TestDropAfterApplyFindsTheOrderExactlyOnce(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		path string
		req  exchange.OrderRequest
	}{
		{"/api/v3/order", spotMarket(cid(), exchange.SideBuy, "0.01")},
		{"/fapi/v1/order", futMarket(cid(), exchange.SideBuy, "0.01", 20)},
		{"/fapi/v1/algoOrder", exchange.OrderRequest{ClientOrderID: cid(), Symbol: "BTC/USDT", Kind: exchange.Futures,
			Side: exchange.SideSell, Type: exchange.StopLoss, Amount: testkit.D("0.01"), StopPrice: testkit.D("45000")}},
	} {
		f.fake.FailNext(1, binancefake.DropAfterApply().On(http.MethodPost, tc.path))
		o, err := f.x.PlaceOrder(ctx, tc.req)
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		if o.ClientOrderID != tc.req.ClientOrderID || f.fake.Placed(tc.req.ClientOrderID) != 1 || f.fake.Count(http.MethodPost, tc.path) != 1 {
			t.Fatalf("%s: %+v placed %d", tc.path, o, f.fake.Placed(tc.req.ClientOrderID))
		}
		g, err := f.x.GetOrder(ctx, tc.req.Kind, "BTC/USDT", tc.req.ClientOrderID)
		if err != nil || g.ID != o.ID {
			t.Fatalf("%s: get %v %+v", tc.path, err, g)
		}
	}
	if !logs.Contains("got no answer") {
		t.Fatal("lost answer not logged")
	}
}

func TestDropBeforeApplyPlacesOnceAfterTheWindow(t *testing.T) {
	f := newFixture(t, func(c *binance.Connector) {
		c.RecvWindow = 200 * time.Millisecond
		c.ClockMargin = 50 * time.Millisecond
	})
	f.fake.FailNext(1, binancefake.Drop().On(http.MethodPost, "/api/v3/order"))
	req := spotMarket(cid(), exchange.SideBuy, "0.01")
	o, err := f.x.PlaceOrder(ctx, req)
	if err != nil || o.Status != exchange.StatusFilled || f.fake.Placed(req.ClientOrderID) != 1 {
		t.Fatalf("%v %+v placed %d", err, o, f.fake.Placed(req.ClientOrderID))
	}
	// Without budget to wait for the window, the outcome is unknown (untyped), and a later
	// call resolves it.
	short := f.account(t, binance.Connector{RecvWindow: 2 * time.Second, MaxElapsed: 300 * time.Millisecond}, creds)
	f.fake.FailNext(1, binancefake.Drop().On(http.MethodPost, "/api/v3/order"))
	req = spotMarket(cid(), exchange.SideBuy, "0.01")
	_, err = short.PlaceOrder(ctx, req)
	wantUnknown(t, err)
	_, err = short.GetOrder(ctx, exchange.Spot, "BTC/USDT", req.ClientOrderID)
	if !errors.Is(err, exchange.ErrOrderNotFound) {
		t.Fatalf("get: %v", err)
	}
	// Another call inside the window still refuses to send.
	_, err = short.PlaceOrder(ctx, req)
	wantUnknown(t, err)
	if f.fake.Placed(req.ClientOrderID) != 0 {
		t.Fatal("placed inside the window")
	}
}

func TestDuplicatePlaceMakesOneOrder(t *testing.T) {
	f := newFixture(t)
	req := spotMarket(cid(), exchange.SideBuy, "0.01")
	a, err := f.x.PlaceOrder(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := f.x.PlaceOrder(ctx, req)
	if err != nil || b.ID != a.ID || f.fake.Placed(req.ClientOrderID) != 1 || f.fake.Count(http.MethodPost, "/api/v3/order") != 1 {
		t.Fatalf("second place: %v %+v placed %d", err, b, f.fake.Placed(req.ClientOrderID))
	}
	// Concurrent placements of one ID (Binance would take a filled order's ID again).
	req = futMarket(cid(), exchange.SideBuy, "0.01", 20)
	var wg sync.WaitGroup
	ids := make([]string, 8)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o, err := f.x.PlaceOrder(ctx, req)
			if err != nil {
				t.Error(err)
			}
			ids[i] = o.ID
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("different orders %v", ids)
		}
	}
	if n := f.fake.Placed(req.ClientOrderID); n != 1 {
		t.Fatalf("%d orders", n)
	}
}

// A refusal as a duplicate (the lookup missed the order) returns the existing order.
func TestDuplicateRefusalReturnsTheExistingOrder(t *testing.T) {
	f := newFixture(t)
	for _, tc := range []struct {
		kind exchange.Kind
		path string
		sym  string
	}{{exchange.Spot, "/api/v3/order", "BTC/USDT"}, {exchange.Futures, "/fapi/v1/order", "BTC/USDT"}} {
		req := exchange.OrderRequest{ClientOrderID: cid(), Symbol: tc.sym, Kind: tc.kind, Side: exchange.SideBuy,
			Type: exchange.Limit, Amount: testkit.D("0.01"), Price: testkit.D("40000"), Leverage: 20}
		first, err := f.x.PlaceOrder(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		f.fake.FailNext(1, binancefake.Reject(-2013, "Order does not exist.").On(http.MethodGet, tc.path))
		again, err := f.x.PlaceOrder(ctx, req)
		if err != nil || again.ID != first.ID || f.fake.Placed(req.ClientOrderID) != 1 || f.fake.Count(http.MethodPost, tc.path) < 2 {
			t.Fatalf("%s: %v %+v", tc.kind, err, again)
		}
	}
}

func TestTimeoutBounded(t *testing.T) {
	f := newFixture(t, func(c *binance.Connector) {
		c.Timeout = 100 * time.Millisecond
		c.MaxElapsed = 400 * time.Millisecond
		c.Backoff = 10 * time.Millisecond
	})
	f.fake.FailNext(1000, binancefake.Delay(3*time.Second))
	start := time.Now()
	_, err := f.x.Ticker(ctx, exchange.Spot, "BTC/USDT")
	wantCode(t, err, errs.ExchangeError)
	if !errors.Is(err, exchange.ErrUnreachable) {
		t.Fatalf("not unreachable: %v", err)
	}
	if el := time.Since(start); el > 1200*time.Millisecond { // the budget is 400 ms; the fake holds 3 s
		t.Fatalf("ticker took %s", el)
	}
	start = time.Now()
	req := spotMarket(cid(), exchange.SideBuy, "0.01")
	_, err = f.x.PlaceOrder(ctx, req)
	wantUnknown(t, err)
	if el := time.Since(start); el > 1200*time.Millisecond {
		t.Fatalf("place took %s", el)
	}
	// A caller's shorter deadline wins.
	start = time.Now()
	cctx, cancel := context.WithTimeout(ctx, 150*time.Millisecond)
	defer cancel()
	_, err = f.x.GetOrder(cctx, exchange.Spot, "BTC/USDT", req.ClientOrderID)
	wantUnknown(t, err)
	if el := time.Since(start); el > 800*time.Millisecond {
		t.Fatalf("get took %s", el)
	}
	// The default bound is the spec's 2 s per call.
	if binance.DefaultTimeout != 2*time.Second {
		t.Fatal(binance.DefaultTimeout)
	}
}

// An order request held in transit past the time-out is applied late; the adapter waits out
// the recvWindow before concluding, finds it, and never places a second one.
func TestLateApplyAfterTimeoutIsFoundNotDuplicated(t *testing.T) {
	f := newFixture(t, func(c *binance.Connector) {
		c.Timeout = 100 * time.Millisecond
		c.RecvWindow = 400 * time.Millisecond
		c.ClockMargin = 100 * time.Millisecond
		c.MaxElapsed = 3 * time.Second
	})
	f.fake.FailNext(1, binancefake.Delay(250*time.Millisecond).On(http.MethodPost, "/api/v3/order"))
	req := spotMarket(cid(), exchange.SideBuy, "0.01")
	o, err := f.x.PlaceOrder(ctx, req)
	if err != nil || o.Status != exchange.StatusFilled {
		t.Fatalf("%v %+v", err, o)
	}
	time.Sleep(100 * time.Millisecond)
	if n := f.fake.Placed(req.ClientOrderID); n != 1 || f.fake.Count(http.MethodPost, "/api/v3/order") != 1 {
		t.Fatalf("%d orders", n)
	}
	// Held longer than the recvWindow: Binance (and the fake) refuse it on arrival (-1021);
	// the adapter places once the window is over.
	f.fake.FailNext(1, binancefake.Delay(700*time.Millisecond).On(http.MethodPost, "/api/v3/order"))
	req = spotMarket(cid(), exchange.SideBuy, "0.01")
	o, err = f.x.PlaceOrder(ctx, req)
	if err != nil || o.Status != exchange.StatusFilled {
		t.Fatalf("%v %+v", err, o)
	}
	time.Sleep(300 * time.Millisecond) // let the held request arrive
	if n := f.fake.Placed(req.ClientOrderID); n != 1 {
		t.Fatalf("%d orders", n)
	}
}

// No error string and no log line ever shows the API secret (nor the key).
func TestNoSecretInErrorsOrLogs(t *testing.T) {
	f := newFixture(t, func(c *binance.Connector) { c.Timeout = 50 * time.Millisecond; c.MaxElapsed = 200 * time.Millisecond })
	wrong := f.account(t, binance.Connector{}, exchange.Credentials{APIKey: binancefake.APIKey, APISecret: binancefake.APISecret + "x"})
	_, err := wrong.PlaceOrder(ctx, spotMarket(cid(), exchange.SideBuy, "0.01"))
	keep(err)
	f.fake.FailNext(1, binancefake.Drop())
	_, err = f.x.Balance(ctx, "USDT")
	keep(err)
	f.fake.FailNext(10, binancefake.Delay(time.Second))
	_, err = f.x.PlaceOrder(ctx, spotMarket(cid(), exchange.SideBuy, "0.01"))
	keep(err)

	seen.mu.Lock()
	defer seen.mu.Unlock()
	if len(seen.errs) < 5 {
		t.Fatalf("only %d errors collected", len(seen.errs))
	}
	for _, err := range seen.errs {
		for _, s := range []string{err.Error(), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
			if strings.Contains(s, binancefake.APISecret) || strings.Contains(s, binancefake.APIKey) || strings.Contains(s, "signature=") {
				t.Fatalf("credential in error: %s", s)
			}
		}
		if e, ok := errs.As(err); ok {
			if d := fmt.Sprint(e.Details); strings.Contains(d, binancefake.APISecret) {
				t.Fatalf("credential in details: %s", d)
			}
		}
	}
	if l := logs.String(); strings.Contains(l, binancefake.APISecret) || strings.Contains(l, binancefake.APIKey) {
		t.Fatal("credential in logs")
	}
}

func BenchmarkPlaceOrder(b *testing.B) {
	f := newFixture(b)
	f.fake.SetSpotBalance("USDT", "1000000000")
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = cid()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := f.x.PlaceOrder(ctx, spotMarket(ids[i], exchange.SideBuy, "0.001")); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFakeBaseline is what PlaceOrder costs without the adapter: the same two signed
// requests (look up by client ID, then place) made with net/http directly. The difference
// to BenchmarkPlaceOrder is the adapter's own overhead (go-binance, classification, fees).
func BenchmarkFakeBaseline(b *testing.B) {
	f := newFixture(b)
	f.fake.SetSpotBalance("USDT", "1000000000")
	client := &http.Client{}
	ids := make([]string, b.N)
	for i := range ids {
		ids[i] = cid()
	}
	do := func(method, path, q string) {
		req, _ := http.NewRequest(method, f.fake.URL()+path+"?"+signedQuery(q), nil)
		req.Header.Set("X-MBX-APIKEY", binancefake.APIKey)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		readAll(resp)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		do(http.MethodGet, "/api/v3/order", "symbol=BTCUSDT&origClientOrderId="+ids[i])
		do(http.MethodPost, "/api/v3/order", "symbol=BTCUSDT&side=BUY&type=MARKET&quantity=0.001&newClientOrderId="+ids[i]+"&newOrderRespType=FULL")
	}
}

func TestSetLeverage(t *testing.T) {
	f := newFixture(t)
	if err := f.x.SetLeverage(ctx, "ETH/USDT", 25); err != nil {
		t.Fatal(err)
	}
	if f.fake.Leverage("ETHUSDT") != 25 {
		t.Fatalf("leverage %d", f.fake.Leverage("ETHUSDT"))
	}
	if p := paramsOf(f.fake, http.MethodPost, "/fapi/v1/leverage")[0]; p["symbol"] != "ETHUSDT" || p["leverage"] != "25" {
		t.Fatalf("params %v", p)
	}
	wantCode(t, f.x.SetLeverage(ctx, "ETH/USDT", 0), errs.InvalidAmount)
	f.fake.FailNext(1, binancefake.Reject(-4028, "Leverage 100 is not valid").On(http.MethodPost, "/fapi/v1/leverage"))
	wantCode(t, f.x.SetLeverage(ctx, "ETH/USDT", 100), errs.InvalidAmount)
	wantCode(t, f.x.SetLeverage(ctx, "FOO/USDT", 5), errs.InvalidSymbol)
	// Idempotent: retried after a 5xx.
	f.fake.FailNext(1, binancefake.ServerError(502).On(http.MethodPost, "/fapi/v1/leverage"))
	if err := f.x.SetLeverage(ctx, "ETH/USDT", 7); err != nil || f.fake.Leverage("ETHUSDT") != 7 {
		t.Fatalf("after 502: %v %d", err, f.fake.Leverage("ETHUSDT"))
	}
}

// The spot testnet has no /sapi endpoints: permissions come from the account endpoints.
func TestTestnetPermissionsFallback(t *testing.T) {
	f := newFixture(t)
	x, err := binance.Connector{Logger: logger}.Open(creds, exchange.Endpoints{Spot: f.fake.URL(), Futures: f.fake.URL(), Testnet: true})
	if err != nil {
		t.Fatal(err)
	}
	f.fake.SetPermissions(binancefake.Restrictions{EnableReading: true, EnableSpotAndMarginTrading: true, EnableWithdrawals: true})
	f.fake.FailNext(1, binancefake.Fault{Status: 404, Body: "<html>404</html>"}.On(http.MethodGet, "/sapi/v1/account/apiRestrictions"))
	p, err := x.Permissions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := (exchange.Permissions{Read: true, SpotTrade: true}); p != want {
		t.Fatalf("testnet permissions %+v", p)
	}
	// On production a 404 is an error, not a fallback.
	f.fake.FailNext(1, binancefake.Fault{Status: 404, Body: "<html>404</html>"}.On(http.MethodGet, "/sapi/v1/account/apiRestrictions"))
	_, err = f.x.Permissions(ctx)
	wantCode(t, err, errs.ExchangeError)
}

// A caller holding an exchange.Live reaches the futures wallet without importing the package.
func TestForKindThroughTheInterface(t *testing.T) {
	f := newFixture(t)
	f.fake.SetFuturesBalance("USDT", "321")
	live, err := binance.Connector{}.Connect(creds, exchange.Endpoints{Spot: f.fake.URL(), Futures: f.fake.URL()})
	if err != nil {
		t.Fatal(err)
	}
	k, ok := live.(interface {
		ForKind(exchange.Kind) exchange.Live
	})
	if !ok {
		t.Fatal("no ForKind")
	}
	b, err := k.ForKind(exchange.Futures).Balance(ctx, "USDT")
	if err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "futures balance", b.Free, "321")
	b, _ = live.Balance(ctx, "USDT")
	testkit.EqualD(t, "spot balance", b.Free, "10000")
}
