package exchange_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange"
)

// decision 10 in docs/decisions.md, every pair of states.
func TestOrderStatusMachine(t *testing.T) {
	all := []exchange.OrderStatus{exchange.StatusPending, exchange.StatusOpen, exchange.StatusPartiallyFilled,
		exchange.StatusFilled, exchange.StatusCancelled, exchange.StatusRejected, exchange.StatusExpired}
	allowed := map[[2]exchange.OrderStatus]bool{
		{exchange.StatusPending, exchange.StatusOpen}:              true,
		{exchange.StatusPending, exchange.StatusPartiallyFilled}:   true,
		{exchange.StatusPending, exchange.StatusFilled}:            true, // a market order fills at once
		{exchange.StatusPending, exchange.StatusCancelled}:         true,
		{exchange.StatusPending, exchange.StatusExpired}:           true,
		{exchange.StatusPending, exchange.StatusRejected}:          true,
		{exchange.StatusOpen, exchange.StatusPartiallyFilled}:      true,
		{exchange.StatusOpen, exchange.StatusFilled}:               true,
		{exchange.StatusOpen, exchange.StatusCancelled}:            true,
		{exchange.StatusOpen, exchange.StatusExpired}:              true,
		{exchange.StatusPartiallyFilled, exchange.StatusFilled}:    true,
		{exchange.StatusPartiallyFilled, exchange.StatusCancelled}: true,
		{exchange.StatusPartiallyFilled, exchange.StatusExpired}:   true,
	}
	for _, from := range all {
		for _, to := range all {
			if got, want := from.CanBecome(to), allowed[[2]exchange.OrderStatus{from, to}]; got != want {
				t.Errorf("%s -> %s: %v, want %v", from, to, got, want)
			}
		}
	}
	for _, s := range []exchange.OrderStatus{exchange.StatusFilled, exchange.StatusCancelled, exchange.StatusRejected, exchange.StatusExpired} {
		if !s.Terminal() {
			t.Errorf("%s is not terminal", s)
		}
	}
}

// Amounts round down to the step, prices down to the tick (decision 6 in docs/decisions.md).
func TestRounding(t *testing.T) {
	m := exchange.MarketInfo{TickSize: decimal.RequireFromString("0.01"), StepSize: decimal.RequireFromString("0.00001")}
	if got := m.RoundAmount(decimal.RequireFromString("0.0153846")); got.String() != "0.01538" {
		t.Errorf("amount = %s", got)
	}
	if got := m.RoundPrice(decimal.RequireFromString("65000.129")); got.String() != "65000.12" {
		t.Errorf("price = %s", got)
	}
	doge := exchange.MarketInfo{TickSize: decimal.RequireFromString("0.00001"), StepSize: decimal.RequireFromString("1")}
	if got := doge.RoundAmount(decimal.RequireFromString("99.99")); got.String() != "99" {
		t.Errorf("doge amount = %s", got)
	}
}

func TestCredentialsNeverPrint(t *testing.T) {
	c := exchange.Credentials{APIKey: "key-123", APISecret: "secret-456"}
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%v %+v %#v %s", c, c, c, c)} {
		if strings.Contains(s, "key-123") || strings.Contains(s, "secret-456") {
			t.Fatalf("credentials printed: %s", s)
		}
	}
}

func TestPermissionsList(t *testing.T) {
	p := exchange.Permissions{Read: true, FuturesTrade: true, Withdraw: true}
	if got := strings.Join(p.List(), ","); got != "futures,read,withdraw" {
		t.Fatalf("list = %s", got)
	}
	if p.CanTrade(exchange.Spot) || !p.CanTrade(exchange.Futures) {
		t.Fatal("CanTrade wrong")
	}
}
