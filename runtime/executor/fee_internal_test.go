package executor

import (
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange"
)

func TestFeeInQuote(t *testing.T) {
	m := exchange.MarketInfo{Base: "BTC", Quote: "USDT"}
	o := exchange.Order{Fee: decimal.RequireFromString("0.00001538"), AvgPrice: decimal.RequireFromString("65000")}
	for asset, want := range map[string]string{"": "0.00001538", "USDT": "0.00001538", "BTC": "0.9997", "BNB": "0"} {
		o.FeeAsset = asset
		if got := feeInQuote(o, m); !got.Equal(decimal.RequireFromString(want)) {
			t.Errorf("fee in %q = %s, want %s", asset, got, want)
		}
	}
}
