package marketdata

import (
	"encoding/json"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
)

func TestTimeframes(t *testing.T) {
	want := map[string]time.Duration{
		"1m": time.Minute, "5m": 5 * time.Minute, "15m": 15 * time.Minute, "30m": 30 * time.Minute,
		"1h": time.Hour, "4h": 4 * time.Hour, "1d": 24 * time.Hour, "1w": 7 * 24 * time.Hour,
	}
	tfs := Timeframes()
	if !slices.Equal(tfs, []string{"1m", "5m", "15m", "30m", "1h", "4h", "1d", "1w"}) {
		t.Errorf("Timeframes() = %v", tfs)
	}
	tfs[0] = "mutated"
	if Timeframes()[0] != "1m" {
		t.Error("Timeframes shares its slice")
	}
	for tf, w := range want {
		if got, err := TimeframeDuration(tf); err != nil || got != w {
			t.Errorf("%s: %s %v", tf, got, err)
		}
	}
	for _, tf := range []string{"", "1M", "3m", "2h", "1y", "1W", "60"} {
		if _, err := TimeframeDuration(tf); !errors.Is(err, ErrBadTimeframe) {
			t.Errorf("%q: %v", tf, err)
		}
	}
}

func TestCandleOpenAlignment(t *testing.T) {
	at := time.Date(2026, 3, 4, 13, 47, 12, 0, time.UTC) // a Wednesday
	for _, tc := range []struct {
		tf   time.Duration
		want time.Time
	}{
		{time.Minute, time.Date(2026, 3, 4, 13, 47, 0, 0, time.UTC)},
		{15 * time.Minute, time.Date(2026, 3, 4, 13, 45, 0, 0, time.UTC)},
		{4 * time.Hour, time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)},
		{24 * time.Hour, time.Date(2026, 3, 4, 0, 0, 0, 0, time.UTC)},
		{7 * 24 * time.Hour, time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)}, // Monday
	} {
		if got := time.UnixMilli(candleOpenMs(at.UnixMilli(), tc.tf)).UTC(); !got.Equal(tc.want) {
			t.Errorf("%s: %s, want %s", tc.tf, got, tc.want)
		}
	}
	// Before the epoch too.
	if got := candleOpenMs(-1, time.Minute); got != -60000 {
		t.Errorf("pre-epoch: %d", got)
	}
}

func TestCandleJSON(t *testing.T) {
	c := Candle{Timestamp: 1767225600000, Time: 1767225600, Open: testkit.D("65000.1"), High: testkit.D("65010"),
		Low: testkit.D("64990.01"), Close: testkit.D("65001.2"), Volume: testkit.D("12.345")}
	b, err := json.Marshal(c)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"timestamp":1767225600000,"time":1767225600,"open":65000.1,"high":65010,"low":64990.01,"close":65001.2,"volume":12.345}`
	if string(b) != want {
		t.Errorf("JSON %s\nwant %s", b, want)
	}
	var back Candle
	if err := json.Unmarshal(b, &back); err != nil || !sameCandles([]Candle{back}, []Candle{c}) {
		t.Errorf("round trip %+v %v", back, err)
	}
	// Quoted decimals (another writer's form) decode too.
	if err := json.Unmarshal([]byte(`{"timestamp":1,"time":0,"open":"1.5","high":"2","low":"1","close":"1.25","volume":"0"}`), &back); err != nil || !back.Close.Equal(testkit.D("1.25")) {
		t.Errorf("quoted %+v %v", back, err)
	}
	// Inside a slice, as the candles API sends it.
	if b, _ := json.Marshal([]Candle{c}); string(b) != "["+want+"]" {
		t.Errorf("slice JSON %s", b)
	}
}

func TestFromFlag(t *testing.T) {
	for _, name := range []string{"", "simulated", " Simulated "} {
		p, err := FromFlag(name)
		if _, ok := p.(*Simulated); err != nil || !ok {
			t.Errorf("%q: %T %v", name, p, err)
		}
	}
	p, err := FromFlag("binance")
	c, ok := p.(*Cached)
	if err != nil || !ok {
		t.Fatalf("binance: %T %v", p, err)
	}
	if b, ok := c.inner.(*BinancePublic); !ok || b.spotURL != BinanceSpotURL || b.futuresURL != BinanceFuturesURL {
		t.Errorf("binance inner %T", c.inner)
	}
	if _, err := FromFlag("coinbase"); err == nil {
		t.Error("unknown provider accepted")
	}
}
