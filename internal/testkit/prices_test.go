package testkit

import (
	"context"
	"testing"

	"github.com/sigops/sigops/runtime/exchange"
)

func TestPrices(t *testing.T) {
	p := Prices{"BTC/USDT": D("60000.5")}
	for _, kind := range []exchange.Kind{exchange.Spot, exchange.Futures} {
		if v, err := p.Price(context.Background(), kind, "BTC/USDT"); err != nil || !v.Equal(D("60000.5")) {
			t.Fatalf("%s price %s %v", kind, v, err)
		}
	}
	if _, err := p.Price(context.Background(), exchange.Spot, "ETH/USDT"); err == nil {
		t.Fatal("a symbol without a price answered")
	}
}
