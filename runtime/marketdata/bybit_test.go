package marketdata_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/marketdata/marketdatafake"
)

func TestBybitPublicCandles(t *testing.T) {
	clk := testkit.NewClock(time.Date(2026, 11, 24, 12, 0, 10, 0, time.UTC))
	sim := marketdata.NewSimulated(marketdata.SimulatedOptions{Now: clk.Now})
	fake := marketdatafake.New(sim)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	by := marketdata.NewBybitPublic(srv.URL, "", nil)

	// Bybit answers newest first and in strings: the client turns them round exactly.
	sameCandles(t, by, sim)
	p, err := by.Price(t.Context(), exchange.Spot, "ETH/USDT")
	want, _ := sim.Price(t.Context(), exchange.Spot, "ETH/USDT")
	if err != nil || !p.Equal(want) {
		t.Fatalf("price %s, %v; want %s", p, err, want)
	}
	if _, err := by.Candles(t.Context(), exchange.Spot, "NOPE/USDT", "1h", 5); errs.CodeOf(err) != errs.InvalidSymbol {
		t.Fatalf("unknown symbol: %v, want INVALID_SYMBOL", err)
	}
	if _, err := by.Candles(t.Context(), exchange.Spot, "BTC/USDT", "2h", 5); err == nil {
		t.Fatal("2h accepted")
	}
	fake.SetDown(true)
	if _, err := by.Candles(t.Context(), exchange.Spot, "BTC/USDT", "1h", 5); errs.CodeOf(err) != errs.ExchangeError {
		t.Fatalf("venue down: %v, want EXCHANGE_ERROR", err)
	}
}

func TestBybitPublicErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		code   errs.Code
	}{
		{"IP ban", http.StatusForbidden, "access too frequent", errs.RateLimited},
		{"too many visits", http.StatusOK, `{"retCode":10006,"retMsg":"Too many visits!","result":{}}`, errs.RateLimited},
		{"HTTP 429", http.StatusTooManyRequests, ``, errs.RateLimited},
		{"unknown symbol", http.StatusOK, `{"retCode":10001,"retMsg":"params error: symbol invalid","result":{}}`, errs.InvalidSymbol},
		{"other refusal", http.StatusOK, `{"retCode":10001,"retMsg":"params error: interval invalid","result":{}}`, errs.ExchangeError},
		{"5xx", http.StatusBadGateway, `bad gateway`, errs.ExchangeError},
		{"not JSON", http.StatusOK, `<html>`, errs.ExchangeError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			t.Cleanup(srv.Close)
			_, err := marketdata.NewBybitPublic(srv.URL, "", nil).Candles(t.Context(), exchange.Spot, "BTC/USDT", "1m", 5)
			if errs.CodeOf(err) != tc.code {
				t.Fatalf("error %v, want %s", err, tc.code)
			}
			if e, _ := errs.As(err); tc.code == errs.RateLimited && e.RetryAfter <= 0 {
				t.Fatalf("RATE_LIMITED without a retry delay: %+v", e)
			}
		})
	}
}
