package marketdata

import (
	"context"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
)

// Simulated is a deterministic simulated market.
//
// # Model
//
// Each symbol's log price relative to its initial price is σ·(B(n) − B(0)), where n is the
// tick index since Start (n = ⌊(t − Start)/Tick⌋, negative before Start), σ the per-tick
// volatility and B a standard Brownian motion built as a hashed dyadic Brownian bridge (see
// walk.go), reflected into the band ±MaxDrift so that prices stay plausible for ever. The
// price is P₀·exp(that), rounded to the symbol's tick (never below one tick). Between two
// ticks the price is constant. Spot and futures share one path per symbol (no basis).
//
// Because B(n) is a pure function of (Seed, symbol, n), any replica or restart computes the
// same price for the same instant, and any past window of candles is reproducible, without
// shared state. Start must therefore be the same everywhere: its default is a fixed date.
//
// # Cost, and the trade-off taken
//
// A price costs one descent of the bridge (≤ 48 hashes); it is cached per symbol for the
// current tick, so Price at thousands of calls a second costs a clock read, a map lookup and
// an atomic load. Candles sample the path 60 times per candle plus its close: for 1m candles
// with 1 s ticks that is every tick, so high and low are exact; for longer timeframes the
// high and low are the extremes of the path at tf/60 resolution (5 s for 5m … 168 min for
// 1w), so a single tick between two samples can poke beyond a long candle's wick by about
// σ·√(tf/60/Tick), typically a few basis points. That bounds every candle to 61 samples
// (the alternative, visiting every tick, is 604,800 ticks for one 1w candle) while keeping
// all timeframes consistent where they overlap (open, close and sampled points are the same
// path). Consecutive samples share their bridge descent, so 500 fresh 1m candles take about
// 60,000 cheap hashes once; closed candles are immutable and cached per symbol, so repeated
// calls recompute only the open candle (61 samples).
//
// Candle i's close is the price at the instant candle i+1 opens, so it equals candle i+1's
// open exactly. The last candle is the open one: its close is the current price.
//
// Volume is synthetic: deterministic per (symbol, timeframe, candle), proportional to the
// time elapsed in the candle and larger when the candle's range is wide; it is not additive
// across timeframes.
//
// SetPrice pins a price for tests (the stop-loss watcher's, the paper exchange's): the pin
// wins over the path in Price and in the open candle's close, high and low, until ClearPrice.
// Pins are per instance, not shared between replicas.
type Simulated struct {
	startNs int64
	tickNs  int64
	sigma   float64 // per-tick std of the log price
	drift   float64 // band half-width in log price; <= 0 unbounded
	now     func() time.Time
	bySym   map[string]*simSymbol // canonical and compact ("BTCUSDT") names, read-only
	list    []*simSymbol
}

// SimulatedOptions configures NewSimulated; zero values take the defaults.
type SimulatedOptions struct {
	// Seed selects the path; the same seed gives the same prices everywhere.
	Seed int64
	// Start is the instant at which every symbol is at its initial price. Default
	// DefaultSimulatedStart, so that replicas agree without configuration.
	Start time.Time
	// Tick is how often the price moves. Default 1 s, at least 1 ms.
	Tick time.Duration
	// Volatility is the standard deviation of the daily log return. Default 0.03 (3 %).
	Volatility float64
	// MaxDrift bounds |ln(price/initial price)|: the path reflects at the edges. Default 0.5
	// (prices stay within ×0.61 … ×1.65 of the initial price); negative means unbounded.
	MaxDrift float64
	// Markets are the symbols and their initial prices. Default DefaultSimulatedMarkets().
	Markets []SimulatedMarket
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// SimulatedMarket is one symbol of the simulated market.
type SimulatedMarket struct {
	Symbol          string          // BASE/QUOTE
	Price           decimal.Decimal // price at Start
	Tick            decimal.Decimal // price increment
	Step            decimal.Decimal // amount increment, also the minimum quantity
	MinNotional     decimal.Decimal // minimum order value in the quote asset
	VolumePerMinute decimal.Decimal // mean base-asset volume traded a minute
}

// DefaultSimulatedStart anchors the default simulated market.
var DefaultSimulatedStart = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// Default simulated parameters.
const (
	DefaultSimulatedTick       = time.Second
	DefaultSimulatedVolatility = 0.03
	DefaultSimulatedMaxDrift   = 0.5
)

// DefaultSimulatedMarkets is the default symbol set, the same on spot and futures. Ticks and
// steps follow Binance spot (the spec's precision table for BTC, ETH and DOGE).
func DefaultSimulatedMarkets() []SimulatedMarket {
	d := decimal.RequireFromString
	m := func(sym, price, tick, step, volume string) SimulatedMarket {
		return SimulatedMarket{Symbol: sym, Price: d(price), Tick: d(tick), Step: d(step),
			MinNotional: d("5"), VolumePerMinute: d(volume)}
	}
	return []SimulatedMarket{
		m("BTC/USDT", "65000", "0.01", "0.00001", "15"),
		m("ETH/USDT", "3200", "0.01", "0.0001", "150"),
		m("DOGE/USDT", "0.15", "0.00001", "1", "3000000"),
		m("SOL/USDT", "150", "0.01", "0.001", "4000"),
		m("BNB/USDT", "600", "0.01", "0.001", "400"),
		m("XRP/USDT", "0.55", "0.0001", "0.1", "1500000"),
	}
}

type simSymbol struct {
	m      SimulatedMarket
	salt   uint64
	volKey uint64 // salt of the volume noise
	p0     float64
	b0     float64 // B(walkCenter): the path's value at Start
	price  decimalQuantizer
	amount decimalQuantizer
	volPM  float64

	cur  atomic.Pointer[tickPrice]
	pins [2]atomic.Pointer[decimal.Decimal] // by kindIndex

	mu     sync.Mutex
	closed map[candleKey]Candle // closed candles: immutable, so cached
}

type tickPrice struct {
	n     int64
	price decimal.Decimal
}

type candleKey struct {
	tf     time.Duration
	openMs int64
}

// candleSamples is how many path points a candle's high and low are taken from (plus its
// close): every tick of a 1m candle at 1 s ticks.
const candleSamples = 60

// maxCachedCandles bounds one symbol's closed-candle cache (8 timeframes × 1000 candles
// fit); past it the cache starts over.
const maxCachedCandles = 16384

// NewSimulated builds a simulated market. Markets with a non-positive price or tick, or a
// malformed symbol, are skipped.
func NewSimulated(opts SimulatedOptions) *Simulated {
	if opts.Start.IsZero() {
		opts.Start = DefaultSimulatedStart
	}
	if opts.Tick <= 0 {
		opts.Tick = DefaultSimulatedTick
	}
	if opts.Tick < time.Millisecond {
		opts.Tick = time.Millisecond
	}
	if opts.Volatility <= 0 {
		opts.Volatility = DefaultSimulatedVolatility
	}
	if opts.MaxDrift == 0 {
		opts.MaxDrift = DefaultSimulatedMaxDrift
	}
	if opts.Markets == nil {
		opts.Markets = DefaultSimulatedMarkets()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	s := &Simulated{
		startNs: opts.Start.UnixNano(),
		tickNs:  int64(opts.Tick),
		sigma:   opts.Volatility * math.Sqrt(float64(opts.Tick)/float64(24*time.Hour)),
		drift:   opts.MaxDrift,
		now:     opts.Now,
		bySym:   make(map[string]*simSymbol, 2*len(opts.Markets)),
	}
	for _, m := range opts.Markets {
		m.Symbol = strings.ToUpper(strings.TrimSpace(m.Symbol))
		base, quote, ok := strings.Cut(m.Symbol, "/")
		if !ok || base == "" || quote == "" || !m.Price.IsPositive() || !m.Tick.IsPositive() {
			continue
		}
		if !m.Step.IsPositive() {
			m.Step = decimal.New(1, -8)
		}
		sym := &simSymbol{
			m:      m,
			salt:   symbolSalt(opts.Seed, m.Symbol),
			p0:     m.Price.InexactFloat64(),
			price:  newQuantizer(m.Tick),
			amount: newQuantizer(m.Step),
			volPM:  m.VolumePerMinute.InexactFloat64(),
			closed: make(map[candleKey]Candle),
		}
		sym.volKey = mix64(sym.salt ^ 0x5851f42d4c957f2d)
		var p path
		p.salt = sym.salt
		sym.b0 = p.at(walkCenter)
		s.bySym[m.Symbol] = sym
		s.bySym[base+quote] = sym
		s.list = append(s.list, sym)
	}
	return s
}

// Symbols lists the simulated symbols (BASE/QUOTE) in configuration order.
func (s *Simulated) Symbols() []string {
	out := make([]string, len(s.list))
	for i, sym := range s.list {
		out[i] = sym.m.Symbol
	}
	return out
}

// Markets describes the simulated symbols of kind, with their precision and minimums, for
// the paper exchange.
func (s *Simulated) Markets(kind exchange.Kind) []exchange.MarketInfo {
	out := make([]exchange.MarketInfo, len(s.list))
	for i, sym := range s.list {
		base, quote, _ := strings.Cut(sym.m.Symbol, "/")
		out[i] = exchange.MarketInfo{Symbol: sym.m.Symbol, Base: base, Quote: quote, Kind: kind,
			TickSize: sym.m.Tick, StepSize: sym.m.Step, MinQty: sym.m.Step, MinNotional: sym.m.MinNotional}
	}
	return out
}

// Price is the current price of symbol: a pinned price if SetPrice set one, else the path's.
func (s *Simulated) Price(_ context.Context, kind exchange.Kind, symbol string) (decimal.Decimal, error) {
	sym, err := s.lookup(kind, symbol)
	if err != nil {
		return decimal.Decimal{}, err
	}
	if p := sym.pins[kindIndex(kind)].Load(); p != nil {
		return *p, nil
	}
	n := s.tickIndex(s.now().UnixNano())
	if c := sym.cur.Load(); c != nil && c.n == n {
		return c.price, nil
	}
	var p path
	p.salt = sym.salt
	price := sym.price.dec(s.priceAt(&p, sym, n))
	sym.cur.Store(&tickPrice{n: n, price: price})
	return price, nil
}

// PriceAt is the path's price of symbol at t, ignoring pins: what Price returned, or will
// return, at that instant on any replica.
func (s *Simulated) PriceAt(kind exchange.Kind, symbol string, t time.Time) (decimal.Decimal, error) {
	sym, err := s.lookup(kind, symbol)
	if err != nil {
		return decimal.Decimal{}, err
	}
	var p path
	p.salt = sym.salt
	return sym.price.dec(s.priceAt(&p, sym, s.tickIndex(t.UnixNano()))), nil
}

// SetPrice pins symbol's price on kind until ClearPrice: Price returns it and the open candle
// closes at it. For tests (e.g. to trigger a stop-loss); a non-positive price is INVALID_PRICE.
func (s *Simulated) SetPrice(kind exchange.Kind, symbol string, price decimal.Decimal) error {
	sym, err := s.lookup(kind, symbol)
	if err != nil {
		return err
	}
	if !price.IsPositive() {
		return errs.New(errs.InvalidPrice, "price must be positive")
	}
	sym.pins[kindIndex(kind)].Store(&price)
	return nil
}

// ClearPrice removes SetPrice's pin, returning symbol to the simulated path.
func (s *Simulated) ClearPrice(kind exchange.Kind, symbol string) error {
	sym, err := s.lookup(kind, symbol)
	if err != nil {
		return err
	}
	sym.pins[kindIndex(kind)].Store(nil)
	return nil
}

// Candles returns limit candles of timeframe ending with the open one (see the type's
// comment for how high, low and volume are made).
func (s *Simulated) Candles(ctx context.Context, kind exchange.Kind, symbol, timeframe string, limit int) ([]Candle, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	sym, err := s.lookup(kind, symbol)
	if err != nil {
		return nil, err
	}
	tf, err := TimeframeDuration(timeframe)
	if err != nil {
		return nil, err
	}
	limit = clampLimit(limit, MaxLimit)
	nowNs := s.now().UnixNano()
	tfMs := tf.Milliseconds()
	openMs := candleOpenMs(floorDiv(nowNs, 1e6), tf)
	firstMs := openMs - int64(limit-1)*tfMs

	out := make([]Candle, limit)
	var missing []int
	sym.mu.Lock()
	for i := 0; i < limit-1; i++ {
		c, ok := sym.closed[candleKey{tf, firstMs + int64(i)*tfMs}]
		if ok {
			out[i] = c
		} else {
			missing = append(missing, i)
		}
	}
	sym.mu.Unlock()

	var p path
	p.salt = sym.salt
	if len(missing) > 0 {
		for _, i := range missing {
			aMs := firstMs + int64(i)*tfMs
			out[i] = s.candle(&p, sym, tf, aMs, aMs*1e6+int64(tf))
		}
		sym.mu.Lock()
		if len(sym.closed)+len(missing) > maxCachedCandles {
			clear(sym.closed)
		}
		for _, i := range missing {
			sym.closed[candleKey{tf, out[i].Timestamp}] = out[i]
		}
		sym.mu.Unlock()
	}

	last := s.candle(&p, sym, tf, openMs, nowNs)
	if pin := sym.pins[kindIndex(kind)].Load(); pin != nil {
		last.Close = *pin
		last.High = decimal.Max(last.High, *pin)
		last.Low = decimal.Min(last.Low, *pin)
	}
	out[limit-1] = last
	return out, nil
}

// candle computes the candle opening at aMs whose close is the price at endNs (the next
// candle's open for a closed candle, now for the open one).
func (s *Simulated) candle(p *path, sym *simSymbol, tf time.Duration, aMs, endNs int64) Candle {
	aNs := aMs * 1e6
	step := max(s.tickNs, int64(tf)/candleSamples)
	open := s.logAt(p, sym, s.tickIndex(aNs))
	hi, lo := open, open
	for t := aNs + step; t < endNs; t += step {
		x := s.logAt(p, sym, s.tickIndex(t))
		hi, lo = max(hi, x), min(lo, x)
	}
	cl := s.logAt(p, sym, s.tickIndex(endNs))
	hi, lo = max(hi, cl), min(lo, cl)

	// Volume: mean VolumePerMinute × elapsed minutes, ×(0.5…1.5) noise per candle, ×(0.5…)
	// with the range relative to the range Brownian motion typically covers (≈1.6σ√T).
	elapsedNs := endNs - aNs
	noise := 0.5 + unit(sym.volKey^uint64(tf), aMs)
	activity := 0.5
	if ticks := float64(elapsedNs) / float64(s.tickNs); ticks > 0 {
		activity += 0.5 * (hi - lo) / (1.6 * s.sigma * math.Sqrt(ticks))
	}
	vol := sym.volPM * float64(elapsedNs) / float64(time.Minute) * noise * activity

	return Candle{
		Timestamp: aMs,
		Time:      floorDiv(aMs, 1000),
		Open:      sym.price.dec(s.toPrice(sym, open)),
		High:      sym.price.dec(s.toPrice(sym, hi)),
		Low:       sym.price.dec(s.toPrice(sym, lo)),
		Close:     sym.price.dec(s.toPrice(sym, cl)),
		Volume:    sym.amount.decFloor(vol),
	}
}

// tickIndex is the index of the tick in force at tNs (ns since the Unix epoch).
func (s *Simulated) tickIndex(tNs int64) int64 { return floorDiv(tNs-s.startNs, s.tickNs) }

// logAt is the (banded) log price relative to the initial price at tick n.
func (s *Simulated) logAt(p *path, sym *simSymbol, n int64) float64 {
	m := n + walkCenter
	if m < 0 {
		m = 0
	} else if m > walkMax {
		m = walkMax
	}
	return reflectBand(s.sigma*(p.at(m)-sym.b0), s.drift)
}

func (s *Simulated) toPrice(sym *simSymbol, logRel float64) float64 {
	return sym.p0 * math.Exp(logRel)
}

func (s *Simulated) priceAt(p *path, sym *simSymbol, n int64) float64 {
	return s.toPrice(sym, s.logAt(p, sym, n))
}

func (s *Simulated) lookup(kind exchange.Kind, symbol string) (*simSymbol, error) {
	if err := checkKind(kind); err != nil {
		return nil, err
	}
	if sym, ok := s.bySym[symbol]; ok {
		return sym, nil
	}
	norm := strings.NewReplacer("/", "", "-", "", "_", "").Replace(strings.ToUpper(strings.TrimSpace(symbol)))
	if sym, ok := s.bySym[norm]; ok {
		return sym, nil
	}
	return nil, unknownSymbol(kind, symbol)
}

func kindIndex(k exchange.Kind) int {
	if k == exchange.Futures {
		return 1
	}
	return 0
}

// decimalQuantizer turns a float into a multiple of a positive increment.
type decimalQuantizer struct {
	inc   decimal.Decimal
	incF  float64
	exp   int32 // inc = 10^exp when pow10
	pow10 bool
}

func newQuantizer(inc decimal.Decimal) decimalQuantizer {
	q := decimalQuantizer{inc: inc, incF: inc.InexactFloat64()}
	// A power of ten makes quantizing a single decimal.New.
	if c := inc.Coefficient(); c.IsInt64() {
		e := inc.Exponent()
		for v := c.Int64(); v > 1 && v%10 == 0; v /= 10 {
			e++
		}
		if decimal.New(1, e).Equal(inc) {
			q.exp, q.pow10 = e, true
		}
	}
	return q
}

func (q decimalQuantizer) fromCount(n int64) decimal.Decimal {
	if q.pow10 {
		return decimal.New(n, q.exp)
	}
	return decimal.NewFromInt(n).Mul(q.inc)
}

// dec rounds v to the nearest increment, never below one increment (prices stay positive).
func (q decimalQuantizer) dec(v float64) decimal.Decimal {
	return q.fromCount(max(1, int64(math.Round(v/q.incF))))
}

// decFloor rounds v down to the increment, never below zero.
func (q decimalQuantizer) decFloor(v float64) decimal.Decimal {
	return q.fromCount(max(0, int64(math.Floor(v/q.incF))))
}
