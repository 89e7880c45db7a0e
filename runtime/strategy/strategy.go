// Package strategy holds the built-in strategy families: their parameters and ranges,
// validation, and the indicator state that turns closed candles into signals. The executor's
// strategy runner, the backtester (runtime/backtest) and the Strategy Lab all run this code,
// so a live bot and its backtest decide alike. It has no Redis and no Kubernetes.
//
// Indicators are float64 (statistics, not money). Each family's entry and exit events,
// ranges and defaults are in docs/decisions.md, "Strategies and backtests".
package strategy

import (
	"fmt"
	"math"
	"strings"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/marketdata"
)

// Family is a built-in strategy family; the values are the CRD's enum values.
type Family string

const (
	EMACrossover       Family = "emaCrossover"
	RSIReversion       Family = "rsiReversion"
	DonchianBreakout   Family = "donchianBreakout"
	BollingerReversion Family = "bollingerReversion"
	MACDCrossover      Family = "macdCrossover"
	Supertrend         Family = "supertrend"
)

var families = []Family{EMACrossover, RSIReversion, DonchianBreakout, BollingerReversion, MACDCrossover, Supertrend}

// Families lists the families in a fixed order.
func Families() []Family { return append([]Family(nil), families...) }

// Valid reports whether f is one of Families.
func (f Family) Valid() bool {
	for _, g := range families {
		if f == g {
			return true
		}
	}
	return false
}

// Params is the union of the families' parameters; each family reads only its own (the
// others must be zero).
type Params struct {
	FastPeriod   int     `json:"fastPeriod,omitempty"`   // emaCrossover, macdCrossover
	SlowPeriod   int     `json:"slowPeriod,omitempty"`   // emaCrossover, macdCrossover
	Period       int     `json:"period,omitempty"`       // rsiReversion, donchianBreakout, bollingerReversion, supertrend (ATR)
	Oversold     float64 `json:"oversold,omitempty"`     // rsiReversion (RSI level 0-100)
	Overbought   float64 `json:"overbought,omitempty"`   // rsiReversion
	ExitPeriod   int     `json:"exitPeriod,omitempty"`   // donchianBreakout
	StdDev       float64 `json:"stdDev,omitempty"`       // bollingerReversion (band width in standard deviations)
	SignalPeriod int     `json:"signalPeriod,omitempty"` // macdCrossover (the signal line's EMA period)
	Multiplier   float64 `json:"multiplier,omitempty"`   // supertrend (band distance in ATRs)
}

// Spec is one configured strategy: family, parameters, timeframe (one of
// marketdata.Timeframes()) and symbol (BASE/QUOTE).
type Spec struct {
	Family    Family `json:"family"`
	Timeframe string `json:"timeframe"`
	Symbol    string `json:"symbol"`
	Params    Params `json:"params"`
}

// Range is one parameter's allowed range, both ends included. Step is the grid and
// random-search resolution (1 for periods); Integer parameters are whole numbers.
type Range struct {
	Name    string // the JSON name, e.g. "fastPeriod"
	Min     float64
	Max     float64
	Step    float64
	Integer bool
}

// Parameter names, as in JSON.
const (
	ParamFastPeriod   = "fastPeriod"
	ParamSlowPeriod   = "slowPeriod"
	ParamPeriod       = "period"
	ParamOversold     = "oversold"
	ParamOverbought   = "overbought"
	ParamExitPeriod   = "exitPeriod"
	ParamStdDev       = "stdDev"
	ParamSignalPeriod = "signalPeriod"
	ParamMultiplier   = "multiplier"
)

var ranges = map[Family][]Range{
	EMACrossover: {
		{Name: ParamFastPeriod, Min: 2, Max: 100, Step: 1, Integer: true},
		{Name: ParamSlowPeriod, Min: 3, Max: 400, Step: 1, Integer: true},
	},
	RSIReversion: {
		{Name: ParamPeriod, Min: 2, Max: 100, Step: 1, Integer: true},
		{Name: ParamOversold, Min: 5, Max: 50, Step: 1},
		{Name: ParamOverbought, Min: 50, Max: 95, Step: 1},
	},
	DonchianBreakout: {
		{Name: ParamPeriod, Min: 5, Max: 200, Step: 1, Integer: true},
		{Name: ParamExitPeriod, Min: 2, Max: 200, Step: 1, Integer: true},
	},
	BollingerReversion: {
		{Name: ParamPeriod, Min: 5, Max: 200, Step: 1, Integer: true},
		{Name: ParamStdDev, Min: 0.5, Max: 4, Step: 0.1},
	},
	MACDCrossover: {
		{Name: ParamFastPeriod, Min: 2, Max: 100, Step: 1, Integer: true},
		{Name: ParamSlowPeriod, Min: 3, Max: 400, Step: 1, Integer: true},
		{Name: ParamSignalPeriod, Min: 2, Max: 100, Step: 1, Integer: true},
	},
	Supertrend: {
		{Name: ParamPeriod, Min: 2, Max: 100, Step: 1, Integer: true},
		{Name: ParamMultiplier, Min: 0.5, Max: 10, Step: 0.1},
	},
}

// Ranges are f's parameters with their ranges, in a fixed order (nil for an unknown family).
func (f Family) Ranges() []Range { return append([]Range(nil), ranges[f]...) }

// Defaults is a common parameter set of f: EMA 12/26 (the MACD pair), RSI 14 with 30/70
// (Wilder's levels), Donchian 20/10 (the Turtle system's), Bollinger 20 with 2 standard
// deviations (Bollinger's own), MACD 12/26/9 (Appel's), Supertrend ATR 10 with 3 ATRs (the
// usual default, TradingView's).
func (f Family) Defaults() Params {
	switch f {
	case EMACrossover:
		return Params{FastPeriod: 12, SlowPeriod: 26}
	case RSIReversion:
		return Params{Period: 14, Oversold: 30, Overbought: 70}
	case DonchianBreakout:
		return Params{Period: 20, ExitPeriod: 10}
	case BollingerReversion:
		return Params{Period: 20, StdDev: 2}
	case MACDCrossover:
		return Params{FastPeriod: 12, SlowPeriod: 26, SignalPeriod: 9}
	case Supertrend:
		return Params{Period: 10, Multiplier: 3}
	}
	return Params{}
}

// WithDefaults is s with every parameter of its family that is zero taken from Defaults.
func (s Spec) WithDefaults() Spec {
	d := s.Family.Defaults()
	for _, r := range ranges[s.Family] {
		if s.Params.get(r.Name) == 0 {
			s.Params.set(r.Name, d.get(r.Name))
		}
	}
	return s
}

// paramNames lists every parameter, in the order of Params' fields.
var paramNames = []string{ParamFastPeriod, ParamSlowPeriod, ParamPeriod, ParamOversold, ParamOverbought, ParamExitPeriod,
	ParamStdDev, ParamSignalPeriod, ParamMultiplier}

func (p Params) get(name string) float64 {
	switch name {
	case ParamFastPeriod:
		return float64(p.FastPeriod)
	case ParamSlowPeriod:
		return float64(p.SlowPeriod)
	case ParamPeriod:
		return float64(p.Period)
	case ParamOversold:
		return p.Oversold
	case ParamOverbought:
		return p.Overbought
	case ParamExitPeriod:
		return float64(p.ExitPeriod)
	case ParamStdDev:
		return p.StdDev
	case ParamSignalPeriod:
		return float64(p.SignalPeriod)
	case ParamMultiplier:
		return p.Multiplier
	}
	return 0
}

func (p *Params) set(name string, v float64) {
	switch name {
	case ParamFastPeriod:
		p.FastPeriod = int(v)
	case ParamSlowPeriod:
		p.SlowPeriod = int(v)
	case ParamPeriod:
		p.Period = int(v)
	case ParamOversold:
		p.Oversold = v
	case ParamOverbought:
		p.Overbought = v
	case ParamExitPeriod:
		p.ExitPeriod = int(v)
	case ParamStdDev:
		p.StdDev = v
	case ParamSignalPeriod:
		p.SignalPeriod = int(v)
	case ParamMultiplier:
		p.Multiplier = v
	}
}

// Get is the value of the parameter named name (a Range's Name), 0 for an unknown name.
func (p Params) Get(name string) float64 { return p.get(name) }

// Set sets the parameter named name (a Range's Name); an Integer parameter takes v's whole
// part. An unknown name is ignored.
func (p *Params) Set(name string, v float64) { p.set(name, v) }

func invalid(name, format string, args ...any) *errs.Error {
	return errs.New(errs.InvalidParameter, name+" "+format, args...).WithDetails(map[string]any{"parameter": name})
}

// Validate checks the family, timeframe, symbol and parameters: each parameter of the
// family within its Range, none of another family's set, and the cross-field rules
// (fastPeriod < slowPeriod for both crossovers, oversold < overbought, exitPeriod <=
// period). A failure is an *errs.Error with code INVALID_PARAMETER whose message starts with
// the parameter's name.
func (s Spec) Validate() error {
	if !s.Family.Valid() {
		names := make([]string, len(families))
		for i, f := range families {
			names[i] = string(f)
		}
		return invalid("family", "must be one of %s (got %q)", strings.Join(names, ", "), clip(string(s.Family)))
	}
	if _, err := marketdata.TimeframeDuration(s.Timeframe); err != nil {
		return invalid("timeframe", "must be one of %s (got %q)", strings.Join(marketdata.Timeframes(), ", "), clip(s.Timeframe))
	}
	if base, quote, ok := strings.Cut(s.Symbol, "/"); !ok || !symbolPart(base) || !symbolPart(quote) {
		return invalid("symbol", "must be BASE/QUOTE in capitals, e.g. BTC/USDT (got %q)", clip(s.Symbol))
	}
	own := ranges[s.Family]
	for _, name := range paramNames {
		v := s.Params.get(name)
		r, ok := find(own, name)
		if !ok {
			if v != 0 {
				return invalid(name, "is not a parameter of %s", s.Family)
			}
			continue
		}
		if math.IsNaN(v) || v < r.Min || v > r.Max {
			return invalid(name, "must be between %s and %s (got %s)", num(r.Min), num(r.Max), num(v))
		}
	}
	p := s.Params
	switch s.Family {
	case EMACrossover, MACDCrossover:
		if p.FastPeriod >= p.SlowPeriod {
			return invalid(ParamFastPeriod, "must be below slowPeriod (%d >= %d)", p.FastPeriod, p.SlowPeriod)
		}
	case RSIReversion:
		if p.Oversold >= p.Overbought {
			return invalid(ParamOversold, "must be below overbought (%s >= %s)", num(p.Oversold), num(p.Overbought))
		}
	case DonchianBreakout:
		if p.ExitPeriod > p.Period {
			return invalid(ParamExitPeriod, "must not exceed period (%d > %d)", p.ExitPeriod, p.Period)
		}
	}
	return nil
}

func find(rs []Range, name string) (Range, bool) {
	for _, r := range rs {
		if r.Name == name {
			return r, true
		}
	}
	return Range{}, false
}

func symbolPart(s string) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for _, c := range s {
		if (c < 'A' || c > 'Z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

func num(v float64) string { return fmt.Sprintf("%g", v) }

func clip(s string) string {
	if len(s) > 32 {
		return s[:32]
	}
	return s
}

// Signal is what a strategy decides at a closed candle: a bit set, because a crossover
// both exits one side and enters the other.
type Signal uint8

const (
	ExitLong Signal = 1 << iota
	ExitShort
	EnterLong
	EnterShort
)

// None is no signal.
const None Signal = 0

// Has reports whether every bit of x is set in s.
func (s Signal) Has(x Signal) bool { return x != 0 && s&x == x }

var signalNames = [...]string{"exit_long", "exit_short", "enter_long", "enter_short"}

// String is the set bits joined by "|" in the order of the constants
// ("exit_long|enter_short"), or "none".
func (s Signal) String() string {
	if s == 0 {
		return "none"
	}
	var b strings.Builder
	for i, name := range signalNames {
		if s&(1<<i) != 0 {
			if b.Len() > 0 {
				b.WriteByte('|')
			}
			b.WriteString(name)
		}
	}
	if rest := s >> len(signalNames); rest != 0 {
		if b.Len() > 0 {
			b.WriteByte('|')
		}
		fmt.Fprintf(&b, "0x%x", uint8(rest)<<len(signalNames))
	}
	return b.String()
}

// Bar is one closed candle's prices as float64 (indicators are statistics).
type Bar struct {
	Open, High, Low, Close, Volume float64
}

// BarOf is candle c as a Bar. The live runner and the backtest both convert with it, so
// they feed a strategy the same float64 values.
func BarOf(c marketdata.Candle) Bar {
	return Bar{Open: c.Open.InexactFloat64(), High: c.High.InexactFloat64(), Low: c.Low.InexactFloat64(),
		Close: c.Close.InexactFloat64(), Volume: c.Volume.InexactFloat64()}
}

// Strategy is one instance's indicator state. New allocates; Next never allocates.
type Strategy interface {
	// Warmup is how many closed candles it needs before it can emit a signal: Next returns
	// None for the first Warmup()-1 candles, and the Warmup()-th is the first that can
	// carry a signal.
	Warmup() int
	// Next consumes the next closed candle, oldest first, and returns the signal decided at
	// its close. A strategy sees a candle only when it has closed (no look-ahead).
	Next(b Bar) Signal
}

// New validates s and builds its strategy.
func New(s Spec) (Strategy, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	p := s.Params
	switch s.Family {
	case EMACrossover:
		return newEMACross(p.FastPeriod, p.SlowPeriod), nil
	case RSIReversion:
		return newRSIReversion(p.Period, p.Oversold, p.Overbought), nil
	case DonchianBreakout:
		return newDonchian(p.Period, p.ExitPeriod), nil
	case BollingerReversion:
		return newBollinger(p.Period, p.StdDev), nil
	case MACDCrossover:
		return newMACDCross(p.FastPeriod, p.SlowPeriod, p.SignalPeriod), nil
	default:
		return newSupertrend(p.Period, p.Multiplier), nil
	}
}

// settleTolerance is the weight below which an exponential indicator's seed counts as
// forgotten: after settle(α) more candles, a fresh instance and one that has run for ever
// differ by less than this share of the difference of their seeds.
const settleTolerance = 1e-6

// maxLookback is the most candles the live runner reads in one request
// (marketdata.MaxLimit), less the open candle.
const maxLookback = marketdata.MaxLimit - 1

// settle is how many candles an exponential average of smoothing α needs for its seed's
// weight, (1-α)^k, to fall below settleTolerance.
func settle(alpha float64) int {
	return int(math.Ceil(math.Log(settleTolerance) / math.Log1p(-alpha)))
}

// Lookback is how many closed candles the live runner feeds a fresh Strategy to decide the
// signal of the newest one: Warmup for the window families (Donchian, Bollinger), whose
// signal is a function of that many candles, so the runner and a backtest agree exactly;
// Warmup plus settle(α) for the exponential ones (EMA α = 2/(slow+1), Wilder's RSI α =
// 1/period), after which their indicators agree within settleTolerance of the seeds'
// difference. MACD chains two: settle(2/(slow+1)) makes the MACD line agree (the fast EMA,
// of larger α, settles first), and settle(2/(signal+1)) more makes the signal line's seed,
// and the MACD line's earlier differences it averaged, fade as much. Supertrend gets the
// cap: its final bands (a ratchet) and its trend (a flip-flop) are path-dependent, so no
// window determines them; a fresh instance agrees with a long run from the first candle
// whose close leaves both instances' bands once the ATR has settled, which on walks took
// up to 350 candles with the defaults and more than 1,000 with a multiplier of 5 on a
// range-bound series; the more candles, the fewer disagreements. Capped at
// marketdata.MaxLimit - 1; 0 for an invalid spec.
func (s Spec) Lookback() int {
	if s.Validate() != nil {
		return 0
	}
	st, _ := New(s)
	n := st.Warmup()
	switch s.Family {
	case EMACrossover:
		n += settle(2 / float64(s.Params.SlowPeriod+1))
	case RSIReversion:
		n += settle(1 / float64(s.Params.Period))
	case MACDCrossover:
		n += settle(2/float64(s.Params.SlowPeriod+1)) + settle(2/float64(s.Params.SignalPeriod+1))
	case Supertrend:
		n = maxLookback
	}
	return min(n, maxLookback)
}
