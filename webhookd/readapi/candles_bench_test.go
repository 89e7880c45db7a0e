package readapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sigops/sigops/webhookd/readapi"
)

// benchClients is the number of concurrent connections of the HTTP benchmarks.
const benchClients = 50

// loadHTTP sends b.N GETs of url over benchClients keep-alive connections and reports
// requests/s; every answer must be 200.
func loadHTTP(b *testing.B, url string) {
	b.Helper()
	tr := &http.Transport{MaxIdleConnsPerHost: benchClients, MaxConnsPerHost: benchClients}
	b.Cleanup(tr.CloseIdleConnections)
	client := &http.Client{Transport: tr}
	var next sync.Mutex
	left := b.N
	take := func() bool {
		next.Lock()
		defer next.Unlock()
		left--
		return left >= 0
	}
	b.ResetTimer()
	began := time.Now()
	var wg sync.WaitGroup
	for range benchClients {
		wg.Go(func() {
			for take() {
				req, _ := http.NewRequest(http.MethodGet, url, nil)
				req.Header.Set("X-Forwarded-Proto", "https")
				resp, err := client.Do(req)
				if err != nil {
					b.Error(err)
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Errorf("status %d", resp.StatusCode)
					return
				}
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	b.ReportMetric(float64(b.N)/time.Since(began).Seconds(), "req/s")
}

// BenchmarkCandlesHTTP is GET /api/charts/candles from the cache through the real webhookd
// router: HTTPS check, the per-address rate limit in Redis (a limit that does not trip),
// the handler, the default 1h series (168 candles, about 20 KB).
func BenchmarkCandlesHTTP(b *testing.B) {
	f := newCandlesFixture(b, func(o *readapi.Options) {
		o.PerIP = readapi.RateLimit{Rate: 1 << 30, Period: time.Second, Burst: 1 << 30}
	})
	path := candlesPath("symbol", "BTCUSDT", "exchangeId", "binance", "timeframe", "1h")
	if r := f.get(b, path); r.status != http.StatusOK {
		b.Fatalf("%d %s", r.status, r.body)
	}
	loadHTTP(b, f.url+path)
	if f.fake.Calls() != 1 {
		b.Fatalf("%d venue calls", f.fake.Calls())
	}
}

// BenchmarkBareHTTP is the reference: a chi handler writing a fixed JSON body of the same
// size, under the same load, with no middleware and no Redis.
func BenchmarkBareHTTP(b *testing.B) {
	f := newCandlesFixture(b)
	body := f.get(b, candlesPath("symbol", "BTCUSDT", "exchangeId", "binance", "timeframe", "1h")).body
	r := chi.NewRouter()
	r.Get("/fixed", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
	ts := httptest.NewServer(r)
	b.Cleanup(ts.Close)
	b.ReportMetric(float64(len(body)), "body-bytes")
	loadHTTP(b, ts.URL+"/fixed")
}
