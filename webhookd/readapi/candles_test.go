package readapi_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/candles"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/marketdata/marketdatafake"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/webhookd/readapi"
)

// candlesFixture is the read API with the candles service: both exchanges' public hosts
// are one fake venue serving a simulated market; the fallback is another simulated market.
type candlesFixture struct {
	*fixture
	fake  *marketdatafake.Server
	venue string
}

func newCandlesFixture(t testing.TB, with ...func(*readapi.Options)) *candlesFixture {
	t.Helper()
	cf := &candlesFixture{}
	var fakeSrv *httptest.Server
	cf.fixture = newFixture(t, append([]func(*readapi.Options){func(o *readapi.Options) {
		sim := marketdata.NewSimulated(marketdata.SimulatedOptions{Now: o.Now})
		cf.fake = marketdatafake.New(sim)
		fakeSrv = httptest.NewServer(cf.fake)
		cf.venue = fakeSrv.URL
		v := candles.Venue{Spot: fakeSrv.URL, Futures: fakeSrv.URL, TestnetSpot: fakeSrv.URL, TestnetFutures: fakeSrv.URL}
		idx := signal.NewSymbols(sim.Symbols())
		o.Candles = candles.New(candles.Options{Redis: o.Redis, Now: o.Now, Logger: o.Logger,
			Symbols:  func() *signal.Symbols { return idx },
			Fallback: marketdata.NewSimulated(marketdata.SimulatedOptions{Seed: 7, Now: o.Now}),
			Venues:   map[string]candles.Venue{candles.Binance: v, candles.Bybit: v}})
	}}, with...)...)
	t.Cleanup(fakeSrv.Close)
	return cf
}

type candlesBody struct {
	Success bool `json:"success"`
	Data    struct {
		Symbol        string              `json:"symbol"`
		Timeframe     string              `json:"timeframe"`
		Candles       []marketdata.Candle `json:"candles"`
		UsingFallback bool                `json:"usingFallback"`
	} `json:"data"`
	Code  string `json:"code"`
	Error string `json:"error"`
}

func candlesPath(params ...string) string {
	q := url.Values{}
	for i := 0; i+1 < len(params); i += 2 {
		q.Set(params[i], params[i+1])
	}
	return readapi.CandlesPath + "?" + q.Encode()
}

func TestCandlesErrors(t *testing.T) {
	f := newCandlesFixture(t)
	for _, tc := range []struct {
		name   string
		path   string
		status int
		code   string
		msg    string
	}{
		{"bad timeframe", candlesPath("symbol", "BTCUSDT", "exchangeId", "binance", "timeframe", "2h"), 400, "INVALID_PARAMETER",
			"timeframe must be one of 1m, 5m, 15m, 30m, 1h, 4h, 1d, 1w"},
		{"no timeframe", candlesPath("symbol", "BTCUSDT", "exchangeId", "binance"), 400, "INVALID_PARAMETER",
			"timeframe must be one of 1m, 5m, 15m, 30m, 1h, 4h, 1d, 1w"},
		{"limit not an integer", candlesPath("symbol", "BTCUSDT", "exchangeId", "binance", "timeframe", "1h", "limit", "ten"), 400,
			"INVALID_PARAMETER", "limit must be an integer from 1 to 500"},
		{"limit 0", candlesPath("symbol", "BTCUSDT", "exchangeId", "binance", "timeframe", "1h", "limit", "0"), 400,
			"INVALID_PARAMETER", "limit must be an integer from 1 to 500"},
		{"limit 501", candlesPath("symbol", "BTCUSDT", "exchangeId", "binance", "timeframe", "1h", "limit", "501"), 400,
			"INVALID_PARAMETER", "limit must be an integer from 1 to 500"},
		{"bad market", candlesPath("symbol", "BTCUSDT", "exchangeId", "binance", "timeframe", "1h", "market", "margin"), 400,
			"INVALID_PARAMETER", "market must be spot or futures"},
		{"missing symbol", candlesPath("exchangeId", "binance", "timeframe", "1h"), 400, "MISSING_SYMBOL", "symbol is required"},
		{"unknown symbol", candlesPath("symbol", "NOPEUSDT", "exchangeId", "binance", "timeframe", "1h"), 400, "INVALID_SYMBOL", ""},
		{"missing exchangeId", candlesPath("symbol", "BTCUSDT", "timeframe", "1h"), 400, "INVALID_PARAMETER", ""},
		{"unknown exchangeId", candlesPath("symbol", "BTCUSDT", "exchangeId", "kraken", "timeframe", "1h"), 404, "NOT_FOUND", "exchange not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.get(t, tc.path)
			var b candlesBody
			r.decode(t, &b)
			if r.status != tc.status || b.Success || b.Code != tc.code || (tc.msg != "" && b.Error != tc.msg) {
				t.Fatalf("%d %s, want %d %s %q", r.status, r.body, tc.status, tc.code, tc.msg)
			}
		})
	}
}

func TestCandlesSpellingsAndShape(t *testing.T) {
	f := newCandlesFixture(t)
	// 12:00:00 on the fixture's clock: the 11:00 1h candle closed just now.
	var first []byte
	for _, sym := range []string{"BTCUSDT", "BTC/USDT", "btc/usdt", "BTC-USDT", "BTC_USDT", "BINANCE:BTCUSDT", "BYBIT:BTCUSDT.P",
		"BTCUSDT.P", "BTC/USDT:USDT", "btcusdtperp"} {
		r := f.get(t, candlesPath("symbol", sym, "exchangeId", "binance", "timeframe", "1h", "limit", "48"))
		var b candlesBody
		r.decode(t, &b)
		if r.status != http.StatusOK || !b.Success || b.Data.Symbol != "BTC/USDT" || b.Data.Timeframe != "1h" || b.Data.UsingFallback {
			t.Fatalf("%s: %d %s", sym, r.status, r.body)
		}
		if first == nil {
			first = r.body
		} else if string(r.body) != string(first) {
			t.Fatalf("%s answers differently from BTCUSDT", sym)
		}
	}
	if f.fake.Calls() != 1 {
		t.Fatalf("%d venue calls for one series, want 1", f.fake.Calls())
	}
	// Numbers, not strings, and integer times.
	if !strings.Contains(string(first), `"open":`) || strings.Contains(string(first), `"open":"`) {
		t.Fatalf("prices are not JSON numbers: %.300s", first)
	}
	var b candlesBody
	response{body: first}.decode(t, &b)
	cs := b.Data.Candles
	if len(cs) != 48 {
		t.Fatalf("%d candles, want 48", len(cs))
	}
	hour := time.Hour.Milliseconds()
	// The open 12:00 candle is left out: the newest is 11:00, closed at 12:00.
	if want := time.Date(2026, 11, 24, 11, 0, 0, 0, time.UTC).UnixMilli(); cs[47].Timestamp != want {
		t.Fatalf("last candle %d, want %d (11:00)", cs[47].Timestamp, want)
	}
	for i, c := range cs {
		if c.Time*1000 != c.Timestamp {
			t.Fatalf("candle %d: time %d, timestamp %d", i, c.Time, c.Timestamp)
		}
		if i > 0 && c.Timestamp-cs[i-1].Timestamp != hour {
			t.Fatalf("candles %d and %d are %d ms apart", i-1, i, c.Timestamp-cs[i-1].Timestamp)
		}
	}
}

func TestCandlesGapsAndRepeats(t *testing.T) {
	f := newCandlesFixture(t)
	// The venue leaves 09:00 and 10:00 out and repeats 08:00.
	f.fake.Drop(time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC))
	f.fake.Drop(time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC))
	f.fake.Duplicate(time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC))
	r := f.get(t, candlesPath("symbol", "ETHUSDT", "exchangeId", "bybit", "timeframe", "1h", "limit", "5"))
	var b candlesBody
	r.decode(t, &b)
	cs := b.Data.Candles
	if r.status != http.StatusOK || len(cs) != 5 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	// 07:00, 08:00 (once), 09:00 and 10:00 filled flat at 08:00's close with volume 0, 11:00.
	for i, h := range []int{7, 8, 9, 10, 11} {
		if want := time.Date(2026, 11, 24, h, 0, 0, 0, time.UTC).UnixMilli(); cs[i].Timestamp != want {
			t.Fatalf("candle %d opens at %d, want %02d:00", i, cs[i].Timestamp, h)
		}
	}
	for _, c := range cs[2:4] {
		if !c.Open.Equal(cs[1].Close) || !c.High.Equal(cs[1].Close) || !c.Low.Equal(cs[1].Close) || !c.Close.Equal(cs[1].Close) || !c.Volume.IsZero() {
			t.Fatalf("filled candle %+v, want flat at %s with volume 0", c, cs[1].Close)
		}
	}
	if cs[4].Volume.IsZero() || cs[1].Volume.IsZero() {
		t.Fatal("a traded candle has volume 0")
	}
}

func TestCandlesFallback(t *testing.T) {
	f := newCandlesFixture(t)
	f.fake.SetDown(true)
	for _, ex := range []string{"binance", "paper"} {
		r := f.get(t, candlesPath("symbol", "BTCUSDT", "exchangeId", ex, "timeframe", "15m"))
		var b candlesBody
		r.decode(t, &b)
		if r.status != http.StatusOK || !b.Data.UsingFallback || len(b.Data.Candles) != candles.DefaultLimit("15m") {
			t.Fatalf("%s: %d, fallback %v, %d candles", ex, r.status, b.Data.UsingFallback, len(b.Data.Candles))
		}
	}
}

func TestCandlesConnections(t *testing.T) {
	f := newCandlesFixture(t)
	alice, bob := f.user(t, "alice@example.com"), f.user(t, "bob@example.com")
	conns := credentials.NewConnections(f.rdb)
	if err := conns.Save(t.Context(), credentials.Connection{UID: "3f1c2a9e-0000-4000-8000-00000000b0b0", Exchange: "binance",
		Owner: "bob@example.com", SpotEndpoint: f.venue}); err != nil {
		t.Fatal(err)
	}
	path := candlesPath("symbol", "BTCUSDT", "exchangeId", "3f1c2a9e-0000-4000-8000-00000000b0b0", "timeframe", "1h", "limit", "3")
	missing := candlesPath("symbol", "BTCUSDT", "exchangeId", "3f1c2a9e-0000-4000-8000-0000000000ff", "timeframe", "1h", "limit", "3")

	own := f.get(t, path, f.bearer(t, bob))
	var b candlesBody
	own.decode(t, &b)
	if own.status != http.StatusOK || b.Data.UsingFallback || len(b.Data.Candles) != 3 {
		t.Fatalf("owner: %d %s", own.status, own.body)
	}
	if own := f.get(t, path, f.session(t, bob)); own.status != http.StatusOK {
		t.Fatalf("owner by session: %d", own.status)
	}

	foreign := f.get(t, path, f.bearer(t, alice))
	unknown := f.get(t, missing, f.bearer(t, alice))
	anonymous := f.get(t, path)
	for name, r := range map[string]response{"foreign": foreign, "unknown": unknown, "anonymous": anonymous} {
		if r.status != http.StatusNotFound {
			t.Fatalf("%s: %d %s, want 404", name, r.status, r.body)
		}
	}
	if string(foreign.body) != string(unknown.body) || string(anonymous.body) != string(unknown.body) {
		t.Fatalf("bodies differ: foreign %s, unknown %s, anonymous %s", foreign.body, unknown.body, anonymous.body)
	}
	if !slices.Equal(foreign.header.Values("Content-Type"), unknown.header.Values("Content-Type")) {
		t.Fatal("headers differ")
	}

	// A bad token is refused, not served as anonymous.
	bad := f.get(t, path, func(r *http.Request) { r.Header.Set("Authorization", "Bearer abc.def.ghi") })
	if bad.status != http.StatusUnauthorized {
		t.Fatalf("bad token: %d, want 401", bad.status)
	}
	// Exchange names need no caller, and ignore one.
	if r := f.get(t, candlesPath("symbol", "BTCUSDT", "exchangeId", "binance", "timeframe", "1h")); r.status != http.StatusOK {
		t.Fatalf("anonymous public candles: %d", r.status)
	}
}
