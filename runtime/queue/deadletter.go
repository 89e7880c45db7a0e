package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/store"
)

// DeadLetterMaxLen caps the dead-letter stream (XADD MAXLEN ~). Ten thousand entries of about
// 1 kB are 10 MB; an operator who lets that many pile up has an outage to handle, and the
// oldest are the least useful.
const DeadLetterMaxLen = 10_000

// DeadLetter is a signal the queue gave up on: its retry budget ran out, its Handler panicked,
// or its stream entry could not be decoded. Its failure result was stored (and sent to any
// waiter) in the same transaction that moved it here, so it never counts as filled.
//
// A dead-lettered signal whose order outcome was unknown may still have an order on the
// exchange: its progress (the staged request, the pending order record) is kept, and a retry
// looks the order up by its client order ID before anything is placed again.
type DeadLetter struct {
	// ID is the entry's ID in the dead-letter stream (what an operator names).
	ID        string    `json:"id"`
	SignalID  string    `json:"signalId,omitempty"`
	BotID     string    `json:"botId,omitempty"`
	Priority  Priority  `json:"priority,omitempty"`
	Partition int       `json:"partition"`
	Reason    string    `json:"reason"`
	Attempts  int       `json:"attempts"`
	Code      errs.Code `json:"code,omitempty"`
	LastError string    `json:"lastError"`
	// FirstFailure and At are ms since epoch: the first failed attempt, the dead-lettering.
	FirstFailure int64 `json:"firstFailure,omitempty"`
	At           int64 `json:"at"`
	// Entry is the signal's ID in its partition stream.
	Entry string `json:"entry"`
	// Envelope is the queued signal as JSON (for a malformed entry: its raw fields).
	Envelope json.RawMessage `json:"envelope"`
}

func (d DeadLetter) values() []any {
	return []any{
		"signalId", d.SignalID, "botId", d.BotID, "priority", int(d.Priority), "partition", d.Partition,
		"reason", d.Reason, "attempts", d.Attempts, "code", string(d.Code), "lastError", d.LastError,
		"firstFailure", d.FirstFailure, "at", d.At, "entry", d.Entry, "envelope", string(d.Envelope),
	}
}

func deadLetterOf(m redis.XMessage) DeadLetter {
	s := func(k string) string { v, _ := m.Values[k].(string); return v }
	n := func(k string) int64 { v, _ := strconv.ParseInt(s(k), 10, 64); return v }
	return DeadLetter{
		ID: m.ID, SignalID: s("signalId"), BotID: s("botId"), Priority: Priority(n("priority")),
		Partition: int(n("partition")), Reason: s("reason"), Attempts: int(n("attempts")),
		Code: errs.Code(s("code")), LastError: s("lastError"), FirstFailure: n("firstFailure"),
		At: n("at"), Entry: s("entry"), Envelope: json.RawMessage(s("envelope")),
	}
}

// deadLetter finishes a signal the queue gives up on, in one transaction: its failure result
// (stored, and published to a waiter), its dead-letter entry, its acknowledgement and the
// removal of its attempt count. Either all of it happens or none, so a signal is never both
// dead-lettered and still queued, nor acknowledged without a result.
func (w *worker) deadLetter(it item, reason string, b budget, cause error) {
	c, env := w.c, it.env
	now := time.Now()
	res := result.Failure(env.SignalID, env.BotID, cause, now.UnixMilli())
	switch reason {
	case ReasonPanic:
		res.Error = "internal error while executing the signal; it was not executed"
	default:
		res.Error = fmt.Sprintf("not executed after %d attempts over %s: %s", b.attempts,
			now.Sub(b.first).Round(time.Second), res.Error)
	}
	envJSON, _ := json.Marshal(env)
	dl := DeadLetter{SignalID: env.SignalID, BotID: env.BotID, Priority: env.Priority, Partition: w.l.p,
		Reason: reason, Attempts: b.attempts, Code: res.Code, LastError: truncate(cause.Error(), maxErrorLen),
		FirstFailure: b.first.UnixMilli(), At: now.UnixMilli(), Entry: it.msg.ID, Envelope: envJSON}
	ok := w.retry("dead-lettering a signal", func() error {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(w.l.ctx), 2*time.Second)
		defer cancel()
		_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			if err := queueResult(ctx, p, env, res); err != nil {
				return err
			}
			p.XAdd(ctx, &redis.XAddArgs{Stream: store.QueueDeadLetters(), MaxLen: DeadLetterMaxLen, Approx: true, Values: dl.values()})
			p.XAck(ctx, w.streams[it.i], Group, it.msg.ID)
			p.XDel(ctx, w.streams[it.i], it.msg.ID)
			p.Del(ctx, store.SignalAttempts(env.SignalID))
			return nil
		})
		return err
	})
	if !ok {
		return // the next owner finds the spent budget and dead-letters it
	}
	c.m.deadLetters.WithLabelValues(reason).Inc()
	if c.opt.OnDeadLetter != nil {
		if err := c.opt.OnDeadLetter(context.WithoutCancel(w.l.ctx), env, dl); err != nil {
			c.log.Warn("dead-letter hook failed", "signalId", env.SignalID, "err", err)
		}
	}
}

// deadLetterMalformed moves an entry that cannot be decoded to the dead-letter stream with
// its raw fields, and acknowledges it.
func (w *worker) deadLetterMalformed(i int, msg redis.XMessage, cause error) error {
	raw, _ := json.Marshal(msg.Values)
	dl := DeadLetter{Partition: w.l.p, Reason: ReasonMalformed, Attempts: 0,
		LastError: truncate(cause.Error(), maxErrorLen), At: time.Now().UnixMilli(), Entry: msg.ID, Envelope: raw}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.l.ctx), 2*time.Second)
	defer cancel()
	_, err := w.c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAdd(ctx, &redis.XAddArgs{Stream: store.QueueDeadLetters(), MaxLen: DeadLetterMaxLen, Approx: true, Values: dl.values()})
		p.XAck(ctx, w.streams[i], Group, msg.ID)
		p.XDel(ctx, w.streams[i], msg.ID)
		return nil
	})
	if err == nil {
		w.c.m.deadLetters.WithLabelValues(ReasonMalformed).Inc()
	}
	return err
}

// ErrDeadLetterNotFound: no dead letter has that ID.
var ErrDeadLetterNotFound = errors.New("queue: no such dead letter")

// ListDeadLetters returns up to count dead letters, oldest first, starting after the ID
// after ("" from the start).
func ListDeadLetters(ctx context.Context, rdb redis.UniversalClient, after string, count int64) ([]DeadLetter, error) {
	start := "-"
	if after != "" {
		start = "(" + after
	}
	msgs, err := rdb.XRangeN(ctx, store.QueueDeadLetters(), start, "+", count).Result()
	if err != nil {
		return nil, err
	}
	out := make([]DeadLetter, len(msgs))
	for i, m := range msgs {
		out[i] = deadLetterOf(m)
	}
	return out, nil
}

// CountDeadLetters is the dead-letter stream's length.
func CountDeadLetters(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
	return rdb.XLen(ctx, store.QueueDeadLetters()).Result()
}

// GetDeadLetter reads one dead letter.
func GetDeadLetter(ctx context.Context, rdb redis.UniversalClient, id string) (DeadLetter, error) {
	msgs, err := rdb.XRangeN(ctx, store.QueueDeadLetters(), id, id, 1).Result()
	if err != nil {
		return DeadLetter{}, err
	}
	if len(msgs) == 0 {
		return DeadLetter{}, ErrDeadLetterNotFound
	}
	return deadLetterOf(msgs[0]), nil
}

// RetryDeadLetter queues a dead-lettered signal again under its signalId, behind its bot's
// queued signals, and removes the dead letter. Its failure result and attempt count are
// deleted first so that the executor runs it (a stored result would make it a no-op); its
// progress is kept, so legs already booked are not redone and an order that may exist is
// looked up before anything is placed. The signal keeps its receive time, so an entry older
// than its bot's maxSignalAge fails with SIGNAL_EXPIRED; fresh re-stamps it with now, for an
// operator who has decided the entry is still wanted. Nobody waits for the new result; it is
// readable under the signalId as usual.
func RetryDeadLetter(ctx context.Context, rdb redis.UniversalClient, id string, fresh bool) (Envelope, error) {
	dl, err := GetDeadLetter(ctx, rdb, id)
	if err != nil {
		return Envelope{}, err
	}
	if dl.Reason == ReasonMalformed {
		return Envelope{}, fmt.Errorf("queue: dead letter %s is a malformed entry and cannot be retried; drop it", id)
	}
	var env Envelope
	if err := json.Unmarshal(dl.Envelope, &env); err != nil {
		return Envelope{}, fmt.Errorf("queue: dead letter %s: %w", id, err)
	}
	env.ReplyTo = ""
	if fresh {
		env.ReceivedAt = time.Now().UnixMilli()
	}
	if err := rdb.Del(ctx, store.SignalResult(env.SignalID), store.SignalAttempts(env.SignalID)).Err(); err != nil {
		return Envelope{}, err
	}
	if _, err := Enqueue(ctx, rdb, env); err != nil {
		return Envelope{}, err
	}
	// A crash here leaves the dead letter beside the queued signal; retrying it again queues
	// a second copy, which the executor's stored result turns into a no-op.
	return env, rdb.XDel(ctx, store.QueueDeadLetters(), id).Err()
}

// DropDeadLetter deletes a dead letter; its failure result stays.
func DropDeadLetter(ctx context.Context, rdb redis.UniversalClient, id string) error {
	n, err := rdb.XDel(ctx, store.QueueDeadLetters(), id).Result()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrDeadLetterNotFound
	}
	return nil
}
