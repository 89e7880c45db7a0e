package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/risk"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/store"
)

// runLeg places (or finds) a leg's order and books it. A failure that is the exchange's
// refusal of the order is marked an execution error (execError).
func (e *Executor) runLeg(ctx context.Context, j *job, l leg) (legDone, error) {
	if s := j.progress[prefixDone+l.Name]; s != "" {
		var d legDone
		err := json.Unmarshal([]byte(s), &d)
		return d, err
	}
	if l.Op == opProtect {
		if err := e.savePlan(ctx, j); err != nil {
			return legDone{}, err
		}
		return e.bookLeg(ctx, j, l, nil, nil)
	}
	var req exchange.OrderRequest
	if s := j.progress[prefixReq+l.Name]; s != "" {
		// A previous attempt got as far as the exchange: never place blindly again.
		if err := json.Unmarshal([]byte(s), &req); err != nil {
			return legDone{}, err
		}
		o, err := e.findStaged(ctx, j, l, req)
		if err != nil {
			return legDone{}, err
		}
		if o != nil {
			return e.bookLeg(ctx, j, l, &req, o)
		}
	} else if e.unstaged(j, l) {
		return e.runUnstaged(ctx, j, l)
	} else {
		var err error
		if req, err = e.newRequest(ctx, j, l); err != nil {
			return legDone{}, err
		}
	}
	o, err := e.place(ctx, j, l, req)
	if err != nil {
		return legDone{}, err
	}
	return e.bookLeg(ctx, j, l, &req, &o)
}

// A paper leg is placed without staging its request and a pending order record first
// (stagePending), when nothing but the order itself must survive a crash between the fill
// and its booking. The paper exchange stores every order under its client order ID and
// answers a placement of an ID it holds with that order, so a retry that plans again from
// the unchanged book (the fill is not booked) makes the same legs with the same client order
// IDs, and its placement finds the fill instead of filling again, whatever the balance the
// retry sized from. The leg is staged as before when the retry could not rebuild something
// else exactly: the bot's equity its followers' copies are sized from, and the starting
// equity a bot's first entry records.

// unstaged says whether leg l is placed without staging (see above).
func (e *Executor) unstaged(j *job, l leg) bool {
	if !isPaper(j) || len(j.followers) > 0 {
		return false
	}
	if l.Op == opReduce {
		return true
	}
	return j.view.started != nil && *j.view.started
}

// runUnstaged sizes, places and books an unstaged leg. Its order record is not stored before
// the booking, which writes it as new.
func (e *Executor) runUnstaged(ctx context.Context, j *job, l leg) (legDone, error) {
	cid := order.ClientOrderID(j.env.SignalID, l.Name)
	j.view.setRec(cid, viewRec{})
	req, err := e.buildRequest(ctx, j, l, cid)
	if err != nil {
		// A retry sizes from the balance the fill left, which may size no order at all:
		// the fill an earlier attempt placed is booked instead.
		o, gerr := j.acct.Exchange.GetOrder(ctx, j.kind, l.Symbol, cid)
		if gerr == nil {
			req = exchange.OrderRequest{ClientOrderID: cid, Symbol: o.Symbol, Kind: o.Kind, Side: o.Side,
				Type: o.Type, Amount: o.Amount, Leverage: e.placedLeverage(ctx, j, l)}
			if l.Price != nil {
				req.Price = (*l.Price).Decimal
			}
			req.ReduceOnly = l.Op == opReduce && j.kind == exchange.Futures
			return e.bookLeg(ctx, j, l, &req, &o)
		}
		if !errors.Is(gerr, exchange.ErrOrderNotFound) {
			return legDone{}, gerr
		}
		if serr := e.savePlan(ctx, j); serr != nil {
			return legDone{}, serr
		}
		return legDone{}, err
	}
	o, err := e.place(ctx, j, l, req)
	if err != nil {
		return legDone{}, err
	}
	return e.bookLeg(ctx, j, l, &req, &o)
}

// placedLeverage is the leverage sizing gives leg l's order (sizeEntry, sizeExit): the
// position's for an add or a reduce, the leg's for a new position, 1 on spot.
func (e *Executor) placedLeverage(ctx context.Context, j *job, l leg) int {
	lev := l.Leverage
	if l.Op != opOpen {
		if pos, err := e.position(ctx, j, l.Symbol); err == nil && pos != nil {
			lev = pos.Leverage
		}
	}
	if j.kind != exchange.Futures || lev < 1 {
		return 1
	}
	return lev
}

// placedUnstaged says whether an earlier attempt placed unstaged leg l's order.
func (e *Executor) placedUnstaged(ctx context.Context, j *job, l leg) (bool, error) {
	if !e.unstaged(j, l) {
		return false, nil
	}
	_, err := j.acct.Exchange.GetOrder(ctx, j.kind, l.Symbol, order.ClientOrderID(j.env.SignalID, l.Name))
	if errors.Is(err, exchange.ErrOrderNotFound) {
		return false, nil
	}
	return err == nil, err
}

// findStaged resolves a leg whose request an earlier attempt staged: the recorded refusal
// again, the order when the exchange has it, or nil once the request may be placed again:
// not before every earlier request of it can no longer land (inflight.go).
func (e *Executor) findStaged(ctx context.Context, j *job, l leg, req exchange.OrderRequest) (*exchange.Order, error) {
	rec, err := position.ReadOrder(ctx, e.rdb, j.bot.ID, order.ClientOrderID(j.env.SignalID, l.Name))
	if err != nil {
		return nil, err
	}
	if rec != nil && rec.Status == exchange.StatusRejected {
		code := errs.Code(rec.Code)
		if code == "" {
			code = errs.ExchangeError
		}
		return nil, execError{errs.New(code, "%s", rec.Error)}
	}
	return e.lookupStaged(ctx, j, l, req)
}

// newRequest sizes a leg's order request and stages it (stagePending).
func (e *Executor) newRequest(ctx context.Context, j *job, l leg) (exchange.OrderRequest, error) {
	req, err := e.buildRequest(ctx, j, l, order.ClientOrderID(j.env.SignalID, l.Name))
	if err != nil {
		// The plan is stored before the failure is answered, as when it was stored
		// before sizing (and if another attempt's plan won, that one is followed).
		if serr := e.savePlan(ctx, j); serr != nil {
			return req, serr
		}
		return req, err
	}
	return req, e.stagePending(ctx, j, l, req)
}

// place sends a staged request to the exchange. A refusal is recorded on the order and
// returned as an execution error.
func (e *Executor) place(ctx context.Context, j *job, l leg, req exchange.OrderRequest) (exchange.Order, error) {
	t0 := time.Now()
	o, err := j.acct.Exchange.PlaceOrder(ctx, req)
	e.m.exchange.WithLabelValues(j.acct.Venue).Observe(time.Since(t0).Seconds())
	if err != nil {
		// A refusal is final; an unknown outcome (no answer, time-out: ErrUnreachable) is
		// not: the signal is redelivered and the order looked up by client ID first.
		if ee, ok := errs.As(err); ok && !errors.Is(err, exchange.ErrUnreachable) {
			if rerr := e.reject(ctx, j, l, req, ee); rerr != nil {
				return o, rerr
			}
			return o, execError{err}
		}
		return o, err
	}
	if e.afterPlace != nil {
		if err := e.afterPlace(l.Name); err != nil {
			return o, err
		}
	}
	return o, nil
}

// buildRequest sizes and prices a leg's order now (after the legs before it were booked).
func (e *Executor) buildRequest(ctx context.Context, j *job, l leg, cid string) (exchange.OrderRequest, error) {
	m, ok := j.markets[l.Symbol]
	if !ok {
		return exchange.OrderRequest{}, errs.New(errs.InvalidSymbol, "unknown symbol %s", l.Symbol)
	}
	req := exchange.OrderRequest{ClientOrderID: cid, Symbol: l.Symbol, Kind: j.kind, Type: l.Type}
	if l.Type == exchange.Limit && l.Price != nil {
		req.Price = (*l.Price).Decimal
	}
	switch l.Op {
	case opOpen, opAdd:
		return req, e.sizeEntry(ctx, j, l, m, &req)
	case opReduce:
		return req, e.sizeExit(ctx, j, l, m, &req)
	}
	return req, fmt.Errorf("leg op %q places no order", l.Op)
}

// sizeEntry sizes an entry from the free quote balance at the expected price, with the
// leverage of the position added to, within the bot's maximum exposure. The balance is
// kept for the booking (the bot's starting equity, if this is its first entry).
func (e *Executor) sizeEntry(ctx context.Context, j *job, l leg, m exchange.MarketInfo, req *exchange.OrderRequest) error {
	price, err := e.refPrice(ctx, j, m, l.Price)
	if err != nil {
		return err
	}
	bal, err := e.quoteBalance(ctx, j, m.Quote)
	if err != nil {
		return err
	}
	lev := l.Leverage
	if l.Op == opAdd {
		pos, err := e.position(ctx, j, l.Symbol)
		if err != nil {
			return err
		}
		if pos == nil || pos.Side != l.Side {
			return errs.New(errs.DCANoPosition, "no %s %s position to add to", l.Side, l.Symbol)
		}
		lev = pos.Leverage
	}
	if j.kind != exchange.Futures || lev < 1 {
		lev = 1
	}
	j.equity = ""
	// The bot's equity (risk.Equity) is read when something needs it: the exposure check,
	// a copy's size, and the copies of this entry (the master has followers).
	var open []position.Position
	if j.limits.MaxExposure.IsPositive() || l.Share != nil || len(j.followers) > 0 {
		if open, err = e.openPositions(ctx, j); err != nil {
			return err
		}
	}
	equity, used := risk.Equity(bal.Free, open)
	size := l.Size
	if a, ok := j.env.Admitted[l.Name]; ok {
		// The amount the app's policy admitted (or its user approved) at the call.
		size = &signal.Amount{Value: a}
	} else if l.Share != nil {
		v, err := l.Share.amount(equity)
		if err != nil {
			return err
		}
		size = &signal.Amount{Value: httpapi.Num(v)}
	}
	amount, err := order.EntryAmount(order.Entry{Market: m, Size: *size, Price: price,
		Available: bal.Free, FeeRate: j.acct.FeeRate, Leverage: lev})
	if err != nil {
		return err
	}
	if err := risk.CheckExposure(j.limits, used, position.InitialMargin(amount.Mul(price), lev), bal.Free); err != nil {
		return err
	}
	req.Side, req.Amount, req.Leverage = l.Side.EntrySide(), amount, lev
	if j.free == nil {
		j.free = map[string]decimal.Decimal{}
	}
	j.free[l.Name] = bal.Free
	if len(j.followers) > 0 {
		j.equity = equity.String()
	}
	return nil
}

// sizeExit sizes a reduce: the part of the open position (the one planned for, when pinned)
// the leg closes.
func (e *Executor) sizeExit(ctx context.Context, j *job, l leg, m exchange.MarketInfo, req *exchange.OrderRequest) error {
	pos, err := e.position(ctx, j, l.Symbol)
	if err != nil {
		return err
	}
	if pos == nil || pos.Side != l.Side || (l.PositionID != "" && pos.ID != l.PositionID) {
		return errs.New(errs.PositionNotFound, "no open %s %s position to close", l.Side, l.Symbol)
	}
	size := l.Size
	if l.Exit != nil {
		size = l.Exit.size(pos.Size.Decimal)
	}
	amount, err := order.ExitAmount(m, size, pos.Size.Decimal)
	if err != nil {
		return err
	}
	req.Side, req.Amount, req.Leverage = pos.Side.ExitSide(), amount, pos.Leverage
	req.ReduceOnly = j.kind == exchange.Futures
	return nil
}

// stagePending stores the request, its send time (Redis's clock; the exchange call follows
// at once: see inflight.go) and a pending order record before the exchange call, so that a
// retry knows to look the order up instead of placing it again, and how long to wait before
// it may conclude the order never landed. The first leg of a plan made by this attempt
// stores the plan in the same step (stageWithPlan).
func (e *Executor) stagePending(ctx context.Context, j *job, l leg, req exchange.OrderRequest) error {
	data, err := json.Marshal(req)
	if err != nil {
		return err
	}
	rec := position.PendingOrder(req, j.env.SignalID, j.bot.ID, l.Name, j.now.UnixMilli())
	if j.unsaved != nil {
		if err := e.stageWithPlan(ctx, j, l, data, rec); err != nil {
			return err
		}
	} else if err := e.stageTx(ctx, j, func(p redis.Pipeliner) error {
		p.HSet(ctx, j.sigKey(), prefixReq+l.Name, data)
		if j.equity != "" {
			p.HSet(ctx, j.sigKey(), prefixEquity+l.Name, j.equity)
		}
		stampSentScript.Eval(ctx, p, []string{j.sigKey()}, prefixSent+l.Name)
		p.Expire(ctx, j.sigKey(), ProgressTTL)
		return position.StageOrder(ctx, p, rec, true)
	}); err != nil {
		return err
	}
	j.progress[prefixReq+l.Name] = string(data)
	if j.equity != "" {
		j.progress[prefixEquity+l.Name] = j.equity
	}
	j.equity = ""
	return nil
}

// isPaper says whether j's account trades on the paper exchange.
func isPaper(j *job) bool {
	_, ok := j.acct.Exchange.(*paper.Exchange)
	return ok
}

// stageTx is how stagePending's transaction runs: a live order's staging must be on
// --redis-min-replicas-ack replicas before the exchange call, so that a failover of Redis
// cannot lose the record of an order that moves money (store.AckTxPipelined). A paper
// order moves none, and its staging skips the wait.
func (e *Executor) stageTx(ctx context.Context, j *job, fn func(redis.Pipeliner) error) error {
	var err error
	if isPaper(j) {
		_, err = e.rdb.TxPipelined(ctx, fn)
	} else {
		_, err = store.AckTxPipelined(ctx, e.rdb, fn)
	}
	return err
}

// stageWithPlanScript is the plan's HSETNX and, only if it won, stagePending's transaction
// (the request and its send time under the signal, the new pending order record written by
// position's Lua), atomically: one round trip instead of two. Either both are stored or,
// when another attempt's plan is there, nothing is. KEYS[1] is the signal's progress and
// ARGV[1..6] the plan's field and value, the request's field and value, the progress TTL (s)
// and the send time's field, ARGV[7..8] the sizing equity's field and value ("": none); the
// order record's write takes KEYS[2..3] and ARGV[9..11].
//
// Crash points: before the script, nothing of the signal is stored and nothing was sent; a
// retry plans again from the same book. After it, plan and pending order are stored before
// the exchange call; a retry continues the plan and looks the order up by client order ID
// before placing it (runLeg). "Plan stored, pending order not" does not occur.
var stageWithPlanScript = redis.NewScript(redisNowMS + `
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[3], ARGV[4], ARGV[6], stamp)
if ARGV[8] ~= '' then redis.call('HSET', KEYS[1], ARGV[7], ARGV[8]) end
redis.call('EXPIRE', KEYS[1], ARGV[5])
` + position.OrderLua(2, 9) + `
return 1
`)

// stageWithPlan runs stageWithPlanScript; errPlanLost when another attempt's plan is stored.
func (e *Executor) stageWithPlan(ctx context.Context, j *job, l leg, req []byte, rec position.OrderRecord) error {
	w, err := position.NewOrderWrite(rec, true)
	if err != nil {
		return err
	}
	keys := append([]string{j.sigKey()}, w.Keys...)
	args := append([]any{fieldPlan, j.unsaved, prefixReq + l.Name, req, int64(ProgressTTL / time.Second),
		prefixSent + l.Name, prefixEquity + l.Name, j.equity}, w.Args...)
	var cmd *redis.Cmd
	if isPaper(j) {
		cmd = stageWithPlanScript.Run(ctx, e.rdb, keys, args...)
	} else {
		// A live order's staging must be on the replicas before money moves (stageTx).
		cmd = store.AckScript(ctx, e.rdb, stageWithPlanScript, keys, args...)
	}
	won, err := cmd.Int()
	if err != nil {
		return err
	}
	if won == 0 {
		return errPlanLost
	}
	j.planSaved()
	return nil
}

// reject moves the pending order record to rejected with the exchange's reason; an
// unstaged leg's record is stored rejected.
func (e *Executor) reject(ctx context.Context, j *job, l leg, req exchange.OrderRequest, ee *errs.Error) error {
	rec, err := position.ReadOrder(ctx, e.rdb, j.bot.ID, req.ClientOrderID)
	if err != nil {
		return err
	}
	isNew := rec == nil
	if isNew {
		if !e.unstaged(j, l) {
			return nil
		}
		r := position.PendingOrder(req, j.env.SignalID, j.bot.ID, l.Name, j.now.UnixMilli())
		rec = &r
	}
	changed, err := rec.Transition(exchange.StatusRejected, e.now().UnixMilli())
	if err != nil || !changed {
		return nil // terminal already: nothing to record
	}
	rec.Code, rec.Error = string(ee.Code), ee.Message
	_, err = e.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		return position.StageOrder(ctx, p, *rec, isNew)
	})
	return err
}
