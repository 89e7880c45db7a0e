package marketdata

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
)

var (
	ctx     = context.Background()
	testNow = time.Date(2026, 3, 1, 12, 34, 56, 789_000_000, time.UTC)
)

func newSim(seed int64, c *testkit.Clock) *Simulated {
	return NewSimulated(SimulatedOptions{Seed: seed, Now: c.Now})
}

func mustPrice(t testing.TB, p Provider, kind exchange.Kind, sym string) decimal.Decimal {
	t.Helper()
	v, err := p.Price(ctx, kind, sym)
	if err != nil {
		t.Fatalf("Price(%s, %s): %v", kind, sym, err)
	}
	return v
}

func mustCandles(t testing.TB, p Provider, kind exchange.Kind, sym, tf string, limit int) []Candle {
	t.Helper()
	cs, err := p.Candles(ctx, kind, sym, tf, limit)
	if err != nil {
		t.Fatalf("Candles(%s, %s, %s, %d): %v", kind, sym, tf, limit, err)
	}
	return cs
}

func sameCandles(a, b []Candle) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Timestamp != y.Timestamp || x.Time != y.Time || !x.Open.Equal(y.Open) || !x.High.Equal(y.High) ||
			!x.Low.Equal(y.Low) || !x.Close.Equal(y.Close) || !x.Volume.Equal(y.Volume) {
			return false
		}
	}
	return true
}

func TestSimulatedDefaultMarkets(t *testing.T) {
	want := map[string][2]string{ // initial price, tick
		"BTC/USDT": {"65000", "0.01"}, "ETH/USDT": {"3200", "0.01"}, "DOGE/USDT": {"0.15", "0.00001"},
		"SOL/USDT": {"150", "0.01"}, "BNB/USDT": {"600", "0.01"}, "XRP/USDT": {"0.55", "0.0001"},
	}
	c := testkit.NewClock(DefaultSimulatedStart)
	s := newSim(0, c)
	if got := s.Symbols(); len(got) != len(want) {
		t.Fatalf("symbols %v", got)
	}
	for _, kind := range []exchange.Kind{exchange.Spot, exchange.Futures} {
		ms := s.Markets(kind)
		if len(ms) != len(want) {
			t.Fatalf("%s: %d markets", kind, len(ms))
		}
		for _, m := range ms {
			w, ok := want[m.Symbol]
			if !ok || m.Kind != kind || !m.TickSize.Equal(testkit.D(w[1])) || m.Base+"/"+m.Quote != m.Symbol ||
				!m.StepSize.IsPositive() || !m.MinQty.Equal(m.StepSize) || !m.MinNotional.IsPositive() {
				t.Errorf("%s market %+v", kind, m)
			}
			// At Start every symbol is at its initial price, on both kinds.
			if p := mustPrice(t, s, kind, m.Symbol); !p.Equal(testkit.D(w[0])) {
				t.Errorf("%s %s at Start = %s, want %s", kind, m.Symbol, p, w[0])
			}
		}
	}
	// The spec's precision table: BTC 2/5, ETH 2/4, DOGE 5/0.
	for _, m := range s.Markets(exchange.Spot) {
		switch m.Symbol {
		case "BTC/USDT":
			check(t, m.TickSize.Exponent() == -2 && m.StepSize.Equal(testkit.D("0.00001")), "BTC precision %+v", m)
		case "ETH/USDT":
			check(t, m.StepSize.Equal(testkit.D("0.0001")), "ETH precision %+v", m)
		case "DOGE/USDT":
			check(t, m.StepSize.Equal(testkit.D("1")), "DOGE precision %+v", m)
		}
	}
}

func check(t *testing.T, ok bool, format string, args ...any) {
	t.Helper()
	if !ok {
		t.Errorf(format, args...)
	}
}

func TestSimulatedDeterministic(t *testing.T) {
	c1, c2 := testkit.NewClock(testNow), testkit.NewClock(testNow)
	s1, s2 := newSim(42, c1), newSim(42, c2)
	for step := 0; step < 5; step++ {
		for _, kind := range []exchange.Kind{exchange.Spot, exchange.Futures} {
			for _, sym := range s1.Symbols() {
				if a, b := mustPrice(t, s1, kind, sym), mustPrice(t, s2, kind, sym); !a.Equal(b) {
					t.Fatalf("%s %s: %s vs %s", kind, sym, a, b)
				}
				for _, tf := range Timeframes() {
					a, b := mustCandles(t, s1, kind, sym, tf, 30), mustCandles(t, s2, kind, sym, tf, 30)
					if !sameCandles(a, b) {
						t.Fatalf("%s %s %s candles differ", kind, sym, tf)
					}
				}
			}
		}
		c1.Advance(37 * time.Second)
		c2.Advance(37 * time.Second)
	}
	// Spot and futures share the path.
	if a, b := mustPrice(t, s1, exchange.Spot, "ETH/USDT"), mustPrice(t, s1, exchange.Futures, "ETH/USDT"); !a.Equal(b) {
		t.Errorf("spot %s futures %s", a, b)
	}
}

// A replica that started later, or queried other windows first (filling its candle cache),
// computes the same past candles.
func TestSimulatedReproducibleAcrossHistory(t *testing.T) {
	c1 := testkit.NewClock(testNow)
	s1 := newSim(7, c1)
	for _, tf := range Timeframes() {
		mustCandles(t, s1, exchange.Spot, "SOL/USDT", tf, 100)
	}
	c1.Advance(3*time.Hour + 17*time.Minute)
	c2 := testkit.NewClock(c1.Now())
	s2 := newSim(7, c2)
	for _, tf := range Timeframes() {
		a := mustCandles(t, s1, exchange.Spot, "SOL/USDT", tf, 300)
		b := mustCandles(t, s2, exchange.Spot, "SOL/USDT", tf, 300)
		if !sameCandles(a, b) {
			t.Errorf("%s: cached and fresh candles differ", tf)
		}
	}
	// A past candle computed while it was open equals itself once closed, apart from what
	// happened after (its close, high, low and volume can only grow outward).
	c3 := testkit.NewClock(time.Date(2026, 3, 1, 10, 0, 30, 0, time.UTC))
	s3 := newSim(7, c3)
	open := mustCandles(t, s3, exchange.Spot, "BTC/USDT", "1h", 1)[0]
	c3.Advance(2 * time.Hour)
	closed := mustCandles(t, s3, exchange.Spot, "BTC/USDT", "1h", 3)[0]
	if open.Timestamp != closed.Timestamp || !open.Open.Equal(closed.Open) || closed.High.LessThan(open.High) ||
		closed.Low.GreaterThan(open.Low) || closed.Volume.LessThan(open.Volume) {
		t.Errorf("open %+v closed %+v", open, closed)
	}
}

func TestSimulatedSeedsDiffer(t *testing.T) {
	c := testkit.NewClock(testNow)
	a, b := newSim(1, c), newSim(2, c)
	differ := 0
	for _, sym := range a.Symbols() {
		if !mustPrice(t, a, exchange.Spot, sym).Equal(mustPrice(t, b, exchange.Spot, sym)) {
			differ++
		}
	}
	if differ < len(a.Symbols())-1 {
		t.Errorf("only %d of %d symbols differ between seeds", differ, len(a.Symbols()))
	}
	if sameCandles(mustCandles(t, a, exchange.Spot, "BTC/USDT", "1m", 50), mustCandles(t, b, exchange.Spot, "BTC/USDT", "1m", 50)) {
		t.Error("candles equal across seeds")
	}
	// Symbols have independent paths.
	x := mustCandles(t, a, exchange.Spot, "SOL/USDT", "1h", 10)
	y := mustCandles(t, a, exchange.Spot, "BNB/USDT", "1h", 10)
	sx := x[9].Close.Div(x[0].Open).InexactFloat64()
	sy := y[9].Close.Div(y[0].Open).InexactFloat64()
	if sx == sy {
		t.Error("SOL and BNB move identically")
	}
}

func TestSimulatedPricesPositiveOnTickAndBanded(t *testing.T) {
	c := testkit.NewClock(testNow)
	s := newSim(3, c)
	rng := rand.New(rand.NewPCG(1, 2))
	for _, m := range s.Markets(exchange.Spot) {
		p0 := DefaultSimulatedMarkets()
		var init decimal.Decimal
		for _, x := range p0 {
			if x.Symbol == m.Symbol {
				init = x.Price
			}
		}
		lo := init.InexactFloat64()*math.Exp(-DefaultSimulatedMaxDrift) - m.TickSize.InexactFloat64()
		hi := init.InexactFloat64()*math.Exp(DefaultSimulatedMaxDrift) + m.TickSize.InexactFloat64()
		for range 2000 {
			at := DefaultSimulatedStart.Add(time.Duration(rng.Int64N(int64(20*365*24*time.Hour))) - 5*365*24*time.Hour)
			p, err := s.PriceAt(exchange.Spot, m.Symbol, at)
			if err != nil {
				t.Fatal(err)
			}
			if !p.IsPositive() || !p.Mod(m.TickSize).IsZero() {
				t.Fatalf("%s at %s: %s not positive on tick %s", m.Symbol, at, p, m.TickSize)
			}
			if f := p.InexactFloat64(); f < lo || f > hi {
				t.Fatalf("%s at %s: %s outside band [%g, %g]", m.Symbol, at, p, lo, hi)
			}
		}
	}
}

func TestSimulatedMovesInSmallSteps(t *testing.T) {
	c := testkit.NewClock(testNow)
	s := newSim(0, c)
	for _, sym := range s.Symbols() {
		prev := mustPrice(t, s, exchange.Spot, sym)
		distinct := map[string]bool{}
		for range 3600 {
			c.Advance(time.Second)
			p := mustPrice(t, s, exchange.Spot, sym)
			distinct[p.String()] = true
			if r := math.Abs(math.Log(p.Div(prev).InexactFloat64())); r > 0.002 {
				t.Fatalf("%s jumped %s -> %s in one tick", sym, prev, p)
			}
			prev = p
		}
		if len(distinct) < 20 {
			t.Errorf("%s: only %d distinct prices in an hour", sym, len(distinct))
		}
		c.Set(testNow)
	}
	// Daily volatility is about the configured 3 %: the std of 200 daily log returns.
	var sum, sum2 float64
	prev, _ := s.PriceAt(exchange.Spot, "BTC/USDT", DefaultSimulatedStart)
	for i := 1; i <= 200; i++ {
		p, _ := s.PriceAt(exchange.Spot, "BTC/USDT", DefaultSimulatedStart.Add(time.Duration(i)*24*time.Hour))
		r := math.Log(p.Div(prev).InexactFloat64())
		sum, sum2 = sum+r, sum2+r*r
		prev = p
	}
	std := math.Sqrt(sum2/200 - (sum/200)*(sum/200))
	if std < 0.015 || std > 0.05 {
		t.Errorf("daily volatility %.4f, want about 0.03", std)
	}
}

func TestSimulatedTickOption(t *testing.T) {
	c := testkit.NewClock(testNow)
	s := NewSimulated(SimulatedOptions{Tick: 100 * time.Millisecond, Now: c.Now, Start: testNow})
	seen := map[string]bool{}
	for range 10 {
		seen[mustPrice(t, s, exchange.Spot, "BTC/USDT").String()] = true
		c.Advance(100 * time.Millisecond)
	}
	if len(seen) < 5 {
		t.Errorf("100 ms ticks: %d distinct prices in a second", len(seen))
	}
	// Between two ticks the price holds.
	c.Set(testNow.Add(50 * time.Millisecond))
	if p := mustPrice(t, s, exchange.Spot, "BTC/USDT"); !p.Equal(testkit.D("65000")) {
		t.Errorf("inside tick 0: %s", p)
	}
	// Unbounded drift still yields positive prices on the tick.
	u := NewSimulated(SimulatedOptions{MaxDrift: -1, Volatility: 0.5, Now: c.Now})
	for i := range 100 {
		p, _ := u.PriceAt(exchange.Spot, "DOGE/USDT", testNow.Add(time.Duration(i)*240*time.Hour))
		if !p.IsPositive() || !p.Mod(testkit.D("0.00001")).IsZero() {
			t.Fatalf("unbounded: %s", p)
		}
	}
}

func TestSimulatedCandlesConsistent(t *testing.T) {
	c := testkit.NewClock(testNow)
	s := newSim(11, c)
	for _, m := range s.Markets(exchange.Spot) {
		for _, tf := range Timeframes() {
			dur, _ := TimeframeDuration(tf)
			tfMs := dur.Milliseconds()
			cs := mustCandles(t, s, exchange.Spot, m.Symbol, tf, 200)
			if len(cs) != 200 {
				t.Fatalf("%s %s: %d candles", m.Symbol, tf, len(cs))
			}
			for i, k := range cs {
				off := int64(0)
				if tf == "1w" {
					off = weekOffsetMs
					if wd := time.UnixMilli(k.Timestamp).UTC().Weekday(); wd != time.Monday {
						t.Fatalf("weekly candle opens on %s", wd)
					}
				}
				if (k.Timestamp-off)%tfMs != 0 || k.Time*1000 != k.Timestamp {
					t.Fatalf("%s %s #%d: timestamp %d time %d not aligned", m.Symbol, tf, i, k.Timestamp, k.Time)
				}
				if i > 0 && k.Timestamp-cs[i-1].Timestamp != tfMs {
					t.Fatalf("%s %s #%d: gap", m.Symbol, tf, i)
				}
				if !k.Low.IsPositive() || k.Low.GreaterThan(k.Open) || k.Low.GreaterThan(k.Close) ||
					k.High.LessThan(k.Open) || k.High.LessThan(k.Close) {
					t.Fatalf("%s %s #%d: OHLC %s %s %s %s", m.Symbol, tf, i, k.Open, k.High, k.Low, k.Close)
				}
				for _, p := range []decimal.Decimal{k.Open, k.High, k.Low, k.Close} {
					if !p.Mod(m.TickSize).IsZero() {
						t.Fatalf("%s %s #%d: %s off tick", m.Symbol, tf, i, p)
					}
				}
				if k.Volume.IsNegative() || !k.Volume.Mod(m.StepSize).IsZero() {
					t.Fatalf("%s %s #%d: volume %s", m.Symbol, tf, i, k.Volume)
				}
				if i < len(cs)-1 {
					if !k.Close.Equal(cs[i+1].Open) {
						t.Fatalf("%s %s #%d: close %s != next open %s", m.Symbol, tf, i, k.Close, cs[i+1].Open)
					}
					if !k.Volume.IsPositive() {
						t.Fatalf("%s %s #%d: closed candle without volume", m.Symbol, tf, i)
					}
				}
			}
			last := cs[len(cs)-1]
			if now := testNow.UnixMilli(); last.Timestamp > now || now >= last.Timestamp+tfMs {
				t.Fatalf("%s %s: last candle %d does not contain now", m.Symbol, tf, last.Timestamp)
			}
			if p := mustPrice(t, s, exchange.Spot, m.Symbol); !last.Close.Equal(p) {
				t.Fatalf("%s %s: open candle close %s, price %s", m.Symbol, tf, last.Close, p)
			}
		}
	}
}

// With 1 s ticks a 1m candle visits every tick: its OHLC are exactly the prices seen.
func TestSimulated1mCandleIsExact(t *testing.T) {
	c := testkit.NewClock(testNow)
	s := newSim(5, c)
	for _, sym := range []string{"BTC/USDT", "DOGE/USDT"} {
		cs := mustCandles(t, s, exchange.Spot, sym, "1m", 20)
		for _, k := range cs[:len(cs)-1] {
			a := time.UnixMilli(k.Timestamp)
			hi, lo := decimal.Zero, decimal.Zero
			for sec := 0; sec <= 60; sec++ { // the close is the price at the next open
				p, _ := s.PriceAt(exchange.Spot, sym, a.Add(time.Duration(sec)*time.Second+300*time.Millisecond))
				if sec == 0 {
					hi, lo = p, p
					if !p.Equal(k.Open) {
						t.Fatalf("%s open %s, price %s", sym, k.Open, p)
					}
				}
				hi, lo = decimal.Max(hi, p), decimal.Min(lo, p)
				if sec == 60 && !p.Equal(k.Close) {
					t.Fatalf("%s close %s, price at close %s", sym, k.Close, p)
				}
			}
			if !hi.Equal(k.High) || !lo.Equal(k.Low) {
				t.Fatalf("%s candle %d: high/low %s/%s, ticks %s/%s", sym, k.Timestamp, k.High, k.Low, hi, lo)
			}
		}
	}
}

// Longer timeframes agree with shorter ones where they overlap: opens and closes are the
// same path points, and their extremes are within the sampled resolution.
func TestSimulatedTimeframesAgree(t *testing.T) {
	c := testkit.NewClock(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)) // a 4h boundary
	s := newSim(9, c)
	h4 := mustCandles(t, s, exchange.Spot, "ETH/USDT", "4h", 3)[:2]
	h1 := mustCandles(t, s, exchange.Spot, "ETH/USDT", "1h", 9)[:8]
	m1 := mustCandles(t, s, exchange.Spot, "ETH/USDT", "1m", 481)[:480]
	for i, k := range h4 {
		sub := h1[4*i : 4*i+4]
		if k.Timestamp != sub[0].Timestamp || !k.Open.Equal(sub[0].Open) || !k.Close.Equal(sub[3].Close) {
			t.Errorf("4h #%d disagrees with its 1h candles", i)
		}
		maxH, minL := sub[0].High, sub[0].Low
		for _, x := range sub {
			maxH, minL = decimal.Max(maxH, x.High), decimal.Min(minL, x.Low)
		}
		// The 4h extremes sample every 4 min, the 1h ones every minute.
		if k.High.GreaterThan(maxH) || k.Low.LessThan(minL) ||
			maxH.Sub(k.High).Div(maxH).InexactFloat64() > 0.01 || k.Low.Sub(minL).Div(minL).InexactFloat64() > 0.01 {
			t.Errorf("4h #%d high/low %s/%s vs 1h %s/%s", i, k.High, k.Low, maxH, minL)
		}
	}
	for i, k := range h1 {
		sub := m1[60*i : 60*i+60]
		if !k.Open.Equal(sub[0].Open) || !k.Close.Equal(sub[59].Close) {
			t.Errorf("1h #%d disagrees with its 1m candles", i)
		}
	}
}

func TestSimulatedSetPrice(t *testing.T) {
	c := testkit.NewClock(testNow)
	s := newSim(0, c)
	if err := s.SetPrice(exchange.Futures, "BTC/USDT", testkit.D("12345.67")); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if p := mustPrice(t, s, exchange.Futures, "BTC/USDT"); !p.Equal(testkit.D("12345.67")) {
			t.Fatalf("pinned price %s", p)
		}
		c.Advance(time.Minute)
	}
	// Other kinds and symbols are not pinned.
	if p := mustPrice(t, s, exchange.Spot, "BTC/USDT"); p.Equal(testkit.D("12345.67")) {
		t.Error("spot follows the futures pin")
	}
	cs := mustCandles(t, s, exchange.Futures, "BTCUSDT", "1m", 3)
	last := cs[2]
	if !last.Close.Equal(testkit.D("12345.67")) || !last.Low.Equal(testkit.D("12345.67")) || last.High.LessThan(last.Open) {
		t.Errorf("open candle with pin: %+v", last)
	}
	if cs[1].Close.Equal(testkit.D("12345.67")) {
		t.Error("a pin rewrote history")
	}
	if err := s.ClearPrice(exchange.Futures, "BTC/USDT"); err != nil {
		t.Fatal(err)
	}
	want, _ := s.PriceAt(exchange.Futures, "BTC/USDT", c.Now())
	if p := mustPrice(t, s, exchange.Futures, "BTC/USDT"); !p.Equal(want) {
		t.Errorf("after clear %s, want %s", p, want)
	}
	if err := s.SetPrice(exchange.Spot, "BTC/USDT", decimal.Zero); errs.CodeOf(err) != errs.InvalidPrice {
		t.Errorf("zero pin: %v", err)
	}
	if err := s.SetPrice(exchange.Spot, "FOO/USDT", testkit.D("1")); !errors.Is(err, ErrUnknownSymbol) {
		t.Errorf("pin unknown symbol: %v", err)
	}
}

func TestSimulatedErrorsAndSymbolForms(t *testing.T) {
	c := testkit.NewClock(testNow)
	s := newSim(0, c)
	want := mustPrice(t, s, exchange.Spot, "XRP/USDT")
	for _, form := range []string{"XRPUSDT", "xrp/usdt", " xrp-usdt ", "XRP_USDT"} {
		if p := mustPrice(t, s, exchange.Spot, form); !p.Equal(want) {
			t.Errorf("%q: %s", form, p)
		}
	}
	_, err := s.Price(ctx, exchange.Spot, "FOO/USDT")
	if !errors.Is(err, ErrUnknownSymbol) || errs.CodeOf(err) != errs.InvalidSymbol {
		t.Errorf("unknown symbol: %v", err)
	}
	_, err = s.Candles(ctx, exchange.Spot, "FOO/USDT", "1m", 5)
	if !errors.Is(err, ErrUnknownSymbol) || errs.CodeOf(err) != errs.InvalidSymbol {
		t.Errorf("candles unknown symbol: %v", err)
	}
	for _, tf := range []string{"", "2m", "1M", "1H", "60s"} {
		if _, err := s.Candles(ctx, exchange.Spot, "BTC/USDT", tf, 5); !errors.Is(err, ErrBadTimeframe) {
			t.Errorf("timeframe %q: %v", tf, err)
		}
	}
	if _, err := s.Price(ctx, "margin", "BTC/USDT"); !errors.Is(err, ErrBadKind) {
		t.Errorf("bad kind: %v", err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Candles(cctx, exchange.Spot, "BTC/USDT", "1m", 5); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if n := len(mustCandles(t, s, exchange.Spot, "BTC/USDT", "1h", 0)); n != DefaultLimit {
		t.Errorf("limit 0: %d candles", n)
	}
	if n := len(mustCandles(t, s, exchange.Spot, "BTC/USDT", "1h", 5000)); n != MaxLimit {
		t.Errorf("limit 5000: %d candles", n)
	}
}

func TestSimulatedConcurrent(t *testing.T) {
	c := testkit.NewClock(testNow)
	s := newSim(0, c)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				sym := s.Symbols()[(g+i)%6]
				switch i % 4 {
				case 0:
					c.Advance(time.Second)
				case 1:
					_ = s.SetPrice(exchange.Spot, sym, testkit.D("1.5"))
				case 2:
					_ = s.ClearPrice(exchange.Spot, sym)
				}
				if _, err := s.Price(ctx, exchange.Spot, sym); err != nil {
					t.Error(err)
					return
				}
				if _, err := s.Candles(ctx, exchange.Futures, sym, Timeframes()[i%8], 50); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestWalkIsPathIndependent(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	idx := make([]int64, 500)
	for i := range idx {
		switch i % 3 {
		case 0:
			idx[i] = walkCenter + rng.Int64N(1<<30)
		case 1:
			idx[i] = rng.Int64N(walkMax + 1)
		default:
			idx[i] = walkCenter - rng.Int64N(100)
		}
	}
	idx = append(idx, 0, walkMax, walkCenter)
	var warm path
	warm.salt = 99
	for _, m := range idx {
		var fresh path
		fresh.salt = 99
		if a, b := warm.at(m), fresh.at(m); a != b {
			t.Fatalf("B(%d): %v after other queries, %v fresh", m, a, b)
		}
	}
	var p path
	if p.at(0) != 0 {
		t.Error("B(0) != 0")
	}
}

func TestGaussIsStandard(t *testing.T) {
	var sum, sum2 float64
	const n = 200000
	for i := range int64(n) {
		z := gauss(12345, i)
		sum, sum2 = sum+z, sum2+z*z
	}
	mean, variance := sum/n, sum2/n-(sum/n)*(sum/n)
	if math.Abs(mean) > 0.01 || math.Abs(variance-1) > 0.02 {
		t.Errorf("mean %.4f variance %.4f", mean, variance)
	}
}

func TestReflectBand(t *testing.T) {
	for _, tc := range []struct{ x, want float64 }{
		{0, 0}, {0.3, 0.3}, {0.5, 0.5}, {0.7, 0.3}, {1, 0}, {1.5, -0.5}, {2, 0}, {-0.7, -0.3}, {-1.2, 0.2}, {10.1, 0.1},
	} {
		if got := reflectBand(tc.x, 0.5); math.Abs(got-tc.want) > 1e-9 {
			t.Errorf("reflect(%v) = %v, want %v", tc.x, got, tc.want)
		}
	}
	if reflectBand(7, -1) != 7 {
		t.Error("unbounded")
	}
}

func BenchmarkSimulatedPrice(b *testing.B) {
	s := NewSimulated(SimulatedOptions{})
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Price(ctx, exchange.Spot, "BTC/USDT"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkSimulatedPriceParallel(b *testing.B) {
	s := NewSimulated(SimulatedOptions{})
	syms := s.Symbols()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := s.Price(ctx, exchange.Spot, syms[i%len(syms)]); err != nil {
				b.Fatal(err)
			}
			i++
		}
	})
}

// Every call a new tick: the cost of a cache miss.
func BenchmarkSimulatedPriceNewTick(b *testing.B) {
	c := testkit.NewClock(testNow)
	s := newSim(0, c)
	b.ReportAllocs()
	for b.Loop() {
		c.Advance(time.Second)
		if _, err := s.Price(ctx, exchange.Spot, "BTC/USDT"); err != nil {
			b.Fatal(err)
		}
	}
}

// The steady state: the clock moves on a little between calls, closed candles come from the
// cache and only the open one is computed.
func BenchmarkSimulatedCandles500x1m(b *testing.B) {
	c := testkit.NewClock(testNow)
	s := newSim(0, c)
	mustCandles(b, s, exchange.Spot, "BTC/USDT", "1m", 500)
	b.ReportAllocs()
	for b.Loop() {
		c.Advance(10 * time.Millisecond)
		if _, err := s.Candles(ctx, exchange.Spot, "BTC/USDT", "1m", 500); err != nil {
			b.Fatal(err)
		}
	}
}

// A window never seen before: every candle computed.
func BenchmarkSimulatedCandles500x1mCold(b *testing.B) { benchCold(b, "1m") }

func BenchmarkSimulatedCandles500x1hCold(b *testing.B) { benchCold(b, "1h") }

func BenchmarkSimulatedCandles500x1wCold(b *testing.B) { benchCold(b, "1w") }

func benchCold(b *testing.B, tf string) {
	c := testkit.NewClock(testNow)
	s := newSim(0, c)
	sym := s.bySym["BTC/USDT"]
	b.ReportAllocs()
	for b.Loop() {
		sym.mu.Lock()
		clear(sym.closed)
		sym.mu.Unlock()
		if _, err := s.Candles(ctx, exchange.Spot, "BTC/USDT", tf, 500); err != nil {
			b.Fatal(err)
		}
	}
}
