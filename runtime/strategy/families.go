package strategy

import "math"

// Every family's events are crossings: a condition that holds at candle i and did not at
// candle i-1, so a family never repeats an entry while its condition stays true. Where a
// product and a sum decide a crossing, the product is converted explicitly
// (float64(x*y) + z): Go may otherwise fuse it into one FMA instruction on arm64 and not on
// amd64, and the same candles must give the same signals on every machine.

// ema is an exponential moving average seeded with the simple average of its first period
// values (the usual convention: no bias towards the first value).
type ema struct {
	period int
	alpha  float64
	n      int
	sum    float64
	v      float64
}

func newEMA(period int) ema { return ema{period: period, alpha: 2 / float64(period+1)} }

// next adds x; ok is false until period values have been seen.
func (e *ema) next(x float64) (v float64, ok bool) {
	if e.n < e.period {
		e.sum += x
		e.n++
		if e.n < e.period {
			return 0, false
		}
		e.v = e.sum / float64(e.period)
		return e.v, true
	}
	e.v = float64(e.alpha*(x-e.v)) + e.v
	return e.v, true
}

// emaCross: the fast EMA crossing above the slow one is ExitShort|EnterLong, crossing below
// is ExitLong|EnterShort. "Above" is fast − slow > 0; a crossing needs the previous
// difference on the other side or at 0.
type emaCross struct {
	fast, slow ema
	prev       float64
	n          int
	warm       int
}

func newEMACross(fast, slow int) *emaCross {
	return &emaCross{fast: newEMA(fast), slow: newEMA(slow), warm: slow + 1}
}

func (s *emaCross) Warmup() int { return s.warm }

func (s *emaCross) Next(b Bar) Signal {
	f, _ := s.fast.next(b.Close)
	sl, ok := s.slow.next(b.Close)
	if !ok {
		return None
	}
	d := f - sl
	s.n++
	prev := s.prev
	s.prev = d
	if s.n < 2 {
		return None
	}
	return cross(prev, d)
}

// cross is the event of a value moving from prev to cur relative to 0: up through it is
// ExitShort|EnterLong, down through it ExitLong|EnterShort.
func cross(prev, cur float64) Signal {
	switch {
	case prev <= 0 && cur > 0:
		return ExitShort | EnterLong
	case prev >= 0 && cur < 0:
		return ExitLong | EnterShort
	}
	return None
}

// rsi is Wilder's relative strength index: the first average gain and loss are the simple
// averages of the first period changes, then avg = (avg × (period−1) + x) / period. With no
// loss it is 100, with neither gain nor loss 50.
type rsi struct {
	period     float64
	n          int // closes seen
	prev       float64
	gain, loss float64
}

func (r *rsi) next(close float64) (float64, bool) {
	p := int(r.period)
	if r.n == 0 {
		r.prev, r.n = close, 1
		return 0, false
	}
	ch := close - r.prev
	r.prev = close
	g, l := max(ch, 0), max(-ch, 0)
	if r.n <= p {
		r.gain += g
		r.loss += l
		r.n++
		if r.n <= p {
			return 0, false
		}
		r.gain /= r.period
		r.loss /= r.period
	} else {
		r.gain = (float64(r.gain*(r.period-1)) + g) / r.period
		r.loss = (float64(r.loss*(r.period-1)) + l) / r.period
	}
	// 100 − 100/(1 + gain/loss) = 100 × gain / (gain + loss), with one division.
	if t := r.gain + r.loss; t != 0 {
		return 100 * r.gain / t, true
	}
	return 50, true
}

// rsiReversion: RSI crossing below oversold (from at or above it) is ExitShort|EnterLong;
// crossing above overbought (from at or below it) is ExitLong|EnterShort.
type rsiReversion struct {
	r                    rsi
	oversold, overbought float64
	prev                 float64
	n                    int
}

func newRSIReversion(period int, oversold, overbought float64) *rsiReversion {
	return &rsiReversion{r: rsi{period: float64(period)}, oversold: oversold, overbought: overbought}
}

func (s *rsiReversion) Warmup() int { return int(s.r.period) + 2 }

func (s *rsiReversion) Next(b Bar) Signal {
	v, ok := s.r.next(b.Close)
	if !ok {
		return None
	}
	s.n++
	prev := s.prev
	s.prev = v
	if s.n < 2 {
		return None
	}
	var sig Signal
	if prev >= s.oversold && v < s.oversold {
		sig |= ExitShort | EnterLong
	}
	if prev <= s.overbought && v > s.overbought {
		sig |= ExitLong | EnterShort
	}
	return sig
}

// extreme is the highest (or lowest) of the last n values pushed, by van Herk and
// Gil-Werman's blocks: the values are cut into blocks of n; the last n values are a suffix
// of the previous block and a prefix of the current one, so the answer is the extreme of
// the previous block's suffix extreme (computed once per block) and the current block's
// running extreme. O(1) a value with no data-dependent branch (a deque's pops mispredict),
// exact (comparisons only), no allocation. Lows are kept negated, so both kinds take the
// maximum.
type extreme struct {
	n      int
	cur    []float64 // the current block's values
	suffix []float64 // suffix[j]: the maximum of the previous block from j on
	prefix float64   // the maximum of the current block so far
	pos    int       // values in the current block
	count  int
	sign   float64 // 1 for the highest, -1 for the lowest
}

func newExtreme(n int, highest bool) extreme {
	e := extreme{n: n, cur: make([]float64, n), suffix: make([]float64, n+1), prefix: math.Inf(-1), sign: 1}
	if !highest {
		e.sign = -1
	}
	for j := range e.suffix {
		e.suffix[j] = math.Inf(-1)
	}
	return e
}

// push adds the next value.
func (e *extreme) push(v float64) {
	if e.pos == e.n {
		acc := math.Inf(-1)
		for j := e.n - 1; j >= 0; j-- {
			acc = max(acc, e.cur[j])
			e.suffix[j] = acc
		}
		e.pos = 0
		e.prefix = math.Inf(-1)
	}
	v *= e.sign
	e.cur[e.pos] = v
	e.prefix = max(e.prefix, v)
	e.pos++
	e.count++
}

// value is the extreme of the last n values; full is false until n have been pushed.
func (e *extreme) value() (v float64, full bool) {
	return e.sign * max(e.suffix[e.pos], e.prefix), e.count >= e.n
}

// donchian: with H(n) and L(n) the highest high and lowest low of the n candles before the
// current one, the close crossing above H(period) is EnterLong, below L(period) EnterShort,
// below L(exitPeriod) ExitLong and above H(exitPeriod) ExitShort. "Crossing above" is
// close > H now and close <= H at the previous candle (each against its own channel).
type donchian struct {
	hi, lo, exitHi, exitLo extreme
	warm                   int
	n                      int
	prev                   [4]bool // the previous candle's close beyond each channel
}

func newDonchian(period, exitPeriod int) *donchian {
	return &donchian{hi: newExtreme(period, true), lo: newExtreme(period, false),
		exitHi: newExtreme(exitPeriod, true), exitLo: newExtreme(exitPeriod, false), warm: period + 2}
}

func (s *donchian) Warmup() int { return s.warm }

func (s *donchian) Next(b Bar) Signal {
	hi, full := s.hi.value()
	lo, _ := s.lo.value()
	xhi, _ := s.exitHi.value()
	xlo, _ := s.exitLo.value()
	s.hi.push(b.High)
	s.lo.push(b.Low)
	s.exitHi.push(b.High)
	s.exitLo.push(b.Low)
	if !full {
		return None
	}
	now := [4]bool{b.Close > hi, b.Close < lo, b.Close < xlo, b.Close > xhi}
	prev := s.prev
	s.prev = now
	s.n++
	if s.n < 2 {
		return None
	}
	return onset(prev, now)
}

// bollinger: the middle band is the simple average of the last period closes, the bands
// middle ± stdDev × σ with σ their population standard deviation (Bollinger's). The close
// crossing below the lower band is EnterLong, above the upper band EnterShort; crossing
// above the middle is ExitLong, below it ExitShort. The average and σ are recomputed from
// the window each candle (two passes in a fixed order), so they are a function of the
// window alone: a fresh instance agrees exactly with one that has run for ever. Each close
// is written twice, period apart, so the window is always one contiguous slice.
type bollinger struct {
	buf   []float64 // 2 × period
	n     int
	pos   int
	count int
	k     float64
	seen  int
	prev  [4]bool // close < lower, close > upper, close > middle, close < middle
}

func newBollinger(period int, k float64) *bollinger {
	return &bollinger{buf: make([]float64, 2*period), n: period, k: k}
}

func (s *bollinger) Warmup() int { return s.n + 1 }

// sum4 adds xs in four interleaved running sums (independent additions run in parallel),
// combined in a fixed order.
func sum4(xs []float64) float64 {
	var a, b, c, d float64
	i := 0
	for ; i+4 <= len(xs); i += 4 {
		a += xs[i]
		b += xs[i+1]
		c += xs[i+2]
		d += xs[i+3]
	}
	for ; i < len(xs); i++ {
		a += xs[i]
	}
	return (a + b) + (c + d)
}

// sqdev4 is the sum of (x − m)² over xs, in the same order as sum4.
func sqdev4(xs []float64, m float64) float64 {
	var a, b, c, d float64
	i := 0
	for ; i+4 <= len(xs); i += 4 {
		x0, x1, x2, x3 := xs[i]-m, xs[i+1]-m, xs[i+2]-m, xs[i+3]-m
		a += float64(x0 * x0)
		b += float64(x1 * x1)
		c += float64(x2 * x2)
		d += float64(x3 * x3)
	}
	for ; i < len(xs); i++ {
		x := xs[i] - m
		a += float64(x * x)
	}
	return (a + b) + (c + d)
}

func (s *bollinger) Next(b Bar) Signal {
	s.buf[s.pos], s.buf[s.pos+s.n] = b.Close, b.Close
	s.pos++
	if s.pos == s.n {
		s.pos = 0
	}
	s.count++
	if s.count < s.n {
		return None
	}
	// The window, oldest first: buf[pos : pos+n].
	w := s.buf[s.pos : s.pos+s.n]
	n := float64(s.n)
	mid := sum4(w) / n
	width := float64(s.k * math.Sqrt(sqdev4(w, mid)/n))
	now := [4]bool{b.Close < mid-width, b.Close > mid+width, b.Close > mid, b.Close < mid}
	prev := s.prev
	s.prev = now
	s.seen++
	if s.seen < 2 {
		return None
	}
	return onset(prev, now)
}

// onset is the signal of the conditions [enter long, enter short, exit long, exit short]
// that hold now and did not at the previous candle: events, not states.
func onset(prev, now [4]bool) Signal {
	var sig Signal
	for i, bit := range [4]Signal{EnterLong, EnterShort, ExitLong, ExitShort} {
		if now[i] && !prev[i] {
			sig |= bit
		}
	}
	return sig
}

// macdCross is Appel's MACD: the MACD line is EMA(fast) − EMA(slow) of the closes, the
// signal line EMA(signalPeriod) of the MACD line (seeded like every ema, with the simple
// average of its first signalPeriod values), the histogram MACD − signal. The MACD line
// crossing above its signal line (the histogram from <= 0 to > 0) is ExitShort|EnterLong,
// crossing below is ExitLong|EnterShort. The MACD line exists from candle slow, the signal
// line from candle slow+signalPeriod−1, and a crossing needs one histogram before it.
type macdCross struct {
	fast, slow, signal ema
	prev               float64
	n                  int
	warm               int
}

func newMACDCross(fast, slow, signal int) *macdCross {
	return &macdCross{fast: newEMA(fast), slow: newEMA(slow), signal: newEMA(signal), warm: slow + signal}
}

func (s *macdCross) Warmup() int { return s.warm }

func (s *macdCross) Next(b Bar) Signal {
	f, _ := s.fast.next(b.Close)
	sl, ok := s.slow.next(b.Close)
	if !ok {
		return None
	}
	m := f - sl
	sig, ok := s.signal.next(m)
	if !ok {
		return None
	}
	h := m - sig
	s.n++
	prev := s.prev
	s.prev = h
	if s.n < 2 {
		return None
	}
	return cross(prev, h)
}

// atr is Wilder's average true range. A candle's true range is max(high − low,
// |high − previous close|, |low − previous close|), so the first one is the second candle's
// (as the rsi's first change); the first average is the simple average of the first period
// true ranges, then avg = (avg × (period−1) + tr) / period.
type atr struct {
	period float64
	n      int // true ranges seen, up to period
	seen   bool
	prev   float64 // the previous close
	v      float64
}

func (a *atr) next(b Bar) (float64, bool) {
	if !a.seen {
		a.prev, a.seen = b.Close, true
		return 0, false
	}
	tr := max(b.High-b.Low, math.Abs(b.High-a.prev), math.Abs(b.Low-a.prev))
	a.prev = b.Close
	if p := int(a.period); a.n < p {
		a.v += tr
		a.n++
		if a.n < p {
			return 0, false
		}
		a.v /= a.period
		return a.v, true
	}
	a.v = (float64(a.v*(a.period-1)) + tr) / a.period
	return a.v, true
}

// supertrend is Olivier Seban's Supertrend as commonly implemented (TradingView's
// ta.supertrend): with hl2 = (high + low) / 2 and Wilder's ATR over period, the basic bands
// are hl2 ± multiplier × ATR. The final upper band is the basic one when that is below the
// previous final upper band or the previous close was above it, else the previous final
// upper band (it only falls while the price stays under it); symmetrically, the final lower
// band is the basic one when that is above the previous final lower band or the previous
// close was below it, else the previous final lower band. The first final bands are the
// basic ones. The trend turns up when the close is above the final upper band and down when
// it is below the final lower band; it turning up is ExitShort|EnterLong, down
// ExitLong|EnterShort. Each turn is a crossing: while the trend is down, no close has been
// above its candle's upper band.
//
// Two choices where implementations differ. The ATR's first true range is the second
// candle's, since a true range needs a previous close (TradingView takes the first candle's
// high − low: its bands start a candle earlier, and its ATR differs by a seed that fades as
// (1−1/period)^k). And the trend is undetermined until the close first leaves the bands
// (TradingView starts in a downtrend, other libraries in an uptrend, so their first turn
// can be the start's artefact): the trend that close determines emits nothing, since no
// trend was left. Bands exist from candle period+1, so a trend can be determined there and
// first turn at period+2.
type supertrend struct {
	a         atr
	mult      float64
	upper     float64 // the final bands at the previous candle
	lower     float64
	prevClose float64
	bands     bool // upper and lower are set
	trend     int8 // 1 up, -1 down, 0 not yet determined
	warm      int
}

func newSupertrend(period int, mult float64) *supertrend {
	return &supertrend{a: atr{period: float64(period)}, mult: mult, warm: period + 2}
}

func (s *supertrend) Warmup() int { return s.warm }

func (s *supertrend) Next(b Bar) Signal {
	v, ok := s.a.next(b)
	if !ok {
		s.prevClose = b.Close
		return None
	}
	hl2 := (b.High + b.Low) / 2
	w := float64(s.mult * v) // no FMA: the bands decide the crossings
	upper, lower := hl2+w, hl2-w
	// The final-band rules, negated: a band keeps its previous value unless the basic band
	// moved inward or the previous close broke through it.
	if s.bands {
		if upper >= s.upper && s.prevClose <= s.upper {
			upper = s.upper
		}
		if lower <= s.lower && s.prevClose >= s.lower {
			lower = s.lower
		}
	}
	s.upper, s.lower, s.prevClose, s.bands = upper, lower, b.Close, true
	prev := s.trend
	switch {
	case prev != 1 && b.Close > upper:
		s.trend = 1
	case prev != -1 && b.Close < lower:
		s.trend = -1
	}
	switch {
	case prev == 0 || s.trend == prev:
		return None
	case s.trend == 1:
		return ExitShort | EnterLong
	}
	return ExitLong | EnterShort
}
