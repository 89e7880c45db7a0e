package executor

import (
	"encoding/json"
	"strings"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/signal"
)

// Progress record fields.
const (
	fieldPlan    = "plan"
	prefixReq    = "req:"  // + leg: the order request sent (or about to be sent)
	prefixDone   = "done:" // + leg: the leg's booked outcome
	prefixEquity = "eq:"   // + leg: the bot's equity an entry was sized from (kept when the bot has followers)
	watcherTag   = "watcher"
	opOpen       = "open"
	opAdd        = "add"
	opReduce     = "reduce"
	opProtect    = "protect"
	reasonSignal = "signal"
	reasonManual = "manual"
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
	Price  *httpapi.Number    `json:"price,omitempty"` // limit price, rounded to the tick
	// Size: entries "N%" of the balance or a base amount; reduces the part to close (nil: all).
	Size       *signal.Amount `json:"size,omitempty"`
	Leverage   int            `json:"leverage,omitempty"`
	StopLoss   *signal.Amount `json:"stopLoss,omitempty"`
	TakeProfit *signal.Amount `json:"takeProfit,omitempty"`
	// ClosePercent of a protect leg (stop_loss / take_profit orders).
	ClosePercent httpapi.Number `json:"closePercent,omitzero"`
	// DCALevel is set on DCA entries (1 opens, 2+ adds).
	DCALevel int `json:"dcaLevel,omitempty"`
	// Reason is the trade reason of a reduce: signal, reversal, manual, stop_loss, ...
	Reason string `json:"reason,omitempty"`
	// PositionID pins a watcher exit to the position that triggered it.
	PositionID string `json:"positionId,omitempty"`
	// ClearExit is the exit (stop_loss, take_profit) a watcher exit fired, removed once booked.
	ClearExit string `json:"clearExit,omitempty"`
	// Share sizes a copy signal's entry from the follower's equity (Size is then unused).
	Share *copyShare `json:"share,omitempty"`
	// Exit sizes a copy signal's reduce as a fraction of the follower's position.
	Exit *exitShare `json:"exit,omitempty"`
}

// decide plans the signal of d (decide.go): its legs, a business refusal (a coded error),
// or the *missing value it needs read first.
func decide(d *decideIn) (plan, error) {
	if d.env.Source == queue.SourceManual {
		var req order.Request
		if err := json.Unmarshal(d.env.Signal, &req); err != nil {
			return plan{}, errs.New(errs.InvalidJSON, "malformed order request")
		}
		return d.planManual(req)
	}
	if d.env.Source == queue.SourceCopy {
		var req CopyRequest
		if err := json.Unmarshal(d.env.Signal, &req); err != nil {
			return plan{}, errs.New(errs.InvalidJSON, "malformed copy request")
		}
		return d.planCopy(req)
	}
	var sig signal.Signal
	if d.sig != nil {
		sig = *d.sig
	} else if err := json.Unmarshal(d.env.Signal, &sig); err != nil {
		return plan{}, errs.New(errs.InvalidJSON, "malformed signal")
	}
	if sig.Action.IsEntry() {
		return d.planEntry(sig)
	}
	switch sig.Action {
	case signal.Close, signal.CloseLong, signal.CloseShort:
		return d.planClose(sig)
	}
	return plan{}, errs.New(errs.InvalidAction, "unknown action %q", sig.Action)
}

// resolve turns a symbol as sent into the market's BASE/QUOTE; a bot with a fixed pair
// trades only that pair.
func (d *decideIn) resolve(raw string) (string, error) {
	fixed := ""
	if d.bot.Symbol != "" {
		var err error
		if fixed, err = d.symbols.Resolve(d.bot.Symbol); err != nil {
			return "", errs.New(errs.InvalidSymbol, "the bot's pair %s is not traded on its exchange", d.bot.Symbol)
		}
	}
	if raw == "" {
		if fixed == "" {
			return "", errs.New(errs.MissingSymbol, "symbol required: the bot has no fixed pair")
		}
		return fixed, nil
	}
	sym, err := d.symbols.Resolve(raw)
	if err != nil {
		return "", err
	}
	if fixed != "" && sym != fixed {
		return "", errs.New(errs.InvalidSymbol, "the bot trades %s only", fixed)
	}
	return sym, nil
}

// entry is what an entry signal asks for, checked against the bot's settings before the
// book is read.
type entry struct {
	symbol string
	market exchange.MarketInfo
	side   position.Side
	// level is the DCA level (1: the initial entry); dca says the signal is a DCA entry.
	level int
	dca   bool
	typ   exchange.OrderType
	price *decimal.Decimal // limit price, rounded to the tick
}

// planEntry plans a buy, sell, long or short: on spot a sell reduces the holding; otherwise
// the entry opens a position, adds a DCA level to the one open on its side, or reverses the
// one open on the other side (close, then open).
func (d *decideIn) planEntry(sig signal.Signal) (plan, error) {
	en, err := d.entryOf(sig)
	if err != nil {
		return plan{}, err
	}
	pos, err := d.position(en.symbol)
	if err != nil {
		return plan{}, err
	}
	if d.kind == exchange.Spot && en.side == position.Short {
		return spotSell(en, pos, sig.Size)
	}
	l, err := d.entryLeg(sig, en)
	if err != nil {
		return plan{}, err
	}
	legs, err := d.entryLegs(en, l, pos)
	if err != nil {
		return plan{}, err
	}
	last := &legs[len(legs)-1]
	if last.Op == opOpen {
		// A new position (a reversal's too) takes the bot's default exits where the signal
		// gives none.
		if err := defaultExits(d.bot, last); err != nil {
			return plan{}, err
		}
	}
	if err := d.checkExits(en.market, *last); err != nil {
		return plan{}, err
	}
	return plan{Legs: legs}, nil
}

// entryOf reads an entry signal: its market, side, DCA level (refused when the bot does not
// DCA or has fewer levels) and order type.
func (d *decideIn) entryOf(sig signal.Signal) (entry, error) {
	sym, err := d.resolve(sig.Symbol)
	if err != nil {
		return entry{}, err
	}
	en := entry{symbol: sym, market: d.markets[sym], side: position.Long, level: max(sig.DCALevel, 1), typ: exchange.Market}
	if sig.Action == signal.Sell {
		en.side = position.Short
	}
	en.dca = sig.DCA || en.level >= 2
	if en.dca {
		if !d.bot.DCA.Enabled {
			return entry{}, errs.New(errs.DCADisabled, "DCA is not enabled for this bot")
		}
		if en.level > int(d.bot.DCA.MaxLevels) {
			return entry{}, errs.New(errs.DCAMaxLevels, "dcaLevel %d is above the bot's maximum of %d levels", en.level, d.bot.DCA.MaxLevels)
		}
	}
	if sig.Price != nil {
		lp, err := order.LimitPrice(en.market, (*sig.Price).Decimal)
		if err != nil {
			return entry{}, err
		}
		en.typ, en.price = exchange.Limit, &lp
	}
	return en, nil
}

// spotSell plans a spot sell: it reduces or closes the long holding; there are no spot
// shorts.
func spotSell(en entry, pos *position.Position, size *signal.Amount) (plan, error) {
	if en.dca {
		return plan{}, errs.New(errs.DCANoPosition, "no short position to add to: spot has no shorts")
	}
	if pos == nil {
		return plan{}, errs.New(errs.PositionNotFound, "no %s holding to sell (spot has no shorts)", en.symbol)
	}
	return plan{Legs: []leg{{Op: opReduce, Symbol: en.symbol, Side: position.Long, Type: en.typ, Price: httpapi.NumOrNil(en.price),
		Size: size, Reason: reasonSignal}}}, nil
}

// entryLeg is the entry's order leg, before the book decides its op: its size (the bot's
// positionSize when the signal has none), leverage and exits.
func (d *decideIn) entryLeg(sig signal.Signal, en entry) (leg, error) {
	size := sig.Size
	if size == nil {
		var err error
		if size, err = order.ParseAmount(d.bot.PositionSize); err != nil {
			return leg{}, err
		}
		if size == nil {
			return leg{}, errs.New(errs.InvalidAmount, "no size: the signal has none and the bot has no positionSize")
		}
	}
	l := leg{Symbol: en.symbol, Side: en.side, Type: en.typ, Price: httpapi.NumOrNil(en.price), Size: size,
		Leverage: order.Leverage(d.kind, sig.Leverage, d.bot.Leverage), StopLoss: sig.StopLoss, TakeProfit: sig.TakeProfit}
	if en.dca {
		l.DCALevel = en.level
	}
	return l, nil
}

// entryLegs places the entry on the book: a DCA add to the position open on its side (the
// next level only), a reversal of the one open on the other side (when the bot reverses),
// or a new position.
func (d *decideIn) entryLegs(en entry, l leg, pos *position.Position) ([]leg, error) {
	switch {
	case pos != nil && pos.Side == en.side:
		if !en.dca {
			return nil, errs.New(errs.InvalidAction,
				"a %s %s position is already open: send dca true with dcaLevel %d to add to it, or close it first",
				pos.Side, en.symbol, pos.DCALevel+1)
		}
		if en.level != pos.DCALevel+1 {
			return nil, errs.New(errs.DCAInvalidLevel, "dcaLevel %d is out of sequence: the %s position is at level %d, the next is %d",
				en.level, pos.Side, pos.DCALevel, pos.DCALevel+1)
		}
		l.Op, l.Leverage = opAdd, pos.Leverage
		return []leg{l}, nil
	case pos != nil: // the opposite side is open (futures)
		if en.dca && en.level >= 2 {
			return nil, errs.New(errs.DCANoPosition, "no %s %s position to add to", en.side, en.symbol)
		}
		if !d.bot.Reversals {
			return nil, errs.New(errs.InvalidAction, "a %s %s position is open and the bot does not reverse: close it first", pos.Side, en.symbol)
		}
		l.Op = opOpen
		return []leg{{Name: "reverse", Op: opReduce, Symbol: en.symbol, Side: pos.Side, Type: exchange.Market, Reason: "reversal"}, l}, nil
	default:
		if en.dca && en.level >= 2 {
			return nil, errs.New(errs.DCANoPosition, "no %s %s position to add to: send dcaLevel 1 first", en.side, en.symbol)
		}
		l.Op = opOpen
		return []leg{l}, nil
	}
}

// checkExits refuses absolute exits on the wrong side of the expected entry before anything
// trades.
func (d *decideIn) checkExits(m exchange.MarketInfo, l leg) error {
	if (l.StopLoss == nil || l.StopLoss.Percent) && (l.TakeProfit == nil || l.TakeProfit.Percent) {
		return nil
	}
	ref, err := d.refPrice(m, l.Price)
	if err != nil {
		return err
	}
	if err := order.CheckExit(l.Side, l.StopLoss, ref, true); err != nil {
		return err
	}
	return order.CheckExit(l.Side, l.TakeProfit, ref, false)
}

func (d *decideIn) planClose(sig signal.Signal) (plan, error) {
	var symbols []string
	if sig.Symbol != "" || d.bot.Symbol != "" {
		sym, err := d.resolve(sig.Symbol)
		if err != nil {
			return plan{}, err
		}
		symbols = []string{sym}
	} else {
		open, err := d.openPositions()
		if err != nil {
			return plan{}, err
		}
		for _, p := range open {
			symbols = append(symbols, p.Symbol)
		}
	}
	want := map[signal.Action]position.Side{signal.CloseLong: position.Long, signal.CloseShort: position.Short}[sig.Action]
	reason, posID, clear := reasonSignal, "", ""
	if d.env.Source == queue.SourceManual {
		reason = reasonManual
	}
	if d.env.Source == queue.SourceWatcher {
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
		p, err := d.position(sym)
		if err != nil {
			return plan{}, err
		}
		if p == nil || (want != "" && p.Side != want) || (posID != "" && p.ID != posID) {
			continue
		}
		l := leg{Name: "close:" + sym, Op: opReduce, Symbol: sym, Side: p.Side, Type: exchange.Market,
			Size: sig.Size, Reason: reason, PositionID: posID, ClearExit: clear}
		if sig.Price != nil {
			lp, err := order.LimitPrice(d.markets[sym], (*sig.Price).Decimal)
			if err != nil {
				return plan{}, err
			}
			l.Type, l.Price = exchange.Limit, httpapi.NumOrNil(&lp)
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
func (d *decideIn) planManual(req order.Request) (plan, error) {
	if err := req.Validate(); err != nil {
		return plan{}, err
	}
	if req.Type == order.Close {
		return d.planClose(manualClose(req))
	}
	sym, err := d.resolve(req.Symbol)
	if err != nil {
		return plan{}, err
	}
	pos, err := d.position(sym)
	if err != nil {
		return plan{}, err
	}
	var l leg
	switch req.Type {
	case exchange.StopLoss, exchange.TakeProfit:
		l, err = d.manualProtect(req, sym, pos)
	default:
		l, err = d.manualOrder(req, sym, pos)
	}
	if err != nil {
		return plan{}, err
	}
	return plan{Legs: []leg{l}}, nil
}

// manualClose is a close request as the close signal planClose plans: all of the position,
// or closePercent of it.
func manualClose(req order.Request) signal.Signal {
	sig := signal.Signal{Action: signal.Close, Symbol: req.Symbol}
	if req.ClosePercent != nil && !req.ClosePercent.Equal(decimal.NewFromInt(100)) {
		sig.Size = &signal.Amount{Value: *req.ClosePercent, Percent: true}
	}
	return sig
}

// manualProtect is the leg of a stop_loss or take_profit request: the open position's exit
// at the trigger rounded to the tick, on the protecting side of the market price.
func (d *decideIn) manualProtect(req order.Request, sym string, pos *position.Position) (leg, error) {
	if pos == nil {
		return leg{}, errs.New(errs.PositionNotFound, "no open %s position to protect", sym)
	}
	stop := req.Type == exchange.StopLoss
	trigger := req.StopPrice
	if !stop {
		trigger = req.TakeProfitPrice
	}
	price, err := order.LimitPrice(d.markets[sym], (*trigger).Decimal)
	if err != nil {
		return leg{}, err
	}
	now, err := d.ticker(sym)
	if err != nil {
		return leg{}, err
	}
	l := leg{Op: opProtect, Symbol: sym, Side: pos.Side, ClosePercent: *req.ClosePercent, PositionID: pos.ID}
	a := &signal.Amount{Value: httpapi.Num(price)}
	if stop {
		l.StopLoss = a
	} else {
		l.TakeProfit = a
	}
	return l, order.CheckExit(pos.Side, a, now, stop)
}

// manualOrder is the leg of a market or limit request: it reduces a position open on the
// other side, adds to one on its side, or opens one.
func (d *decideIn) manualOrder(req order.Request, sym string, pos *position.Position) (leg, error) {
	m := d.markets[sym]
	side := position.SideOf(req.Side)
	l := leg{Symbol: sym, Side: side, Type: req.Type, Leverage: order.Leverage(d.kind, 0, d.bot.Leverage), Reason: reasonManual}
	if req.Amount != nil {
		l.Size = &signal.Amount{Value: *req.Amount}
	} else if pos == nil || pos.Side == side {
		// An entry without an amount is sized as the bot sizes a signal's.
		size, err := order.ParseAmount(d.bot.PositionSize)
		if err != nil {
			return leg{}, err
		}
		if size == nil {
			return leg{}, errs.New(errs.InvalidAmount, "no amount: the order has none and the bot has no positionSize")
		}
		l.Size = size
	} else {
		// A reduce without an amount would close a share of the position nobody chose.
		return leg{}, errs.New(errs.InvalidAmount, "an order that reduces the %s %s position needs an amount; close_position closes a percentage", pos.Side, sym)
	}
	if req.Type == exchange.Limit {
		lp, err := order.LimitPrice(m, (*req.Price).Decimal)
		if err != nil {
			return leg{}, err
		}
		l.Price = httpapi.NumOrNil(&lp)
	}
	if (req.StopLoss != nil || req.TakeProfit != nil) && pos != nil {
		return leg{}, errs.New(errs.InvalidAction,
			"stopLoss and takeProfit set the exits of a new position and a %s %s position is open: use stop_loss or take_profit on it",
			pos.Side, sym)
	}
	switch {
	case pos != nil && pos.Side != side:
		l.Op, l.Side = opReduce, pos.Side
	case d.kind == exchange.Spot && side == position.Short:
		return leg{}, errs.New(errs.PositionNotFound, "no %s holding to sell (spot has no shorts)", sym)
	case pos != nil:
		l.Op, l.Leverage = opAdd, pos.Leverage
	default:
		l.Op = opOpen
		if req.StopLoss != nil {
			l.StopLoss = &signal.Amount{Value: *req.StopLoss}
		}
		if req.TakeProfit != nil {
			l.TakeProfit = &signal.Amount{Value: *req.TakeProfit}
		}
		if err := defaultExits(d.bot, &l); err != nil {
			return leg{}, err
		}
		if err := d.checkExits(m, l); err != nil {
			return leg{}, err
		}
	}
	return l, nil
}

// defaultExits fills a new position's missing stop-loss and take-profit from the bot.
func defaultExits(bot registry.Bot, l *leg) error {
	var err error
	if l.StopLoss == nil {
		if l.StopLoss, err = order.ParseAmount(bot.StopLoss); err != nil {
			return err
		}
	}
	if l.TakeProfit == nil {
		l.TakeProfit, err = order.ParseAmount(bot.TakeProfit)
	}
	return err
}
