package okx_test

// Conformance: what the adapter sends OKX, request by request, against the v5
// documentation. A recording server answers like OKX; each row drives one adapter call and
// pins the request it makes: method, path, the exact set of query or body parameters with
// their values, the headers, and the string that is signed (the OK-ACCESS-SIGN header must
// be base64 HMAC-SHA256 of timestamp + method + requestPath (with its query) + body,
// computed here independently of the adapter).

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/okx"
)

const (
	recKey, recSecret, recPass = "conf-key-7", "conf-secret-7", "conf-pass-7"
)

type recorded struct {
	method, path, rawQuery string
	header                 http.Header
	body                   []byte
}

// recorder answers the endpoints the adapter uses with OKX-shaped data and records every
// request. Orders exist once placed (or when preset); a cancelled one reads cancelled.
type recorder struct {
	mu        sync.Mutex
	reqs      []recorded
	posMode   string
	expireTS  bool                         // answer the next signed request 50102
	orders    map[string]map[string]string // clOrdId → side, sz, state
	algos     map[string]map[string]string // algoClOrdId → side, sz, state, algoId
	algoByID  map[string]string            // algoId → algoClOrdId
	cancelled map[string]bool
}

func newRecorder() *recorder {
	return &recorder{posMode: "net_mode", orders: map[string]map[string]string{}, algos: map[string]map[string]string{},
		algoByID: map[string]string{}, cancelled: map[string]bool{}}
}

func (rc *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.reqs = append(rc.reqs, recorded{method: r.Method, path: r.URL.Path, rawQuery: r.URL.RawQuery, header: r.Header.Clone(), body: body})
	answer := func(code string, data any) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"code": code, "msg": "", "data": data})
	}
	if r.Header.Get("OK-ACCESS-KEY") != "" && rc.expireTS {
		rc.expireTS = false
		w.WriteHeader(http.StatusUnauthorized)
		json.NewEncoder(w).Encode(map[string]any{"code": "50102", "msg": "Timestamp request expired.", "data": []any{}})
		return
	}
	q := r.URL.Query()
	var in map[string]any
	_ = json.Unmarshal(body, &in)
	str := func(k string) string { s, _ := in[k].(string); return s }
	switch r.Method + " " + r.URL.Path {
	case "GET /api/v5/public/time":
		answer("0", []map[string]string{{"ts": strconv.FormatInt(time.Now().UnixMilli(), 10)}})
	case "GET /api/v5/public/instruments":
		if q.Get("instType") == "SPOT" {
			answer("0", []map[string]string{{"instType": "SPOT", "instId": "BTC-USDT", "baseCcy": "BTC", "quoteCcy": "USDT",
				"lotSz": "0.00000001", "minSz": "0.00001", "tickSz": "0.1", "state": "live"}})
			return
		}
		answer("0", []map[string]string{{"instType": "SWAP", "instId": "BTC-USDT-SWAP", "uly": "BTC-USDT", "settleCcy": "USDT",
			"ctVal": "0.01", "ctValCcy": "BTC", "ctType": "linear", "lotSz": "0.01", "minSz": "0.01", "tickSz": "0.1",
			"lever": "100", "state": "live"}})
	case "GET /api/v5/market/ticker":
		answer("0", []map[string]string{{"instId": q.Get("instId"), "last": "50000"}})
	case "GET /api/v5/account/balance":
		answer("0", []map[string]any{{"details": []map[string]string{{"ccy": "USDT", "cashBal": "100", "availBal": "100", "frozenBal": "0", "upl": ""}}}})
	case "GET /api/v5/account/config":
		answer("0", []map[string]string{{"acctLv": "2", "posMode": rc.posMode, "perm": "read_only,trade", "ip": ""}})
	case "GET /api/v5/account/positions":
		answer("0", []any{})
	case "POST /api/v5/account/set-leverage":
		answer("0", []map[string]string{{"instId": str("instId"), "lever": str("lever"), "mgnMode": str("mgnMode")}})
	case "POST /api/v5/trade/order":
		rc.orders[str("clOrdId")] = map[string]string{"side": str("side"), "sz": str("sz"), "state": "filled", "instId": str("instId")}
		answer("0", []map[string]string{{"clOrdId": str("clOrdId"), "ordId": "7001", "sCode": "0", "sMsg": ""}})
	case "GET /api/v5/trade/order":
		o := rc.orders[q.Get("clOrdId")]
		if o == nil || o["instId"] != q.Get("instId") {
			answer("51603", []any{})
			return
		}
		state := o["state"]
		if rc.cancelled[q.Get("clOrdId")] {
			state = "canceled"
		}
		answer("0", []map[string]string{{"instId": o["instId"], "ordId": "7001", "clOrdId": q.Get("clOrdId"), "side": o["side"],
			"ordType": "market", "state": state, "sz": o["sz"], "accFillSz": "0", "avgPx": "", "fee": "0", "feeCcy": "",
			"cTime": "1", "uTime": "1"}})
	case "POST /api/v5/trade/cancel-order":
		rc.cancelled[str("clOrdId")] = true
		answer("0", []map[string]string{{"clOrdId": str("clOrdId"), "ordId": "7001", "sCode": "0", "sMsg": ""}})
	case "POST /api/v5/trade/order-algo":
		id := str("algoClOrdId")
		rc.algos[id] = map[string]string{"side": str("side"), "sz": str("sz"), "state": "live", "instId": str("instId"),
			"slTriggerPx": str("slTriggerPx"), "tpTriggerPx": str("tpTriggerPx"), "algoId": "9001"}
		rc.algoByID["9001"] = id
		answer("0", []map[string]string{{"algoId": "9001", "algoClOrdId": id, "sCode": "0", "sMsg": ""}})
	case "GET /api/v5/trade/order-algo":
		a := rc.algos[q.Get("algoClOrdId")]
		if a == nil {
			answer("51603", []any{})
			return
		}
		state := a["state"]
		if rc.cancelled[q.Get("algoClOrdId")] {
			state = "canceled"
		}
		answer("0", []map[string]string{{"instId": a["instId"], "algoId": a["algoId"], "algoClOrdId": q.Get("algoClOrdId"),
			"side": a["side"], "sz": a["sz"], "state": state, "slTriggerPx": a["slTriggerPx"], "tpTriggerPx": a["tpTriggerPx"],
			"ordType": "conditional", "cTime": "1", "uTime": "1"}})
	case "POST /api/v5/trade/cancel-algos":
		var list []map[string]string
		_ = json.Unmarshal(body, &list)
		for _, it := range list {
			rc.cancelled[rc.algoByID[it["algoId"]]] = true
		}
		answer("0", []map[string]string{{"algoId": "9001", "sCode": "0", "sMsg": ""}})
	default:
		w.WriteHeader(http.StatusNotFound)
	}
}

// row is one pinned request.
type row struct {
	name, doc string
	mode      string // posMode ("": net_mode)
	demo      bool
	skew      bool // the first signed request is refused 50102: the clock is read
	setup     func(rc *recorder)
	call      func(ctx context.Context, a *okx.Account) error
	method    string
	path      string
	query     map[string]string
	body      any // map[string]any or []map[string]any, exact
	private   bool
	expTime   bool
}

var isoMillis = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$`)

func confOrder(kind exchange.Kind, side exchange.Side, typ exchange.OrderType, amount string) exchange.OrderRequest {
	return exchange.OrderRequest{ClientOrderID: "sg-00112233445566778899aabbccddeeff", Symbol: "BTC/USDT", Kind: kind,
		Side: side, Type: typ, Amount: testkit.D(amount)}
}

const confClOrdID = "sg00112233445566778899aabbccddee" // okx.ClOrdID of confOrder's ID

func place(req exchange.OrderRequest) func(context.Context, *okx.Account) error {
	return func(ctx context.Context, a *okx.Account) error { _, err := a.PlaceOrder(ctx, req); return err }
}

func TestConformance(t *testing.T) {
	const docs = "https://www.okx.com/docs-v5/en/"
	limitSell := confOrder(exchange.Spot, exchange.SideSell, exchange.Limit, "0.5")
	limitSell.Price = testkit.D("51000.5")
	reduce := confOrder(exchange.Futures, exchange.SideSell, exchange.Market, "0.05")
	reduce.ReduceOnly = true
	entry := confOrder(exchange.Futures, exchange.SideBuy, exchange.Market, "0.05")
	entry.Leverage = 5
	sl := confOrder(exchange.Futures, exchange.SideSell, exchange.StopLoss, "0.05")
	sl.StopPrice = testkit.D("48000")
	tpAll := confOrder(exchange.Futures, exchange.SideBuy, exchange.TakeProfit, "0")
	tpAll.StopPrice = testkit.D("45000")
	spotSL := confOrder(exchange.Spot, exchange.SideSell, exchange.StopLoss, "0.01")
	spotSL.StopPrice, spotSL.Price = testkit.D("45000"), testkit.D("44990")
	liveOrder := func(rc *recorder) {
		rc.orders[confClOrdID] = map[string]string{"side": "buy", "sz": "0.01", "state": "live", "instId": "BTC-USDT"}
	}
	liveAlgo := func(rc *recorder) {
		rc.algos[confClOrdID] = map[string]string{"side": "sell", "sz": "5", "state": "live", "instId": "BTC-USDT-SWAP",
			"slTriggerPx": "48000", "algoId": "9001"}
		rc.algoByID["9001"] = confClOrdID
	}
	spotOrder := map[string]any{"instId": "BTC-USDT", "tdMode": "cash", "clOrdId": confClOrdID, "side": "buy",
		"ordType": "market", "sz": "0.01", "tgtCcy": "base_ccy", "banAmend": true}
	rows := []row{
		{name: "instruments, spot", doc: docs + "#public-data-rest-api-get-instruments",
			call:   func(ctx context.Context, a *okx.Account) error { _, err := a.Markets(ctx, exchange.Spot); return err },
			method: "GET", path: "/api/v5/public/instruments", query: map[string]string{"instType": "SPOT"}},
		{name: "instruments, swaps", doc: docs + "#public-data-rest-api-get-instruments",
			call: func(ctx context.Context, a *okx.Account) error {
				_, err := a.Markets(ctx, exchange.Futures)
				return err
			},
			method: "GET", path: "/api/v5/public/instruments", query: map[string]string{"instType": "SWAP"}},
		{name: "ticker", doc: docs + "#order-book-trading-market-data-get-ticker",
			call: func(ctx context.Context, a *okx.Account) error {
				_, err := a.Ticker(ctx, exchange.Futures, "BTC/USDT")
				return err
			},
			method: "GET", path: "/api/v5/market/ticker", query: map[string]string{"instId": "BTC-USDT-SWAP"}},
		{name: "system time after 50102", doc: docs + "#public-data-rest-api-get-system-time", skew: true,
			call:   func(ctx context.Context, a *okx.Account) error { _, err := a.Balance(ctx, "USDT"); return err },
			method: "GET", path: "/api/v5/public/time", query: map[string]string{}},
		{name: "balance", doc: docs + "#trading-account-rest-api-get-balance",
			call:   func(ctx context.Context, a *okx.Account) error { _, err := a.Balance(ctx, "usdt"); return err },
			method: "GET", path: "/api/v5/account/balance", query: map[string]string{"ccy": "USDT"}, private: true},
		{name: "account configuration (permissions)", doc: docs + "#trading-account-rest-api-get-account-configuration",
			call:   func(ctx context.Context, a *okx.Account) error { _, err := a.Permissions(ctx); return err },
			method: "GET", path: "/api/v5/account/config", query: map[string]string{}, private: true},
		{name: "positions (account mode)", doc: docs + "#trading-account-rest-api-get-positions",
			call:   func(ctx context.Context, a *okx.Account) error { _, err := a.AccountMode(ctx); return err },
			method: "GET", path: "/api/v5/account/positions", query: map[string]string{"instType": "SWAP"}, private: true},
		{name: "set leverage", doc: docs + "#trading-account-rest-api-set-leverage",
			call:   func(ctx context.Context, a *okx.Account) error { return a.SetLeverage(ctx, "BTC/USDT", 5) },
			method: "POST", path: "/api/v5/account/set-leverage", private: true,
			body: map[string]any{"instId": "BTC-USDT-SWAP", "lever": "5", "mgnMode": "cross"}},
		{name: "place, spot market buy", doc: docs + "#order-book-trading-trade-post-place-order",
			call:   place(confOrder(exchange.Spot, exchange.SideBuy, exchange.Market, "0.01")),
			method: "POST", path: "/api/v5/trade/order", private: true, expTime: true, body: spotOrder},
		{name: "place, spot market buy, demo trading", doc: docs + "#overview-demo-trading-services", demo: true,
			call:   place(confOrder(exchange.Spot, exchange.SideBuy, exchange.Market, "0.01")),
			method: "POST", path: "/api/v5/trade/order", private: true, expTime: true, body: spotOrder},
		{name: "look-up before placing", doc: docs + "#order-book-trading-trade-get-order-details",
			call:   place(confOrder(exchange.Spot, exchange.SideBuy, exchange.Market, "0.01")),
			method: "GET", path: "/api/v5/trade/order", private: true,
			query: map[string]string{"instId": "BTC-USDT", "clOrdId": confClOrdID}},
		{name: "place, spot limit sell", doc: docs + "#order-book-trading-trade-post-place-order",
			call:   place(limitSell),
			method: "POST", path: "/api/v5/trade/order", private: true, expTime: true,
			body: map[string]any{"instId": "BTC-USDT", "tdMode": "cash", "clOrdId": confClOrdID, "side": "sell",
				"ordType": "limit", "sz": "0.5", "px": "51000.5"}},
		{name: "place, swap entry, net mode (leverage first)", doc: docs + "#order-book-trading-trade-post-place-order",
			call:   place(entry),
			method: "POST", path: "/api/v5/trade/order", private: true, expTime: true,
			body: map[string]any{"instId": "BTC-USDT-SWAP", "tdMode": "cross", "clOrdId": confClOrdID, "side": "buy",
				"ordType": "market", "sz": "5"}},
		{name: "place, swap reduce-only, net mode", doc: docs + "#order-book-trading-trade-post-place-order",
			call:   place(reduce),
			method: "POST", path: "/api/v5/trade/order", private: true, expTime: true,
			body: map[string]any{"instId": "BTC-USDT-SWAP", "tdMode": "cross", "clOrdId": confClOrdID, "side": "sell",
				"ordType": "market", "sz": "5", "reduceOnly": true}},
		{name: "place, swap exit, long/short mode", doc: docs + "#order-book-trading-trade-post-place-order", mode: "long_short_mode",
			call:   place(reduce),
			method: "POST", path: "/api/v5/trade/order", private: true, expTime: true,
			body: map[string]any{"instId": "BTC-USDT-SWAP", "tdMode": "cross", "clOrdId": confClOrdID, "side": "sell",
				"posSide": "long", "ordType": "market", "sz": "5"}},
		{name: "place, swap entry short, long/short mode", doc: docs + "#order-book-trading-trade-post-place-order", mode: "long_short_mode",
			call:   place(confOrder(exchange.Futures, exchange.SideSell, exchange.Market, "0.05")),
			method: "POST", path: "/api/v5/trade/order", private: true, expTime: true,
			body: map[string]any{"instId": "BTC-USDT-SWAP", "tdMode": "cross", "clOrdId": confClOrdID, "side": "sell",
				"posSide": "short", "ordType": "market", "sz": "5"}},
		{name: "get order", doc: docs + "#order-book-trading-trade-get-order-details", setup: liveOrder,
			call: func(ctx context.Context, a *okx.Account) error {
				_, err := a.GetOrder(ctx, exchange.Spot, "BTC/USDT", confOrder("", "", "", "0").ClientOrderID)
				return err
			},
			method: "GET", path: "/api/v5/trade/order", private: true,
			query: map[string]string{"instId": "BTC-USDT", "clOrdId": confClOrdID}},
		{name: "cancel order", doc: docs + "#order-book-trading-trade-post-cancel-order", setup: liveOrder,
			call: func(ctx context.Context, a *okx.Account) error {
				_, err := a.CancelOrder(ctx, exchange.Spot, "BTC/USDT", confOrder("", "", "", "0").ClientOrderID)
				return err
			},
			method: "POST", path: "/api/v5/trade/cancel-order", private: true,
			body: map[string]any{"instId": "BTC-USDT", "clOrdId": confClOrdID}},
		{name: "place algo, swap stop-loss, net mode", doc: docs + "#order-book-trading-algo-trading-post-place-algo-order",
			call:   place(sl),
			method: "POST", path: "/api/v5/trade/order-algo", private: true,
			body: map[string]any{"instId": "BTC-USDT-SWAP", "tdMode": "cross", "side": "sell", "ordType": "conditional",
				"sz": "5", "algoClOrdId": confClOrdID, "reduceOnly": true, "slTriggerPx": "48000", "slOrdPx": "-1",
				"slTriggerPxType": "last"}},
		{name: "place algo, whole-position take-profit, long/short mode", doc: docs + "#order-book-trading-algo-trading-post-place-algo-order",
			mode: "long_short_mode", call: place(tpAll),
			method: "POST", path: "/api/v5/trade/order-algo", private: true,
			body: map[string]any{"instId": "BTC-USDT-SWAP", "tdMode": "cross", "side": "buy", "posSide": "short",
				"ordType": "conditional", "algoClOrdId": confClOrdID, "closeFraction": "1", "tpTriggerPx": "45000",
				"tpOrdPx": "-1", "tpTriggerPxType": "last"}},
		{name: "place algo, spot limit stop-loss", doc: docs + "#order-book-trading-algo-trading-post-place-algo-order",
			call:   place(spotSL),
			method: "POST", path: "/api/v5/trade/order-algo", private: true,
			body: map[string]any{"instId": "BTC-USDT", "tdMode": "cash", "side": "sell", "ordType": "conditional",
				"sz": "0.01", "tgtCcy": "base_ccy", "algoClOrdId": confClOrdID, "slTriggerPx": "45000", "slOrdPx": "44990",
				"slTriggerPxType": "last"}},
		{name: "get algo order", doc: docs + "#order-book-trading-algo-trading-get-algo-order-details", setup: liveAlgo,
			call: func(ctx context.Context, a *okx.Account) error {
				_, err := a.GetOrder(ctx, exchange.Futures, "BTC/USDT", confOrder("", "", "", "0").ClientOrderID)
				return err
			},
			method: "GET", path: "/api/v5/trade/order-algo", private: true, query: map[string]string{"algoClOrdId": confClOrdID}},
		{name: "cancel algo order", doc: docs + "#order-book-trading-algo-trading-post-cancel-algo-order", setup: liveAlgo,
			call: func(ctx context.Context, a *okx.Account) error {
				_, err := a.CancelOrder(ctx, exchange.Futures, "BTC/USDT", confOrder("", "", "", "0").ClientOrderID)
				return err
			},
			method: "POST", path: "/api/v5/trade/cancel-algos", private: true,
			body: []any{map[string]any{"algoId": "9001", "instId": "BTC-USDT-SWAP"}}},
	}
	if got := okx.ClOrdID(confOrder("", "", "", "0").ClientOrderID); got != confClOrdID {
		t.Fatalf("ClOrdID = %s", got)
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			if !strings.HasPrefix(r.doc, docs+"#") {
				t.Fatalf("row cites no OKX v5 page: %q", r.doc)
			}
			rc := newRecorder()
			if r.mode != "" {
				rc.posMode = r.mode
			}
			rc.expireTS = r.skew
			if r.setup != nil {
				r.setup(rc)
			}
			srv := httptest.NewServer(rc)
			defer srv.Close()
			okx.ResetCaches()
			a, err := okx.Connector{}.Open(exchange.Credentials{APIKey: recKey, APISecret: recSecret, Passphrase: recPass},
				exchange.Endpoints{Spot: srv.URL, Testnet: r.demo})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.call(context.Background(), a); err != nil {
				t.Fatalf("call: %v", err)
			}
			rc.mu.Lock()
			defer rc.mu.Unlock()
			var got *recorded
			for i := range rc.reqs {
				if rc.reqs[i].method == r.method && rc.reqs[i].path == r.path {
					got = &rc.reqs[i]
					break
				}
			}
			if got == nil {
				t.Fatalf("no %s %s among %d requests", r.method, r.path, len(rc.reqs))
			}
			checkRequest(t, r, got)
		})
	}
}

func checkRequest(t *testing.T, r row, got *recorded) {
	t.Helper()
	// Parameters: the exact set.
	if r.method == http.MethodGet {
		if len(got.body) != 0 {
			t.Errorf("GET with a body %q", got.body)
		}
		q := map[string]string{}
		for _, kv := range strings.Split(got.rawQuery, "&") {
			if kv == "" {
				continue
			}
			k, v, _ := strings.Cut(kv, "=")
			if _, dup := q[k]; dup {
				t.Errorf("parameter %s twice", k)
			}
			q[k] = v
		}
		if !reflect.DeepEqual(q, r.query) {
			t.Errorf("query %v, want %v", q, r.query)
		}
	} else {
		if got.rawQuery != "" {
			t.Errorf("POST with a query %q", got.rawQuery)
		}
		var body any
		if err := json.Unmarshal(got.body, &body); err != nil {
			t.Fatalf("body %q: %v", got.body, err)
		}
		want, _ := json.Marshal(r.body)
		var wantBody any
		_ = json.Unmarshal(want, &wantBody)
		if !reflect.DeepEqual(body, wantBody) {
			t.Errorf("body %s\n want %s", got.body, want)
		}
		if ct := got.header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("Content-Type %q", ct)
		}
	}
	// Demo trading is a header on the production host, on every request.
	if sim := got.header.Get("x-simulated-trading"); (sim == "1") != r.demo || (!r.demo && sim != "") {
		t.Errorf("x-simulated-trading %q (demo %v)", sim, r.demo)
	}
	exp := got.header.Get("expTime")
	if !r.private {
		for _, h := range []string{"OK-ACCESS-KEY", "OK-ACCESS-SIGN", "OK-ACCESS-TIMESTAMP", "OK-ACCESS-PASSPHRASE"} {
			if got.header.Get(h) != "" {
				t.Errorf("public request carries %s", h)
			}
		}
		if exp != "" {
			t.Errorf("public request carries expTime")
		}
		return
	}
	if got.header.Get("OK-ACCESS-KEY") != recKey || got.header.Get("OK-ACCESS-PASSPHRASE") != recPass {
		t.Errorf("key %q passphrase %q", got.header.Get("OK-ACCESS-KEY"), got.header.Get("OK-ACCESS-PASSPHRASE"))
	}
	ts := got.header.Get("OK-ACCESS-TIMESTAMP")
	if !isoMillis.MatchString(ts) {
		t.Fatalf("OK-ACCESS-TIMESTAMP %q is not ISO 8601 UTC with milliseconds", ts)
	}
	sent, _ := time.Parse("2006-01-02T15:04:05.000Z", ts)
	if d := time.Since(sent); d < -time.Second || d > 5*time.Second {
		t.Errorf("timestamp %s is %s away", ts, d)
	}
	requestPath := got.path
	if got.rawQuery != "" {
		requestPath += "?" + got.rawQuery
	}
	prehash := ts + got.method + requestPath + string(got.body)
	mac := hmac.New(sha256.New, []byte(recSecret))
	mac.Write([]byte(prehash))
	if want := base64.StdEncoding.EncodeToString(mac.Sum(nil)); got.header.Get("OK-ACCESS-SIGN") != want {
		t.Errorf("OK-ACCESS-SIGN %q is not base64 HMAC-SHA256 of %q", got.header.Get("OK-ACCESS-SIGN"), prehash)
	}
	if r.expTime {
		ms, err := strconv.ParseInt(exp, 10, 64)
		if err != nil {
			t.Fatalf("expTime %q", exp)
		}
		if d := time.UnixMilli(ms).Sub(sent); d != okx.DefaultExpiry {
			t.Errorf("expTime is %s after the timestamp, want %s", d, okx.DefaultExpiry)
		}
	} else if exp != "" {
		t.Errorf("expTime %q on an endpoint that takes none", exp)
	}
}
