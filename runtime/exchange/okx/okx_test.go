package okx_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
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
	"github.com/sigops/sigops/runtime/exchange/okx"
	"github.com/sigops/sigops/runtime/exchange/okx/okxfake"
)

// secrets are the strings no error may contain.
var secrets = []string{okxfake.APIKey, okxfake.APISecret, okxfake.Passphrase, "wrong-secret-zz9", "wrong-pass-zz9"}

func noSecret(t *testing.T, err error) {
	t.Helper()
	venuetest.NoSecret(t, err, secrets...)
}

func creds() exchange.Credentials {
	return exchange.Credentials{APIKey: okxfake.APIKey, APISecret: okxfake.APISecret, Passphrase: okxfake.Passphrase}
}

func open(t testing.TB, srv *okxfake.Server, c okx.Connector, cr exchange.Credentials, demo bool) *okx.Account {
	t.Helper()
	okx.ResetCaches()
	a, err := c.Open(cr, exchange.Endpoints{Spot: srv.URL(), Testnet: demo})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func account(t testing.TB, srv *okxfake.Server, c okx.Connector) *okx.Account {
	return open(t, srv, c, creds(), false)
}

func setup(t *testing.T) (*okxfake.Server, *okx.Account) {
	t.Helper()
	srv := okxfake.New()
	t.Cleanup(srv.Close)
	return srv, account(t, srv, okx.Connector{})
}

func code(t *testing.T, err error, want errs.Code) *errs.Error {
	t.Helper()
	return venuetest.Code(t, err, want, secrets...)
}

var (
	idMu sync.Mutex
	ids  int
)

// cid is an executor-style client order ID: "sg-" and 32 hex digits of SHA-256.
func cid() string {
	idMu.Lock()
	defer idMu.Unlock()
	ids++
	sum := sha256.Sum256([]byte(strconv.Itoa(ids)))
	return "sg-" + hex.EncodeToString(sum[:])[:32]
}

func spotMarket(side exchange.Side, amount string) exchange.OrderRequest {
	return exchange.OrderRequest{ClientOrderID: cid(), Symbol: "BTC/USDT", Kind: exchange.Spot, Side: side,
		Type: exchange.Market, Amount: testkit.D(amount)}
}

func swap(side exchange.Side, typ exchange.OrderType, amount string) exchange.OrderRequest {
	return exchange.OrderRequest{ClientOrderID: cid(), Symbol: "BTC/USDT", Kind: exchange.Futures, Side: side,
		Type: typ, Amount: testkit.D(amount), Leverage: 5}
}

func errOf(_ exchange.Order, err error) error { return err }

// --- signing and credentials ---

func TestSigningAccepted(t *testing.T) {
	srv, a := setup(t)
	b, err := a.Balance(context.Background(), "USDT")
	if err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "free", b.Free, "10000")
	testkit.EqualD(t, "locked", b.Locked, "0")
	if srv.Answered(50113) != 0 || srv.Answered(50102) != 0 {
		t.Error("the fake refused a request")
	}
}

func TestSigningRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		cr   exchange.Credentials
		code int
	}{
		{"bad secret", exchange.Credentials{APIKey: okxfake.APIKey, APISecret: "wrong-secret-zz9", Passphrase: okxfake.Passphrase}, 50113},
		{"bad passphrase", exchange.Credentials{APIKey: okxfake.APIKey, APISecret: okxfake.APISecret, Passphrase: "wrong-pass-zz9"}, 50105},
		{"unknown key", exchange.Credentials{APIKey: "nobody", APISecret: okxfake.APISecret, Passphrase: okxfake.Passphrase}, 50111},
	} {
		t.Run(c.name, func(t *testing.T) {
			srv := okxfake.New()
			defer srv.Close()
			a := open(t, srv, okx.Connector{}, c.cr, false)
			_, err := a.Balance(context.Background(), "USDT")
			code(t, err, errs.ExchangeDisconnected)
			if !errors.Is(err, exchange.ErrInvalidCredentials) || srv.Answered(c.code) != 1 {
				t.Errorf("%v (code %d answered %d times)", err, c.code, srv.Answered(c.code))
			}
			_, err = a.Permissions(context.Background())
			if !errors.Is(err, exchange.ErrInvalidCredentials) || errors.Is(err, exchange.ErrUnreachable) {
				t.Errorf("permissions: %v", err)
			}
			noSecret(t, err)
			_, err = a.PlaceOrder(context.Background(), spotMarket(exchange.SideBuy, "0.001"))
			code(t, err, errs.ExchangeDisconnected)
			if srv.OrderCount() != 0 {
				t.Error("an order was placed")
			}
		})
	}
}

func TestConnectNeedsPassphrase(t *testing.T) {
	for _, cr := range []exchange.Credentials{
		{APIKey: "k", APISecret: "s"},
		{APIKey: "k", Passphrase: "p"},
		{APISecret: "s", Passphrase: "p"},
	} {
		_, err := okx.Connector{}.Connect(cr, exchange.Endpoints{})
		if !errors.Is(err, exchange.ErrInvalidCredentials) || errs.CodeOf(err) != errs.ExchangeDisconnected {
			t.Errorf("%#v: %v", cr, err)
		}
	}
	if (okx.Connector{}).Name() != "okx" {
		t.Error("name")
	}
}

// Demo trading: a demo key works only with the x-simulated-trading header
// (Endpoints.Testnet), a production key only without it; the wrong one is 50101, a refused
// key.
func TestDemoTrading(t *testing.T) {
	srv := okxfake.New()
	defer srv.Close()
	demo := okxfake.TradeOnly()
	demo.Demo = true
	srv.SetPermissions(demo)
	ctx := context.Background()
	a := open(t, srv, okx.Connector{}, creds(), true)
	if _, err := a.Balance(ctx, "USDT"); err != nil {
		t.Fatalf("demo key with the header: %v", err)
	}
	if _, err := a.PlaceOrder(ctx, spotMarket(exchange.SideBuy, "0.01")); err != nil {
		t.Fatalf("demo order: %v", err)
	}
	live := open(t, srv, okx.Connector{}, creds(), false)
	_, err := live.Balance(ctx, "USDT")
	e := code(t, err, errs.ExchangeDisconnected)
	if !errors.Is(err, exchange.ErrInvalidCredentials) || srv.Answered(50101) != 1 || !strings.Contains(e.Message, "testnet") {
		t.Errorf("demo key without the header: %v", err)
	}
	srv.SetPermissions(okxfake.TradeOnly())
	if _, err := a.Balance(ctx, "USDT"); !errors.Is(err, exchange.ErrInvalidCredentials) {
		t.Errorf("production key with the header: %v", err)
	}
}

func TestSkewedClockResyncs(t *testing.T) {
	for _, skew := range []time.Duration{-45 * time.Second, 40 * time.Second} {
		srv := okxfake.New()
		a := account(t, srv, okx.Connector{Now: func() time.Time { return time.Now().Add(skew) }})
		b, err := a.Balance(context.Background(), "USDT")
		if err != nil {
			t.Fatalf("skew %s: %v", skew, err)
		}
		testkit.EqualD(t, "free", b.Free, "10000")
		if srv.Answered(50102) != 1 || srv.Calls("/api/v5/public/time") != 1 {
			t.Errorf("skew %s: 50102 answered %d, time asked %d", skew, srv.Answered(50102), srv.Calls("/api/v5/public/time"))
		}
		if _, err := a.Balance(context.Background(), "USDT"); err != nil || srv.Answered(50102) != 1 {
			t.Errorf("skew %s: second call %v, 50102 answered %d", skew, err, srv.Answered(50102))
		}
		srv.Close()
	}
}

// --- markets ---

func symbols(ms []exchange.MarketInfo) string {
	var names []string
	for _, m := range ms {
		names = append(names, m.Symbol)
	}
	return strings.Join(names, ",")
}

func TestMarkets(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	spot, err := a.Markets(ctx, exchange.Spot)
	if err != nil {
		t.Fatal(err)
	}
	if got := symbols(spot); got != "BTC/USDT,ETH/USDT" {
		t.Errorf("spot markets %s", got)
	}
	btc := spot[0]
	if btc.Base != "BTC" || btc.Quote != "USDT" || btc.Kind != exchange.Spot {
		t.Errorf("spot BTC %+v", btc)
	}
	testkit.EqualD(t, "spot tick", btc.TickSize, "0.1")
	testkit.EqualD(t, "spot step", btc.StepSize, "0.00000001")
	testkit.EqualD(t, "spot minQty", btc.MinQty, "0.00001")

	sw, err := a.Markets(ctx, exchange.Futures)
	if err != nil {
		t.Fatal(err)
	}
	// The inverse BTC-USD-SWAP and the USDC-settled swap are left out.
	if got := symbols(sw); got != "BTC/USDT,ETH/USDT" {
		t.Errorf("swap markets %s", got)
	}
	// Steps and minimums in base units: ctVal × lotSz and ctVal × minSz.
	testkit.EqualD(t, "BTC swap step", sw[0].StepSize, "0.0001")
	testkit.EqualD(t, "BTC swap minQty", sw[0].MinQty, "0.0001")
	testkit.EqualD(t, "BTC swap tick", sw[0].TickSize, "0.1")
	testkit.EqualD(t, "ETH swap step", sw[1].StepSize, "0.001")
	if sw[0].Kind != exchange.Futures {
		t.Error("kind")
	}
	before := srv.Calls("/api/v5/public/instruments")
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
	if srv.Calls("/api/v5/public/instruments") != before {
		t.Error("cached markets were fetched again")
	}
	if _, err := a.Markets(ctx, "options"); errs.CodeOf(err) != errs.InvalidSymbol {
		t.Errorf("unknown kind: %v", err)
	}
}

func TestMarketsSingleflight(t *testing.T) {
	srv := okxfake.New()
	defer srv.Close()
	a := account(t, srv, okx.Connector{})
	srv.FailNext(okxfake.Fault{Path: "/api/v5/public/instruments", Delay: 100 * time.Millisecond})
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
	if n := srv.Calls("/api/v5/public/instruments"); n != 1 {
		t.Errorf("20 concurrent misses made %d fetches", n)
	}
}

func TestTicker(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	for _, sym := range []string{"BTC/USDT", "btc/usdt", "BTC-USDT"} {
		p, err := a.Ticker(ctx, exchange.Spot, sym)
		if err != nil {
			t.Fatal(err)
		}
		testkit.EqualD(t, sym, p, "50000")
	}
	srv.SetPrice("ETH-USDT-SWAP", testkit.D("2600"))
	p, err := a.Ticker(ctx, exchange.Futures, "ETH-USDT-SWAP")
	if err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "ETH swap", p, "2600")
	code(t, errOf2(a.Ticker(ctx, exchange.Spot, "NOPE/USDT")), errs.InvalidSymbol)
	code(t, errOf2(a.Ticker(ctx, exchange.Spot, "OLD/USDT")), errs.InvalidSymbol) // suspended
}

func errOf2(_ decimal.Decimal, err error) error { return err }

// --- spot orders ---

func TestSpotMarketBuyInBaseUnits(t *testing.T) {
	srv, a := setup(t)
	req := spotMarket(exchange.SideBuy, "0.01")
	o, err := a.PlaceOrder(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	fo, ok := srv.Order(okx.ClOrdID(req.ClientOrderID))
	if !ok || fo.TgtCcy != "base_ccy" || !fo.BanAmend || fo.TdMode != "cash" || !fo.Sz.Equal(testkit.D("0.01")) || fo.InstID != "BTC-USDT" {
		t.Errorf("sent %+v", fo)
	}
	if fo.ClOrdID != "sg"+req.ClientOrderID[3:33] {
		t.Errorf("clOrdId %s", fo.ClOrdID)
	}
	if o.Status != exchange.StatusFilled || o.Type != exchange.Market || o.Side != exchange.SideBuy ||
		o.Symbol != "BTC/USDT" || o.Kind != exchange.Spot || o.ClientOrderID != req.ClientOrderID || o.ID != fo.OrdID {
		t.Errorf("order %+v", o)
	}
	testkit.EqualD(t, "amount", o.Amount, "0.01")
	testkit.EqualD(t, "filled", o.FilledAmount, "0.01")
	testkit.EqualD(t, "avg", o.AvgPrice, "50000")
	// OKX charges 0.00001 BTC (reported -0.00001), reported in BTC: the account holds
	// 0.00999 BTC, which the executor books.
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

// banAmend: a market buy the balance cannot cover is refused, not shrunk to what the
// balance buys (OKX's default for a base-currency market buy).
func TestSpotMarketBuyBeyondBalanceRefused(t *testing.T) {
	srv, a := setup(t)
	_, err := a.PlaceOrder(context.Background(), spotMarket(exchange.SideBuy, "1")) // 50000 USDT
	e := code(t, err, errs.InsufficientBalance)
	if e.Details["asset"] != "USDT" || !e.Details["available"].(decimal.Decimal).Equal(testkit.D("10000")) ||
		!e.Details["required"].(decimal.Decimal).Equal(testkit.D("50000")) {
		t.Errorf("details %v", e.Details)
	}
	if !strings.Contains(e.Message, "50000 required, 10000 available") || !strings.Contains(e.Message, "51008") {
		t.Errorf("message %q", e.Message)
	}
	if srv.OrderCount() != 0 {
		t.Error("an order was placed")
	}
}

func TestSpotLimitRestsLocksAndCancels(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	req := exchange.OrderRequest{ClientOrderID: cid(), Symbol: "BTC/USDT", Kind: exchange.Spot, Side: exchange.SideBuy,
		Type: exchange.Limit, Amount: testkit.D("0.1"), Price: testkit.D("40000.1")}
	o, err := a.PlaceOrder(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != exchange.StatusOpen || o.Type != exchange.Limit {
		t.Errorf("resting %+v", o)
	}
	if fo, _ := srv.Order(okx.ClOrdID(req.ClientOrderID)); fo.TgtCcy != "" || fo.BanAmend || !fo.Px.Equal(testkit.D("40000.1")) {
		t.Errorf("limit sent %+v", fo)
	}
	b, _ := a.Balance(ctx, "USDT")
	testkit.EqualD(t, "free while resting", b.Free, "5999.99")
	testkit.EqualD(t, "locked while resting", b.Locked, "4000.01")
	c, err := a.CancelOrder(ctx, exchange.Spot, "BTC/USDT", req.ClientOrderID)
	if err != nil || c.Status != exchange.StatusCancelled {
		t.Fatalf("cancel %+v %v", c, err)
	}
	b, _ = a.Balance(ctx, "USDT")
	testkit.EqualD(t, "free after cancel", b.Free, "10000")
	c, err = a.CancelOrder(ctx, exchange.Spot, "BTC/USDT", req.ClientOrderID)
	code(t, err, errs.ExchangeError)
	if c.Status != exchange.StatusCancelled {
		t.Errorf("second cancel %+v", c)
	}
	if _, err := a.CancelOrder(ctx, exchange.Spot, "BTC/USDT", "sg-unknown"); !errors.Is(err, exchange.ErrOrderNotFound) {
		t.Errorf("unknown cancel %v", err)
	}
	// A limit order fills when the price crosses it.
	req.ClientOrderID = cid()
	if _, err := a.PlaceOrder(ctx, req); err != nil {
		t.Fatal(err)
	}
	srv.SetPrice("BTC-USDT", testkit.D("40000"))
	o, err = a.GetOrder(ctx, exchange.Spot, "BTC/USDT", req.ClientOrderID)
	if err != nil || o.Status != exchange.StatusFilled {
		t.Fatalf("crossed limit %+v %v", o, err)
	}
	testkit.EqualD(t, "limit avg", o.AvgPrice, "40000.1")
	testkit.EqualD(t, "limit fee", o.Fee, "0.0001") // in BTC, as OKX charged it
	if o.FeeAsset != "BTC" {
		t.Errorf("limit fee asset %s", o.FeeAsset)
	}
}

func TestGetOrder(t *testing.T) {
	_, a := setup(t)
	ctx := context.Background()
	req := spotMarket(exchange.SideBuy, "0.002")
	placed, err := a.PlaceOrder(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	o, err := a.GetOrder(ctx, exchange.Spot, "BTC/USDT", req.ClientOrderID)
	if err != nil {
		t.Fatal(err)
	}
	if o.ID != placed.ID || o.Status != exchange.StatusFilled || o.ClientOrderID != req.ClientOrderID || o.Type != exchange.Market {
		t.Errorf("read back %+v", o)
	}
	testkit.EqualD(t, "filled", o.FilledAmount, "0.002")
	if _, err := a.GetOrder(ctx, exchange.Spot, "BTC/USDT", "sg-none"); !errors.Is(err, exchange.ErrOrderNotFound) {
		t.Errorf("unknown: %v", err)
	}
	if _, err := a.GetOrder(ctx, exchange.Spot, "ETH/USDT", req.ClientOrderID); !errors.Is(err, exchange.ErrOrderNotFound) {
		t.Errorf("other symbol: %v", err)
	}
}

// --- swaps ---

func TestSwapMarketAndLimitNetMode(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	req := swap(exchange.SideBuy, exchange.Market, "0.01")
	o, err := a.PlaceOrder(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	if srv.Leverage("BTC-USDT-SWAP") != 5 {
		t.Errorf("leverage %d", srv.Leverage("BTC-USDT-SWAP"))
	}
	fo, _ := srv.Order(okx.ClOrdID(req.ClientOrderID))
	if fo.TdMode != "cross" || fo.PosSide != "net" || !fo.Sz.Equal(testkit.D("1")) || fo.TgtCcy != "" || fo.ReduceOnly {
		t.Errorf("sent %+v", fo) // 0.01 BTC is 1 contract of 0.01 BTC
	}
	if o.Status != exchange.StatusFilled || o.Kind != exchange.Futures || o.FeeAsset != "USDT" {
		t.Errorf("order %+v", o)
	}
	testkit.EqualD(t, "amount", o.Amount, "0.01")
	testkit.EqualD(t, "filled", o.FilledAmount, "0.01")
	testkit.EqualD(t, "avg", o.AvgPrice, "50000")
	testkit.EqualD(t, "fee", o.Fee, "0.5")
	pos, avg, margin := srv.Position("BTC-USDT-SWAP", "net")
	testkit.EqualD(t, "pos", pos, "1")
	testkit.EqualD(t, "avgPx", avg, "50000")
	testkit.EqualD(t, "margin", margin, "100")
	b, _ := a.Balance(ctx, "USDT")
	testkit.EqualD(t, "free", b.Free, "9899.5")
	testkit.EqualD(t, "locked", b.Locked, "100")

	lim := swap(exchange.SideSell, exchange.Limit, "0.01")
	lim.Price = testkit.D("51000")
	o, err = a.PlaceOrder(ctx, lim)
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != exchange.StatusOpen {
		t.Errorf("limit %+v", o)
	}
	srv.SetPrice("BTC-USDT-SWAP", testkit.D("51000"))
	o, err = a.GetOrder(ctx, exchange.Futures, "BTC/USDT", lim.ClientOrderID)
	if err != nil {
		t.Fatal(err)
	}
	if o.Status != exchange.StatusFilled || o.Type != exchange.Limit {
		t.Errorf("filled limit %+v", o)
	}
	testkit.EqualD(t, "limit avg", o.AvgPrice, "51000")
	testkit.EqualD(t, "limit fee", o.Fee, "0.51")
	pos, _, _ = srv.Position("BTC-USDT-SWAP", "net")
	testkit.EqualD(t, "closed", pos, "0")
	testkit.EqualD(t, "cash", srv.Balance("USDT"), "10008.99")
}

// Sizes become contracts exactly: 0.123 BTC is 12.3 contracts of 0.01 BTC, refused before
// sending when the lot is 1 contract, taken when it is 0.1; below minSz is refused too.
func TestContractConversionIsExact(t *testing.T) {
	srv := okxfake.New()
	defer srv.Close()
	ctx := context.Background()
	srv.SetLot("BTC-USDT-SWAP", "1", "1")
	a := account(t, srv, okx.Connector{})
	ms, err := a.Markets(ctx, exchange.Futures)
	if err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "step at lot 1", ms[0].StepSize, "0.01")
	_, err = a.PlaceOrder(ctx, swap(exchange.SideBuy, exchange.Market, "0.123"))
	e := code(t, err, errs.InvalidAmount)
	if !strings.Contains(e.Message, "lots") || srv.Calls("/api/v5/trade/order") != 0 {
		t.Errorf("%q, %d requests", e.Message, srv.Calls("/api/v5/trade/order"))
	}

	srv.SetLot("BTC-USDT-SWAP", "0.1", "0.5")
	a = account(t, srv, okx.Connector{}) // cold instruments cache
	req := swap(exchange.SideBuy, exchange.Market, "0.123")
	o, err := a.PlaceOrder(ctx, req)
	if err != nil {
		t.Fatal(err)
	}
	fo, _ := srv.Order(okx.ClOrdID(req.ClientOrderID))
	if fo.Sz.String() != "12.3" {
		t.Errorf("sz %s", fo.Sz)
	}
	testkit.EqualD(t, "amount back in BTC", o.Amount, "0.123")
	testkit.EqualD(t, "filled back in BTC", o.FilledAmount, "0.123")
	pos, _, _ := srv.Position("BTC-USDT-SWAP", "net")
	testkit.EqualD(t, "contracts", pos, "12.3")
	_, err = a.PlaceOrder(ctx, swap(exchange.SideBuy, exchange.Market, "0.004")) // 0.4 contracts < 0.5
	e = code(t, err, errs.InvalidAmount)
	if !strings.Contains(e.Message, "minimum") {
		t.Errorf("min: %q", e.Message)
	}
	// A stale instruments cache: the fake's own lot check answers 51121.
	srv.SetLot("BTC-USDT-SWAP", "1", "1")
	code(t, errOf(a.PlaceOrder(ctx, swap(exchange.SideBuy, exchange.Market, "0.123"))), errs.InvalidAmount)
	if srv.Answered(51121) != 1 {
		t.Errorf("51121 answered %d", srv.Answered(51121))
	}
}

func TestSetLeverage(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	if err := a.SetLeverage(ctx, "BTC/USDT", 20); err != nil || srv.Leverage("BTC-USDT-SWAP") != 20 {
		t.Fatalf("set: %v, %d", err, srv.Leverage("BTC-USDT-SWAP"))
	}
	if err := a.SetLeverage(ctx, "BTC/USDT", 20); err != nil {
		t.Errorf("same leverage: %v", err)
	}
	code(t, a.SetLeverage(ctx, "BTC/USDT", 0), errs.InvalidAmount)
	code(t, a.SetLeverage(ctx, "BTC/USDT", 101), errs.InvalidAmount)
	code(t, a.SetLeverage(ctx, "NOPE/USDT", 5), errs.InvalidSymbol)
	// An entry sets its leverage once per account and value.
	before := srv.Calls("/api/v5/account/set-leverage")
	for i := 0; i < 2; i++ {
		if _, err := a.PlaceOrder(ctx, swap(exchange.SideBuy, exchange.Market, "0.01")); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.Calls("/api/v5/account/set-leverage") - before; n != 1 {
		t.Errorf("%d leverage calls for two entries", n)
	}
}

func TestReduceOnlyNetMode(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	exit := swap(exchange.SideSell, exchange.Market, "0.004")
	exit.ReduceOnly = true
	code(t, errOf(a.PlaceOrder(ctx, exit)), errs.InvalidAmount) // 51169: no position
	if srv.Answered(51169) != 1 || srv.OrderCount() != 0 {
		t.Errorf("51169 answered %d, %d orders", srv.Answered(51169), srv.OrderCount())
	}
	if _, err := a.PlaceOrder(ctx, swap(exchange.SideBuy, exchange.Market, "0.01")); err != nil {
		t.Fatal(err)
	}
	exit.ClientOrderID = cid()
	o, err := a.PlaceOrder(ctx, exit)
	if err != nil {
		t.Fatal(err)
	}
	if fo, _ := srv.Order(okx.ClOrdID(exit.ClientOrderID)); !fo.ReduceOnly || fo.PosSide != "net" {
		t.Errorf("sent %+v", fo)
	}
	testkit.EqualD(t, "reduced", o.FilledAmount, "0.004")
	pos, _, _ := srv.Position("BTC-USDT-SWAP", "net")
	testkit.EqualD(t, "left", pos, "0.6")
	// Spot has no reduce-only (OKX refuses it, 51139): a spot sell is sent without it.
	if _, err := a.PlaceOrder(ctx, spotMarket(exchange.SideBuy, "0.01")); err != nil {
		t.Fatal(err)
	}
	sell := spotMarket(exchange.SideSell, "0.001")
	sell.ReduceOnly = true
	if _, err := a.PlaceOrder(ctx, sell); err != nil {
		t.Fatal(err)
	}
	if srv.Answered(51139) != 0 {
		t.Error("spot order sent reduce-only")
	}
}

// --- errors ---

func TestServerErrorsRetriedOnReads(t *testing.T) {
	srv, a := setup(t)
	// OKX's "busy" codes are retried.
	srv.FailNext(okxfake.Fault{Path: "/api/v5/account/balance", Code: 50013, Msg: "Systems are busy. Please try again later."})
	if _, err := a.Balance(context.Background(), "USDT"); err != nil || srv.Calls("/api/v5/account/balance") != 2 {
		t.Errorf("after 50013: %v", err)
	}
	srv = okxfake.New()
	defer srv.Close()
	a = account(t, srv, okx.Connector{})
	srv.FailNext(okxfake.Fault{Path: "/api/v5/account/balance", HTTPStatus: http.StatusServiceUnavailable, Times: 2})
	b, err := a.Balance(context.Background(), "USDT")
	if err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "free", b.Free, "10000")
	if n := srv.Calls("/api/v5/account/balance"); n != 3 {
		t.Errorf("%d attempts", n)
	}
	srv.FailNext(okxfake.Fault{Path: "/api/v5/account/balance", HTTPStatus: http.StatusBadGateway, Times: 10})
	_, err = a.Balance(context.Background(), "USDT")
	code(t, err, errs.ExchangeError)
	if !errors.Is(err, exchange.ErrUnreachable) || srv.Calls("/api/v5/account/balance") != 6 {
		t.Errorf("bounded retries: %v, %d attempts", err, srv.Calls("/api/v5/account/balance"))
	}
}

func TestRateLimit(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	srv.FailNext(okxfake.Fault{Path: "/api/v5/account/balance", HTTPStatus: http.StatusTooManyRequests})
	_, err := a.Balance(ctx, "USDT")
	e := code(t, err, errs.RateLimited)
	if e.RetryAfter != 2*time.Second || srv.Calls("/api/v5/account/balance") != 1 || srv.Answered(50011) != 1 {
		t.Errorf("RetryAfter %s, %d calls", e.RetryAfter, srv.Calls("/api/v5/account/balance"))
	}
	srv.FailNext(okxfake.Fault{Path: "/api/v5/trade/order", Method: http.MethodPost, Code: 50011, Msg: "Rate limit reached."})
	req := spotMarket(exchange.SideBuy, "0.01")
	code(t, errOf(a.PlaceOrder(ctx, req)), errs.RateLimited)
	if srv.OrdersCreated(okx.ClOrdID(req.ClientOrderID)) != 0 {
		t.Error("placed")
	}
}

// TestErrorMapping: rows of the mapping, injected on the placement (51xxx as the order's
// sCode under code "1", others as the answer's code); none places an order, none leaks a
// credential, every message carries OKX's code.
func TestErrorMapping(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	for _, c := range []struct {
		code int
		msg  string
		want errs.Code
	}{
		{51008, "Order failed. Insufficient USDT balance in account", errs.InsufficientBalance},
		{51008, "Order failed. Insufficient USDT margin in account", errs.InsufficientBalance},
		{51131, "Insufficient balance.", errs.InsufficientBalance},
		{51127, "Available balance is 0.", errs.InsufficientBalance},
		{51020, "Your order should meet or exceed the minimum order amount.", errs.InvalidAmount},
		{51121, "Order quantity must be a multiple of the lot size.", errs.InvalidAmount},
		{51169, "Order failed because you don't have any positions in this direction for this contract to reduce or close.", errs.InvalidAmount},
		{51202, "Market order amount exceeds the maximum amount.", errs.InvalidAmount},
		{51000, "Parameter sz error", errs.InvalidAmount},
		{51006, "Order price is not within the price limit (max buy price: 1, min sell price: 2)", errs.InvalidPrice},
		{51000, "Parameter px error", errs.InvalidPrice},
		{51280, "SL trigger price cannot be higher than the last price.", errs.InvalidPrice},
		{51001, "Instrument ID or Spread ID doesn't exist.", errs.InvalidSymbol},
		{51000, "Parameter instId error", errs.InvalidSymbol},
		{50011, "Rate limit reached. Please refer to API documentation and throttle requests accordingly.", errs.RateLimited},
		{50061, "You've reached the maximum order rate limit for this account.", errs.RateLimited},
		{50111, "Invalid OK-ACCESS-KEY.", errs.ExchangeDisconnected},
		{50113, "Invalid signature.", errs.ExchangeDisconnected},
		{50105, `Request header "OK-ACCESS-PASSPHRASE" incorrect.`, errs.ExchangeDisconnected},
		{50100, "API frozen, please contact customer service.", errs.ExchangeDisconnected},
		{50101, "APIKey does not match current environment.", errs.ExchangeDisconnected},
		{50110, "Your IP 203.0.113.7 is not included in your API key's IP whitelist.", errs.ExchangeDisconnected},
		{50120, "This API key doesn't have permission to use this function", errs.ExchangeDisconnected},
		{51024, "Trading account is blocked.", errs.ExchangeDisconnected},
		{50037, "Order expired.", errs.ExchangeError},
		{51000, "Parameter posSide error", errs.ExchangeError},
		{51010, "Request unsupported under current account mode", errs.ExchangeError},
		{51088, "You can only place 1 TP/SL order to close an entire position", errs.ExchangeError},
	} {
		srv.FailNext(okxfake.Fault{Path: "/api/v5/trade/order", Method: http.MethodPost, Code: c.code, Msg: c.msg})
		req := spotMarket(exchange.SideBuy, "0.01")
		_, err := a.PlaceOrder(ctx, req)
		e := code(t, err, c.want)
		if srv.OrdersCreated(okx.ClOrdID(req.ClientOrderID)) != 0 {
			t.Errorf("%d: an order was placed", c.code)
		}
		if !strings.Contains(e.Message, strconv.Itoa(c.code)) {
			t.Errorf("%d: message %q lacks the code", c.code, e.Message)
		}
		switch c.want {
		case errs.InsufficientBalance:
			if e.Details["asset"] != "USDT" || !e.Details["available"].(decimal.Decimal).Equal(testkit.D("10000")) ||
				!e.Details["required"].(decimal.Decimal).Equal(testkit.D("500")) {
				t.Errorf("%d: details %v", c.code, e.Details)
			}
		case errs.ExchangeError:
			if !strings.Contains(e.Message, c.msg) {
				t.Errorf("%d: message %q lacks OKX's", c.code, e.Message)
			}
		case errs.RateLimited:
			if e.RetryAfter <= 0 {
				t.Errorf("%d: no RetryAfter", c.code)
			}
		}
		credential := c.code >= 50100 && c.code <= 50119
		if errors.Is(err, exchange.ErrInvalidCredentials) != credential {
			t.Errorf("%d: ErrInvalidCredentials is %v", c.code, !credential)
		}
	}
}

// TestRefusalsFromTheFake: the same mapping through the fake's own validation.
func TestRefusalsFromTheFake(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	_, err := a.PlaceOrder(ctx, spotMarket(exchange.SideSell, "0.5")) // no BTC
	e := code(t, err, errs.InsufficientBalance)
	if e.Details["asset"] != "BTC" || !e.Details["required"].(decimal.Decimal).Equal(testkit.D("0.5")) {
		t.Errorf("sell details %v", e.Details)
	}
	big := swap(exchange.SideBuy, exchange.Market, "2") // 100000 notional, 20000 margin at 5x
	e = code(t, errOf(a.PlaceOrder(ctx, big)), errs.InsufficientBalance)
	if !e.Details["required"].(decimal.Decimal).Equal(testkit.D("20000")) {
		t.Errorf("swap details %v", e.Details)
	}
	code(t, errOf(a.PlaceOrder(ctx, spotMarket(exchange.SideBuy, "0.000000001"))), errs.InvalidAmount) // 51121
	code(t, errOf(a.PlaceOrder(ctx, spotMarket(exchange.SideBuy, "0.000001"))), errs.InvalidAmount)    // 51020
	lim := spotMarket(exchange.SideBuy, "0.01")
	lim.Type, lim.Price = exchange.Limit, testkit.D("40000.05")
	code(t, errOf(a.PlaceOrder(ctx, lim)), errs.InvalidPrice) // 51000 Parameter px error
	unknown := spotMarket(exchange.SideBuy, "0.01")
	unknown.Symbol = "NOPE/USDT"
	code(t, errOf(a.PlaceOrder(ctx, unknown)), errs.InvalidSymbol)
	code(t, errOf(a.PlaceOrder(ctx, spotMarket(exchange.SideBuy, "0"))), errs.InvalidAmount)
	if srv.OrderCount() != 0 {
		t.Errorf("%d orders placed", srv.OrderCount())
	}
}

// No error, whatever failed, holds the key, the secret or the passphrase: not when OKX
// refuses them, not when an answer echoes them.
func TestNoCredentialInErrors(t *testing.T) {
	srv := okxfake.New()
	defer srv.Close()
	ctx := context.Background()
	var all []error
	for _, cr := range []exchange.Credentials{
		{APIKey: okxfake.APIKey, APISecret: "wrong-secret-zz9", Passphrase: okxfake.Passphrase},
		{APIKey: okxfake.APIKey, APISecret: okxfake.APISecret, Passphrase: "wrong-pass-zz9"},
		{APIKey: okxfake.APIKey, APISecret: "wrong-secret-zz9", Passphrase: "wrong-pass-zz9"},
	} {
		a := open(t, srv, okx.Connector{}, cr, false)
		all = append(all, errOf2(decimal.Zero, errOf3(a.Balance(ctx, "USDT"))), errOf(a.PlaceOrder(ctx, spotMarket(exchange.SideBuy, "0.01"))),
			errOf(a.GetOrder(ctx, exchange.Spot, "BTC/USDT", "sg-x")), errOf(a.CancelOrder(ctx, exchange.Spot, "BTC/USDT", "sg-x")),
			a.SetLeverage(ctx, "BTC/USDT", 5), errOf4(a.Permissions(ctx)), errOf5(a.AccountMode(ctx)))
	}
	a := account(t, srv, okx.Connector{})
	echo := "bad request from " + okxfake.APIKey + " signed with " + okxfake.APISecret + " and " + okxfake.Passphrase
	srv.FailNext(okxfake.Fault{Path: "/api/v5/trade/order", Method: http.MethodPost, Code: 51000, Msg: echo})
	all = append(all, errOf(a.PlaceOrder(ctx, spotMarket(exchange.SideBuy, "0.01"))))
	srv.FailNext(okxfake.Fault{Path: "/api/v5/account/config", Code: 50114, Msg: echo})
	all = append(all, errOf4(a.Permissions(ctx)))
	for i, err := range all {
		if err == nil {
			t.Errorf("call %d did not fail", i)
		}
		noSecret(t, err)
	}
}

func errOf3(_ exchange.Balance, err error) error     { return err }
func errOf4(_ exchange.Permissions, err error) error { return err }
func errOf5(_ exchange.AccountMode, err error) error { return err }

// --- permissions ---

func TestPermissions(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	for _, c := range []struct {
		name string
		info okxfake.KeyInfo
		want []string
	}{
		{"trade", okxfake.TradeOnly(), []string{"futures", "read", "spot"}},
		{"withdraw", okxfake.KeyInfo{Perm: []string{"read_only", "withdraw", "trade"}}, []string{"futures", "read", "spot", "withdraw"}},
		{"read only", okxfake.KeyInfo{Perm: []string{"read_only"}}, []string{"read"}},
		{"IP bound", okxfake.KeyInfo{Perm: []string{"read_only", "trade"}, IP: "203.0.113.7,203.0.113.8"},
			[]string{"futures", "ipRestricted", "read", "spot"}},
	} {
		srv.SetPermissions(c.info)
		p, err := a.Permissions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Join(p.List(), ","); got != strings.Join(c.want, ",") {
			t.Errorf("%s: %s, want %v", c.name, got, c.want)
		}
		if p.Transfer {
			t.Errorf("%s: transfer", c.name)
		}
	}
	// A read-only key cannot trade: 50120.
	srv.SetPermissions(okxfake.KeyInfo{Perm: []string{"read_only"}})
	code(t, errOf(a.PlaceOrder(ctx, spotMarket(exchange.SideBuy, "0.01"))), errs.ExchangeDisconnected)
	if srv.Answered(50120) != 1 {
		t.Errorf("50120 answered %d", srv.Answered(50120))
	}
}

func TestPermissionsErrors(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	for _, f := range []okxfake.Fault{
		{Code: 50111, Msg: "Invalid OK-ACCESS-KEY."},
		{Code: 50113, Msg: "Invalid signature."},
		{Code: 50105, Msg: `Request header "OK-ACCESS-PASSPHRASE" incorrect.`},
	} {
		f.Path = "/api/v5/account/config"
		srv.FailNext(f)
		_, err := a.Permissions(ctx)
		if !errors.Is(err, exchange.ErrInvalidCredentials) || errors.Is(err, exchange.ErrUnreachable) {
			t.Errorf("%d: %v", f.Code, err)
		}
		noSecret(t, err)
	}
	srv.FailNext(okxfake.Fault{Path: "/api/v5/account/config", HTTPStatus: http.StatusInternalServerError, Times: 3})
	_, err := a.Permissions(ctx)
	if !errors.Is(err, exchange.ErrUnreachable) || errors.Is(err, exchange.ErrInvalidCredentials) {
		t.Errorf("5xx: %v", err)
	}
	srv.Close()
	if _, err := a.Permissions(ctx); !errors.Is(err, exchange.ErrUnreachable) {
		t.Errorf("closed: %v", err)
	}
}

// --- benchmark ---

func BenchmarkPlaceOrder(b *testing.B) {
	srv := okxfake.New()
	defer srv.Close()
	srv.SetBalance("USDT", testkit.D("1000000000"))
	a := account(b, srv, okx.Connector{})
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
