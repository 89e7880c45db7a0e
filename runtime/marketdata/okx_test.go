package marketdata_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/marketdata/marketdatafake"
)

func TestOKXPublicCandles(t *testing.T) {
	clk := testkit.NewClock(time.Date(2026, 11, 24, 12, 0, 10, 0, time.UTC))
	sim := marketdata.NewSimulated(marketdata.SimulatedOptions{Now: clk.Now})
	fake := marketdatafake.New(sim)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	ok := marketdata.NewOKXPublic(srv.URL, "", nil)

	// OKX answers newest first and in strings, swap volume in volCcy: turned round exactly.
	sameCandles(t, ok, sim)
	// More than a page: 250 candles are three requests of at most 100, backward.
	before := fake.Calls()
	got, err := ok.Candles(t.Context(), exchange.Spot, "ETH/USDT", "1m", 250)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := sim.Candles(t.Context(), exchange.Spot, "ETH/USDT", "1m", 250)
	if len(got) != 250 || fake.Calls()-before != 3 {
		t.Fatalf("%d candles in %d requests", len(got), fake.Calls()-before)
	}
	for i := range want {
		if got[i].Timestamp != want[i].Timestamp || !got[i].Close.Equal(want[i].Close) {
			t.Fatalf("candle %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	p, err := ok.Price(t.Context(), exchange.Futures, "ETH/USDT")
	wantP, _ := sim.Price(t.Context(), exchange.Futures, "ETH/USDT")
	if err != nil || !p.Equal(wantP) {
		t.Fatalf("price %s, %v; want %s", p, err, wantP)
	}
	if _, err := ok.Candles(t.Context(), exchange.Spot, "NOPE/USDT", "1h", 5); errs.CodeOf(err) != errs.InvalidSymbol {
		t.Fatalf("unknown symbol: %v, want INVALID_SYMBOL", err)
	}
	if _, err := ok.Candles(t.Context(), exchange.Spot, "BTCUSDT", "1h", 5); errs.CodeOf(err) != errs.InvalidSymbol {
		t.Fatalf("no quote: %v", err)
	}
	if _, err := ok.Candles(t.Context(), exchange.Spot, "BTC/USDT", "2h", 5); err == nil {
		t.Fatal("2h accepted")
	}
	fake.SetDown(true)
	if _, err := ok.Candles(t.Context(), exchange.Spot, "BTC/USDT", "1h", 5); errs.CodeOf(err) != errs.ExchangeError {
		t.Fatalf("venue down: %v, want EXCHANGE_ERROR", err)
	}
}

// The request's parameters: instId, OKX's bar names (UTC days and weeks), limit at most 100,
// after for the pages before the first.
func TestOKXPublicRequests(t *testing.T) {
	var mu sync.Mutex
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.Path+"?"+r.URL.RawQuery)
		mu.Unlock()
		_, _ = w.Write([]byte(`{"code":"0","msg":"","data":[]}`))
	}))
	t.Cleanup(srv.Close)
	ok := marketdata.NewOKXPublic(srv.URL, "", nil)
	for tf, bar := range map[string]string{"1m": "1m", "5m": "5m", "15m": "15m", "30m": "30m", "1h": "1H", "4h": "4H", "1d": "1Dutc", "1w": "1Wutc"} {
		mu.Lock()
		queries = nil
		mu.Unlock()
		if _, err := ok.Candles(t.Context(), exchange.Futures, "btc/usdt", tf, 500); err != nil {
			t.Fatal(err)
		}
		want := "/api/v5/market/history-candles?bar=" + bar + "&instId=BTC-USDT-SWAP&limit=100"
		if len(queries) != 1 || queries[0] != want {
			t.Errorf("%s: %v, want %s", tf, queries, want)
		}
	}
}

func TestOKXPublicErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		code   errs.Code
	}{
		{"rate limit", http.StatusOK, `{"code":"50011","msg":"Rate limit reached.","data":[]}`, errs.RateLimited},
		{"HTTP 429", http.StatusTooManyRequests, `{"code":"50011","msg":"Too Many Requests","data":[]}`, errs.RateLimited},
		{"unknown instrument", http.StatusOK, `{"code":"51001","msg":"Instrument ID or Spread ID doesn't exist.","data":[]}`, errs.InvalidSymbol},
		{"bad instId", http.StatusBadRequest, `{"code":"51000","msg":"Parameter instId error","data":[]}`, errs.InvalidSymbol},
		{"other refusal", http.StatusBadRequest, `{"code":"51000","msg":"Parameter bar error","data":[]}`, errs.ExchangeError},
		{"5xx", http.StatusBadGateway, `bad gateway`, errs.ExchangeError},
		{"not JSON", http.StatusOK, `<html>`, errs.ExchangeError},
		{"malformed row", http.StatusOK, `{"code":"0","msg":"","data":[["1","x"]]}`, errs.ExchangeError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			t.Cleanup(srv.Close)
			_, err := marketdata.NewOKXPublic(srv.URL, "", nil).Candles(t.Context(), exchange.Spot, "BTC/USDT", "1m", 5)
			if errs.CodeOf(err) != tc.code {
				t.Fatalf("error %v, want %s", err, tc.code)
			}
			if e, _ := errs.As(err); tc.code == errs.RateLimited && e.RetryAfter <= 0 {
				t.Fatalf("RATE_LIMITED without a retry delay: %+v", e)
			}
		})
	}
}

// A period longer than one request is paged backward, 100 candles a request, repeats
// dropped, exactly the simulated candles.
func TestOKXPublicCandlesBetween(t *testing.T) {
	clk := testkit.NewClock(time.Date(2026, 11, 24, 12, 0, 10, 0, time.UTC))
	sim := marketdata.NewSimulated(marketdata.SimulatedOptions{Now: clk.Now})
	fake := marketdatafake.New(sim)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	to := time.Date(2026, 11, 24, 11, 0, 0, 0, time.UTC)
	from := to.Add(-250 * time.Minute)
	want, err := sim.CandlesBetween(t.Context(), exchange.Futures, "ETH/USDT", "1m", from, to)
	if err != nil || len(want) != 250 {
		t.Fatalf("simulated: %d, %v", len(want), err)
	}
	fake.Duplicate(from.Add(100 * time.Minute))
	ok := marketdata.NewOKXPublic(srv.URL, "", nil)
	got, err := ok.CandlesBetween(t.Context(), exchange.Futures, "ETH/USDT", "1m", from, to)
	if err != nil {
		t.Fatal(err)
	}
	if calls := fake.Calls(); calls != 3 {
		t.Errorf("%d requests, want 3 (100 + 100 + 50)", calls)
	}
	if len(got) != len(want) {
		t.Fatalf("%d candles, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].Timestamp != want[i].Timestamp || !got[i].Close.Equal(want[i].Close) || !got[i].Volume.Equal(want[i].Volume) {
			t.Fatalf("candle %d: %+v, want %+v", i, got[i], want[i])
		}
	}
	h, err := marketdata.HistoryFromFlag(" OKX ")
	if _, isOKX := h.(*marketdata.OKXPublic); err != nil || !isOKX {
		t.Errorf("HistoryFromFlag(okx) = %T, %v", h, err)
	}
	if _, err := marketdata.HistoryFromFlag("nope"); err == nil || !strings.Contains(err.Error(), "okx") {
		t.Errorf("unknown flag: %v", err)
	}
}
