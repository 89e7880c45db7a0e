package queue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
)

// worker reads one partition for as long as its lease lasts and runs its signals, one at a
// time per bot and up to Options.MaxInFlight bots at once (lanes.go): a signal that keeps
// failing holds up its own bot only, never the other bots of the partition.
//
// The worker's own goroutine is the reader. Entries come in stream-ID order per priority,
// first from this consumer's own pending list (after taking over every other consumer's),
// then new ones (">"), and are routed at once to their bot's lane; the reader then reads
// again, blocking (Options.Block) on all four streams when nothing is pending, so a new
// signal is seen as soon as it is queued whatever is running. It stops reading while the
// partition holds Options.MaxHeld entries, which bounds its memory.
type worker struct {
	c       *Consumer
	l       *lease
	h       Handler
	streams [numPriorities]string
	// cursor is, per priority, the last ID read from this consumer's own pending list, or
	// ">" once that list is exhausted and only new entries remain.
	cursor [numPriorities]string
	// masters is store.MasterChanges at the last rewind: a new master may hold entries
	// delivered to this consumer that it never ran (see readFailed).
	masters   uint64
	readFails int
	// readAt is store.MasterChanges before the latest read (item.masters).
	readAt    uint64
	nextSweep time.Duration
	lanes     lanes
}

func (c *Consumer) work(l *lease, h Handler) {
	w := &worker{c: c, l: l, h: h}
	w.lanes.init(w)
	for i, p := range Priorities {
		w.streams[i] = store.QueueStream(l.p, int(p))
	}
	// The lease is handed back only when every running signal has returned: another owner
	// must never run a bot's next signal beside this one's.
	defer w.lanes.wait()
	if !w.retry("taking over the partition", w.recover) {
		return
	}
	for !w.done() {
		if c.since() >= w.nextSweep && !w.retry("checking for stray pending entries", w.sweep) {
			return
		}
		if !w.lanes.waitForRoom() {
			continue
		}
		if m := store.MasterChanges(); m != w.masters {
			w.c.log.Info("the Redis master changed; reading this partition's own pending entries again", "partition", w.l.p)
			w.rewind()
		}
		got, ok := w.fill()
		if !ok {
			continue
		}
		w.route(got)
	}
}

// done: the lease is lost or the worker was asked to stop.
func (w *worker) done() bool { return w.l.ctx.Err() != nil || w.l.stopping() }

// recover makes the partition ours: it creates the groups if needed, takes over the pending
// entries of every other consumer and rewinds to read our own pending list first.
//
// XAUTOCLAIM runs with min-idle 0. The lease already proves the previous owner has stopped
// (it gave the lease back, or could not renew it and cancelled itself before Redis expired
// it), and a positive min-idle would skip recently delivered entries: skipping one and then
// reading newer ones would break the bot's order.
func (w *worker) recover() error {
	if err := w.ensureGroups(); err != nil {
		return err
	}
	if _, _, err := w.claimForeign(); err != nil {
		return err
	}
	w.tidyConsumers()
	w.rewind()
	return nil
}

// sweep catches entries delivered to another consumer after we took the partition over: a
// previous owner that froze (not crashed) between checking its lease and sending a blocking
// read could still have one served. Every LeaseTTL the worker looks at the pending summary
// and, if anyone else holds entries, claims them and rewinds, so they are executed (late)
// rather than lost. It rewinds too when this consumer has more entries pending than it
// holds: a read served but never answered delivered them (see readFailed), and this finds
// them even when no failure was seen.
func (w *worker) sweep() error {
	n, stray, err := w.claimForeign()
	if store.IsNoGroup(err) {
		return w.recover() // the streams were deleted under us: start over
	}
	if err != nil {
		return err
	}
	switch {
	case n > 0:
		w.c.log.Warn("claimed entries delivered to another consumer after takeover", "partition", w.l.p, "count", n)
		w.rewind()
	case stray:
		w.c.log.Warn("entries pending for this consumer that it does not hold; reading them again", "partition", w.l.p)
		w.rewind()
	}
	w.nextSweep = w.c.since() + w.c.opt.LeaseTTL
	return nil
}

func (w *worker) rewind() {
	for i := range w.cursor {
		w.cursor[i] = "0"
	}
	w.masters = store.MasterChanges()
	w.nextSweep = w.c.since() + w.c.opt.LeaseTTL
}

// ensureGroups creates each stream's group, starting at the beginning of the stream so that
// signals queued before any executor ever ran are served too.
func (w *worker) ensureGroups() error {
	ctx := w.l.ctx
	cmds := make([]*redis.StatusCmd, len(w.streams))
	_, _ = w.c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, s := range w.streams {
			cmds[i] = p.XGroupCreateMkStream(ctx, s, Group, "0")
		}
		return nil
	})
	for _, cmd := range cmds {
		if err := cmd.Err(); err != nil && !store.IsBusyGroup(err) {
			return err
		}
	}
	return nil
}

// claimForeign moves every entry pending for another consumer to us and returns how many,
// and whether some stream has more entries pending for us than we hold (stray). Called by
// the reader between reads, when every entry read is held until it is acknowledged.
func (w *worker) claimForeign() (int, bool, error) {
	ctx := w.l.ctx
	sums := make([]*redis.XPendingCmd, len(w.streams))
	_, _ = w.c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, s := range w.streams {
			sums[i] = p.XPending(ctx, s, Group)
		}
		return nil
	})
	total, stray := 0, false
	for i, s := range w.streams {
		sum, err := sums[i].Result()
		if err != nil {
			return total, stray, err
		}
		foreign := false
		for name, n := range sum.Consumers {
			if name != w.c.name && n > 0 {
				foreign = true
			}
		}
		if sum.Consumers[w.c.name] > int64(w.lanes.heldIn(i)) {
			stray = true
		}
		if !foreign {
			continue
		}
		for start := "0-0"; ; {
			ids, next, err := w.c.rdb.XAutoClaimJustID(ctx, &redis.XAutoClaimArgs{
				Stream: s, Group: Group, Consumer: w.c.name, Start: start, Count: 100,
			}).Result()
			if err != nil {
				return total, stray, err
			}
			total += len(ids)
			if next == "0-0" || next == "" {
				break
			}
			start = next
		}
	}
	if total > 0 {
		w.c.m.reclaimed.Add(float64(total))
		w.c.log.Info("reclaimed pending signals", "partition", w.l.p, "count", total)
	}
	return total, stray, nil
}

// tidyConsumers deletes consumers that hold nothing in this partition's groups. Every
// executor start adds a consumer name; without this the groups would collect them forever.
// Only the lease owner reads these streams, so no live reader is affected (a consumer is
// re-created when it reads again).
func (w *worker) tidyConsumers() {
	ctx := w.l.ctx
	for _, s := range w.streams {
		infos, err := w.c.rdb.XInfoConsumers(ctx, s, Group).Result()
		if err != nil {
			w.c.log.Debug("listing consumers failed", "stream", s, "err", err)
			continue
		}
		for _, ci := range infos {
			if ci.Name != w.c.name && ci.Pending == 0 {
				_ = w.c.rdb.XGroupDelConsumer(ctx, s, Group, ci.Name).Err()
			}
		}
	}
}

// fill reads all four streams once; false means nothing was read (an error, already backed
// off, or the lease is uncertain). The read blocks only when every stream is past this
// consumer's own pending list.
func (w *worker) fill() ([numPriorities][]redis.XMessage, bool) {
	c := w.c
	var out [numPriorities][]redis.XMessage
	block := time.Duration(-1) // no BLOCK argument
	if !readsPending(w.cursor[:]) {
		block = c.opt.Block
	}
	// Never start a read that could be served after the lease has expired in Redis.
	need := c.renewEvery + max(block, 0)
	if !w.l.usableFor(c, need) {
		w.sleep(c.renewEvery / 2)
		return out, false
	}
	args := make([]string, 0, 2*numPriorities)
	args = append(args, w.streams[:]...)
	args = append(args, w.cursor[:]...)
	w.readAt = store.MasterChanges()
	res, err := c.rdb.XReadGroup(w.l.ctx, &redis.XReadGroupArgs{
		Group: Group, Consumer: c.name, Streams: args, Count: int64(c.opt.BatchSize), Block: block,
	}).Result()
	if errors.Is(err, redis.Nil) {
		res, err = nil, nil
	}
	if err != nil {
		w.readFailed(err)
		return out, false
	}
	w.readFails = 0
	got := make(map[string][]redis.XMessage, len(res))
	for _, s := range res {
		got[s.Stream] = s.Messages
	}
	for i := range w.streams {
		msgs := got[w.streams[i]]
		if w.cursor[i] != ">" {
			// Reading our own pending list: fewer than asked means it is exhausted.
			if len(msgs) < c.opt.BatchSize {
				w.cursor[i] = ">"
			} else {
				w.cursor[i] = msgs[len(msgs)-1].ID
			}
		}
		out[i] = msgs
	}
	return out, true
}

// readFailed logs and backs off after a failed read, and rewinds: a read can fail after
// Redis served it (the reply lost with the connection, or timed out on the way), and the
// entries it delivered are then pending for this consumer, which never saw them. Only its
// own pending list has them, and the reader reads that list only after a rewind. A lost
// group is recreated.
func (w *worker) readFailed(err error) {
	c := w.c
	if w.done() {
		return
	}
	if store.IsNoGroup(err) {
		// The stream was deleted under us (FLUSHDB, manual cleanup): start over.
		c.log.Warn("queue stream lost its group; recreating", "partition", w.l.p, "err", err)
		w.retry("recreating the groups", w.recover)
		return
	}
	w.readFails++
	if w.readFails == 1 || w.readFails%30 == 0 {
		c.log.Warn("reading the queue failed", "partition", w.l.p, "failures", w.readFails, "err", err)
	}
	w.rewind()
	w.sleep(backoff(w.readFails - 1))
}

// readsPending: some stream is still being read from our own pending list, which answers at
// once, so the read must not block.
func readsPending(cursors []string) bool {
	for _, c := range cursors {
		if c != ">" {
			return true
		}
	}
	return false
}

// route hands each entry read to its bot's lane, highest priority first. Entries that cannot
// run here are settled at once: an undecodable one is dead-lettered (retrying cannot fix it,
// and holding it would stall nobody but be kept forever), one in the wrong partition is
// moved where it belongs.
func (w *worker) route(got [numPriorities][]redis.XMessage) {
	c := w.c
	var its []item
	for i, msgs := range got {
		for _, msg := range msgs {
			if w.lanes.holds(i, msg.ID) {
				continue // re-read from our pending list after a rewind: already here
			}
			env, err := decodeEntry(msg)
			if err != nil {
				c.log.Error("dead-lettering malformed queue entry", "stream", w.streams[i], "id", msg.ID, "err", err)
				c.m.malformed.Inc()
				w.retry("dead-lettering a malformed entry", func() error { return w.deadLetterMalformed(i, msg, err) })
				continue
			}
			if PartitionOf(env.BotID) != w.l.p {
				w.move(i, msg, env)
				continue
			}
			its = append(its, item{i: i, msg: msg, env: env, masters: w.readAt})
		}
	}
	w.lanes.add(its...)
}

// move re-queues an entry a producer put in the wrong partition. Executing it here could run
// two of the bot's signals at once (its partition may be owned elsewhere).
func (w *worker) move(i int, msg redis.XMessage, env Envelope) {
	w.c.log.Error("queue entry in the wrong partition; moving it", "partition", w.l.p,
		"signalId", env.SignalID, "botId", env.BotID)
	if w.retry("moving a misplaced entry", func() error {
		_, err := Enqueue(w.l.ctx, w.c.rdb, env)
		return err
	}) {
		w.ack(i, msg.ID)
	}
}

// ack acknowledges and deletes an entry (settle), retrying through Redis errors even when
// the worker was asked to stop; it gives up only when the lease is lost: the next owner then
// redoes the entry, and the Handler's result check turns that into a no-op.
func (w *worker) ack(i int, id string) bool {
	for attempt := 0; ; attempt++ {
		err := w.settle(i, id, false, store.MasterChanges())
		if err == nil {
			return true
		}
		w.c.log.Warn("acknowledging a signal failed", "stream", w.streams[i], "id", id, "attempt", attempt+1, "err", err)
		if !sleepCtx(w.l.ctx, backoff(attempt)) {
			return false
		}
	}
}

// settle acknowledges and deletes a finished entry (XACK + XDEL, one round trip), unless the
// Handler's own script did (acked). Deleting keeps each stream as long as its backlog, so
// XLEN is the queue depth and MaxLen never trims executed history instead of waiting
// signals.
//
// When writes must reach replicas (--redis-min-replicas-ack), the same pipeline writes the
// partition's fence key and WAITs: on one connection, so WAIT counts the replicas holding the
// fence and with it everything written before it, the signal's booking and result included,
// whichever connection wrote them. A nil error then means the signal's writes survive a
// failover to any of those replicas (Sentinel promotes the most advanced one).
//
// It runs under a GuardMasterAt(masters), masters being store.MasterChanges as the signal's
// attempt began: on a master that changed since, it fails unsent (store.ErrMasterChanged)
// rather than deleting the entry there, which the re-run must find (worker.stillQueued).
func (w *worker) settle(i int, id string, acked bool, masters uint64) error {
	c, s := w.c, w.streams[i]
	wait := store.ReplicasWanted(c.rdb) > 0
	if acked && !wait {
		return nil
	}
	ctx, cancel := context.WithTimeout(store.GuardMasterAt(context.WithoutCancel(w.l.ctx), masters), 3*time.Second)
	defer cancel()
	_, err := store.AckPipelined(ctx, c.rdb, func(p redis.Pipeliner) error {
		if !acked {
			p.XAck(ctx, s, Group, id)
			p.XDel(ctx, s, id)
		}
		if wait {
			p.Set(ctx, store.QueueFence(w.l.p), c.name, c.opt.LeaseTTL)
		}
		return nil
	})
	if store.IsNoGroup(err) { // the stream was deleted, entry and all
		return nil
	}
	return err
}

// sleepCtx waits d; false if ctx ended meanwhile.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// retry runs fn with backoff until it succeeds (true) or the worker is done (false).
func (w *worker) retry(what string, fn func() error) bool {
	for attempt := 0; ; attempt++ {
		if w.done() {
			return false
		}
		err := fn()
		if err == nil {
			return true
		}
		if w.done() {
			return false
		}
		w.c.log.Warn("queue partition: "+what+" failed", "partition", w.l.p, "attempt", attempt+1, "err", err)
		if !w.sleep(backoff(attempt)) {
			return false
		}
	}
}

// sleep waits d; false if the worker became done meanwhile.
func (w *worker) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-w.l.ctx.Done():
		return false
	case <-w.l.stop:
		return false
	}
}

// backoff is 50 ms doubling per attempt, capped at 2 s.
func backoff(attempt int) time.Duration {
	const base, ceiling = 50 * time.Millisecond, 2 * time.Second
	if attempt >= 6 {
		return ceiling
	}
	return min(base<<attempt, ceiling)
}

// call runs the Handler, turning a panic into a *panicError: a bug in one signal's handling
// must not take the executor down (on every replica in turn, as the signal is redelivered).
func call(ctx context.Context, h Handler, env Envelope) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &panicError{value: fmt.Sprint(r), stack: debug.Stack()}
		}
	}()
	return h(ctx, env)
}

// panicError is a Handler panic. It is dead-lettered at once: the same input would panic
// again on every attempt.
type panicError struct {
	value string
	stack []byte
}

func (p *panicError) Error() string { return "handler panicked: " + p.value }

func decodeEntry(msg redis.XMessage) (Envelope, error) {
	raw, ok := msg.Values[EnvelopeField]
	if !ok {
		// Also what a pending entry trimmed by MaxLen reads as.
		return Envelope{}, fmt.Errorf("no %q field", EnvelopeField)
	}
	s, ok := raw.(string)
	if !ok {
		return Envelope{}, fmt.Errorf("field %q is %T", EnvelopeField, raw)
	}
	var env Envelope
	if err := json.Unmarshal([]byte(s), &env); err != nil {
		return Envelope{}, err
	}
	return env, env.Validate()
}
