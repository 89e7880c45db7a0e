package auth

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/store"
)

// LoginLockTTL bounds how long one account's password check holds its lock if the replica
// running it dies before releasing it. A check takes one argon2id computation plus at most
// a full hashing queue ahead of it (well under a second with the defaults), so 10 s is a
// wide margin; a check that somehow outlives it is still counted by the attempt limit.
const LoginLockTTL = 10 * time.Second

// LoginGate counts login attempts before the password is checked, so concurrent attempts
// cannot slip past a limit between a check and a count, and lets one check per account run
// at a time, across every replica (both live in Redis).
type LoginGate struct {
	rdb         redis.UniversalClient
	account, ip Limit
}

// NewLoginGate returns a gate with the per-account and per-address limits.
func NewLoginGate(rdb redis.UniversalClient, account, ip Limit) *LoginGate {
	return &LoginGate{rdb: rdb, account: account, ip: ip}
}

// LoginTicket is one admitted attempt; exactly one of Succeeded, Failed or Void ends it.
type LoginTicket struct {
	keys  []string
	token string
}

// Why a login attempt was refused: the cause inside Begin's RATE_LIMITED error, for logs and
// metrics only; the client sees the same message whatever the cause.
var (
	ErrLoginAccountLimit = errors.New("the account's login attempts are used up")
	ErrLoginAddressLimit = errors.New("the client address's login attempts are used up")
	ErrLoginBusy         = errors.New("another password check of the account is running")
)

// loginBeginScript admits one attempt atomically. KEYS: account counter, address counter,
// account lock. ARGV: account max, account window (ms), address max, address window (ms),
// lock token, lock TTL (ms). A counter at its max refuses ({1 or 2, retry ms}); a held lock
// refuses ({3, retry ms}); neither counts then, so a flood against a locked account spends
// nothing of its address's budget. Otherwise the lock is taken and both counters are
// incremented, each window starting at its first attempt ({0, 0}).
var loginBeginScript = redis.NewScript(`
local function full(k, max, window)
  local n = tonumber(redis.call('GET', k) or '0')
  if n < max then return nil end
  local t = redis.call('PTTL', k)
  if t < 0 then redis.call('PEXPIRE', k, window) t = window end
  return t
end
local function hit(k, window)
  local n = redis.call('INCR', k)
  if n == 1 or redis.call('PTTL', k) < 0 then redis.call('PEXPIRE', k, window) end
end
local aw, iw = tonumber(ARGV[2]), tonumber(ARGV[4])
local t = full(KEYS[1], tonumber(ARGV[1]), aw)
if t then return {1, t} end
t = full(KEYS[2], tonumber(ARGV[3]), iw)
if t then return {2, t} end
if not redis.call('SET', KEYS[3], ARGV[5], 'NX', 'PX', ARGV[6]) then
  return {3, redis.call('PTTL', KEYS[3])}
end
hit(KEYS[1], aw)
hit(KEYS[2], iw)
return {0, 0}
`)

// loginEndScript ends an attempt. KEYS as loginBeginScript; ARGV: lock token, outcome. The
// lock is released only if it is still this attempt's. "ok" clears the account's counter and
// gives the address back this attempt (an office behind one address logs in all day; only
// failures and attempts in flight count against it; never a reset, or one good account
// would wipe a spray's count). "void" (no password was checked) gives both back. "fail"
// keeps both counts.
var loginEndScript = redis.NewScript(`
local function refund(k)
  if tonumber(redis.call('GET', k) or '0') > 0 then redis.call('DECR', k) end
end
if redis.call('GET', KEYS[3]) == ARGV[1] then redis.call('DEL', KEYS[3]) end
if ARGV[2] == 'ok' then
  redis.call('DEL', KEYS[1])
  refund(KEYS[2])
elseif ARGV[2] == 'void' then
  refund(KEYS[1])
  refund(KEYS[2])
end
return 1
`)

// LoginAccount is the subject of the per-account counter: the SHA-256 of the canonical
// email (emails.Canonical), whether or not such an account exists.
func LoginAccount(email string) string { return HashSecret(emails.Canonical(email)) }

// Begin admits one attempt for email from the client address key ip, before any password
// is checked. A refusal is a RATE_LIMITED *errs.Error whose RetryAfter says when to try
// again, whose Message is the same whatever the cause and whether or not the account exists,
// and whose cause is ErrLoginAccountLimit, ErrLoginAddressLimit or ErrLoginBusy.
func (g *LoginGate) Begin(ctx context.Context, email, ip string) (LoginTicket, error) {
	acct := LoginAccount(email)
	t := LoginTicket{token: RandomToken(16), keys: []string{store.LoginRateLimit(g.account.Kind, acct),
		store.LoginRateLimit(g.ip.Kind, ip), store.LoginLock(acct)}}
	v, err := loginBeginScript.Run(ctx, g.rdb, t.keys, g.account.Max, g.account.Window.Milliseconds(),
		g.ip.Max, g.ip.Window.Milliseconds(), t.token, LoginLockTTL.Milliseconds()).Int64Slice()
	if err != nil {
		return LoginTicket{}, err
	}
	cause := map[int64]error{1: ErrLoginAccountLimit, 2: ErrLoginAddressLimit, 3: ErrLoginBusy}[v[0]]
	if cause == nil {
		return t, nil
	}
	retry := max(time.Duration(v[1])*time.Millisecond, time.Second)
	e := errs.Wrap(cause, errs.RateLimited, "%s", LockedMessage(retry))
	e.RetryAfter = retry
	return LoginTicket{}, e
}

// LockedMessage is what a refused login says, the same whether or not the account exists.
func LockedMessage(retry time.Duration) string {
	mins := max(int((retry+time.Minute-1)/time.Minute), 1)
	unit := "minutes"
	if mins == 1 {
		unit = "minute"
	}
	return fmt.Sprintf("Too many failed sign-in attempts. Try again in %d %s.", mins, unit)
}

// Succeeded ends an attempt whose password was right: the account's count is cleared, the
// address gets this attempt back, the lock is released.
func (g *LoginGate) Succeeded(ctx context.Context, t LoginTicket) error { return g.end(ctx, t, "ok") }

// Failed ends an attempt whose password was checked and wrong: both counts stay.
func (g *LoginGate) Failed(ctx context.Context, t LoginTicket) error { return g.end(ctx, t, "fail") }

// Void ends an attempt that checked no password (hashing queue full, Redis error, client
// gone): both counts are given back, as nothing was learnt.
func (g *LoginGate) Void(ctx context.Context, t LoginTicket) error { return g.end(ctx, t, "void") }

// end runs even when the request's context is gone: a lock left behind would refuse the
// account's next attempt until LoginLockTTL.
func (g *LoginGate) end(ctx context.Context, t LoginTicket, outcome string) error {
	if len(t.keys) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	return loginEndScript.Run(ctx, g.rdb, t.keys, t.token, outcome).Err()
}
