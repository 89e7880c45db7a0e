package exchange_test

import (
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
)

func TestOrderRequestValidate(t *testing.T) {
	ok := exchange.OrderRequest{ClientOrderID: "sg-1", Symbol: "BTC/USDT", Kind: exchange.Spot,
		Side: exchange.SideBuy, Type: exchange.Market, Amount: testkit.D("0.01")}
	cases := []struct {
		name string
		edit func(*exchange.OrderRequest)
		want errs.Code // "" accepts
	}{
		{"market", func(*exchange.OrderRequest) {}, ""},
		{"no client order ID", func(r *exchange.OrderRequest) { r.ClientOrderID = "" }, errs.ExchangeError},
		{"unknown kind", func(r *exchange.OrderRequest) { r.Kind = "margin" }, errs.InvalidSymbol},
		{"unknown side", func(r *exchange.OrderRequest) { r.Side = "hold" }, errs.ExchangeError},
		{"unknown type", func(r *exchange.OrderRequest) { r.Type = "trailing" }, errs.ExchangeError},
		{"limit without price", func(r *exchange.OrderRequest) { r.Type = exchange.Limit }, errs.InvalidPrice},
		{"limit", func(r *exchange.OrderRequest) { r.Type, r.Price = exchange.Limit, testkit.D("65000") }, ""},
		{"stop without trigger", func(r *exchange.OrderRequest) { r.Type = exchange.StopLoss }, errs.InvalidPrice},
		{"stop with negative price", func(r *exchange.OrderRequest) {
			r.Type, r.StopPrice, r.Price = exchange.StopLoss, testkit.D("60000"), testkit.D("-1")
		}, errs.InvalidPrice},
		{"zero amount", func(r *exchange.OrderRequest) { r.Amount = decimal.Zero }, errs.InvalidAmount},
		{"negative amount", func(r *exchange.OrderRequest) { r.Amount = testkit.D("-1") }, errs.InvalidAmount},
		{"spot stop without amount", func(r *exchange.OrderRequest) {
			r.Type, r.StopPrice, r.Amount = exchange.StopLoss, testkit.D("60000"), decimal.Zero
		}, errs.InvalidAmount},
		{"futures take-profit closing the position", func(r *exchange.OrderRequest) {
			r.Kind, r.Type, r.StopPrice, r.Amount = exchange.Futures, exchange.TakeProfit, testkit.D("70000"), decimal.Zero
		}, ""},
		{"futures limit take-profit without amount", func(r *exchange.OrderRequest) {
			r.Kind, r.Type, r.StopPrice, r.Price, r.Amount = exchange.Futures, exchange.TakeProfit, testkit.D("70000"), testkit.D("69900"), decimal.Zero
		}, errs.InvalidAmount},
		{"futures limit stop with an amount", func(r *exchange.OrderRequest) {
			r.Kind, r.Type, r.StopPrice, r.Price = exchange.Futures, exchange.StopLoss, testkit.D("60000"), testkit.D("59900")
		}, ""},
		{"futures stop with negative amount", func(r *exchange.OrderRequest) {
			r.Kind, r.Type, r.StopPrice, r.Amount = exchange.Futures, exchange.StopLoss, testkit.D("60000"), testkit.D("-1")
		}, errs.InvalidAmount},
	}
	for _, c := range cases {
		req := ok
		c.edit(&req)
		err := req.Validate()
		if c.want == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		if e, isErr := errs.As(err); !isErr || e.Code != c.want {
			t.Errorf("%s: %v, want %s", c.name, err, c.want)
		}
	}
}

func TestClosesPosition(t *testing.T) {
	closing := exchange.OrderRequest{Kind: exchange.Futures, Type: exchange.StopLoss}
	if !closing.ClosesPosition() {
		t.Error("a futures stop-loss without an amount closes the position")
	}
	for _, r := range []exchange.OrderRequest{
		{Kind: exchange.Spot, Type: exchange.StopLoss},
		{Kind: exchange.Futures, Type: exchange.Market},
		{Kind: exchange.Futures, Type: exchange.TakeProfit, Amount: decimal.RequireFromString("1")},
		{Kind: exchange.Futures, Type: exchange.StopLoss, Price: decimal.RequireFromString("59900")},
	} {
		if r.ClosesPosition() {
			t.Errorf("%+v closes the position", r)
		}
	}
}

// A futures stop with a limit price and no amount would be a limit order closing the whole
// position, which Binance refuses (closePosition only with STOP_MARKET / TAKE_PROFIT_MARKET):
// it is refused before any call, and the message says what is missing.
func TestLimitStopNeedsAnAmount(t *testing.T) {
	for _, typ := range []exchange.OrderType{exchange.StopLoss, exchange.TakeProfit} {
		req := exchange.OrderRequest{ClientOrderID: "sg-1", Symbol: "BTC/USDT", Kind: exchange.Futures,
			Side: exchange.SideSell, Type: typ, StopPrice: testkit.D("60000"), Price: testkit.D("59900")}
		e, ok := errs.As(req.Validate())
		if !ok || e.Code != errs.InvalidAmount {
			t.Fatalf("%s: %v, want INVALID_AMOUNT", typ, req.Validate())
		}
		if !strings.Contains(e.Message, "limit") || !strings.Contains(e.Message, "needs an amount") {
			t.Errorf("%s: message %q does not say a limit stop needs an amount", typ, e.Message)
		}
	}
}
