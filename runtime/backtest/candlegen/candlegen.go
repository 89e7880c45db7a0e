// Package candlegen generates realistic, deterministic one-minute candles for backtests,
// benchmarks, the backtest CLI and the local stack: trends, ranges and volatility clusters
// from a seed, prices on the market's tick.
//
// # Model
//
// The price moves each minute by a return of drift + σₜ·z, z approximately standard
// normal. σₜ follows GARCH(1,1), σ²ₜ = ω + α·ε²ₜ₋₁ + β·σ²ₜ₋₁ (α 0.08, β 0.90), whose
// long-run level is a daily volatility of 3 % spread over 1440 minutes, so calm and wild
// stretches cluster as they do on real markets. A Markov chain switches between three
// regimes that last about 2000 minutes on average: an up trend and a down trend (drift ±3 %
// a day) and a range (mean reversion towards the price at which the range began). Each
// minute is walked in four sub-steps for its high and low; the open is the previous close.
// Volume is the symbol's mean volume a minute, larger when the minute's range is wide,
// with noise.
//
// The arithmetic is additions, multiplications, divisions and square roots only (IEEE
// exact rounding on every machine, with products converted explicitly so that no FMA fuses
// them), and the random numbers come from math/rand/v2's PCG, a specified generator: a seed
// gives the same candles on every machine and Go release.
package candlegen

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/marketdata"
)

// DefaultStart is the first candle's open time when Options.Start is zero: 2024-01-01 UTC.
var DefaultStart = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// Options configure Generate.
type Options struct {
	// Seed selects the series.
	Seed uint64
	// Count is the number of candles.
	Count int
	// Symbol is one of marketdata.DefaultSimulatedMarkets() (the paper catalogue's symbols):
	// its initial price, tick, step and volume are the series'.
	Symbol string
	// Start is the first open time (default DefaultStart), truncated to the minute.
	Start time.Time
}

// The model's constants (see the package comment).
const (
	minutesPerDay = 1440
	dailyVol      = 0.03
	garchAlpha    = 0.08
	garchBeta     = 0.90
	trendPerDay   = 0.03
	meanRegime    = 2000 // minutes
	reversion     = 0.002
	subSteps      = 4
)

type regime int

const (
	ranging regime = iota
	up
	down
)

// Generate returns o.Count one-minute candles of o.Symbol, oldest first.
func Generate(o Options) ([]marketdata.Candle, error) {
	var m *marketdata.SimulatedMarket
	for _, sm := range marketdata.DefaultSimulatedMarkets() {
		if sm.Symbol == o.Symbol {
			m = &sm
			break
		}
	}
	if m == nil {
		return nil, fmt.Errorf("candlegen: unknown symbol %q", o.Symbol)
	}
	if o.Count < 0 {
		return nil, fmt.Errorf("candlegen: negative count %d", o.Count)
	}
	start := o.Start
	if start.IsZero() {
		start = DefaultStart
	}
	t0 := start.Truncate(time.Minute).UnixMilli()
	tick, step := m.Tick.InexactFloat64(), m.Step.InexactFloat64()
	volPM := m.VolumePerMinute.InexactFloat64()

	px, amt := gridOf(m.Tick), gridOf(m.Step)
	g := gen{rng: rand.New(rand.NewPCG(o.Seed, 0x5851f42d4c957f2d))}
	longRun := dailyVol * dailyVol / minutesPerDay
	omega := longRun * (1 - garchAlpha - garchBeta)
	variance := longRun
	trend := trendPerDay / minutesPerDay
	p := m.Price.InexactFloat64()
	anchor := p
	reg := ranging
	prev := max(int64(math.Round(p/tick)), 1)

	out := make([]marketdata.Candle, o.Count)
	for i := range out {
		if g.rng.Float64() < 1.0/meanRegime {
			reg = (reg + 1 + regime(g.rng.IntN(2))) % 3
			anchor = p
		}
		var drift float64
		switch reg {
		case up:
			drift = trend
		case down:
			drift = -trend
		default:
			drift = -reversion * (p/anchor - 1)
		}
		sigma := math.Sqrt(variance)
		sub := sigma / 2 // four sub-steps of variance σ²/4 add up to σ²
		hi, lo := prev, prev
		var eps float64
		for range subSteps {
			e := float64(sub * g.normal())
			eps += e
			p = float64(p * (1 + drift/subSteps + e))
			t := g.ticks(p, tick)
			hi, lo = max(hi, t), min(lo, t)
		}
		closeT := g.ticks(p, tick)
		variance = omega + float64(garchAlpha*float64(eps*eps)) + float64(garchBeta*variance)
		// Volume: the mean, times the range over its typical size (two σ of the price),
		// times noise, never below a tenth of the mean; in whole steps.
		rangeRatio := float64(hi-lo) * tick / float64(2*float64(sigma*p))
		noise := max(0.1, 1+float64(0.3*g.normal()))
		vol := float64(volPM * float64(float64(0.5+float64(0.5*rangeRatio))*noise))
		ts := t0 + int64(i)*60000
		out[i] = marketdata.Candle{Timestamp: ts, Time: ts / 1000,
			Open: px.of(prev), High: px.of(hi), Low: px.of(lo), Close: px.of(closeT),
			Volume: amt.of(max(int64(vol/step), 1))}
		prev = closeT
	}
	return out, nil
}

type gen struct{ rng *rand.Rand }

// normal is approximately standard normal: the Irwin-Hall sum of the four 16-bit quarters
// of a 64-bit random number, rescaled to variance 1 (its tails stop at ±3.46; GARCH gives
// the series its fat tails).
func (g gen) normal() float64 {
	h := g.rng.Uint64()
	s := h&0xffff + h>>16&0xffff + h>>32&0xffff + h>>48
	return (float64(s) - 2*65535) * gaussNorm
}

// gaussNorm is 1 / the standard deviation of the sum of four uniforms on {0..65535}.
var gaussNorm = 1 / math.Sqrt(4*(65536.0*65536.0-1)/12)

// ticks is price p in whole ticks, at least one.
func (gen) ticks(p, tick float64) int64 { return max(int64(math.Round(p/tick)), 1) }

// grid turns whole units into decimals: n × 10^exp when the unit is a power of ten (one
// allocation instead of a multiplication's three), else n × unit.
type grid struct {
	unit  decimal.Decimal
	exp   int32
	power bool
}

func gridOf(unit decimal.Decimal) grid {
	g := grid{unit: unit, exp: unit.Exponent()}
	g.power = unit.Equal(decimal.New(1, g.exp))
	return g
}

func (g grid) of(n int64) decimal.Decimal {
	if g.power {
		return decimal.New(n, g.exp)
	}
	return decimal.New(n, 0).Mul(g.unit)
}
