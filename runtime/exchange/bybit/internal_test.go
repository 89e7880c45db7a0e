package bybit

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
)

func TestStatusOf(t *testing.T) {
	for in, want := range map[string]exchange.OrderStatus{
		"Created": exchange.StatusPending, "New": exchange.StatusOpen, "Untriggered": exchange.StatusOpen,
		"Triggered": exchange.StatusOpen, "Active": exchange.StatusOpen,
		"PartiallyFilled": exchange.StatusPartiallyFilled, "Filled": exchange.StatusFilled,
		"Cancelled": exchange.StatusCancelled, "PartiallyFilledCanceled": exchange.StatusCancelled,
		"Deactivated": exchange.StatusCancelled, "Rejected": exchange.StatusRejected, "Whatever": exchange.StatusPending,
	} {
		if got := statusOf(in); got != want {
			t.Errorf("statusOf(%s) = %s, want %s", in, got, want)
		}
	}
}

func TestTypeOf(t *testing.T) {
	for _, c := range []struct {
		o    bOrder
		want exchange.OrderType
	}{
		{bOrder{OrderType: "Market"}, exchange.Market},
		{bOrder{OrderType: "Limit", Price: "1"}, exchange.Limit},
		{bOrder{StopOrderType: "StopLoss", TriggerPrice: "1"}, exchange.StopLoss},
		{bOrder{StopOrderType: "TakeProfit", TriggerPrice: "1"}, exchange.TakeProfit},
		{bOrder{Side: "Sell", TriggerPrice: "48000", TriggerDirection: 2}, exchange.StopLoss},
		{bOrder{Side: "Sell", TriggerPrice: "52000", TriggerDirection: 1}, exchange.TakeProfit},
		{bOrder{Side: "Buy", TriggerPrice: "52000", TriggerDirection: 1}, exchange.StopLoss},
		{bOrder{Side: "Buy", TriggerPrice: "48000", TriggerDirection: 2}, exchange.TakeProfit},
		// spot: no direction and no lastPriceOnCreated; basePrice is the price at creation
		{bOrder{Side: "Sell", TriggerPrice: "45000", BasePrice: "50000"}, exchange.StopLoss},
		{bOrder{Side: "Sell", TriggerPrice: "55000", BasePrice: "50000"}, exchange.TakeProfit},
		{bOrder{Side: "Buy", TriggerPrice: "55000", BasePrice: "50000"}, exchange.StopLoss},
		{bOrder{Side: "Buy", TriggerPrice: "45000", BasePrice: "50000"}, exchange.TakeProfit},
		// an answer with lastPriceOnCreated and no direction
		{bOrder{Side: "Sell", TriggerPrice: "45000", LastPriceOnCreated: "50000"}, exchange.StopLoss},
		{bOrder{Side: "Sell", TriggerPrice: "55000", LastPriceOnCreated: "50000"}, exchange.TakeProfit},
		// nothing to compare with: reported a stop-loss, never guessed from a zero price
		{bOrder{Side: "Sell", TriggerPrice: "45000"}, exchange.StopLoss},
	} {
		if got := typeOf(c.o); got != c.want {
			t.Errorf("typeOf(%+v) = %s, want %s", c.o, got, c.want)
		}
	}
}

func TestBodyOfConditional(t *testing.T) {
	linear := &market{raw: "BTCUSDT", category: "linear", info: exchange.MarketInfo{Kind: exchange.Futures}}
	spot := &market{raw: "BTCUSDT", category: "spot", info: exchange.MarketInfo{Kind: exchange.Spot}}
	for _, c := range []struct {
		m        *market
		typ      exchange.OrderType
		side     exchange.Side
		wantJSON string
	}{
		{linear, exchange.StopLoss, exchange.SideSell, `{"category":"linear","symbol":"BTCUSDT","side":"Sell","orderType":"Market","qty":"0.01","triggerPrice":"48000","triggerDirection":2,"triggerBy":"LastPrice","positionIdx":0,"orderLinkId":"sg-1","reduceOnly":true,"closeOnTrigger":true}`},
		{linear, exchange.TakeProfit, exchange.SideSell, `{"category":"linear","symbol":"BTCUSDT","side":"Sell","orderType":"Market","qty":"0.01","triggerPrice":"48000","triggerDirection":1,"triggerBy":"LastPrice","positionIdx":0,"orderLinkId":"sg-1","reduceOnly":true,"closeOnTrigger":true}`},
		{linear, exchange.StopLoss, exchange.SideBuy, `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.01","triggerPrice":"48000","triggerDirection":1,"triggerBy":"LastPrice","positionIdx":0,"orderLinkId":"sg-1","reduceOnly":true,"closeOnTrigger":true}`},
		{linear, exchange.TakeProfit, exchange.SideBuy, `{"category":"linear","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.01","triggerPrice":"48000","triggerDirection":2,"triggerBy":"LastPrice","positionIdx":0,"orderLinkId":"sg-1","reduceOnly":true,"closeOnTrigger":true}`},
		{spot, exchange.StopLoss, exchange.SideSell, `{"category":"spot","symbol":"BTCUSDT","side":"Sell","orderType":"Market","qty":"0.01","marketUnit":"baseCoin","triggerPrice":"48000","orderFilter":"StopOrder","orderLinkId":"sg-1"}`},
		{spot, exchange.Market, exchange.SideBuy, `{"category":"spot","symbol":"BTCUSDT","side":"Buy","orderType":"Market","qty":"0.01","marketUnit":"baseCoin","orderLinkId":"sg-1"}`},
	} {
		req := exchange.OrderRequest{ClientOrderID: "sg-1", Kind: c.m.info.Kind, Side: c.side, Type: c.typ,
			Amount: testkit.D("0.010"), StopPrice: testkit.D("48000")}
		b, err := bodyOf(c.m, req, "sg-1", exchange.OneWay)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != c.wantJSON {
			t.Errorf("%s %s %s:\n got %s\nwant %s", c.m.category, c.typ, c.side, b, c.wantJSON)
		}
	}
	// A limit order carries its exact price and GTC.
	req := exchange.OrderRequest{ClientOrderID: "sg-1", Kind: exchange.Futures, Side: exchange.SideBuy,
		Type: exchange.Limit, Amount: testkit.D("0.001"), Price: testkit.D("49999.90")}
	b, _ := bodyOf(linear, req, "sg-1", exchange.OneWay)
	var got map[string]any
	json.Unmarshal(b, &got)
	if got["price"] != "49999.9" || got["timeInForce"] != "GTC" || got["qty"] != "0.001" {
		t.Errorf("limit body %s", b)
	}
}

func TestLinkID(t *testing.T) {
	exec := "sg-0123456789abcdef0123456789abcdef"
	if LinkID(exec) != exec {
		t.Errorf("executor ID changed: %s", LinkID(exec))
	}
	for _, id := range []string{"sig:1/a", strings.Repeat("a", 37), "with space", "é"} {
		l := LinkID(id)
		if !validLinkID(l) || len(l) != 34 || l != LinkID(id) {
			t.Errorf("LinkID(%q) = %q", id, l)
		}
	}
}

func TestClassify10001(t *testing.T) {
	for msg, want := range map[string]class{
		"params error: symbol invalid":                           classSymbol,
		"params error: price invalid":                            classPrice,
		"params error: Qty invalid":                              classAmount,
		"The number of contracts exceeds minimum limit allowed":  classAmount,
		"params error: leverage invalid":                         classAmount,
		"params error: positionIdx not match position mode blah": classOther,
	} {
		if got := classify(&apiError{status: 200, code: 10001, msg: msg}); got != want {
			t.Errorf("classify(10001 %q) = %v, want %v", msg, got, want)
		}
	}
}

func TestConnectEndpoints(t *testing.T) {
	creds := exchange.Credentials{APIKey: "k", APISecret: "s"}
	for _, c := range []struct {
		ep           exchange.Endpoints
		spot, linear string
	}{
		{exchange.Endpoints{}, MainnetURL, MainnetURL},
		{exchange.Endpoints{Testnet: true}, TestnetURL, TestnetURL},
		{exchange.Endpoints{Spot: "http://127.0.0.1:9/"}, "http://127.0.0.1:9", "http://127.0.0.1:9"},
		{exchange.Endpoints{Spot: "http://a:1", Futures: "http://b:2"}, "http://a:1", "http://b:2"},
	} {
		a, err := Connector{}.Open(creds, c.ep)
		if err != nil {
			t.Fatal(err)
		}
		if a.spot.base != c.spot || a.linear.base != c.linear {
			t.Errorf("%+v: spot %s linear %s", c.ep, a.spot.base, a.linear.base)
		}
	}
	if _, err := (Connector{}).Open(creds, exchange.Endpoints{Spot: "ftp://x"}); errs.CodeOf(err) != errs.ExchangeDisconnected {
		t.Errorf("bad URL: %v", err)
	}
	_, err := Connector{}.Connect(exchange.Credentials{APIKey: "k"}, exchange.Endpoints{})
	if !errors.Is(err, exchange.ErrInvalidCredentials) || errs.CodeOf(err) != errs.ExchangeDisconnected {
		t.Errorf("no secret: %v", err)
	}
	if (Connector{}).Name() != "bybit" {
		t.Error("name")
	}
}

func TestCleanAndWait(t *testing.T) {
	c := &client{key: "KEY123", secret: "SECRET456"}
	got := c.clean("error sign! origin_string[1700000000000KEY1235000category=spot]")
	if got != "error sign!" {
		t.Errorf("clean = %q", got)
	}
	if got := c.clean("bad KEY123 and SECRET456"); strings.Contains(got, "KEY123") || strings.Contains(got, "SECRET456") {
		t.Errorf("clean = %q", got)
	}
	now := time.UnixMilli(1_000_000)
	if w := (&apiError{code: 10006, resetAt: 1_001_500}).wait(now); w != 1500*time.Millisecond {
		t.Errorf("wait = %s", w)
	}
	if w := (&apiError{status: 403, retryAfter: ipBanWait}).wait(now); w != 10*time.Minute {
		t.Errorf("wait 403 = %s", w)
	}
	if w := (&apiError{code: 10006}).wait(now); w != time.Second {
		t.Errorf("default wait = %s", w)
	}
}

// TestFeeOf: cumFeeDetail first, cumExecFee only without it, and the conversion rules of
// exchange.Order.Fee/FeeAsset.
func TestFeeOf(t *testing.T) {
	spot := &market{category: "spot", info: exchange.MarketInfo{Base: "BTC", Quote: "USDT", Kind: exchange.Spot}}
	lin := &market{category: "linear", settle: "USDT", info: exchange.MarketInfo{Base: "BTC", Quote: "USDT", Kind: exchange.Futures}}
	for _, c := range []struct {
		name     string
		m        *market
		side     exchange.Side
		o        bOrder
		fee      string
		feeAsset string
	}{
		{"no detail: cumExecFee in the default coin", spot, exchange.SideBuy,
			bOrder{CumExecQty: "0.01", CumExecFee: "0.00001"}, "0.00001", "BTC"},
		{"no detail, nothing filled", spot, exchange.SideBuy, bOrder{CumExecFee: "0"}, "0", ""},
		{"detail wins over cumExecFee", spot, exchange.SideBuy,
			bOrder{CumExecQty: "0.01", CumExecFee: "0.00001", CumFeeDetail: map[string]num{"MNT": "0.4"}}, "0.4", "MNT"},
		{"base coin", spot, exchange.SideBuy,
			bOrder{CumExecQty: "0.01", CumFeeDetail: map[string]num{"BTC": "0.00001"}}, "0.00001", "BTC"},
		{"quote coin of a buy (maker rebate rules)", spot, exchange.SideBuy,
			bOrder{CumExecQty: "0.01", CumFeeDetail: map[string]num{"USDT": "-0.05"}}, "-0.05", "USDT"},
		{"settle coin", lin, exchange.SideSell,
			bOrder{CumExecQty: "0.01", CumFeeDetail: map[string]num{"USDT": "0.5"}}, "0.5", "USDT"},
		{"empty detail, filled", lin, exchange.SideSell,
			bOrder{CumExecQty: "0.01", CumFeeDetail: map[string]num{}}, "0", "USDT"},
		{"empty detail, nothing filled", lin, exchange.SideSell, bOrder{CumFeeDetail: map[string]num{}}, "0", ""},
		{"zero entries are no charge", spot, exchange.SideBuy,
			bOrder{CumExecQty: "0.01", CumFeeDetail: map[string]num{"BTC": "0", "MNT": "0.3"}}, "0.3", "MNT"},
		{"base and quote: base converted at the average price", spot, exchange.SideBuy,
			bOrder{CumExecQty: "0.02", AvgPrice: "50000", CumFeeDetail: map[string]num{"BTC": "0.00001", "USDT": "0.5"}}, "1", "USDT"},
		{"quote and a third coin: the third is left out", lin, exchange.SideBuy,
			bOrder{CumExecQty: "0.02", AvgPrice: "50000", CumFeeDetail: map[string]num{"MNT": "1", "USDT": "0.5"}}, "0.5", "USDT"},
	} {
		fee, asset := feeOf(c.m, c.side, c.o)
		if !fee.Equal(testkit.D(c.fee)) || asset != c.feeAsset {
			t.Errorf("%s: %s %q, want %s %q", c.name, fee, asset, c.fee, c.feeAsset)
		}
	}
}

// TestBodyOfHedge: positionIdx by the side the order acts on, reduce-only on every exit.
func TestBodyOfHedge(t *testing.T) {
	lin := &market{raw: "BTCUSDT", category: "linear", info: exchange.MarketInfo{Kind: exchange.Futures}}
	for _, c := range []struct {
		side       exchange.Side
		typ        exchange.OrderType
		reduceOnly bool
		hedgeIdx   int
		exits      bool
	}{
		{exchange.SideBuy, exchange.Market, false, 1, false},
		{exchange.SideSell, exchange.Limit, false, 2, false},
		{exchange.SideSell, exchange.Market, true, 1, true},
		{exchange.SideBuy, exchange.Market, true, 2, true},
		{exchange.SideSell, exchange.StopLoss, false, 1, true},
		{exchange.SideBuy, exchange.TakeProfit, false, 2, true},
	} {
		req := exchange.OrderRequest{ClientOrderID: "sg-1", Kind: exchange.Futures, Side: c.side, Type: c.typ,
			Amount: testkit.D("0.01"), Price: testkit.D("50000"), StopPrice: testkit.D("48000"), ReduceOnly: c.reduceOnly}
		for mode, idx := range map[exchange.PositionMode]int{exchange.OneWay: 0, exchange.Hedge: c.hedgeIdx} {
			b, err := bodyOf(lin, req, "sg-1", mode)
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				PositionIdx *int  `json:"positionIdx"`
				ReduceOnly  *bool `json:"reduceOnly"`
			}
			json.Unmarshal(b, &got)
			if got.PositionIdx == nil || *got.PositionIdx != idx || (got.ReduceOnly != nil) != c.exits {
				t.Errorf("%s %s reduceOnly=%v in %s: %s", c.side, c.typ, c.reduceOnly, mode, b)
			}
		}
	}
}
