package binance_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/binance"
	"github.com/sigops/sigops/runtime/exchange/binance/binancefake"
)

// Conformance: every request the adapter can send, pinned to the byte against Binance's API
// pages. The fake records each request as it arrived (method, path, raw query string, raw
// body, API-key header); the test compares the query string and the body exactly (so a
// parameter added, removed or moved between them fails), checks the timestamp is present and
// numeric, and checks the signature: HMAC-SHA256 with the secret of the exact signed string,
// the query string (signature removed) followed by the body, nothing between them (Binance's
// SIGNED endpoint security: totalParams is the query string concatenated with the body).

// Binance's pages the rows follow.
const (
	docSigned       = "https://developers.binance.com/docs/binance-spot-api-docs/rest-api/endpoint-security-type"
	docSpotNew      = "https://developers.binance.com/docs/binance-spot-api-docs/rest-api/trading-endpoints#new-order-trade"
	docSpotQuery    = "https://developers.binance.com/docs/binance-spot-api-docs/rest-api/account-endpoints#query-order-user_data"
	docSpotCancel   = "https://developers.binance.com/docs/binance-spot-api-docs/rest-api/trading-endpoints#cancel-order-trade"
	docSpotAccount  = "https://developers.binance.com/docs/binance-spot-api-docs/rest-api/account-endpoints#account-information-user_data"
	docSpotTrades   = "https://developers.binance.com/docs/binance-spot-api-docs/rest-api/account-endpoints#account-trade-list-user_data"
	docSpotInfo     = "https://developers.binance.com/docs/binance-spot-api-docs/rest-api/general-endpoints#exchange-information"
	docSpotTicker   = "https://developers.binance.com/docs/binance-spot-api-docs/rest-api/market-data-endpoints#symbol-price-ticker"
	docKeyPerms     = "https://developers.binance.com/docs/wallet/account/api-key-permission"
	futDocs         = "https://developers.binance.com/docs/derivatives/usds-margined-futures/"
	docFutNew       = futDocs + "trade/rest-api"
	docFutQuery     = futDocs + "trade/rest-api/Query-Order"
	docFutCancel    = futDocs + "trade/rest-api/Cancel-Order"
	docFutTrades    = futDocs + "trade/rest-api/Account-Trade-List"
	docFutLeverage  = futDocs + "trade/rest-api/Change-Initial-Leverage"
	docFutPositions = futDocs + "trade/rest-api/Position-Information-V3"
	docAlgoNew      = futDocs + "trade/rest-api/New-Algo-Order"
	docAlgoQuery    = futDocs + "trade/rest-api/Query-Algo-Order"
	docAlgoCancel   = futDocs + "trade/rest-api/Cancel-Algo-Order"
	docFutMode      = futDocs + "account/rest-api/Get-Current-Position-Mode"
	docFutBalance   = futDocs + "account/rest-api/Futures-Account-Balance-V3"
	docFutInfo      = futDocs + "market-data/rest-api/Exchange-Information"
	docFutTicker    = futDocs + "market-data/rest-api/Symbol-Price-Ticker-v2"
)

// Where a request carries its signature: go-binance appends it to the query string (its
// POST and DELETE parameters travel in the body, recvWindow and timestamp in the query);
// the hand-signed Algo Order API (algo.go) appends it to whatever it sends.
const (
	unsigned = ""
	inQuery  = "query"
	inBody   = "body"
)

// sent is one request as it must leave the adapter. query and body are exact, signature
// excluded; {ts} stands for the request's timestamp, {id} for an order ID Binance assigned.
type sent struct {
	method, path string
	query, body  string
	sig          string
	doc          string
}

// rw is the recvWindow and timestamp go-binance adds to a signed query string.
const rw = "recvWindow=5000&timestamp={ts}"

func lookupSpot(cid string) sent {
	return sent{"GET", "/api/v3/order", "origClientOrderId=" + cid + "&recvWindow=5000&symbol=BTCUSDT&timestamp={ts}", "", inQuery, docSpotQuery}
}

func lookupFut(cid string) sent {
	return sent{"GET", "/fapi/v1/order", "origClientOrderId=" + cid + "&recvWindow=5000&symbol=BTCUSDT&timestamp={ts}", "", inQuery, docFutQuery}
}

func lookupAlgo(cid string) sent {
	return sent{"GET", "/fapi/v1/algoOrder", "clientAlgoId=" + cid + "&" + rw, "", inQuery, docAlgoQuery}
}

var (
	readMode   = sent{"GET", "/fapi/v1/positionSide/dual", rw, "", inQuery, docFutMode}
	userTrades = sent{"GET", "/fapi/v1/userTrades", "orderId={id}&recvWindow=5000&symbol=BTCUSDT&timestamp={ts}", "", inQuery, docFutTrades}
)

func setLev(n int) sent {
	return sent{"POST", "/fapi/v1/leverage", rw, "leverage=" + strconv.Itoa(n) + "&symbol=BTCUSDT", inQuery, docFutLeverage}
}

type conformanceRow struct {
	name    string
	testnet bool
	// setup prepares the fake through another account, off the record.
	setup func(t *testing.T, f *fixture)
	act   func(x *binance.Account) error
	want  []sent
}

func conformanceRows() []conformanceRow {
	openLong := func(t *testing.T, f *fixture) {
		if _, err := f.x.PlaceOrder(ctx, futMarket("setup-long", exchange.SideBuy, "0.01", 10)); err != nil {
			t.Fatal(err)
		}
	}
	hedgeLong := func(t *testing.T, f *fixture) {
		f.fake.SetHedgeMode(true)
		openLong(t, f)
	}
	place := func(req exchange.OrderRequest) func(*binance.Account) error {
		return func(x *binance.Account) error { _, err := x.PlaceOrder(ctx, req); return err }
	}
	limit := func(req exchange.OrderRequest, price string) exchange.OrderRequest {
		req.Type, req.Price = exchange.Limit, testkit.D(price)
		return req
	}
	reduce := func(req exchange.OrderRequest) exchange.OrderRequest {
		req.ReduceOnly = true
		return req
	}
	spotStop := func(id string, typ exchange.OrderType, stop, price string) exchange.OrderRequest {
		r := futStop(id, typ, exchange.SideSell, "0.001", stop, price)
		r.Kind = exchange.Spot
		return r
	}
	spotBTC := func(t *testing.T, f *fixture) { f.fake.SetSpotBalance("BTC", "1") }
	return []conformanceRow{
		{name: "spot market order", act: place(spotMarket("c-spot-mkt", exchange.SideBuy, "0.001")), want: []sent{
			lookupSpot("c-spot-mkt"),
			// A FULL answer carries the fills and their commissions: no trade list read.
			{"POST", "/api/v3/order", rw, "newClientOrderId=c-spot-mkt&newOrderRespType=FULL&quantity=0.001&side=BUY&symbol=BTCUSDT&type=MARKET", inQuery, docSpotNew},
		}},
		{name: "spot limit order", act: place(limit(spotMarket("c-spot-lim", exchange.SideBuy, "0.001"), "40000")), want: []sent{
			lookupSpot("c-spot-lim"),
			{"POST", "/api/v3/order", rw, "newClientOrderId=c-spot-lim&newOrderRespType=FULL&price=40000&quantity=0.001&side=BUY&symbol=BTCUSDT&timeInForce=GTC&type=LIMIT", inQuery, docSpotNew},
		}},
		{name: "spot stop-loss", setup: spotBTC, act: place(spotStop("c-spot-sl", exchange.StopLoss, "49000", "")), want: []sent{
			lookupSpot("c-spot-sl"),
			{"POST", "/api/v3/order", rw, "newClientOrderId=c-spot-sl&newOrderRespType=FULL&quantity=0.001&side=SELL&stopPrice=49000&symbol=BTCUSDT&type=STOP_LOSS", inQuery, docSpotNew},
		}},
		{name: "spot take-profit with a limit price", setup: spotBTC, act: place(spotStop("c-spot-tp", exchange.TakeProfit, "55000", "54900")), want: []sent{
			lookupSpot("c-spot-tp"),
			{"POST", "/api/v3/order", rw, "newClientOrderId=c-spot-tp&newOrderRespType=FULL&price=54900&quantity=0.001&side=SELL&stopPrice=55000&symbol=BTCUSDT&timeInForce=GTC&type=TAKE_PROFIT_LIMIT", inQuery, docSpotNew},
		}},
		{name: "futures market order, one-way mode", act: place(futMarket("c-fut-mkt", exchange.SideBuy, "0.01", 10)), want: []sent{
			lookupFut("c-fut-mkt"), readMode, setLev(10),
			// One-way mode: no positionSide (it defaults to BOTH), no reduceOnly on an opening order.
			{"POST", "/fapi/v1/order", rw, "newClientOrderId=c-fut-mkt&newOrderRespType=RESULT&quantity=0.01&side=BUY&symbol=BTCUSDT&type=MARKET", inQuery, docFutNew},
			userTrades, // the RESULT answer has no commission
		}},
		{name: "futures limit order, one-way mode", act: place(limit(futMarket("c-fut-lim", exchange.SideBuy, "0.01", 10), "40000")), want: []sent{
			lookupFut("c-fut-lim"), readMode, setLev(10),
			{"POST", "/fapi/v1/order", rw, "newClientOrderId=c-fut-lim&newOrderRespType=RESULT&price=40000&quantity=0.01&side=BUY&symbol=BTCUSDT&timeInForce=GTC&type=LIMIT", inQuery, docFutNew},
		}},
		{name: "futures reduce-only order, one-way mode", setup: openLong, act: place(reduce(futMarket("c-fut-ro", exchange.SideSell, "0.01", 10))), want: []sent{
			lookupFut("c-fut-ro"), readMode, // no leverage change for an exit
			{"POST", "/fapi/v1/order", rw, "newClientOrderId=c-fut-ro&newOrderRespType=RESULT&quantity=0.01&reduceOnly=true&side=SELL&symbol=BTCUSDT&type=MARKET", inQuery, docFutNew},
			userTrades,
		}},
		{name: "futures market order, hedge mode", setup: func(t *testing.T, f *fixture) { f.fake.SetHedgeMode(true) },
			act: place(futMarket("c-hedge-mkt", exchange.SideSell, "0.01", 10)), want: []sent{
				lookupFut("c-hedge-mkt"), readMode, setLev(10),
				// Sell to open: the short side.
				{"POST", "/fapi/v1/order", rw, "newClientOrderId=c-hedge-mkt&newOrderRespType=RESULT&positionSide=SHORT&quantity=0.01&side=SELL&symbol=BTCUSDT&type=MARKET", inQuery, docFutNew},
				userTrades,
			}},
		{name: "futures limit order, hedge mode", setup: func(t *testing.T, f *fixture) { f.fake.SetHedgeMode(true) },
			act: place(limit(futMarket("c-hedge-lim", exchange.SideBuy, "0.01", 10), "40000")), want: []sent{
				lookupFut("c-hedge-lim"), readMode, setLev(10),
				{"POST", "/fapi/v1/order", rw, "newClientOrderId=c-hedge-lim&newOrderRespType=RESULT&positionSide=LONG&price=40000&quantity=0.01&side=BUY&symbol=BTCUSDT&timeInForce=GTC&type=LIMIT", inQuery, docFutNew},
			}},
		{name: "futures exit, hedge mode", setup: hedgeLong, act: place(reduce(futMarket("c-hedge-ro", exchange.SideSell, "0.01", 10))), want: []sent{
			lookupFut("c-hedge-ro"), readMode,
			// Sell on the long side exits; reduceOnly is refused in hedge mode and not sent.
			{"POST", "/fapi/v1/order", rw, "newClientOrderId=c-hedge-ro&newOrderRespType=RESULT&positionSide=LONG&quantity=0.01&side=SELL&symbol=BTCUSDT&type=MARKET", inQuery, docFutNew},
			userTrades,
		}},
		{name: "futures stop-loss with an amount, one-way mode", setup: openLong,
			act: place(futStop("c-algo-sl", exchange.StopLoss, exchange.SideSell, "0.01", "49000", "")), want: []sent{
				lookupAlgo("c-algo-sl"), readMode,
				{"POST", "/fapi/v1/algoOrder", "", "algoType=CONDITIONAL&clientAlgoId=c-algo-sl&quantity=0.01&recvWindow=5000&reduceOnly=true&side=SELL&symbol=BTCUSDT&timestamp={ts}&triggerPrice=49000&type=STOP_MARKET&workingType=CONTRACT_PRICE", inBody, docAlgoNew},
			}},
		{name: "futures take-profit closing the position, one-way mode", setup: openLong,
			act: place(futStop("c-algo-tp", exchange.TakeProfit, exchange.SideSell, "", "55000", "")), want: []sent{
				lookupAlgo("c-algo-tp"), readMode,
				{"POST", "/fapi/v1/algoOrder", "", "algoType=CONDITIONAL&clientAlgoId=c-algo-tp&closePosition=true&recvWindow=5000&side=SELL&symbol=BTCUSDT&timestamp={ts}&triggerPrice=55000&type=TAKE_PROFIT_MARKET&workingType=CONTRACT_PRICE", inBody, docAlgoNew},
			}},
		{name: "futures limit take-profit with an amount, one-way mode", setup: openLong,
			act: place(futStop("c-algo-tpl", exchange.TakeProfit, exchange.SideSell, "0.01", "55000", "54900")), want: []sent{
				lookupAlgo("c-algo-tpl"), readMode,
				{"POST", "/fapi/v1/algoOrder", "", "algoType=CONDITIONAL&clientAlgoId=c-algo-tpl&price=54900&quantity=0.01&recvWindow=5000&reduceOnly=true&side=SELL&symbol=BTCUSDT&timeInForce=GTC&timestamp={ts}&triggerPrice=55000&type=TAKE_PROFIT&workingType=CONTRACT_PRICE", inBody, docAlgoNew},
			}},
		{name: "futures stop-loss closing the position, hedge mode", setup: hedgeLong,
			act: place(futStop("c-hedge-sl", exchange.StopLoss, exchange.SideSell, "", "49000", "")), want: []sent{
				lookupAlgo("c-hedge-sl"), readMode,
				{"POST", "/fapi/v1/algoOrder", "", "algoType=CONDITIONAL&clientAlgoId=c-hedge-sl&closePosition=true&positionSide=LONG&recvWindow=5000&side=SELL&symbol=BTCUSDT&timestamp={ts}&triggerPrice=49000&type=STOP_MARKET&workingType=CONTRACT_PRICE", inBody, docAlgoNew},
			}},
		{name: "futures limit stop-loss with an amount, hedge mode", setup: hedgeLong,
			act: place(futStop("c-hedge-sll", exchange.StopLoss, exchange.SideSell, "0.01", "49000", "48900")), want: []sent{
				lookupAlgo("c-hedge-sll"), readMode,
				{"POST", "/fapi/v1/algoOrder", "", "algoType=CONDITIONAL&clientAlgoId=c-hedge-sll&positionSide=LONG&price=48900&quantity=0.01&recvWindow=5000&side=SELL&symbol=BTCUSDT&timeInForce=GTC&timestamp={ts}&triggerPrice=49000&type=STOP&workingType=CONTRACT_PRICE", inBody, docAlgoNew},
			}},
		{name: "spot cancel", setup: func(t *testing.T, f *fixture) {
			if _, err := f.x.PlaceOrder(ctx, limit(spotMarket("c-spot-cx", exchange.SideBuy, "0.001"), "40000")); err != nil {
				t.Fatal(err)
			}
		}, act: func(x *binance.Account) error {
			_, err := x.CancelOrder(ctx, exchange.Spot, "BTC/USDT", "c-spot-cx")
			return err
		},
			want: []sent{
				lookupSpot("c-spot-cx"),
				{"DELETE", "/api/v3/order", rw, "origClientOrderId=c-spot-cx&symbol=BTCUSDT", inQuery, docSpotCancel},
				lookupSpot("c-spot-cx"), // the state after the cancel is the answer
			}},
		{name: "futures cancel", setup: func(t *testing.T, f *fixture) {
			if _, err := f.x.PlaceOrder(ctx, limit(futMarket("c-fut-cx", exchange.SideBuy, "0.01", 10), "40000")); err != nil {
				t.Fatal(err)
			}
		}, act: func(x *binance.Account) error {
			_, err := x.CancelOrder(ctx, exchange.Futures, "BTC/USDT", "c-fut-cx")
			return err
		},
			want: []sent{
				lookupFut("c-fut-cx"),
				{"DELETE", "/fapi/v1/order", rw, "origClientOrderId=c-fut-cx&symbol=BTCUSDT", inQuery, docFutCancel},
				lookupFut("c-fut-cx"),
			}},
		{name: "futures conditional cancel", setup: func(t *testing.T, f *fixture) {
			openLong(t, f)
			if _, err := f.x.PlaceOrder(ctx, futStop("c-algo-cx", exchange.StopLoss, exchange.SideSell, "0.01", "49000", "")); err != nil {
				t.Fatal(err)
			}
		}, act: func(x *binance.Account) error {
			_, err := x.CancelOrder(ctx, exchange.Futures, "BTC/USDT", "c-algo-cx")
			return err
		},
			want: []sent{
				lookupFut("c-algo-cx"), lookupAlgo("c-algo-cx"), // not a regular order: a conditional one
				{"DELETE", "/fapi/v1/algoOrder", "clientAlgoId=c-algo-cx&" + rw, "", inQuery, docAlgoCancel},
				lookupFut("c-algo-cx"), lookupAlgo("c-algo-cx"),
			}},
		{name: "spot query of a filled order", setup: func(t *testing.T, f *fixture) {
			if _, err := f.x.PlaceOrder(ctx, spotMarket("c-spot-q", exchange.SideBuy, "0.001")); err != nil {
				t.Fatal(err)
			}
		}, act: func(x *binance.Account) error {
			_, err := x.GetOrder(ctx, exchange.Spot, "BTC/USDT", "c-spot-q")
			return err
		},
			want: []sent{
				lookupSpot("c-spot-q"),
				// The order answer has no commission: the order's trades carry it.
				{"GET", "/api/v3/myTrades", "orderId={id}&recvWindow=5000&symbol=BTCUSDT&timestamp={ts}", "", inQuery, docSpotTrades},
			}},
		{name: "futures query of a resting order", setup: func(t *testing.T, f *fixture) {
			if _, err := f.x.PlaceOrder(ctx, limit(futMarket("c-fut-q", exchange.SideBuy, "0.01", 10), "40000")); err != nil {
				t.Fatal(err)
			}
		}, act: func(x *binance.Account) error {
			_, err := x.GetOrder(ctx, exchange.Futures, "BTC/USDT", "c-fut-q")
			return err
		},
			want: []sent{lookupFut("c-fut-q")}},
		{name: "futures query of a conditional order", setup: func(t *testing.T, f *fixture) {
			openLong(t, f)
			if _, err := f.x.PlaceOrder(ctx, futStop("c-algo-q", exchange.StopLoss, exchange.SideSell, "0.01", "49000", "")); err != nil {
				t.Fatal(err)
			}
		}, act: func(x *binance.Account) error {
			_, err := x.GetOrder(ctx, exchange.Futures, "BTC/USDT", "c-algo-q")
			return err
		},
			want: []sent{lookupFut("c-algo-q"), lookupAlgo("c-algo-q")}},
		{name: "spot balance", act: func(x *binance.Account) error { _, err := x.Balance(ctx, "USDT"); return err },
			want: []sent{{"GET", "/api/v3/account", "omitZeroBalances=true&" + rw, "", inQuery, docSpotAccount}}},
		{name: "futures balance", act: func(x *binance.Account) error { _, err := x.ForKind(exchange.Futures).Balance(ctx, "USDT"); return err },
			want: []sent{{"GET", "/fapi/v3/balance", rw, "", inQuery, docFutBalance}}},
		{name: "key permissions", act: func(x *binance.Account) error { _, err := x.Permissions(ctx); return err },
			want: []sent{{"GET", "/sapi/v1/account/apiRestrictions", rw, "", inQuery, docKeyPerms}}},
		{name: "key permissions on a testnet without /sapi", testnet: true, setup: func(t *testing.T, f *fixture) {
			f.fake.FailNext(1, binancefake.Fault{Status: 404, Body: "<html>404</html>"}.On(http.MethodGet, "/sapi/v1/account/apiRestrictions"))
		}, act: func(x *binance.Account) error { _, err := x.Permissions(ctx); return err },
			want: []sent{
				{"GET", "/sapi/v1/account/apiRestrictions", rw, "", inQuery, docKeyPerms},
				{"GET", "/api/v3/account", "omitZeroBalances=true&" + rw, "", inQuery, docSpotAccount},
				{"GET", "/fapi/v3/balance", rw, "", inQuery, docFutBalance},
			}},
		{name: "leverage", act: func(x *binance.Account) error { return x.SetLeverage(ctx, "BTC/USDT", 25) },
			want: []sent{setLev(25)}},
		{name: "position mode read", act: func(x *binance.Account) error { _, err := x.AccountMode(ctx); return err },
			want: []sent{readMode, {"GET", "/fapi/v3/positionRisk", rw, "", inQuery, docFutPositions}}},
		{name: "spot markets", act: func(x *binance.Account) error { _, err := x.Markets(ctx, exchange.Spot); return err },
			want: []sent{{"GET", "/api/v3/exchangeInfo", "", "", unsigned, docSpotInfo}}},
		{name: "futures markets", act: func(x *binance.Account) error { _, err := x.Markets(ctx, exchange.Futures); return err },
			want: []sent{{"GET", "/fapi/v1/exchangeInfo", "", "", unsigned, docFutInfo}}},
		{name: "spot ticker", act: func(x *binance.Account) error { _, err := x.Ticker(ctx, exchange.Spot, "BTC/USDT"); return err },
			want: []sent{{"GET", "/api/v3/ticker/price", "symbol=BTCUSDT", "", unsigned, docSpotTicker}}},
		{name: "futures ticker", act: func(x *binance.Account) error { _, err := x.Ticker(ctx, exchange.Futures, "BTC/USDT"); return err },
			want: []sent{{"GET", "/fapi/v2/ticker/price", "symbol=BTCUSDT", "", unsigned, docFutTicker}}},
	}
}

func TestConformance(t *testing.T) {
	for _, row := range conformanceRows() {
		t.Run(row.name, func(t *testing.T) {
			f := newFixture(t)
			if row.setup != nil {
				row.setup(t, f)
			}
			// A fresh account: nothing cached (position mode, leverage) from the setup.
			x, err := binance.Connector{Logger: logger}.Open(creds,
				exchange.Endpoints{Spot: f.fake.URL(), Futures: f.fake.URL(), Testnet: row.testnet})
			if err != nil {
				t.Fatal(err)
			}
			from := len(f.fake.Requests())
			if err := row.act(x); err != nil {
				t.Fatal(keep(err))
			}
			got := f.fake.Requests()[from:]
			for i := 0; i < len(got) || i < len(row.want); i++ {
				switch {
				case i >= len(got):
					t.Errorf("request %d: missing, want %s %s", i, row.want[i].method, row.want[i].path)
				case i >= len(row.want):
					t.Errorf("request %d: unexpected %s %s ?%s %s", i, got[i].Method, got[i].Path, got[i].Query, got[i].Body)
				default:
					checkSent(t, i, got[i], row.want[i])
				}
			}
		})
	}
}

// reporter is what checkSent reports to: the test, or a probe in the test of the check.
type reporter interface {
	Helper()
	Errorf(format string, args ...any)
}

// probe records whether a check failed.
type probe struct{ failed bool }

func (*probe) Helper()                 {}
func (p *probe) Errorf(string, ...any) { p.failed = true }

// checkSent compares one recorded request with its row.
func checkSent(t reporter, i int, r binancefake.Request, w sent) {
	t.Helper()
	if !strings.HasPrefix(w.doc, "https://developers.binance.com/docs/") {
		t.Errorf("request %d: no Binance page cited (%q)", i, w.doc)
	}
	if r.Method != w.method || r.Path != w.path {
		t.Errorf("request %d: %s %s, want %s %s (%s)", i, r.Method, r.Path, w.method, w.path, w.doc)
		return
	}
	query, qsig := cutSignature(r.Query)
	body, bsig := cutSignature(r.Body)
	sig := qsig + bsig
	switch {
	case w.sig == unsigned && sig != "":
		t.Errorf("request %d %s: signed, want unsigned", i, r.Path)
	case w.sig == inQuery && (qsig == "" || bsig != ""):
		t.Errorf("request %d %s: signature not (only) at the end of the query string: ?%s body %s", i, r.Path, r.Query, r.Body)
	case w.sig == inBody && (bsig == "" || qsig != ""):
		t.Errorf("request %d %s: signature not (only) at the end of the body: ?%s body %s", i, r.Path, r.Query, r.Body)
	}
	ts := ""
	if strings.Contains(w.query+w.body, "{ts}") {
		ts = r.Params.Get("timestamp")
		ms, err := strconv.ParseInt(ts, 10, 64)
		if err != nil || len(ts) != 13 || time.Since(time.UnixMilli(ms)).Abs() > time.Minute {
			t.Errorf("request %d %s: timestamp %q is not the current time in ms", i, r.Path, ts)
		}
	}
	if !matches(w.query, ts, query) {
		t.Errorf("request %d %s: query string\n got  %q\n want %q (%s)", i, r.Path, query, w.query, w.doc)
	}
	if !matches(w.body, ts, body) {
		t.Errorf("request %d %s: body\n got  %q\n want %q (%s)", i, r.Path, body, w.body, w.doc)
	}
	if body != "" && r.ContentType != "application/x-www-form-urlencoded" {
		t.Errorf("request %d %s: Content-Type %q", i, r.Path, r.ContentType)
	}
	if w.sig == unsigned {
		if r.APIKey != "" {
			t.Errorf("request %d %s: API key sent with a public request", i, r.Path)
		}
		return
	}
	if r.APIKey != binancefake.APIKey {
		t.Errorf("request %d %s: X-MBX-APIKEY %q", i, r.Path, r.APIKey)
	}
	// The signed string: the query string, then the body, nothing between (docSigned).
	signed := query + body
	mac := hmac.New(sha256.New, []byte(binancefake.APISecret))
	mac.Write([]byte(signed))
	if want := hex.EncodeToString(mac.Sum(nil)); sig != want {
		t.Errorf("request %d %s: signature %q is not HMAC-SHA256(secret, %q) = %q (%s)", i, r.Path, sig, signed, want, docSigned)
	}
}

// cutSignature removes the trailing signature parameter of a query string or body.
func cutSignature(s string) (rest, sig string) {
	i := strings.LastIndex("&"+s, "&signature=")
	if i < 0 {
		return s, ""
	}
	rest, sig = s[:max(i-1, 0)], s[i+len("signature="):]
	if strings.Contains(sig, "&") { // not the last parameter: leave it for the comparison to show
		return s, ""
	}
	return rest, sig
}

// matches compares a sent string with its template: {ts} is the request's timestamp, {id}
// any decimal order ID.
func matches(template, ts, got string) bool {
	re := regexp.QuoteMeta(template)
	re = strings.ReplaceAll(re, `\{ts\}`, regexp.QuoteMeta(ts))
	re = strings.ReplaceAll(re, `\{id\}`, `[0-9]+`)
	return regexp.MustCompile("^" + re + "$").MatchString(got)
}

// The checks themselves catch a changed request: an extra parameter, a missing one, a moved
// one and a bad signature each fail.
func TestConformanceCheckCatchesChanges(t *testing.T) {
	w := lookupFut("x")
	good := func(query, body string) binancefake.Request {
		mac := hmac.New(sha256.New, []byte(binancefake.APISecret))
		mac.Write([]byte(query + body))
		q, _ := url.ParseQuery(query + "&" + body)
		return binancefake.Request{Method: "GET", Path: "/fapi/v1/order", Params: q, APIKey: binancefake.APIKey,
			Query: query + "&signature=" + hex.EncodeToString(mac.Sum(nil)), Body: body}
	}
	ts := strconv.FormatInt(time.Now().UnixMilli(), 10)
	base := "origClientOrderId=x&recvWindow=5000&symbol=BTCUSDT&timestamp=" + ts
	if failed := runCheck(good(base, ""), w); failed {
		t.Fatal("the exact request failed the check")
	}
	for name, r := range map[string]binancefake.Request{
		"extra":   good(base+"&orderId=1", ""),
		"missing": good("origClientOrderId=x&recvWindow=5000&timestamp="+ts, ""),
		"moved":   good("recvWindow=5000&symbol=BTCUSDT&timestamp="+ts, "origClientOrderId=x"),
	} {
		if !runCheck(r, w) {
			t.Errorf("%s parameter passed the check", name)
		}
	}
	bad := good(base, "")
	bad.Query = base + "&signature=" + strings.Repeat("0", 64)
	if !runCheck(bad, w) {
		t.Error("a bad signature passed the check")
	}
}

// runCheck reports whether checkSent failed, without failing the calling test.
func runCheck(r binancefake.Request, w sent) (failed bool) {
	p := &probe{}
	checkSent(p, 0, r, w)
	return p.failed
}
