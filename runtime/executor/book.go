package executor

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/risk"
)

// maxTxRetries bounds the retries of a booking whose state changed under it.
const maxTxRetries = 20

// legDone is a booked leg, stored under the signal so that a retry rebuilds its result.
type legDone struct {
	Message string `json:"message"`
	// Order is the leg's order as the signal's result shows it; the whole order is in its
	// order record.
	Order *result.Order `json:"order,omitempty"`
	// Halt says why the remaining legs were not run (a risk pause this leg triggered).
	Halt string `json:"halt,omitempty"`
	// Copy is the fill as the master's followers copy it (nil: nothing filled).
	Copy *CopyRequest `json:"copy,omitempty"`
}

// resultOrder is an exchange's order as a signal's result shows it.
func resultOrder(o exchange.Order) *result.Order {
	return &result.Order{Success: true, OrderID: o.ID, Status: string(o.Status), Symbol: o.Symbol,
		Side: string(o.Side), Type: string(o.Type), Amount: httpapi.Num(o.Amount), FilledAmount: httpapi.Num(o.FilledAmount),
		AvgPrice: httpapi.Num(o.AvgPrice), Fee: httpapi.Num(o.Fee), Timestamp: o.UpdatedAt}
}

// bookLeg books one leg: the order record's status, the position, the trade and its day's
// aggregate, the starting equity of a first entry, the risk counters (and a risk pause they
// trigger), and the leg's done marker or, when the leg ends the signal, its result. A leg
// already booked returns its stored outcome.
//
// A booking is three steps: the state it needs, known to the job (read ahead in the first
// pipeline, or left by its own earlier commits) or read in one pipeline (bookState); applyLeg
// (the booking itself, without Redis: apply.go); and one script on the bot's partition slot
// that writes only while every key still holds the text the booking was computed from
// (commitScript). When one changed, the state is read again and the leg applied again.
func (e *Executor) bookLeg(ctx context.Context, j *job, l leg, req *exchange.OrderRequest, o *exchange.Order) (legDone, error) {
	in, err := e.bookInOf(j, l, req, o)
	if err != nil {
		return legDone{}, err
	}
	for i := 0; i < maxTxRetries; i++ {
		st, err := e.bookState(ctx, j, in)
		if err != nil {
			return legDone{}, err
		}
		w, err := applyLeg(in, st.bookState)
		if err != nil {
			return legDone{}, err
		}
		done, ok, err := e.commitBook(ctx, j, in, st, w)
		if err != nil || ok {
			return done, err
		}
		j.view = bookView{} // a key changed under the booking: read it all again
	}
	return legDone{}, fmt.Errorf("booking %s: too much contention", in.signalID)
}

// bookInOf is the leg to book with the facts of its job.
func (e *Executor) bookInOf(j *job, l leg, req *exchange.OrderRequest, o *exchange.Order) (bookIn, error) {
	in := bookIn{leg: l, signalID: j.env.SignalID, botID: j.bot.ID, kind: j.kind, market: j.markets[l.Symbol],
		limits: j.limits, req: req, order: o, now: e.now()}
	if v, ok := j.free[l.Name]; ok {
		in.free = &v
	}
	if s := j.progress[prefixEquity+l.Name]; s != "" {
		v, err := decimal.NewFromString(s)
		if err != nil {
			return in, fmt.Errorf("signal %s: leg %q: corrupt equity %q", in.signalID, l.Name, s)
		}
		in.equity = &v
	}
	return in, nil
}

// readsDay says whether the leg may book a trade, whose day's aggregate the booking then
// reads (the aggregate is read, changed and written back).
func (in bookIn) readsDay() bool { return in.leg.Op == opReduce && in.order != nil }

// cid is the leg's client order ID (its order record's key).
func (in bookIn) cid() string {
	if in.req != nil {
		return in.req.ClientOrderID
	}
	return order.ClientOrderID(in.signalID, in.leg.Name)
}

// text is a key's (or hash field's) stored value as read; nil: absent.
type text = *string

// want is t as the commit script's check takes it: "-" for absent, "=" and the text.
func want(t text) string {
	if t == nil {
		return "-"
	}
	return "=" + *t
}

// bookView is what the job knows of its bot's book with the exact texts stored: read ahead
// in the first pipeline, read by bookState, or written by its own commits (after a commit
// the keys hold what it wrote). Every text is checked by the commit script, so a view that
// went stale costs a retry, never a wrong booking.
type bookView struct {
	pos      map[string]viewPos
	counters *viewCounters
	days     map[analytics.Date]viewDay
	// recs are order records by client order ID.
	recs map[string]viewRec
	// started says the bot's starting equity is recorded (nil: not known).
	started *bool
}

type viewPos struct {
	pos  *position.Position
	text text
}

type viewCounters struct {
	c     risk.Counters
	texts map[string]string
}

type viewDay struct {
	day  analytics.Day
	text text
}

type viewRec struct {
	rec  *position.OrderRecord
	text text
}

// bookRead is the state of one booking with the texts it was computed from.
type bookRead struct {
	bookState
	posText, recText, dayText text
	counterTexts              map[string]string
}

// bookState is the leg's state from the view, with what the view lacks read in one pipeline.
func (e *Executor) bookState(ctx context.Context, j *job, in bookIn) (bookRead, error) {
	v := &j.view
	sym, cid, date := in.leg.Symbol, in.cid(), in.date()
	p, hasPos := v.pos[sym]
	r, hasRec := v.recs[cid]
	d, hasDay := v.days[date]
	needRec, needDay := in.order != nil && !hasRec, in.readsDay() && !hasDay
	if !hasPos || v.counters == nil || needRec || needDay {
		var readPos func() (*position.Position, *string, error)
		var readCnt func() (risk.Counters, map[string]string, error)
		readRec := func() (*position.OrderRecord, *string, error) { return r.rec, r.text, nil }
		readDay := func() (analytics.Day, *string, bool, error) { return d.day, d.text, false, nil }
		if _, err := e.rdb.Pipelined(ctx, func(pp redis.Pipeliner) error {
			readPos = position.ReadTextLater(ctx, pp, in.botID, sym)
			readCnt = risk.ReadCountersTextLater(ctx, pp, in.botID)
			if needRec {
				readRec = position.ReadOrderTextLater(ctx, pp, in.botID, cid)
			}
			if needDay {
				readDay = analytics.ReadDayTextLater(ctx, pp, in.botID, date)
			}
			return nil
		}); tripFailed(err) {
			return bookRead{}, err
		}
		var errP, errC, errR, errD error
		p.pos, p.text, errP = readPos()
		var c viewCounters
		c.c, c.texts, errC = readCnt()
		r.rec, r.text, errR = readRec()
		d.day, d.text, _, errD = readDay()
		if err := errors.Join(errP, errC, errR, errD); err != nil {
			return bookRead{}, err
		}
		v.setPos(sym, p)
		v.counters = &c
		if in.order != nil {
			v.setRec(cid, r)
		}
		if in.readsDay() {
			v.setDay(date, d)
		}
	}
	st := bookRead{bookState: bookState{pos: p.pos, counters: v.counters.c, rec: r.rec, day: d.day},
		posText: p.text, recText: r.text, dayText: d.text, counterTexts: v.counters.texts}
	return st, nil
}

func (v *bookView) setPos(sym string, p viewPos) {
	if v.pos == nil {
		v.pos = map[string]viewPos{}
	}
	v.pos[sym] = p
}

func (v *bookView) setRec(cid string, r viewRec) {
	if v.recs == nil {
		v.recs = map[string]viewRec{}
	}
	v.recs[cid] = r
}

func (v *bookView) setDay(date analytics.Date, d viewDay) {
	if v.days == nil {
		v.days = map[analytics.Date]viewDay{}
	}
	v.days[date] = d
}
