// Package apppolicy holds what a user allows the apps they connected (OAuth clients of the
// MCP server) to do with their accounts, beyond the scope each token carries. Today that is
// the kill switch: one action that suspends every connected app's trading at once, until
// the user lifts it. It binds OAuth tokens only: the account's own bearer JWT (the user
// themselves) is not a delegated app.
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

// Switch reads and sets users' kill switches. Every mcpd replica reads it on every call
// that needs more than mcp:read, so a suspension holds on all of them from the next call.
type Switch struct {
	rdb redis.UniversalClient
	now func() time.Time
}

// NewSwitch returns the switch on rdb; now is its clock (nil: time.Now).
func NewSwitch(rdb redis.UniversalClient, now func() time.Time) *Switch {
	if now == nil {
		now = time.Now
	}
	return &Switch{rdb: rdb, now: now}
}

// Suspend turns user id's switch on and returns since when it is on: a second suspension
// keeps the first time.
func (s *Switch) Suspend(ctx context.Context, userID string) (time.Time, error) {
	now := s.now().UTC().Truncate(time.Millisecond)
	if err := s.rdb.SetNX(ctx, store.UserAppsSuspended(userID), now.UnixMilli(), 0).Err(); err != nil {
		return time.Time{}, err
	}
	since, _, err := s.Since(ctx, userID)
	return since, err
}

// Lift turns user id's switch off (nothing when it is off).
func (s *Switch) Lift(ctx context.Context, userID string) error {
	return s.rdb.Del(ctx, store.UserAppsSuspended(userID)).Err()
}

// Since is when user id's switch was turned on; false when it is off.
func (s *Switch) Since(ctx context.Context, userID string) (time.Time, bool, error) {
	v, err := s.rdb.Get(ctx, store.UserAppsSuspended(userID)).Result()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	ms, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		// Unreadable: still on. A switch must never read as off because of its format.
		return time.Time{}, true, nil
	}
	return time.UnixMilli(ms).UTC(), true, nil
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
