package queue

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
)

// A partition is read by the one executor instance whose name its lease key holds. The lease
// is what makes a bot's signals run in order and never two at once across replicas: the
// consumer group alone would hand a bot's next signal to another consumer while the first
// is still executing.
//
// Timing, with the default LeaseTTL of 5 s: the owner renews every LeaseTTL/5 (1 s). It
// trusts a lease until validUntil = (time the last successful renewal was sent) + LeaseTTL,
// a bound Redis's own expiry can only exceed (clocks running at the same rate), because
// Redis starts the TTL when it receives the command. While renewals fail the owner gives the
// lease up (cancels the partition's handler context) once fewer than two renewal periods
// remain, and its reader never starts a read that could be served after the lease has
// expired (see worker.fill), so a new owner, which can only take the key once Redis has
// expired it, does not race a read of the old one. The one gap, a process frozen between
// that check and sending the read, is closed by the new owner's periodic sweep
// (worker.sweep). All instances should use the same LeaseTTL: it is also how long a silent
// instance stays counted in the heartbeat set.

// renewScript extends a lease only if it is still ours (compare-and-renew).
var renewScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return 0`)

// releaseScript deletes a lease only if it is still ours (compare-and-delete), so a late
// release never frees a partition another instance has taken since.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0`)

// heartbeatScript records this instance as live, forgets instances silent for longer than
// ARGV[2] ms and returns how many remain. It uses Redis's clock, so the instances' clocks
// need not agree. (Redis 7 replicates a script's effects, so TIME is allowed before writes.)
var heartbeatScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZADD', KEYS[1], now, ARGV[1])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[2]))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return redis.call('ZCARD', KEYS[1])`)

// grant is a freshly acquired partition and how long its lease is certainly ours.
type grant struct {
	p     int
	until time.Duration
}

// lease is one partition this instance holds, with the worker reading it.
type lease struct {
	p int
	// validUntil is how long the lease is certainly ours, as time since Consumer.epoch
	// (monotonic clock).
	validUntil atomic.Int64
	lost       atomic.Bool
	// releasing: stop has been closed (rebalance or shutdown); only the Run loop uses it.
	releasing bool
	// stop asks the worker to finish the signal in hand and exit (release or shutdown).
	stop chan struct{}
	// ctx is the handler's context, cancelled when the lease is lost: someone else may own
	// the partition now, so the signal in hand must not go on.
	ctx    context.Context
	cancel context.CancelFunc
}

// usableFor reports whether the lease certainly stays ours for d more.
func (l *lease) usableFor(c *Consumer, d time.Duration) bool {
	return !l.lost.Load() && int64(c.since()+d) < l.validUntil.Load()
}

func (l *lease) stopping() bool {
	select {
	case <-l.stop:
		return true
	default:
		return false
	}
}

// renewAll sends one pipeline with this instance's heartbeat (unless it is leaving) and a
// compare-and-renew per held lease; it returns the number of live instances (0 if unknown).
func (c *Consumer) renewAll(ctx context.Context, heartbeat bool) int {
	held := c.heldLeases()
	sent := c.since()
	ttl := c.opt.LeaseTTL.Milliseconds()
	ctx, cancel := context.WithTimeout(ctx, c.renewEvery)
	defer cancel()
	var hb *redis.Cmd
	renews := make([]*redis.Cmd, len(held))
	_, _ = c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		if heartbeat {
			stale := ttl
			hb = heartbeatScript.Eval(ctx, p, []string{store.QueueExecutors()}, c.name, stale, max(60_000, 10*ttl))
		}
		for i, l := range held {
			// EVAL, not EVALSHA: inside a pipeline a NOSCRIPT (after a Redis restart) could
			// not be retried; the script is a hundred bytes.
			renews[i] = renewScript.Eval(ctx, p, []string{store.QueueLease(l.p)}, c.name, ttl)
		}
		return nil
	})
	failed, lastErr := 0, error(nil)
	for i, l := range held {
		n, err := renews[i].Int64()
		switch {
		case err == nil && n == 1:
			l.validUntil.Store(int64(sent + c.opt.LeaseTTL))
		case err == nil:
			c.lose(l, "lease taken or expired")
		case c.since()+2*c.renewEvery >= time.Duration(l.validUntil.Load()):
			c.lose(l, "lease renewal failing: "+err.Error())
		default:
			failed, lastErr = failed+1, err
		}
	}
	if failed > 0 {
		c.log.Warn("lease renewals failed, will retry", "count", failed, "err", lastErr)
	}
	if hb == nil {
		return 0
	}
	live, err := hb.Int64()
	if err != nil {
		c.log.Warn("heartbeat failed", "err", err)
		return 0
	}
	return int(live)
}

// lose gives a lease up: the worker's handler context is cancelled and it exits without
// acknowledging the signal in hand, which the partition's next owner reclaims.
func (c *Consumer) lose(l *lease, why string) {
	if l.lost.Swap(true) {
		return
	}
	l.cancel()
	c.m.leases.WithLabelValues(leaseLost).Inc()
	c.log.Warn("partition lease lost", "partition", l.p, "reason", why)
}

// acquire tries to take up to n free partitions, in an order that starts at a point derived
// from this instance's name so that instances starting together do not all contend for
// partition 0. It never takes more than n: one pipeline of SET NX PX per batch of exactly
// the number still missing.
func (c *Consumer) acquire(ctx context.Context, n int) []grant {
	var got []grant
	var candidates []int
	for i := 0; i < Partitions; i++ {
		p := (c.offset + i) % Partitions
		if !c.holds(p) {
			candidates = append(candidates, p)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.renewEvery)
	defer cancel()
	for len(got) < n && len(candidates) > 0 {
		batch := candidates[:min(n-len(got), len(candidates))]
		candidates = candidates[len(batch):]
		sent := c.since()
		cmds := make([]*redis.BoolCmd, len(batch))
		_, err := c.rdb.Pipelined(ctx, func(pipe redis.Pipeliner) error {
			for i, p := range batch {
				cmds[i] = pipe.SetNX(ctx, store.QueueLease(p), c.name, c.opt.LeaseTTL)
			}
			return nil
		})
		if err != nil && !errors.Is(err, redis.Nil) {
			c.log.Warn("acquiring partitions failed", "err", err)
		}
		for i, p := range batch {
			if ok, err := cmds[i].Result(); err == nil && ok {
				got = append(got, grant{p: p, until: sent + c.opt.LeaseTTL})
			}
		}
	}
	return got
}

// release hands a lease back (compare-and-delete), so the next owner need not wait for it
// to expire.
func (c *Consumer) release(ctx context.Context, l *lease) {
	ctx, cancel := context.WithTimeout(ctx, c.renewEvery)
	defer cancel()
	if err := releaseScript.Run(ctx, c.rdb, []string{store.QueueLease(l.p)}, c.name).Err(); err != nil {
		c.log.Warn("releasing partition failed; it frees when the lease expires", "partition", l.p, "err", err)
		return
	}
	if !l.lost.Load() {
		c.m.leases.WithLabelValues(leaseReleased).Inc()
	}
}

// leave removes this instance from the heartbeat set, so the others count it out at once.
func (c *Consumer) leave(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, c.renewEvery)
	defer cancel()
	if err := c.rdb.ZRem(ctx, store.QueueExecutors(), c.name).Err(); err != nil {
		c.log.Warn("leaving the executor set failed; others count this instance out when its heartbeat ages", "err", err)
	}
}
