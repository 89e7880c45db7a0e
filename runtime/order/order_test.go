package order_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/signal"
)

func market(t *testing.T, kind exchange.Kind, symbol string) exchange.MarketInfo {
	t.Helper()
	m, ok := paper.Market(kind, symbol)
	if !ok {
		t.Fatalf("no market %s", symbol)
	}
	return m
}

func TestEntryAmount(t *testing.T) {
	pct := func(v string) signal.Amount { return signal.Amount{Value: httpapi.Num(testkit.D(v)), Percent: true} }
	fixed := func(v string) signal.Amount { return signal.Amount{Value: httpapi.Num(testkit.D(v))} }
	cases := []struct {
		name      string
		kind      exchange.Kind
		symbol    string
		size      signal.Amount
		price     string
		available string
		leverage  int
		want      string
		code      errs.Code
	}{
		// floor(10000 × 10% / 65000 = 0.0153846…, 5 dp)
		{"spot 10% BTC", exchange.Spot, "BTC/USDT", pct("10"), "65000", "10000", 1, "0.01538", ""},
		// floor(1000 / 0.12345 = 8100.44…, step 1)
		{"spot 10% DOGE step 1", exchange.Spot, "DOGE/USDT", pct("10"), "0.12345", "10000", 1, "8100", ""},
		// 10000/65000 = 0.15384 would need 9999.60 + 9.9996 fee > 10000: cut to
		// floor(10000 / (65000 × 1.001)) = 0.15369 (9989.85 + 9.98985 = 9999.83985).
		{"spot 100% leaves room for the fee", exchange.Spot, "BTC/USDT", pct("100"), "65000", "10000", 1, "0.15369", ""},
		// 10% of 10000 = 1000 margin × 10 = 10000 notional / 65000 = 0.15384
		{"futures 10% ×10", exchange.Futures, "BTC/USDT", pct("10"), "65000", "10000", 10, "0.15384", ""},
		// leverage is ignored on spot
		{"spot ignores leverage", exchange.Spot, "BTC/USDT", pct("10"), "65000", "10000", 10, "0.01538", ""},
		{"fixed base amount rounds down", exchange.Spot, "BTC/USDT", fixed("0.123456"), "65000", "100", 1, "0.12345", ""},
		{"fixed ETH to 4 dp", exchange.Futures, "ETH/USDT", fixed("1.23456"), "3000", "10000", 3, "1.2345", ""},
		{"below min notional", exchange.Spot, "BTC/USDT", fixed("0.00007"), "65000", "10000", 1, "", errs.InvalidAmount},
		{"DOGE below one step", exchange.Spot, "DOGE/USDT", fixed("0.5"), "0.1", "10000", 1, "", errs.InvalidAmount},
		{"percent of an empty balance", exchange.Spot, "BTC/USDT", pct("50"), "65000", "0", 1, "", errs.InvalidAmount},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := order.EntryAmount(order.Entry{Market: market(t, c.kind, c.symbol), Size: c.size, Price: testkit.D(c.price),
				Available: testkit.D(c.available), FeeRate: testkit.D("0.001"), Leverage: c.leverage})
			if c.code != "" {
				if errs.CodeOf(err) != c.code {
					t.Fatalf("err = %v, want %s", err, c.code)
				}
				if c.code.Numeric() != 1002 {
					t.Fatalf("numeric code %d", c.code.Numeric())
				}
				return
			}
			if err != nil || !got.Equal(testkit.D(c.want)) {
				t.Fatalf("amount = %s, %v; want %s", got, err, c.want)
			}
		})
	}
}

func TestExitAmount(t *testing.T) {
	m := market(t, exchange.Spot, "BTC/USDT")
	held := testkit.D("0.01538")
	cases := []struct {
		size *signal.Amount
		want string
	}{
		{nil, "0.01538"},
		{&signal.Amount{Value: httpapi.Num(testkit.D("100")), Percent: true}, "0.01538"},
		{&signal.Amount{Value: httpapi.Num(testkit.D("50")), Percent: true}, "0.00769"},
		{&signal.Amount{Value: httpapi.Num(testkit.D("33")), Percent: true}, "0.00507"}, // 0.0050754 floored
		{&signal.Amount{Value: httpapi.Num(testkit.D("1"))}, "0.01538"},                 // capped at the holding
		{&signal.Amount{Value: httpapi.Num(testkit.D("0.010009"))}, "0.01"},
	}
	for _, c := range cases {
		got, err := order.ExitAmount(m, c.size, held)
		if err != nil || !got.Equal(testkit.D(c.want)) {
			t.Errorf("ExitAmount(%v) = %s, %v; want %s", c.size, got, err, c.want)
		}
	}
	if _, err := order.ExitAmount(m, &signal.Amount{Value: httpapi.Num(testkit.D("0.01")), Percent: true}, held); errs.CodeOf(err) != errs.InvalidAmount {
		t.Errorf("tiny percentage: %v", err)
	}
}

func TestRequestValidate(t *testing.T) {
	cases := []struct {
		name string
		req  order.Request
		code errs.Code
	}{
		{"market", order.Request{Type: exchange.Market, Side: exchange.SideBuy, Symbol: "BTC/USDT", Amount: httpapi.NumOrNil(testkit.DP("0.01"))}, ""},
		{"limit", order.Request{Type: exchange.Limit, Side: exchange.SideSell, Symbol: "BTC/USDT", Amount: httpapi.NumOrNil(testkit.DP("0.01")), Price: httpapi.NumOrNil(testkit.DP("70000"))}, ""},
		{"stop_loss", order.Request{Type: exchange.StopLoss, Symbol: "BTC/USDT", StopPrice: httpapi.NumOrNil(testkit.DP("60000")), ClosePercent: httpapi.NumOrNil(testkit.DP("100"))}, ""},
		{"take_profit", order.Request{Type: exchange.TakeProfit, Symbol: "ETH/USDT", TakeProfitPrice: httpapi.NumOrNil(testkit.DP("4000")), ClosePercent: httpapi.NumOrNil(testkit.DP("50"))}, ""},
		{"symbol without slash", order.Request{Type: exchange.Market, Side: exchange.SideBuy, Symbol: "BTCUSDT", Amount: httpapi.NumOrNil(testkit.DP("1"))}, errs.InvalidSymbol},
		{"lower-case symbol", order.Request{Type: exchange.Market, Side: exchange.SideBuy, Symbol: "btc/usdt", Amount: httpapi.NumOrNil(testkit.DP("1"))}, errs.InvalidSymbol},
		{"no amount: the bot's size", order.Request{Type: exchange.Market, Side: exchange.SideBuy, Symbol: "BTC/USDT"}, ""},
		{"zero amount", order.Request{Type: exchange.Market, Side: exchange.SideBuy, Symbol: "BTC/USDT", Amount: httpapi.NumOrNil(testkit.DP("0"))}, errs.InvalidAmount},
		{"limit without price", order.Request{Type: exchange.Limit, Side: exchange.SideBuy, Symbol: "BTC/USDT", Amount: httpapi.NumOrNil(testkit.DP("1"))}, errs.InvalidPrice},
		{"market with price", order.Request{Type: exchange.Market, Side: exchange.SideBuy, Symbol: "BTC/USDT", Amount: httpapi.NumOrNil(testkit.DP("1")), Price: httpapi.NumOrNil(testkit.DP("1"))}, errs.InvalidPrice},
		{"stop without price", order.Request{Type: exchange.StopLoss, Symbol: "BTC/USDT", ClosePercent: httpapi.NumOrNil(testkit.DP("100"))}, errs.InvalidPrice},
		{"take profit negative", order.Request{Type: exchange.TakeProfit, Symbol: "BTC/USDT", TakeProfitPrice: httpapi.NumOrNil(testkit.DP("-1")), ClosePercent: httpapi.NumOrNil(testkit.DP("100"))}, errs.InvalidPrice},
		{"closePercent over 100", order.Request{Type: exchange.StopLoss, Symbol: "BTC/USDT", StopPrice: httpapi.NumOrNil(testkit.DP("1")), ClosePercent: httpapi.NumOrNil(testkit.DP("101"))}, errs.InvalidAmount},
		{"closePercent missing", order.Request{Type: exchange.StopLoss, Symbol: "BTC/USDT", StopPrice: httpapi.NumOrNil(testkit.DP("1"))}, errs.InvalidAmount},
		{"bad side", order.Request{Type: exchange.Market, Side: "hold", Symbol: "BTC/USDT", Amount: httpapi.NumOrNil(testkit.DP("1"))}, errs.InvalidAction},
		{"bad type", order.Request{Type: "iceberg", Side: exchange.SideBuy, Symbol: "BTC/USDT", Amount: httpapi.NumOrNil(testkit.DP("1"))}, errs.InvalidAction},
		{"entry with exits", order.Request{Type: exchange.Market, Side: exchange.SideBuy, Symbol: "BTC/USDT", Amount: httpapi.NumOrNil(testkit.DP("1")),
			StopLoss: httpapi.NumOrNil(testkit.DP("60000")), TakeProfit: httpapi.NumOrNil(testkit.DP("70000"))}, ""},
		{"entry with zero stop", order.Request{Type: exchange.Limit, Side: exchange.SideBuy, Symbol: "BTC/USDT", Amount: httpapi.NumOrNil(testkit.DP("1")),
			Price: httpapi.NumOrNil(testkit.DP("65000")), StopLoss: httpapi.NumOrNil(testkit.DP("0"))}, errs.InvalidPrice},
		{"entry with negative take profit", order.Request{Type: exchange.Market, Side: exchange.SideBuy, Symbol: "BTC/USDT",
			Amount: httpapi.NumOrNil(testkit.DP("1")), TakeProfit: httpapi.NumOrNil(testkit.DP("-1"))}, errs.InvalidPrice},
		{"stop_loss with stopLoss", order.Request{Type: exchange.StopLoss, Symbol: "BTC/USDT", StopPrice: httpapi.NumOrNil(testkit.DP("1")),
			ClosePercent: httpapi.NumOrNil(testkit.DP("100")), StopLoss: httpapi.NumOrNil(testkit.DP("1"))}, errs.InvalidAction},
		{"entry naming an order", order.Request{Type: exchange.Market, Side: exchange.SideBuy, Symbol: "BTC/USDT", Amount: httpapi.NumOrNil(testkit.DP("1")),
			ClientOrderID: "sg-1"}, errs.InvalidAction},
		{"close with exits", order.Request{Type: order.Close, Symbol: "BTC/USDT", StopLoss: httpapi.NumOrNil(testkit.DP("1"))}, errs.InvalidAction},
		{"cancel", order.Request{Type: order.Cancel, ClientOrderID: "sg-0123"}, ""},
		{"cancel without order", order.Request{Type: order.Cancel}, errs.InvalidParameter},
		{"cancel with symbol", order.Request{Type: order.Cancel, ClientOrderID: "sg-0123", Symbol: "BTC/USDT"}, errs.InvalidAction},
		{"cancel with a long id", order.Request{Type: order.Cancel, ClientOrderID: strings.Repeat("x", 65)}, errs.InvalidParameter},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.req.Validate()
			if c.code == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if errs.CodeOf(err) != c.code {
				t.Fatalf("err = %v, want %s", err, c.code)
			}
		})
	}
}

func TestRequestJSON(t *testing.T) {
	var r order.Request
	if err := json.Unmarshal([]byte(`{"type":"limit","side":"buy","symbol":"BTC/USDT","amount":0.00123,"price":"65000.5"}`), &r); err != nil {
		t.Fatal(err)
	}
	if err := r.Validate(); err != nil || !r.Amount.Equal(testkit.D("0.00123")) || !r.Price.Equal(testkit.D("65000.5")) {
		t.Fatalf("%+v %v", r, err)
	}
}

func TestClientOrderID(t *testing.T) {
	a, b := order.ClientOrderID("sig-1", ""), order.ClientOrderID("sig-1", "")
	if a != b || len(a) != 35 || !strings.HasPrefix(a, "sg-") {
		t.Fatalf("%q %q", a, b)
	}
	if order.ClientOrderID("sig-1", "reverse") == a || order.ClientOrderID("sig-2", "") == a {
		t.Fatal("client order IDs collide")
	}
}

func TestCheckExit(t *testing.T) {
	abs := func(v string) *signal.Amount { return &signal.Amount{Value: httpapi.Num(testkit.D(v))} }
	ref := testkit.D("100")
	cases := []struct {
		side     position.Side
		exit     *signal.Amount
		stopLoss bool
		ok       bool
	}{
		{position.Long, abs("95"), true, true},
		{position.Long, abs("100"), true, false},
		{position.Long, abs("105"), false, true},
		{position.Long, abs("95"), false, false},
		{position.Short, abs("105"), true, true},
		{position.Short, abs("95"), true, false},
		{position.Short, abs("95"), false, true},
		{position.Short, &signal.Amount{Value: httpapi.Num(testkit.D("5")), Percent: true}, true, true},
		{position.Long, nil, true, true},
	}
	for _, c := range cases {
		err := order.CheckExit(c.side, c.exit, ref, c.stopLoss)
		if (err == nil) != c.ok || (err != nil && errs.CodeOf(err) != errs.InvalidPrice) {
			t.Errorf("%s %v stopLoss=%v: %v", c.side, c.exit, c.stopLoss, err)
		}
	}
}

func TestParseAmountAndLeverage(t *testing.T) {
	a, err := order.ParseAmount("10%")
	if err != nil || !a.Percent || !a.Value.Equal(testkit.D("10")) {
		t.Fatal(a, err)
	}
	if a, err := order.ParseAmount("0.01"); err != nil || a.Percent || !a.Value.Equal(testkit.D("0.01")) {
		t.Fatal(a, err)
	}
	if a, err := order.ParseAmount(""); a != nil || err != nil {
		t.Fatal(a, err)
	}
	if _, err := order.ParseAmount("150%"); errs.CodeOf(err) != errs.InvalidAmount {
		t.Fatal(err)
	}
	if order.Leverage(exchange.Spot, 20, 5) != 1 || order.Leverage(exchange.Futures, 20, 5) != 20 ||
		order.Leverage(exchange.Futures, 0, 5) != 5 || order.Leverage(exchange.Futures, 0, 0) != 1 {
		t.Fatal("leverage")
	}
}
