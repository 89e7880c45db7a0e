package strategy

import (
	"errors"
	"math"
	"slices"
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

func TestMACDValuesAndEvents(t *testing.T) {
	st := mustNew(t, spec(MACDCrossover, Params{FastPeriod: 2, SlowPeriod: 3, SignalPeriod: 2}))
	if st.Warmup() != 5 {
		t.Fatalf("warmup %d, want slow+signal = 5", st.Warmup())
	}
	m := st.(*macdCross)
	// fast α = 2/3, slow α = 1/2, signal α = 2/3.
	// 1-2: 10,10: the slow EMA is not seeded yet: no MACD line.
	// 3: 10: fast 10 (seeded at 2, then 10 + 2/3×0), slow seeded at (10+10+10)/3 = 10:
	//    MACD 0, the signal line's first value.
	// 4: 10: MACD 0; signal seeded at (0+0)/2 = 0; histogram 0, the first.
	// 5: 13: fast 10 + 2/3×3 = 12, slow 10 + 1/2×3 = 11.5, MACD 1/2; signal 0 + 2/3×1/2 =
	//    1/3; histogram 1/2 − 1/3 = 1/6 from 0: up, at the warm-up candle.
	// 6: 13: fast 12 + 2/3×1 = 38/3, slow 11.5 + 1/2×1.5 = 49/4, MACD 5/12; signal 1/3 +
	//    2/3×(5/12 − 1/3) = 7/18; histogram 5/12 − 7/18 = 1/36: still above, no event.
	// 7: 13: fast 38/3 + 2/3×1/3 = 116/9, slow 49/4 + 1/2×3/4 = 101/8, MACD 19/72; signal
	//    7/18 + 2/3×(19/72 − 28/72) = 11/36; histogram 19/72 − 22/72 = −1/24: down, while
	//    the fast EMA is still above the slow one (where emaCrossover would not act).
	// 8: 13: fast 350/27, slow 205/16, MACD 65/432; signal 11/36 + 2/3×(65/432 − 132/432) =
	//    131/648; histogram 195/1296 − 262/1296 = −67/1296: still below, no event.
	want := []struct {
		macd, signal, hist float64
		sig                Signal
	}{
		{-1, -1, -1, None}, {-1, -1, -1, None}, {0, -1, -1, None}, {0, 0, 0, None},
		{1.0 / 2, 1.0 / 3, 1.0 / 6, ExitShort | EnterLong},
		{5.0 / 12, 7.0 / 18, 1.0 / 36, None},
		{19.0 / 72, 11.0 / 36, -1.0 / 24, ExitLong | EnterShort},
		{65.0 / 432, 131.0 / 648, -67.0 / 1296, None},
	}
	for i, b := range closes(10, 10, 10, 10, 13, 13, 13, 13) {
		got := st.Next(b)
		w := want[i]
		if got != w.sig {
			t.Errorf("candle %d: signal %s, want %s", i+1, got, w.sig)
		}
		if w.macd == -1 {
			continue
		}
		if d := m.fast.v - m.slow.v; !near(d, w.macd) {
			t.Errorf("candle %d: MACD %v, want %v", i+1, d, w.macd)
		}
		if w.signal == -1 {
			continue
		}
		if !near(m.signal.v, w.signal) || !near(m.prev, w.hist) {
			t.Errorf("candle %d: signal line %v histogram %v, want %v %v", i+1, m.signal.v, m.prev, w.signal, w.hist)
		}
	}
	if w := mustNew(t, spec(MACDCrossover, MACDCrossover.Defaults())).Warmup(); w != 35 {
		t.Errorf("12/26/9 warmup %d, want 35", w)
	}
}

func TestATRWilder(t *testing.T) {
	a := atr{period: 2}
	bars := []Bar{
		{High: 10, Low: 10, Close: 10}, // no previous close: no true range
		{High: 11, Low: 9, Close: 10},  // max(2, |11−10|, |9−10|) = 2
		{High: 11, Low: 9, Close: 10},  // 2; first ATR (2+2)/2 = 2
		{High: 13, Low: 11, Close: 12}, // gap up: max(2, |13−10| = 3, 1) = 3; (2×1 + 3)/2 = 2.5
		{High: 9, Low: 8, Close: 8.5},  // gap down: max(1, 3, |8−12| = 4) = 4; (2.5 + 4)/2 = 3.25
		{High: 9, Low: 8, Close: 8.5},  // max(1, 0.5, 0.5) = 1; (3.25 + 1)/2 = 2.125
	}
	want := []float64{-1, -1, 2, 2.5, 3.25, 2.125}
	for i, b := range bars {
		v, ok := a.next(b)
		if want[i] < 0 {
			if ok {
				t.Fatalf("candle %d: ATR ready too early", i+1)
			}
			continue
		}
		if !ok || !near(v, want[i]) {
			t.Fatalf("candle %d: ATR %v %v, want %v", i+1, v, ok, want[i])
		}
	}
}

func TestSupertrendBandsAndEvents(t *testing.T) {
	st := mustNew(t, spec(Supertrend, Params{Period: 2, Multiplier: 1}))
	if st.Warmup() != 4 {
		t.Fatalf("warmup %d, want period+2 = 4", st.Warmup())
	}
	s := st.(*supertrend)
	// Bands are hl2 ± 1 × ATR(2); "final" is after the ratchet rules.
	// 1: no true range yet. 2: TR 2.
	// 3: TR 2, ATR (2+2)/2 = 2; hl2 10: the first bands are the basic ones, 12 / 8. Close 10
	//    is inside: no trend yet.
	// 4: TR max(2, |13−10|, |11−10|) = 3, ATR (2 + 3)/2 = 2.5; hl2 12, basic 14.5 / 9.5.
	//    Upper: 14.5 is not below 12 and the previous close 10 was not above 12: stays 12.
	//    Lower: 9.5 > 8: 9.5. Close 12.5 > 12: the trend is up, the first determined: none.
	// 5: TR max(1, 0.5, 0.5) = 1, ATR (2.5 + 1)/2 = 1.75; hl2 12.5, basic 14.25 / 10.75.
	//    Upper: the previous close 12.5 was above 12: 14.25. Lower: 10.75 > 9.5: 10.75.
	//    Close 12.5 is above the lower band: still up.
	// 6: TR max(2.5, 0, 2.5) = 2.5, ATR (1.75 + 2.5)/2 = 2.125; hl2 11.25, basic 13.375 /
	//    9.125. Upper: 13.375 < 14.25: 13.375. Lower: 9.125 is not above 10.75 and the
	//    previous close 12.5 was not below it: stays 10.75. Close 10.2 < 10.75: down (the
	//    basic lower band 9.125 alone would not have turned it).
	// 7: TR max(1, 0.3, 0.7) = 1, ATR (2.125 + 1)/2 = 1.5625; hl2 10, basic 11.5625 /
	//    8.4375. Upper: below 13.375: 11.5625. Lower: the previous close 10.2 was below
	//    10.75: 8.4375. Close 10 is below the upper band: still down.
	// 8: TR max(2, 2, 0) = 2, ATR (1.5625 + 2)/2 = 1.78125; hl2 11, basic 12.78125 /
	//    9.21875. Upper: not below 11.5625 and the previous close 10 not above it: stays
	//    11.5625. Lower: 9.21875. Close 11.9 > 11.5625: up.
	bars := []Bar{
		{High: 10, Low: 10, Close: 10}, {High: 11, Low: 9, Close: 10}, {High: 11, Low: 9, Close: 10},
		{High: 13, Low: 11, Close: 12.5}, {High: 13, Low: 12, Close: 12.5}, {High: 12.5, Low: 10, Close: 10.2},
		{High: 10.5, Low: 9.5, Close: 10}, {High: 12, Low: 10, Close: 11.9},
	}
	want := []struct {
		atr, upper, lower float64
		trend             int8
		sig               Signal
	}{
		{-1, 0, 0, 0, None}, {-1, 0, 0, 0, None},
		{2, 12, 8, 0, None},
		{2.5, 12, 9.5, 1, None},
		{1.75, 14.25, 10.75, 1, None},
		{2.125, 13.375, 10.75, -1, ExitLong | EnterShort},
		{1.5625, 11.5625, 8.4375, -1, None},
		{1.78125, 11.5625, 9.21875, 1, ExitShort | EnterLong},
	}
	for i, b := range bars {
		got := st.Next(b)
		w := want[i]
		if got != w.sig {
			t.Errorf("candle %d: signal %s, want %s", i+1, got, w.sig)
		}
		if w.atr < 0 {
			continue
		}
		if !near(s.a.v, w.atr) || !near(s.upper, w.upper) || !near(s.lower, w.lower) || s.trend != w.trend {
			t.Errorf("candle %d: ATR %v bands %v / %v trend %d, want %v %v / %v %d", i+1, s.a.v, s.upper, s.lower, s.trend,
				w.atr, w.upper, w.lower, w.trend)
		}
	}
}

// The warm-up candle can carry a Supertrend signal: the trend is determined at the first
// bands (candle period+1) and turns at the next.
func TestSupertrendFirstSignalAtWarmup(t *testing.T) {
	st := mustNew(t, spec(Supertrend, Params{Period: 2, Multiplier: 0.5}))
	// 2: TR 0. 3: TR max(2, 2, 0) = 2, ATR (0+2)/2 = 1; hl2 11, bands 11.5 / 10.5: close 12 is
	//    above the upper band: up, determined, no event.
	// 4: TR max(2, 0, 2) = 2, ATR (1 + 2)/2 = 1.5; hl2 11, basic 11.75 / 10.25. Upper: the
	//    previous close 12 was above 11.5: 11.75. Lower: 10.25 is not above 10.5 and 12 was
	//    not below it: 10.5. Close 10 < 10.5: down, at candle 4 = Warmup.
	bars := []Bar{{High: 10, Low: 10, Close: 10}, {High: 10, Low: 10, Close: 10},
		{High: 12, Low: 10, Close: 12}, {High: 12, Low: 10, Close: 10}}
	checkSignals(t, run(st, bars), []Signal{None, None, None, ExitLong | EnterShort})
	if st.Warmup() != 4 {
		t.Fatalf("warmup %d, want 4", st.Warmup())
	}
}

// Until the close first leaves the bands there is no trend, and leaving them then
// determines one without an event, whichever side it leaves by.
func TestSupertrendFirstTrendEmitsNothing(t *testing.T) {
	for _, c := range []struct {
		last  Bar
		trend int8
	}{{Bar{High: 12, Low: 10, Close: 12}, 1}, {Bar{High: 10, Low: 8, Close: 8}, -1}} {
		st := mustNew(t, spec(Supertrend, Params{Period: 2, Multiplier: 0.5}))
		// 3: TR 1, ATR (0+1)/2 = 0.5, hl2 10, bands 10.25 / 9.75: close 10 inside, no trend.
		// 4: TR 2, ATR (0.5 + 2)/2 = 1.25. Rising candle: hl2 11, basic 11.625 / 10.375; the
		//    upper band stays 10.25 (not below it, and close 10 was not above it), the lower
		//    rises to 10.375; close 12 > 10.25. Falling candle: hl2 9, basic 9.625 / 8.375;
		//    the upper band falls to 9.625, the lower stays 9.75; close 8 < 9.75. Either is
		//    the first trend.
		got := run(st, []Bar{{High: 10, Low: 10, Close: 10}, {High: 10, Low: 10, Close: 10},
			{High: 10.5, Low: 9.5, Close: 10}, c.last})
		checkSignals(t, got, []Signal{None, None, None, None})
		if tr := st.(*supertrend).trend; tr != c.trend {
			t.Errorf("close %v: trend %d, want %d", c.last.Close, tr, c.trend)
		}
	}
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
		// 35 + 180 (slow α 2/27, as above) + ceil(13.8155 / −ln(1 − 2/10)) = 35 + 180 +
		// ceil(13.8155/0.223144) = 35 + 180 + 62.
		{spec(MACDCrossover, Params{FastPeriod: 12, SlowPeriod: 26, SignalPeriod: 9}), 277},
		// 5 + ceil(13.8155/ln 2) + ceil(13.8155/ln 3) = 5 + 20 + 13.
		{spec(MACDCrossover, Params{FastPeriod: 2, SlowPeriod: 3, SignalPeriod: 2}), 38},
		{spec(MACDCrossover, Params{FastPeriod: 100, SlowPeriod: 400, SignalPeriod: 100}), 999},
		{spec(MACDCrossover, Params{FastPeriod: 26, SlowPeriod: 12, SignalPeriod: 9}), 0},
		// Path-dependent bands and trend: the most the runner reads, whatever the parameters.
		{spec(Supertrend, Params{Period: 10, Multiplier: 3}), 999},
		{spec(Supertrend, Params{Period: 2, Multiplier: 0.5}), 999},
		{spec(Supertrend, Params{Period: 10, Multiplier: 11}), 0},
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
		{"macd ok", spec(MACDCrossover, Params{FastPeriod: 12, SlowPeriod: 26, SignalPeriod: 9}), ""},
		{"macd bounds", spec(MACDCrossover, Params{FastPeriod: 100, SlowPeriod: 400, SignalPeriod: 100}), ""},
		{"macd low bounds", spec(MACDCrossover, Params{FastPeriod: 2, SlowPeriod: 3, SignalPeriod: 2}), ""},
		{"macd fast not below slow", spec(MACDCrossover, Params{FastPeriod: 26, SlowPeriod: 26, SignalPeriod: 9}), "fastPeriod"},
		{"macd fast high", spec(MACDCrossover, Params{FastPeriod: 101, SlowPeriod: 200, SignalPeriod: 9}), "fastPeriod"},
		{"macd slow high", spec(MACDCrossover, Params{FastPeriod: 12, SlowPeriod: 401, SignalPeriod: 9}), "slowPeriod"},
		{"signal low", spec(MACDCrossover, Params{FastPeriod: 12, SlowPeriod: 26, SignalPeriod: 1}), "signalPeriod"},
		{"signal high", spec(MACDCrossover, Params{FastPeriod: 12, SlowPeriod: 26, SignalPeriod: 101}), "signalPeriod"},
		{"signal missing", spec(MACDCrossover, Params{FastPeriod: 12, SlowPeriod: 26}), "signalPeriod"},
		{"signal on ema", spec(EMACrossover, Params{FastPeriod: 12, SlowPeriod: 26, SignalPeriod: 9}), "signalPeriod"},
		{"macd period", spec(MACDCrossover, Params{FastPeriod: 12, SlowPeriod: 26, SignalPeriod: 9, Period: 14}), "period"},
		{"supertrend ok", spec(Supertrend, Params{Period: 10, Multiplier: 3}), ""},
		{"supertrend bounds", spec(Supertrend, Params{Period: 100, Multiplier: 10}), ""},
		{"supertrend low bounds", spec(Supertrend, Params{Period: 2, Multiplier: 0.5}), ""},
		{"supertrend off the grid", spec(Supertrend, Params{Period: 7, Multiplier: 2.345}), ""},
		{"supertrend period low", spec(Supertrend, Params{Period: 1, Multiplier: 3}), "period"},
		{"supertrend period high", spec(Supertrend, Params{Period: 101, Multiplier: 3}), "period"},
		{"multiplier low", spec(Supertrend, Params{Period: 10, Multiplier: 0.4}), "multiplier"},
		{"multiplier high", spec(Supertrend, Params{Period: 10, Multiplier: 10.1}), "multiplier"},
		{"multiplier missing", spec(Supertrend, Params{Period: 10}), "multiplier"},
		{"multiplier nan", spec(Supertrend, Params{Period: 10, Multiplier: math.NaN()}), "multiplier"},
		{"multiplier inf", spec(Supertrend, Params{Period: 10, Multiplier: math.Inf(1)}), "multiplier"},
		{"supertrend stdDev", spec(Supertrend, Params{Period: 10, Multiplier: 3, StdDev: 2}), "stdDev"},
		{"multiplier on bollinger", spec(BollingerReversion, Params{Period: 20, StdDev: 2, Multiplier: 3}), "multiplier"},
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
	err = spec(Supertrend, Params{Period: 10, Multiplier: 12.5}).Validate()
	if err == nil || !strings.Contains(err.Error(), "multiplier must be between 0.5 and 10 (got 12.5)") {
		t.Fatalf("error %v", err)
	}
	err = spec(MACDCrossover, Params{FastPeriod: 30, SlowPeriod: 20, SignalPeriod: 9}).Validate()
	if err == nil || !strings.Contains(err.Error(), "fastPeriod must be below slowPeriod (30 >= 20)") {
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
	partial = spec(MACDCrossover, Params{SignalPeriod: 4}).WithDefaults()
	if partial.Params != (Params{FastPeriod: 12, SlowPeriod: 26, SignalPeriod: 4}) {
		t.Errorf("WithDefaults kept %+v", partial.Params)
	}
	partial = spec(Supertrend, Params{Multiplier: 2.5}).WithDefaults()
	if partial.Params != (Params{Period: 10, Multiplier: 2.5}) {
		t.Errorf("WithDefaults kept %+v", partial.Params)
	}
	// The order is fixed (the Lab's form, the CRD's enum and the docs list them so).
	want := []Family{EMACrossover, RSIReversion, DonchianBreakout, BollingerReversion, MACDCrossover, Supertrend}
	if got := Families(); len(got) != len(want) || !slices.Equal(got, want) {
		t.Errorf("Families() = %v, want %v", got, want)
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
