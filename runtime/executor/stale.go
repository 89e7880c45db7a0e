package executor

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/result"
)

// Stale signals: a leg that opens or adds to a position is not run when its signal waited
// longer than the bot's maxSignalAge between arrival (Envelope.ReceivedAt) and this attempt.
// After an exchange outage or a queue backlog, hour-old entries would otherwise all fill at
// once at prices their sender never saw. Exits (reduce legs: close, stop-loss, take-profit,
// the closing half of a reversal) always run: leaving a position open because its close
// arrived late is the greater risk.
//
// A leg already staged or booked by an earlier attempt is not stale, whatever its age: its
// order may be on the exchange, and is resolved by looking it up.

// expired reports whether leg l of j must not run for age.
func (j *job) expired(l leg) bool {
	if l.Op != opOpen && l.Op != opAdd {
		return false
	}
	if j.progress[prefixReq+l.Name] != "" || j.progress[prefixDone+l.Name] != "" {
		return false
	}
	limit := j.bot.MaxSignalAgeMillis
	return limit > 0 && j.env.ReceivedAt > 0 && j.now.UnixMilli()-j.env.ReceivedAt > limit
}

// expire records leg l's order as expired (never sent) and returns the signal's failure
// result, SIGNAL_EXPIRED, naming the legs that did run before it (done).
func (e *Executor) expire(ctx context.Context, j *job, l leg, done []string) (result.Result, error) {
	age := time.Duration(j.now.UnixMilli()-j.env.ReceivedAt) * time.Millisecond
	limit := time.Duration(j.bot.MaxSignalAgeMillis) * time.Millisecond
	ee := errs.New(errs.SignalExpired, "signal waited %s before execution, longer than the bot's maxSignalAge of %s; the %s was not placed",
		age.Round(time.Millisecond), limit, entryWord(l.Op))
	if len(done) > 0 {
		ee.Message = strings.Join(done, "; ") + "; then failed: " + ee.Message
	}
	now := e.now().UnixMilli()
	rec := position.OrderRecord{
		ClientOrderID: order.ClientOrderID(j.env.SignalID, l.Name), SignalID: j.env.SignalID, BotID: j.bot.ID,
		Leg: l.Name, Symbol: l.Symbol, Kind: j.kind, Side: l.Side.EntrySide(), Type: l.Type,
		Status: exchange.StatusExpired, Leverage: l.Leverage, Code: string(errs.SignalExpired), Error: ee.Message,
		CreatedAt: now, UpdatedAt: now,
	}
	if l.Price != nil {
		rec.Price = httpapi.Num((*l.Price).Decimal)
	}
	// A retry after a crash here finds the record and does not list the order twice.
	prev, err := position.ReadOrder(ctx, e.rdb, j.bot.ID, rec.ClientOrderID)
	if err != nil {
		return result.Result{}, err
	}
	if prev == nil {
		if _, err := e.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			return position.StageOrder(ctx, p, rec, true)
		}); err != nil {
			return result.Result{}, err
		}
	}
	res := result.Failure(j.env.SignalID, j.bot.ID, ee, now)
	res.Order = &result.Order{OrderID: rec.ClientOrderID, Status: string(exchange.StatusExpired), Symbol: rec.Symbol,
		Side: string(rec.Side), Type: string(rec.Type), Timestamp: now}
	return res, nil
}

func entryWord(op string) string {
	if op == opAdd {
		return "DCA add"
	}
	return "entry"
}
