package marketdata_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/marketdata/marketdatafake"
)

// fundingNow is the simulated market's clock in the funding tests: 12:00:10 UTC, so the
// last settlement is 08:00 the same day.
var fundingNow = time.Date(2026, 11, 24, 12, 0, 10, 0, time.UTC)

const eightHours = 8 * time.Hour

func mustFunding(t *testing.T, h marketdata.FundingHistory, symbol string, from, to time.Time) []marketdata.FundingRate {
	t.Helper()
	rs, err := h.FundingBetween(t.Context(), symbol, from, to)
	if err != nil {
		t.Fatalf("FundingBetween(%s, %s, %s): %v", symbol, from, to, err)
	}
	return rs
}

// sameFunding checks got against want exactly: times, rates (decimal equality), oldest first
// without repeats.
func sameFunding(t *testing.T, name string, got, want []marketdata.FundingRate) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d settlements, want %d", name, len(got), len(want))
	}
	for i := range want {
		if got[i].Time != want[i].Time || !got[i].Rate.Equal(want[i].Rate) {
			t.Fatalf("%s settlement %d: %+v, want %+v", name, i, got[i], want[i])
		}
		if i > 0 && got[i].Time <= got[i-1].Time {
			t.Fatalf("%s: settlement %d at %d does not follow %d", name, i, got[i].Time, got[i-1].Time)
		}
	}
}

// The simulated market settles every 8 hours at 00:00, 08:00 and 16:00 UTC, in [from, to)
// and never after its now, at 8 decimal places within the cap.
func TestSimulatedFundingSchedule(t *testing.T) {
	clk := testkit.NewClock(fundingNow)
	sim := marketdata.NewSimulated(marketdata.SimulatedOptions{Now: clk.Now})
	from := time.Date(2026, 11, 1, 5, 0, 0, 0, time.UTC)
	got := mustFunding(t, sim, "BTC/USDT", from, fundingNow.Add(24*time.Hour))
	if first := time.UnixMilli(got[0].Time).UTC(); !first.Equal(time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)) {
		t.Errorf("first settlement %s", first)
	}
	if last := time.UnixMilli(got[len(got)-1].Time).UTC(); !last.Equal(time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC)) {
		t.Errorf("last settlement %s, want 08:00 (now is 12:00:10)", last)
	}
	for i, r := range got {
		at := time.UnixMilli(r.Time).UTC()
		if at.Minute() != 0 || at.Second() != 0 || at.Nanosecond() != 0 || at.Hour()%8 != 0 {
			t.Fatalf("settlement %d at %s", i, at)
		}
		if i > 0 && r.Time-got[i-1].Time != eightHours.Milliseconds() {
			t.Fatalf("settlement %d: %s after the previous one", i, time.Duration(r.Time-got[i-1].Time)*time.Millisecond)
		}
		if !r.Rate.Round(8).Equal(r.Rate) || r.Rate.Abs().GreaterThan(testkit.D("0.0075")) {
			t.Fatalf("settlement %d: rate %s", i, r.Rate)
		}
	}
	if len(got) != 3*23+1 { // 1 Nov 08:00 … 24 Nov 08:00
		t.Errorf("%d settlements", len(got))
	}

	// [from, to): a settlement at from is in, one at to is out, one a nanosecond before from
	// is out.
	day := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	if rs := mustFunding(t, sim, "BTC/USDT", day, day.Add(24*time.Hour)); len(rs) != 3 || rs[0].Time != day.UnixMilli() {
		t.Errorf("one day: %+v", rs)
	}
	if rs := mustFunding(t, sim, "BTC/USDT", day.Add(time.Nanosecond), day.Add(eightHours)); len(rs) != 0 {
		t.Errorf("(00:00, 08:00): %+v", rs)
	}
	if rs := mustFunding(t, sim, "BTC/USDT", day.Add(-time.Nanosecond), day.Add(time.Nanosecond)); len(rs) != 1 {
		t.Errorf("around 00:00: %+v", rs)
	}
	// A settlement at exactly now has happened; one a millisecond later has not.
	clk.Set(time.Date(2026, 11, 24, 16, 0, 0, 0, time.UTC))
	if rs := mustFunding(t, sim, "BTC/USDT", fundingNow, fundingNow.Add(24*time.Hour)); len(rs) != 1 {
		t.Errorf("at 16:00 sharp: %+v", rs)
	}
	clk.Set(time.Date(2026, 11, 24, 15, 59, 59, 999e6, time.UTC))
	if rs := mustFunding(t, sim, "BTC/USDT", fundingNow, fundingNow.Add(24*time.Hour)); len(rs) != 0 {
		t.Errorf("a millisecond before 16:00: %+v", rs)
	}
}

// The rates are a pure function of the options, symbol and time: the same on every call, on
// another instance with another clock, and on every machine (the golden values).
func TestSimulatedFundingDeterministic(t *testing.T) {
	sim := marketdata.NewSimulated(marketdata.SimulatedOptions{Now: testkit.NewClock(fundingNow).Now})
	later := marketdata.NewSimulated(marketdata.SimulatedOptions{Now: testkit.NewClock(fundingNow.AddDate(1, 0, 0)).Now})
	from, to := fundingNow.AddDate(0, -3, 0), fundingNow
	want := mustFunding(t, sim, "ETH/USDT", from, to)
	sameFunding(t, "again", mustFunding(t, sim, "ETH/USDT", from, to), want)
	sameFunding(t, "another replica", mustFunding(t, later, "ETHUSDT", from, to), want)
	// A sub-period is the same settlements.
	sameFunding(t, "sub-period", mustFunding(t, later, "ETH/USDT", from.AddDate(0, 1, 0), to), want[len(want)-len(mustFunding(t, sim, "ETH/USDT", from.AddDate(0, 1, 0), to)):])

	day := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	golden := []marketdata.FundingRate{
		{Time: day.UnixMilli(), Rate: testkit.D("0.00009869")},
		{Time: day.Add(eightHours).UnixMilli(), Rate: testkit.D("0.00001971")},
		{Time: day.Add(2 * eightHours).UnixMilli(), Rate: testkit.D("0.00006054")},
	}
	sameFunding(t, "golden", mustFunding(t, sim, "BTC/USDT", day, day.Add(24*time.Hour)), golden)

	// Another symbol or seed is another series.
	eth := mustFunding(t, sim, "ETH/USDT", day, day.Add(24*time.Hour))
	seeded := marketdata.NewSimulated(marketdata.SimulatedOptions{Seed: 7, Now: testkit.NewClock(fundingNow).Now})
	btc7 := mustFunding(t, seeded, "BTC/USDT", day, day.Add(24*time.Hour))
	if eth[0].Rate.Equal(golden[0].Rate) && eth[1].Rate.Equal(golden[1].Rate) || btc7[0].Rate.Equal(golden[0].Rate) && btc7[1].Rate.Equal(golden[1].Rate) {
		t.Errorf("ETH %v, seed 7 %v: the same as BTC's", eth, btc7)
	}
}

// The rate is 0.0001 plus 0.01 × the interval's log return (the simulated price at the
// settlement over the price 8 hours before), clamped to ±0.0075.
func TestSimulatedFundingModel(t *testing.T) {
	sim := marketdata.NewSimulated(marketdata.SimulatedOptions{Now: testkit.NewClock(fundingNow).Now})
	from := fundingNow.AddDate(-1, 0, 0)
	rs := mustFunding(t, sim, "BTC/USDT", from, fundingNow)
	sum := 0.0
	for i, r := range rs {
		at := time.UnixMilli(r.Time)
		p1, _ := sim.PriceAt(exchange.Futures, "BTC/USDT", at)
		p0, _ := sim.PriceAt(exchange.Futures, "BTC/USDT", at.Add(-eightHours))
		want := 0.0001 + 0.01*math.Log(p1.InexactFloat64()/p0.InexactFloat64())
		// Prices are rounded to the 0.01 tick (≈1.5e-7 of 65,000 in log), the rate to 1e-8.
		if got := r.Rate.InexactFloat64(); math.Abs(got-want) > 1.2e-8 {
			t.Fatalf("settlement %d (%s): rate %s, want %.10f from %s → %s", i, at.UTC(), r.Rate, want, p0, p1)
		}
		sum += r.Rate.InexactFloat64()
	}
	// Plausible: around 0.01 % on average (the path is banded, so a year's drift is small).
	if mean := sum / float64(len(rs)); len(rs) != 1095 || math.Abs(mean-0.0001) > 0.00002 {
		t.Errorf("%d settlements, mean rate %g", len(rs), mean)
	}

	// A wild market (20 % daily volatility, unbanded) hits the cap both ways.
	wild := marketdata.NewSimulated(marketdata.SimulatedOptions{Volatility: 20, MaxDrift: -1, Now: testkit.NewClock(fundingNow).Now})
	capped := map[string]int{}
	for _, r := range mustFunding(t, wild, "DOGE/USDT", from, fundingNow) {
		if r.Rate.Abs().GreaterThan(testkit.D("0.0075")) {
			t.Fatalf("rate %s beyond the cap", r.Rate)
		}
		capped[r.Rate.String()]++
	}
	if capped["0.0075"] == 0 || capped["-0.0075"] == 0 {
		t.Errorf("the cap was not reached both ways: %d at +0.0075, %d at -0.0075", capped["0.0075"], capped["-0.0075"])
	}
}

func TestSimulatedFundingRefusals(t *testing.T) {
	sim := marketdata.NewSimulated(marketdata.SimulatedOptions{Now: testkit.NewClock(fundingNow).Now})
	ctx := t.Context()
	if _, err := sim.FundingBetween(ctx, "NOPE/USDT", fundingNow.Add(-time.Hour), fundingNow); !errors.Is(err, marketdata.ErrUnknownSymbol) || errs.CodeOf(err) != errs.InvalidSymbol {
		t.Errorf("unknown symbol: %v", err)
	}
	for name, p := range map[string][2]time.Time{
		"empty":         {fundingNow, fundingNow},
		"reversed":      {fundingNow, fundingNow.Add(-time.Hour)},
		"too long":      {fundingNow.Add(-marketdata.MaxFundingPeriod - time.Millisecond), fundingNow},
		"before 1970":   {time.Unix(-1, 0), time.Unix(3600, 0)},
		"the zero time": {time.Time{}, fundingNow},
	} {
		if _, err := sim.FundingBetween(ctx, "BTC/USDT", p[0], p[1]); errs.CodeOf(err) != errs.InvalidParameter {
			t.Errorf("%s: %v, want INVALID_PARAMETER", name, err)
		}
	}
	if rs, err := sim.FundingBetween(ctx, "BTC/USDT", fundingNow.Add(-marketdata.MaxFundingPeriod), fundingNow); err != nil || len(rs) < 10_900 {
		t.Errorf("the longest period: %d, %v", len(rs), err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := sim.FundingBetween(cctx, "BTC/USDT", fundingNow.AddDate(-1, 0, 0), fundingNow); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// fundingVenues serves the simulated market through marketdatafake and records every
// request (path?query).
type fundingVenues struct {
	sim  *marketdata.Simulated
	fake *marketdatafake.Server
	url  string

	mu   sync.Mutex
	reqs []string
}

func newFundingVenues(t *testing.T) *fundingVenues {
	v := &fundingVenues{sim: marketdata.NewSimulated(marketdata.SimulatedOptions{Now: testkit.NewClock(fundingNow).Now})}
	v.fake = marketdatafake.New(v.sim)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v.mu.Lock()
		v.reqs = append(v.reqs, r.URL.Path+"?"+r.URL.RawQuery)
		v.mu.Unlock()
		v.fake.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	v.url = srv.URL
	return v
}

// requests returns and forgets the requests so far.
func (v *fundingVenues) requests() []string {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := v.reqs
	v.reqs = nil
	return out
}

func (v *fundingVenues) venues() map[string]marketdata.FundingHistory {
	return map[string]marketdata.FundingHistory{
		"binance": marketdata.NewBinancePublic(v.url+"/nowhere", v.url, nil), // futures host only
		"bybit":   marketdata.NewBybitPublic(v.url+"/nowhere", v.url, nil),
		"okx":     marketdata.NewOKXPublic(v.url+"/nowhere", v.url, nil),
	}
}

// Each venue pages through a period longer than one request and returns exactly the
// simulated settlements of [from, to), oldest first, a repeated one once.
func TestVenuesFundingBetween(t *testing.T) {
	// About 400 days (1,198 settlements: two Binance pages, six Bybit pages); OKX keeps three
	// months, so its period is 60 days (180 settlements: two pages).
	long := [2]time.Time{fundingNow.AddDate(0, 0, -400).Add(3 * time.Hour), fundingNow.AddDate(0, 0, -1).Add(5 * time.Hour)}
	short := [2]time.Time{fundingNow.AddDate(0, 0, -60).Add(time.Hour), fundingNow.Add(-2 * time.Hour)}
	for name, tc := range map[string]struct {
		period [2]time.Time
		page   int
	}{"binance": {long, 1000}, "bybit": {long, 200}, "okx": {short, 100}} {
		t.Run(name, func(t *testing.T) {
			v := newFundingVenues(t)
			want := mustFunding(t, v.sim, "ETH/USDT", tc.period[0], tc.period[1])
			dup := time.UnixMilli(want[len(want)/2].Time)
			v.fake.Duplicate(dup)
			got := mustFunding(t, v.venues()[name], "ETH/USDT", tc.period[0], tc.period[1])
			sameFunding(t, name, got, want)
			// One settlement is answered twice: len(want)+1 rows, full pages then a short one.
			if reqs := v.requests(); len(reqs) != (len(want)+1)/tc.page+1 {
				t.Errorf("%d requests for %d settlements: %v", len(reqs), len(want), reqs)
			}
		})
	}
}

// The requests are exactly what each venue documents: Binance's startTime and endTime
// (inclusive, ms), Bybit's category linear with startTime always beside endTime, OKX's swap
// instId and after cursor; each at the venue's largest limit, and later pages move on from
// the previous page's settlements.
func TestVenuesFundingRequests(t *testing.T) {
	v := newFundingVenues(t)
	from := time.Date(2026, 9, 1, 0, 0, 0, 0, time.UTC)
	to := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC) // 80 days, 240 settlements
	f, e := strconv.FormatInt(from.UnixMilli(), 10), to.UnixMilli()
	venues := v.venues()
	ms := func(t time.Time) string { return strconv.FormatInt(t.UnixMilli(), 10) }

	mustFunding(t, venues["binance"], "eth/usdt", from, to)
	want := []string{"/fapi/v1/fundingRate?endTime=" + strconv.FormatInt(e-1, 10) + "&limit=1000&startTime=" + f + "&symbol=ETHUSDT"}
	if got := v.requests(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("binance: %v, want %v", got, want)
	}

	mustFunding(t, venues["bybit"], "ETH/USDT", from, to)
	// The first page's oldest settlement is 200 settlements before the end: 13 Sep 16:00.
	oldest := to.Add(-200 * eightHours)
	want = []string{
		"/v5/market/funding/history?category=linear&endTime=" + strconv.FormatInt(e-1, 10) + "&limit=200&startTime=" + f + "&symbol=ETHUSDT",
		"/v5/market/funding/history?category=linear&endTime=" + strconv.FormatInt(oldest.UnixMilli()-1, 10) + "&limit=200&startTime=" + f + "&symbol=ETHUSDT",
	}
	if got := v.requests(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("bybit: %v, want %v", got, want)
	}

	mustFunding(t, venues["okx"], "ETH-USDT", from, to)
	oldest = to.Add(-100 * eightHours)
	want = []string{
		"/api/v5/public/funding-rate-history?after=" + ms(to) + "&instId=ETH-USDT-SWAP&limit=100",
		"/api/v5/public/funding-rate-history?after=" + ms(oldest) + "&instId=ETH-USDT-SWAP&limit=100",
		"/api/v5/public/funding-rate-history?after=" + ms(oldest.Add(-100*eightHours)) + "&instId=ETH-USDT-SWAP&limit=100",
	}
	if got := v.requests(); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("okx: %v, want %v", got, want)
	}
}

// An unknown symbol is INVALID_SYMBOL wrapping ErrUnknownSymbol, as for candles, whether the
// venue refuses it or the symbol cannot be spelt for the venue; a bad period is refused
// before any request.
func TestVenuesFundingRefusals(t *testing.T) {
	v := newFundingVenues(t)
	from, to := fundingNow.AddDate(0, 0, -3), fundingNow
	for name, h := range v.venues() {
		_, err := h.FundingBetween(t.Context(), "NOPE/USDT", from, to)
		if !errors.Is(err, marketdata.ErrUnknownSymbol) || errs.CodeOf(err) != errs.InvalidSymbol {
			t.Errorf("%s: unknown symbol: %v", name, err)
		}
		_, cerr := h.(marketdata.Provider).Candles(t.Context(), exchange.Futures, "NOPE/USDT", "1h", 5)
		if errs.CodeOf(cerr) != errs.CodeOf(err) {
			t.Errorf("%s: candles' unknown symbol is %v, funding's %v", name, cerr, err)
		}
		v.requests()
		if _, err := h.FundingBetween(t.Context(), "BTC/US DT", from, to); errs.CodeOf(err) != errs.InvalidSymbol {
			t.Errorf("%s: malformed symbol: %v", name, err)
		}
		if _, err := h.FundingBetween(t.Context(), "BTC/USDT", to, from); errs.CodeOf(err) != errs.InvalidParameter {
			t.Errorf("%s: reversed period: %v", name, err)
		}
		if _, err := h.FundingBetween(t.Context(), "BTC/USDT", to.Add(-marketdata.MaxFundingPeriod-time.Hour), to); errs.CodeOf(err) != errs.InvalidParameter {
			t.Errorf("%s: too long a period: %v", name, err)
		}
		if reqs := v.requests(); len(reqs) != 0 {
			t.Errorf("%s: refused input reached the venue: %v", name, reqs)
		}
	}
	v.fake.SetDown(true)
	for name, h := range v.venues() {
		if _, err := h.FundingBetween(t.Context(), "BTC/USDT", from, to); errs.CodeOf(err) != errs.ExchangeError {
			t.Errorf("%s: venue down: %v", name, err)
		}
	}
}

// fakeGet asks the fake directly and decodes its JSON answer.
func fakeGet(t *testing.T, base, pathQuery string) (int, map[string]any, []any) {
	t.Helper()
	resp, err := http.Get(base + pathQuery)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var obj map[string]any
	var arr []any
	if json.Unmarshal(body, &obj) != nil {
		if err := json.Unmarshal(body, &arr); err != nil {
			t.Fatalf("%s: %q", pathQuery, body)
		}
	}
	return resp.StatusCode, obj, arr
}

// The fake refuses what each venue documents it refuses, in the venue's error shape, and
// answers the documented defaults.
func TestFakeFundingRules(t *testing.T) {
	v := newFundingVenues(t)
	start := strconv.FormatInt(fundingNow.AddDate(0, 0, -30).UnixMilli(), 10)
	end := strconv.FormatInt(fundingNow.UnixMilli(), 10)

	binance := "/fapi/v1/fundingRate?"
	for q, code := range map[string]float64{
		"symbol=BTCUSDT&limit=1001":        -1130, // "Default 100; max 1000"
		"symbol=BTCUSDT&limit=0":           -1130,
		"symbol=BTCUSDT&startTime=1.7e12":  -1100, // LONG, ms
		"symbol=BTCUSDT&endTime=yesterday": -1100,
		"symbol=NOPEUSDT":                  -1121, // Invalid symbol.
		"limit=10":                         -1102, // the every-symbol answer is not modelled
	} {
		status, obj, _ := fakeGet(t, v.url, binance+q)
		if status != http.StatusBadRequest || obj["code"] != code {
			t.Errorf("binance %s: %d %v, want 400 code %v", q, status, obj, code)
		}
	}
	// Neither time: the most recent limit (default 100), ascending, fundingTime a number.
	_, _, rows := fakeGet(t, v.url, binance+"symbol=BTCUSDT")
	if len(rows) != 100 {
		t.Fatalf("binance default: %d rows", len(rows))
	}
	last := rows[len(rows)-1].(map[string]any)
	rate, _ := last["fundingRate"].(string)
	_, decimals, _ := strings.Cut(rate, ".")
	if ft, ok := last["fundingTime"].(float64); !ok || int64(ft) != time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC).UnixMilli() || len(decimals) != 8 {
		t.Errorf("binance newest row %v", last) // like "0.00010000": 8 decimals
	}
	// Both times: startTime + limit, ascending.
	_, _, rows = fakeGet(t, v.url, binance+"symbol=BTCUSDT&limit=5&startTime="+start+"&endTime="+end)
	if len(rows) != 5 || int64(rows[0].(map[string]any)["fundingTime"].(float64)) != fundingNow.AddDate(0, 0, -30).Truncate(eightHours).Add(eightHours).UnixMilli() {
		t.Errorf("binance startTime + limit: %v", rows)
	}

	bybit := "/v5/market/funding/history?"
	for _, q := range []string{
		"category=linear&symbol=BTCUSDT&startTime=" + start, // "Passing only startTime returns an error."
		"symbol=BTCUSDT",                           // category: required
		"category=spot&symbol=BTCUSDT",             // "linear,inverse"
		"category=linear",                          // symbol: required
		"category=linear&symbol=btcusdt",           // "uppercase only"
		"category=linear&symbol=BTCUSDT&limit=201", // "[1, 200]"
		"category=linear&symbol=BTCUSDT&limit=0",
		"category=linear&symbol=BTCUSDT&endTime=2026-11-24", // ms
		"category=linear&symbol=NOPEUSDT",
	} {
		status, obj, _ := fakeGet(t, v.url, bybit+q)
		if status != http.StatusOK || obj["retCode"] != float64(10001) {
			t.Errorf("bybit %s: %d %v, want retCode 10001", q, status, obj)
		}
	}
	for q, want := range map[string]int{
		"category=linear&symbol=BTCUSDT":                                        200, // "200 records up till the current time"
		"category=linear&symbol=BTCUSDT&endTime=" + end:                         200, // "200 records up till endTime"
		"category=linear&symbol=BTCUSDT&limit=200&endTime=" + end:               200,
		"category=linear&symbol=BTCUSDT&startTime=" + start + "&endTime=" + end: 90,
	} {
		_, obj, _ := fakeGet(t, v.url, bybit+q)
		list, _ := obj["result"].(map[string]any)["list"].([]any)
		if obj["retCode"] != float64(0) || len(list) != want {
			t.Errorf("bybit %s: %d rows, want %d (%v)", q, len(list), want, obj["retMsg"])
			continue
		}
		first, second := list[0].(map[string]any), list[1].(map[string]any)
		if first["fundingRateTimestamp"].(string) <= second["fundingRateTimestamp"].(string) {
			t.Errorf("bybit %s: not newest first: %v, %v", q, first, second)
		}
	}

	okx := "/api/v5/public/funding-rate-history?"
	for q, code := range map[string]string{
		"instId=BTC-USDT-SWAP&limit=101":   "51000", // "The maximum is 100"
		"instId=BTC-USDT-SWAP&limit=0":     "51000",
		"instId=BTC-USDT-SWAP&after=later": "51000",
		"instId=BTC-USDT":                  "51001", // "only applicable to SWAP"
		"limit=5":                          "51001", // instId: required
		"instId=NOPE-USDT-SWAP":            "51001",
	} {
		_, obj, _ := fakeGet(t, v.url, okx+q)
		if obj["code"] != code {
			t.Errorf("okx %s: %v, want code %s", q, obj, code)
		}
	}
	// The default limit is 100, newest first, strings; three months back and no further.
	_, obj, _ := fakeGet(t, v.url, okx+"instId=BTC-USDT-SWAP")
	data, _ := obj["data"].([]any)
	if len(data) != 100 || data[0].(map[string]any)["fundingTime"] != strconv.FormatInt(time.Date(2026, 11, 24, 8, 0, 0, 0, time.UTC).UnixMilli(), 10) {
		t.Errorf("okx default: %d rows, first %v", len(data), data[0])
	}
	old := strconv.FormatInt(fundingNow.AddDate(0, 0, -91).UnixMilli(), 10)
	if _, obj, _ := fakeGet(t, v.url, okx+"instId=BTC-USDT-SWAP&after="+old); obj["code"] != "0" || len(obj["data"].([]any)) != 0 {
		t.Errorf("okx beyond three months: %v", obj)
	}
}

// Rates are the venues' decimal strings parsed exactly; Bybit's and OKX's newest-first
// answers are turned round; OKX's rate is realizedRate (the one applied), fundingRate when
// it is empty; a malformed row is EXCHANGE_ERROR.
func TestVenuesFundingParsing(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := func(i int) int64 { return t0.Add(time.Duration(i) * eightHours).UnixMilli() }
	from, to := t0, t0.Add(24*time.Hour)
	for _, tc := range []struct {
		name  string
		body  string
		venue func(string) marketdata.FundingHistory
		want  []string // rates, oldest first
		code  errs.Code
	}{
		{"binance", fmt.Sprintf(`[{"symbol":"BTCUSDT","fundingRate":"0.00010000","fundingTime":%d,"markPrice":"34287.54619963"},`+
			`{"symbol":"BTCUSDT","fundingRate":"-0.03750000","fundingTime":%d,"markPrice":""}]`, ms(0), ms(1)),
			binanceAt, []string{"0.0001", "-0.0375"}, ""},
		{"binance time as a string", fmt.Sprintf(`[{"symbol":"BTCUSDT","fundingRate":"0.0001","fundingTime":"%d"}]`, ms(0)),
			binanceAt, nil, errs.ExchangeError},
		{"binance other symbol", fmt.Sprintf(`[{"symbol":"ETHUSDT","fundingRate":"0.0001","fundingTime":%d}]`, ms(0)),
			binanceAt, nil, errs.ExchangeError},
		{"bybit", fmt.Sprintf(`{"retCode":0,"retMsg":"OK","result":{"category":"linear","list":[`+
			`{"symbol":"BTCUSDT","fundingRate":"-0.000125","fundingRateTimestamp":"%d"},`+
			`{"symbol":"BTCUSDT","fundingRate":"0.0001","fundingRateTimestamp":"%d"}]},"retExtInfo":{},"time":1}`, ms(1), ms(0)),
			bybitAt, []string{"0.0001", "-0.000125"}, ""},
		{"bybit bad rate", fmt.Sprintf(`{"retCode":0,"retMsg":"OK","result":{"list":[{"symbol":"BTCUSDT","fundingRate":"0,0001","fundingRateTimestamp":"%d"}]}}`, ms(0)),
			bybitAt, nil, errs.ExchangeError},
		{"okx", fmt.Sprintf(`{"code":"0","msg":"","data":[`+
			`{"instType":"SWAP","instId":"BTC-USDT-SWAP","fundingRate":"0.0000746604960499","realizedRate":"0.0000746605","fundingTime":"%d"},`+
			`{"instType":"SWAP","instId":"BTC-USDT-SWAP","fundingRate":"0.00010000","realizedRate":"","fundingTime":"%d"}]}`, ms(1), ms(0)),
			okxAt, []string{"0.0001", "0.0000746605"}, ""},
		{"okx other instrument", fmt.Sprintf(`{"code":"0","msg":"","data":[{"instId":"BTC-USD-SWAP","fundingRate":"0.0001","realizedRate":"0.0001","fundingTime":"%d"}]}`, ms(0)),
			okxAt, nil, errs.ExchangeError},
		{"okx time in seconds as a float", `{"code":"0","msg":"","data":[{"instId":"BTC-USDT-SWAP","fundingRate":"0.0001","realizedRate":"0.0001","fundingTime":"1767225600.0"}]}`,
			okxAt, nil, errs.ExchangeError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.WriteString(w, tc.body)
			}))
			t.Cleanup(srv.Close)
			got, err := tc.venue(srv.URL).FundingBetween(t.Context(), "BTC/USDT", from, to)
			if tc.code != "" {
				if errs.CodeOf(err) != tc.code {
					t.Fatalf("error %v, want %s", err, tc.code)
				}
				return
			}
			if err != nil || len(got) != len(tc.want) {
				t.Fatalf("%+v, %v", got, err)
			}
			for i, w := range tc.want {
				if got[i].Time != ms(i) || !got[i].Rate.Equal(testkit.D(w)) || got[i].Rate.String() != w {
					t.Errorf("settlement %d: %+v, want %s at %d", i, got[i], w, ms(i))
				}
			}
		})
	}
}

func binanceAt(u string) marketdata.FundingHistory { return marketdata.NewBinancePublic("", u, nil) }
func bybitAt(u string) marketdata.FundingHistory   { return marketdata.NewBybitPublic(u, "", nil) }
func okxAt(u string) marketdata.FundingHistory     { return marketdata.NewOKXPublic(u, "", nil) }

// The venues' refusals map as candles' do: rate limits with a delay, an unknown symbol,
// anything else an exchange error.
func TestVenuesFundingErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		venue  func(string) marketdata.FundingHistory
		status int
		header string
		body   string
		code   errs.Code
		retry  time.Duration
	}{
		{"binance 429", binanceAt, 429, "7", `{"code":-1003,"msg":"Too many requests."}`, errs.RateLimited, 7 * time.Second},
		{"binance 418", binanceAt, 418, "120", `{"code":-1003,"msg":"Way too many requests; IP banned."}`, errs.RateLimited, 120 * time.Second},
		{"binance invalid symbol", binanceAt, 400, "", `{"code":-1121,"msg":"Invalid symbol."}`, errs.InvalidSymbol, 0},
		{"binance other", binanceAt, 400, "", `{"code":-1130,"msg":"Data sent for parameter 'limit' is not valid."}`, errs.ExchangeError, 0},
		{"bybit too many visits", bybitAt, 200, "", `{"retCode":10006,"retMsg":"Too many visits!","result":{}}`, errs.RateLimited, time.Second},
		{"bybit IP ban", bybitAt, 403, "", `access too frequent`, errs.RateLimited, 10 * time.Minute},
		{"bybit unknown symbol", bybitAt, 200, "", `{"retCode":10001,"retMsg":"Not supported symbols","result":{}}`, errs.InvalidSymbol, 0},
		{"bybit startTime alone", bybitAt, 200, "", `{"retCode":10001,"retMsg":"params error: startTime needs endTime","result":{}}`, errs.ExchangeError, 0},
		{"okx rate limit", okxAt, 200, "", `{"code":"50011","msg":"Rate limit reached.","data":[]}`, errs.RateLimited, 2 * time.Second},
		{"okx unknown instrument", okxAt, 200, "", `{"code":"51001","msg":"Instrument ID or Spread ID doesn't exist.","data":[]}`, errs.InvalidSymbol, 0},
		{"okx 5xx", okxAt, 502, "", `bad gateway`, errs.ExchangeError, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.header != "" {
					w.Header().Set("Retry-After", tc.header)
				}
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			t.Cleanup(srv.Close)
			_, err := tc.venue(srv.URL).FundingBetween(t.Context(), "BTC/USDT", fundingNow.AddDate(0, 0, -3), fundingNow)
			e, ok := errs.As(err)
			if !ok || e.Code != tc.code || e.RetryAfter != tc.retry {
				t.Fatalf("error %v (%+v), want %s retry %s", err, e, tc.code, tc.retry)
			}
			if tc.code == errs.InvalidSymbol && !errors.Is(err, marketdata.ErrUnknownSymbol) {
				t.Errorf("%v does not wrap ErrUnknownSymbol", err)
			}
		})
	}
}

// A venue whose pages do not advance (the same full page again and again) is an exchange
// error within the page bound, not an endless loop.
func TestVenuesFundingPagesBounded(t *testing.T) {
	from, to := fundingNow.AddDate(0, 0, -30), fundingNow
	ts := from.Add(time.Hour).UnixMilli()
	page := func(n int, row string) string {
		rows := make([]byte, 0, n*len(row))
		for i := range n {
			if i > 0 {
				rows = append(rows, ',')
			}
			rows = append(rows, row...)
		}
		return string(rows)
	}
	hourly := int(marketdata.MaxFundingPeriod / time.Hour)
	for _, tc := range []struct {
		name     string
		venue    func(string) marketdata.FundingHistory
		body     string
		maxCalls int64
	}{
		{"binance", binanceAt, "[" + page(1000, fmt.Sprintf(`{"symbol":"BTCUSDT","fundingRate":"0.0001","fundingTime":%d}`, ts)) + "]", int64(hourly/1000 + 2)},
		{"bybit", bybitAt, `{"retCode":0,"retMsg":"OK","result":{"list":[` + page(200, fmt.Sprintf(`{"symbol":"BTCUSDT","fundingRate":"0.0001","fundingRateTimestamp":"%d"}`, ts)) + `]}}`, int64(hourly/200 + 2)},
		{"okx", okxAt, `{"code":"0","msg":"","data":[` + page(100, fmt.Sprintf(`{"instId":"BTC-USDT-SWAP","fundingRate":"0.0001","realizedRate":"0.0001","fundingTime":"%d"}`, ts)) + `]}`, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var calls atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				_, _ = io.WriteString(w, tc.body)
			}))
			t.Cleanup(srv.Close)
			_, err := tc.venue(srv.URL).FundingBetween(t.Context(), "BTC/USDT", from, to)
			if errs.CodeOf(err) != errs.ExchangeError || calls.Load() != tc.maxCalls {
				t.Fatalf("%v after %d requests, want EXCHANGE_ERROR after %d", err, calls.Load(), tc.maxCalls)
			}
		})
	}
}

// Every history HistoryFromFlag builds is a funding history too.
func TestHistoryFromFlagFunding(t *testing.T) {
	for _, flag := range []string{"", "simulated", "binance", "bybit", "okx"} {
		h, err := marketdata.HistoryFromFlag(flag)
		if _, ok := h.(marketdata.FundingHistory); err != nil || !ok {
			t.Errorf("HistoryFromFlag(%q) = %T, %v: not a FundingHistory", flag, h, err)
		}
	}
}

// OKX keeps about three months of funding: a period reaching further back would come back
// without its oldest settlements, so it is refused in words rather than undercharged; a
// period within the three months, or one too short to hold a settlement, is answered.
func TestOKXFundingBeyondItsHistoryIsRefused(t *testing.T) {
	v := newFundingVenues(t)
	okx := v.venues()["okx"]
	_, err := okx.FundingBetween(t.Context(), "ETH/USDT", fundingNow.AddDate(0, 0, -100), fundingNow.AddDate(0, 0, -80))
	if e, ok := errs.As(err); !ok || e.Code != errs.ExchangeError || !strings.Contains(e.Message, "three months") {
		t.Fatalf("a period 100 days back: %v, want EXCHANGE_ERROR about OKX's three months", err)
	}
	if got := mustFunding(t, okx, "ETH/USDT", fundingNow.AddDate(0, 0, -30), fundingNow.AddDate(0, 0, -20)); len(got) != 30 {
		t.Fatalf("ten days within the three months: %d settlements, want 30", len(got))
	}
	// 01:00 to 07:00 holds no settlement (they are at 00:00, 08:00 and 16:00).
	day := fundingNow.AddDate(0, 0, -10).Truncate(24 * time.Hour)
	if got := mustFunding(t, okx, "ETH/USDT", day.Add(time.Hour), day.Add(7*time.Hour)); len(got) != 0 {
		t.Fatalf("six hours between settlements: %v", got)
	}
}
