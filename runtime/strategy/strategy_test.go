package strategy

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/marketdata"
)

func spec(f Family, p Params) Spec {
	return Spec{Family: f, Timeframe: "1m", Symbol: "BTC/USDT", Params: p}
}

func mustNew(t testing.TB, s Spec) Strategy {
	t.Helper()
	st, err := New(s)
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// run feeds bars and returns the signal of each.
func run(st Strategy, bars []Bar) []Signal {
	out := make([]Signal, len(bars))
	for i, b := range bars {
		out[i] = st.Next(b)
	}
	return out
}

func closes(cs ...float64) []Bar {
	out := make([]Bar, len(cs))
	for i, c := range cs {
		out[i] = Bar{Open: c, High: c, Low: c, Close: c}
	}
	return out
}

func checkSignals(t *testing.T, got, want []Signal) {
	t.Helper()
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("candle %d: signal %s, want %s", i+1, got[i], want[i])
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestEMASeedAndStep(t *testing.T) {
	e := newEMA(3) // α = 2/4 = 0.5
	for i, x := range []float64{1, 2} {
		if _, ok := e.next(x); ok {
			t.Fatalf("value %d: ready before 3 values", i+1)
		}
	}
	// Seed: (1+2+3)/3 = 2.
	if v, ok := e.next(3); !ok || v != 2 {
		t.Fatalf("seed = %v %v, want 2", v, ok)
	}
	// 2 + 0.5 × (4 − 2) = 3.
	if v, _ := e.next(4); v != 3 {
		t.Fatalf("ema = %v, want 3", v)
	}
}

func TestEMACrossoverEvents(t *testing.T) {
	st := mustNew(t, spec(EMACrossover, Params{FastPeriod: 2, SlowPeriod: 3}))
	if st.Warmup() != 4 {
		t.Fatalf("warmup %d, want slow+1 = 4", st.Warmup())
	}
	// fast α = 2/3, slow α = 1/2.
	// 1-3: 10,10,10: fast seeded at 2 (10), slow at 3 (10); d = 0.
	// 4: 13: fast 10 + 2/3×3 = 12, slow 10 + 1/2×3 = 11.5, d = +0.5 from 0: up.
	// 5: 13: fast 12.667, slow 12.25: d > 0, no event.
	// 6: 7: fast 12.667 + 2/3×(7−12.667) = 8.889, slow 12.25 + 1/2×(7−12.25) = 9.625: down.
	// 7: 7: fast 7.630, slow 8.3125: still below, no event.
	got := run(st, closes(10, 10, 10, 13, 13, 7, 7))
	checkSignals(t, got, []Signal{None, None, None, ExitShort | EnterLong, None, ExitLong | EnterShort, None})
}

func TestRSIWilder(t *testing.T) {
	r := rsi{period: 2}
	// Changes +2, −1, −2, +4.
	// After 2 changes: avg gain (2+0)/2 = 1, avg loss (0+1)/2 = 0.5, RS 2, RSI 100 − 100/3.
	// Then gain (1×1 + 0)/2 = 0.5, loss (0.5×1 + 2)/2 = 1.25, RS 0.4, RSI 100 − 100/1.4.
	// Then gain (0.5 + 4)/2 = 2.25, loss 1.25/2 = 0.625, RS 3.6, RSI 100 − 100/4.6.
	want := []float64{-1, -1, 100 - 100.0/3, 100 - 100/1.4, 100 - 100/4.6}
	for i, c := range []float64{10, 12, 11, 9, 13} {
		v, ok := r.next(c)
		if want[i] < 0 {
			if ok {
				t.Fatalf("close %d: RSI ready too early", i+1)
			}
			continue
		}
		if !ok || !near(v, want[i]) {
			t.Fatalf("close %d: RSI %v, want %v", i+1, v, want[i])
		}
	}
	flat := rsi{period: 2}
	for _, c := range []float64{5, 5, 5} {
		if v, ok := flat.next(c); ok && v != 50 {
			t.Fatalf("flat RSI %v, want 50", v)
		}
	}
	up := rsi{period: 2}
	for _, c := range []float64{5, 6, 7} {
		if v, ok := up.next(c); ok && v != 100 {
			t.Fatalf("rising RSI %v, want 100", v)
		}
	}
}

func TestRSIReversionEvents(t *testing.T) {
	st := mustNew(t, spec(RSIReversion, Params{Period: 2, Oversold: 30, Overbought: 70}))
	if st.Warmup() != 4 {
		t.Fatalf("warmup %d, want period+2 = 4", st.Warmup())
	}
	// RSI (TestRSIWilder): -, -, 66.7, 28.6, 78.3: below 30 at 4, above 70 at 5.
	got := run(st, closes(10, 12, 11, 9, 13))
	checkSignals(t, got, []Signal{None, None, None, ExitShort | EnterLong, ExitLong | EnterShort})
}

func TestDonchianEvents(t *testing.T) {
	st := mustNew(t, spec(DonchianBreakout, Params{Period: 5, ExitPeriod: 2}))
	if st.Warmup() != 7 {
		t.Fatalf("warmup %d, want period+2 = 7", st.Warmup())
	}
	bars := []Bar{
		{High: 11, Low: 9, Close: 10}, {High: 11, Low: 9, Close: 10}, {High: 11, Low: 9, Close: 10},
		{High: 11, Low: 9, Close: 10}, {High: 11, Low: 9, Close: 10},
		// 6: channels of 1-5: H5 11, L5 9, H2 11, L2 9; close 10.5 beyond none.
		{High: 10.8, Low: 10, Close: 10.5},
		// 7: H5 (2-6) 11 and H2 (5-6) 11: close 11.5 crosses above both.
		{High: 11.6, Low: 10.4, Close: 11.5},
		// 8: H5 (3-7) 11.6, H2 (6-7) 11.6: close 11.7 still above, no event.
		{High: 11.8, Low: 11.2, Close: 11.7},
		// 9: L2 (7-8) 10.4: close 10.9 above it.
		{High: 11.8, Low: 10.8, Close: 10.9},
		// 10: L2 (8-9) min(11.2, 10.8) = 10.8: close 10.3 crosses below; L5 (5-9) 9 not.
		{High: 10.9, Low: 10.2, Close: 10.3},
	}
	got := run(st, bars)
	checkSignals(t, got, []Signal{None, None, None, None, None, None, EnterLong | ExitShort, None, None, ExitLong})
}

func TestExtremeWindow(t *testing.T) {
	hi, lo := newExtreme(3, true), newExtreme(3, false)
	vals := []float64{5, 1, 4, 2, 8, 3, 3, 0, 9}
	for i, v := range vals {
		hi.push(v)
		lo.push(v)
		w := vals[max(0, i-2) : i+1]
		wantHi, wantLo := w[0], w[0]
		for _, x := range w {
			wantHi, wantLo = max(wantHi, x), min(wantLo, x)
		}
		gh, full := hi.value()
		gl, _ := lo.value()
		if gh != wantHi || gl != wantLo || full != (i >= 2) {
			t.Fatalf("after %d: max %v min %v full %v, want %v %v %v", i+1, gh, gl, full, wantHi, wantLo, i >= 2)
		}
	}
}

func TestBollingerEvents(t *testing.T) {
	st := mustNew(t, spec(BollingerReversion, Params{Period: 5, StdDev: 1}))
	if st.Warmup() != 6 {
		t.Fatalf("warmup %d, want period+1 = 6", st.Warmup())
	}
	// 5: five 10s: middle 10, σ 0; close 10 beyond nothing.
	// 6: 10,10,10,10,8: middle 9.6, σ² = (4×0.4² + 1.6²)/5 = 0.64, σ 0.8, lower 8.8: close 8
	//    crosses below the lower band and the middle.
	// 7: 10,10,10,8,10: middle 9.6, σ 0.8: close 10 crosses above the middle (upper 10.4 not).
	// 8: 10,10,8,10,13: middle 10.2, σ² = (3×0.04 + 4.84 + 7.84)/5 = 2.56, σ 1.6, upper 11.8:
	//    close 13 crosses above the upper band; it was above the middle already.
	got := run(st, closes(10, 10, 10, 10, 10, 8, 10, 13))
	checkSignals(t, got, []Signal{None, None, None, None, None, EnterLong | ExitShort, ExitLong, EnterShort})
}

// walk is a deterministic random walk of n bars (an LCG), for tests that need many candles.
func walk(n int) []Bar {
	out := make([]Bar, n)
	x := uint64(42)
	p := 100.0
	for i := range out {
		x = x*6364136223846793005 + 1442695040888963407
		r := float64(x>>11)/(1<<53) - 0.5
		o := p
		p *= 1 + r*0.01
		out[i] = Bar{Open: o, High: max(o, p) * 1.001, Low: min(o, p) * 0.999, Close: p, Volume: 1}
	}
	return out
}

func allSpecs() []Spec {
	var out []Spec
	for _, f := range Families() {
		out = append(out, spec(f, f.Defaults()))
	}
	return out
}

func TestNextNeverAllocates(t *testing.T) {
	bars := walk(500)
	for _, s := range allSpecs() {
		st := mustNew(t, s)
		i := 0
		allocs := testing.AllocsPerRun(1000, func() {
			st.Next(bars[i%len(bars)])
			i++
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations per Next", s.Family, allocs)
		}
	}
}

func TestNoSignalBeforeWarmupAndSignalsHappen(t *testing.T) {
	bars := walk(20000)
	for _, s := range allSpecs() {
		st := mustNew(t, s)
		counts := map[Signal]int{}
		for i, b := range bars {
			sig := st.Next(b)
			if i+1 < st.Warmup() && sig != None {
				t.Fatalf("%s: signal %s at candle %d before warmup %d", s.Family, sig, i+1, st.Warmup())
			}
			counts[sig]++
		}
		entries := 0
		for sig, n := range counts {
			if sig.Has(EnterLong) || sig.Has(EnterShort) {
				entries += n
			}
		}
		if entries < 10 {
			t.Errorf("%s: %d entries on 20000 candles: %v", s.Family, entries, counts)
		}
	}
}

// TestLookbackAgreesWithALongRun checks the live runner's way (a fresh strategy fed the
// last Lookback candles) against one strategy run over the whole series, at every candle.
func TestLookbackAgreesWithALongRun(t *testing.T) {
	bars := walk(4000)
	for _, s := range allSpecs() {
		long := run(mustNew(t, s), bars)
		n := s.Lookback()
		for i := n - 1; i < len(bars); i += 7 {
			got := run(mustNew(t, s), bars[i+1-n:i+1])
			if got[n-1] != long[i] {
				t.Fatalf("%s: candle %d: fresh strategy over %d candles says %s, the long run %s", s.Family, i, n, got[n-1], long[i])
			}
		}
	}
}

func TestLookback(t *testing.T) {
	cases := []struct {
		s    Spec
		want int
	}{
		// 27 + ceil(ln 1e-6 / ln(1 − 2/27)) = 27 + ceil(13.8155/0.0769610) = 27 + 180.
		{spec(EMACrossover, Params{FastPeriod: 12, SlowPeriod: 26}), 207},
		// 16 + ceil(13.8155 / −ln(13/14)) = 16 + ceil(13.8155/0.0741080) = 16 + 187.
		{spec(RSIReversion, Params{Period: 14, Oversold: 30, Overbought: 70}), 203},
		{spec(DonchianBreakout, Params{Period: 20, ExitPeriod: 10}), 22},
		{spec(BollingerReversion, Params{Period: 20, StdDev: 2}), 21},
		// 401 + 2765 > 999: capped.
		{spec(EMACrossover, Params{FastPeriod: 100, SlowPeriod: 400}), 999},
		{spec(EMACrossover, Params{FastPeriod: 30, SlowPeriod: 20}), 0},
	}
	for _, c := range cases {
		if got := c.s.Lookback(); got != c.want {
			t.Errorf("%s %+v: lookback %d, want %d", c.s.Family, c.s.Params, got, c.want)
		}
	}
}

func TestValidate(t *testing.T) {
	cases := []struct {
		name  string
		s     Spec
		param string // "" = valid
	}{
		{"ema ok", spec(EMACrossover, Params{FastPeriod: 2, SlowPeriod: 3}), ""},
		{"ema bounds", spec(EMACrossover, Params{FastPeriod: 100, SlowPeriod: 400}), ""},
		{"fast low", spec(EMACrossover, Params{FastPeriod: 1, SlowPeriod: 26}), "fastPeriod"},
		{"fast high", spec(EMACrossover, Params{FastPeriod: 101, SlowPeriod: 200}), "fastPeriod"},
		{"slow high", spec(EMACrossover, Params{FastPeriod: 12, SlowPeriod: 401}), "slowPeriod"},
		{"slow missing", spec(EMACrossover, Params{FastPeriod: 12}), "slowPeriod"},
		{"fast not below slow", spec(EMACrossover, Params{FastPeriod: 26, SlowPeriod: 26}), "fastPeriod"},
		{"foreign param", spec(EMACrossover, Params{FastPeriod: 12, SlowPeriod: 26, Period: 14}), "period"},
		{"rsi ok", spec(RSIReversion, Params{Period: 14, Oversold: 30, Overbought: 70}), ""},
		{"oversold low", spec(RSIReversion, Params{Period: 14, Oversold: 4.9, Overbought: 70}), "oversold"},
		{"overbought high", spec(RSIReversion, Params{Period: 14, Oversold: 30, Overbought: 95.5}), "overbought"},
		{"levels equal", spec(RSIReversion, Params{Period: 14, Oversold: 50, Overbought: 50}), "oversold"},
		{"rsi nan", spec(RSIReversion, Params{Period: 14, Oversold: math.NaN(), Overbought: 70}), "oversold"},
		{"rsi stdDev", spec(RSIReversion, Params{Period: 14, Oversold: 30, Overbought: 70, StdDev: 2}), "stdDev"},
		{"donchian ok", spec(DonchianBreakout, Params{Period: 20, ExitPeriod: 20}), ""},
		{"exit above period", spec(DonchianBreakout, Params{Period: 20, ExitPeriod: 21}), "exitPeriod"},
		{"donchian period low", spec(DonchianBreakout, Params{Period: 4, ExitPeriod: 2}), "period"},
		{"bollinger ok", spec(BollingerReversion, Params{Period: 5, StdDev: 0.5}), ""},
		{"stdDev high", spec(BollingerReversion, Params{Period: 20, StdDev: 4.1}), "stdDev"},
		{"bollinger fast", spec(BollingerReversion, Params{Period: 20, StdDev: 2, FastPeriod: 3}), "fastPeriod"},
		{"family", spec("macd", Params{}), "family"},
		{"timeframe", Spec{Family: EMACrossover, Timeframe: "2m", Symbol: "BTC/USDT", Params: EMACrossover.Defaults()}, "timeframe"},
		{"symbol compact", Spec{Family: EMACrossover, Timeframe: "1h", Symbol: "BTCUSDT", Params: EMACrossover.Defaults()}, "symbol"},
		{"symbol lower", Spec{Family: EMACrossover, Timeframe: "1h", Symbol: "btc/usdt", Params: EMACrossover.Defaults()}, "symbol"},
	}
	for _, c := range cases {
		err := c.s.Validate()
		if c.param == "" {
			if err != nil {
				t.Errorf("%s: %v", c.name, err)
			}
			continue
		}
		var e *errs.Error
		if !errors.As(err, &e) || e.Code != errs.InvalidParameter {
			t.Errorf("%s: error %v, want INVALID_PARAMETER", c.name, err)
			continue
		}
		if !strings.HasPrefix(e.Message, c.param+" ") || e.Details["parameter"] != c.param {
			t.Errorf("%s: message %q details %v, want it to name %s", c.name, e.Message, e.Details, c.param)
		}
		if _, err := New(c.s); err == nil {
			t.Errorf("%s: New accepted an invalid spec", c.name)
		}
	}
}

func TestRangeMessage(t *testing.T) {
	err := spec(BollingerReversion, Params{Period: 20, StdDev: 4.5}).Validate()
	if err == nil || !strings.Contains(err.Error(), "stdDev must be between 0.5 and 4 (got 4.5)") {
		t.Fatalf("error %v", err)
	}
}

func TestDefaultsAreValidAndInRange(t *testing.T) {
	for _, f := range Families() {
		s := spec(f, f.Defaults())
		if err := s.Validate(); err != nil {
			t.Errorf("%s defaults: %v", f, err)
		}
		if len(f.Ranges()) == 0 || !f.Valid() {
			t.Errorf("%s has no ranges", f)
		}
		empty := spec(f, Params{}).WithDefaults()
		if empty.Params != f.Defaults() {
			t.Errorf("%s: WithDefaults %+v, want %+v", f, empty.Params, f.Defaults())
		}
	}
	partial := spec(EMACrossover, Params{FastPeriod: 5}).WithDefaults()
	if partial.Params != (Params{FastPeriod: 5, SlowPeriod: 26}) {
		t.Errorf("WithDefaults kept %+v", partial.Params)
	}
	if Family("x").Valid() || Family("x").Ranges() != nil {
		t.Error("an unknown family is valid")
	}
}

func TestSignalString(t *testing.T) {
	cases := map[Signal]string{
		None:                    "none",
		ExitLong | EnterShort:   "exit_long|enter_short",
		ExitShort | EnterLong:   "exit_short|enter_long",
		EnterLong:               "enter_long",
		ExitLong | ExitShort:    "exit_long|exit_short",
		Signal(0x10) | ExitLong: "exit_long|0x10",
	}
	for s, want := range cases {
		if s.String() != want {
			t.Errorf("%08b: %q, want %q", uint8(s), s.String(), want)
		}
	}
	if !(ExitLong | EnterShort).Has(EnterShort) || EnterLong.Has(EnterShort) || EnterLong.Has(None) {
		t.Error("Has")
	}
}

func TestParamsGetSet(t *testing.T) {
	var p Params
	for i, name := range paramNames {
		p.Set(name, float64(i+2))
		if p.Get(name) != float64(i+2) {
			t.Fatalf("%s: got %v", name, p.Get(name))
		}
	}
}

func TestBarOf(t *testing.T) {
	d := decimal.RequireFromString
	b := BarOf(marketdata.Candle{Open: d("1.5"), High: d("2.25"), Low: d("1.25"), Close: d("2"), Volume: d("0.5")})
	if b != (Bar{Open: 1.5, High: 2.25, Low: 1.25, Close: 2, Volume: 0.5}) {
		t.Fatalf("bar %+v", b)
	}
}
