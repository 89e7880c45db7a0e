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
	// LoginPerAccount: login attempts per submitted email (existing or not) per window,
	// counted before the password is checked; a success clears it (LoginGate).
	LoginPerAccount = Limit{Kind: "login-account", Max: 5, Window: 15 * time.Minute}
	// LoginPerIP: login attempts per client address (IPv6 by /64) per window, counted before
	// the password is checked; a success gives its own attempt back (LoginGate).
	LoginPerIP = Limit{Kind: "login-ip", Max: 20, Window: 15 * time.Minute}
	// RegisterPerIP: client registrations per client address (IPv4 address, IPv6 /64) per
	// window.
	RegisterPerIP = Limit{Kind: "register-ip", Max: 20, Window: time.Hour}
	// RegisterPerNet48: client registrations per IPv6 /48 per window. A /48 is one site's
	// allocation and holds 65,536 /64s, so the /64 limit alone would let one site register
	// over a million clients an hour.
	RegisterPerNet48 = Limit{Kind: "register-net48", Max: 60, Window: time.Hour}
	// RegisterGlobal: client registrations of the whole service per window, whatever the
	// address: the bound on how fast a distributed attacker can fill Redis with clients
	// (which expire after UnusedClientTTL unless they obtain a token).
	RegisterGlobal = Limit{Kind: "register-global", Max: 1000, Window: time.Hour}
)

// Limiter counts events in Redis, so every replica shares the counts.
type Limiter struct{ rdb redis.UniversalClient }

// NewLimiter returns a limiter.
func NewLimiter(rdb redis.UniversalClient) *Limiter { return &Limiter{rdb: rdb} }

// Counter is one limit applied to one subject.
type Counter struct {
	Limit   Limit
	Subject string
}

// takeAllScript counts one event in every counter, or in none. KEYS: the counters. ARGV:
// max and window (ms) of each counter in order. A counter at its max refuses ({index,
// retry ms}, 1-based) and nothing is counted, so a request refused by a narrow limit does
// not spend a wider budget (one noisy /64 cannot use up the global registrations).
// Otherwise each counter is incremented, its window starting at its first event ({0, 0}).
var takeAllScript = redis.NewScript(`
for i, k in ipairs(KEYS) do
  local n = tonumber(redis.call('GET', k) or '0')
  if n >= tonumber(ARGV[2*i-1]) then
    local t = redis.call('PTTL', k)
    if t < 0 then t = tonumber(ARGV[2*i]) redis.call('PEXPIRE', k, t) end
    return {i, t}
  end
end
for i, k in ipairs(KEYS) do
  local n = redis.call('INCR', k)
  if n == 1 or redis.call('PTTL', k) < 0 then redis.call('PEXPIRE', k, ARGV[2*i]) end
end
return {0, 0}
`)

// TakeRegistration counts one client registration in every counter, atomically, or refuses
// with the limit that is reached and how long until its window ends (reached.Kind is empty
// when admitted). The counters share the {register} hash tag, so the script runs on one
// Redis Cluster slot.
func (l *Limiter) TakeRegistration(ctx context.Context, cs ...Counter) (reached Limit, retry time.Duration, err error) {
	keys := make([]string, len(cs))
	args := make([]any, 0, 2*len(cs))
	for i, c := range cs {
		keys[i] = store.RegisterRateLimit(c.Limit.Kind, c.Subject)
		args = append(args, c.Limit.Max, c.Limit.Window.Milliseconds())
	}
	v, err := takeAllScript.Run(ctx, l.rdb, keys, args...).Int64Slice()
	if err != nil {
		return Limit{}, 0, err
	}
	if v[0] == 0 {
		return Limit{}, 0, nil
	}
	return cs[v[0]-1].Limit, time.Duration(v[1]) * time.Millisecond, nil
}
