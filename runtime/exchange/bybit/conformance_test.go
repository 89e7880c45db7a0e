package bybit_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"reflect"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/bybit"
	"github.com/sigops/sigops/runtime/exchange/bybit/bybitfake"
)

// Conformance: every request the adapter can send, as it goes on the wire, against the
// parameters of Bybit's v5 page it follows. A recording proxy stands between the adapter
// and the fake; each row drives the adapter and pins one request: method, path, the exact
// set of query or body parameters (one more or one fewer fails), the four X-BAPI headers,
// and the signature, recomputed here as hex HMAC-SHA256(secret, timestamp + key +
// recvWindow + payload) over the query string or body as sent. The clock is fixed, so the
// timestamp is pinned to the millisecond.

// fixedNow is the clock of both the adapter and the fake.
var fixedNow = time.UnixMilli(1767225600000) // 2026-01-01T00:00:00Z

const fixedTS = "1767225600000"

type wire struct {
	method, path, rawQuery string
	body                   []byte
	header                 http.Header
}

// recorder forwards to the fake and keeps what went through.
type recorder struct {
	mu    sync.Mutex
	reqs  []wire
	proxy *httputil.ReverseProxy
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.reqs = append(r.reqs, wire{method: req.Method, path: req.URL.Path, rawQuery: req.URL.RawQuery, body: body, header: req.Header.Clone()})
	r.mu.Unlock()
	req.Body = io.NopCloser(bytes.NewReader(body))
	r.proxy.ServeHTTP(w, req)
}

func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = nil
}

// pick is the nth request (from 0) to method and path since the last reset.
func (r *recorder) pick(method, path string, nth int) (wire, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.reqs {
		if w.method == method && w.path == path {
			if nth == 0 {
				return w, true
			}
			nth--
		}
	}
	return wire{}, false
}

type conformance struct {
	name string
	doc  string // the Bybit v5 page the request follows
	// prep sets the account up; its requests are not looked at.
	prep func(t *testing.T, srv *bybitfake.Server, a *bybit.Account)
	run  func(t *testing.T, a *bybit.Account)
	// skew sets the fake's clock ahead of the adapter's.
	skew         time.Duration
	method, path string
	nth          int
	// params is the exact set of query parameters (GET) or JSON body fields (POST);
	// numbers are float64, as JSON decodes them.
	params map[string]any
	signed bool
}

func TestConformance(t *testing.T) {
	ctx := context.Background()
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	place := func(req exchange.OrderRequest) func(*testing.T, *bybit.Account) {
		return func(t *testing.T, a *bybit.Account) {
			_, err := a.PlaceOrder(ctx, req)
			must(t, err)
		}
	}
	prepPlace := func(reqs ...exchange.OrderRequest) func(*testing.T, *bybitfake.Server, *bybit.Account) {
		return func(t *testing.T, srv *bybitfake.Server, a *bybit.Account) {
			srv.SetBalance("BTC", testkit.D("1"))
			for _, req := range reqs {
				_, err := a.PlaceOrder(ctx, req)
				must(t, err)
			}
		}
	}
	hedge := func(reqs ...exchange.OrderRequest) func(*testing.T, *bybitfake.Server, *bybit.Account) {
		return func(t *testing.T, srv *bybitfake.Server, a *bybit.Account) {
			srv.SetPositionMode(bybitfake.BothSides)
			prepPlace(reqs...)(t, srv, a)
		}
	}
	spotReq := func(id string, side exchange.Side, typ exchange.OrderType, amount, price, stop string) exchange.OrderRequest {
		r := exchange.OrderRequest{ClientOrderID: id, Symbol: "BTC/USDT", Kind: exchange.Spot, Side: side, Type: typ, Amount: testkit.D(amount)}
		if price != "" {
			r.Price = testkit.D(price)
		}
		if stop != "" {
			r.StopPrice = testkit.D(stop)
		}
		return r
	}
	linReq := func(id string, side exchange.Side, typ exchange.OrderType, amount, price, stop string) exchange.OrderRequest {
		r := spotReq(id, side, typ, amount, price, stop)
		r.Kind = exchange.Futures
		return r
	}
	const (
		docInstruments = "https://bybit-exchange.github.io/docs/v5/market/instrument"
		docTickers     = "https://bybit-exchange.github.io/docs/v5/market/tickers"
		docTime        = "https://bybit-exchange.github.io/docs/v5/market/time"
		docWallet      = "https://bybit-exchange.github.io/docs/v5/account/wallet-balance"
		docQueryAPI    = "https://bybit-exchange.github.io/docs/v5/user/apikey-info"
		docLeverage    = "https://bybit-exchange.github.io/docs/v5/position/leverage"
		docPositions   = "https://bybit-exchange.github.io/docs/v5/position"
		docCreate      = "https://bybit-exchange.github.io/docs/v5/order/create-order"
		docCancel      = "https://bybit-exchange.github.io/docs/v5/order/cancel-order"
		docRealtime    = "https://bybit-exchange.github.io/docs/v5/order/open-order"
		docHistory     = "https://bybit-exchange.github.io/docs/v5/order/order-list"
	)
	get, post := http.MethodGet, http.MethodPost
	rows := []conformance{
		{name: "instruments-info spot", doc: docInstruments,
			run:    func(t *testing.T, a *bybit.Account) { _, err := a.Markets(ctx, exchange.Spot); must(t, err) },
			method: get, path: "/v5/market/instruments-info", params: map[string]any{"category": "spot", "limit": "1000"}},
		{name: "instruments-info linear", doc: docInstruments,
			run:    func(t *testing.T, a *bybit.Account) { _, err := a.Markets(ctx, exchange.Futures); must(t, err) },
			method: get, path: "/v5/market/instruments-info", params: map[string]any{"category": "linear", "limit": "1000"}},
		{name: "tickers", doc: docTickers,
			run: func(t *testing.T, a *bybit.Account) {
				_, err := a.Ticker(ctx, exchange.Futures, "BTC/USDT")
				must(t, err)
			},
			method: get, path: "/v5/market/tickers", params: map[string]any{"category": "linear", "symbol": "BTCUSDT"}},
		{name: "server time after a refused timestamp", doc: docTime, skew: 10 * time.Second,
			run:    func(t *testing.T, a *bybit.Account) { _, err := a.Balance(ctx, "USDT"); must(t, err) },
			method: get, path: "/v5/market/time", params: map[string]any{}},
		{name: "wallet balance", doc: docWallet,
			run:    func(t *testing.T, a *bybit.Account) { _, err := a.Balance(ctx, "usdt"); must(t, err) },
			method: get, path: "/v5/account/wallet-balance", params: map[string]any{"accountType": "UNIFIED", "coin": "USDT"}, signed: true},
		{name: "key permissions", doc: docQueryAPI,
			run:    func(t *testing.T, a *bybit.Account) { _, err := a.Permissions(ctx); must(t, err) },
			method: get, path: "/v5/user/query-api", params: map[string]any{}, signed: true},
		{name: "leverage", doc: docLeverage,
			run:    func(t *testing.T, a *bybit.Account) { must(t, a.SetLeverage(ctx, "BTC/USDT", 7)) },
			method: post, path: "/v5/position/set-leverage", signed: true,
			params: map[string]any{"category": "linear", "symbol": "BTCUSDT", "buyLeverage": "7", "sellLeverage": "7"}},
		{name: "position mode of a symbol, before its first order", doc: docPositions,
			run:    place(linReq("sg-conf-mode", exchange.SideBuy, exchange.Market, "0.01", "", "")),
			method: get, path: "/v5/position/list", signed: true,
			params: map[string]any{"category": "linear", "symbol": "BTCUSDT", "limit": "200"}},
		{name: "account mode: the USDT positions", doc: docPositions,
			run:    func(t *testing.T, a *bybit.Account) { _, err := a.AccountMode(ctx); must(t, err) },
			method: get, path: "/v5/position/list", signed: true,
			params: map[string]any{"category": "linear", "settleCoin": "USDT", "limit": "200"}},
		{name: "account mode: BTCUSDT when none is held", doc: docPositions,
			run:    func(t *testing.T, a *bybit.Account) { _, err := a.AccountMode(ctx); must(t, err) },
			method: get, path: "/v5/position/list", nth: 1, signed: true,
			params: map[string]any{"category": "linear", "symbol": "BTCUSDT", "limit": "200"}},
		{name: "create spot market", doc: docCreate,
			run:    place(spotReq("sg-conf-1", exchange.SideBuy, exchange.Market, "0.01", "", "")),
			method: post, path: "/v5/order/create", signed: true,
			params: map[string]any{"category": "spot", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Market",
				"qty": "0.01", "marketUnit": "baseCoin", "orderLinkId": "sg-conf-1"}},
		{name: "create spot limit", doc: docCreate,
			run:    place(spotReq("sg-conf-2", exchange.SideBuy, exchange.Limit, "0.01", "40000.01", "")),
			method: post, path: "/v5/order/create", signed: true,
			params: map[string]any{"category": "spot", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Limit",
				"qty": "0.01", "price": "40000.01", "timeInForce": "GTC", "orderLinkId": "sg-conf-2"}},
		{name: "create linear market, one-way", doc: docCreate,
			run:    place(linReq("sg-conf-3", exchange.SideBuy, exchange.Market, "0.01", "", "")),
			method: post, path: "/v5/order/create", signed: true,
			params: map[string]any{"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Market",
				"qty": "0.01", "positionIdx": 0.0, "orderLinkId": "sg-conf-3"}},
		{name: "create linear limit, one-way", doc: docCreate,
			run:    place(linReq("sg-conf-4", exchange.SideSell, exchange.Limit, "0.01", "51000.5", "")),
			method: post, path: "/v5/order/create", signed: true,
			params: map[string]any{"category": "linear", "symbol": "BTCUSDT", "side": "Sell", "orderType": "Limit",
				"qty": "0.01", "price": "51000.5", "timeInForce": "GTC", "positionIdx": 0.0, "orderLinkId": "sg-conf-4"}},
		{name: "create linear market, hedge long", doc: docCreate, prep: hedge(),
			run:    place(linReq("sg-conf-5", exchange.SideBuy, exchange.Market, "0.01", "", "")),
			method: post, path: "/v5/order/create", signed: true,
			params: map[string]any{"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Market",
				"qty": "0.01", "positionIdx": 1.0, "orderLinkId": "sg-conf-5"}},
		{name: "create linear limit, hedge short", doc: docCreate, prep: hedge(),
			run:    place(linReq("sg-conf-6", exchange.SideSell, exchange.Limit, "0.01", "51000", "")),
			method: post, path: "/v5/order/create", signed: true,
			params: map[string]any{"category": "linear", "symbol": "BTCUSDT", "side": "Sell", "orderType": "Limit",
				"qty": "0.01", "price": "51000", "timeInForce": "GTC", "positionIdx": 2.0, "orderLinkId": "sg-conf-6"}},
		{name: "create linear exit, hedge long", doc: docCreate,
			prep: hedge(linReq("sg-conf-7a", exchange.SideBuy, exchange.Market, "0.01", "", "")),
			run: func(t *testing.T, a *bybit.Account) {
				r := linReq("sg-conf-7", exchange.SideSell, exchange.Market, "0.01", "", "")
				r.ReduceOnly = true
				place(r)(t, a)
			},
			method: post, path: "/v5/order/create", signed: true,
			params: map[string]any{"category": "linear", "symbol": "BTCUSDT", "side": "Sell", "orderType": "Market",
				"qty": "0.01", "positionIdx": 1.0, "reduceOnly": true, "orderLinkId": "sg-conf-7"}},
		{name: "create spot stop-loss", doc: docCreate, prep: prepPlace(),
			run:    place(spotReq("sg-conf-8", exchange.SideSell, exchange.StopLoss, "0.01", "", "45000")),
			method: post, path: "/v5/order/create", signed: true,
			params: map[string]any{"category": "spot", "symbol": "BTCUSDT", "side": "Sell", "orderType": "Market",
				"qty": "0.01", "marketUnit": "baseCoin", "triggerPrice": "45000", "orderFilter": "StopOrder", "orderLinkId": "sg-conf-8"}},
		{name: "create spot take-profit, limit", doc: docCreate, prep: prepPlace(),
			run:    place(spotReq("sg-conf-9", exchange.SideSell, exchange.TakeProfit, "0.01", "55100", "55000")),
			method: post, path: "/v5/order/create", signed: true,
			params: map[string]any{"category": "spot", "symbol": "BTCUSDT", "side": "Sell", "orderType": "Limit",
				"qty": "0.01", "price": "55100", "timeInForce": "GTC", "triggerPrice": "55000", "orderFilter": "StopOrder",
				"orderLinkId": "sg-conf-9"}},
		{name: "create linear stop-loss, one-way", doc: docCreate,
			prep:   prepPlace(linReq("sg-conf-10a", exchange.SideBuy, exchange.Market, "0.01", "", "")),
			run:    place(linReq("sg-conf-10", exchange.SideSell, exchange.StopLoss, "0.01", "", "48000")),
			method: post, path: "/v5/order/create", signed: true,
			params: map[string]any{"category": "linear", "symbol": "BTCUSDT", "side": "Sell", "orderType": "Market",
				"qty": "0.01", "triggerPrice": "48000", "triggerDirection": 2.0, "triggerBy": "LastPrice", "positionIdx": 0.0,
				"reduceOnly": true, "closeOnTrigger": true, "orderLinkId": "sg-conf-10"}},
		{name: "create linear take-profit, hedge short", doc: docCreate,
			prep:   hedge(linReq("sg-conf-11a", exchange.SideSell, exchange.Market, "0.01", "", "")),
			run:    place(linReq("sg-conf-11", exchange.SideBuy, exchange.TakeProfit, "0.01", "", "45000")),
			method: post, path: "/v5/order/create", signed: true,
			params: map[string]any{"category": "linear", "symbol": "BTCUSDT", "side": "Buy", "orderType": "Market",
				"qty": "0.01", "triggerPrice": "45000", "triggerDirection": 2.0, "triggerBy": "LastPrice", "positionIdx": 2.0,
				"reduceOnly": true, "closeOnTrigger": true, "orderLinkId": "sg-conf-11"}},
		{name: "cancel spot order", doc: docCancel,
			prep: prepPlace(spotReq("sg-conf-12", exchange.SideBuy, exchange.Limit, "0.01", "40000", "")),
			run: func(t *testing.T, a *bybit.Account) {
				_, err := a.CancelOrder(ctx, exchange.Spot, "BTC/USDT", "sg-conf-12")
				must(t, err)
			},
			method: post, path: "/v5/order/cancel", signed: true,
			params: map[string]any{"category": "spot", "symbol": "BTCUSDT", "orderLinkId": "sg-conf-12", "orderFilter": "Order"}},
		{name: "cancel spot conditional order", doc: docCancel,
			prep: prepPlace(spotReq("sg-conf-13", exchange.SideSell, exchange.StopLoss, "0.01", "", "45000")),
			run: func(t *testing.T, a *bybit.Account) {
				_, err := a.CancelOrder(ctx, exchange.Spot, "BTC/USDT", "sg-conf-13")
				must(t, err)
			},
			method: post, path: "/v5/order/cancel", signed: true,
			params: map[string]any{"category": "spot", "symbol": "BTCUSDT", "orderLinkId": "sg-conf-13", "orderFilter": "StopOrder"}},
		{name: "cancel linear order", doc: docCancel,
			prep: prepPlace(linReq("sg-conf-14", exchange.SideBuy, exchange.Limit, "0.01", "40000", "")),
			run: func(t *testing.T, a *bybit.Account) {
				_, err := a.CancelOrder(ctx, exchange.Futures, "BTC/USDT", "sg-conf-14")
				must(t, err)
			},
			method: post, path: "/v5/order/cancel", signed: true,
			params: map[string]any{"category": "linear", "symbol": "BTCUSDT", "orderLinkId": "sg-conf-14"}},
		{name: "order by orderLinkId, realtime", doc: docRealtime,
			prep: prepPlace(spotReq("sg-conf-15", exchange.SideBuy, exchange.Market, "0.01", "", "")),
			run: func(t *testing.T, a *bybit.Account) {
				_, err := a.GetOrder(ctx, exchange.Spot, "BTC/USDT", "sg-conf-15")
				must(t, err)
			},
			method: get, path: "/v5/order/realtime", signed: true,
			params: map[string]any{"category": "spot", "symbol": "BTCUSDT", "orderLinkId": "sg-conf-15"}},
		{name: "order by orderLinkId, history", doc: docHistory,
			prep: func(t *testing.T, srv *bybitfake.Server, a *bybit.Account) {
				prepPlace(linReq("sg-conf-16", exchange.SideBuy, exchange.Market, "0.01", "", ""))(t, srv, a)
				srv.ForgetClosed()
			},
			run: func(t *testing.T, a *bybit.Account) {
				_, err := a.GetOrder(ctx, exchange.Futures, "BTC/USDT", "sg-conf-16")
				must(t, err)
			},
			method: get, path: "/v5/order/history", signed: true,
			params: map[string]any{"category": "linear", "symbol": "BTCUSDT", "orderLinkId": "sg-conf-16"}},
	}
	for _, c := range rows {
		t.Run(c.name, func(t *testing.T) {
			if c.doc == "" {
				t.Fatal("every row cites the Bybit page it follows")
			}
			srv := bybitfake.New()
			defer srv.Close()
			srv.SetNow(func() time.Time { return fixedNow.Add(c.skew) })
			target, _ := url.Parse(srv.URL())
			rec := &recorder{proxy: httputil.NewSingleHostReverseProxy(target)}
			front := httptest.NewServer(rec)
			defer front.Close()
			bybit.ResetCaches()
			a, err := bybit.Connector{Now: func() time.Time { return fixedNow }}.Open(
				exchange.Credentials{APIKey: bybitfake.APIKey, APISecret: bybitfake.APISecret}, exchange.Endpoints{Spot: front.URL})
			must(t, err)
			if c.prep != nil {
				c.prep(t, srv, a)
			}
			rec.reset()
			c.run(t, a)
			w, ok := rec.pick(c.method, c.path, c.nth)
			if !ok {
				t.Fatalf("no %s %s (#%d) was sent", c.method, c.path, c.nth)
			}
			checkWire(t, w, c)
		})
	}
}

func checkWire(t *testing.T, w wire, c conformance) {
	t.Helper()
	got := map[string]any{}
	payload := w.rawQuery
	if c.method == http.MethodGet {
		if len(w.body) != 0 {
			t.Errorf("a GET with a body (%s): Bybit answers 403", w.body)
		}
		q, err := url.ParseQuery(w.rawQuery)
		if err != nil {
			t.Fatalf("query %q: %v", w.rawQuery, err)
		}
		for k, v := range q {
			if len(v) != 1 {
				t.Errorf("parameter %s sent %d times", k, len(v))
			}
			got[k] = v[0]
		}
	} else {
		payload = string(w.body)
		if w.rawQuery != "" {
			t.Errorf("a POST with a query string %q", w.rawQuery)
		}
		if ct := w.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
		if err := json.Unmarshal(w.body, &got); err != nil {
			t.Fatalf("body %s: %v", w.body, err)
		}
	}
	if !reflect.DeepEqual(got, c.params) {
		t.Errorf("parameters (see %s):\n got %v\nwant %v\n     %s", c.doc, keysOf(got), keysOf(c.params), diff(got, c.params))
	}
	names := []string{"X-BAPI-API-KEY", "X-BAPI-TIMESTAMP", "X-BAPI-RECV-WINDOW", "X-BAPI-SIGN"}
	if !c.signed {
		for _, h := range names {
			if w.header.Get(h) != "" {
				t.Errorf("a public request carries %s", h)
			}
		}
		return
	}
	key, ts, recv, sign := w.header.Get(names[0]), w.header.Get(names[1]), w.header.Get(names[2]), w.header.Get(names[3])
	if key != bybitfake.APIKey || ts != fixedTS || recv != "5000" {
		t.Errorf("headers: key %q timestamp %q recv window %q", key, ts, recv)
	}
	if _, err := strconv.ParseInt(ts, 10, 64); err != nil {
		t.Errorf("timestamp %q is not a number", ts)
	}
	mac := hmac.New(sha256.New, []byte(bybitfake.APISecret))
	mac.Write([]byte(ts + key + recv + payload))
	if want := hex.EncodeToString(mac.Sum(nil)); sign != want {
		t.Errorf("X-BAPI-SIGN %s is not HMAC-SHA256 of %q", sign, ts+"<key>"+recv+payload)
	}
}

func keysOf(m map[string]any) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+jsonOf(v))
	}
	sort.Strings(out)
	return out
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// diff names the parameters sent and not expected, expected and not sent, or different.
func diff(got, want map[string]any) string {
	var out []string
	for k, v := range got {
		if w, ok := want[k]; !ok {
			out = append(out, "extra "+k)
		} else if !reflect.DeepEqual(v, w) {
			out = append(out, "different "+k)
		}
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			out = append(out, "missing "+k)
		}
	}
	sort.Strings(out)
	return jsonOf(out)
}
