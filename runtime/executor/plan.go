package executor

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/signal"
)

// Progress record fields.
const (
	fieldPlan    = "plan"
	prefixReq    = "req:"  // + leg: the order request sent (or about to be sent)
	prefixDone   = "done:" // + leg: the leg's booked outcome
	watcherTag   = "watcher"
	opOpen       = "open"
	opAdd        = "add"
	opReduce     = "reduce"
	opProtect    = "protect"
	reasonSignal = "signal"
)

// plan is the legs of one signal, decided once (stored under the signalId) so that a retry
// continues the same plan instead of re-deciding from a book its first attempt changed.
type plan struct {
	Legs []leg `json:"legs"`
}

// leg is one step: an order and its booking, or an exit-price change.
type leg struct {
	// Name is unique within the signal; "" is the main leg. It feeds the client order ID.
	Name   string             `json:"name"`
	Op     string             `json:"op"`
	Symbol string             `json:"symbol"`
	Side   position.Side      `json:"side"` // the side of the position opened, added to or reduced
	Type   exchange.OrderType `json:"type"`
	Price  *decimal.Decimal   `json:"price,omitempty"` // limit price, rounded to the tick
	// Size: entries "N%" of the balance or a base amount; reduces the part to close (nil: all).
	Size       *signal.Amount `json:"size,omitempty"`
	Leverage   int            `json:"leverage,omitempty"`
	StopLoss   *signal.Amount `json:"stopLoss,omitempty"`
	TakeProfit *signal.Amount `json:"takeProfit,omitempty"`
	// ClosePercent of a protect leg (stop_loss / take_profit orders).
	ClosePercent decimal.Decimal `json:"closePercent,omitzero"`
	// DCALevel is set on DCA entries (1 opens, 2+ adds).
	DCALevel int `json:"dcaLevel,omitempty"`
	// Reason is the trade reason of a reduce: signal, reversal, manual, stop_loss, ...
	Reason string `json:"reason,omitempty"`
	// PositionID pins a watcher exit to the position that triggered it.
	PositionID string `json:"positionId,omitempty"`
	// ClearExit is the exit (stop_loss, take_profit) a watcher exit fired, removed once booked.
	ClearExit string `json:"clearExit,omitempty"`
}

func (e *Executor) plan(ctx context.Context, j *job) (plan, error) {
	if j.env.Source == queue.SourceManual {
		var req order.Request
		if err := json.Unmarshal(j.env.Signal, &req); err != nil {
			return plan{}, errs.New(errs.InvalidJSON, "malformed order request")
		}
		return e.planManual(ctx, j, req)
	}
	var sig signal.Signal
	if j.sig != nil {
		sig = *j.sig
	} else if err := json.Unmarshal(j.env.Signal, &sig); err != nil {
		return plan{}, errs.New(errs.InvalidJSON, "malformed signal")
	}
	if sig.Action.IsEntry() {
		return e.planEntry(ctx, j, sig)
	}
	switch sig.Action {
	case signal.Close, signal.CloseLong, signal.CloseShort:
		return e.planClose(ctx, j, sig)
	}
	return plan{}, errs.New(errs.InvalidAction, "unknown action %q", sig.Action)
}

// resolve turns a symbol as sent into the market's BASE/QUOTE; a bot with a fixed pair
// trades only that pair.
func (e *Executor) resolve(j *job, raw string) (string, error) {
	fixed := ""
	if j.bot.Symbol != "" {
		var err error
		if fixed, err = j.symbols.Resolve(j.bot.Symbol); err != nil {
			return "", errs.New(errs.InvalidSymbol, "the bot's pair %s is not traded on its exchange", j.bot.Symbol)
		}
	}
	if raw == "" {
		if fixed == "" {
			return "", errs.New(errs.MissingSymbol, "symbol required: the bot has no fixed pair")
		}
		return fixed, nil
	}
	sym, err := j.symbols.Resolve(raw)
	if err != nil {
		return "", err
	}
	if fixed != "" && sym != fixed {
		return "", errs.New(errs.InvalidSymbol, "the bot trades %s only", fixed)
	}
	return sym, nil
}

// refPrice is the price an entry is expected to fill at: the limit price or the market.
func (e *Executor) refPrice(ctx context.Context, j *job, m exchange.MarketInfo, limit *decimal.Decimal) (decimal.Decimal, error) {
	if limit != nil {
		return *limit, nil
	}
	return j.acct.Exchange.Ticker(ctx, j.kind, m.Symbol)
}

func (e *Executor) planEntry(ctx context.Context, j *job, sig signal.Signal) (plan, error) {
	sym, err := e.resolve(j, sig.Symbol)
	if err != nil {
		return plan{}, err
	}
	m := j.markets[sym]
	side := position.Long
	if sig.Action == signal.Sell {
		side = position.Short
	}
	level := max(sig.DCALevel, 1)
	isDCA := sig.DCA || level >= 2
	if isDCA {
		if !j.bot.DCA.Enabled {
			return plan{}, errs.New(errs.DCADisabled, "DCA is not enabled for this bot")
		}
		if level > int(j.bot.DCA.MaxLevels) {
			return plan{}, errs.New(errs.DCAMaxLevels, "dcaLevel %d is above the bot's maximum of %d levels", level, j.bot.DCA.MaxLevels)
		}
	}
	typ, price := exchange.Market, (*decimal.Decimal)(nil)
	if sig.Price != nil {
		lp, err := order.LimitPrice(m, *sig.Price)
		if err != nil {
			return plan{}, err
		}
		typ, price = exchange.Limit, &lp
	}
	pos, err := e.position(ctx, j, sym)
	if err != nil {
		return plan{}, err
	}

	if j.kind == exchange.Spot && side == position.Short {
		// Spot: a sell reduces or closes the long holding; there are no spot shorts.
		if isDCA {
			return plan{}, errs.New(errs.DCANoPosition, "no short position to add to: spot has no shorts")
		}
		if pos == nil {
			return plan{}, errs.New(errs.PositionNotFound, "no %s holding to sell (spot has no shorts)", sym)
		}
		return plan{Legs: []leg{{Op: opReduce, Symbol: sym, Side: position.Long, Type: typ, Price: price,
			Size: sig.Size, Reason: reasonSignal}}}, nil
	}

	size := sig.Size
	if size == nil {
		if size, err = order.ParseAmount(j.bot.PositionSize); err != nil {
			return plan{}, err
		}
		if size == nil {
			return plan{}, errs.New(errs.InvalidAmount, "no size: the signal has none and the bot has no positionSize")
		}
	}
	entry := leg{Symbol: sym, Side: side, Type: typ, Price: price, Size: size,
		Leverage: order.Leverage(j.kind, sig.Leverage, j.bot.Leverage), StopLoss: sig.StopLoss, TakeProfit: sig.TakeProfit}
	if isDCA {
		entry.DCALevel = level
	}
	var legs []leg
	switch {
	case pos != nil && pos.Side == side:
		if !isDCA {
			return plan{}, errs.New(errs.InvalidAction,
				"a %s %s position is already open: send dca true with dcaLevel %d to add to it, or close it first",
				pos.Side, sym, pos.DCALevel+1)
		}
		if level != pos.DCALevel+1 {
			return plan{}, errs.New(errs.DCAInvalidLevel, "dcaLevel %d is out of sequence: the %s position is at level %d, the next is %d",
				level, pos.Side, pos.DCALevel, pos.DCALevel+1)
		}
		entry.Op, entry.Leverage = opAdd, pos.Leverage
		legs = []leg{entry}
	case pos != nil: // the opposite side is open (futures)
		if isDCA && level >= 2 {
			return plan{}, errs.New(errs.DCANoPosition, "no %s %s position to add to", side, sym)
		}
		if !j.bot.Reversals {
			return plan{}, errs.New(errs.InvalidAction, "a %s %s position is open and the bot does not reverse: close it first", pos.Side, sym)
		}
		entry.Op = opOpen
		legs = []leg{{Name: "reverse", Op: opReduce, Symbol: sym, Side: pos.Side, Type: exchange.Market, Reason: "reversal"}, entry}
	default:
		if isDCA && level >= 2 {
			return plan{}, errs.New(errs.DCANoPosition, "no %s %s position to add to: send dcaLevel 1 first", side, sym)
		}
		entry.Op = opOpen
		legs = []leg{entry}
	}
	last := &legs[len(legs)-1]
	if last.Op == opOpen {
		// A new position (a reversal's too) takes the bot's default exits where the signal
		// gives none.
		if err := defaultExits(j, last); err != nil {
			return plan{}, err
		}
	}
	if err := e.checkExits(ctx, j, m, *last); err != nil {
		return plan{}, err
	}
	return plan{Legs: legs}, nil
}

// checkExits refuses absolute exits on the wrong side of the expected entry before anything
// trades.
func (e *Executor) checkExits(ctx context.Context, j *job, m exchange.MarketInfo, l leg) error {
	if (l.StopLoss == nil || l.StopLoss.Percent) && (l.TakeProfit == nil || l.TakeProfit.Percent) {
		return nil
	}
	ref, err := e.refPrice(ctx, j, m, l.Price)
	if err != nil {
		return err
	}
	if err := order.CheckExit(l.Side, l.StopLoss, ref, true); err != nil {
		return err
	}
	return order.CheckExit(l.Side, l.TakeProfit, ref, false)
}

func (e *Executor) planClose(ctx context.Context, j *job, sig signal.Signal) (plan, error) {
	var symbols []string
	if sig.Symbol != "" || j.bot.Symbol != "" {
		sym, err := e.resolve(j, sig.Symbol)
		if err != nil {
			return plan{}, err
		}
		symbols = []string{sym}
	} else {
		open, err := e.openPositions(ctx, j)
		if err != nil {
			return plan{}, err
		}
		for _, p := range open {
			symbols = append(symbols, p.Symbol)
		}
	}
	want := map[signal.Action]position.Side{signal.CloseLong: position.Long, signal.CloseShort: position.Short}[sig.Action]
	reason, posID, clear := reasonSignal, "", ""
	if j.env.Source == queue.SourceWatcher {
		// watcher:<trigger>:<positionId>
		parts := strings.SplitN(sig.Comment, ":", 3)
		if len(parts) == 3 && parts[0] == watcherTag {
			reason, posID = parts[1], parts[2]
			if reason == TriggerStopLoss || reason == TriggerTakeProfit {
				clear = reason
			}
		}
	}
	var legs []leg
	for _, sym := range symbols {
		p, err := e.position(ctx, j, sym)
		if err != nil {
			return plan{}, err
		}
		if p == nil || (want != "" && p.Side != want) || (posID != "" && p.ID != posID) {
			continue
		}
		l := leg{Name: "close:" + sym, Op: opReduce, Symbol: sym, Side: p.Side, Type: exchange.Market,
			Size: sig.Size, Reason: reason, PositionID: posID, ClearExit: clear}
		if sig.Price != nil {
			lp, err := order.LimitPrice(j.markets[sym], *sig.Price)
			if err != nil {
				return plan{}, err
			}
			l.Type, l.Price = exchange.Limit, &lp
		}
		legs = append(legs, l)
	}
	if len(legs) == 0 {
		what := "open"
		if want != "" {
			what = "open " + string(want)
		}
		where := ""
		if len(symbols) == 1 {
			where = " on " + symbols[0]
		}
		return plan{}, errs.New(errs.PositionNotFound, "no %s position%s to close", what, where)
	}
	return plan{Legs: legs}, nil
}

// planManual maps an internal trading API order onto the book: market and limit orders
// opposite to the open position reduce it (never past zero: a manual order does not
// reverse), in its direction add to it, and otherwise open one; stop_loss and take_profit
// set the position's exit.
func (e *Executor) planManual(ctx context.Context, j *job, req order.Request) (plan, error) {
	if err := req.Validate(); err != nil {
		return plan{}, err
	}
	sym, err := e.resolve(j, req.Symbol)
	if err != nil {
		return plan{}, err
	}
	m := j.markets[sym]
	pos, err := e.position(ctx, j, sym)
	if err != nil {
		return plan{}, err
	}
	switch req.Type {
	case exchange.StopLoss, exchange.TakeProfit:
		if pos == nil {
			return plan{}, errs.New(errs.PositionNotFound, "no open %s position to protect", sym)
		}
		stop := req.Type == exchange.StopLoss
		trigger := req.StopPrice
		if !stop {
			trigger = req.TakeProfitPrice
		}
		price, err := order.LimitPrice(m, *trigger)
		if err != nil {
			return plan{}, err
		}
		now, err := j.acct.Exchange.Ticker(ctx, j.kind, sym)
		if err != nil {
			return plan{}, err
		}
		l := leg{Op: opProtect, Symbol: sym, Side: pos.Side, ClosePercent: *req.ClosePercent, PositionID: pos.ID}
		a := &signal.Amount{Value: price}
		if stop {
			l.StopLoss = a
			err = order.CheckExit(pos.Side, a, now, true)
		} else {
			l.TakeProfit = a
			err = order.CheckExit(pos.Side, a, now, false)
		}
		if err != nil {
			return plan{}, err
		}
		return plan{Legs: []leg{l}}, nil
	}
	side := position.SideOf(req.Side)
	l := leg{Symbol: sym, Side: side, Type: req.Type, Size: &signal.Amount{Value: *req.Amount},
		Leverage: order.Leverage(j.kind, 0, j.bot.Leverage), Reason: "manual"}
	if req.Type == exchange.Limit {
		lp, err := order.LimitPrice(m, *req.Price)
		if err != nil {
			return plan{}, err
		}
		l.Price = &lp
	}
	switch {
	case pos != nil && pos.Side != side:
		l.Op, l.Side = opReduce, pos.Side
	case j.kind == exchange.Spot && side == position.Short:
		return plan{}, errs.New(errs.PositionNotFound, "no %s holding to sell (spot has no shorts)", sym)
	case pos != nil:
		l.Op, l.Leverage = opAdd, pos.Leverage
	default:
		l.Op = opOpen
		if err := defaultExits(j, &l); err != nil {
			return plan{}, err
		}
		if err := e.checkExits(ctx, j, m, l); err != nil {
			return plan{}, err
		}
	}
	return plan{Legs: []leg{l}}, nil
}

// defaultExits fills a new position's missing stop-loss and take-profit from the bot.
func defaultExits(j *job, l *leg) error {
	var err error
	if l.StopLoss == nil {
		if l.StopLoss, err = order.ParseAmount(j.bot.StopLoss); err != nil {
			return err
		}
	}
	if l.TakeProfit == nil {
		l.TakeProfit, err = order.ParseAmount(j.bot.TakeProfit)
	}
	return err
}
