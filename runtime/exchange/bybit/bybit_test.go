package bybit_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/internal/venuetest"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/bybit"
	"github.com/sigops/sigops/runtime/exchange/bybit/bybitfake"
)

// secrets are the strings no error may contain.
var secrets = []string{bybitfake.APIKey, bybitfake.APISecret, "wrong-secret-zz9"}

func noSecret(t *testing.T, err error) {
	t.Helper()
	venuetest.NoSecret(t, err, secrets...)
}

func account(t testing.TB, srv *bybitfake.Server, c bybit.Connector, secret ...string) *bybit.Account {
	t.Helper()
	bybit.ResetCaches()
	sec := bybitfake.APISecret
	if len(secret) > 0 {
		sec = secret[0]
	}
	a, err := c.Open(exchange.Credentials{APIKey: bybitfake.APIKey, APISecret: sec}, exchange.Endpoints{Spot: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func setup(t *testing.T) (*bybitfake.Server, *bybit.Account) {
	t.Helper()
	srv := bybitfake.New()
	t.Cleanup(srv.Close)
	return srv, account(t, srv, bybit.Connector{})
}

func code(t *testing.T, err error, want errs.Code) *errs.Error {
	t.Helper()
	return venuetest.Code(t, err, want, secrets...)
}

var ids int

func cid() string {
	ids++
	return fmt.Sprintf("sg-%032x", ids)
}

func spotMarket(side exchange.Side, amount string) exchange.OrderRequest {
	return exchange.OrderRequest{ClientOrderID: cid(), Symbol: "BTC/USDT", Kind: exchange.Spot, Side: side,
		Type: exchange.Market, Amount: testkit.D(amount)}
}

func linear(side exchange.Side, typ exchange.OrderType, amount string) exchange.OrderRequest {
	return exchange.OrderRequest{ClientOrderID: cid(), Symbol: "BTC/USDT", Kind: exchange.Futures, Side: side,
		Type: typ, Amount: testkit.D(amount), Leverage: 5}
}

// --- signing ---

func TestSigningAccepted(t *testing.T) {
	srv, a := setup(t)
	b, err := a.Balance(context.Background(), "USDT")
	if err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "free", b.Free, "10000")
	testkit.EqualD(t, "locked", b.Locked, "0")
	if srv.Answered(10004) != 0 || srv.Answered(10002) != 0 {
		t.Error("the fake refused a request")
	}
}

func TestSigningRefusedBadSecret(t *testing.T) {
	srv := bybitfake.New()
	defer srv.Close()
	a := account(t, srv, bybit.Connector{}, "wrong-secret-zz9")
	_, err := a.Balance(context.Background(), "USDT")
	code(t, err, errs.ExchangeDisconnected)
	if !errors.Is(err, exchange.ErrInvalidCredentials) {
		t.Errorf("not ErrInvalidCredentials: %v", err)
	}
	if srv.Answered(10004) != 1 {
		t.Errorf("10004 answered %d times", srv.Answered(10004))
	}
	_, err = a.Permissions(context.Background())
	if !errors.Is(err, exchange.ErrInvalidCredentials) {
		t.Errorf("permissions: %v", err)
	}
	noSecret(t, err)
	// An order refused for the key is not placed.
	_, err = a.PlaceOrder(context.Background(), spotMarket(exchange.SideBuy, "0.001"))
	code(t, err, errs.ExchangeDisconnected)
	if srv.OrderCount() != 0 {
		t.Error("an order was placed")
	}
}

func TestSigningRefusedUnknownKey(t *testing.T) {
	srv := bybitfake.New()
	defer srv.Close()
	bybit.ResetCaches()
	a, _ := bybit.Connector{}.Connect(exchange.Credentials{APIKey: "nobody", APISecret: bybitfake.APISecret},
		exchange.Endpoints{Spot: srv.URL()})
	_, err := a.Permissions(context.Background())
	if !errors.Is(err, exchange.ErrInvalidCredentials) || srv.Answered(10003) != 1 {
		t.Errorf("unknown key: %v (10003 answered %d)", err, srv.Answered(10003))
	}
	noSecret(t, err)
}

// rawGet sends a signed GET with a chosen timestamp, secret and recv window.
func rawGet(t *testing.T, srv *bybitfake.Server, ts int64, secret, recv string, headers bool) (int, string) {
	t.Helper()
	q := "accountType=UNIFIED"
	req, _ := http.NewRequest(http.MethodGet, srv.URL()+"/v5/account/wallet-balance?"+q, nil)
	tss := strconv.FormatInt(ts, 10)
	if headers {
		req.Header.Set("X-BAPI-API-KEY", bybitfake.APIKey)
		req.Header.Set("X-BAPI-TIMESTAMP", tss)
		req.Header.Set("X-BAPI-RECV-WINDOW", recv)
		req.Header.Set("X-BAPI-SIGN", bybit.Sign(secret, tss, bybitfake.APIKey, recv, q))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func TestFakeChecksSignature(t *testing.T) {
	srv := bybitfake.New()
	defer srv.Close()
	now := time.Now().UnixMilli()
	for _, c := range []struct {
		name    string
		ts      int64
		secret  string
		recv    string
		headers bool
		status  int
		ret     string
	}{
		{"good", now, bybitfake.APISecret, "5000", true, 200, `"retCode":0`},
		{"bad secret", now, "nope", "5000", true, 200, `"retCode":10004`},
		{"stale", now - 6000, bybitfake.APISecret, "5000", true, 200, `"retCode":10002`},
		{"stale in a wider window", now - 6000, bybitfake.APISecret, "10000", true, 200, `"retCode":0`},
		{"future", now + 2000, bybitfake.APISecret, "5000", true, 200, `"retCode":10002`},
		{"no headers", now, "", "", false, 401, `"retCode":10003`},
	} {
		status, body := rawGet(t, srv, c.ts, c.secret, c.recv, c.headers)
		if status != c.status || !strings.Contains(body, c.ret) {
			t.Errorf("%s: %d %s", c.name, status, body)
		}
	}
}

func TestSkewedClockResyncs(t *testing.T) {
	for _, skew := range []time.Duration{-30 * time.Second, 5 * time.Second} {
		srv := bybitfake.New()
		a := account(t, srv, bybit.Connector{Now: func() time.Time { return time.Now().Add(skew) }})
		b, err := a.Balance(context.Background(), "USDT")
		if err != nil {
			t.Fatalf("skew %s: %v", skew, err)
		}
		testkit.EqualD(t, "free", b.Free, "10000")
		if srv.Answered(10002) != 1 || srv.Calls("/v5/market/time") != 1 {
			t.Errorf("skew %s: 10002 answered %d, time asked %d", skew, srv.Answered(10002), srv.Calls("/v5/market/time"))
		}
		// The offset is learned: no more refusals.
		if _, err := a.Balance(context.Background(), "USDT"); err != nil || srv.Answered(10002) != 1 {
			t.Errorf("skew %s: second call %v, 10002 answered %d", skew, err, srv.Answered(10002))
		}
		srv.Close()
	}
}

// --- markets ---

func TestMarkets(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	spot, err := a.Markets(ctx, exchange.Spot)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range spot {
		names = append(names, m.Symbol)
	}
	if strings.Join(names, ",") != "BTC/USDT,DOGE/USDT,ETH/USDT" {
		t.Errorf("spot markets %v", names)
	}
	btc := spot[0]
	if btc.Base != "BTC" || btc.Quote != "USDT" || btc.Kind != exchange.Spot {
		t.Errorf("spot BTC %+v", btc)
	}
	testkit.EqualD(t, "spot tick", btc.TickSize, "0.01")
	testkit.EqualD(t, "spot step", btc.StepSize, "0.000001")
	testkit.EqualD(t, "spot minQty", btc.MinQty, "0.000048")
	testkit.EqualD(t, "spot minNotional", btc.MinNotional, "1")

	srv.SetPageLimit(2) // linear is read page by page
	lin, err := a.Markets(ctx, exchange.Futures)
	if err != nil {
		t.Fatal(err)
	}
	names = nil
	for _, m := range lin {
		names = append(names, m.Symbol)
	}
	if strings.Join(names, ",") != "BTC/USDC,BTC/USDT,DOGE/USDT,ETH/USDT" {
		t.Errorf("linear markets %v", names)
	}
	if srv.Calls("/v5/market/instruments-info") != 1+3 {
		t.Errorf("instruments-info called %d times", srv.Calls("/v5/market/instruments-info"))
	}
	m := lin[1]
	testkit.EqualD(t, "linear tick", m.TickSize, "0.1")
	testkit.EqualD(t, "linear step", m.StepSize, "0.001")
	testkit.EqualD(t, "linear minQty", m.MinQty, "0.001")
	testkit.EqualD(t, "linear minNotional", m.MinNotional, "5")
	if m.Kind != exchange.Futures {
		t.Error("kind")
	}

	// Cached, and concurrent callers share one fetch.
	before := srv.Calls("/v5/market/instruments-info")
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := a.Markets(ctx, exchange.Spot); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if srv.Calls("/v5/market/instruments-info") != before {
		t.Error("cached markets were fetched again")
	}
	if _, err := a.Markets(ctx, "options"); errs.CodeOf(err) != errs.InvalidSymbol {
		t.Errorf("unknown kind: %v", err)
	}
}

func TestMarketsSingleflight(t *testing.T) {
	srv := bybitfake.New()
	defer srv.Close()
	a := account(t, srv, bybit.Connector{})
	srv.FailNext(bybitfake.Fault{Path: "/v5/market/instruments-info", Delay: 100 * time.Millisecond})
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := a.Markets(context.Background(), exchange.Spot); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if n := srv.Calls("/v5/market/instruments-info"); n != 1 {
		t.Errorf("20 concurrent misses made %d fetches", n)
	}
}

func TestTicker(t *testing.T) {
	_, a := setup(t)
	ctx := context.Background()
	for _, sym := range []string{"BTC/USDT", "btcusdt", "BTCUSDT"} {
		p, err := a.Ticker(ctx, exchange.Spot, sym)
		if err != nil {
			t.Fatal(err)
		}
		testkit.EqualD(t, sym, p, "50000")
	}
	p, err := a.Ticker(ctx, exchange.Futures, "BTC/USDC")
	if err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "BTCPERP", p, "50000")
	_, err = a.Ticker(ctx, exchange.Spot, "NOPE/USDT")
	code(t, err, errs.InvalidSymbol)
	_, err = a.Ticker(ctx, exchange.Spot, "OLD/USDT") // not Trading
	code(t, err, errs.InvalidSymbol)
}

// --- orders ---

func TestSpotMarketBuyInBaseUnits(t *testing.T) {
	srv, a := setup(t)
	req := spotMarket(exchange.SideBuy, "0.01")
	o, err := a.PlaceOrder(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	fo, _ := srv.Order(req.ClientOrderID)
	if fo.MarketUnit != "baseCoin" || !fo.Qty.Equal(testkit.D("0.01")) || fo.Category != "spot" || fo.Symbol != "BTCUSDT" {
		t.Errorf("sent %+v", fo)
	}
	if o.Status != exchange.StatusFilled || o.Type != exchange.Market || o.Side != exchange.SideBuy ||
		o.Symbol != "BTC/USDT" || o.Kind != exchange.Spot || o.ClientOrderID != req.ClientOrderID || o.ID != fo.OrderID {
		t.Errorf("order %+v", o)
	}
	testkit.EqualD(t, "amount", o.Amount, "0.01")
	testkit.EqualD(t, "filled", o.FilledAmount, "0.01")
	testkit.EqualD(t, "avg", o.AvgPrice, "50000")
	testkit.EqualD(t, "fee", o.Fee, "0.00001")
	if o.FeeAsset != "BTC" {
		t.Errorf("fee asset %s", o.FeeAsset)
	}
	testkit.EqualD(t, "USDT", srv.Balance("USDT"), "9500")
	testkit.EqualD(t, "BTC", srv.Balance("BTC"), "0.00999")
	b, err := a.Balance(context.Background(), "btc")
	if err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "BTC free", b.Free, "0.00999")

	// Selling pays the fee in USDT.
	o, err = a.PlaceOrder(context.Background(), spotMarket(exchange.SideSell, "0.005"))
	if err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "sell fee", o.Fee, "0.25")
	if o.FeeAsset != "USDT" || o.Status != exchange.StatusFilled {
		t.Errorf("sell %+v", o)
	}
	testkit.EqualD(t, "USDT after sell", srv.Balance("USDT"), "9749.75")
	testkit.EqualD(t, "BTC after sell", srv.Balance("BTC"), "0.00499")
}

func TestSpotLimitRestsLocksAndCancels(t *testing.T) {
	_, a := setup(t)
	ctx := context.Background()
	req := exchange.OrderRequest{ClientOrderID: cid(), Symbol: "BTC/USDT", Kind: exchange.Spot, Side: exchange.SideBuy,
		Type: exchange.Limit, Amount: testkit.D("0.1"), Price: testkit.D("40000.01")}
	o, err := a.PlaceOrder(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != exchange.StatusOpen || o.Type != exchange.Limit {
		t.Errorf("resting %+v", o)
	}
	b, _ := a.Balance(ctx, "USDT")
	testkit.EqualD(t, "free while resting", b.Free, "5999.999")
	testkit.EqualD(t, "locked while resting", b.Locked, "4000.001")
	c, err := a.CancelOrder(ctx, exchange.Spot, "BTC/USDT", req.ClientOrderID)
	if err != nil || c.Status != exchange.StatusCancelled {
		t.Fatalf("cancel %+v %v", c, err)
	}
	b, _ = a.Balance(ctx, "USDT")
	testkit.EqualD(t, "free after cancel", b.Free, "10000")
	// A finished order cannot be cancelled.
	c, err = a.CancelOrder(ctx, exchange.Spot, "BTC/USDT", req.ClientOrderID)
	code(t, err, errs.ExchangeError)
	if c.Status != exchange.StatusCancelled {
		t.Errorf("second cancel %+v", c)
	}
	_, err = a.CancelOrder(ctx, exchange.Spot, "BTC/USDT", "sg-unknown")
	if !errors.Is(err, exchange.ErrOrderNotFound) {
		t.Errorf("unknown cancel %v", err)
	}
}

func TestLinearMarketAndLimit(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	req := linear(exchange.SideBuy, exchange.Market, "0.01")
	o, err := a.PlaceOrder(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if srv.Leverage("BTCUSDT") != 5 {
		t.Errorf("leverage %d", srv.Leverage("BTCUSDT"))
	}
	if o.Status != exchange.StatusFilled || o.Kind != exchange.Futures || o.FeeAsset != "USDT" {
		t.Errorf("order %+v", o)
	}
	testkit.EqualD(t, "filled", o.FilledAmount, "0.01")
	testkit.EqualD(t, "avg", o.AvgPrice, "50000")
	testkit.EqualD(t, "fee", o.Fee, "0.5")
	size, entry, margin := srv.Position("BTCUSDT")
	testkit.EqualD(t, "size", size, "0.01")
	testkit.EqualD(t, "entry", entry, "50000")
	testkit.EqualD(t, "margin", margin, "100")
	b, _ := a.Balance(ctx, "USDT")
	testkit.EqualD(t, "free", b.Free, "9899.5")
	testkit.EqualD(t, "locked", b.Locked, "100")

	// A limit sell above the market rests, then fills when the price reaches it.
	lim := linear(exchange.SideSell, exchange.Limit, "0.01")
	lim.Price = testkit.D("51000")
	o, err = a.PlaceOrder(ctx, lim)
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != exchange.StatusOpen {
		t.Errorf("limit %+v", o)
	}
	srv.SetPrice("BTCUSDT", testkit.D("51000"))
	o, err = a.GetOrder(ctx, exchange.Futures, "BTC/USDT", lim.ClientOrderID)
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != exchange.StatusFilled || o.Type != exchange.Limit {
		t.Errorf("filled limit %+v", o)
	}
	testkit.EqualD(t, "limit avg", o.AvgPrice, "51000")
	testkit.EqualD(t, "limit fee", o.Fee, "0.51")
	size, _, _ = srv.Position("BTCUSDT")
	testkit.EqualD(t, "closed", size, "0")
	testkit.EqualD(t, "wallet", srv.Balance("USDT"), "10008.99")
}

func TestSetLeverage(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	if err := a.SetLeverage(ctx, "BTC/USDT", 20); err != nil || srv.Leverage("BTCUSDT") != 20 {
		t.Fatalf("set: %v, %d", err, srv.Leverage("BTCUSDT"))
	}
	// Not modified (110043) is success.
	if err := a.SetLeverage(ctx, "BTC/USDT", 20); err != nil || srv.Answered(110043) != 1 {
		t.Errorf("same leverage: %v (110043 answered %d)", err, srv.Answered(110043))
	}
	code(t, a.SetLeverage(ctx, "BTC/USDT", 0), errs.InvalidAmount)
	code(t, a.SetLeverage(ctx, "BTC/USDT", 101), errs.InvalidAmount)
	code(t, a.SetLeverage(ctx, "NOPE/USDT", 5), errs.InvalidSymbol)
	srv.FailNext(bybitfake.Fault{Path: "/v5/position/set-leverage", RetCode: 10001, RetMsg: "params error: leverage invalid"})
	code(t, a.SetLeverage(ctx, "BTC/USDT", 30), errs.InvalidAmount)
}

func TestReduceOnly(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	exit := linear(exchange.SideSell, exchange.Market, "0.004")
	exit.ReduceOnly = true
	_, err := a.PlaceOrder(ctx, exit)
	code(t, err, errs.InvalidAmount) // 110017: no position to reduce
	if srv.OrderCount() != 0 {
		t.Error("refused order exists")
	}
	if _, err := a.PlaceOrder(ctx, linear(exchange.SideBuy, exchange.Market, "0.01")); err != nil {
		t.Fatal(err)
	}
	exit.ClientOrderID = cid()
	o, err := a.PlaceOrder(ctx, exit)
	if err != nil {
		t.Fatal(err)
	}
	fo, _ := srv.Order(exit.ClientOrderID)
	if !fo.ReduceOnly {
		t.Error("reduceOnly not sent")
	}
	testkit.EqualD(t, "reduced fill", o.FilledAmount, "0.004")
	size, _, _ := srv.Position("BTCUSDT")
	testkit.EqualD(t, "size", size, "0.006")
	// Spot has no reduce-only: a spot sell is sent without it.
	if _, err := a.PlaceOrder(ctx, spotMarket(exchange.SideBuy, "0.01")); err != nil {
		t.Fatal(err)
	}
	sell := spotMarket(exchange.SideSell, "0.001")
	sell.ReduceOnly = true
	if _, err := a.PlaceOrder(ctx, sell); err != nil {
		t.Fatal(err)
	}
	if fo, _ := srv.Order(sell.ClientOrderID); fo.ReduceOnly {
		t.Error("spot order sent reduce-only")
	}
}

func TestLinearStopLossTakeProfit(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	if _, err := a.PlaceOrder(ctx, linear(exchange.SideBuy, exchange.Market, "0.01")); err != nil {
		t.Fatal(err)
	}
	sl := linear(exchange.SideSell, exchange.StopLoss, "0.01")
	sl.StopPrice = testkit.D("48000")
	o, err := a.PlaceOrder(ctx, sl)
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != exchange.StatusOpen || o.Type != exchange.StopLoss {
		t.Errorf("stop-loss %+v", o)
	}
	fo, _ := srv.Order(sl.ClientOrderID)
	if fo.TriggerDirection != 2 || !fo.ReduceOnly || !fo.CloseOnTrigger || fo.OrderType != "Market" ||
		!fo.TriggerPrice.Equal(testkit.D("48000")) || fo.Status != "Untriggered" {
		t.Errorf("stop-loss sent %+v", fo)
	}
	tp := linear(exchange.SideSell, exchange.TakeProfit, "0.01")
	tp.StopPrice = testkit.D("52000")
	o, err = a.PlaceOrder(ctx, tp)
	if err != nil {
		t.Fatal(err)
	}
	if fo, _ := srv.Order(tp.ClientOrderID); fo.TriggerDirection != 1 || o.Type != exchange.TakeProfit {
		t.Errorf("take-profit sent %+v, got %+v", fo, o)
	}
	// Read back without the request, the types are recognised.
	if o, _ := a.GetOrder(ctx, exchange.Futures, "BTC/USDT", sl.ClientOrderID); o.Type != exchange.StopLoss {
		t.Errorf("read stop-loss %+v", o)
	}
	if o, _ := a.GetOrder(ctx, exchange.Futures, "BTC/USDT", tp.ClientOrderID); o.Type != exchange.TakeProfit {
		t.Errorf("read take-profit %+v", o)
	}
	// The price falls through the stop: it fills and closes the position.
	srv.SetPrice("BTCUSDT", testkit.D("47900"))
	o, err = a.GetOrder(ctx, exchange.Futures, "BTC/USDT", sl.ClientOrderID)
	if err != nil || o.Status != exchange.StatusFilled {
		t.Fatalf("triggered stop %+v %v", o, err)
	}
	testkit.EqualD(t, "stop avg", o.AvgPrice, "47900")
	size, _, _ := srv.Position("BTCUSDT")
	testkit.EqualD(t, "closed", size, "0")
	// The take-profit is left over: cancel it.
	o, err = a.CancelOrder(ctx, exchange.Futures, "BTC/USDT", tp.ClientOrderID)
	if err != nil || o.Status != exchange.StatusCancelled {
		t.Errorf("cancel take-profit %+v %v", o, err)
	}
	// A trigger on the wrong side of the price is INVALID_PRICE (110093).
	bad := linear(exchange.SideSell, exchange.StopLoss, "0.01")
	bad.StopPrice = testkit.D("49000")
	_, err = a.PlaceOrder(ctx, bad)
	code(t, err, errs.InvalidPrice)
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
	fo, _ := srv.Order(sl.ClientOrderID)
	if fo.OrderFilter != "StopOrder" || fo.Status != "Untriggered" || o.Status != exchange.StatusOpen {
		t.Errorf("sent %+v got %+v", fo, o)
	}
	if o, _ := a.GetOrder(ctx, exchange.Spot, "BTC/USDT", sl.ClientOrderID); o.Type != exchange.StopLoss {
		t.Errorf("read back %+v", o)
	}
	// Spot conditional orders are cancelled with orderFilter=StopOrder.
	o, err = a.CancelOrder(ctx, exchange.Spot, "BTC/USDT", sl.ClientOrderID)
	if err != nil || o.Status != exchange.StatusCancelled {
		t.Errorf("cancel %+v %v", o, err)
	}
	tp := spotMarket(exchange.SideSell, "0.005")
	tp.Type, tp.StopPrice = exchange.TakeProfit, testkit.D("55000")
	if _, err := a.PlaceOrder(ctx, tp); err != nil {
		t.Fatal(err)
	}
	srv.SetPrice("BTCUSDT", testkit.D("55000"))
	o, err = a.GetOrder(ctx, exchange.Spot, "BTC/USDT", tp.ClientOrderID)
	if err != nil || o.Status != exchange.StatusFilled || o.Type != exchange.TakeProfit {
		t.Errorf("take-profit %+v %v", o, err)
	}
	testkit.EqualD(t, "proceeds fee", o.Fee, "0.275")
}

func TestGetOrder(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	req := spotMarket(exchange.SideBuy, "0.002")
	placed, err := a.PlaceOrder(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	// After a Bybit restart finished orders are only in the history.
	srv.ForgetClosed()
	o, err := a.GetOrder(ctx, exchange.Spot, "BTC/USDT", req.ClientOrderID)
	if err != nil {
		t.Fatal(err)
	}
	if o.ID != placed.ID || o.Status != exchange.StatusFilled || srv.Calls("/v5/order/history") == 0 {
		t.Errorf("from history %+v", o)
	}
	testkit.EqualD(t, "filled", o.FilledAmount, "0.002")
	if _, err := a.GetOrder(ctx, exchange.Spot, "BTC/USDT", "sg-none"); !errors.Is(err, exchange.ErrOrderNotFound) {
		t.Errorf("unknown: %v", err)
	}
	// Another symbol's order is not this one.
	if _, err := a.GetOrder(ctx, exchange.Spot, "ETH/USDT", req.ClientOrderID); !errors.Is(err, exchange.ErrOrderNotFound) {
		t.Errorf("other symbol: %v", err)
	}
}

func TestClientOrderIDBybitCannotTake(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	req := spotMarket(exchange.SideBuy, "0.001")
	req.ClientOrderID = "signal:42/entry.1"
	o, err := a.PlaceOrder(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if o.ClientOrderID != req.ClientOrderID {
		t.Errorf("client order ID %q", o.ClientOrderID)
	}
	link := bybit.LinkID(req.ClientOrderID)
	if srv.OrdersCreated(link) != 1 {
		t.Errorf("link %s", link)
	}
	if g, err := a.GetOrder(ctx, exchange.Spot, "BTC/USDT", req.ClientOrderID); err != nil || g.ID != o.ID {
		t.Errorf("get %+v %v", g, err)
	}
}

// --- never a duplicate ---

func TestDuplicateClientOrderIDOneOrder(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	for _, req := range []exchange.OrderRequest{spotMarket(exchange.SideBuy, "0.01"), linear(exchange.SideBuy, exchange.Market, "0.01")} {
		first, err := a.PlaceOrder(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		again, err := a.PlaceOrder(ctx, req)
		if err != nil {
			t.Fatal(err)
		}
		if again.ID != first.ID || srv.OrdersCreated(req.ClientOrderID) != 1 {
			t.Errorf("%s: %s then %s, %d orders", req.Kind, first.ID, again.ID, srv.OrdersCreated(req.ClientOrderID))
		}
		testkit.EqualD(t, "filled", again.FilledAmount, "0.01")
	}
	if srv.Answered(170141) != 1 || srv.Answered(110072) != 1 {
		t.Errorf("duplicates answered: spot %d linear %d", srv.Answered(170141), srv.Answered(110072))
	}
	// The same ID for a different order is refused: this request was not placed.
	req := spotMarket(exchange.SideBuy, "0.01")
	if _, err := a.PlaceOrder(ctx, req); err != nil {
		t.Fatal(err)
	}
	req.Amount = testkit.D("0.02")
	_, err := a.PlaceOrder(ctx, req)
	code(t, err, errs.ExchangeError)
	if srv.OrdersCreated(req.ClientOrderID) != 1 {
		t.Error("second order")
	}
}

func TestDropAfterApplyOneOrder(t *testing.T) {
	srv, a := setup(t)
	for _, req := range []exchange.OrderRequest{spotMarket(exchange.SideBuy, "0.01"), linear(exchange.SideBuy, exchange.Market, "0.01")} {
		if _, err := a.Markets(context.Background(), req.Kind); err != nil {
			t.Fatal(err)
		}
		creates := srv.Calls("/v5/order/create")
		srv.FailNext(bybitfake.Fault{Path: "/v5/order/create", DropAfterApply: true})
		o, err := a.PlaceOrder(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if o.Status != exchange.StatusFilled || srv.OrdersCreated(req.ClientOrderID) != 1 {
			t.Errorf("%s: %+v, %d orders", req.Kind, o, srv.OrdersCreated(req.ClientOrderID))
		}
		// It was looked up, not sent again.
		if n := srv.Calls("/v5/order/create") - creates; n != 1 {
			t.Errorf("%s: create sent %d times", req.Kind, n)
		}
	}
}

func TestServerErrorOnCreateRetried(t *testing.T) {
	srv, a := setup(t)
	req := spotMarket(exchange.SideBuy, "0.01")
	srv.FailNext(bybitfake.Fault{Path: "/v5/order/create", HTTPStatus: http.StatusBadGateway})
	o, err := a.PlaceOrder(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != exchange.StatusFilled || srv.OrdersCreated(req.ClientOrderID) != 1 || srv.Calls("/v5/order/create") != 2 {
		t.Errorf("%+v, %d orders, %d creates", o, srv.OrdersCreated(req.ClientOrderID), srv.Calls("/v5/order/create"))
	}
	// Looked up before the second create.
	if srv.Calls("/v5/order/realtime") == 0 || srv.Calls("/v5/order/history") == 0 {
		t.Error("not looked up before retrying")
	}
	// A back-end time-out retCode is the same "outcome unknown".
	req = spotMarket(exchange.SideBuy, "0.01")
	srv.FailNext(bybitfake.Fault{Path: "/v5/order/create", RetCode: 10016, RetMsg: "Server error."})
	if _, err := a.PlaceOrder(context.Background(), req); err != nil || srv.OrdersCreated(req.ClientOrderID) != 1 {
		t.Errorf("10016: %v, %d orders", err, srv.OrdersCreated(req.ClientOrderID))
	}
}

func TestDelayedCreateLandsOnce(t *testing.T) {
	srv := bybitfake.New()
	a := account(t, srv, bybit.Connector{Timeout: time.Second})
	req := spotMarket(exchange.SideBuy, "0.01")
	if _, err := a.Markets(context.Background(), exchange.Spot); err != nil {
		t.Fatal(err)
	}
	// The first create is held past its attempt and applied late; the adapter looks, finds
	// nothing yet, and sends it again. Whichever lands second is refused as a duplicate.
	srv.FailNext(bybitfake.Fault{Path: "/v5/order/create", Delay: 700 * time.Millisecond})
	start := time.Now()
	o, err := a.PlaceOrder(context.Background(), req)
	if took := time.Since(start); took > 1100*time.Millisecond {
		t.Errorf("took %s", took)
	}
	srv.Close() // waits for the held request
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != exchange.StatusFilled || srv.OrdersCreated(req.ClientOrderID) != 1 || srv.OrderCount() != 1 {
		t.Errorf("%+v, %d orders", o, srv.OrdersCreated(req.ClientOrderID))
	}
	// Both creates reached Bybit; the late one was refused as a duplicate.
	if srv.Calls("/v5/order/create") != 2 || srv.Answered(170141) != 1 {
		t.Errorf("%d creates, %d duplicates", srv.Calls("/v5/order/create"), srv.Answered(170141))
	}
	testkit.EqualD(t, "one fill", srv.Balance("USDT"), "9500")
}

func TestCallTimeoutBounded(t *testing.T) {
	srv := bybitfake.New()
	a := account(t, srv, bybit.Connector{}) // the default 2 s
	ctx := context.Background()
	if _, err := a.Markets(ctx, exchange.Spot); err != nil {
		t.Fatal(err)
	}
	srv.FailNext(bybitfake.Fault{Delay: 2200 * time.Millisecond, Times: 1000})
	start := time.Now()
	_, err := a.Balance(ctx, "USDT")
	took := time.Since(start)
	if took > bybit.DefaultTimeout+150*time.Millisecond {
		t.Errorf("balance took %s", took)
	}
	code(t, err, errs.ExchangeError)
	if !errors.Is(err, exchange.ErrUnreachable) {
		t.Errorf("not unreachable: %v", err)
	}

	req := spotMarket(exchange.SideBuy, "0.01")
	start = time.Now()
	_, err = a.PlaceOrder(ctx, req)
	took = time.Since(start)
	if took > bybit.DefaultTimeout+150*time.Millisecond {
		t.Errorf("place order took %s", took)
	}
	// Outcome unknown: untyped, so that the executor looks it up instead of recording a
	// rejection.
	if _, typed := errs.As(err); typed || !errors.Is(err, bybit.ErrOrderUnconfirmed) || !errors.Is(err, exchange.ErrUnreachable) {
		t.Errorf("unconfirmed: %v", err)
	}
	noSecret(t, err)
	srv.Close() // the held creates land now; one order at most
	if n := srv.OrdersCreated(req.ClientOrderID); n != 1 {
		t.Errorf("%d orders", n)
	}

	// A caller's shorter deadline is kept.
	srv2 := bybitfake.New()
	defer srv2.Close()
	a2 := account(t, srv2, bybit.Connector{Timeout: 300 * time.Millisecond})
	srv2.FailNext(bybitfake.Fault{Delay: time.Second, Times: 100})
	start = time.Now()
	_, err = a2.Permissions(ctx)
	if took := time.Since(start); took > 450*time.Millisecond || !errors.Is(err, exchange.ErrUnreachable) {
		t.Errorf("permissions: %s %v", took, err)
	}
}

// --- errors ---

func TestServerErrorsRetriedOnReads(t *testing.T) {
	srv, a := setup(t)
	srv.FailNext(bybitfake.Fault{Path: "/v5/account/wallet-balance", HTTPStatus: http.StatusServiceUnavailable, Times: 2})
	b, err := a.Balance(context.Background(), "USDT")
	if err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "free", b.Free, "10000")
	if n := srv.Calls("/v5/account/wallet-balance"); n != 3 {
		t.Errorf("%d attempts", n)
	}
	srv.FailNext(bybitfake.Fault{Path: "/v5/account/wallet-balance", HTTPStatus: http.StatusBadGateway, Times: 10})
	_, err = a.Balance(context.Background(), "USDT")
	code(t, err, errs.ExchangeError)
	if !errors.Is(err, exchange.ErrUnreachable) || srv.Calls("/v5/account/wallet-balance") != 6 {
		t.Errorf("bounded retries: %v, %d attempts", err, srv.Calls("/v5/account/wallet-balance"))
	}
}

func TestRateLimit(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	srv.FailNext(bybitfake.Fault{Path: "/v5/account/wallet-balance", RetCode: 10006, RetMsg: "Too many visits!", ResetIn: 1500 * time.Millisecond})
	_, err := a.Balance(ctx, "USDT")
	e := code(t, err, errs.RateLimited)
	if e.RetryAfter < 1200*time.Millisecond || e.RetryAfter > 1500*time.Millisecond {
		t.Errorf("RetryAfter %s", e.RetryAfter)
	}
	if srv.Calls("/v5/account/wallet-balance") != 1 {
		t.Error("a rate-limited call was retried")
	}
	srv.FailNext(bybitfake.Fault{Path: "/v5/order/create", HTTPStatus: http.StatusForbidden})
	req := spotMarket(exchange.SideBuy, "0.01")
	_, err = a.PlaceOrder(ctx, req)
	e = code(t, err, errs.RateLimited)
	if e.RetryAfter != 10*time.Minute || srv.OrdersCreated(req.ClientOrderID) != 0 {
		t.Errorf("403: RetryAfter %s", e.RetryAfter)
	}
	srv.FailNext(bybitfake.Fault{Path: "/v5/user/query-api", HTTPStatus: http.StatusForbidden})
	_, err = a.Permissions(ctx)
	if !errors.Is(err, exchange.ErrUnreachable) {
		t.Errorf("403 on permissions is not unreachable: %v", err)
	}
	srv.FailNext(bybitfake.Fault{Path: "/v5/order/create", HTTPStatus: http.StatusTooManyRequests})
	_, err = a.PlaceOrder(ctx, spotMarket(exchange.SideBuy, "0.01"))
	if e := code(t, err, errs.RateLimited); e.RetryAfter != time.Second {
		t.Errorf("429: RetryAfter %s", e.RetryAfter)
	}
}

// TestErrorMapping: every row of the mapping, injected on order/create; none places an
// order, none leaks a credential.
func TestErrorMapping(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	for _, c := range []struct {
		ret  int
		msg  string
		want errs.Code
	}{
		{110004, "Wallet balance is insufficient", errs.InsufficientBalance},
		{110007, "ab not enough for new order", errs.InsufficientBalance},
		{110012, "Insufficient available balance.", errs.InsufficientBalance},
		{110044, "Available margin is insufficient.", errs.InsufficientBalance},
		{110045, "Wallet balance is insufficient.", errs.InsufficientBalance},
		{170131, "Insufficient balance.", errs.InsufficientBalance},
		{110017, "Reduce-only rule not satisfied", errs.InvalidAmount},
		{110094, "Order does not meet minimum order value 5USDT", errs.InvalidAmount},
		{170124, "Order amount too large.", errs.InvalidAmount},
		{170135, "Order quantity exceeded upper limit.", errs.InvalidAmount},
		{170136, "Order quantity lower than the minimum.", errs.InvalidAmount},
		{170137, "Order volume decimal too long", errs.InvalidAmount},
		{170140, "Transaction amount lower than the minimum.", errs.InvalidAmount},
		{170148, "Market order amount decimal too long", errs.InvalidAmount},
		{10001, "params error: Qty invalid", errs.InvalidAmount},
		{10001, "The number of contracts exceeds minimum limit allowed", errs.InvalidAmount},
		{110003, "Order price exceeds the allowable range.", errs.InvalidPrice},
		{170132, "Order price too high.", errs.InvalidPrice},
		{170133, "Order price lower than the minimum.", errs.InvalidPrice},
		{170134, "Order price decimal too long.", errs.InvalidPrice},
		{110092, "expect Rising, but trigger_price[1] <= current[2]", errs.InvalidPrice},
		{10001, "params error: price invalid", errs.InvalidPrice},
		{170121, "Invalid symbol.", errs.InvalidSymbol},
		{10029, "The requested symbol is invalid, please check symbol whitelist", errs.InvalidSymbol},
		{10001, "params error: symbol invalid", errs.InvalidSymbol},
		{10006, "Too many visits!", errs.RateLimited},
		{170005, "Too many new orders; current limit is 20 orders per 1s.", errs.RateLimited},
		{10003, "API key is invalid.", errs.ExchangeDisconnected},
		{10004, "error sign! origin_string[1700000000000" + bybitfake.APIKey + "5000{}]", errs.ExchangeDisconnected},
		{33004, "Your api key has expired", errs.ExchangeDisconnected},
		{10010, "Unmatched IP, please check your API key's bound IP addresses.", errs.ExchangeDisconnected},
		{10005, "Permission denied, please check your API key permissions.", errs.ExchangeDisconnected},
		{110066, "Trading is currently not allowed.", errs.ExchangeError},
		{10001, "position idx not match position mode", errs.ExchangeError},
	} {
		srv.FailNext(bybitfake.Fault{Path: "/v5/order/create", RetCode: c.ret, RetMsg: c.msg})
		req := spotMarket(exchange.SideBuy, "0.01")
		_, err := a.PlaceOrder(ctx, req)
		e := code(t, err, c.want)
		if srv.OrdersCreated(req.ClientOrderID) != 0 {
			t.Errorf("%d: an order was placed", c.ret)
		}
		if !strings.Contains(e.Message, strconv.Itoa(c.ret)) {
			t.Errorf("%d: message %q lacks the retCode", c.ret, e.Message)
		}
		switch c.want {
		case errs.InsufficientBalance:
			if e.Details["asset"] != "USDT" || !e.Details["available"].(decimal.Decimal).Equal(testkit.D("10000")) ||
				!e.Details["required"].(decimal.Decimal).Equal(testkit.D("500")) {
				t.Errorf("%d: details %v", c.ret, e.Details)
			}
		case errs.ExchangeError:
			if !strings.Contains(e.Message, c.msg) {
				t.Errorf("%d: message %q lacks Bybit's", c.ret, e.Message)
			}
		case errs.RateLimited:
			if e.RetryAfter <= 0 {
				t.Errorf("%d: no RetryAfter", c.ret)
			}
		}
		if c.ret == 10003 || c.ret == 10004 || c.ret == 33004 || c.ret == 10010 {
			if !errors.Is(err, exchange.ErrInvalidCredentials) {
				t.Errorf("%d: not ErrInvalidCredentials", c.ret)
			}
		}
	}
}

// TestRefusalsFromTheFake: the same mapping through the fake's own validation.
func TestRefusalsFromTheFake(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	_, err := a.PlaceOrder(ctx, spotMarket(exchange.SideBuy, "1")) // 50000 USDT
	e := code(t, err, errs.InsufficientBalance)
	if e.Details["asset"] != "USDT" || !e.Details["available"].(decimal.Decimal).Equal(testkit.D("10000")) ||
		!e.Details["required"].(decimal.Decimal).Equal(testkit.D("50000")) {
		t.Errorf("details %v", e.Details)
	}
	if !strings.Contains(e.Message, "50000 required, 10000 available") {
		t.Errorf("message %q", e.Message)
	}
	_, err = a.PlaceOrder(ctx, spotMarket(exchange.SideSell, "0.5")) // no BTC
	e = code(t, err, errs.InsufficientBalance)
	if e.Details["asset"] != "BTC" || !e.Details["required"].(decimal.Decimal).Equal(testkit.D("0.5")) {
		t.Errorf("sell details %v", e.Details)
	}
	big := linear(exchange.SideBuy, exchange.Market, "2") // 100000 notional, 20000 margin at 5x
	_, err = a.PlaceOrder(ctx, big)
	e = code(t, err, errs.InsufficientBalance)
	if !e.Details["required"].(decimal.Decimal).Equal(testkit.D("20000")) {
		t.Errorf("linear details %v", e.Details)
	}
	code(t, errOf(a.PlaceOrder(ctx, spotMarket(exchange.SideBuy, "0.0000001"))), errs.InvalidAmount) // 170137
	code(t, errOf(a.PlaceOrder(ctx, spotMarket(exchange.SideBuy, "0.00001"))), errs.InvalidAmount)   // 170136
	code(t, errOf(a.PlaceOrder(ctx, linear(exchange.SideBuy, exchange.Market, "0.0001"))), errs.InvalidAmount)
	code(t, errOf(a.PlaceOrder(ctx, linear(exchange.SideBuy, exchange.Market, "0.0015"))), errs.InvalidAmount)
	lim := spotMarket(exchange.SideBuy, "0.01")
	lim.Type, lim.Price = exchange.Limit, testkit.D("40000.001")
	code(t, errOf(a.PlaceOrder(ctx, lim)), errs.InvalidPrice) // 170134
	unknown := spotMarket(exchange.SideBuy, "0.01")
	unknown.Symbol = "NOPE/USDT"
	code(t, errOf(a.PlaceOrder(ctx, unknown)), errs.InvalidSymbol)
	code(t, errOf(a.PlaceOrder(ctx, spotMarket(exchange.SideBuy, "0"))), errs.InvalidAmount)
	if srv.OrderCount() != 0 {
		t.Errorf("%d orders placed", srv.OrderCount())
	}
}

func errOf(_ exchange.Order, err error) error { return err }

// --- permissions ---

func TestPermissions(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		info bybitfake.KeyInfo
		want []string
	}{
		{"trade only", bybitfake.TradeOnly(), []string{"futures", "read", "spot"}},
		{"withdraw", bybitfake.KeyInfo{Permissions: map[string][]string{"Spot": {"SpotTrade"}, "Wallet": {"Withdraw"}}},
			[]string{"read", "spot", "withdraw"}},
		{"account transfer", bybitfake.KeyInfo{Permissions: map[string][]string{"ContractTrade": {"Order", "Position"}, "Wallet": {"AccountTransfer"}}},
			[]string{"futures", "read", "transfer"}},
		{"sub-member transfer", bybitfake.KeyInfo{Permissions: map[string][]string{"Wallet": {"SubMemberTransfer"}}},
			[]string{"read", "transfer"}},
		{"sub-account transfer list", bybitfake.KeyInfo{Permissions: map[string][]string{"Wallet": {"SubMemberTransferList"}}},
			[]string{"read", "transfer"}},
		{"all wallet", bybitfake.KeyInfo{Permissions: map[string][]string{"Wallet": {"AccountTransfer", "SubMemberTransfer", "Withdraw"}}},
			[]string{"read", "transfer", "withdraw"}},
		// Derivatives [DerivativesTrade] is on every unified account's key: it is no
		// contract permission.
		{"derivatives only", bybitfake.KeyInfo{Permissions: map[string][]string{"Derivatives": {"DerivativesTrade"}}},
			[]string{"read"}},
		{"unified spot key", bybitfake.SpotOnly(), []string{"read", "spot"}},
		{"contract orders without positions", bybitfake.KeyInfo{Permissions: map[string][]string{"ContractTrade": {"Order"}}},
			[]string{"read"}},
		{"read-only", bybitfake.KeyInfo{ReadOnly: true, Permissions: map[string][]string{"Spot": {"SpotTrade"}, "ContractTrade": {"Order"}}},
			[]string{"read"}},
		{"read-only that could withdraw", bybitfake.KeyInfo{ReadOnly: true, Permissions: map[string][]string{"Wallet": {"Withdraw"}}},
			[]string{"read", "withdraw"}},
		{"IP bound", bybitfake.KeyInfo{Permissions: map[string][]string{"Spot": {"SpotTrade"}}, IPs: []string{"203.0.113.7"}},
			[]string{"ipRestricted", "read", "spot"}},
		{"nothing", bybitfake.KeyInfo{}, []string{"read"}},
	} {
		srv.SetPermissions(c.info)
		p, err := a.Permissions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(p.List(), ","); got != strings.Join(c.want, ",") {
			t.Errorf("%s: %s, want %v", c.name, got, c.want)
		}
	}
	// A read-only key cannot trade.
	srv.SetPermissions(bybitfake.KeyInfo{ReadOnly: true})
	_, err := a.PlaceOrder(ctx, spotMarket(exchange.SideBuy, "0.01"))
	code(t, err, errs.ExchangeDisconnected)
}

func TestPermissionsErrors(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	for _, f := range []bybitfake.Fault{
		{RetCode: 10003, RetMsg: "API key is invalid."},
		{RetCode: 10004, RetMsg: "error sign! origin_string[x" + bybitfake.APIKey + "]"},
		{RetCode: 33004, RetMsg: "Your api key has expired"},
	} {
		f.Path = "/v5/user/query-api"
		srv.FailNext(f)
		_, err := a.Permissions(ctx)
		if !errors.Is(err, exchange.ErrInvalidCredentials) || errors.Is(err, exchange.ErrUnreachable) {
			t.Errorf("%d: %v", f.RetCode, err)
		}
		noSecret(t, err)
	}
	srv.FailNext(bybitfake.Fault{Path: "/v5/user/query-api", HTTPStatus: http.StatusInternalServerError, Times: 3})
	_, err := a.Permissions(ctx)
	if !errors.Is(err, exchange.ErrUnreachable) || errors.Is(err, exchange.ErrInvalidCredentials) {
		t.Errorf("5xx: %v", err)
	}
	srv.Close()
	_, err = a.Permissions(ctx)
	if !errors.Is(err, exchange.ErrUnreachable) {
		t.Errorf("closed: %v", err)
	}
}

// --- benchmark ---

func BenchmarkPlaceOrder(b *testing.B) {
	srv := bybitfake.New()
	defer srv.Close()
	srv.SetBalance("USDT", testkit.D("1000000000"))
	a := account(b, srv, bybit.Connector{})
	ctx := context.Background()
	if _, err := a.Markets(ctx, exchange.Spot); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		req := exchange.OrderRequest{ClientOrderID: fmt.Sprintf("sg-bench-%d", i), Symbol: "BTC/USDT",
			Kind: exchange.Spot, Side: exchange.SideBuy, Type: exchange.Market, Amount: testkit.D("0.001")}
		if _, err := a.PlaceOrder(ctx, req); err != nil {
			b.Fatal(err)
		}
	}
}
