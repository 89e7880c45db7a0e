package candles_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/candles"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/marketdata/marketdatafake"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// world is one Redis, one clock, a simulated market, and a fake venue serving that market's
// candles over HTTP (Binance and Bybit paths alike).
type world struct {
	rdb  redis.UniversalClient
	clk  *testkit.Clock
	sim  *marketdata.Simulated
	fake *marketdatafake.Server
	url  string
}

// start is 10 s into a minute, a 1h candle and a 1d candle.
var start = time.Date(2026, 11, 24, 12, 0, 10, 0, time.UTC)

func newWorld(t testing.TB) *world {
	t.Helper()
	_, rdb := storetest.New(t)
	clk := testkit.NewClock(start)
	sim := marketdata.NewSimulated(marketdata.SimulatedOptions{Now: clk.Now})
	fake := marketdatafake.New(sim)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	return &world{rdb: rdb, clk: clk, sim: sim, fake: fake, url: srv.URL}
}

// fallbackSeed makes the fallback's market differ from the venue's, so a test tells which
// one answered.
const fallbackSeed = 7

// service is one replica: the venues point at the fake; the fallback is a simulated market
// of another seed.
func (w *world) service(mod ...func(*candles.Options)) *candles.Service {
	idx := signal.NewSymbols(w.sim.Symbols())
	o := candles.Options{
		Redis:    w.rdb,
		Symbols:  func() *signal.Symbols { return idx },
		Fallback: marketdata.NewSimulated(marketdata.SimulatedOptions{Seed: fallbackSeed, Now: w.clk.Now}),
		Venues: map[string]candles.Venue{
			candles.Binance: {Spot: w.url, Futures: w.url, TestnetSpot: w.url, TestnetFutures: w.url},
			candles.Bybit:   {Spot: w.url, Futures: w.url, TestnetSpot: w.url, TestnetFutures: w.url},
			candles.OKX:     {Spot: w.url, Futures: w.url, TestnetSpot: w.url, TestnetFutures: w.url},
		},
		Logger: slog.New(slog.DiscardHandler),
		Now:    w.clk.Now,
	}
	for _, m := range mod {
		m(&o)
	}
	return candles.New(o)
}

// closedCandles is what the venue holds: the simulated market's closed candles.
func (w *world) closedCandles(t testing.TB, seed int64, kind exchange.Kind, symbol, tf string, n int) []marketdata.Candle {
	t.Helper()
	sim := w.sim
	if seed != 0 {
		sim = marketdata.NewSimulated(marketdata.SimulatedOptions{Seed: seed, Now: w.clk.Now})
	}
	cs, err := sim.Candles(t.Context(), kind, symbol, tf, n+1)
	if err != nil {
		t.Fatal(err)
	}
	return cs[:n] // the last is open
}

func sameCandles(t testing.TB, got, want []marketdata.Candle) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d candles, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.Timestamp != w.Timestamp || g.Time != w.Time || !g.Open.Equal(w.Open) || !g.High.Equal(w.High) ||
			!g.Low.Equal(w.Low) || !g.Close.Equal(w.Close) || !g.Volume.Equal(w.Volume) {
			t.Fatalf("candle %d: %+v, want %+v", i, g, w)
		}
	}
}

func TestServesTheVenuesClosedCandles(t *testing.T) {
	w := newWorld(t)
	s := w.service()
	for _, ex := range []string{"binance", "bybit", "okx", "Binance"} {
		for _, kind := range []string{"", "spot", "futures"} {
			res, err := s.Get(t.Context(), candles.Request{Symbol: "ethusdt", ExchangeID: ex, Timeframe: "15m", Limit: 40, Market: kind})
			if err != nil {
				t.Fatalf("%s %s: %v", ex, kind, err)
			}
			k := exchange.Spot
			if kind == "futures" {
				k = exchange.Futures
			}
			if res.Symbol != "ETH/USDT" || res.Timeframe != "15m" || res.UsingFallback {
				t.Fatalf("%s %s: %+v", ex, kind, res)
			}
			sameCandles(t, res.Candles, w.closedCandles(t, 0, k, "ETH/USDT", "15m", 40))
			// The last candle is the one that closed at 12:00:00, the open one (12:00) left out.
			if last := res.Candles[len(res.Candles)-1]; last.Timestamp != start.Truncate(15*time.Minute).Add(-15*time.Minute).UnixMilli() {
				t.Fatalf("last candle opens at %d", last.Timestamp)
			}
		}
	}
	// Default limits follow the timeframe.
	res, err := s.Get(t.Context(), candles.Request{Symbol: "BTC/USDT", ExchangeID: "binance", Timeframe: "1h"})
	if err != nil || len(res.Candles) != candles.DefaultLimit("1h") || candles.DefaultLimit("1h") != 168 {
		t.Fatalf("default 1h limit: %d candles, %v", len(res.Candles), err)
	}
}

func TestErrors(t *testing.T) {
	w := newWorld(t)
	s := w.service()
	ok := candles.Request{Symbol: "BTCUSDT", ExchangeID: "binance", Timeframe: "1h"}
	for _, tc := range []struct {
		name string
		mod  func(*candles.Request)
		code errs.Code
		msg  string
	}{
		{"no symbol", func(r *candles.Request) { r.Symbol = " " }, errs.MissingSymbol, "symbol is required"},
		{"unknown symbol", func(r *candles.Request) { r.Symbol = "NOPEUSDT" }, errs.InvalidSymbol, ""},
		{"bad timeframe", func(r *candles.Request) { r.Timeframe = "2h" }, errs.InvalidParameter, "timeframe must be one of 1m, 5m, 15m, 30m, 1h, 4h, 1d, 1w"},
		{"limit too big", func(r *candles.Request) { r.Limit = 501 }, errs.InvalidParameter, "limit must be an integer from 1 to 500"},
		{"negative limit", func(r *candles.Request) { r.Limit = -1 }, errs.InvalidParameter, "limit must be an integer from 1 to 500"},
		{"bad market", func(r *candles.Request) { r.Market = "margin" }, errs.InvalidParameter, "market must be spot or futures"},
		{"no exchange", func(r *candles.Request) { r.ExchangeID = "" }, errs.InvalidParameter, ""},
		{"unknown exchange", func(r *candles.Request) { r.ExchangeID = "kraken"; r.Owner = "a@example.com" }, errs.NotFound, "exchange not found"},
	} {
		r := ok
		tc.mod(&r)
		_, err := s.Get(t.Context(), r)
		e, isTyped := errs.As(err)
		if !isTyped || e.Code != tc.code || (tc.msg != "" && e.Message != tc.msg) {
			t.Errorf("%s: %v, want %s %q", tc.name, err, tc.code, tc.msg)
		}
	}
	for raw, want := range map[string]int{"": 0, "1": 1, "500": 500} {
		if n, err := candles.ParseLimit(raw); err != nil || n != want {
			t.Errorf("ParseLimit(%q) = %d, %v", raw, n, err)
		}
	}
	for _, raw := range []string{"0", "501", "-3", "ten", "1.5", "1e2"} {
		if _, err := candles.ParseLimit(raw); errs.CodeOf(err) != errs.InvalidParameter {
			t.Errorf("ParseLimit(%q): %v, want INVALID_PARAMETER", raw, err)
		}
	}
	if w.fake.Calls() != 0 {
		t.Fatalf("%d venue calls for refused requests", w.fake.Calls())
	}
}

func TestConnections(t *testing.T) {
	w := newWorld(t)
	conns := credentials.NewConnections(w.rdb)
	// Bob's Bybit testnet connection, with its own base URL (the fake).
	if err := conns.Save(t.Context(), credentials.Connection{UID: "conn-bob", Exchange: "bybit", Owner: "Bob@Example.com",
		Testnet: true, SpotEndpoint: w.url}); err != nil {
		t.Fatal(err)
	}
	s := w.service(func(o *candles.Options) {
		// The default venues point nowhere reachable: only the connection's endpoint works.
		o.Venues = candles.DefaultVenues()
	})
	req := candles.Request{Symbol: "BTC/USDT", ExchangeID: "conn-bob", Timeframe: "1h", Limit: 24, Owner: "bob@example.com"}
	res, err := s.Get(t.Context(), req)
	if err != nil || res.UsingFallback {
		t.Fatalf("own connection: %+v, %v", res.UsingFallback, err)
	}
	sameCandles(t, res.Candles, w.closedCandles(t, 0, exchange.Spot, "BTC/USDT", "1h", 24))

	// Another user's connection and no caller answer exactly like a missing one.
	for _, owner := range []string{"alice@example.com", ""} {
		req.Owner = owner
		_, err := s.Get(t.Context(), req)
		if e, _ := errs.As(err); e == nil || e.Code != errs.NotFound || e.Message != "exchange not found" {
			t.Fatalf("owner %q: %v, want NOT_FOUND exchange not found", owner, err)
		}
	}
}

func TestFallback(t *testing.T) {
	w := newWorld(t)
	s := w.service()
	w.fake.SetDown(true)
	res, err := s.Get(t.Context(), candles.Request{Symbol: "BTCUSDT", ExchangeID: "binance", Timeframe: "5m", Limit: 10})
	if err != nil || !res.UsingFallback {
		t.Fatalf("venue down: fallback %v, %v", res.UsingFallback, err)
	}
	sameCandles(t, res.Candles, w.closedCandles(t, fallbackSeed, exchange.Spot, "BTC/USDT", "5m", 10))

	// Paper trading has no exchange: the public source serves, marked as the fallback.
	w.fake.SetDown(false)
	calls := w.fake.Calls()
	res, err = s.Get(t.Context(), candles.Request{Symbol: "BTCUSDT", ExchangeID: "paper", Timeframe: "5m", Limit: 10})
	if err != nil || !res.UsingFallback || w.fake.Calls() != calls {
		t.Fatalf("paper: fallback %v, %v, venue calls %d → %d", res.UsingFallback, err, calls, w.fake.Calls())
	}
	sameCandles(t, res.Candles, w.closedCandles(t, fallbackSeed, exchange.Spot, "BTC/USDT", "5m", 10))

	// A venue that cannot be reached at all (connection refused).
	dead := httptest.NewServer(w.fake)
	dead.Close()
	s2 := w.service(func(o *candles.Options) {
		o.Venues = map[string]candles.Venue{candles.Bybit: {Spot: dead.URL, Futures: dead.URL}}
	})
	res, err = s2.Get(t.Context(), candles.Request{Symbol: "BTCUSDT", ExchangeID: "bybit", Timeframe: "5m", Limit: 10})
	if err != nil || !res.UsingFallback {
		t.Fatalf("venue refused the connection: fallback %v, %v", res.UsingFallback, err)
	}
}

// Fifty requests of one cold series over two replicas sharing Redis make one venue call.
func TestOneFetchAcrossReplicas(t *testing.T) {
	w := newWorld(t)
	a, b := w.service(), w.service()
	w.fake.SetDelay(150 * time.Millisecond) // every request arrives while the fetch runs
	var wg sync.WaitGroup
	results := make([]candles.Result, 50)
	errList := make([]error, 50)
	for i := range 50 {
		s := a
		if i%2 == 1 {
			s = b
		}
		wg.Go(func() {
			results[i], errList[i] = s.Get(context.Background(), candles.Request{Symbol: "SOL/USDT", ExchangeID: "binance", Timeframe: "1m", Limit: 30 + i})
		})
	}
	wg.Wait()
	if n := w.fake.Calls(); n != 1 {
		t.Fatalf("%d venue calls, want 1", n)
	}
	want := w.closedCandles(t, 0, exchange.Spot, "SOL/USDT", "1m", 80)
	for i, r := range results {
		if errList[i] != nil || r.UsingFallback {
			t.Fatalf("request %d: %v (fallback %v)", i, errList[i], r.UsingFallback)
		}
		sameCandles(t, r.Candles, want[80-(30+i):])
	}
}

// A series is served until the next candle closes, at most 60 s; then fetched again.
func TestExpiry(t *testing.T) {
	w := newWorld(t)
	a, b := w.service(), w.service()
	get := func(s *candles.Service, tf string) candles.Result {
		t.Helper()
		res, err := s.Get(t.Context(), candles.Request{Symbol: "BTCUSDT", ExchangeID: "binance", Timeframe: tf, Limit: 5})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	// 1h at 12:00:10: the next close is 13:00, so the 60 s bound rules: 12:01:10.
	get(a, "1h")
	w.clk.Advance(59 * time.Second) // 12:01:09
	get(a, "1h")
	get(b, "1h") // the other replica reads Redis
	if n := w.fake.Calls(); n != 1 {
		t.Fatalf("%d calls within 60 s, want 1", n)
	}
	w.clk.Advance(time.Second) // 12:01:10
	get(a, "1h")
	get(b, "1h")
	if n := w.fake.Calls(); n != 2 {
		t.Fatalf("%d calls after 60 s, want 2", n)
	}

	// 1m at 12:01:10: the next close, 12:02:00, comes first; then the new candle shows.
	first := get(a, "1m")
	if n := w.fake.Calls(); n != 3 {
		t.Fatalf("%d calls, want 3", n)
	}
	w.clk.Set(time.Date(2026, 11, 24, 12, 1, 59, 999e6, time.UTC))
	if r := get(b, "1m"); r.Candles[4].Timestamp != first.Candles[4].Timestamp || w.fake.Calls() != 3 {
		t.Fatalf("refetched before the close (%d calls)", w.fake.Calls())
	}
	w.clk.Set(time.Date(2026, 11, 24, 12, 2, 0, 0, time.UTC))
	r := get(b, "1m")
	if w.fake.Calls() != 4 || r.Candles[4].Timestamp != time.Date(2026, 11, 24, 12, 1, 0, 0, time.UTC).UnixMilli() {
		t.Fatalf("after the close: %d calls, last candle %d", w.fake.Calls(), r.Candles[4].Timestamp)
	}
}

// A replica that took the lock and died holds the others up until the lock expires, and
// then one of them fetches.
func TestDeadWinner(t *testing.T) {
	w := newWorld(t)
	s := w.service(func(o *candles.Options) { o.LockTTL = 300 * time.Millisecond })
	lock := store.CandlesLock("fallback", "spot", "BTC/USDT", "1h")
	if err := w.rdb.Set(t.Context(), lock, "dead-replica", 300*time.Millisecond).Err(); err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	res, err := s.Get(t.Context(), candles.Request{Symbol: "BTCUSDT", ExchangeID: "paper", Timeframe: "1h", Limit: 3})
	if err != nil || len(res.Candles) != 3 {
		t.Fatalf("%v, %d candles", err, len(res.Candles))
	}
	if waited := time.Since(began); waited < 250*time.Millisecond {
		t.Fatalf("served after %s, before the dead replica's lock expired", waited)
	}
	if n, _ := w.rdb.Exists(t.Context(), store.CandlesEntry("fallback", "spot", "BTC/USDT", "1h")).Result(); n != 1 {
		t.Fatal("the entry was not stored")
	}
}

// An unknown symbol on the venue is a refusal the cache keeps, not a reason to fall back.
func TestVenueUnknownSymbol(t *testing.T) {
	w := newWorld(t)
	s := w.service(func(o *candles.Options) {
		o.Symbols = func() *signal.Symbols { return signal.NewSymbols(append(w.sim.Symbols(), "PEPE/USDT")) }
	})
	for range 3 {
		_, err := s.Get(t.Context(), candles.Request{Symbol: "PEPEUSDT", ExchangeID: "binance", Timeframe: "1h"})
		if errs.CodeOf(err) != errs.InvalidSymbol {
			t.Fatalf("%v, want INVALID_SYMBOL", err)
		}
	}
	if n := w.fake.Calls(); n != 1 {
		t.Fatalf("%d venue calls, want 1 (the refusal is cached)", n)
	}
}

func TestResultJSON(t *testing.T) {
	w := newWorld(t)
	res, err := w.service().Get(t.Context(), candles.Request{Symbol: "DOGEUSDT", ExchangeID: "binance", Timeframe: "1d", Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	// The same document encoding/json makes of the fields, candle by candle.
	type plain struct {
		Symbol        string              `json:"symbol"`
		Timeframe     string              `json:"timeframe"`
		Candles       []marketdata.Candle `json:"candles"`
		UsingFallback bool                `json:"usingFallback"`
	}
	want, _ := json.Marshal(plain{res.Symbol, res.Timeframe, res.Candles, res.UsingFallback})
	if string(got) != string(want) {
		t.Fatalf("JSON\n%s\nwant\n%s", got, want)
	}
	var back struct {
		Candles []marketdata.Candle `json:"candles"`
	}
	if err := json.Unmarshal(got, &back); err != nil {
		t.Fatal(err)
	}
	sameCandles(t, back.Candles, res.Candles)
}

func TestRedisDownStillServes(t *testing.T) {
	w := newWorld(t)
	broken := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { broken.Close() })
	s := w.service(func(o *candles.Options) { o.Redis = broken })
	res, err := s.Get(t.Context(), candles.Request{Symbol: "BTCUSDT", ExchangeID: "binance", Timeframe: "1h", Limit: 2})
	if err != nil || len(res.Candles) != 2 || res.UsingFallback {
		t.Fatalf("%+v, %v", res, err)
	}
	if _, err := s.Get(t.Context(), candles.Request{Symbol: "BTCUSDT", ExchangeID: "binance", Timeframe: "1h", Limit: 2}); err != nil || w.fake.Calls() != 1 {
		t.Fatalf("second request: %v, %d calls (want 1: kept in memory)", err, w.fake.Calls())
	}
}
