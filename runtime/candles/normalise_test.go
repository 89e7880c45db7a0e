package candles_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/candles"
	"github.com/sigops/sigops/runtime/marketdata"
)

func TestNormalise(t *testing.T) {
	minute := int64(60_000)
	t0 := int64(1_700_000_040_000) // a whole minute: 1,700,000,040,000 / 60,000 = 28,333,334
	c := func(i int64, close, vol string) marketdata.Candle {
		ts := t0 + i*minute
		return marketdata.Candle{Timestamp: ts, Time: ts / 1000, Open: testkit.D("10"), High: testkit.D("12"),
			Low: testkit.D("9"), Close: testkit.D(close), Volume: testkit.D(vol)}
	}
	// Out of order, minute 2 repeated (the later copy wins), minutes 3 and 4 missing, minute
	// 6 still open at now (t0 + 6 min + 30 s).
	in := []marketdata.Candle{c(1, "11", "5"), c(0, "10.5", "4"), c(2, "11.5", "1"), c(2, "11.75", "2"), c(5, "13", "3"), c(6, "14", "1")}
	now := time.UnixMilli(t0 + 6*minute + 30_000)
	got, err := candles.Normalise(in, time.Minute, now, 100)
	if err != nil {
		t.Fatal(err)
	}
	flat := func(i int64, close string) marketdata.Candle {
		ts := t0 + i*minute
		return marketdata.Candle{Timestamp: ts, Time: ts / 1000, Open: testkit.D(close), High: testkit.D(close),
			Low: testkit.D(close), Close: testkit.D(close), Volume: testkit.D("0")}
	}
	// Minutes 3 and 4 carry minute 2's close (11.75, its last copy) with volume 0; minute 6
	// is left out.
	want := []marketdata.Candle{c(0, "10.5", "4"), c(1, "11", "5"), c(2, "11.75", "2"), flat(3, "11.75"), flat(4, "11.75"), c(5, "13", "3")}
	sameCandles(t, got, want)

	// The limit keeps the newest, filled candles counted.
	got, _ = candles.Normalise(in, time.Minute, now, 3)
	sameCandles(t, got, want[3:])

	// At exactly t0 + 7 min minute 6 has closed.
	got, _ = candles.Normalise(in, time.Minute, time.UnixMilli(t0+7*minute), 100)
	if len(got) != 7 || got[6].Timestamp != t0+6*minute {
		t.Fatalf("%d candles at the close of minute 6", len(got))
	}

	// A candle off the grid is the source answering another timeframe.
	bad := c(1, "11", "1")
	bad.Timestamp += 1000
	if _, err := candles.Normalise([]marketdata.Candle{c(0, "1", "1"), bad}, time.Minute, now, 10); !errors.Is(err, candles.ErrMisaligned) {
		t.Fatalf("misaligned candle: %v", err)
	}
	if got, err := candles.Normalise(nil, time.Minute, now, 10); err != nil || len(got) != 0 {
		t.Fatalf("empty: %v, %v", got, err)
	}
}
