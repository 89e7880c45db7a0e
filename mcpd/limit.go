package mcpd

import (
	"context"
	"math"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/store"
)

// DefaultRateLimit is requests a minute per OAuth client of a user, or per user for bearer
// JWTs (decision "MCP server" 4).
const DefaultRateLimit = 300

// limiter counts requests in Redis with GCRA (the generic cell rate algorithm: one key per
// subject holding its theoretical arrival time), so every replica shares the count. The
// burst equals the rate per minute.
//
// It is written here rather than taken from go-redis/redis_rate (which the read API uses)
// because redis_rate runs its script as a round trip of its own and has no way to queue it
// on a pipeline; on mcpd the limit is counted on every request, in the same round trip that
// checks the token and reads the session.
type limiter struct {
	interval float64 // microseconds between two requests at the steady rate
	burst    int
}

func newLimiter(perMinute int) *limiter {
	return &limiter{interval: float64(time.Minute/time.Microsecond) / float64(perMinute), burst: perMinute}
}

// gcraScript admits one request of KEYS[1]'s subject: ARGV[1] is the emission interval and
// ARGV[2] the burst. The clock is the server's (TIME), so replicas whose clocks differ
// agree. The answer is {1, 0} admitted, or {0, microseconds until one would be}.
var gcraScript = redis.NewScript(`
local interval = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local tat = tonumber(redis.call('GET', KEYS[1])) or now
if tat < now then tat = now end
local next = tat + interval
local allowAt = next - burst * interval
if now < allowAt then
  return {0, math.ceil(allowAt - now)}
end
redis.call('SET', KEYS[1], string.format('%.0f', next), 'PX', math.max(1, math.ceil((next - now) / 1000)))
return {1, 0}
`)

// rateSubject is what a principal's requests count against: its OAuth client for this user
// (one user's agent cannot spend another user's budget of the same client), or the user's
// bearer JWTs together.
func rateSubject(p *auth.Principal) string {
	if p.Kind == auth.KindOAuth {
		return "oauth:" + p.ClientID + ":" + p.UserID
	}
	return "user:" + p.UserID
}

// stage queues one request of p's subject on pipe and returns its reader: how long to wait
// before the next request is admitted, zero when this one is. A script Redis does not know
// yet (a restarted server) is run again by itself. An error means the count could not be
// read; the caller serves the request (the limit protects capacity, and the tools fail on
// Redis anyway).
func (l *limiter) stage(ctx context.Context, pipe redis.Pipeliner, rdb redis.Scripter, p *auth.Principal) func() (time.Duration, error) {
	keys := []string{store.MCPRateLimit(rateSubject(p))}
	args := []any{l.interval, l.burst}
	cmd := gcraScript.EvalSha(ctx, pipe, keys, args...)
	return func() (time.Duration, error) {
		if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
			cmd = gcraScript.Run(ctx, rdb, keys, args...)
		}
		v, err := cmd.Int64Slice()
		if err != nil || len(v) != 2 {
			return 0, err
		}
		if v[0] == 1 {
			return 0, nil
		}
		return time.Duration(math.Max(1, float64(v[1]))) * time.Microsecond, nil
	}
}
