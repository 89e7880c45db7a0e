package bybitfake_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange/bybit/bybitfake"
)

// One test per rule of RULES.md: the bad request, sent signed as Bybit takes it, and the
// retCode and retMsg Bybit answers, in Bybit's JSON shape.

type answer struct {
	RetCode    int             `json:"retCode"`
	RetMsg     string          `json:"retMsg"`
	Result     json.RawMessage `json:"result"`
	RetExtInfo json.RawMessage `json:"retExtInfo"`
	Time       int64           `json:"time"`
}

// send makes a signed request: payload is the query string of a GET, the JSON body of a
// POST.
func send(t *testing.T, srv *bybitfake.Server, method, path, payload string) answer {
	t.Helper()
	url := srv.URL() + path
	var req *http.Request
	if method == http.MethodGet {
		if payload != "" {
			url += "?" + payload
		}
		req, _ = http.NewRequest(method, url, nil)
	} else {
		req, _ = http.NewRequest(method, url, strings.NewReader(payload))
		req.Header.Set("Content-Type", "application/json")
	}
	ts := strconv.FormatInt(time.Now().UnixMilli(), 10)
	mac := hmac.New(sha256.New, []byte(bybitfake.APISecret))
	mac.Write([]byte(ts + bybitfake.APIKey + "5000" + payload))
	req.Header.Set("X-BAPI-API-KEY", bybitfake.APIKey)
	req.Header.Set("X-BAPI-TIMESTAMP", ts)
	req.Header.Set("X-BAPI-RECV-WINDOW", "5000")
	req.Header.Set("X-BAPI-SIGN", hex.EncodeToString(mac.Sum(nil)))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("%s %s: HTTP %d", method, path, resp.StatusCode)
	}
	var a answer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatal(err)
	}
	return a
}

// refused checks a refusal: retCode, a retMsg holding msg, and Bybit's shape (result and
// retExtInfo empty objects, time set).
func refused(t *testing.T, a answer, code int, msg string) {
	t.Helper()
	if a.RetCode != code || !strings.Contains(a.RetMsg, msg) {
		t.Errorf("answered %d %q, want %d %q", a.RetCode, a.RetMsg, code, msg)
	}
	if string(a.Result) != "{}" || string(a.RetExtInfo) != "{}" || a.Time == 0 {
		t.Errorf("shape: result %s retExtInfo %s time %d", a.Result, a.RetExtInfo, a.Time)
	}
}

func start(t *testing.T) *bybitfake.Server {
	t.Helper()
	srv := bybitfake.New()
	t.Cleanup(srv.Close)
	return srv
}

func create(t *testing.T, srv *bybitfake.Server, body string) answer {
	t.Helper()
	return send(t, srv, http.MethodPost, "/v5/order/create", body)
}

func TestRuleR1Category(t *testing.T) {
	srv := start(t)
	refused(t, create(t, srv, `{"symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.01","orderLinkId":"r1a"}`),
		10001, "category")
	refused(t, create(t, srv, `{"category":"futures","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.01","orderLinkId":"r1b"}`),
		10001, "category invalid")
	refused(t, send(t, srv, http.MethodGet, "/v5/order/realtime", "category=swap&orderLinkId=x"), 10001, "category")
}

func TestRuleR2RequiredFields(t *testing.T) {
	srv := start(t)
	refused(t, create(t, srv, `{"category":"spot","symbol":"BTCUSDT","side":"Buy","orderType":"Market","orderLinkId":"r2a"}`),
		170105, "Parameter 'qty' was empty.")
	refused(t, create(t, srv, `{"category":"linear","symbol":"BTCUSDT","orderType":"Market","qty":"0.01","positionIdx":0,"orderLinkId":"r2b"}`),
		10001, "side")
}

func TestRuleR3Enumerations(t *testing.T) {
	srv := start(t)
	refused(t, create(t, srv, `{"category":"spot","symbol":"BTCUSDT","side":"buy","orderType":"Market","qty":"0.01","orderLinkId":"r3a"}`),
		170117, "Invalid side.")
	refused(t, create(t, srv, `{"category":"linear","symbol":"BTCUSDT","side":"BUY","orderType":"Market","qty":"0.01","positionIdx":0,"orderLinkId":"r3b"}`),
		10001, "side invalid")
	refused(t, create(t, srv, `{"category":"spot","symbol":"BTCUSDT","side":"Buy","orderType":"Stop","qty":"0.01","orderLinkId":"r3c"}`),
		170116, "Invalid orderType.")
	refused(t, create(t, srv, `{"category":"spot","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.01","price":"40000","timeInForce":"GTX","orderLinkId":"r3d"}`),
		170115, "Invalid timeInForce.")
	refused(t, create(t, srv, `{"category":"linear","symbol":"BTCUSDT","side":"Sell","orderType":"Market","qty":"0.01","triggerPrice":"48000","triggerDirection":2,"triggerBy":"Mark","positionIdx":0,"orderLinkId":"r3e"}`),
		10001, "triggerBy invalid")
}

func TestRuleR4OrderLinkID(t *testing.T) {
	srv := start(t)
	for _, link := range []string{strings.Repeat("a", 37), "sig:1/entry", "with space", ""} {
		body := `{"category":"spot","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.001","marketUnit":"baseCoin","orderLinkId":"` + link + `"}`
		refused(t, create(t, srv, body), 10001, "orderLinkId invalid")
	}
	// 36 characters of the allowed set are taken.
	ok := create(t, srv, `{"category":"spot","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.001","marketUnit":"baseCoin","orderLinkId":"`+strings.Repeat("aZ9-_", 7)+`a"}`)
	if ok.RetCode != 0 {
		t.Errorf("36 characters refused: %d %s", ok.RetCode, ok.RetMsg)
	}
}

func TestRuleR5ReduceOnlyOnSpot(t *testing.T) {
	srv := start(t)
	refused(t, create(t, srv, `{"category":"spot","symbol":"BTCUSDT","side":"Sell","orderType":"Market","qty":"0.001","reduceOnly":true,"orderLinkId":"r5"}`),
		10001, "reduceOnly")
}

func TestRuleR6OrderFilter(t *testing.T) {
	srv := start(t)
	refused(t, create(t, srv, `{"category":"spot","symbol":"BTCUSDT","side":"Sell","orderType":"Market","qty":"0.001","triggerPrice":"45000","orderFilter":"Stop","orderLinkId":"r6"}`),
		170201, "Invalid orderFilter parameter")
}

func TestRuleR7ConditionalWithoutTrigger(t *testing.T) {
	srv := start(t)
	for _, filter := range []string{"StopOrder", "tpslOrder"} {
		refused(t, create(t, srv, `{"category":"spot","symbol":"BTCUSDT","side":"Sell","orderType":"Market","qty":"0.001","orderFilter":"`+filter+`","orderLinkId":"r7`+filter+`"}`),
			170202, "Please enter the TP/SL price.")
	}
}

func TestRuleR8PositionIdx(t *testing.T) {
	srv := start(t)
	order := func(idx string) string {
		return `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.01"` + idx + `,"orderLinkId":"r8` + strconv.Itoa(len(idx)) + `"}`
	}
	refused(t, create(t, srv, order(`,"positionIdx":1`)), 10001, "position idx not match position mode")
	srv.SetPositionMode(bybitfake.BothSides)
	refused(t, create(t, srv, order(`,"positionIdx":0`)), 10001, "position idx not match position mode")
	refused(t, create(t, srv, order(``)), 10001, "position idx not match position mode") // required in hedge mode
	refused(t, create(t, srv, order(`,"positionIdx":3`)), 10001, "position idx not match position mode")
	if a := create(t, srv, order(`,"positionIdx":1`)); a.RetCode != 0 {
		t.Errorf("hedge long: %d %s", a.RetCode, a.RetMsg)
	}
	// USDC perpetuals are one-way only.
	srv.SetBalance("USDC", decimal.NewFromInt(1000))
	refused(t, create(t, srv, `{"category":"linear","symbol":"BTCPERP","side":"Buy","orderType":"Market","qty":"0.01","positionIdx":1,"orderLinkId":"r8usdc"}`),
		10001, "position idx not match position mode")
}

func TestRuleR9LinearTriggerDirection(t *testing.T) {
	srv := start(t)
	refused(t, create(t, srv, `{"category":"linear","symbol":"BTCUSDT","side":"Sell","orderType":"Market","qty":"0.01","triggerPrice":"48000","positionIdx":0,"reduceOnly":true,"orderLinkId":"r9"}`),
		10001, "TriggerDirection invalid")
}

func TestRuleR10QtyStep(t *testing.T) {
	srv := start(t)
	refused(t, create(t, srv, `{"category":"spot","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.0010001","marketUnit":"baseCoin","orderLinkId":"r10a"}`),
		170137, "Order volume decimal too long")
	refused(t, create(t, srv, `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.0105","positionIdx":0,"orderLinkId":"r10b"}`),
		10001, "Qty invalid")
}

func TestRuleR11TickSize(t *testing.T) {
	srv := start(t)
	refused(t, create(t, srv, `{"category":"spot","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.001","price":"40000.001","timeInForce":"GTC","orderLinkId":"r11a"}`),
		170134, "Order price decimal too long.")
	refused(t, create(t, srv, `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Limit","qty":"0.01","price":"40000.05","timeInForce":"GTC","positionIdx":0,"orderLinkId":"r11b"}`),
		10001, "price invalid")
	refused(t, create(t, srv, `{"category":"spot","symbol":"BTCUSDT","side":"Sell","orderType":"Market","qty":"0.001","triggerPrice":"45000.005","orderFilter":"StopOrder","orderLinkId":"r11c"}`),
		170134, "Order price decimal too long.")
	refused(t, create(t, srv, `{"category":"linear","symbol":"BTCUSDT","side":"Sell","orderType":"Market","qty":"0.01","triggerPrice":"48000.05","triggerDirection":2,"positionIdx":0,"reduceOnly":true,"orderLinkId":"r11d"}`),
		10001, "triggerPrice invalid")
}

func TestRuleR12DuplicateOrderLinkID(t *testing.T) {
	srv := start(t)
	spot := `{"category":"spot","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.001","marketUnit":"baseCoin","orderLinkId":"r12a"}`
	lin := `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.01","positionIdx":0,"orderLinkId":"r12b"}`
	for _, c := range []struct {
		body string
		code int
		msg  string
	}{{spot, 170141, "Duplicate clientOrderId"}, {lin, 110072, "OrderLinkedID is duplicate"}} {
		if a := create(t, srv, c.body); a.RetCode != 0 {
			t.Fatalf("first: %d %s", a.RetCode, a.RetMsg)
		}
		refused(t, create(t, srv, c.body), c.code, c.msg)
	}
}

func TestRuleR13SwitchMode(t *testing.T) {
	srv := start(t)
	sw := func(body string) answer { return send(t, srv, http.MethodPost, "/v5/position/switch-mode", body) }
	refused(t, sw(`{"category":"linear","mode":3}`), 10001, "symbol or coin is required")
	refused(t, sw(`{"category":"linear","symbol":"BTCUSDT","mode":1}`), 10001, "mode invalid")
	refused(t, sw(`{"category":"spot","symbol":"BTCUSDT","mode":3}`), 10001, "category invalid")
	refused(t, sw(`{"category":"linear","symbol":"BTCUSDT","mode":0}`), 110025, "Position mode has not been modified.")
	refused(t, sw(`{"category":"linear","symbol":"BTCPERP","mode":3}`), 110029, "Hedge mode is not supported for this symbol.")
	if a := create(t, srv, `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.01","positionIdx":0,"orderLinkId":"r13a"}`); a.RetCode != 0 {
		t.Fatalf("open: %d %s", a.RetCode, a.RetMsg)
	}
	refused(t, sw(`{"category":"linear","symbol":"BTCUSDT","mode":3}`), 110024, "existing position")
	if a := create(t, srv, `{"category":"linear","symbol":"ETHUSDT","side":"Buy","orderType":"Limit","qty":"0.1","price":"2000","timeInForce":"GTC","positionIdx":0,"orderLinkId":"r13b"}`); a.RetCode != 0 {
		t.Fatalf("rest: %d %s", a.RetCode, a.RetMsg)
	}
	refused(t, sw(`{"category":"linear","symbol":"ETHUSDT","mode":3}`), 110028, "open orders")
	if a := sw(`{"category":"linear","symbol":"DOGEUSDT","mode":3}`); a.RetCode != 0 || srv.PositionMode("DOGEUSDT") != bybitfake.BothSides {
		t.Errorf("a free symbol: %d %s", a.RetCode, a.RetMsg)
	}
}

func TestRuleR14PositionList(t *testing.T) {
	srv := start(t)
	refused(t, send(t, srv, http.MethodGet, "/v5/position/list", "category=linear"), 10001, "symbol or settleCoin is required")
	refused(t, send(t, srv, http.MethodGet, "/v5/position/list", "category=linear&limit=500&settleCoin=USDT"), 10001, "limit invalid")
	// With symbol, listed whether held or not, positionIdx by the mode.
	idx := func() []int {
		var res struct {
			List []struct {
				PositionIdx int `json:"positionIdx"`
			} `json:"list"`
		}
		a := send(t, srv, http.MethodGet, "/v5/position/list", "category=linear&symbol=BTCUSDT")
		json.Unmarshal(a.Result, &res)
		var out []int
		for _, p := range res.List {
			out = append(out, p.PositionIdx)
		}
		return out
	}
	if got := idx(); len(got) != 1 || got[0] != 0 {
		t.Errorf("one-way entries %v", got)
	}
	srv.SetPositionMode(bybitfake.BothSides)
	if got := idx(); len(got) != 2 || got[0] != 1 || got[1] != 2 {
		t.Errorf("hedge entries %v", got)
	}
}

func TestRuleR15SetLeverage(t *testing.T) {
	srv := start(t)
	lev := func(body string) answer { return send(t, srv, http.MethodPost, "/v5/position/set-leverage", body) }
	refused(t, lev(`{"category":"linear","symbol":"BTCUSDT","buyLeverage":"5","sellLeverage":"6"}`), 10001, "leverage invalid")
	refused(t, lev(`{"category":"linear","symbol":"BTCUSDT","buyLeverage":"10","sellLeverage":"10"}`), 110043, "leverage not modified")
}

func TestRuleR16Cancel(t *testing.T) {
	srv := start(t)
	cancel := func(body string) answer { return send(t, srv, http.MethodPost, "/v5/order/cancel", body) }
	refused(t, cancel(`{"category":"linear","symbol":"BTCUSDT","orderLinkId":"none"}`), 110001, "order not exists")
	refused(t, cancel(`{"category":"spot","symbol":"BTCUSDT","orderLinkId":"none"}`), 170213, "Order does not exist.")
	srv.SetBalance("BTC", decimal.NewFromInt(1))
	if a := create(t, srv, `{"category":"spot","symbol":"BTCUSDT","side":"Sell","orderType":"Market","qty":"0.001","triggerPrice":"45000","orderFilter":"StopOrder","orderLinkId":"r16"}`); a.RetCode != 0 {
		t.Fatalf("stop: %d %s", a.RetCode, a.RetMsg)
	}
	// A spot conditional order is cancelled with its orderFilter.
	refused(t, cancel(`{"category":"spot","symbol":"BTCUSDT","orderLinkId":"r16"}`), 170213, "Order does not exist.")
	if a := cancel(`{"category":"spot","symbol":"BTCUSDT","orderLinkId":"r16","orderFilter":"StopOrder"}`); a.RetCode != 0 {
		t.Errorf("with StopOrder: %d %s", a.RetCode, a.RetMsg)
	}
}

func TestRuleR17LinearOrderQueryNeedsAFilter(t *testing.T) {
	srv := start(t)
	refused(t, send(t, srv, http.MethodGet, "/v5/order/realtime", "category=linear"), 10001, "symbol, baseCoin or settleCoin is required")
}

func TestRuleR18WalletAccountType(t *testing.T) {
	srv := start(t)
	refused(t, send(t, srv, http.MethodGet, "/v5/account/wallet-balance", "accountType=SPOT"), 10001, "accountType only support UNIFIED")
}

func TestRuleR19Permissions(t *testing.T) {
	srv := start(t)
	srv.SetPermissions(bybitfake.SpotOnly())
	refused(t, create(t, srv, `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.01","positionIdx":0,"orderLinkId":"r19a"}`),
		10005, "Permission denied")
	refused(t, send(t, srv, http.MethodPost, "/v5/position/set-leverage", `{"category":"linear","symbol":"BTCUSDT","buyLeverage":"5","sellLeverage":"5"}`),
		10005, "Permission denied")
	srv.SetPermissions(bybitfake.KeyInfo{Permissions: map[string][]string{"ContractTrade": {"Order", "Position"}}})
	refused(t, create(t, srv, `{"category":"spot","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.001","marketUnit":"baseCoin","orderLinkId":"r19b"}`),
		10005, "Permission denied")
}
