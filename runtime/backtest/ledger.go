package backtest

import (
	"math"
	"math/bits"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/signal"
)

// ledger is the run's money in int64 fixed point: prices in ticks, amounts in steps, and
// balances, fees, margins and PnL in units of 10^-scale, where scale is the most decimals
// any of them takes (the initial balance's, amount × price × fee rate's, and the 8 places
// of a futures margin and of a funding payment). It computes what runtime/order's sizing
// and runtime/position's margin, fees, settlement and liquidation price compute on
// decimals, to the digit:
// products and sums are exact in integers, and each decimal division (16 places, then a
// rounding to the step, the tick or 8 places) is reproduced from the integer quotient and
// remainder. newLedger refuses a config it cannot represent (a tick or step that is not a
// power of ten, more decimals than int64 holds); an operation that would overflow sets
// failed, and the run is then made again on decimals (docs/decisions.md, "Strategies and
// backtests").
type ledger struct {
	failed bool
	s      *Series
	// futures: a futures market; costs: the run has Config.Costs.
	futures, costs bool
	// dT, dS and dF are the decimals of the tick, the step and the fee rates (the larger of
	// the maker's and the taker's); scale those of money.
	dT, dS, dF, scale int
	maker, taker      int64 // fee rates × 10^dF
	lev               int64
	// pct: the entry size is size% of the available balance, size × 10^-dN; else a fixed
	// amount of fixedK steps.
	pct         bool
	size        int64
	dN          int
	fixedK      int64
	minK, minN  int64 // minimum amount in steps; minimum notional × 10^(dS+dT), rounded up
	sl, tp      exitRule
	offset      int64 // limit offset × 10^dO (offset and dO: 0 for none)
	dO          int
	mmrM, mmrDn int64 // 10^dM × (1 − mmr) and 10^dM × (1 + mmr)
	dM          int
	// slip: the run has slippage, capped at capN × 10^-dC of the reference price.
	slip bool
	capN int64
	dC   int
	// rates are the funding settlements' rates × 10^dR (c.funding's, in order).
	rates []int64
	dR    int

	balance, equity, peak int64
	// The open position: k steps entered at entryT ticks; cost, margin, entry fee, entry
	// slippage cost and the funding paid so far in money.
	k, entryT, cost, margin, entryFee, openedAt int64
	entrySlip, fund                             int64
	side                                        position.Side
	// The closed trades' gross PnL, fees, slippage cost and funding, in a run with costs.
	gross, fees, slipped, funded int64

	trades []ledgerTrade
	points []ledgerPoint
}

// exitRule is a stop-loss or take-profit in integers.
type exitRule struct {
	set, percent bool
	// A percentage p is pct × 10^-dP; base is 10^(dP+2), so the level is
	// entry × (base ∓ pct) / base.
	pct, base int64
	// level is an absolute price's level in ticks (the decimal path's, clamped at 0); an
	// entry at t ticks is refused unless t > floor (for an exit below the entry) or
	// t < ceil (above), floor and ceil being the absolute price in ticks.
	level, floor, ceil int64
}

type ledgerTrade struct {
	side             position.Side
	entryAt, exitAt  int64
	entryT, exitT, k int64
	fees, net        int64
	slip, fund       int64
	reason           string
}

type ledgerPoint struct{ at, equity, drawdown int64 }

var pow10 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return
}()

// decimalsOf is d's decimal places and d × 10^places as an int64; ok false when d is
// negative, has more than maxPlaces places or does not fit.
func decimalsOf(d decimal.Decimal, maxPlaces int) (int, int64, bool) {
	places := max(int(-d.Exponent()), 0)
	if places > maxPlaces || d.IsNegative() {
		return 0, 0, false
	}
	v := d.Shift(int32(places))
	if !v.IsInteger() || v.GreaterThan(decimal.NewFromInt(math.MaxInt64)) {
		return 0, 0, false
	}
	return places, v.IntPart(), true
}

// powerOfTen is the decimals of a tick or step that is 10^-n (n >= 0).
func powerOfTen(d decimal.Decimal) (int, bool) {
	e := d.Exponent()
	if e > 0 || !d.Equal(decimal.New(1, e)) {
		return 0, false
	}
	return int(-e), true
}

// ceilShift is ceil(d × 10^n) clamped to int64.
func ceilShift(d decimal.Decimal, n int) int64 {
	v := d.Shift(int32(n)).Ceil()
	if v.GreaterThan(decimal.NewFromInt(math.MaxInt64)) {
		return math.MaxInt64
	}
	return v.IntPart()
}

// newLedger is c's integer ledger on s, or nil when c cannot be represented exactly.
func newLedger(s *Series, c config) *ledger {
	m := s.market
	var ok bool
	l := &ledger{s: s, futures: m.Kind == exchange.Futures, costs: c.Costs != nil, lev: int64(c.lev)}
	if l.dT, ok = powerOfTen(m.TickSize); !ok || l.dT > 8 {
		// Beyond 8 places the trade's entry price (position.avg, 8 places) differs from
		// the fill price.
		return nil
	}
	if l.dS, ok = powerOfTen(m.StepSize); !ok || l.dS > 16 {
		return nil
	}
	if !l.costsOf(c) {
		return nil
	}
	dB, bal, ok := decimalsOf(c.InitialBalance, 18)
	if !ok {
		return nil
	}
	l.scale = max(dB, l.dS+l.dT+l.dF)
	if (l.futures && c.lev > 1) || len(l.rates) > 0 {
		l.scale = max(l.scale, position.Places)
	}
	if l.scale > 18 {
		return nil
	}
	if l.balance = l.shift(bal, l.scale-dB); l.failed {
		return nil
	}
	l.equity, l.peak = l.balance, l.balance
	if c.PositionSize.Percent {
		l.pct = true
		if l.dN, l.size, ok = decimalsOf(c.PositionSize.Value.Decimal, 14); !ok {
			return nil
		}
	} else {
		k := m.RoundAmount(c.PositionSize.Value.Decimal).Shift(int32(l.dS))
		if !k.IsInteger() || k.GreaterThan(decimal.NewFromInt(math.MaxInt64)) {
			return nil
		}
		l.fixedK = k.IntPart()
	}
	l.minK = ceilShift(m.MinQty, l.dS)
	l.minN = ceilShift(m.MinNotional, l.dS+l.dT)
	if !l.sl.of(c.StopLoss, m, l.dT) || !l.tp.of(c.TakeProfit, m, l.dT) {
		return nil
	}
	if o := c.LimitOffset; o != nil {
		if l.dO, l.offset, ok = decimalsOf(*o, 14); !ok {
			return nil
		}
	}
	var mmr int64
	if l.dM, mmr, ok = decimalsOf(position.MaintenanceMarginRate, 16); !ok {
		return nil
	}
	l.mmrDn, l.mmrM = int64(pow10[l.dM])-mmr, int64(pow10[l.dM])+mmr
	return l
}

// of sets r from a stop-loss or take-profit a (nil: none) on market m, whose tick has dT
// places; false when it cannot be held exactly.
func (r *exitRule) of(a *signal.Amount, m exchange.MarketInfo, dT int) bool {
	if a == nil {
		return true
	}
	r.set, r.percent = true, a.Percent
	if a.Percent {
		// PriceFromPercent divides by 100 at 16 places: exact up to 14 places.
		dP, p, ok := decimalsOf(a.Value.Decimal, 14)
		if !ok {
			return false
		}
		r.pct, r.base = p, int64(pow10[dP+2])
		return true
	}
	level := m.RoundPrice(a.Value.Decimal).Div(m.TickSize)
	ticks := a.Value.Shift(int32(dT))
	if level.GreaterThan(maxTicks) || ticks.GreaterThan(maxTicks) {
		return false
	}
	r.level = max(level.IntPart(), 0)
	r.floor, r.ceil = ticks.Floor().IntPart(), ticks.Ceil().IntPart()
	return true
}

// costsOf sets the fee rates at their common places dF, the slippage cap and the funding
// rates at theirs, dR; false when one cannot be held exactly (or a funding payment's
// product, dS + dT + dR places, has too many to round in 128 bits).
func (l *ledger) costsOf(c config) bool {
	dMk, mk, ok1 := decimalsOf(c.maker, 18)
	dTk, tk, ok2 := decimalsOf(c.taker, 18)
	if !ok1 || !ok2 {
		return false
	}
	l.dF = max(dMk, dTk)
	l.maker, l.taker = l.shift(mk, l.dF-dMk), l.shift(tk, l.dF-dTk)
	if sl := c.slip; sl != nil {
		if l.dC, l.capN, l.slip = decimalsOf(sl.Cap, 18); !l.slip || l.s.vol == nil {
			// A cap beyond 18 places, or volumes beyond int64 (Series.volumes).
			return false
		}
	}
	if len(c.funding) == 0 {
		return !l.failed
	}
	// The rates as Series.volumes holds volumes: coefficient × 10^(dR + exponent), read
	// without a decimal operation (a year of settlements is a thousand of them a run).
	for _, f := range c.funding {
		l.dR = max(l.dR, int(-f.Rate.Exponent()))
	}
	if l.dR > 18 || l.dS+l.dT+l.dR-position.Places >= len(pow10) {
		return false
	}
	l.rates = make([]int64, len(c.funding))
	for j, f := range c.funding {
		d := l.dR + int(f.Rate.Exponent())
		if f.Rate.NumDigits()+d > 18 {
			return false
		}
		l.rates[j] = f.Rate.CoefficientInt64() * int64(pow10[d])
	}
	return !l.failed
}

// shift is v × 10^n (n >= 0), failing on overflow.
func (l *ledger) shift(v int64, n int) int64 {
	if n < 0 || n >= len(pow10) {
		l.failed = true
		return 0
	}
	return l.mul(v, int64(pow10[n]))
}

// mul is a × b for a, b >= 0, failing on overflow.
func (l *ledger) mul(a, b int64) int64 {
	if a < 0 || b < 0 {
		l.failed = true
		return 0
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		l.failed = true
		return 0
	}
	return int64(lo)
}

// add is a + b, failing on overflow.
func (l *ledger) add(a, b int64) int64 {
	s := a + b
	if (s > a) != (b > 0) {
		l.failed = true
	}
	return s
}

// sub is a − b, failing on overflow.
func (l *ledger) sub(a, b int64) int64 {
	s := a - b
	if (s < a) != (b > 0) {
		l.failed = true
	}
	return s
}

// quo is n × 10^up / d with the decimal library's division: the quotient rounded half away
// from zero at 16 − digits places beyond the unit, then rounded down (ceil false) or up to
// the unit. n >= 0, d > 0; digits from 0 to 16.
func (l *ledger) quo(n int64, up int, d int64, digits int, ceil bool) int64 {
	if n < 0 {
		l.failed = true
		return 0
	}
	return l.quo128(u128{lo: uint64(n)}, up, d, digits, ceil)
}

// quo128 is quo of a 128-bit n.
func (l *ledger) quo128(n u128, up int, d int64, digits int, ceil bool) int64 {
	if d <= 0 || up < 0 || up >= len(pow10) || digits < 0 || digits > 16 {
		l.failed = true
		return 0
	}
	n = l.mul128(n, pow10[up])
	hi, lo := n.hi, n.lo
	if l.failed || hi >= uint64(d) {
		l.failed = true
		return 0
	}
	q, r := bits.Div64(hi, lo, uint64(d))
	if r != 0 {
		// The fraction r/d rounded at 16 − digits places: it rounds up to a whole unit when
		// r/d >= 1 − ½·10^-k, and to something above zero when r/d >= ½·10^-k.
		m := 2 * pow10[16-digits]
		rh, rl := bits.Mul64(r, m)
		var carry bool
		if ceil {
			carry = rh > 0 || rl >= uint64(d)
		} else {
			th, tl := bits.Mul64(m-1, uint64(d))
			carry = rh > th || (rh == th && rl >= tl)
		}
		if carry {
			q++
		}
	}
	if q > math.MaxInt64 {
		l.failed = true
		return 0
	}
	return int64(q)
}

// u128 is an unsigned 128-bit integer.
type u128 struct{ hi, lo uint64 }

// mul128 is n × m, failing beyond 128 bits.
func (l *ledger) mul128(n u128, m uint64) u128 {
	h1, lo := bits.Mul64(n.lo, m)
	h2, l2 := bits.Mul64(n.hi, m)
	hi, carry := bits.Add64(h1, l2, 0)
	if h2 != 0 || carry != 0 {
		l.failed = true
	}
	return u128{hi, lo}
}

// wide is a × b for a, b >= 0 in 128 bits.
func (l *ledger) wide(a, b int64) u128 {
	if a < 0 || b < 0 {
		l.failed = true
		return u128{}
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	return u128{hi, lo}
}

// roundHalf is n / 10^k rounded half away from zero, as the decimal library rounds a
// quotient at 16 places.
func (l *ledger) roundHalf(n u128, k int) u128 {
	if k < 0 || k >= len(pow10) {
		l.failed = true
		return u128{}
	}
	p := pow10[k]
	qh, rh := n.hi/p, n.hi%p
	ql, r := bits.Div64(rh, n.lo, p)
	if r >= p-r {
		var c uint64
		ql, c = bits.Add64(ql, 1, 0)
		qh += c
	}
	return u128{qh, ql}
}

// money is an amount × 10^-places as money (places <= scale).
func (l *ledger) money(v int64, places int) int64 { return l.shift(v, l.scale-places) }

// notional is k steps at t ticks, in money.
func (l *ledger) notional(k, t int64) int64 { return l.money(l.mul(k, t), l.dS+l.dT) }

// feeOf is the fee at rate (× 10^dF) on k steps at t ticks, in money (position.Fee).
func (l *ledger) feeOf(k, t, rate int64) int64 {
	return l.money(l.mul(l.mul(k, t), rate), l.dS+l.dT+l.dF)
}

// marginOf is position.InitialMargin of the notional of k steps at t ticks, in money.
func (l *ledger) marginOf(k, t int64) int64 {
	if l.lev <= 1 {
		return l.notional(k, t)
	}
	// notional / lev at 16 places, rounded up to 8.
	n, p := l.mul(k, t), l.dS+l.dT
	var q int64
	if p <= position.Places {
		q = l.quo(n, position.Places-p, l.lev, position.Places, true)
	} else {
		q = l.quo(n, 0, l.mul(l.lev, int64(pow10[p-position.Places])), position.Places, true)
	}
	return l.money(q, position.Places)
}

// required is what entering k steps at t ticks with a fee at rate takes from the balance
// (runtime/order's).
func (l *ledger) required(k, t, rate int64) int64 {
	return l.add(l.marginOf(k, t), l.feeOf(k, t, rate))
}

// steps is the base amount num × 10^-numPlaces / (den × 10^-denPlaces) as the decimal
// library divides it (16 places), rounded down to the step (exchange.RoundAmount).
func (l *ledger) steps(num u128, numPlaces int, den int64, denPlaces int) int64 {
	// quotient × 10^dS = num × 10^(denPlaces + dS − numPlaces) / den
	e := denPlaces + l.dS - numPlaces
	if e >= 0 {
		return l.quo128(num, e, den, l.dS, false)
	}
	return l.quo128(num, 0, l.mul(den, l.shift(1, -e)), l.dS, false)
}

// entrySteps is order.EntryAmount at t ticks with a fee at rate in steps, 0 when it
// refuses the entry.
func (l *ledger) entrySteps(t, rate int64) int64 {
	k := l.fixedK
	if l.pct {
		if l.balance <= 0 {
			// Funding can take the free balance below zero: the budget is not positive.
			return 0
		}
		// budget = available × size / 100 (16 places) × leverage.
		bp := l.scale + l.dN + 2
		b := l.wide(l.balance, l.size)
		if bp > 16 {
			b, bp = l.roundHalf(b, bp-16), 16
		}
		k = l.steps(l.mul128(b, uint64(l.lev)), bp, t, l.dT)
		if k > 0 && l.required(k, t, rate) > l.balance {
			// The fee (and margin rounding) take it past the balance: available × lev /
			// (price × (1 + fee × lev)).
			per := l.mul(t, l.add(int64(pow10[l.dF]), l.mul(rate, l.lev)))
			k = l.steps(l.wide(l.balance, l.lev), l.scale, per, l.dT+l.dF)
			for i := 0; i < 3 && k > 0 && l.required(k, t, rate) > l.balance; i++ {
				k--
			}
		}
	}
	if k <= 0 || k < l.minK || l.mul(k, t) < l.minN {
		return 0
	}
	return k
}

// level is an exit's level in ticks for a position on side entered at t ticks; 0 for none.
func (l *ledger) level(r *exitRule, side position.Side, t int64, stopLoss bool) int64 {
	if !r.set {
		return 0
	}
	if !r.percent {
		return r.level
	}
	f := r.base + r.pct
	if (side == position.Long) == stopLoss {
		f = r.base - r.pct
	}
	if f <= 0 {
		return 0
	}
	return l.quo(l.mul(t, f), 0, r.base, 0, false)
}

// refused is order.CheckExit for an entry at t ticks.
func (r *exitRule) refused(side position.Side, t int64, stopLoss bool) bool {
	if !r.set || r.percent {
		return false
	}
	if (side == position.Long) == stopLoss {
		return t <= r.floor
	}
	return t >= r.ceil
}

// open enters side in candle i at ref ticks (ms at) as engine.open does; ok false when the
// entry is skipped. It returns the stop-loss, take-profit and liquidation levels in ticks.
func (l *ledger) open(i int, side position.Side, ref, at int64, maker bool, bound int64) (sl, tp, liq int64, ok bool) {
	rate := l.taker
	if maker {
		rate = l.maker
	}
	k, t := l.sized(i, ref, rate, side == position.Long, maker, bound)
	if k == 0 || l.sl.refused(side, t, true) || l.tp.refused(side, t, false) {
		return 0, 0, 0, false
	}
	fee, margin := l.feeOf(k, t, rate), l.marginOf(k, t)
	required := l.add(margin, fee)
	if l.failed || required > l.balance {
		return 0, 0, 0, false
	}
	l.balance = l.sub(l.balance, required)
	l.k, l.entryT, l.cost, l.margin, l.entryFee, l.openedAt, l.side = k, t, l.notional(k, t), margin, fee, at, side
	l.entrySlip, l.fund = l.slipCost(k, t, ref), 0
	sl, tp = l.level(&l.sl, side, t, true), l.level(&l.tp, side, t, false)
	if l.futures && (side == position.Short || l.lev > 1) {
		liq = l.liquidation()
	}
	return sl, tp, liq, !l.failed
}

// sized is engine.sizeDecimal in steps: the amount entrySteps sizes at ref and the fill
// price, slipped for a taker fill, the amount sized again at the slipped price when the
// balance does not pay for it there; k 0 when the sizing refuses the entry.
func (l *ledger) sized(i int, ref, rate int64, buy, maker bool, bound int64) (k, t int64) {
	k = l.entrySteps(ref, rate)
	if k == 0 || !l.slip || maker {
		return k, ref
	}
	t = slipped(ref, l.slipTicks(i, k, ref), buy, bound)
	if l.required(k, t, rate) > l.balance {
		if k = l.entrySteps(t, rate); k == 0 {
			return 0, 0
		}
		t = slipped(ref, l.slipTicks(i, k, ref), buy, bound)
	}
	return k, t
}

// slipTicks is engine.slipTicks for k steps, in integers: with the volume v × 10^-dV,
// min(ceil(range × k × 10^(dV−dS) / 2v), ceil(capN × ref / 10^dC)), range in ticks.
func (l *ledger) slipTicks(i int, k, ref int64) int64 {
	s := l.s
	capT := l.ceilDiv(l.wide(l.capN, ref), pow10[l.dC])
	v := s.vol[i]
	if v <= 0 {
		return capT
	}
	num, den := l.wide(s.high[i]-s.low[i], k), l.mul(2, v)
	if e := s.dV - l.dS; e >= 0 {
		num = l.mul128(num, pow10[e])
	} else {
		den = l.mul(den, l.shift(1, -e))
	}
	if l.failed {
		return 0
	}
	return min(l.ceilDiv(num, uint64(den)), capT)
}

// ceilDiv is ceil(n / d) for d > 0, MaxInt64 when that is more.
func (l *ledger) ceilDiv(n u128, d uint64) int64 {
	if d == 0 {
		l.failed = true
		return 0
	}
	if n.hi >= d {
		return math.MaxInt64
	}
	q, r := bits.Div64(n.hi, n.lo, d)
	if q >= math.MaxInt64 {
		return math.MaxInt64
	}
	if r != 0 {
		q++
	}
	return int64(q)
}

// slipCost is what slippage cost a fill of k steps at t ticks against ref ticks, in money.
func (l *ledger) slipCost(k, t, ref int64) int64 {
	if t == ref {
		return 0
	}
	return l.money(l.mul(max(t-ref, ref-t), k), l.dS+l.dT)
}

// pay books funding settlement j on the open position at t ticks as engine.settle does:
// |rate| × k × t (dS + dT + dR places) rounded half away from zero to 8 places, paid by a
// long at a positive rate and by a short at a negative one, received otherwise.
func (l *ledger) pay(j int, t int64) {
	r := l.rates[j]
	neg := r < 0
	if neg {
		r = -r
	}
	n := l.mul128(l.wide(l.k, t), uint64(r))
	if p := l.dS + l.dT + l.dR; p > position.Places {
		n = l.roundHalf(n, p-position.Places)
	} else {
		n = l.mul128(n, pow10[position.Places-p])
	}
	if n.hi != 0 || n.lo > math.MaxInt64 {
		l.failed = true
		return
	}
	paid := l.money(int64(n.lo), position.Places)
	if neg != (l.side == position.Short) {
		paid = -paid
	}
	l.balance, l.fund = l.sub(l.balance, paid), l.add(l.fund, paid)
}

// liquidation is position.LiquidationPrice of the open position in ticks: the floor (a
// long) or the ceiling (a short) of the 8-place price over the tick; 0 for none.
func (l *ledger) liquidation() int64 {
	// price × 10^8 = (cost ∓ margin) × 10^(8 − scale + dS + dM) / (k × (10^dM ∓ mmr))
	long := l.side == position.Long
	x, f := l.add(l.cost, l.margin), l.mmrM
	if long {
		x, f = l.sub(l.cost, l.margin), l.mmrDn
	}
	if x <= 0 {
		return 0
	}
	d := l.mul(l.k, f)
	var p8 int64
	if e := position.Places - l.scale + l.dS + l.dM; e >= 0 {
		p8 = l.quo(x, e, d, position.Places, long)
	} else {
		p8 = l.quo(x, 0, l.mul(d, l.shift(1, -e)), position.Places, long)
	}
	if p8 <= 0 {
		return 0
	}
	unit := int64(pow10[position.Places-l.dT])
	if long {
		return p8 / unit
	}
	return (p8 + unit - 1) / unit
}

// close closes the open position at t ticks, slipped from ref (ms at), as engine.close
// does.
func (l *ledger) close(t, ref, at int64, reason string) {
	value, exitFee := l.notional(l.k, t), l.feeOf(l.k, t, l.taker)
	var gross, credit int64
	if l.side == position.Long {
		gross = l.sub(value, l.cost)
	} else {
		gross = l.sub(l.cost, value)
	}
	if l.futures {
		credit = l.sub(l.add(l.margin, gross), exitFee)
		if credit < 0 {
			credit, gross = 0, l.sub(exitFee, l.margin)
		}
	} else {
		credit = l.sub(value, exitFee)
	}
	fees := l.add(l.entryFee, exitFee)
	net := l.sub(l.sub(gross, fees), l.fund)
	l.balance = l.add(l.balance, credit)
	l.equity = l.add(l.equity, net)
	l.peak = max(l.peak, l.equity)
	slip := l.add(l.entrySlip, l.slipCost(l.k, t, ref))
	if l.costs {
		l.gross, l.fees, l.slipped, l.funded = l.add(l.gross, gross), l.add(l.fees, fees), l.add(l.slipped, slip), l.add(l.funded, l.fund)
	}
	l.trades = append(l.trades, ledgerTrade{side: l.side, entryAt: l.openedAt, exitAt: at, entryT: l.entryT, exitT: t, k: l.k,
		fees: fees, net: net, slip: slip, fund: l.fund, reason: reason})
	l.point(at)
}

// point records the equity at ms at.
func (l *ledger) point(at int64) {
	l.points = append(l.points, ledgerPoint{at: at, equity: l.equity, drawdown: l.sub(l.peak, l.equity)})
}

// result fills r's trades, report, equity curve and final equity from the ledger.
func (l *ledger) result(r *Result, hdr analytics.Header, start decimal.Decimal, q analytics.Query) {
	m := func(v int64) decimal.Decimal { return decimal.New(v, int32(-l.scale)) }
	// Zeros (a drawdown at a peak, the funding of a trade that held over no settlement)
	// share one decimal.
	zero := m(0)
	mz := func(v int64) decimal.Decimal {
		if v == 0 {
			return zero
		}
		return m(v)
	}
	r.Trades = make([]Trade, len(l.trades))
	fixed := make([]analytics.FixedTrade, len(l.trades))
	// A reversal enters at the price the previous trade exited at, and a fixed size enters
	// the same amount every time: equal values share one decimal (decimals are immutable).
	var prevT, prevK int64 = -1, -1
	var prevPrice, prevAmount decimal.Decimal
	for i, t := range l.trades {
		entry := prevPrice
		if t.entryT != prevT {
			entry = decimal.New(t.entryT, int32(-l.dT))
		}
		if t.k != prevK {
			prevK, prevAmount = t.k, decimal.New(t.k, int32(-l.dS))
		}
		prevT, prevPrice = t.exitT, decimal.New(t.exitT, int32(-l.dT))
		r.Trades[i] = Trade{Side: string(t.side), EntryTime: t.entryAt, ExitTime: t.exitAt, EntryPrice: entry,
			ExitPrice: prevPrice, Amount: prevAmount, Fees: m(t.fees), NetPnl: m(t.net), Reason: t.reason}
		if l.costs {
			r.Trades[i].Slippage, r.Trades[i].Funding = mz(t.slip), mz(t.fund)
		}
		fixed[i] = analytics.FixedTrade{ClosedAt: t.exitAt, NetPnl: t.net, Fees: t.fees}
	}
	if l.costs {
		r.Costs = &CostBreakdown{GrossPnl: m(l.gross), Fees: m(l.fees), Slippage: m(l.slipped), Funding: m(l.funded)}
	}
	rep, ok := analytics.ReportOfFixed(hdr, fixed, int32(l.scale), &start, q)
	if !ok {
		rep = analytics.ReportOf(hdr, positionTrades(r.Trades), &start, q)
	}
	r.Report = rep
	r.Equity = make([]analytics.Point, len(l.points))
	for i, p := range l.points {
		r.Equity[i] = analytics.Point{Timestamp: p.at, Equity: httpapi.Num(m(p.equity)), Drawdown: httpapi.Num(mz(p.drawdown))}
	}
	r.Final = m(l.balance)
}
