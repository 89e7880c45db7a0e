package testkit

import (
	"context"
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange"
)

// Prices is a fixed market: each symbol's price, spot and futures alike, so that a test
// knows every fill. A symbol without a price is an error, as an unknown market is. It is a
// paper.PriceSource, which the executor fills paper orders from.
type Prices map[string]decimal.Decimal

// Price is symbol's price.
func (p Prices) Price(_ context.Context, _ exchange.Kind, symbol string) (decimal.Decimal, error) {
	if v, ok := p[symbol]; ok {
		return v, nil
	}
	return decimal.Decimal{}, fmt.Errorf("testkit: no price for %s", symbol)
}
