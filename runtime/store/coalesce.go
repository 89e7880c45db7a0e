package store

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// Coalescer sends the pipelines and script calls of concurrent callers as one Redis
// pipeline: a group commit. Each caller's commands are queued on the batch being filled,
// and the batch goes out when every caller that said it is running (Enter) is waiting on it,
// or MaxWait after its first command, whichever is first. A caller with nothing else to wait
// for (the only one running) sends at once, so a lone signal pays no delay; fifty signals of
// fifty bots read together share one round trip per step instead of fifty.
//
// Nothing about a command changes: each script still runs atomically, each reply is its own
// command's, and the callers are independent (an executor runs one signal per bot at a
// time, so no two commands of a batch depend on each other's order). A round trip that
// fails (the connection, not a command's reply) fails every caller of the batch alike, as
// their own round trip would have.
type Coalescer struct {
	rdb     redis.UniversalClient
	maxWait time.Duration

	mu      sync.Mutex
	running int    // callers between Enter and their leave
	cur     *batch // the batch being filled, nil when none
}

// batch is one pipeline's worth of callers' commands.
type batch struct {
	fns   []func(redis.Pipeliner)
	done  chan struct{}
	err   error
	timer *time.Timer
	ctx   context.Context
}

// DefaultCoalesceWait is the longest a queued command waits for the other running callers.
// A running caller that waits on an exchange says so (Away), so the wait covers the CPU work
// between two steps of the others, and bounds a wait nobody declared. Measured under
// fill-max (docs/benchmarks.md): 200 µs gave 5,589 fills/s, 1 ms 5,349/s (each step waited
// out the whole millisecond more often), and sending at once whenever no batch was in
// flight 5,639/s, within the runs' noise of 200 µs but with the first signal of a read
// always sent alone.
const DefaultCoalesceWait = 200 * time.Microsecond

// NewCoalescer returns a coalescer on rdb; maxWait ≤ 0 is DefaultCoalesceWait.
func NewCoalescer(rdb redis.UniversalClient, maxWait time.Duration) *Coalescer {
	if maxWait <= 0 {
		maxWait = DefaultCoalesceWait
	}
	return &Coalescer{rdb: rdb, maxWait: maxWait}
}

// Enter counts n callers as running, and returns what each calls once when it is done. A
// caller that queues commands without Enter is sent with whatever is queued, at once.
func (c *Coalescer) Enter(n int) (leave func()) {
	c.add(n)
	return c.stop
}

// Away tells c that a running caller waits on something other than Redis (an exchange's
// HTTP API): the others do not wait for it meanwhile. back, called when the wait is over,
// counts it as running again.
func (c *Coalescer) Away() (back func()) {
	c.stop()
	return func() { c.add(1) }
}

// add counts n more running callers.
func (c *Coalescer) add(n int) {
	c.mu.Lock()
	c.running += n
	c.mu.Unlock()
}

// stop counts one running caller less, and sends the batch being filled when everyone
// left running now waits on it.
func (c *Coalescer) stop() {
	c.mu.Lock()
	c.running--
	b := c.due()
	c.mu.Unlock()
	c.send(b)
}

// Pipelined queues fn's commands on the batch and waits until it has been sent. The error
// is the round trip's when it failed; each command's reply (redis.Nil included) is read from
// the command itself.
func (c *Coalescer) Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) error {
	var fnErr error
	err := c.queue(ctx, func(p redis.Pipeliner) { fnErr = fn(p) })
	if fnErr != nil {
		return fnErr
	}
	return err
}

// queue adds fn to the batch being filled (starting one) and waits for it to be sent.
func (c *Coalescer) queue(ctx context.Context, fn func(redis.Pipeliner)) error {
	c.mu.Lock()
	b := c.cur
	if b == nil {
		b = &batch{done: make(chan struct{}), ctx: context.WithoutCancel(ctx)}
		c.cur = b
		b.timer = time.AfterFunc(c.maxWait, func() { c.expire(b) })
	}
	b.fns = append(b.fns, fn)
	due := c.due()
	c.mu.Unlock()
	c.send(due)
	<-b.done
	return b.err
}

// due takes the batch being filled when every running caller is waiting on it (c.mu held).
func (c *Coalescer) due() *batch {
	b := c.cur
	if b == nil || len(b.fns) < c.running {
		return nil
	}
	c.cur = nil
	b.timer.Stop()
	return b
}

// expire sends b when MaxWait passed and it was not sent meanwhile.
func (c *Coalescer) expire(b *batch) {
	c.mu.Lock()
	if c.cur != b {
		c.mu.Unlock()
		return
	}
	c.cur = nil
	c.mu.Unlock()
	c.send(b)
}

// send runs b's commands as one pipeline (nil: nothing to send).
func (c *Coalescer) send(b *batch) {
	if b == nil {
		return
	}
	p := c.rdb.Pipeline()
	for _, fn := range b.fns {
		fn(p)
	}
	_, err := p.Exec(b.ctx)
	var re redis.Error
	if err != nil && !errors.As(err, &re) {
		b.err = err
	}
	close(b.done)
}

// Script runs s through the batch: EVALSHA, and EVAL when Redis does not know the script
// yet (a new or restarted server), as (*redis.Script).Run does.
func (c *Coalescer) Script(ctx context.Context, s *redis.Script, keys []string, args ...any) *redis.Cmd {
	var cmd *redis.Cmd
	err := c.queue(ctx, func(p redis.Pipeliner) { cmd = s.EvalSha(ctx, p, keys, args...) })
	if err == nil && redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		err = c.queue(ctx, func(p redis.Pipeliner) { cmd = s.Eval(ctx, p, keys, args...) })
	}
	if err != nil && cmd.Err() == nil {
		cmd.SetErr(err)
	}
	return cmd
}
