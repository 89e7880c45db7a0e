package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/store"
)

// manualCancel is the cancel request env carries, if it is one.
func manualCancel(env queue.Envelope) (order.Request, bool) {
	if env.Source != queue.SourceManual {
		return order.Request{}, false
	}
	var req order.Request
	if json.Unmarshal(env.Signal, &req) != nil || req.Type != order.Cancel {
		return order.Request{}, false
	}
	return req, true
}

// cancelOrder runs a manual cancel: the bot's order req.ClientOrderID, still open on its
// exchange, is cancelled there by client order ID and the exchange's report (cancelled,
// with any partial fill) is booked on the order record. It has no plan: the record's
// status is the progress, so a retry finds the order cancelled on the exchange (the cancel
// fails, GetOrder reports it) and books the same outcome. An order the book holds as
// filled, cancelled, rejected or expired is INVALID_ACTION naming its status (a paper
// bot's orders fill at once, so they always are); one it does not hold is NOT_FOUND.
func (e *Executor) cancelOrder(ctx context.Context, j *job, req order.Request) (result.Result, error) {
	if err := req.Validate(); err != nil {
		return result.Result{}, err
	}
	cid := req.ClientOrderID
	rec, err := e.book.Order(ctx, j.bot.ID, cid)
	if err != nil {
		return result.Result{}, err
	}
	if rec == nil {
		return result.Result{}, errs.New(errs.NotFound, "the bot has no order %s", cid)
	}
	if err := notOpen(*rec); err != nil {
		return result.Result{}, err
	}
	o, err := j.acct.Exchange.CancelOrder(ctx, rec.Kind, rec.Symbol, cid)
	if err != nil {
		// Cancelled by an earlier attempt of this signal, filled meanwhile, or a refusal:
		// the exchange's report of the order decides.
		got, gerr := j.acct.Exchange.GetOrder(ctx, rec.Kind, rec.Symbol, cid)
		if gerr != nil || !got.Status.Terminal() {
			return result.Result{}, execError{err}
		}
		o = got
	}
	booked, err := e.bookCancel(ctx, j.bot.ID, cid, o)
	if errors.Is(err, redis.Nil) {
		return result.Result{}, errs.New(errs.NotFound, "the bot has no order %s", cid)
	}
	if err != nil {
		return result.Result{}, err
	}
	rec = &booked
	if rec.Status != exchange.StatusCancelled {
		return result.Result{}, notOpen(*rec)
	}
	msg := fmt.Sprintf("order %s cancelled", cid)
	if rec.FilledAmount.IsPositive() {
		msg += fmt.Sprintf(" after %s of %s filled", rec.FilledAmount, rec.Amount)
	}
	return result.Result{SignalID: j.env.SignalID, BotID: j.bot.ID, Success: true, Message: msg,
		Timestamp: e.now().UnixMilli(), Order: &result.Order{Success: true, OrderID: rec.OrderID,
			Status: string(rec.Status), Symbol: rec.Symbol, Side: string(rec.Side), Type: string(rec.Type),
			Amount: httpapi.Num(rec.Amount.Decimal), FilledAmount: httpapi.Num(rec.FilledAmount.Decimal), AvgPrice: httpapi.Num(rec.AvgPrice.Decimal), Fee: httpapi.Num(rec.Fee.Decimal),
			Timestamp: rec.UpdatedAt}}, nil
}

// notOpen refuses to cancel an order in a terminal status.
func notOpen(rec position.OrderRecord) error {
	if !rec.Status.Terminal() {
		return nil
	}
	return errs.New(errs.InvalidAction, "order %s is %s: only an open order can be cancelled", rec.ClientOrderID, rec.Status).
		WithDetails(map[string]any{"clientOrderId": rec.ClientOrderID, "status": string(rec.Status)})
}

// bookCancel applies the exchange's report o to the order record, under WATCH so that a
// concurrent write of the record is read again, and returns the record as stored.
func (e *Executor) bookCancel(ctx context.Context, botID, cid string, o exchange.Order) (position.OrderRecord, error) {
	key := store.BookOrder(botID, cid)
	var out position.OrderRecord
	txf := func(tx *redis.Tx) error {
		r, err := position.ReadOrder(ctx, tx, botID, cid)
		if err != nil {
			return err
		}
		if r == nil {
			return redis.Nil
		}
		rec := *r
		changed, err := rec.ApplyExchange(o, e.now().UnixMilli())
		out = rec
		if err != nil || !changed {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			return position.StageOrder(ctx, p, rec, false)
		})
		return err
	}
	for range maxTxRetries {
		err := e.rdb.Watch(ctx, txf, key)
		if !errors.Is(err, redis.TxFailedErr) {
			return out, err
		}
	}
	return out, fmt.Errorf("cancel %s: too much contention", cid)
}
