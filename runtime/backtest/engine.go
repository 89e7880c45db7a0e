package backtest

import (
	"context"
	"math"
	"sort"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/strategy"
)

// Trade reasons, the values the executor books for the same events.
const (
	ReasonSignal      = "signal"
	ReasonReversal    = "reversal"
	ReasonStopLoss    = "stop_loss"
	ReasonTakeProfit  = "take_profit"
	ReasonLiquidation = "liquidation"
)

const msPerDay = 24 * 60 * 60 * 1000

func dayStart(ms int64) int64 { return int64(analytics.DateOfMS(ms)) * msPerDay }

// engine is one run's state. Prices in the candle loop are ticks; money is the integer
// ledger's when the config has one, else decimal and computed at fills.
type engine struct {
	s    *Series
	c    config
	kind exchange.Kind
	// fx is the integer ledger; nil: the decimal fields below keep the money.
	fx *ledger
	// held is true while a position is open, on side.
	held bool
	side position.Side
	// closedAtEnd: a position was closed at the series' end (the last candle's close time).
	closedAtEnd bool
	// balance is the free quote balance, as the paper account holds it (futures margin and
	// spot cost taken out while a position is open).
	balance decimal.Decimal
	// equity is the realised equity (initial balance plus net results), peak its highest.
	equity, peak decimal.Decimal
	pos          *position.Position
	// slT, tpT and liqT are the open position's stop-loss, take-profit and liquidation
	// levels in ticks (0: none).
	slT, tpT, liqT int64
	// down and up are the open position's reach: a candle whose low is above down and
	// high below up cannot close it.
	down, up int64
	// limit is a resting limit entry's price in ticks (0: none) and limitSide its side.
	limit     int64
	limitSide position.Side
	// fundAt is the index in c.funding of the next settlement and nextFund its time
	// (MaxInt64: none left), so that a candle costs the loop one comparison.
	fundAt   int
	nextFund int64
	// entrySlip and fund are the open position's entry slippage cost and the funding it
	// has paid so far; tc is each closed trade's, in a run with costs (decimal path).
	entrySlip, fund decimal.Decimal
	tc              []tradeCost
	trades          []position.Trade
	points          []analytics.Point
}

// tradeCost is a closed trade's slippage cost and net funding paid.
type tradeCost struct{ slip, fund decimal.Decimal }

// newEngine is a run of c on s, on the integer ledger when fixed and c can be represented
// in it.
func newEngine(s *Series, c config, fixed bool) *engine {
	e := &engine{s: s, c: c, kind: s.market.Kind, nextFund: math.MaxInt64}
	if f := c.funding; len(f) > 0 {
		// The settlements up to the first traded candle's open find no position.
		e.fundAt = sort.Search(len(f), func(j int) bool { return f[j].Time > s.ts[c.from] })
		if e.fundAt < len(f) {
			e.nextFund = f[e.fundAt].Time
		}
	}
	if fixed {
		e.fx = newLedger(s, c)
	}
	if e.fx != nil {
		// An equity point per UTC day the series spans, and at least one per trade.
		e.fx.points = make([]ledgerPoint, 0, int((s.ts[len(s.ts)-1]-s.ts[c.from])/msPerDay)+64)
		e.fx.point(s.ts[c.from])
		return e
	}
	e.balance, e.equity, e.peak = c.InitialBalance, c.InitialBalance, c.InitialBalance
	e.entrySlip, e.fund = decimal.Zero, decimal.Zero
	e.points = []analytics.Point{{Timestamp: s.ts[c.from], Equity: httpapi.Num(c.InitialBalance), Drawdown: httpapi.Num(decimal.Zero)}}
	return e
}

// run is the candle loop: the funding settlements due by candle i's open, then its
// pending signal (decided at i-1's close) at its open, then its path (limit fill, exits),
// then the strategy sees it closed and decides the signal for i+1. At the end an open
// position is closed at the last close. The candles before the config's from only feed
// the strategy.
func (e *engine) run(ctx context.Context, st strategy.Strategy) error {
	s := e.s
	n := len(s.ts)
	ts, bars, low, high := s.ts[:n], s.bars[:n], s.low[:n], s.high[:n]
	from := e.c.from
	pend := strategy.None
	for i := range from {
		if i&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		pend = st.Next(bars[i])
	}
	nextDay := dayStart(ts[from]) + msPerDay
	for i := from; i < n; i++ {
		if i&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		if ts[i] >= nextDay {
			d := dayStart(ts[i])
			e.point(d)
			nextDay = d + msPerDay
		}
		if ts[i] >= e.nextFund {
			e.settle(i)
		}
		if pend != strategy.None {
			e.atOpen(i, pend)
		}
		// A candle's path matters only to a resting limit entry and an open position's
		// exit levels.
		if e.limit != 0 || (e.held && (low[i] <= e.down || high[i] >= e.up)) {
			e.walk(i)
		}
		pend = st.Next(bars[i])
	}
	if e.held {
		e.close(n-1, s.close[n-1], ts[n-1]+s.tfMs, ReasonEnd)
		e.closedAtEnd = true
	}
	return nil
}

// settle books the funding settlements due by candle i's open (those after the previous
// candle's open, at or before this one's) on the position held at that open, before the
// open's orders: a position the open closes pays, one it opens does not. Each is priced
// at the open, the first price after the settlement.
func (e *engine) settle(i int) {
	f, at, t := e.c.funding, e.s.ts[i], e.s.open[i]
	for ; e.fundAt < len(f) && f[e.fundAt].Time <= at; e.fundAt++ {
		switch {
		case !e.held:
		case e.fx != nil:
			e.fx.pay(e.fundAt, t)
		default:
			// rate × the notional at t, rounded half away from zero to 8 places, the
			// quote's places on the venues (and what keeps the integer ledger's scale
			// small); a long pays a positive rate, a short receives it.
			paid := e.pos.Size.Mul(e.s.price(t)).Mul(f[e.fundAt].Rate).Round(position.Places)
			if e.side == position.Short {
				paid = paid.Neg()
			}
			e.balance, e.fund = e.balance.Sub(paid), e.fund.Add(paid)
		}
	}
	e.nextFund = math.MaxInt64
	if e.fundAt < len(f) {
		e.nextFund = f[e.fundAt].Time
	}
}

// point records the equity at ms at.
func (e *engine) point(at int64) {
	if e.fx != nil {
		e.fx.point(at)
		return
	}
	e.points = append(e.points, analytics.Point{Timestamp: at, Equity: httpapi.Num(e.equity), Drawdown: httpapi.Num(e.peak.Sub(e.equity))})
}

// atOpen carries out the signal decided at candle i-1's close at candle i's open: exits
// first (as the queue serves a strategy exit before the entry of the same candle), then
// the entry, which reverses an opposite futures position, is ignored while a position on
// its side is open (no pyramiding), and on spot is ignored for a short.
func (e *engine) atOpen(i int, sig strategy.Signal) {
	s := e.s
	at, o := s.ts[i], s.open[i]
	exitLong, exitShort := sig.Has(strategy.ExitLong), sig.Has(strategy.ExitShort)
	if e.held && ((e.side == position.Long && exitLong) || (e.side == position.Short && exitShort)) {
		e.close(i, o, at, ReasonSignal)
	}
	if e.limit != 0 && ((e.limitSide == position.Long && exitLong) || (e.limitSide == position.Short && exitShort)) {
		e.limit = 0
	}
	long, short := sig.Has(strategy.EnterLong), sig.Has(strategy.EnterShort)
	if long == short {
		return
	}
	side := position.Long
	if short {
		if e.kind != exchange.Futures {
			return
		}
		side = position.Short
	}
	e.limit = 0
	if e.held {
		if e.side == side {
			return
		}
		e.close(i, o, at, ReasonReversal)
	}
	if off := e.c.LimitOffset; off != nil {
		e.limit, e.limitSide = e.limitPrice(s.close[i-1], side, *off), side
		return
	}
	e.open(i, side, o, false, 0)
}

// limitPrice is the limit entry's price for a signal at a close of closeT ticks: the close
// minus (long) or plus (short) off percent, rounded down to the tick (order.LimitPrice);
// 0 when that leaves no price.
func (e *engine) limitPrice(closeT int64, side position.Side, off decimal.Decimal) int64 {
	if l := e.fx; l != nil {
		// close × (1 ∓ off/100), exact (off has at most 14 places), floored to the tick.
		base := int64(pow10[l.dO+2])
		f := base + l.offset
		if side == position.Long {
			f = base - l.offset
		}
		if f <= 0 {
			return 0
		}
		return l.quo(l.mul(closeT, f), 0, base, 0, false)
	}
	f := off.Div(hundred)
	if side == position.Long {
		f = f.Neg()
	}
	p, err := order.LimitPrice(e.s.market, e.s.price(closeT).Mul(decimal.NewFromInt(1).Add(f)))
	if err != nil {
		return 0
	}
	return p.Div(e.s.market.TickSize).IntPart()
}

// open enters side in candle i at ref ticks, sized and paid for as the executor and the
// paper exchange do; an entry the sizing or the balance refuses is skipped. A maker fill
// (a resting limit reached inside the candle) fills at ref; a taker fill at ref slipped,
// no further than bound (a limit entry's price; 0: none).
func (e *engine) open(i int, side position.Side, ref int64, maker bool, bound int64) {
	var sl, tp, liq int64
	var ok bool
	if e.fx != nil {
		sl, tp, liq, ok = e.fx.open(i, side, ref, e.s.ts[i], maker, bound)
	} else {
		sl, tp, liq, ok = e.openDecimal(i, side, ref, maker, bound)
	}
	if !ok {
		return
	}
	e.held, e.side, e.slT, e.tpT, e.liqT = true, side, sl, tp, liq
	// The levels a candle's low or high must reach for its path to close the position: the
	// nearer of the stop-loss and liquidation against it, the take-profit for it (0 and
	// MaxInt64 are unreachable, prices being positive ticks).
	against, _ := e.adverse()
	e.down, e.up = against, int64(math.MaxInt64)
	if side == position.Long {
		if tp != 0 {
			e.up = tp
		}
	} else {
		e.down = tp
		if against != 0 {
			e.up = against
		}
	}
}

// openDecimal is open on decimals with runtime/order's and runtime/position's functions;
// it returns the stop-loss, take-profit and liquidation levels in ticks (0: none), ok false
// when the entry is skipped.
func (e *engine) openDecimal(i int, side position.Side, ref int64, maker bool, bound int64) (sl, tp, liq int64, ok bool) {
	m := e.s.market
	rate := e.c.taker
	if maker {
		rate = e.c.maker
	}
	amount, t, ok := e.sizeDecimal(i, ref, rate, side == position.Long, maker, bound)
	if !ok {
		return 0, 0, 0, false
	}
	price := e.s.price(t)
	if order.CheckExit(side, e.c.StopLoss, price, true) != nil || order.CheckExit(side, e.c.TakeProfit, price, false) != nil {
		return 0, 0, 0, false
	}
	fee, required := e.required(amount, price, rate)
	if required.GreaterThan(e.balance) {
		return 0, 0, 0, false
	}
	e.balance = e.balance.Sub(required)
	e.entrySlip = e.slipCost(t, ref, amount)
	e.fund = decimal.Zero
	p := position.Open("", "", m.Symbol, e.kind, side, e.c.lev, position.Fill{Amount: amount, Price: price, Fee: fee, At: e.s.ts[i]}, "")
	if a := e.c.StopLoss; a != nil {
		p.SetExit(true, a.Value.Decimal, a.Percent, hundred, m)
	}
	if a := e.c.TakeProfit; a != nil {
		p.SetExit(false, a.Value.Decimal, a.Percent, hundred, m)
	}
	e.pos = &p
	tick := m.TickSize
	if p.StopLoss != nil {
		sl = max(p.StopLoss.Price.Div(tick).IntPart(), 0)
	}
	if p.TakeProfit != nil {
		tp = max(p.TakeProfit.Price.Div(tick).IntPart(), 0)
	}
	// A long is liquidated at or below the price, a short at or above: the tick levels that
	// reach it are the floor and the ceiling of price/tick. A long at leverage 1 has none
	// (position.LiquidationPrice), which spares the division.
	if e.kind != exchange.Futures || (side == position.Long && e.c.lev == 1) {
		return sl, tp, 0, true
	}
	if l := p.Liquidation(); l.IsPositive() {
		q := l.DivRound(tick, 16)
		if side == position.Long {
			liq = q.Floor().IntPart()
		} else {
			liq = q.Ceil().IntPart()
		}
	}
	return sl, tp, liq, true
}

// sizeDecimal sizes an entry in candle i at ref ticks as the executor does, with
// order.EntryAmount at the reference price, and prices it: a maker fill (or a run without
// slippage) at ref, a taker fill at ref slipped by that amount's slippage. When the margin
// and fee at the slipped price exceed the balance (a buy near a 100 % size), the entry is
// sized again at the slipped price, the amount the balance pays for there, and fills at
// that amount's own slippage, which is no more, so that the balance still pays for it.
// ok false: the sizing refuses the entry.
func (e *engine) sizeDecimal(i int, ref int64, rate decimal.Decimal, buy, maker bool, bound int64) (decimal.Decimal, int64, bool) {
	in := order.Entry{Market: e.s.market, Size: e.c.PositionSize, Price: e.s.price(ref),
		Available: e.balance, FeeRate: rate, Leverage: e.c.lev}
	amount, err := order.EntryAmount(in)
	if err != nil {
		return decimal.Zero, 0, false
	}
	if e.c.slip == nil || maker {
		return amount, ref, true
	}
	t := slipped(ref, e.slipTicks(i, amount, ref), buy, bound)
	if _, req := e.required(amount, e.s.price(t), rate); req.GreaterThan(e.balance) {
		in.Price = e.s.price(t)
		if amount, err = order.EntryAmount(in); err != nil {
			return decimal.Zero, 0, false
		}
		t = slipped(ref, e.slipTicks(i, amount, ref), buy, bound)
	}
	return amount, t, true
}

// required is the fee and what the balance pays for entering amount at price: margin (the
// notional on spot) plus the fee, as runtime/order sizes it.
func (e *engine) required(amount, price, rate decimal.Decimal) (fee, required decimal.Decimal) {
	notional := amount.Mul(price)
	fee = position.Fee(notional, rate)
	return fee, position.InitialMargin(notional, e.c.lev).Add(fee)
}

// slipTicks is Slippage's tick count for a taker fill of amount at ref ticks in candle i,
// on decimals: min(ceil((high − low) × amount / (2 × volume × tick)), ceil(cap × ref
// price / tick)), each quotient exact.
func (e *engine) slipTicks(i int, amount decimal.Decimal, ref int64) int64 {
	s := e.s
	tick := s.market.TickSize
	capT := ceilQuo(e.c.slip.Cap.Mul(s.price(ref)), tick)
	v := s.volumeAt(i)
	if !v.IsPositive() {
		return capT.IntPart()
	}
	n := ceilQuo(s.price(s.high[i]).Sub(s.price(s.low[i])).Mul(amount), v.Add(v).Mul(tick))
	return decimal.Min(n, capT).IntPart()
}

// ceilQuo is ceil(a / b) for a >= 0 and b > 0, exactly.
func ceilQuo(a, b decimal.Decimal) decimal.Decimal {
	q, r := a.QuoRem(b, 0)
	if r.IsPositive() {
		q = q.Add(one)
	}
	return q
}

// slipped is the price in ticks of a taker fill whose reference price is ref after n
// ticks of slippage against it: up for a buy, down for a sell but not below one tick, and
// no worse than bound (a limit entry's price; 0: none), as a limit order never fills
// beyond its price.
func slipped(ref, n int64, buy bool, bound int64) int64 {
	if buy {
		t := ref + min(n, math.MaxInt64-ref)
		if bound != 0 {
			t = min(t, bound)
		}
		return t
	}
	return max(ref-n, bound, 1)
}

// slipCost is what slippage cost a fill of amount at t ticks against ref ticks:
// |t − ref| × tick × amount.
func (e *engine) slipCost(t, ref int64, amount decimal.Decimal) decimal.Decimal {
	if t == ref {
		return decimal.Zero
	}
	return e.s.price(max(t-ref, ref-t)).Mul(amount)
}

// exitPrice is the price in ticks a close at ref ticks in candle i fills at: ref slipped
// against the position (a long sells, a short buys), but a liquidation fills at ref, the
// venue's own price.
func (e *engine) exitPrice(i int, ref int64, reason string) int64 {
	if e.c.slip == nil || reason == ReasonLiquidation {
		return ref
	}
	var n int64
	if e.fx != nil {
		n = e.fx.slipTicks(i, e.fx.k, ref)
	} else {
		n = e.slipTicks(i, e.pos.Size.Decimal, ref)
	}
	return slipped(ref, n, e.side == position.Short, 0)
}

// close closes the position in candle i at ref ticks (slipped, exitPrice; ms at) with its
// exit fee, credits the balance as the paper exchange does (position.Settle) and records
// the trade, net of the funding it paid.
func (e *engine) close(i int, ref, at int64, reason string) {
	e.held = false
	t := e.exitPrice(i, ref, reason)
	if e.fx != nil {
		e.fx.close(t, ref, at, reason)
		return
	}
	p, amount := e.pos, e.pos.Size.Decimal
	price := e.s.price(t)
	fee := position.Fee(amount.Mul(price), e.c.taker)
	st, tr, _ := p.Reduce(position.Fill{Amount: amount, Price: price, Fee: fee, At: at}, "", "", reason)
	e.balance = e.balance.Add(st.Credit)
	if e.c.Costs != nil {
		tr.NetPnl = httpapi.Num(tr.NetPnl.Sub(e.fund))
		e.tc = append(e.tc, tradeCost{slip: e.entrySlip.Add(e.slipCost(t, ref, amount)), fund: e.fund})
	}
	e.trades = append(e.trades, tr)
	e.equity = e.equity.Add(tr.NetPnl.Decimal)
	e.peak = decimal.Max(e.peak, e.equity)
	e.point(at)
	e.pos = nil
}

// walk moves through candle i along open → nearer extreme → farther extreme → close: a
// rising candle (close >= open) visits its low before its high, a falling one its high
// before its low. A resting limit entry fills at the open when the open is at or beyond
// its price, else when the path trades through it (strictly), at its price; the open
// position's liquidation, stop-loss and take-profit fill at the open when it gapped past
// them, else at their price when the path reaches it.
func (e *engine) walk(i int) {
	s := e.s
	at, o, c := s.ts[i], s.open[i], s.close[i]
	a, b := s.low[i], s.high[i]
	if c < o {
		a, b = b, a
	}
	path := [4]int64{o, a, b, c}
	if l := e.limit; l != 0 && ((e.limitSide == position.Long && o <= l) || (e.limitSide == position.Short && o >= l)) {
		// The open is at or beyond the limit: the order takes liquidity, a taker fill.
		e.limit = 0
		e.open(i, e.limitSide, o, false, l)
	}
	if e.held && e.exitAtOpen(i, o, at) {
		return
	}
	for k := 1; k < len(path); k++ {
		from, to := path[k-1], path[k]
		if l := e.limit; l != 0 && ((e.limitSide == position.Long && to < l) || (e.limitSide == position.Short && to > l)) {
			// The market trades through the resting order: a maker fill at its price.
			e.limit = 0
			e.open(i, e.limitSide, l, true, 0)
			from = l
		}
		if e.held && e.exitOn(i, from, to, at) {
			return
		}
	}
}

// adverse is the level at which the position is closed against it (the nearer of the
// stop-loss and the liquidation, 0 for none) and the reason; at equal levels liquidation
// wins, as in the live watcher.
func (e *engine) adverse() (int64, string) {
	sl, liq := e.slT, e.liqT
	switch {
	case liq == 0 && sl == 0:
		return 0, ""
	case liq == 0:
		return sl, ReasonStopLoss
	case sl == 0:
		return liq, ReasonLiquidation
	}
	if e.side == position.Long {
		if liq >= sl {
			return liq, ReasonLiquidation
		}
		return sl, ReasonStopLoss
	}
	if liq <= sl {
		return liq, ReasonLiquidation
	}
	return sl, ReasonStopLoss
}

// exitAtOpen closes the position at candle i's open o when it opened past an exit level.
func (e *engine) exitAtOpen(i int, o, at int64) bool {
	long := e.side == position.Long
	if lv, reason := e.adverse(); lv != 0 && ((long && o <= lv) || (!long && o >= lv)) {
		e.close(i, o, at, reason)
		return true
	}
	if tp := e.tpT; tp != 0 && ((long && o >= tp) || (!long && o <= tp)) {
		e.close(i, o, at, ReasonTakeProfit)
		return true
	}
	return false
}

// exitOn closes the position at the first exit level the move from → to in candle i
// reaches.
func (e *engine) exitOn(i int, from, to, at int64) bool {
	long := e.side == position.Long
	down := to < from
	if long != down {
		// Moving in the position's favour: only the take-profit can be reached.
		if tp := e.tpT; tp != 0 && ((long && to >= tp) || (!long && to <= tp)) {
			e.close(i, tp, at, ReasonTakeProfit)
			return true
		}
		return false
	}
	if lv, reason := e.adverse(); lv != 0 && ((long && to <= lv) || (!long && to >= lv)) {
		e.close(i, lv, at, reason)
		return true
	}
	return false
}
