package queue

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
)

// attemptsTTL keeps a signal's failure count a day (only failing signals have one).
const attemptsTTL = DefaultResultTTL

// maxErrorLen bounds the last error kept with a signal's attempts and dead letter.
const maxErrorLen = 1000

// execute runs the Handler on one entry until it succeeds, the signal's retry budget is
// spent or the Handler panics (both dead-letter it), or the worker must let it go (lease
// lost, or asked to stop while the Handler keeps failing): then the entry stays pending for
// the partition's next owner.
//
// A success counts only once it is confirmed (settle): the entry acknowledged, the replicas
// holding everything the signal wrote (--redis-min-replicas-ack), and the master the same
// Redis process as when the Handler started (store.MasterChanges). Until then the bot's
// next signal waits, and a failed confirmation runs the Handler again: its "already done"
// check finds the result if the master still has it, and executes the signal anew if a
// failover or a restart lost it. So a Redis failover can lose only signals still running,
// which run again on the new master, never a finished one whose bot went on.
func (w *worker) execute(it item) {
	c, env, prio := w.c, it.env, Priorities[it.i]
	// Built only when something is logged: With formats its attributes at once.
	log := func() *slog.Logger {
		return c.log.With("signalId", env.SignalID, "botId", env.BotID, "priority", int(prio))
	}
	if env.ReceivedAt > 0 {
		c.m.wait.WithLabelValues(prioLabel(prio)).Observe(time.Since(time.UnixMilli(env.ReceivedAt)).Seconds())
	}
	var local budget // this worker's own failed attempts
	d := &Delivery{Partition: w.l.p, Stream: w.streams[it.i], ID: it.msg.ID}
	ctx := withDelivery(w.l.ctx, d)
	for confirm := 0; ; confirm++ {
		d.acked.Store(false)
		masters, ok := w.handle(ctx, &it, &local, log)
		if !ok {
			return
		}
		err := w.settle(it.i, it.msg.ID, d.acked.Load(), masters)
		if err == nil && store.MasterChanges() == masters {
			break
		}
		if err == nil {
			err = errMasterChanged
		}
		c.m.unconfirmed.Inc()
		log().Warn("finished signal not confirmed on Redis; running it again to check its result", "attempt", confirm+1, "err", err)
		if !sleepCtx(w.l.ctx, backoff(confirm)) {
			return // lease lost: the next owner redoes the signal
		}
	}
	c.m.processed.WithLabelValues(prioLabel(prio)).Inc()
	if local.attempts > 0 {
		// Best effort: the count would expire anyway.
		_ = c.rdb.Del(context.WithoutCancel(w.l.ctx), store.SignalAttempts(env.BotID, env.SignalID)).Err()
	}
}

// stillQueued says whether the master now serving holds the entry, checked only when the
// master changed since the entry was read (masters: store.MasterChanges now). An entry read
// from a master that then failed may be missing on the new one: its XADD never reached a
// replica, so its sender got no acknowledgement and sends it again as a new signal. Run
// from memory, it would execute a signal that nobody was told of, beside the one sent
// again. An entry missing because it was acknowledged and deleted has its result stored,
// and running it would only publish that result again.
//
// Without replicas to wait for (a single server that restarted and lost its last writes),
// the intake acknowledged the entry without any replica: its sender will not send it again,
// so it runs from memory.
func (w *worker) stillQueued(ctx context.Context, it *item, masters uint64) (bool, error) {
	if masters == it.masters {
		return true, nil
	}
	msgs, err := w.c.rdb.XRangeN(ctx, w.streams[it.i], it.msg.ID, it.msg.ID, 1).Result()
	if err != nil {
		return false, err
	}
	it.masters = masters
	if len(msgs) == 0 && store.ReplicasWanted(w.c.rdb) == 0 {
		w.c.log.Warn("queue entry missing on the restarted Redis; running it from memory, as its sender was acknowledged without a replica",
			"signalId", it.env.SignalID, "botId", it.env.BotID)
		return true, nil
	}
	return len(msgs) > 0, nil
}

// errMasterChanged: the Redis master changed while a signal ran, so what it wrote may be
// missing on the master now serving.
var errMasterChanged = errors.New("the redis master changed while the signal ran")

// handle runs the Handler until it succeeds (true, with store.MasterChanges as the
// successful attempt began), or the signal is dead-lettered, dropped because a new master
// lacks its entry (stillQueued), or the worker must let it go (false).
func (w *worker) handle(ctx context.Context, it *item, local *budget, log func() *slog.Logger) (uint64, bool) {
	c, env, prio := w.c, it.env, Priorities[it.i]
	for {
		// Each attempt writes on one master only: after a failover its next command fails
		// unsent, and the next attempt starts from what the new master holds.
		masters := store.MasterChanges()
		actx := store.GuardMasterAt(ctx, masters)
		queued, err := w.stillQueued(actx, it, masters)
		if err == nil && !queued {
			c.m.lost.Inc()
			log().Warn("signal dropped: the Redis master now serving does not have its queue entry (queued on a former master that failed before a replica had it, so its sender was not acknowledged)")
			return 0, false
		}
		if err == nil {
			err = call(actx, w.h, env)
		}
		if err == nil {
			return masters, true
		}
		if w.l.ctx.Err() != nil {
			return 0, false // lease lost: the next owner redoes the signal; nothing to count here
		}
		local.attempts++
		if local.first.IsZero() {
			local.first = time.Now()
		}
		c.m.handlerErrors.WithLabelValues(prioLabel(prio)).Inc()
		b := w.spend(env, err, *local)
		if reason := b.exhausted(c.opt, err); reason != "" {
			l := log()
			if p := (*panicError)(nil); errors.As(err, &p) {
				l = l.With("stack", string(p.stack))
			}
			l.Error("signal dead-lettered", "reason", reason, "attempts", b.attempts, "err", err)
			w.deadLetter(*it, reason, b, err)
			return 0, false
		}
		log().Warn("signal handler failed; retrying the same signal", "attempt", b.attempts, "err", err)
		if !w.sleep(signalBackoff(b.attempts - 1)) {
			return 0, false
		}
	}
}

// budget is what a signal has spent of its retry budget.
type budget struct {
	attempts int
	first    time.Time // the first failure
}

// Reasons a signal is dead-lettered.
const (
	ReasonBudget    = "retry_budget_spent"
	ReasonPanic     = "handler_panic"
	ReasonMalformed = "malformed_entry"
)

// exhausted names why the signal must be dead-lettered now, or "" to retry it.
func (b budget) exhausted(o Options, err error) string {
	var p *panicError
	switch {
	case errors.As(err, &p):
		return ReasonPanic
	case b.attempts >= o.MaxAttempts, time.Since(b.first) >= o.MaxElapsed:
		return ReasonBudget
	}
	return ""
}

// spend records one failed attempt in Redis (count, first failure, last error: one round
// trip) and returns the signal's budget so far across every executor that tried it. When
// Redis cannot be written, which is often why the Handler failed, it counts this
// worker's own attempts instead: the budget still runs out, though a dead letter then waits
// for Redis like everything else.
func (w *worker) spend(env Envelope, cause error, local budget) budget {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(w.l.ctx), 2*time.Second)
	defer cancel()
	key := store.SignalAttempts(env.BotID, env.SignalID)
	now := time.Now()
	var n *redis.IntCmd
	var first *redis.StringCmd
	_, err := w.c.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		n = p.HIncrBy(ctx, key, "n", 1)
		p.HSetNX(ctx, key, "first", now.UnixMilli())
		p.HSet(ctx, key, "err", truncate(cause.Error(), maxErrorLen))
		first = p.HGet(ctx, key, "first")
		p.Expire(ctx, key, attemptsTTL)
		return nil
	})
	if err != nil {
		w.c.log.Warn("recording a failed attempt failed; counting locally", "signalId", env.SignalID, "err", err)
		return local
	}
	ms, perr := strconv.ParseInt(first.Val(), 10, 64)
	if perr != nil {
		return local
	}
	b := budget{attempts: max(int(n.Val()), local.attempts), first: time.UnixMilli(ms)}
	if local.first.Before(b.first) {
		b.first = local.first
	}
	return b
}

// signalBackoff is a failing signal's wait before its next attempt: 100 ms doubling per
// attempt, capped at 15 s. Only the signal's own bot waits.
func signalBackoff(attempt int) time.Duration {
	const base, ceiling = 100 * time.Millisecond, 15 * time.Second
	if attempt >= 8 {
		return ceiling
	}
	return min(base<<max(attempt, 0), ceiling)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
