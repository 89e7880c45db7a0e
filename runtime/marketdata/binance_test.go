package marketdata

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
)

// fakeBinance answers like Binance's public market-data API for one market (spot or
// futures) and checks the query parameters as Binance would.
type fakeBinance struct {
	t      *testing.T
	prefix string            // "/api/v3" or "/fapi/v1"
	prices map[string]string // BTCUSDT -> "65000.01000000"
	// fail, when set, answers instead (status and body), with optional headers.
	fail func(w http.ResponseWriter, r *http.Request) bool

	mu       sync.Mutex
	requests []string // path?query
}

func newFakeBinance(t *testing.T, prefix string, prices map[string]string) (*fakeBinance, *httptest.Server) {
	f := &fakeBinance{t: t, prefix: prefix, prices: prices}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeBinance) reqs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.requests...)
}

func (f *fakeBinance) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.requests = append(f.requests, r.URL.Path+"?"+r.URL.RawQuery)
	f.mu.Unlock()
	if r.Method != http.MethodGet {
		f.t.Errorf("method %s", r.Method)
	}
	if f.fail != nil && f.fail(w, r) {
		return
	}
	q := r.URL.Query()
	w.Header().Set("Content-Type", "application/json;charset=UTF-8")
	binErr := func(status, code int, msg string) {
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"code":%d,"msg":%q}`, code, msg)
	}
	sym := q.Get("symbol")
	if sym == "" {
		binErr(400, -1102, "Mandatory parameter 'symbol' was not sent, was empty/null, or malformed.")
		return
	}
	price, ok := f.prices[sym]
	if !ok {
		binErr(400, -1121, "Invalid symbol.")
		return
	}
	switch r.URL.Path {
	case f.prefix + "/ticker/price":
		if len(q) != 1 {
			f.t.Errorf("ticker query %v", q)
		}
		if f.prefix == "/fapi/v1" {
			fmt.Fprintf(w, `{"symbol":%q,"price":%q,"time":1767225600000}`, sym, price)
		} else {
			fmt.Fprintf(w, `{"symbol":%q,"price":%q}`, sym, price)
		}
	case f.prefix + "/klines":
		interval := q.Get("interval")
		if _, err := TimeframeDuration(interval); err != nil {
			binErr(400, -1120, "Invalid interval.")
			return
		}
		limit, err := strconv.Atoi(q.Get("limit"))
		max := 1000
		if f.prefix == "/fapi/v1" {
			max = 1500
		}
		if err != nil || limit < 1 || limit > max {
			binErr(400, -1130, "Data sent for parameter 'limit' is not valid.")
			return
		}
		if len(q) != 3 {
			f.t.Errorf("klines query %v", q)
		}
		dur, _ := TimeframeDuration(interval)
		step := dur.Milliseconds()
		open := int64(1767225600000) - int64(limit-1)*step
		var rows []string
		for i := range min(limit, 3) { // a short answer is fine: "up to limit"
			o := open + int64(i)*step
			rows = append(rows, fmt.Sprintf(
				`[%d,"%d.10000000","%d.50000000","%d.00100000","%d.20000000","12.34500000",%d,"802425.00000000",1234,"6.00000000","390000.00000000","0"]`,
				o, 65000+i, 65010+i, 64990+i, 65001+i, o+step-1))
		}
		fmt.Fprintf(w, "[%s]", strings.Join(rows, ","))
	default:
		w.WriteHeader(404)
	}
}

func newBinanceFakes(t *testing.T) (*BinancePublic, *fakeBinance, *fakeBinance) {
	spot, spotSrv := newFakeBinance(t, "/api/v3", map[string]string{"BTCUSDT": "65000.01000000", "DOGEUSDT": "0.15234000"})
	fut, futSrv := newFakeBinance(t, "/fapi/v1", map[string]string{"BTCUSDT": "65010.10", "DOGEUSDT": "0.152350"})
	return NewBinancePublic(spotSrv.URL, futSrv.URL+"/", nil), spot, fut
}

func TestBinanceDefaults(t *testing.T) {
	b := NewBinancePublic("", "", nil)
	if b.spotURL != "https://api.binance.com" || b.futuresURL != "https://fapi.binance.com" ||
		b.Timeout != 2*time.Second || b.client == nil {
		t.Errorf("defaults %+v", b)
	}
}

func TestBinancePrice(t *testing.T) {
	b, spot, fut := newBinanceFakes(t)
	for _, tc := range []struct {
		kind exchange.Kind
		sym  string
		want string
	}{
		{exchange.Spot, "BTC/USDT", "65000.01"},
		{exchange.Spot, "DOGE/USDT", "0.15234"},
		{exchange.Futures, "BTC/USDT", "65010.1"},
		{exchange.Futures, "doge/usdt", "0.15235"},
	} {
		p := mustPrice(t, b, tc.kind, tc.sym)
		if !p.Equal(testkit.D(tc.want)) || p.String() != tc.want {
			t.Errorf("%s %s: %s, want %s", tc.kind, tc.sym, p, tc.want)
		}
	}
	if got := spot.reqs(); len(got) != 2 || got[0] != "/api/v3/ticker/price?symbol=BTCUSDT" {
		t.Errorf("spot requests %v", got)
	}
	if got := fut.reqs(); len(got) != 2 || got[1] != "/fapi/v1/ticker/price?symbol=DOGEUSDT" {
		t.Errorf("futures requests %v", got)
	}
}

func TestBinanceCandles(t *testing.T) {
	b, spot, fut := newBinanceFakes(t)
	cs := mustCandles(t, b, exchange.Spot, "BTC/USDT", "1h", 3)
	if len(cs) != 3 {
		t.Fatalf("%d candles", len(cs))
	}
	first := cs[0]
	if first.Timestamp != 1767225600000-2*3600_000 || first.Time != first.Timestamp/1000 ||
		!first.Open.Equal(testkit.D("65000.1")) || !first.High.Equal(testkit.D("65010.5")) || !first.Low.Equal(testkit.D("64990.001")) ||
		!first.Close.Equal(testkit.D("65001.2")) || !first.Volume.Equal(testkit.D("12.345")) {
		t.Errorf("first candle %+v", first)
	}
	if cs[2].Timestamp-cs[1].Timestamp != 3600_000 || !cs[2].Open.Equal(testkit.D("65002.1")) {
		t.Errorf("last candle %+v", cs[2])
	}
	if got := spot.reqs(); len(got) != 1 || !sameQuery(got[0], "/api/v3/klines", "symbol=BTCUSDT&interval=1h&limit=3") {
		t.Errorf("spot requests %v", got)
	}

	fc := mustCandles(t, b, exchange.Futures, "BTC/USDT", "1d", 2)
	if len(fc) != 2 || !fc[1].Close.Equal(testkit.D("65002.2")) {
		t.Errorf("futures candles %+v", fc)
	}
	if got := fut.reqs(); len(got) != 1 || !sameQuery(got[0], "/fapi/v1/klines", "symbol=BTCUSDT&interval=1d&limit=2") {
		t.Errorf("futures requests %v", got)
	}
}

func sameQuery(got, path, query string) bool {
	p, q, _ := strings.Cut(got, "?")
	gq, _ := url.ParseQuery(q)
	wq, _ := url.ParseQuery(query)
	return p == path && gq.Encode() == wq.Encode()
}

func TestBinanceCandlesLimitsAndFutures(t *testing.T) {
	b, _, fut := newBinanceFakes(t)
	for _, tc := range []struct {
		limit int
		want  string
	}{{0, "500"}, {-3, "500"}, {1, "1"}, {1000, "1000"}, {5000, "1000"}} {
		mustCandles(t, b, exchange.Futures, "BTC/USDT", "15m", tc.limit)
		got := fut.reqs()
		if last := got[len(got)-1]; !sameQuery(last, "/fapi/v1/klines", "symbol=BTCUSDT&interval=15m&limit="+tc.want) {
			t.Errorf("limit %d: request %s", tc.limit, last)
		}
	}
}

func TestBinanceErrors(t *testing.T) {
	b, spot, _ := newBinanceFakes(t)

	// Unknown symbol, from Binance's -1121.
	_, err := b.Price(ctx, exchange.Spot, "FOO/USDT")
	if !errors.Is(err, ErrUnknownSymbol) || errs.CodeOf(err) != errs.InvalidSymbol {
		t.Errorf("unknown symbol: %v", err)
	}
	_, err = b.Candles(ctx, exchange.Futures, "FOO/USDT", "1m", 10)
	if !errors.Is(err, ErrUnknownSymbol) || errs.CodeOf(err) != errs.InvalidSymbol {
		t.Errorf("candles unknown symbol: %v", err)
	}

	// Checked locally, without a request.
	n := len(spot.reqs())
	if _, err := b.Price(ctx, exchange.Spot, "BTC/US DT"); errs.CodeOf(err) != errs.InvalidSymbol {
		t.Errorf("malformed symbol: %v", err)
	}
	if _, err := b.Candles(ctx, exchange.Spot, "BTC/USDT", "2h", 10); !errors.Is(err, ErrBadTimeframe) {
		t.Errorf("bad timeframe: %v", err)
	}
	if _, err := b.Price(ctx, "options", "BTC/USDT"); !errors.Is(err, ErrBadKind) {
		t.Errorf("bad kind: %v", err)
	}
	if len(spot.reqs()) != n {
		t.Error("invalid input reached Binance")
	}

	for _, tc := range []struct {
		name       string
		status     int
		header     string
		body       string
		code       errs.Code
		retryAfter time.Duration
	}{
		{"429", 429, "7", `{"code":-1003,"msg":"Too many requests; current limit is 6000 request weight per 1 MINUTE."}`, errs.RateLimited, 7 * time.Second},
		{"418 ban", 418, "120", `{"code":-1003,"msg":"Way too many requests; IP banned until 1767225720000."}`, errs.RateLimited, 120 * time.Second},
		{"429 without Retry-After", 429, "", ``, errs.RateLimited, time.Minute},
		{"500", 500, "", `<html>oops</html>`, errs.ExchangeError, 0},
		{"503", 503, "", `{"code":-1008,"msg":"Server is currently overloaded with other requests."}`, errs.ExchangeError, 0},
		{"other 4xx", 400, "", `{"code":-1100,"msg":"Illegal characters found in parameter 'limit'."}`, errs.ExchangeError, 0},
		{"403 WAF", 403, "", ``, errs.ExchangeError, 0},
		{"malformed JSON", 200, "", `{"symbol":"BTCUSDT","price":`, errs.ExchangeError, 0},
		{"wrong shape", 200, "", `{"symbol":"ETHUSDT","price":"1.0"}`, errs.ExchangeError, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spot.fail = func(w http.ResponseWriter, r *http.Request) bool {
				if tc.header != "" {
					w.Header().Set("Retry-After", tc.header)
				}
				w.WriteHeader(tc.status)
				fmt.Fprint(w, tc.body)
				return true
			}
			defer func() { spot.fail = nil }()
			_, err := b.Price(ctx, exchange.Spot, "BTC/USDT")
			e, ok := errs.As(err)
			if !ok || e.Code != tc.code || e.RetryAfter != tc.retryAfter {
				t.Fatalf("err %v (%+v), want %s retry %s", err, e, tc.code, tc.retryAfter)
			}
		})
	}

	// Malformed klines.
	spot.fail = func(w http.ResponseWriter, r *http.Request) bool {
		fmt.Fprint(w, `[[1767225600000,"1.0","x","0.5","1.0","1"]]`)
		return true
	}
	if _, err := b.Candles(ctx, exchange.Spot, "BTC/USDT", "1m", 1); errs.CodeOf(err) != errs.ExchangeError {
		t.Errorf("malformed kline: %v", err)
	}
	spot.fail = nil
}

func TestBinanceTimeoutAndCancel(t *testing.T) {
	b, spot, _ := newBinanceFakes(t)
	release := make(chan struct{})
	defer close(release)
	spot.fail = func(w http.ResponseWriter, r *http.Request) bool {
		select {
		case <-r.Context().Done():
		case <-release:
		}
		return true
	}
	b.Timeout = 50 * time.Millisecond
	start := time.Now()
	_, err := b.Price(ctx, exchange.Spot, "BTC/USDT")
	if errs.CodeOf(err) != errs.ExchangeError || time.Since(start) > time.Second {
		t.Errorf("timeout: %v after %s", err, time.Since(start))
	}

	b.Timeout = 5 * time.Second
	cctx, cancel := context.WithTimeout(ctx, 30*time.Millisecond)
	defer cancel()
	if _, err := b.Candles(cctx, exchange.Spot, "BTC/USDT", "1m", 5); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("caller deadline: %v", err)
	}
}

func TestRetryAfter(t *testing.T) {
	if got := retryAfter("3"); got != 3*time.Second {
		t.Error(got)
	}
	if got := retryAfter(time.Now().Add(90 * time.Second).UTC().Format(http.TimeFormat)); got < 80*time.Second || got > 91*time.Second {
		t.Error(got)
	}
	if got := retryAfter("soon"); got != time.Minute {
		t.Error(got)
	}
}
