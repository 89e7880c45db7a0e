package executor

import (
	"fmt"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/risk"
)

// A leg is booked in three steps (book.go): the state the booking needs, apply the leg to
// it here, without Redis, and commit the writes applyLeg returns in one script (commit.go).
// Everything the booking decides (position, trade, realised PnL, fees, risk
// counters, the order record's status, the leg's message) is decided here.

// bookIn is a leg to book: the leg, the facts of its job the booking needs and what the
// exchange reported.
type bookIn struct {
	leg      leg
	signalID string
	botID    string
	kind     exchange.Kind
	market   exchange.MarketInfo
	limits   risk.Limits
	// req is the leg's order request and order the exchange's report of it; both nil for a
	// leg that places no order (opProtect).
	req   *exchange.OrderRequest
	order *exchange.Order
	now   time.Time
	// free is the account's free quote balance the entry was sized from in this attempt
	// (nil: not sized here, or not an entry): the bot's starting equity if this is its
	// first entry.
	free *decimal.Decimal
	// equity is the bot's equity the entry was sized from, kept for its copies (nil: the
	// bot had no followers when it was sized).
	equity *decimal.Decimal
}

// date is the UTC day a trade booked now belongs to (its ClosedAt is now).
func (in bookIn) date() analytics.Date { return analytics.DateOf(in.now) }

// bookState is what a booking reads: the bot's position on the leg's symbol (nil: none
// open), its risk counters and the leg's order record (nil: none stored). Whether the leg
// is booked already is the commit script's check.
type bookState struct {
	pos      *position.Position
	counters risk.Counters
	rec      *position.OrderRecord
	// day is the bot's aggregate of the day a trade of this leg would belong to (read for
	// reduce legs only).
	day analytics.Day
}

// bookWrites are what a booking writes.
type bookWrites struct {
	// done is the leg's outcome, stored as its done marker.
	done legDone
	// pos is the position after the leg (nil: none open, a closed one is removed).
	pos *position.Position
	// rec is the leg's order record (nil: the leg has no order); newRec: it was not stored
	// before, so it is listed too.
	rec    *position.OrderRecord
	newRec bool
	// trade is the realisation of a reduce leg.
	trade    *position.Trade
	counters risk.Counters
	// pause is the risk pause the trade triggered.
	pause *registry.Pause
	// day is the trade's day with the trade counted (nil: no trade).
	day *analytics.Day
	// start is the starting equity to record unless one is (an entry sized here).
	start *decimal.Decimal
}

// applyLeg books a leg on the state read and returns the writes to make; st is left as it
// was. A failure is an internal error (the book cannot take the fill) or, for a protect leg
// whose position is gone, POSITION_NOT_FOUND.
func applyLeg(in bookIn, st bookState) (bookWrites, error) {
	w := bookWrites{counters: st.counters}
	if st.pos != nil {
		p := st.pos.Clone()
		w.pos = &p
	}
	if o := in.order; o != nil {
		if err := w.applyOrder(in, st.rec); err != nil {
			return bookWrites{}, err
		}
		if o.FilledAmount.IsPositive() {
			var err error
			f := fillOf(in)
			switch in.leg.Op {
			case opOpen, opAdd:
				err = w.enter(in, f)
			case opReduce:
				err = w.reduce(in, st, f)
			}
			w.done.Copy = copyOf(in, f, st.pos)
			if err != nil {
				return bookWrites{}, err
			}
		} else {
			w.done.Message = fmt.Sprintf("order %s is %s", o.ClientOrderID, o.Status)
		}
	}
	if in.leg.Op == opProtect {
		if err := w.protect(in); err != nil {
			return bookWrites{}, err
		}
	}
	w.counters.ConsecutiveErrors = 0
	return w, nil
}

// applyOrder moves the leg's order record (a pending one when none was stored) to what the
// exchange reported.
func (w *bookWrites) applyOrder(in bookIn, stored *position.OrderRecord) error {
	var rec position.OrderRecord
	if stored != nil {
		rec = *stored
	} else {
		rec, w.newRec = position.PendingOrder(*in.req, in.signalID, in.botID, in.leg.Name, in.now.UnixMilli()), true
		// A leg placed without a pending record (a paper leg) may be booked by a retry that
		// sized its request anew from the balance the fill left: the record shows the order
		// as it was placed.
		if in.order.Amount.IsPositive() {
			rec.Amount = httpapi.Num(in.order.Amount)
		}
	}
	if _, err := rec.ApplyExchange(*in.order, in.now.UnixMilli()); err != nil {
		return errs.Wrap(err, errs.InternalError, "order %s cannot be booked", in.req.ClientOrderID)
	}
	w.rec, w.done.Order = &rec, resultOrder(*in.order)
	return nil
}

// fillOf is the order's fill as the book takes it: the fee in the quote currency, and on a
// spot buy whose fee the exchange kept out of the coins bought, the smaller holding.
func fillOf(in bookIn) position.Fill {
	o, m := in.order, in.market
	f := position.Fill{Amount: o.FilledAmount, Price: o.AvgPrice, Fee: feeInQuote(*o, m), At: in.now.UnixMilli()}
	if in.kind == exchange.Spot && o.Side == exchange.SideBuy && o.FeeAsset != "" && o.FeeAsset == m.Base {
		f.Amount = o.FilledAmount.Sub(o.Fee)
	}
	return f
}

// feeInQuote is a fill's fee in the quote currency, which PnL is counted in. A fee taken in
// the base coin is worth fee × price; a fee paid in a third asset (a discount token) moves
// neither base nor quote and is not counted.
func feeInQuote(o exchange.Order, m exchange.MarketInfo) decimal.Decimal {
	switch o.FeeAsset {
	case "", m.Quote:
		return o.Fee
	case m.Base:
		return o.Fee.Mul(o.AvgPrice)
	}
	return decimal.Zero
}

// enter books an entry fill: it opens the position, or adds to the one open on the same
// side (the entry re-averages, percentage exits follow it); the balance it was sized from
// is the bot's starting equity if none is recorded.
func (w *bookWrites) enter(in bookIn, f position.Fill) error {
	l, m, sym := in.leg, in.market, in.leg.Symbol
	w.start = in.free
	switch {
	case w.pos == nil:
		p := position.Open(position.ID(in.signalID, l.Name), in.botID, sym, in.kind, l.Side, in.req.Leverage, f, in.signalID)
		p.DCALevel = max(l.DCALevel, 1)
		setExits(&p, l, m)
		w.pos = &p
		w.done.Message = fmt.Sprintf("opened %s %s %s at %s", p.Side, f.Amount, sym, f.Price)
	case w.pos.Side == l.Side:
		p := w.pos
		p.Add(f)
		if l.DCALevel > 0 {
			p.DCALevel = l.DCALevel
		}
		p.Reprice(m)
		setExits(p, l, m)
		w.done.Message = fmt.Sprintf("added %s to %s %s at %s; entry now %s, size %s", f.Amount, p.Side, sym, f.Price, p.EntryPrice(), p.Size)
		if l.DCALevel > 0 {
			w.done.Message = fmt.Sprintf("DCA level %d: %s", l.DCALevel, w.done.Message)
		}
	default:
		return errs.New(errs.InternalError, "cannot book a %s entry on an open %s position", l.Side, w.pos.Side)
	}
	return nil
}

// reduce books an exit fill: the realised trade and its day's aggregate, the position's
// rest (none once closed), the exit the watcher fired cleared, and the risk counters with
// the pause they trigger.
func (w *bookWrites) reduce(in bookIn, st bookState, f position.Fill) error {
	l, sym := in.leg, in.leg.Symbol
	if w.pos == nil || w.pos.Side != l.Side {
		return errs.New(errs.InternalError, "filled exit %s has no %s position to book on", in.req.ClientOrderID, l.Side)
	}
	_, t, closed := w.pos.Reduce(f, in.req.ClientOrderID, in.signalID, l.Reason)
	w.trade = &t
	day := st.day
	day.Add(t)
	w.day = &day
	verb := "reduced"
	if closed {
		verb = "closed"
	}
	w.done.Message = fmt.Sprintf("%s %s %s %s at %s, net PnL %s", verb, t.Side, t.Size, sym, f.Price, t.NetPnl)
	switch l.ClearExit {
	case TriggerStopLoss:
		w.pos.StopLoss = nil
	case TriggerTakeProfit:
		w.pos.TakeProfit = nil
	}
	if closed {
		w.pos = nil
	}
	if w.pause = w.counters.AfterTrade(t.NetPnl.Decimal, in.now, in.limits); w.pause != nil {
		w.done.Halt = fmt.Sprintf("bot paused (Risk) until %s: loss limit reached", w.pause.Until.UTC().Format(time.RFC3339))
	}
	return nil
}

// protect sets a protect leg's exit on the position it was planned for.
func (w *bookWrites) protect(in bookIn) error {
	l, sym := in.leg, in.leg.Symbol
	if w.pos == nil || w.pos.ID != l.PositionID {
		return errs.New(errs.PositionNotFound, "no open %s position to protect", sym)
	}
	setExits(w.pos, l, in.market)
	what, exit := "take-profit", w.pos.TakeProfit
	if l.StopLoss != nil {
		what, exit = "stop-loss", w.pos.StopLoss
	}
	w.done.Message = fmt.Sprintf("%s of the %s %s position set at %s (closes %s%%)", what, w.pos.Side, sym, exit.Price, exit.ClosePercent)
	return nil
}

// setExits applies a leg's stop-loss and take-profit to a position.
func setExits(p *position.Position, l leg, m exchange.MarketInfo) {
	if a := l.StopLoss; a != nil {
		p.SetExit(true, a.Value.Decimal, a.Percent, l.ClosePercent.Decimal, m)
	}
	if a := l.TakeProfit; a != nil {
		p.SetExit(false, a.Value.Decimal, a.Percent, l.ClosePercent.Decimal, m)
	}
}
