package executor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/store"
)

// Copy signals (docs/decisions.md, "Copy signals"). Every filled leg of a master bot (a bot
// in another bot's spec.copyFrom) becomes one copy signal per follower, queued on the
// follower's partition like any signal (Source queue.SourceCopy) and executed as the
// follower's own: its account, venue, risk limits, pauses and minimums.
//
// The fan-out runs after the leg's booking committed and before the master's result is
// stored, and again whenever a redelivered master signal finds the leg booked (its executor
// died in between): each copy signal's ID is derived from (master signal, leg, follower) and
// is enqueued by a script that sets a marker in the follower's slot and XADDs only when the
// marker was absent, so a follower gets one copy of each fill. Nothing about a follower
// changes the master's result or booking: a follower that cannot copy records why in its
// own signal result and copy state.

// CopyMarkerTTL is how long a copy signal's enqueue marker lives: longer than the master
// signal's progress record (ProgressTTL), past which a redelivered master signal would not
// find its legs booked and so would not fan out again anyway.
const CopyMarkerTTL = ProgressTTL + 24*time.Hour

// Copy operations.
const (
	CopyOpen   = opOpen
	CopyAdd    = opAdd
	CopyReduce = opReduce
)

// CopyRequest is a copy signal's payload (queue.Envelope.Signal when Source is
// queue.SourceCopy): one filled leg of the master.
type CopyRequest struct {
	MasterBotID    string `json:"masterBotId"`
	MasterSignalID string `json:"masterSignalId"`
	// Leg is the master leg's name ("" the main leg, "reverse", "close:<symbol>").
	Leg string `json:"leg"`
	// Op is CopyOpen, CopyAdd or CopyReduce.
	Op     string        `json:"op"`
	Symbol string        `json:"symbol"`
	Side   position.Side `json:"side"` // the side of the position opened, added to or reduced
	// Amount and Price are the master's filled amount (base currency) and average price.
	Amount httpapi.Number `json:"amount"`
	Price  httpapi.Number `json:"price"`
	// MasterEquity is the master's equity (risk.Equity) the entry was sized from, before the
	// fill (open and add only).
	MasterEquity *httpapi.Number `json:"masterEquity,omitempty"`
	// PositionBefore is the master's position size before a reduce: the reduced fraction
	// is Amount / PositionBefore, and a reduce of the whole position closes the follower's.
	PositionBefore httpapi.Number `json:"positionBefore,omitzero"`
	// Leverage is the master position's leverage (futures).
	Leverage int `json:"leverage,omitempty"`
	// Reason is the master's trade reason of a reduce (signal, reversal, stop_loss, ...).
	Reason string `json:"reason,omitempty"`
}

// CopyPriority is the queue priority of every copy signal (strategy exit).
const CopyPriority = queue.PriorityStrategyExit

// CopySignalID is the ID of the copy of a master signal's leg for a follower: the same
// inputs give the same ID, so that a repeated fan-out is recognised. It is the copy's name
// (copyName) placed in the follower's partition (queue.SignalIDFor).
func CopySignalID(masterSignalID, leg, followerID string) string {
	return queue.SignalIDFor(followerID, copyName(masterSignalID, leg, followerID))
}

// copyName names the copy of a master signal's leg for a follower, before placement. The
// copy's enqueue marker (store.CopyMarker) is named by it, which does not depend on
// placement: a fan-out repeated by a version that queues copies unplaced finds the same
// marker, and queues no second copy.
func copyName(masterSignalID, leg, followerID string) string {
	sum := sha256.Sum256([]byte(masterSignalID + "\x00" + leg + "\x00" + followerID))
	return "c-" + hex.EncodeToString(sum[:16])
}

// copyShare sizes a follower's entry: MasterAmount × the follower's equity / MasterEquity ×
// Ratio, rounded down to the step.
type copyShare struct {
	MasterAmount httpapi.Number `json:"masterAmount"`
	MasterEquity httpapi.Number `json:"masterEquity"`
	Ratio        httpapi.Number `json:"ratio"`
}

// amount is the follower's amount before rounding.
func (c copyShare) amount(equity decimal.Decimal) (decimal.Decimal, error) {
	if !c.MasterEquity.IsPositive() {
		return decimal.Zero, errs.New(errs.InvalidAmount, "the master's equity %s leaves nothing to size the copy by", c.MasterEquity)
	}
	return c.MasterAmount.Mul(equity).Mul(c.Ratio.Decimal).Div(c.MasterEquity.Decimal), nil
}

// exitShare sizes a follower's reduce: Num / Den of its position (the master's reduced
// amount over its position before), computed as held × Num / Den so that equal positions
// reduce by equal amounts.
type exitShare struct {
	Num httpapi.Number `json:"num"`
	Den httpapi.Number `json:"den"`
}

// size is the part of held to close (nil: all of it).
func (s exitShare) size(held decimal.Decimal) *signal.Amount {
	if !s.Den.IsPositive() || s.Num.GreaterThanOrEqual(s.Den.Decimal) {
		return nil
	}
	return &signal.Amount{Value: httpapi.Num(held.Mul(s.Num.Decimal).Div(s.Den.Decimal))}
}

// copyOf is what a booked leg's copies need, for applyLeg to keep in the leg's outcome
// (so that a redelivered signal fans out from the booked facts). in.equity is the master's
// equity the entry was sized from; before is the position before a reduce.
func copyOf(in bookIn, f position.Fill, before *position.Position) *CopyRequest {
	c := &CopyRequest{Leg: in.leg.Name, Op: in.leg.Op, Symbol: in.leg.Symbol, Side: in.leg.Side, Amount: httpapi.Num(in.order.FilledAmount),
		Price: httpapi.Num(f.Price), Leverage: in.req.Leverage}
	switch in.leg.Op {
	case opOpen, opAdd:
		c.MasterEquity = httpapi.NumOrNil(in.equity)
	case opReduce:
		c.Amount, c.Reason = httpapi.Num(f.Amount), in.leg.Reason
		if before != nil {
			c.PositionBefore = before.Size
		}
	}
	return c
}

// fanOut enqueues the copies of a booked leg for the master's followers (j.followers, read
// with the signal's first reads). A follower is fed only while registry.Follows holds; an
// entry whose master equity is unknown (sized by an attempt before the bot had followers)
// is not copied. A copy never fans out again: a chain cannot form at runtime either.
func (e *Executor) fanOut(ctx context.Context, j *job, d legDone) error {
	c := d.Copy
	if c == nil || len(j.followers) == 0 || j.env.Source == queue.SourceCopy {
		return nil
	}
	if c.Op != opReduce && c.MasterEquity == nil {
		e.log.Warn("fill not copied: the master's equity before it is unknown", "signalId", j.env.SignalID, "botId", j.bot.ID)
		return nil
	}
	reads := make([]func() (registry.Bot, error), len(j.followers))
	if _, err := e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range j.followers {
			reads[i] = e.decoded.GetLater(ctx, p, id)
		}
		return nil
	}); tripFailed(err) {
		return err
	}
	// Every copy of a master queues at one priority, so a follower runs them in the master's
	// order: a close never overtakes the open it closes. Priority 2 keeps copied exits as
	// fast as strategy exits; copied entries then run ahead of the follower's own strategy
	// entries and webhook signals, which is harmless.
	prio := CopyPriority
	req := *c
	req.MasterBotID, req.MasterSignalID = j.bot.ID, j.env.SignalID
	data, err := json.Marshal(req)
	if err != nil {
		return err
	}
	var sent []func() (bool, error)
	// The copies are queued signals like any other: on the replicas before the master's
	// signal counts as done (store.AckPipelined).
	if _, err := store.AckPipelined(ctx, e.rdb, func(p redis.Pipeliner) error {
		for i, id := range j.followers {
			f, err := reads[i]()
			if err != nil || !registry.Follows(f, j.bot) {
				continue // deleted, or no longer a follower of this master: nothing to copy
			}
			name := copyName(j.env.SignalID, req.Leg, id)
			env := queue.Envelope{SignalID: queue.SignalIDFor(id, name), BotID: id, Priority: prio, Source: queue.SourceCopy,
				Signal: data, ReceivedAt: e.now().UnixMilli()}
			done, err := queue.EnqueueOnceLater(ctx, p, env, store.CopyMarker(id, name), CopyMarkerTTL)
			if err != nil {
				return err
			}
			sent = append(sent, done)
		}
		return nil
	}); tripFailed(err) {
		return err
	}
	for _, done := range sent {
		if _, err := done(); err != nil {
			return err
		}
	}
	return nil
}

// planCopy plans a follower's copy of a master fill: an entry opens, adds to the position
// open on its side, or reverses the one open on the other side (when the follower reverses);
// a reduce closes the same fraction of the follower's position on the symbol and side.
func (d *decideIn) planCopy(c CopyRequest) (plan, error) {
	sym, err := d.resolve(c.Symbol)
	if err != nil {
		return plan{}, err
	}
	pos, err := d.position(sym)
	if err != nil {
		return plan{}, err
	}
	if c.Op == opReduce {
		if pos == nil || pos.Side != c.Side {
			return plan{}, errs.New(errs.PositionNotFound, "no open %s %s position to close as the master did", c.Side, sym)
		}
		s := exitShare{Num: c.Amount, Den: c.PositionBefore}
		return plan{Legs: []leg{{Name: "copy", Op: opReduce, Symbol: sym, Side: pos.Side, Type: exchange.Market,
			Exit: &s, Reason: reasonCopy}}}, nil
	}
	if c.Op != opOpen && c.Op != opAdd {
		return plan{}, errs.New(errs.InvalidAction, "unknown copy operation %q", c.Op)
	}
	if d.kind == exchange.Spot && c.Side == position.Short {
		return plan{}, errs.New(errs.InvalidAction, "the master opened a short: a spot bot cannot short")
	}
	if f := d.bot.CopyFrom; f == nil || f.MasterID != c.MasterBotID {
		return plan{}, errs.New(errs.InvalidAction, "the bot no longer copies bot %s", c.MasterBotID)
	}
	ratio, err := decimal.NewFromString(d.bot.CopyFrom.Ratio)
	if err != nil || !ratio.IsPositive() {
		ratio = decimal.NewFromInt(1)
	}
	if c.MasterEquity == nil {
		return plan{}, errs.New(errs.InvalidAmount, "the master's equity is unknown: the entry cannot be sized")
	}
	l := leg{Name: "copy", Symbol: sym, Side: c.Side, Type: exchange.Market,
		Leverage: order.Leverage(d.kind, c.Leverage, d.bot.Leverage),
		Share:    &copyShare{MasterAmount: c.Amount, MasterEquity: *c.MasterEquity, Ratio: httpapi.Num(ratio)}}
	switch {
	case pos != nil && pos.Side == c.Side:
		l.Op, l.Leverage = opAdd, pos.Leverage
		return plan{Legs: []leg{l}}, nil
	case pos != nil:
		if !d.bot.Reversals {
			return plan{}, errs.New(errs.InvalidAction, "a %s %s position is open and the bot does not reverse: close it first", pos.Side, sym)
		}
		l.Op = opOpen
		if err := defaultExits(d.bot, &l); err != nil {
			return plan{}, err
		}
		return plan{Legs: []leg{{Name: "reverse", Op: opReduce, Symbol: sym, Side: pos.Side, Type: exchange.Market, Reason: "reversal"}, l}}, nil
	}
	l.Op = opOpen
	if err := defaultExits(d.bot, &l); err != nil {
		return plan{}, err
	}
	return plan{Legs: []leg{l}}, nil
}

// reasonCopy is the trade reason of a follower's reduce that copies the master's (the
// master's own reason is in the copy signal).
const reasonCopy = "copy"

// recordCopy records a follower's copy signal outcome in its copy state (status.copy).
func (e *Executor) recordCopy(ctx context.Context, env queue.Envelope, res result.Result) error {
	ev := registry.CopyEvent{SignalID: env.SignalID, At: res.Timestamp, Outcome: registry.CopyOutcomeSuccess}
	var ce *registry.CopyError
	if !res.Success {
		ev.Outcome = string(res.Code)
		ce = &registry.CopyError{Code: string(res.Code), Message: res.Error, At: res.Timestamp}
	}
	return e.pauses.RecordCopy(ctx, env.BotID, ev, ce)
}
