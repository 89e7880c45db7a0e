package okx

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
)

func TestStatusOf(t *testing.T) {
	for in, want := range map[string]exchange.OrderStatus{
		"live": exchange.StatusOpen, "partially_filled": exchange.StatusPartiallyFilled, "filled": exchange.StatusFilled,
		"canceled": exchange.StatusCancelled, "mmp_canceled": exchange.StatusCancelled, "whatever": exchange.StatusPending,
	} {
		if got := statusOf(in); got != want {
			t.Errorf("statusOf(%s) = %s, want %s", in, got, want)
		}
	}
	for in, want := range map[string]exchange.OrderStatus{
		"live": exchange.StatusOpen, "pause": exchange.StatusOpen, "effective": exchange.StatusFilled,
		"canceled": exchange.StatusCancelled, "order_failed": exchange.StatusCancelled,
		"partially_failed": exchange.StatusCancelled, "new_state": exchange.StatusPending,
	} {
		if got := algoStatusOf(in); got != want {
			t.Errorf("algoStatusOf(%s) = %s, want %s", in, got, want)
		}
	}
	for in, want := range map[string]exchange.OrderType{"market": exchange.Market, "optimal_limit_ioc": exchange.Market,
		"limit": exchange.Limit, "post_only": exchange.Limit, "ioc": exchange.Limit} {
		if got := typeOf(in); got != want {
			t.Errorf("typeOf(%s) = %s", in, got)
		}
	}
}

func TestClOrdID(t *testing.T) {
	exec := "sg-0123456789abcdef0123456789abcdef"
	if got := ClOrdID(exec); got != "sg0123456789abcdef0123456789abcd" || len(got) != 32 {
		t.Errorf("executor ID: %s", got)
	}
	if got := ClOrdID("abc123"); got != "abc123" {
		t.Errorf("short alphanumeric ID changed: %s", got)
	}
	seen := map[string]string{}
	for _, id := range []string{"sig:1/a", strings.Repeat("a", 32), strings.Repeat("a", 33), "with space", "é",
		"sg-0123456789abcdef0123456789abcdeX", "sg-0123456789abcdef", exec, "sg0123456789abcdef0123456789abcd"} {
		got := ClOrdID(id)
		if len(got) < 1 || len(got) > 32 || !alnum(got) || got != ClOrdID(id) {
			t.Errorf("ClOrdID(%q) = %q", id, got)
		}
		if prev, dup := seen[got]; dup {
			t.Errorf("%q and %q share %q", prev, id, got)
		}
		seen[got] = id
	}
}

func TestSizeInContracts(t *testing.T) {
	m := &market{raw: "BTC-USDT-SWAP", instType: "SWAP", ctVal: testkit.D("0.01"), lotSz: testkit.D("1"), minSz: testkit.D("1"),
		info: exchange.MarketInfo{Base: "BTC"}}
	for amount, want := range map[string]string{"0.01": "1", "0.5": "50", "1.23": "123"} {
		if got, err := m.size(testkit.D(amount)); err != nil || got != want {
			t.Errorf("size(%s) = %s, %v; want %s", amount, got, err, want)
		}
	}
	for _, amount := range []string{"0.123", "0.015", "0.001"} {
		if _, err := m.size(testkit.D(amount)); errs.CodeOf(err) != errs.InvalidAmount {
			t.Errorf("size(%s) at lot 1: %v", amount, err)
		}
	}
	m.lotSz, m.minSz = testkit.D("0.1"), testkit.D("0.1")
	if got, err := m.size(testkit.D("0.123")); err != nil || got != "12.3" {
		t.Errorf("size(0.123) at lot 0.1 = %s, %v", got, err)
	}
	if _, err := m.size(testkit.D("0.0001")); errs.CodeOf(err) != errs.InvalidAmount {
		t.Errorf("below minSz: %v", err)
	}
	testkit.EqualD(t, "back to base", m.base(testkit.D("12.3")), "0.123")
	// A contract value that is not a power of ten is still exact.
	m.ctVal, m.lotSz, m.minSz = testkit.D("0.03"), testkit.D("1"), testkit.D("1")
	if got, err := m.size(testkit.D("0.09")); err != nil || got != "3" {
		t.Errorf("size(0.09) at ctVal 0.03 = %s, %v", got, err)
	}
	if _, err := m.size(testkit.D("0.1")); errs.CodeOf(err) != errs.InvalidAmount {
		t.Errorf("0.1 at ctVal 0.03: %v", err)
	}
	spot := &market{raw: "BTC-USDT", instType: "SPOT", ctVal: decimal.NewFromInt(1)}
	if got, _ := spot.size(testkit.D("0.00012")); got != "0.00012" {
		t.Errorf("spot size %s", got)
	}
}

func TestFeeOf(t *testing.T) {
	spot := &market{instType: "SPOT", settle: "USDT", info: exchange.MarketInfo{Base: "BTC", Quote: "USDT"}}
	fee, asset := feeOf(spot, testkit.D("-0.00001"), "btc")
	if !fee.Equal(testkit.D("0.00001")) || asset != "BTC" {
		t.Errorf("base fee: %s %s", fee, asset)
	}
	fee, asset = feeOf(spot, testkit.D("-0.25"), "USDT")
	if !fee.Equal(testkit.D("0.25")) || asset != "USDT" {
		t.Errorf("quote fee: %s %s", fee, asset)
	}
	sw := &market{instType: "SWAP", settle: "USDT", info: exchange.MarketInfo{Base: "BTC", Quote: "USDT"}}
	fee, asset = feeOf(sw, testkit.D("0.01"), "USDT") // a maker rebate
	if !fee.Equal(testkit.D("-0.01")) || asset != "USDT" {
		t.Errorf("rebate: %s %s", fee, asset)
	}
	if fee, asset = feeOf(sw, decimal.Zero, ""); !fee.IsZero() || asset != "USDT" {
		t.Errorf("none: %s %s", fee, asset)
	}
}

func TestBodies(t *testing.T) {
	sw := &market{raw: "BTC-USDT-SWAP", instType: "SWAP", ctVal: testkit.D("0.01"), lotSz: testkit.D("0.01"),
		minSz: testkit.D("0.01"), info: exchange.MarketInfo{Kind: exchange.Futures, Base: "BTC"}}
	spot := &market{raw: "BTC-USDT", instType: "SPOT", ctVal: decimal.NewFromInt(1), info: exchange.MarketInfo{Kind: exchange.Spot}}
	req := func(kind exchange.Kind, side exchange.Side, typ exchange.OrderType, amount string) exchange.OrderRequest {
		return exchange.OrderRequest{ClientOrderID: "sg-1", Kind: kind, Side: side, Type: typ, Amount: testkit.D(amount),
			StopPrice: testkit.D("48000")}
	}
	for _, c := range []struct {
		m    *market
		req  exchange.OrderRequest
		mode exchange.PositionMode
		algo bool
		want string
	}{
		{spot, req(exchange.Spot, exchange.SideBuy, exchange.Market, "0.010"), "", false,
			`{"instId":"BTC-USDT","tdMode":"cash","clOrdId":"c","side":"buy","ordType":"market","sz":"0.01","tgtCcy":"base_ccy","banAmend":true}`},
		{sw, req(exchange.Futures, exchange.SideBuy, exchange.Market, "0.05"), exchange.OneWay, false,
			`{"instId":"BTC-USDT-SWAP","tdMode":"cross","clOrdId":"c","side":"buy","ordType":"market","sz":"5"}`},
		{sw, func() exchange.OrderRequest {
			r := req(exchange.Futures, exchange.SideSell, exchange.Market, "0.05")
			r.ReduceOnly = true
			return r
		}(), exchange.OneWay, false,
			`{"instId":"BTC-USDT-SWAP","tdMode":"cross","clOrdId":"c","side":"sell","ordType":"market","sz":"5","reduceOnly":true}`},
		{sw, func() exchange.OrderRequest {
			r := req(exchange.Futures, exchange.SideSell, exchange.Market, "0.05")
			r.ReduceOnly = true
			return r
		}(), exchange.Hedge, false,
			`{"instId":"BTC-USDT-SWAP","tdMode":"cross","clOrdId":"c","side":"sell","posSide":"long","ordType":"market","sz":"5"}`},
		{sw, req(exchange.Futures, exchange.SideSell, exchange.Market, "0.05"), exchange.Hedge, false,
			`{"instId":"BTC-USDT-SWAP","tdMode":"cross","clOrdId":"c","side":"sell","posSide":"short","ordType":"market","sz":"5"}`},
		{sw, req(exchange.Futures, exchange.SideSell, exchange.StopLoss, "0.05"), exchange.OneWay, true,
			`{"instId":"BTC-USDT-SWAP","tdMode":"cross","side":"sell","ordType":"conditional","sz":"5","algoClOrdId":"c","reduceOnly":true,"slTriggerPx":"48000","slOrdPx":"-1","slTriggerPxType":"last"}`},
		{sw, req(exchange.Futures, exchange.SideBuy, exchange.TakeProfit, "0"), exchange.Hedge, true,
			`{"instId":"BTC-USDT-SWAP","tdMode":"cross","side":"buy","posSide":"short","ordType":"conditional","algoClOrdId":"c","closeFraction":"1","tpTriggerPx":"48000","tpOrdPx":"-1","tpTriggerPxType":"last"}`},
		{spot, req(exchange.Spot, exchange.SideSell, exchange.StopLoss, "0.01"), "", true,
			`{"instId":"BTC-USDT","tdMode":"cash","side":"sell","ordType":"conditional","sz":"0.01","tgtCcy":"base_ccy","algoClOrdId":"c","slTriggerPx":"48000","slOrdPx":"-1","slTriggerPxType":"last"}`},
	} {
		var b []byte
		var err error
		if c.algo {
			b, _, err = algoOrderBody(c.m, c.req, "c", c.mode)
		} else {
			b, _, err = orderBody(c.m, c.req, "c", c.mode)
		}
		if err != nil || string(b) != c.want {
			t.Errorf("%s %s %s %s:\n got %s %v\nwant %s", c.m.raw, c.req.Side, c.req.Type, c.mode, b, err, c.want)
		}
	}
	lim := req(exchange.Futures, exchange.SideBuy, exchange.Limit, "0.001")
	lim.Price = testkit.D("49999.90")
	b, _, _ := orderBody(sw, lim, "c", exchange.OneWay)
	var got map[string]any
	_ = json.Unmarshal(b, &got)
	if got["px"] != "49999.9" || got["ordType"] != "limit" || got["sz"] != "0.1" {
		t.Errorf("limit body %s", b)
	}
}

func TestClassify(t *testing.T) {
	for msg, want := range map[string]class{
		"Parameter posSide error":     classMode,
		"Parameter sz error":          classAmount,
		"Parameter px error":          classPrice,
		"Parameter slTriggerPx error": classPrice,
		"Parameter instId error":      classSymbol,
		"Parameter clOrdId error":     classOther,
		"Parameter tdMode error":      classOther,
	} {
		if got := classify(&apiError{status: 400, code: 51000, msg: msg}); got != want {
			t.Errorf("classify(51000 %q) = %v, want %v", msg, got, want)
		}
	}
	if classify(&apiError{status: 401}) != classCredentials || classify(&apiError{status: 429}) != classRateLimit {
		t.Error("HTTP-level classes")
	}
	c := &client{}
	if err := c.typed(&apiError{status: 401, code: 50102, msg: "Timestamp request expired."}, "x"); errs.CodeOf(err) != errs.ExchangeDisconnected ||
		errors.Is(err, exchange.ErrInvalidCredentials) {
		t.Errorf("clock: %v", err)
	}
}

func TestConnectEndpoints(t *testing.T) {
	creds := exchange.Credentials{APIKey: "k", APISecret: "s", Passphrase: "p"}
	for _, c := range []struct {
		ep         exchange.Endpoints
		spot, swap string
		demo       bool
	}{
		{exchange.Endpoints{}, ProductionURL, ProductionURL, false},
		{exchange.Endpoints{Testnet: true}, ProductionURL, ProductionURL, true},
		{exchange.Endpoints{Spot: "http://127.0.0.1:9/"}, "http://127.0.0.1:9", "http://127.0.0.1:9", false},
		{exchange.Endpoints{Spot: "http://a:1", Futures: "http://b:2"}, "http://a:1", "http://b:2", false},
	} {
		a, err := Connector{}.Open(creds, c.ep)
		if err != nil {
			t.Fatal(err)
		}
		if a.spot.base != c.spot || a.swap.base != c.swap || a.spot.demo != c.demo || a.swap.demo != c.demo {
			t.Errorf("%+v: spot %s swap %s demo %v", c.ep, a.spot.base, a.swap.base, a.spot.demo)
		}
	}
	if _, err := (Connector{}).Open(creds, exchange.Endpoints{Spot: "ftp://x"}); errs.CodeOf(err) != errs.ExchangeDisconnected {
		t.Errorf("bad URL: %v", err)
	}
}

func TestClean(t *testing.T) {
	c := &client{key: "KEY123", secret: "SECRET456", passphrase: "PASS789"}
	got := c.clean("bad KEY123, SECRET456 and PASS789")
	for _, s := range []string{"KEY123", "SECRET456", "PASS789"} {
		if strings.Contains(got, s) {
			t.Errorf("clean = %q", got)
		}
	}
	if got := c.clean(strings.Repeat("x", 400)); len(got) > 310 {
		t.Errorf("not bounded: %d", len(got))
	}
}
