package candles

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/sigops/sigops/runtime/marketdata"
)

// ErrMisaligned: a source answered a candle whose open time is not on the timeframe's grid.
var ErrMisaligned = errors.New("candle open time off the timeframe's grid")

// Normalise turns a source's candles into a series: ascending, one per interval (the last
// copy of a repeated candle), intervals without a candle filled with the previous close
// and volume 0, only candles closed at now, at most limit of them (the newest). A candle off
// the timeframe's grid is an error (the source is not answering the timeframe asked).
func Normalise(cs []marketdata.Candle, tf time.Duration, now time.Time, limit int) ([]marketdata.Candle, error) {
	tfMs := tf.Milliseconds()
	nowMs := now.UnixMilli()
	rows := slices.Clone(cs)
	slices.SortStableFunc(rows, func(a, b marketdata.Candle) int { return int(a.Timestamp - b.Timestamp) })
	closed := rows[:0]
	for i, c := range rows {
		if marketdata.CandleOpenMs(c.Timestamp, tf) != c.Timestamp {
			return nil, fmt.Errorf("%w: %d", ErrMisaligned, c.Timestamp)
		}
		if c.Timestamp+tfMs > nowMs {
			break // the open candle, and anything after it
		}
		if i+1 < len(rows) && rows[i+1].Timestamp == c.Timestamp {
			continue // a repeat: keep the last copy
		}
		closed = append(closed, c)
	}
	// Newest first, filling the gaps back to max candles, then turned round.
	out := make([]marketdata.Candle, 0, min(limit, len(closed)))
	for i := len(closed) - 1; i >= 0 && len(out) < limit; i-- {
		c := closed[i]
		if len(out) > 0 {
			for t := out[len(out)-1].Timestamp - tfMs; t > c.Timestamp && len(out) < limit; t -= tfMs {
				out = append(out, marketdata.Candle{Timestamp: t, Time: t / 1000,
					Open: c.Close, High: c.Close, Low: c.Close, Close: c.Close})
			}
			if len(out) == limit {
				break
			}
		}
		out = append(out, c)
	}
	slices.Reverse(out)
	return out, nil
}
