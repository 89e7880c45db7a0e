package binance

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
)

func TestStatusMapping(t *testing.T) {
	for in, want := range map[string]exchange.OrderStatus{
		"NEW": exchange.StatusOpen, "PENDING_CANCEL": exchange.StatusOpen,
		"PARTIALLY_FILLED": exchange.StatusPartiallyFilled, "FILLED": exchange.StatusFilled,
		"CANCELED": exchange.StatusCancelled, "REJECTED": exchange.StatusRejected,
		"EXPIRED": exchange.StatusExpired, "EXPIRED_IN_MATCH": exchange.StatusExpired,
		"NEW_INSURANCE": exchange.StatusFilled, "NEW_ADL": exchange.StatusFilled,
		"SOMETHING_NEW": exchange.StatusPending,
	} {
		if got := statusOf(in); got != want {
			t.Errorf("%s -> %s, want %s", in, got, want)
		}
	}
	for in, want := range map[string]exchange.OrderType{
		"MARKET": exchange.Market, "LIMIT": exchange.Limit, "LIMIT_MAKER": exchange.Limit,
		"STOP_LOSS": exchange.StopLoss, "STOP_LOSS_LIMIT": exchange.StopLoss, "STOP_MARKET": exchange.StopLoss,
		"STOP": exchange.StopLoss, "TAKE_PROFIT": exchange.TakeProfit, "TAKE_PROFIT_LIMIT": exchange.TakeProfit,
		"TAKE_PROFIT_MARKET": exchange.TakeProfit,
	} {
		if got := typeOf(in); got != want {
			t.Errorf("%s -> %s, want %s", in, got, want)
		}
	}
}

func TestAlgoStatusMapping(t *testing.T) {
	x := &Account{}
	for in, want := range map[string]exchange.OrderStatus{
		"NEW": exchange.StatusOpen, "TRIGGERING": exchange.StatusOpen, "TRIGGERED": exchange.StatusOpen,
		"FINISHED": exchange.StatusExpired, "CANCELED": exchange.StatusCancelled, "EXPIRED": exchange.StatusExpired,
		"REJECTED": exchange.StatusRejected, "FAILED": exchange.StatusRejected,
	} {
		o, f := x.algoToOrder(context.Background(), "BTCUSDT", "BTC", "USDT", &algoOrder{AlgoID: 7, AlgoStatus: in, OrderType: "STOP_MARKET", Quantity: "0.010", Side: "SELL"})
		if f != nil || o.Status != want || o.ID != "algo-7" || o.Side != exchange.SideSell || !o.Amount.Equal(decimal.RequireFromString("0.01")) {
			t.Errorf("%s -> %+v %v", in, o, f)
		}
	}
}

func TestFeeConversion(t *testing.T) {
	fee, asset := feeOf([]fill{
		{price: testkit.D("50000"), qty: testkit.D("0.006"), commission: testkit.D("0.000006"), asset: "BTC"},
		{price: testkit.D("50010"), qty: testkit.D("0.004"), commission: testkit.D("0.000004"), asset: "BTC"},
	}, "BTC", "USDT")
	if !fee.Equal(testkit.D("0.00001")) || asset != "BTC" {
		t.Fatalf("base commission: %s %s", fee, asset)
	}
	fee, asset = feeOf([]fill{{price: testkit.D("50000"), qty: testkit.D("0.01"), commission: testkit.D("0.00037"), asset: "BNB"}}, "BTC", "USDT")
	if !fee.Equal(testkit.D("0.00037")) || asset != "BNB" {
		t.Fatalf("BNB commission: %s %s", fee, asset)
	}
	if fee, asset = feeOf(nil, "BTC", "USDT"); !fee.IsZero() || asset != "" {
		t.Fatalf("no fills: %s %q", fee, asset)
	}
}

func TestRetryAfter(t *testing.T) {
	if d := parseRetryAfter("12", 429); d != 12*time.Second {
		t.Fatal(d)
	}
	if d := parseRetryAfter("", 429); d != time.Second {
		t.Fatal(d)
	}
	if d := parseRetryAfter("", 418); d != 2*time.Minute {
		t.Fatal(d)
	}
	if d := parseRetryAfter(time.Now().Add(30*time.Second).UTC().Format(http.TimeFormat), 429); d < 28*time.Second || d > 31*time.Second {
		t.Fatal(d)
	}
}

func TestReadErrors(t *testing.T) {
	f := &failure{op: "GET /api/v3/ticker/price", noAnswer: true, cause: errors.New("no answer within 2s")}
	err := readError(f, "ticker")
	if errs.CodeOf(err) != errs.ExchangeError || !errors.Is(err, exchange.ErrUnreachable) {
		t.Fatal(err)
	}
	err = outcomeUnknown("sg-1", f)
	if _, typed := errs.As(err); typed || !errors.Is(err, exchange.ErrUnreachable) {
		t.Fatal(err)
	}
	// A 401 without a Binance code is a refused key.
	err = typed(&failure{op: "GET /sapi/v1/account/apiRestrictions", status: 401}, "permissions request")
	if errs.CodeOf(err) != errs.ExchangeDisconnected || !errors.Is(err, exchange.ErrInvalidCredentials) {
		t.Fatal(err)
	}
}
