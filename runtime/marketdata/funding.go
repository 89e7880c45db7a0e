package marketdata

import (
	"context"
	"time"

	"github.com/shopspring/decimal"
)

// FundingRate is one funding settlement of a perpetual futures contract: at Time (Unix ms)
// a long position pays Rate × its notional to the shorts (a negative rate: the shorts pay).
type FundingRate struct {
	Time int64           `json:"time"`
	Rate decimal.Decimal `json:"rate"`
}

// FundingHistory is a source of past funding settlements (the Strategy Lab's cost model).
type FundingHistory interface {
	// FundingBetween returns the funding settlements of symbol's perpetual contract whose
	// time is in [from, to), oldest first, without repeats.
	FundingBetween(ctx context.Context, symbol string, from, to time.Time) ([]FundingRate, error)
}
