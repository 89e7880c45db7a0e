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
	switch {
	case r.loss == 0 && r.gain == 0:
		return 50, true
	case r.loss == 0:
		return 100, true
	}
	return 100 - 100/(1+r.gain/r.loss), true
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

// extreme is the highest (or lowest) of the last n values pushed, by a monotonic deque in a
// ring sized once: O(1) amortised per value, exact (no arithmetic), no allocation.
type extreme struct {
	vals     []float64
	idx      []int
	mask     int
	head     int
	tail     int
	highest  bool
	n, count int
}

func newExtreme(n int, highest bool) extreme {
	size := 1
	for size < n+1 {
		size <<= 1
	}
	return extreme{vals: make([]float64, size), idx: make([]int, size), mask: size - 1, n: n, highest: highest}
}

// push adds the next value.
func (e *extreme) push(v float64) {
	for e.tail > e.head {
		last := e.vals[(e.tail-1)&e.mask]
		if (e.highest && last > v) || (!e.highest && last < v) {
			break
		}
		e.tail--
	}
	e.vals[e.tail&e.mask], e.idx[e.tail&e.mask] = v, e.count
	e.tail++
	e.count++
	for e.idx[e.head&e.mask] <= e.count-1-e.n {
		e.head++
	}
}

// value is the extreme of the last n values; full is false until n have been pushed.
func (e *extreme) value() (v float64, full bool) {
	return e.vals[e.head&e.mask], e.count >= e.n
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
	var sig Signal
	for i, bit := range [4]Signal{EnterLong, EnterShort, ExitLong, ExitShort} {
		if now[i] && !prev[i] {
			sig |= bit
		}
	}
	return sig
}

// bollinger: the middle band is the simple average of the last period closes, the bands
// middle ± stdDev × σ with σ their population standard deviation (Bollinger's). The close
// crossing below the lower band is EnterLong, above the upper band EnterShort; crossing
// above the middle is ExitLong, below it ExitShort. The average and σ are recomputed from
// the window each candle (two passes, oldest first), so they are a function of the window
// alone: a fresh instance agrees exactly with one that has run for ever.
type bollinger struct {
	ring  []float64
	pos   int
	count int
	k     float64
	n     int
	prev  [4]bool // close < lower, close > upper, close > middle, close < middle
}

func newBollinger(period int, k float64) *bollinger {
	return &bollinger{ring: make([]float64, period), k: k}
}

func (s *bollinger) Warmup() int { return len(s.ring) + 1 }

func (s *bollinger) Next(b Bar) Signal {
	s.ring[s.pos] = b.Close
	s.pos++
	if s.pos == len(s.ring) {
		s.pos = 0
	}
	s.count++
	if s.count < len(s.ring) {
		return None
	}
	// Oldest first: from pos to the end, then from the start to pos.
	var sum float64
	for _, v := range s.ring[s.pos:] {
		sum += v
	}
	for _, v := range s.ring[:s.pos] {
		sum += v
	}
	n := float64(len(s.ring))
	mid := sum / n
	var ss float64
	for _, v := range s.ring[s.pos:] {
		ss += float64((v - mid) * (v - mid))
	}
	for _, v := range s.ring[:s.pos] {
		ss += float64((v - mid) * (v - mid))
	}
	w := float64(s.k * math.Sqrt(ss/n))
	now := [4]bool{b.Close < mid-w, b.Close > mid+w, b.Close > mid, b.Close < mid}
	prev := s.prev
	s.prev = now
	s.n++
	if s.n < 2 {
		return None
	}
	var sig Signal
	for i, bit := range [4]Signal{EnterLong, EnterShort, ExitLong, ExitShort} {
		if now[i] && !prev[i] {
			sig |= bit
		}
	}
	return sig
}
