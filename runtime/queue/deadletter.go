package queue

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/store"
)

// DeadLetterMaxLen caps each partition's dead-letter stream (XADD MAXLEN ~). Ten thousand
// entries of about 1 kB are 10 MB; an operator who lets that many pile up has an outage to
// handle, and the oldest are the least useful.
const DeadLetterMaxLen = 10_000

// DeadLetter is a signal the queue gave up on: its retry budget ran out, its Handler panicked,
// or its stream entry could not be decoded. Its failure result was stored (and sent to any
// waiter) before it moved here, so it never counts as filled.
//
// Each partition keeps its dead letters in a stream of its own (store.QueueDeadLetters), in
// the slot of its signal streams, so that moving a signal there is one transaction;
// ListDeadLetters reads them all as one list.
//
// A dead-lettered signal whose order outcome was unknown may still have an order on the
// exchange: its progress (the staged request, the pending order record) is kept, and a retry
// looks the order up by its client order ID before anything is placed again.
type DeadLetter struct {
	// ID is what an operator names: "<partition>-<entry ID in its dead-letter stream>".
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

func deadLetterOf(partition int, m redis.XMessage) DeadLetter {
	s := func(k string) string { v, _ := m.Values[k].(string); return v }
	n := func(k string) int64 { v, _ := strconv.ParseInt(s(k), 10, 64); return v }
	return DeadLetter{
		ID: deadLetterID(partition, m.ID), SignalID: s("signalId"), BotID: s("botId"), Priority: Priority(n("priority")),
		Partition: int(n("partition")), Reason: s("reason"), Attempts: int(n("attempts")),
		Code: errs.Code(s("code")), LastError: s("lastError"), FirstFailure: n("firstFailure"),
		At: n("at"), Entry: s("entry"), Envelope: json.RawMessage(s("envelope")),
	}
}

// deadLetter finishes a signal the queue gives up on in two steps: its failure result
// (stored, and published to a waiter), then one transaction in the partition's slot with its
// dead-letter entry, its acknowledgement and the removal of its attempt count. So a signal
// is never both dead-lettered and still queued, nor acknowledged without a result.
//
// The result comes first and alone because it lives in a slot of its own (read by signal ID
// alone). A crash between the two steps leaves the entry pending with its failure result
// stored: the partition's next owner hands it to the Handler, whose "already done" check
// finds the result and re-publishes it without executing the signal, and the entry is
// acknowledged. Only the dead-letter record and the OnDeadLetter hook are lost then; the
// signal is not executed, and its failure stands.
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
		if err := PublishResult(ctx, c.rdb, env, res); err != nil {
			return err
		}
		_, err := c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.XAdd(ctx, &redis.XAddArgs{Stream: store.QueueDeadLetters(w.l.p), MaxLen: DeadLetterMaxLen, Approx: true, Values: dl.values()})
			p.XAck(ctx, w.streams[it.i], Group, it.msg.ID)
			p.XDel(ctx, w.streams[it.i], it.msg.ID)
			p.Del(ctx, store.SignalAttempts(env.BotID, env.SignalID))
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
		p.XAdd(ctx, &redis.XAddArgs{Stream: store.QueueDeadLetters(w.l.p), MaxLen: DeadLetterMaxLen, Approx: true, Values: dl.values()})
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

// deadLetterID names entry id of partition's dead-letter stream (DeadLetter.ID).
func deadLetterID(partition int, id string) string { return strconv.Itoa(partition) + "-" + id }

// parseDeadLetterID splits a DeadLetter.ID into its partition and stream entry ID.
func parseDeadLetterID(id string) (int, streamID, error) {
	p, entry, _ := strings.Cut(id, "-")
	n, err := strconv.Atoi(p)
	sid, ok := parseStreamID(entry)
	if err != nil || n < 0 || n >= Partitions || !ok {
		return 0, streamID{}, fmt.Errorf("queue: %q is not a dead-letter ID (<partition>-<entry ID>, as listed)", id)
	}
	return n, sid, nil
}

// streamID is a stream entry ID, "<ms>-<seq>", ordered as Redis orders them.
type streamID struct{ ms, seq uint64 }

func parseStreamID(s string) (streamID, bool) {
	ms, seq, ok := strings.Cut(s, "-")
	a, err1 := strconv.ParseUint(ms, 10, 64)
	b, err2 := strconv.ParseUint(seq, 10, 64)
	return streamID{a, b}, ok && err1 == nil && err2 == nil
}

func (s streamID) String() string {
	return strconv.FormatUint(s.ms, 10) + "-" + strconv.FormatUint(s.seq, 10)
}

func (s streamID) compare(o streamID) int {
	if c := cmp.Compare(s.ms, o.ms); c != 0 {
		return c
	}
	return cmp.Compare(s.seq, o.seq)
}

// ListDeadLetters returns up to count dead letters of every partition, oldest first (by
// entry ID, then partition), starting after the dead letter named after ("" from the
// start): one XRANGE per partition, in one pipeline.
func ListDeadLetters(ctx context.Context, rdb redis.UniversalClient, after string, count int64) ([]DeadLetter, error) {
	start := func(int) string { return "-" }
	if after != "" {
		ap, aid, err := parseDeadLetterID(after)
		if err != nil {
			return nil, err
		}
		start = func(p int) string {
			if p > ap { // same entry ID, later partition: still after
				return aid.String()
			}
			return "(" + aid.String()
		}
	}
	cmds := make([]*redis.XMessageSliceCmd, Partitions)
	if _, err := rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for p := range cmds {
			cmds[p] = pipe.XRangeN(ctx, store.QueueDeadLetters(p), start(p), "+", count)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	type listed struct {
		p   int
		id  streamID
		msg redis.XMessage
	}
	var all []listed
	for p, cmd := range cmds {
		for _, m := range cmd.Val() {
			id, _ := parseStreamID(m.ID)
			all = append(all, listed{p, id, m})
		}
	}
	slices.SortFunc(all, func(a, b listed) int {
		if c := a.id.compare(b.id); c != 0 {
			return c
		}
		return cmp.Compare(a.p, b.p)
	})
	all = all[:min(int64(len(all)), max(count, 0))]
	out := make([]DeadLetter, len(all))
	for i, l := range all {
		out[i] = deadLetterOf(l.p, l.msg)
	}
	return out, nil
}

// CountDeadLetters is the number of dead letters of every partition.
func CountDeadLetters(ctx context.Context, rdb redis.UniversalClient) (int64, error) {
	cmds := make([]*redis.IntCmd, Partitions)
	if _, err := rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
		for p := range cmds {
			cmds[p] = pipe.XLen(ctx, store.QueueDeadLetters(p))
		}
		return nil
	}); err != nil {
		return 0, err
	}
	var n int64
	for _, cmd := range cmds {
		n += cmd.Val()
	}
	return n, nil
}

// GetDeadLetter reads one dead letter.
func GetDeadLetter(ctx context.Context, rdb redis.UniversalClient, id string) (DeadLetter, error) {
	p, sid, err := parseDeadLetterID(id)
	if err != nil {
		return DeadLetter{}, err
	}
	msgs, err := rdb.XRangeN(ctx, store.QueueDeadLetters(p), sid.String(), sid.String(), 1).Result()
	if err != nil {
		return DeadLetter{}, err
	}
	if len(msgs) == 0 {
		return DeadLetter{}, ErrDeadLetterNotFound
	}
	return deadLetterOf(p, msgs[0]), nil
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
	// Keys of different slots: one DEL each, in one round trip. A result stored by an older
	// version is under the legacy key, which GetResultLater still reads.
	if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, store.SignalResult(env.SignalID))
		p.Del(ctx, store.LegacySignalResult(env.SignalID))
		p.Del(ctx, store.SignalAttempts(env.BotID, env.SignalID))
		return nil
	}); err != nil {
		return Envelope{}, err
	}
	if _, err := Enqueue(ctx, rdb, env); err != nil {
		return Envelope{}, err
	}
	// A crash here leaves the dead letter beside the queued signal; retrying it again queues
	// a second copy, which the executor's stored result turns into a no-op.
	p, sid, _ := parseDeadLetterID(id) // GetDeadLetter accepted it
	return env, rdb.XDel(ctx, store.QueueDeadLetters(p), sid.String()).Err()
}

// DropDeadLetter deletes a dead letter; its failure result stays.
func DropDeadLetter(ctx context.Context, rdb redis.UniversalClient, id string) error {
	p, sid, err := parseDeadLetterID(id)
	if err != nil {
		return err
	}
	n, err := rdb.XDel(ctx, store.QueueDeadLetters(p), sid.String()).Result()
	if err != nil {
		return err
	}
	if n == 0 {
		return ErrDeadLetterNotFound
	}
	return nil
}
