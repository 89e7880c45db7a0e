// Package apppolicy holds what a user allows the apps they connected (OAuth clients of the
// MCP server) to do with their accounts, beyond the scope each token carries: each app's
// policy (policy.go: its bots, venue and orders per hour) and the kill switch (this file:
// one action that suspends every connected app's trading at once, until the user lifts
// it), both admitted by Policies.Admit. It binds OAuth tokens only: the account's own
// bearer JWT (the user themselves) is not a delegated app.
package apppolicy

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/store"
)

// LimitKillSwitch names the kill switch in a POLICY_LIMIT's details.limit.
const LimitKillSwitch = "killSwitch"

// The kill switch is one key in the user's slot holding since when it is on; Admit reads it
// first on every app call above mcp:read, on every mcpd replica, so a suspension holds
// from the next call on all of them.

// Suspend turns user id's switch on and returns since when it is on: a second suspension
// keeps the first time. Redis first, so that it holds from the next call whether or not
// PostgreSQL answers; then the record (a failure answers 503 with the switch on).
func (s *Policies) Suspend(ctx context.Context, userID string) (time.Time, error) {
	now := s.now().UTC().Truncate(time.Millisecond)
	if err := s.rdb.SetNX(ctx, store.UserAppsSuspended(userID), now.UnixMilli(), 0).Err(); err != nil {
		return time.Time{}, err
	}
	since, _, err := s.Since(ctx, userID)
	if err != nil {
		return time.Time{}, err
	}
	if s.record != nil {
		at := since
		if at.IsZero() {
			at = now
		}
		if err := s.record.suspend(ctx, userID, at); err != nil {
			return since, err
		}
	}
	return since, nil
}

// Lift turns user id's switch off (nothing when it is off): in the record first, so that
// a lift PostgreSQL refused leaves the switch on everywhere.
func (s *Policies) Lift(ctx context.Context, userID string) error {
	if s.record != nil {
		if err := s.record.lift(ctx, userID); err != nil {
			return err
		}
	}
	return s.rdb.Del(ctx, store.UserAppsSuspended(userID)).Err()
}

// Since is when user id's switch was turned on; false when it is off.
func (s *Policies) Since(ctx context.Context, userID string) (time.Time, bool, error) {
	if err := s.cached(ctx, userID); err != nil {
		return time.Time{}, false, err
	}
	v, err := s.rdb.Get(ctx, store.UserAppsSuspended(userID)).Result()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	// Unreadable: still on (zero time). A switch must never read as off because of its format.
	return sinceOf(v), true, nil
}

// sinceOf reads the switch's value, ms since the epoch; the zero time when unreadable.
func sinceOf(v string) time.Time {
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// Refusal is the POLICY_LIMIT of a call refused by the switch, on since then: details name
// the limit, that it is on, since when, and that it resets only when the user lifts it.
func Refusal(since time.Time) *errs.Error {
	d := map[string]any{"limit": LimitKillSwitch, "value": true, "resetsAt": nil}
	msg := "trading by connected apps is suspended on this account (the kill switch)"
	if !since.IsZero() {
		d["since"] = since.UTC().Format(time.RFC3339)
		msg += " since " + since.UTC().Format(time.RFC3339)
	}
	return errs.New(errs.PolicyLimit, "%s; reads still work. Only the account's owner can lift it, in the dashboard's Connected apps; do not retry until they do",
		msg).WithDetails(d)
}
