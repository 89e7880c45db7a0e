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
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/risk"
	"github.com/sigops/sigops/runtime/store"
)

// maxTxRetries bounds optimistic-transaction retries of a booking.
const maxTxRetries = 20

// legDone is a booked leg, stored under the signal so that a retry rebuilds its result.
type legDone struct {
	Message string          `json:"message"`
	Order   *exchange.Order `json:"order,omitempty"`
	// Halt says why the remaining legs were not run (a risk pause this leg triggered).
	Halt string `json:"halt,omitempty"`
}

// runLeg places (or finds) a leg's order and books it. The bool says whether a failure is
// an execution error (the exchange refused the order).
func (e *Executor) runLeg(ctx context.Context, j *job, l leg) (legDone, bool, error) {
	if s := j.progress[prefixDone+l.Name]; s != "" {
		var d legDone
		err := json.Unmarshal([]byte(s), &d)
		return d, false, err
	}
	if l.Op == opProtect {
		if err := e.savePlan(ctx, j); err != nil {
			return legDone{}, false, err
		}
		d, err := e.bookLeg(ctx, j, l, nil, nil)
		return d, false, err
	}
	ex := j.acct.Exchange
	cid := order.ClientOrderID(j.env.SignalID, l.Name)
	var req exchange.OrderRequest
	if s := j.progress[prefixReq+l.Name]; s != "" {
		// A previous attempt got as far as the exchange: never place blindly again.
		if err := json.Unmarshal([]byte(s), &req); err != nil {
			return legDone{}, false, err
		}
		rec, err := position.ReadOrder(ctx, e.rdb, j.bot.ID, cid)
		if err != nil {
			return legDone{}, false, err
		}
		if rec != nil && rec.Status == exchange.StatusRejected {
			code := errs.Code(rec.Code)
			if code == "" {
				code = errs.ExchangeError
			}
			return legDone{}, true, errs.New(code, "%s", rec.Error)
		}
		// The order, or nil once it may be placed again: not before every earlier request
		// of it can no longer land (inflight.go).
		o, err := e.lookupStaged(ctx, j, l, req)
		if err != nil {
			return legDone{}, false, err
		}
		if o != nil {
			d, err := e.bookLeg(ctx, j, l, &req, o)
			return d, false, err
		}
	} else {
		var err error
		if req, err = e.buildRequest(ctx, j, l, cid); err != nil {
			// The plan is stored before the failure is answered, as when it was stored
			// before sizing (and if another attempt's plan won, that one is followed).
			if serr := e.savePlan(ctx, j); serr != nil {
				return legDone{}, false, serr
			}
			return legDone{}, false, err
		}
		if err := e.stagePending(ctx, j, l, req); err != nil {
			return legDone{}, false, err
		}
	}
	t0 := time.Now()
	o, err := ex.PlaceOrder(ctx, req)
	e.m.exchange.WithLabelValues(j.acct.Venue).Observe(time.Since(t0).Seconds())
	if err != nil {
		// A refusal is final; an unknown outcome (no answer, time-out: ErrUnreachable) is
		// not: the signal is redelivered and the order looked up by client ID first.
		if ee, ok := errs.As(err); ok && !errors.Is(err, exchange.ErrUnreachable) {
			if rerr := e.reject(ctx, j, cid, ee); rerr != nil {
				return legDone{}, false, rerr
			}
			return legDone{}, true, err
		}
		return legDone{}, false, err
	}
	if e.afterPlace != nil {
		if err := e.afterPlace(l.Name); err != nil {
			return legDone{}, false, err
		}
	}
	d, err := e.bookLeg(ctx, j, l, &req, &o)
	return d, false, err
}

// buildRequest sizes and prices a leg's order now (after the legs before it were booked).
func (e *Executor) buildRequest(ctx context.Context, j *job, l leg, cid string) (exchange.OrderRequest, error) {
	m, ok := j.markets[l.Symbol]
	if !ok {
		return exchange.OrderRequest{}, errs.New(errs.InvalidSymbol, "unknown symbol %s", l.Symbol)
	}
	req := exchange.OrderRequest{ClientOrderID: cid, Symbol: l.Symbol, Kind: j.kind, Type: l.Type}
	if l.Type == exchange.Limit && l.Price != nil {
		req.Price = *l.Price
	}
	switch l.Op {
	case opOpen, opAdd:
		price, err := e.refPrice(ctx, j, m, l.Price)
		if err != nil {
			return req, err
		}
		bal, err := e.quoteBalance(ctx, j, m.Quote)
		if err != nil {
			return req, err
		}
		lev := l.Leverage
		if l.Op == opAdd {
			pos, err := e.position(ctx, j, l.Symbol)
			if err != nil {
				return req, err
			}
			if pos == nil || pos.Side != l.Side {
				return req, errs.New(errs.DCANoPosition, "no %s %s position to add to", l.Side, l.Symbol)
			}
			lev = pos.Leverage
		}
		if j.kind != exchange.Futures || lev < 1 {
			lev = 1
		}
		amount, err := order.EntryAmount(order.Entry{Market: m, Size: *l.Size, Price: price,
			Available: bal.Free, FeeRate: j.acct.FeeRate, Leverage: lev})
		if err != nil {
			return req, err
		}
		if j.limits.MaxExposure.IsPositive() {
			open, err := e.openPositions(ctx, j)
			if err != nil {
				return req, err
			}
			used := decimal.Zero
			for _, p := range open {
				used = used.Add(p.Margin)
			}
			if err := risk.CheckExposure(j.limits, used, position.InitialMargin(amount.Mul(price), lev), bal.Free); err != nil {
				return req, err
			}
		}
		req.Side, req.Amount, req.Leverage = l.Side.EntrySide(), amount, lev
	case opReduce:
		pos, err := e.position(ctx, j, l.Symbol)
		if err != nil {
			return req, err
		}
		if pos == nil || pos.Side != l.Side || (l.PositionID != "" && pos.ID != l.PositionID) {
			return req, errs.New(errs.PositionNotFound, "no open %s %s position to close", l.Side, l.Symbol)
		}
		amount, err := order.ExitAmount(m, l.Size, pos.Size)
		if err != nil {
			return req, err
		}
		req.Side, req.Amount, req.Leverage = pos.Side.ExitSide(), amount, pos.Leverage
		req.ReduceOnly = j.kind == exchange.Futures
	default:
		return req, fmt.Errorf("leg op %q places no order", l.Op)
	}
	return req, nil
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
	now := j.now.UnixMilli()
	rec := position.OrderRecord{
		ClientOrderID: req.ClientOrderID, SignalID: j.env.SignalID, BotID: j.bot.ID, Leg: l.Name,
		Symbol: req.Symbol, Kind: req.Kind, Side: req.Side, Type: req.Type, Status: exchange.StatusPending,
		Amount: req.Amount, Price: req.Price, ReduceOnly: req.ReduceOnly, Leverage: req.Leverage,
		CreatedAt: now, UpdatedAt: now,
	}
	if j.unsaved != nil {
		if err := e.stageWithPlan(ctx, j, l, data, rec); err != nil {
			return err
		}
	} else if _, err := e.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, j.sigKey(), prefixReq+l.Name, data)
		stampSentScript.Eval(ctx, p, []string{j.sigKey()}, prefixSent+l.Name)
		p.Expire(ctx, j.sigKey(), ProgressTTL)
		return position.StageOrder(ctx, p, rec, true)
	}); err != nil {
		return err
	}
	j.progress[prefixReq+l.Name] = string(data)
	return nil
}

// stageWithPlanScript is the plan's HSETNX and, only if it won, stagePending's transaction
// (the request and its send time under the signal, the pending order record as
// position.StageOrder writes a new one), atomically: one round trip instead of two. Either
// both are stored or, when another attempt's plan is there, nothing is.
//
// Crash points: before the script, nothing of the signal is stored and nothing was sent; a
// retry plans again from the same book. After it, plan and pending order are stored before
// the exchange call, as they were when written one after the other; a retry continues the
// plan and looks the order up by client order ID before placing it (runLeg). The state
// "plan stored, pending order not" no longer occurs; it was handled as "nothing sent yet",
// which the retry still is. TestStageWithPlanWritesWhatStageOrderWrites keeps the record's
// writes in step with position.StageOrder.
var stageWithPlanScript = redis.NewScript(redisNowMS + `
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[3], ARGV[4], ARGV[10], stamp)
redis.call('EXPIRE', KEYS[1], ARGV[5])
redis.call('SET', KEYS[2], ARGV[6], 'EX', ARGV[7])
redis.call('LPUSH', KEYS[3], ARGV[8])
redis.call('LTRIM', KEYS[3], 0, tonumber(ARGV[9]) - 1)
return 1
`)

// stageWithPlan runs stageWithPlanScript; errPlanLost when another attempt's plan is stored.
func (e *Executor) stageWithPlan(ctx context.Context, j *job, l leg, req []byte, rec position.OrderRecord) error {
	recData, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	keys := []string{j.sigKey(), store.BookOrder(rec.BotID, rec.ClientOrderID), store.BookOrders(rec.BotID)}
	won, err := stageWithPlanScript.Run(ctx, e.rdb, keys,
		fieldPlan, j.unsaved, prefixReq+l.Name, req, int64(ProgressTTL/time.Second),
		recData, int64(position.OrderTTL/time.Second), rec.ClientOrderID, position.MaxOrders,
		prefixSent+l.Name).Int()
	if err != nil {
		return err
	}
	if won == 0 {
		return errPlanLost
	}
	j.planSaved()
	return nil
}

// reject moves the pending order record to rejected with the exchange's reason.
func (e *Executor) reject(ctx context.Context, j *job, cid string, ee *errs.Error) error {
	rec, err := position.ReadOrder(ctx, e.rdb, j.bot.ID, cid)
	if err != nil || rec == nil {
		return err
	}
	changed, err := rec.Transition(exchange.StatusRejected, e.now().UnixMilli())
	if err != nil || !changed {
		return nil // terminal already: nothing to record
	}
	rec.Code, rec.Error = string(ee.Code), ee.Message
	_, err = e.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		return position.StageOrder(ctx, p, *rec, false)
	})
	return err
}

// bookLeg books one leg in one transaction guarded by the leg's done marker: the order
// record's status, the position, the trade, the risk counters (and a risk pause they
// trigger). A leg already booked returns its stored outcome.
func (e *Executor) bookLeg(ctx context.Context, j *job, l leg, req *exchange.OrderRequest, o *exchange.Order) (legDone, error) {
	sigKey, doneField := j.sigKey(), prefixDone+l.Name
	botID, sym := j.bot.ID, l.Symbol
	keys := []string{sigKey, store.BookPosition(botID, sym), store.RiskCounters(botID)}
	if req != nil {
		keys = append(keys, store.BookOrder(botID, req.ClientOrderID))
	}
	now := e.now()
	var done legDone
	var pause *risk.Pause
	// On a plain client the WATCH goes out with the reads, in their round trip, instead of
	// in one of its own (Client.Watch without keys sends none): Redis runs the pipeline in
	// order on the transaction's connection, so the keys are watched before they are read,
	// exactly as with a separate WATCH, and EXEC still fails if any of them changed since.
	// Tx.Close releases only a watch set through Tx.Watch, so txf releases this one itself
	// (UNWATCH) when it returns without EXEC having run, before the connection goes back to
	// the pool.
	// A single-server client and a Sentinel failover client are both a *redis.Client; a
	// Cluster client needs WATCH's keys to pick the node, so it gets them in Watch.
	_, watchInPipeline := e.rdb.(*redis.Client)
	watchKeys := keys
	if watchInPipeline {
		watchKeys = nil
	}
	txf := func(tx *redis.Tx) error {
		done, pause = legDone{}, nil
		watching := watchInPipeline
		defer func() {
			if watching {
				_ = tx.Unwatch(ctx).Err()
			}
		}()
		// The reads in one round trip: the done marker, position, counters, order record.
		var watchCmd *redis.Cmd
		var doneCmd *redis.StringCmd
		var readPos func() (*position.Position, error)
		var readCnt func() (risk.Counters, error)
		readRec := func() (*position.OrderRecord, error) { return nil, nil }
		_, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
			if watchInPipeline {
				args := make([]any, 0, 1+len(keys))
				args = append(args, "watch")
				for _, k := range keys {
					args = append(args, k)
				}
				watchCmd = p.Do(ctx, args...)
			}
			doneCmd = p.HGet(ctx, sigKey, doneField)
			readPos = position.ReadLater(ctx, p, botID, sym)
			readCnt = risk.ReadCountersLater(ctx, p, botID)
			if o != nil {
				readRec = position.ReadOrderLater(ctx, p, botID, req.ClientOrderID)
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		if watchCmd != nil && watchCmd.Err() != nil {
			return watchCmd.Err()
		}
		if s, err := doneCmd.Result(); err == nil {
			return json.Unmarshal([]byte(s), &done)
		} else if !errors.Is(err, redis.Nil) {
			return err
		}
		pos, posErr := readPos()
		counters, cntErr := readCnt()
		rec, recErr := readRec()
		if err := errors.Join(posErr, cntErr, recErr); err != nil {
			return err
		}
		isNew := false
		if o != nil {
			if rec == nil {
				isNew = true
				rec = &position.OrderRecord{ClientOrderID: req.ClientOrderID, SignalID: j.env.SignalID, BotID: botID,
					Leg: l.Name, Symbol: req.Symbol, Kind: req.Kind, Side: req.Side, Type: req.Type,
					Status: exchange.StatusPending, Amount: req.Amount, Price: req.Price, ReduceOnly: req.ReduceOnly,
					Leverage: req.Leverage, CreatedAt: now.UnixMilli()}
			}
			if _, err := rec.ApplyExchange(*o, now.UnixMilli()); err != nil {
				return errs.Wrap(err, errs.InternalError, "order %s cannot be booked", req.ClientOrderID)
			}
			done.Order = o
		}
		m := j.markets[sym]
		var trade *position.Trade
		if o != nil && o.FilledAmount.IsPositive() {
			f := position.Fill{Amount: o.FilledAmount, Price: o.AvgPrice, Fee: feeInQuote(*o, m), At: now.UnixMilli()}
			if j.kind == exchange.Spot && o.Side == exchange.SideBuy && o.FeeAsset != "" && o.FeeAsset == m.Base {
				// The exchange kept the fee out of the coins bought: the holding is smaller.
				f.Amount = o.FilledAmount.Sub(o.Fee)
			}
			switch l.Op {
			case opOpen, opAdd:
				if pos == nil {
					p := position.Open(position.ID(j.env.SignalID, l.Name), botID, sym, j.kind, l.Side, req.Leverage, f, j.env.SignalID)
					pos = &p
					pos.DCALevel = max(l.DCALevel, 1)
					setExits(pos, l, m)
					done.Message = fmt.Sprintf("opened %s %s %s at %s", pos.Side, f.Amount, sym, f.Price)
				} else if pos.Side == l.Side {
					pos.Add(f)
					if l.DCALevel > 0 {
						pos.DCALevel = l.DCALevel
					}
					pos.Reprice(m)
					setExits(pos, l, m)
					done.Message = fmt.Sprintf("added %s to %s %s at %s; entry now %s, size %s", f.Amount, pos.Side, sym, f.Price, pos.EntryPrice(), pos.Size)
					if l.DCALevel > 0 {
						done.Message = fmt.Sprintf("DCA level %d: %s", l.DCALevel, done.Message)
					}
				} else {
					return errs.New(errs.InternalError, "cannot book a %s entry on an open %s position", l.Side, pos.Side)
				}
			case opReduce:
				if pos == nil || pos.Side != l.Side {
					return errs.New(errs.InternalError, "filled exit %s has no %s position to book on", req.ClientOrderID, l.Side)
				}
				_, t, closed := pos.Reduce(f, req.ClientOrderID, j.env.SignalID, l.Reason)
				trade = &t
				verb := "reduced"
				if closed {
					verb = "closed"
				}
				done.Message = fmt.Sprintf("%s %s %s %s at %s, net PnL %s", verb, t.Side, t.Size, sym, f.Price, t.NetPnl)
				switch l.ClearExit {
				case TriggerStopLoss:
					pos.StopLoss = nil
				case TriggerTakeProfit:
					pos.TakeProfit = nil
				}
				if closed {
					pos = nil
				}
				if pause = counters.AfterTrade(t.NetPnl, now, j.limits); pause != nil {
					done.Halt = fmt.Sprintf("bot paused (Risk) until %s: loss limit reached", pause.Until.UTC().Format(time.RFC3339))
				}
			}
		} else if o != nil {
			done.Message = fmt.Sprintf("order %s is %s", o.ClientOrderID, o.Status)
		}
		if l.Op == opProtect {
			if pos == nil || pos.ID != l.PositionID {
				return errs.New(errs.PositionNotFound, "no open %s position to protect", sym)
			}
			setExits(pos, l, m)
			what, exit := "take-profit", pos.TakeProfit
			if l.StopLoss != nil {
				what, exit = "stop-loss", pos.StopLoss
			}
			done.Message = fmt.Sprintf("%s of the %s %s position set at %s (closes %s%%)", what, pos.Side, sym, exit.Price, exit.ClosePercent)
		}
		counters.ConsecutiveErrors = 0
		data, err := json.Marshal(done)
		if err != nil {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			if err := position.StagePosition(ctx, p, botID, sym, pos); err != nil {
				return err
			}
			if rec != nil {
				if err := position.StageOrder(ctx, p, *rec, isNew); err != nil {
					return err
				}
			}
			if trade != nil {
				if err := position.StageTrade(ctx, p, *trade); err != nil {
					return err
				}
			}
			risk.StageCounters(ctx, p, botID, counters)
			if pause != nil {
				risk.StagePause(ctx, p, botID, *pause, now)
			}
			p.HSet(ctx, sigKey, doneField, data)
			p.Expire(ctx, sigKey, ProgressTTL)
			return nil
		})
		if err == nil || errors.Is(err, redis.TxFailedErr) {
			watching = false // EXEC ran: committed or aborted, it released the watch
		}
		return err
	}
	for i := 0; i < maxTxRetries; i++ {
		err := e.rdb.Watch(ctx, txf, watchKeys...)
		if errors.Is(err, redis.TxFailedErr) {
			continue
		}
		if err != nil {
			return legDone{}, err
		}
		if pause != nil {
			e.m.pauses.WithLabelValues(pause.Reason).Inc()
			e.log.Warn("bot paused by a risk limit", "signalId", j.env.SignalID, "botId", botID,
				"reason", pause.Reason, "until", pause.Until)
		}
		return done, nil
	}
	return legDone{}, fmt.Errorf("booking %s: too much contention", j.env.SignalID)
}

// setExits applies a leg's stop-loss and take-profit to a position.
func setExits(p *position.Position, l leg, m exchange.MarketInfo) {
	if a := l.StopLoss; a != nil {
		p.SetExit(true, a.Value, a.Percent, l.ClosePercent, m)
	}
	if a := l.TakeProfit; a != nil {
		p.SetExit(false, a.Value, a.Percent, l.ClosePercent, m)
	}
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
