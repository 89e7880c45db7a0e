package marketdata

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
)

// History is a source of past candles over a period (the Strategy Lab's backtests).
type History interface {
	// CandlesBetween returns the closed candles of timeframe whose open time is in
	// [from, to), oldest first, without repeats; a candle still open at the source's now is
	// left out. A period of more than MaxHistoryCandles candles is refused with
	// INVALID_PARAMETER before anything is fetched.
	CandlesBetween(ctx context.Context, kind exchange.Kind, symbol, timeframe string, from, to time.Time) ([]Candle, error)
}

// MaxHistoryCandles bounds one CandlesBetween: 200,000 candles are about 139 days of 1m
// candles, 200 requests of a venue's 1000, and about 40 MB as Candles.
const MaxHistoryCandles = 200_000

// HistoryCount is how many candles of timeframe open in [from, to), aligned as the package
// comment says; an unknown timeframe wraps ErrBadTimeframe.
func HistoryCount(timeframe string, from, to time.Time) (int, error) {
	tf, err := TimeframeDuration(timeframe)
	if err != nil {
		return 0, err
	}
	first, end := historyBounds(tf, from, to)
	if end <= first {
		return 0, nil
	}
	return int((end - first) / tf.Milliseconds()), nil
}

// historyBounds are the open time (ms) of the first candle opening at or after from and the
// open time bound: candles open before end.
func historyBounds(tf time.Duration, from, to time.Time) (first, end int64) {
	d := tf.Milliseconds()
	first = candleOpenMs(from.UnixMilli(), tf)
	if first < from.UnixMilli() {
		first += d
	}
	end = candleOpenMs(to.UnixMilli()-1, tf) + d // just after the last candle opening before to
	return first, end
}

// checkHistory validates a period's arguments and its size.
func checkHistory(kind exchange.Kind, timeframe string, from, to time.Time) (time.Duration, error) {
	if err := checkKind(kind); err != nil {
		return 0, err
	}
	tf, err := TimeframeDuration(timeframe)
	if err != nil {
		return 0, err
	}
	if !to.After(from) {
		return 0, errs.New(errs.InvalidParameter, "the period's end %s is not after its start %s",
			to.UTC().Format(time.RFC3339), from.UTC().Format(time.RFC3339))
	}
	n, _ := HistoryCount(timeframe, from, to)
	if n > MaxHistoryCandles {
		return 0, errs.New(errs.InvalidParameter, "the period holds %d %s candles; at most %d are read", n, timeframe,
			MaxHistoryCandles).WithDetails(map[string]any{"candles": n, "max": MaxHistoryCandles})
	}
	return tf, nil
}

// tidyHistory sorts candles by open time, drops repeats and keeps those opening in
// [first, end) that have closed by nowMs.
func tidyHistory(cs []Candle, tf time.Duration, first, end, nowMs int64) []Candle {
	slices.SortStableFunc(cs, func(a, b Candle) int { return cmpInt(a.Timestamp, b.Timestamp) })
	out := cs[:0]
	for _, c := range cs {
		if c.Timestamp < first || c.Timestamp >= end || c.Timestamp+tf.Milliseconds() > nowMs {
			continue
		}
		if len(out) > 0 && out[len(out)-1].Timestamp == c.Timestamp {
			continue
		}
		out = append(out, c)
	}
	return out
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// maxHistoryPages bounds the requests of one CandlesBetween to a venue: enough for
// MaxHistoryCandles at 1000 a request, and a stop for a venue whose pages do not advance.
const maxHistoryPages = MaxHistoryCandles/MaxLimit + 2

func tooManyPages(venue string) error {
	return errs.New(errs.ExchangeError, "%s: candle pages did not advance within %d requests", venue, maxHistoryPages)
}

// CandlesBetween computes the period's closed candles from the path, as Candles does for
// its closed ones (the same values, pins ignored), without filling the closed-candle cache:
// a long period would evict the live series.
func (s *Simulated) CandlesBetween(ctx context.Context, kind exchange.Kind, symbol, timeframe string, from, to time.Time) ([]Candle, error) {
	tf, err := checkHistory(kind, timeframe, from, to)
	if err != nil {
		return nil, err
	}
	sym, err := s.lookup(kind, symbol)
	if err != nil {
		return nil, err
	}
	first, end := historyBounds(tf, from, to)
	end = min(end, candleOpenMs(floorDiv(s.now().UnixNano(), 1e6), tf)) // the open candle is not history
	d := tf.Milliseconds()
	out := make([]Candle, 0, max(0, (end-first)/d))
	var p path
	p.salt = sym.salt
	for a := first; a < end; a += d {
		if len(out)%4096 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		out = append(out, s.candle(&p, sym, tf, a, a*1e6+int64(tf)))
	}
	return out, nil
}

// CandlesBetween pages through Binance's klines forward from the period's start, 1000 a
// request (startTime, endTime), at most maxHistoryPages requests.
func (b *BinancePublic) CandlesBetween(ctx context.Context, kind exchange.Kind, symbol, timeframe string, from, to time.Time) ([]Candle, error) {
	tf, err := checkHistory(kind, timeframe, from, to)
	if err != nil {
		return nil, err
	}
	first, end := historyBounds(tf, from, to)
	d := tf.Milliseconds()
	var all []Candle
	for start, page := first, 0; start < end; page++ {
		if page == maxHistoryPages {
			return nil, tooManyPages("binance")
		}
		cs, err := b.klines(ctx, kind, symbol, url.Values{"interval": {timeframe}, "limit": {strconv.Itoa(MaxLimit)},
			"startTime": {strconv.FormatInt(start, 10)}, "endTime": {strconv.FormatInt(end-1, 10)}})
		if err != nil {
			return nil, err
		}
		all = append(all, cs...)
		if len(cs) < MaxLimit {
			break
		}
		start = max(start, cs[len(cs)-1].Timestamp) + d
	}
	return tidyHistory(all, tf, first, end, time.Now().UnixMilli()), nil
}

// CandlesBetween pages through Bybit's klines backward from the period's end (Bybit answers
// the newest 1000 of a range), 1000 a request (start, end), at most maxHistoryPages
// requests.
func (b *BybitPublic) CandlesBetween(ctx context.Context, kind exchange.Kind, symbol, timeframe string, from, to time.Time) ([]Candle, error) {
	tf, err := checkHistory(kind, timeframe, from, to)
	if err != nil {
		return nil, err
	}
	interval := bybitIntervals[timeframe]
	first, end := historyBounds(tf, from, to)
	d := tf.Milliseconds()
	var all []Candle
	for last, page := end-d, 0; last >= first; page++ {
		if page == maxHistoryPages {
			return nil, tooManyPages("bybit")
		}
		cs, err := b.klines(ctx, kind, symbol, url.Values{"interval": {interval}, "limit": {strconv.Itoa(MaxLimit)},
			"start": {strconv.FormatInt(first, 10)}, "end": {strconv.FormatInt(last, 10)}})
		if err != nil {
			return nil, err
		}
		all = append(all, cs...)
		if len(cs) < MaxLimit {
			break
		}
		last = min(last, cs[0].Timestamp) - d
	}
	return tidyHistory(all, tf, first, end, time.Now().UnixMilli()), nil
}

// Flag value of HistoryFromFlag beside FlagSimulated and FlagBinance.
const FlagBybit = "bybit"

// HistoryFromFlag builds the candle history a daemon's flag names: "simulated" (or "") for
// the default Simulated market, "binance", "bybit" or "okx" for their public REST APIs (uncached:
// the Strategy Lab's engine keeps the series it builds). Each is also a FundingHistory (of
// the same market's perpetuals), so the Lab's cost model reads funding from the source its
// candles come from.
func HistoryFromFlag(name string) (History, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "", FlagSimulated:
		return NewSimulated(SimulatedOptions{}), nil
	case FlagBinance:
		return NewBinancePublic("", "", nil), nil
	case FlagBybit:
		return NewBybitPublic("", "", nil), nil
	case FlagOKX:
		return NewOKXPublic("", "", nil), nil
	}
	return nil, fmt.Errorf("marketdata: unknown history %q (want %s, %s, %s or %s)", name, FlagSimulated, FlagBinance, FlagBybit, FlagOKX)
}
