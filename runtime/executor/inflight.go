package executor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/exchange"
)

// A leg's order request can land on the exchange after its sender stopped waiting for it:
// Binance and Bybit execute a request until its recvWindow (plus clock error) has passed,
// whether or not anyone still listens for the answer. An executor that dies mid-call (or
// gets no answer) leaves a staged request whose order the exchange may not show yet. A retry
// that then finds "no such order" and places at once can make a second order when the first
// request lands after all (Binance refuses a repeated client order ID only while an order
// holding it is open, so a filled market order does not stop a second one).
//
// The rule: the time a leg's request was sent is stored with it (prefixSent), and a retry
// that finds no order places only once that time + the exchange's request window
// (exchange.RequestWindow) has passed.
//
//   - The send time is written in the same atomic step that stages the request
//     (stagePending), and the exchange call follows at once. So a staged request always has
//     its send time, and the stored time is never later than the call it dates; a crash
//     between the staging and the call only makes a retry wait for a request never sent.
//   - A retry that may place again first claims the send (claimSendScript): it re-stamps the
//     time atomically, only if the window of the previous stamp has passed. Two retries
//     cannot both claim, and a third one dates from the latest send, not the first.
//   - A staged request without a send time (staged by an executor that did not store one)
//     is dated "now" by the first retry that finds it: it was sent no later than that.
//   - Times are Redis's clock (TIME in the scripts), the one clock every executor shares,
//     so executors on hosts with different clocks agree. Windows are durations, so the
//     offset between Redis's clock and the exchange's does not matter.
//   - An exchange without a window (paper: it executes inside the call, under Redis) is
//     placed again at once: its "not found" is proof.
//
// Within the window a retry waits for the rest of it when that is short (maxInlineWait)
// and otherwise returns ErrOrderInFlight, an infrastructure error: the queue redelivers the
// signal later, and the next attempt looks the order up first again.

// prefixSent + leg: Redis's time, in ms, when the leg's latest order request was sent (the
// staging that precedes the exchange call).
const prefixSent = "sent:"

// maxInlineWait is the longest rest of a request window an attempt waits for inside the
// handler; a longer one is left to the queue's redelivery (with backoff, in the bot's own
// lane), so that the signal does not hold one of its partition's slots for seconds.
const maxInlineWait = 2 * time.Second

// ErrOrderInFlight: a leg's earlier order request may still be executed by the exchange,
// which does not show the order yet; placing it again now could make a second order. The
// signal is retried (it is not a *errs.Error, so no failure result is published).
var ErrOrderInFlight = errors.New("an earlier request for this order may still be executed by the exchange")

// redisNowMS is Redis's time in ms, as a decimal string (seconds and three digits of ms).
const redisNowMS = `
local t = redis.call('TIME')
local ms = math.floor(tonumber(t[2]) / 1000)
local now = tonumber(t[1]) * 1000 + ms
local stamp = t[1] .. string.format('%03d', ms)
`

// stampSentScript stores the send time of a leg's request (KEYS[1] the signal's progress,
// ARGV[1] the field); stagePending runs it in its transaction.
var stampSentScript = redis.NewScript(redisNowMS + `
redis.call('HSET', KEYS[1], ARGV[1], stamp)
return now
`)

// claimSendScript claims the next send of a staged request whose order the exchange does
// not show (KEYS[1] the signal's progress, ARGV[1] the send-time field, ARGV[2] the
// exchange's request window in ms). It returns 0 when the window of the stored send has
// passed, having stamped this send; otherwise the ms left, stamping nothing, or, when no
// send time is stored, the whole window, having stamped "now" as the latest possible send.
var claimSendScript = redis.NewScript(redisNowMS + `
local sent = tonumber(redis.call('HGET', KEYS[1], ARGV[1]))
if sent then
  local left = sent + tonumber(ARGV[2]) - now
  if left > 0 then return left end
end
redis.call('HSET', KEYS[1], ARGV[1], stamp)
if sent then return 0 end
return tonumber(ARGV[2])
`)

// lookupStaged looks up the order of a leg whose request an earlier attempt staged. It
// returns the order when the exchange has it, and nil when the request may be placed now:
// the exchange has no such order, and there is no window or the window of the last send
// has passed and this attempt has claimed the next send.
func (e *Executor) lookupStaged(ctx context.Context, j *job, l leg, req exchange.OrderRequest) (*exchange.Order, error) {
	ex := j.acct.Exchange
	window := exchange.WindowFor(ex, req)
	for {
		o, err := ex.GetOrder(ctx, req.Kind, req.Symbol, req.ClientOrderID)
		if err == nil {
			return &o, nil
		}
		if !errors.Is(err, exchange.ErrOrderNotFound) {
			return nil, err
		}
		if window <= 0 {
			return nil, nil
		}
		left, err := e.claimSend(ctx, j, l, window)
		if err != nil || left <= 0 {
			return nil, err
		}
		if left > maxInlineWait {
			return nil, fmt.Errorf("leg %s, client order ID %s, for another %s: %w",
				l.Name, req.ClientOrderID, left.Round(time.Millisecond), ErrOrderInFlight)
		}
		// Short: wait here, then look again (the order may have landed meanwhile).
		t := time.NewTimer(left)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		}
	}
}

// claimSend runs claimSendScript: zero when this attempt may send now, else the time left.
func (e *Executor) claimSend(ctx context.Context, j *job, l leg, window time.Duration) (time.Duration, error) {
	left, err := claimSendScript.Run(ctx, e.rdb, []string{j.sigKey()},
		prefixSent+l.Name, (window + time.Millisecond - 1).Milliseconds()).Int64()
	if err != nil {
		return 0, err
	}
	return time.Duration(left) * time.Millisecond, nil
}
