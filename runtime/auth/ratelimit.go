package auth

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
)

// Limit is a counter over a fixed window that starts at the first event.
type Limit struct {
	// Kind names the counter in Redis.
	Kind   string
	Max    int
	Window time.Duration
}

// Default limits (docs/auth.md).
var (
	// LoginPerAccount: failed logins per submitted email (existing or not) per window.
	LoginPerAccount = Limit{Kind: "login-account", Max: 5, Window: 15 * time.Minute}
	// LoginPerIP: failed logins per client address (IPv6 by /64) per window.
	LoginPerIP = Limit{Kind: "login-ip", Max: 20, Window: 15 * time.Minute}
	// RegisterPerIP: client registrations per client address per window.
	RegisterPerIP = Limit{Kind: "register-ip", Max: 20, Window: time.Hour}
)

// Limiter counts events in Redis, so every replica shares the counts.
type Limiter struct{ rdb redis.UniversalClient }

// NewLimiter returns a limiter.
func NewLimiter(rdb redis.UniversalClient) *Limiter { return &Limiter{rdb: rdb} }

var hitScript = redis.NewScript(`
local n = redis.call('INCR', KEYS[1])
if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local t = redis.call('PTTL', KEYS[1])
if t < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) t = tonumber(ARGV[1]) end
return {n, t}
`)

// Hit counts one event and reports whether the limit is now exceeded, and for how long.
func (l *Limiter) Hit(ctx context.Context, lim Limit, subject string) (blocked bool, retryAfter time.Duration, err error) {
	v, err := hitScript.Run(ctx, l.rdb, []string{store.RateLimit(lim.Kind, subject)}, lim.Window.Milliseconds()).Int64Slice()
	if err != nil {
		return false, 0, err
	}
	return v[0] > int64(lim.Max), time.Duration(v[1]) * time.Millisecond, nil
}

// Blocked reports whether the limit is reached (without counting), and for how long.
func (l *Limiter) Blocked(ctx context.Context, lim Limit, subject string) (bool, time.Duration, error) {
	key := store.RateLimit(lim.Kind, subject)
	pipe := l.rdb.Pipeline()
	n := pipe.Get(ctx, key)
	t := pipe.PTTL(ctx, key)
	if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
		return false, 0, err
	}
	c, _ := n.Int()
	return c >= lim.Max, t.Val(), nil
}

// Reset clears a counter (a successful login clears its account's failures).
func (l *Limiter) Reset(ctx context.Context, lim Limit, subject string) error {
	return l.rdb.Del(ctx, store.RateLimit(lim.Kind, subject)).Err()
}
