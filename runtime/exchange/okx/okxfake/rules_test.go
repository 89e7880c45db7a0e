package okxfake_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange/okx/okxfake"
)

// call is one request to the fake, signed unless told otherwise.
type call struct {
	method, path, query, body string
	key, secret, pass, ts     string
	demo                      bool
	noKey, noPass, noSign     bool
	noTS                      bool
	expTime                   string
}

type answer struct {
	status int
	Code   string           `json:"code"`
	Msg    string           `json:"msg"`
	Data   []map[string]any `json:"data"`
}

// code is the answer's code, or the refused order's sCode under the batch code "1".
func (a answer) code() string {
	if a.Code == "1" && len(a.Data) > 0 {
		s, _ := a.Data[0]["sCode"].(string)
		return s
	}
	return a.Code
}

func (a answer) msg() string {
	if a.Code == "1" && len(a.Data) > 0 {
		s, _ := a.Data[0]["sMsg"].(string)
		return s
	}
	return a.Msg
}

func send(t *testing.T, srv *okxfake.Server, c call) answer {
	t.Helper()
	if c.method == "" {
		c.method = http.MethodPost
	}
	if c.key == "" {
		c.key = okxfake.APIKey
	}
	if c.secret == "" {
		c.secret = okxfake.APISecret
	}
	if c.pass == "" {
		c.pass = okxfake.Passphrase
	}
	if c.ts == "" {
		c.ts = time.Now().UTC().Format("2006-01-02T15:04:05.000Z")
	}
	target := c.path
	if c.query != "" {
		target += "?" + c.query
	}
	var body io.Reader
	if c.method == http.MethodPost {
		body = strings.NewReader(c.body)
	}
	req, _ := http.NewRequest(c.method, srv.URL()+target, body)
	req.Header.Set("Content-Type", "application/json")
	mac := hmac.New(sha256.New, []byte(c.secret))
	io.WriteString(mac, c.ts+c.method+target+c.body)
	if !c.noKey {
		req.Header.Set("OK-ACCESS-KEY", c.key)
	}
	if !c.noPass {
		req.Header.Set("OK-ACCESS-PASSPHRASE", c.pass)
	}
	if !c.noSign {
		req.Header.Set("OK-ACCESS-SIGN", base64.StdEncoding.EncodeToString(mac.Sum(nil)))
	}
	if !c.noTS {
		req.Header.Set("OK-ACCESS-TIMESTAMP", c.ts)
	}
	if c.demo {
		req.Header.Set("x-simulated-trading", "1")
	}
	if c.expTime != "" {
		req.Header.Set("expTime", c.expTime)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a answer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatalf("%s %s: %v", c.method, c.path, err)
	}
	a.status = resp.StatusCode
	return a
}

func expect(t *testing.T, a answer, code int, msgPart string) {
	t.Helper()
	if a.code() != strconv.Itoa(code) || !strings.Contains(a.msg(), msgPart) {
		t.Errorf("answer %d %s %q %v, want code %d with %q", a.status, a.Code, a.msg(), a.Data, code, msgPart)
	}
}

func fake(t *testing.T) *okxfake.Server {
	t.Helper()
	srv := okxfake.New()
	t.Cleanup(srv.Close)
	return srv
}

const (
	balance = "/api/v5/account/balance"
	order   = "/api/v5/trade/order"
	algo    = "/api/v5/trade/order-algo"
)

func spotBuy(extra string) string {
	return `{"instId":"BTC-USDT","tdMode":"cash","clOrdId":"c1","side":"buy","ordType":"market","sz":"0.01","tgtCcy":"base_ccy"` + extra + `}`
}

func swapBuy(extra string) string {
	return `{"instId":"BTC-USDT-SWAP","tdMode":"cross","clOrdId":"s1","side":"buy","ordType":"market","sz":"1"` + extra + `}`
}

func TestRuleR1MissingKey(t *testing.T) {
	a := send(t, fake(t), call{method: "GET", path: balance, noKey: true})
	expect(t, a, 50103, `"OK-ACCESS-KEY" cannot be empty`)
	if a.status != 401 {
		t.Errorf("status %d", a.status)
	}
}

func TestRuleR2MissingPassphrase(t *testing.T) {
	expect(t, send(t, fake(t), call{method: "GET", path: balance, noPass: true}), 50104, `"OK-ACCESS-PASSPHRASE" cannot be empty`)
}

func TestRuleR3WrongPassphrase(t *testing.T) {
	expect(t, send(t, fake(t), call{method: "GET", path: balance, pass: "nope"}), 50105, `"OK-ACCESS-PASSPHRASE" incorrect`)
}

func TestRuleR4MissingSignOrTimestamp(t *testing.T) {
	srv := fake(t)
	expect(t, send(t, srv, call{method: "GET", path: balance, noSign: true}), 50106, `"OK-ACCESS-SIGN" cannot be empty`)
	expect(t, send(t, srv, call{method: "GET", path: balance, noTS: true}), 50107, `"OK-ACCESS-TIMESTAMP" cannot be empty`)
}

func TestRuleR5UnknownKey(t *testing.T) {
	expect(t, send(t, fake(t), call{method: "GET", path: balance, key: "nobody"}), 50111, "Invalid OK-ACCESS-KEY")
}

func TestRuleR6TimestampFormat(t *testing.T) {
	srv := fake(t)
	for _, ts := range []string{strconv.FormatInt(time.Now().UnixMilli(), 10), time.Now().UTC().Format(time.RFC3339)} {
		expect(t, send(t, srv, call{method: "GET", path: balance, ts: ts}), 50112, "Invalid OK-ACCESS-TIMESTAMP")
	}
}

func TestRuleR7Signature(t *testing.T) {
	srv := fake(t)
	expect(t, send(t, srv, call{method: "GET", path: balance, query: "ccy=USDT", secret: "nope"}), 50113, "Invalid signature")
	ok := send(t, srv, call{method: "GET", path: balance, query: "ccy=USDT"})
	expect(t, ok, 0, "")
}

func TestRuleR8StaleTimestamp(t *testing.T) {
	srv := fake(t)
	for _, d := range []time.Duration{-31 * time.Second, 31 * time.Second} {
		ts := time.Now().Add(d).UTC().Format("2006-01-02T15:04:05.000Z")
		expect(t, send(t, srv, call{method: "GET", path: balance, ts: ts}), 50102, "Timestamp request expired")
	}
	ts := time.Now().Add(-25 * time.Second).UTC().Format("2006-01-02T15:04:05.000Z")
	expect(t, send(t, srv, call{method: "GET", path: balance, ts: ts}), 0, "")
}

func TestRuleR9DemoHeader(t *testing.T) {
	srv := fake(t)
	expect(t, send(t, srv, call{method: "GET", path: balance, demo: true}), 50101, "does not match current environment")
	demo := okxfake.TradeOnly()
	demo.Demo = true
	srv.SetPermissions(demo)
	expect(t, send(t, srv, call{method: "GET", path: balance}), 50101, "does not match current environment")
	expect(t, send(t, srv, call{method: "GET", path: balance, demo: true}), 0, "")
}

func TestRuleR10ExpTime(t *testing.T) {
	srv := fake(t)
	past := strconv.FormatInt(time.Now().Add(-time.Millisecond*10).UnixMilli(), 10)
	expect(t, send(t, srv, call{path: order, body: spotBuy(""), expTime: past}), 50036, "expTime")
	if srv.OrderCount() != 0 {
		t.Error("an expired request was applied")
	}
	future := strconv.FormatInt(time.Now().Add(5*time.Second).UnixMilli(), 10)
	expect(t, send(t, srv, call{path: order, body: spotBuy(""), expTime: future}), 0, "")
}

func TestRuleR11KeyWithoutTrade(t *testing.T) {
	srv := fake(t)
	srv.SetPermissions(okxfake.KeyInfo{Perm: []string{"read_only", "withdraw"}})
	expect(t, send(t, srv, call{path: order, body: spotBuy("")}), 50120, "doesn't have permission")
	expect(t, send(t, srv, call{path: "/api/v5/account/set-leverage", body: `{"instId":"BTC-USDT-SWAP","lever":"5","mgnMode":"cross"}`}), 50120, "permission")
	// Reading works, and the key's withdraw permission is reported, not refused.
	a := send(t, srv, call{method: "GET", path: "/api/v5/account/config"})
	if a.code() != "0" || a.Data[0]["perm"] != "read_only,withdraw" {
		t.Errorf("config %v", a.Data)
	}
}

func TestRuleR12UnlistedParameter(t *testing.T) {
	srv := fake(t)
	a := send(t, srv, call{path: order, body: spotBuy(`,"marketUnit":"baseCoin"`)})
	expect(t, a, 51000, "Parameter marketUnit error")
	if a.status != 400 {
		t.Errorf("status %d", a.status)
	}
	expect(t, send(t, srv, call{method: "GET", path: balance, query: "coin=USDT"}), 51000, "Parameter coin error")
}

func TestRuleR13RequiredParameter(t *testing.T) {
	srv := fake(t)
	expect(t, send(t, srv, call{path: order, body: `{"instId":"BTC-USDT","tdMode":"cash","side":"buy","ordType":"market"}`}),
		50014, "Parameter sz can not be empty")
	expect(t, send(t, srv, call{path: "/api/v5/account/set-leverage", body: `{"instId":"BTC-USDT-SWAP","lever":"5"}`}),
		50014, "Parameter mgnMode can not be empty")
}

func TestRuleR14ClientOrderID(t *testing.T) {
	srv := fake(t)
	for _, id := range []string{"sg-0123", strings.Repeat("a", 33), "a_b", "é"} {
		body := strings.Replace(spotBuy(""), `"clOrdId":"c1"`, `"clOrdId":"`+id+`"`, 1)
		expect(t, send(t, srv, call{path: order, body: body}), 51000, "Parameter clOrdId error")
	}
	expect(t, send(t, srv, call{path: algo, body: `{"instId":"BTC-USDT","tdMode":"cash","side":"sell","ordType":"conditional","sz":"0.01","algoClOrdId":"a-1","slTriggerPx":"40000","slOrdPx":"-1"}`}),
		51000, "Parameter algoClOrdId error")
	expect(t, send(t, srv, call{path: order, body: strings.Replace(spotBuy(""), `"c1"`, `"`+strings.Repeat("A", 32)+`"`, 1)}), 0, "")
}

func TestRuleR15TradeMode(t *testing.T) {
	srv := fake(t)
	expect(t, send(t, srv, call{path: order, body: strings.Replace(swapBuy(""), `"cross"`, `"cash"`, 1)}), 51000, "Parameter tdMode error")
	expect(t, send(t, srv, call{path: order, body: strings.Replace(spotBuy(""), `"cash"`, `"cross"`, 1)}), 51000, "Parameter tdMode error")
}

func TestRuleR16PosSideRequiredInLongShortMode(t *testing.T) {
	srv := fake(t)
	srv.SetPositionMode(okxfake.LongShortMode)
	expect(t, send(t, srv, call{path: order, body: swapBuy("")}), 51000, "Parameter posSide error")
	expect(t, send(t, srv, call{path: order, body: swapBuy(`,"posSide":"net"`)}), 51000, "Parameter posSide error")
	expect(t, send(t, srv, call{path: order, body: swapBuy(`,"posSide":"long"`)}), 0, "")
}

func TestRuleR17PosSideInNetMode(t *testing.T) {
	srv := fake(t)
	expect(t, send(t, srv, call{path: order, body: swapBuy(`,"posSide":"long"`)}), 51000, "Parameter posSide error")
	expect(t, send(t, srv, call{path: order, body: swapBuy("")}), 0, "")
}

func TestRuleR18SpotReduceOnly(t *testing.T) {
	expect(t, send(t, fake(t), call{path: order, body: spotBuy(`,"reduceOnly":true`)}), 51139, "Reduce-only feature is unavailable")
}

func TestRuleR19LotSize(t *testing.T) {
	srv := fake(t)
	expect(t, send(t, srv, call{path: order, body: strings.Replace(swapBuy(""), `"sz":"1"`, `"sz":"1.005"`, 1)}), 51121, "multiple of the lot size")
	srv.SetLot("BTC-USDT-SWAP", "1", "1")
	expect(t, send(t, srv, call{path: order, body: strings.Replace(swapBuy(""), `"sz":"1"`, `"sz":"12.3"`, 1)}), 51121, "multiple of the lot size")
}

func TestRuleR20MinSize(t *testing.T) {
	expect(t, send(t, fake(t), call{path: order, body: strings.Replace(spotBuy(""), `"sz":"0.01"`, `"sz":"0.000005"`, 1)}),
		51020, "minimum order amount")
}

func TestRuleR21TickSize(t *testing.T) {
	srv := fake(t)
	body := `{"instId":"BTC-USDT","tdMode":"cash","clOrdId":"l1","side":"buy","ordType":"limit","sz":"0.01","px":"40000.05"}`
	expect(t, send(t, srv, call{path: order, body: body}), 51000, "Parameter px error")
	expect(t, send(t, srv, call{path: algo, body: `{"instId":"BTC-USDT","tdMode":"cash","side":"sell","ordType":"conditional","sz":"0.01","slTriggerPx":"40000.05","slOrdPx":"-1"}`}),
		51000, "Parameter slTriggerPx error")
}

func TestRuleR22LimitWithoutPrice(t *testing.T) {
	body := `{"instId":"BTC-USDT","tdMode":"cash","clOrdId":"l1","side":"buy","ordType":"limit","sz":"0.01"}`
	expect(t, send(t, fake(t), call{path: order, body: body}), 51204, "cannot be empty")
}

func TestRuleR23Instrument(t *testing.T) {
	srv := fake(t)
	expect(t, send(t, srv, call{path: order, body: strings.Replace(spotBuy(""), "BTC-USDT", "NOPE-USDT", 1)}), 51001, "doesn't exist")
	expect(t, send(t, srv, call{path: order, body: strings.Replace(spotBuy(""), "BTC-USDT", "OLD-USDT", 1)}), 51001, "doesn't exist")
}

func TestRuleR24PendingClientOrderID(t *testing.T) {
	srv := fake(t)
	limit := `{"instId":"BTC-USDT","tdMode":"cash","clOrdId":"dup1","side":"buy","ordType":"limit","sz":"0.01","px":"40000"}`
	expect(t, send(t, srv, call{path: order, body: limit}), 0, "")
	a := send(t, srv, call{path: order, body: limit})
	expect(t, a, 51016, "Client order ID already exists")
	if a.Code != "1" || a.Data[0]["clOrdId"] != "dup1" {
		t.Errorf("shape %+v", a)
	}
	// A filled order's clOrdId may be used again: OKX checks pending orders only.
	market := strings.Replace(spotBuy(""), `"c1"`, `"dup2"`, 1)
	expect(t, send(t, srv, call{path: order, body: market}), 0, "")
	expect(t, send(t, srv, call{path: order, body: market}), 0, "")
	if srv.OrdersCreated("dup2") != 2 {
		t.Errorf("%d orders of dup2", srv.OrdersCreated("dup2"))
	}
}

func TestRuleR25Insufficient(t *testing.T) {
	srv := fake(t)
	expect(t, send(t, srv, call{path: order, body: strings.Replace(spotBuy(`,"banAmend":true`), `"sz":"0.01"`, `"sz":"1"`, 1)}),
		51008, "Insufficient USDT balance")
	expect(t, send(t, srv, call{path: order, body: strings.Replace(swapBuy(""), `"sz":"1"`, `"sz":"500"`, 1)}),
		51008, "Insufficient USDT margin")
	// Without banAmend OKX shrinks a base-currency market buy to what the balance buys.
	a := send(t, srv, call{path: order, body: strings.Replace(spotBuy(""), `"sz":"0.01"`, `"sz":"1"`, 1)})
	expect(t, a, 0, "")
	if o, _ := srv.Order("c1"); !o.AccFillSz.Equal(decimal.RequireFromString("0.2")) {
		t.Errorf("amended fill %s", o.AccFillSz)
	}
}

func TestRuleR26ReduceOnly(t *testing.T) {
	srv := fake(t)
	sell := `{"instId":"BTC-USDT-SWAP","tdMode":"cross","clOrdId":"r1","side":"sell","ordType":"market","sz":"1","reduceOnly":true}`
	expect(t, send(t, srv, call{path: order, body: sell}), 51169, "don't have any positions")
	expect(t, send(t, srv, call{path: order, body: swapBuy("")}), 0, "")
	buy := strings.Replace(sell, `"sell"`, `"buy"`, 1)
	expect(t, send(t, srv, call{path: order, body: buy}), 51170, "same trading direction")
	srv.SetPositionMode(okxfake.LongShortMode)
	exit := `{"instId":"BTC-USDT-SWAP","tdMode":"cross","clOrdId":"r2","side":"buy","posSide":"short","ordType":"market","sz":"1"}`
	expect(t, send(t, srv, call{path: order, body: exit}), 51169, "don't have any positions")
}

func TestRuleR27TriggerSide(t *testing.T) {
	srv := fake(t) // last 50000
	for _, c := range []struct {
		side, leg, trigger string
		code               int
	}{
		{"sell", "sl", "50100", 51280}, {"buy", "sl", "49900", 51278}, {"sell", "tp", "49900", 51279}, {"buy", "tp", "50100", 51277},
	} {
		body := `{"instId":"BTC-USDT","tdMode":"cash","side":"` + c.side + `","ordType":"conditional","sz":"0.01","` +
			c.leg + `TriggerPx":"` + c.trigger + `","` + c.leg + `OrdPx":"-1"}`
		expect(t, send(t, srv, call{path: algo, body: body}), c.code, "trigger price")
	}
}

func TestRuleR28CloseFraction(t *testing.T) {
	srv := fake(t)
	expect(t, send(t, srv, call{path: order, body: strings.Replace(swapBuy(""), `"sz":"1"`, `"sz":"3"`, 1)}), 0, "")
	base := `"instId":"BTC-USDT-SWAP","tdMode":"cross","side":"sell","ordType":"conditional","slTriggerPx":"45000"`
	for _, c := range []struct {
		body string
		code int
		msg  string
	}{
		{`{"instId":"BTC-USDT","tdMode":"cash","side":"sell","ordType":"conditional","slTriggerPx":"45000","slOrdPx":"-1","closeFraction":"1"}`, 51327, "only available for Expiry Futures"},
		{`{` + base + `,"slOrdPx":"-1","closeFraction":"1"}`, 51328, "only available for reduceOnly"},
		{`{` + base + `,"slOrdPx":"44000","closeFraction":"1","reduceOnly":true}`, 51330, "only available for stop market"},
		{`{` + base + `,"slOrdPx":"-1","closeFraction":"1","reduceOnly":true,"sz":"1"}`, 50024, "can not exist at the same time"},
	} {
		expect(t, send(t, srv, call{path: algo, body: c.body}), c.code, c.msg)
	}
	whole := `{` + base + `,"slOrdPx":"-1","closeFraction":"1","reduceOnly":true}`
	expect(t, send(t, srv, call{path: algo, body: whole}), 0, "")
	expect(t, send(t, srv, call{path: algo, body: whole}), 51088, "only place 1 TP/SL order")
	srv.SetPositionMode(okxfake.LongShortMode)
	notClosing := `{"instId":"BTC-USDT-SWAP","tdMode":"cross","side":"buy","posSide":"long","ordType":"conditional","tpTriggerPx":"45000","tpOrdPx":"-1","closeFraction":"1"}`
	expect(t, send(t, srv, call{path: algo, body: notClosing}), 51331, "only available for close position")
}

func TestRuleR29PendingAlgoClientOrderID(t *testing.T) {
	srv := fake(t)
	body := `{"instId":"BTC-USDT","tdMode":"cash","side":"sell","ordType":"conditional","sz":"0.01","algoClOrdId":"a1","slTriggerPx":"40000","slOrdPx":"-1"}`
	expect(t, send(t, srv, call{path: algo, body: body}), 0, "")
	expect(t, send(t, srv, call{path: algo, body: body}), 51065, "algoClOrdId already exists")
}

func TestRuleR30CancelFinished(t *testing.T) {
	srv := fake(t)
	expect(t, send(t, srv, call{path: order, body: spotBuy("")}), 0, "")
	expect(t, send(t, srv, call{path: "/api/v5/trade/cancel-order", body: `{"instId":"BTC-USDT","clOrdId":"c1"}`}), 51400, "has been filled, canceled or does not exist")
	expect(t, send(t, srv, call{path: "/api/v5/trade/cancel-algos", body: `[{"algoId":"1","instId":"BTC-USDT"}]`}), 51400, "does not exist")
}

func TestRuleR31UnknownOrder(t *testing.T) {
	srv := fake(t)
	expect(t, send(t, srv, call{method: "GET", path: order, query: "clOrdId=none&instId=BTC-USDT"}), 51603, "Order does not exist")
	expect(t, send(t, srv, call{method: "GET", path: algo, query: "algoClOrdId=none"}), 51603, "Order does not exist")
}

func TestRuleR32Leverage(t *testing.T) {
	srv := fake(t)
	for _, lever := range []string{"0", "101", "2.5"} {
		body := `{"instId":"BTC-USDT-SWAP","lever":"` + lever + `","mgnMode":"cross"}`
		expect(t, send(t, srv, call{path: "/api/v5/account/set-leverage", body: body}), 51000, "Parameter lever error")
	}
	expect(t, send(t, srv, call{path: "/api/v5/account/set-leverage", body: `{"instId":"BTC-USDT-SWAP","lever":"100","mgnMode":"cross"}`}), 0, "")
}
