package marketdata

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
)

// Candle is one OHLCV bar, in the spec's shape (timestamp in ms and time in s, both the open
// time).
type Candle struct {
	Timestamp int64           `json:"timestamp"` // ms, open time
	Time      int64           `json:"time"`      // s
	Open      decimal.Decimal `json:"open"`
	High      decimal.Decimal `json:"high"`
	Low       decimal.Decimal `json:"low"`
	Close     decimal.Decimal `json:"close"`
	Volume    decimal.Decimal `json:"volume"` // base asset
}

// MarshalJSON writes the prices and volume as JSON numbers, as the spec's Candle has them
// (shopspring/decimal alone would quote them); exact, never through float64. Decoding takes
// numbers and quoted strings alike (decimal's own UnmarshalJSON).
func (c Candle) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 192)
	b = append(b, `{"timestamp":`...)
	b = strconv.AppendInt(b, c.Timestamp, 10)
	b = append(b, `,"time":`...)
	b = strconv.AppendInt(b, c.Time, 10)
	for _, f := range [...]struct {
		name string
		v    decimal.Decimal
	}{{"open", c.Open}, {"high", c.High}, {"low", c.Low}, {"close", c.Close}, {"volume", c.Volume}} {
		b = append(b, `,"`...)
		b = append(b, f.name...)
		b = append(b, `":`...)
		b = append(b, f.v.String()...)
	}
	return append(b, '}'), nil
}

// Provider is a source of market prices.
type Provider interface {
	// Price is the current price of symbol ("BTC/USDT") on kind.
	Price(ctx context.Context, kind exchange.Kind, symbol string) (decimal.Decimal, error)
	// Candles returns up to limit candles of timeframe (1m 5m 15m 30m 1h 4h 1d 1w), oldest
	// first, the last one possibly still open. limit <= 0 means DefaultLimit; above MaxLimit
	// it is capped.
	Candles(ctx context.Context, kind exchange.Kind, symbol, timeframe string, limit int) ([]Candle, error)
}

// Candle count bounds.
const (
	DefaultLimit = 500  // candles when the caller gives no limit (Binance's default)
	MaxLimit     = 1000 // Binance spot's maximum per request
)

var (
	// ErrUnknownSymbol: the symbol is not traded on that market. Returned wrapped in an
	// *errs.Error with code INVALID_SYMBOL.
	ErrUnknownSymbol = errors.New("unknown symbol")
	// ErrBadTimeframe: not one of Timeframes().
	ErrBadTimeframe = errors.New("unsupported timeframe")
	// ErrBadKind: neither exchange.Spot nor exchange.Futures (a programming error).
	ErrBadKind = errors.New("unknown market kind")
)

func unknownSymbol(kind exchange.Kind, symbol string) error {
	if len(symbol) > 32 {
		symbol = symbol[:32]
	}
	return errs.Wrap(ErrUnknownSymbol, errs.InvalidSymbol, "unknown symbol %q on %s", symbol, kind)
}

func badTimeframe(tf string) error {
	if len(tf) > 16 {
		tf = tf[:16]
	}
	return fmt.Errorf("%w %q (want one of %s)", ErrBadTimeframe, tf, strings.Join(timeframeNames, ", "))
}

func checkKind(kind exchange.Kind) error {
	if kind != exchange.Spot && kind != exchange.Futures {
		return fmt.Errorf("marketdata: %w %q", ErrBadKind, kind)
	}
	return nil
}

func clampLimit(limit, max int) int {
	if limit <= 0 {
		limit = DefaultLimit
	}
	if limit > max {
		limit = max
	}
	return limit
}

var timeframeNames = []string{"1m", "5m", "15m", "30m", "1h", "4h", "1d", "1w"}

var timeframeDurations = map[string]time.Duration{
	"1m":  time.Minute,
	"5m":  5 * time.Minute,
	"15m": 15 * time.Minute,
	"30m": 30 * time.Minute,
	"1h":  time.Hour,
	"4h":  4 * time.Hour,
	"1d":  24 * time.Hour,
	"1w":  7 * 24 * time.Hour,
}

// Timeframes lists the supported timeframes, shortest first.
func Timeframes() []string { return append([]string(nil), timeframeNames...) }

// TimeframeDuration is the length of one candle of tf; an unknown tf wraps ErrBadTimeframe.
func TimeframeDuration(tf string) (time.Duration, error) {
	d, ok := timeframeDurations[tf]
	if !ok {
		return 0, badTimeframe(tf)
	}
	return d, nil
}

// weekOffsetMs moves weekly candles from the epoch's Thursday to Monday 00:00 UTC
// (1970-01-05), as Binance aligns them.
const weekOffsetMs = 4 * 24 * 3600 * 1000

// candleOpenMs is the open time (ms) of the tf candle that contains tMs.
func candleOpenMs(tMs int64, tf time.Duration) int64 {
	d := tf.Milliseconds()
	off := int64(0)
	if tf == 7*24*time.Hour {
		off = weekOffsetMs
	}
	return floorDiv(tMs-off, d)*d + off
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// Flag values accepted by FromFlag.
const (
	FlagSimulated = "simulated"
	FlagBinance   = "binance"
)

// FromFlag builds the provider a daemon's market-data flag names: "simulated" (or "") for
// the default Simulated market, "binance" for BinancePublic behind Cached. See the package
// comment.
func FromFlag(name string) (Provider, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "", FlagSimulated:
		return NewSimulated(SimulatedOptions{}), nil
	case FlagBinance:
		return NewCached(NewBinancePublic("", "", nil), CachedOptions{}), nil
	}
	return nil, fmt.Errorf("marketdata: unknown provider %q (want %s or %s)", name, FlagSimulated, FlagBinance)
}

// CandleOpenMs is the open time (ms since the epoch) of the candle of length tf that
// contains tMs, aligned as the package comment says (weekly candles to Monday 00:00 UTC).
func CandleOpenMs(tMs int64, tf time.Duration) int64 { return candleOpenMs(tMs, tf) }
