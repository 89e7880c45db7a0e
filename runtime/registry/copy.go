package registry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/store"
)

// A follower's copy state the runtime decides: the outcome of its last copy signal and its
// last failure. Like the runtime pause it lives in the follower's own hash (store.Bot), as
// FieldCopyLast and FieldCopyError (JSON), written only by RecordCopy and gone with the
// projection; the SignalBot controller mirrors it into status.copy.

// Copy state fields of a bot's hash.
const (
	FieldCopyLast  = "copyLast"
	FieldCopyError = "copyError"
)

// CopyOutcomeSuccess is a CopyEvent's Outcome when the copy signal succeeded; otherwise the
// Outcome is its failure code.
const CopyOutcomeSuccess = "success"

// CopyEvent is one copy signal's outcome.
type CopyEvent struct {
	SignalID string `json:"signalId"`
	// At is when the outcome was decided, ms since epoch.
	At int64 `json:"at"`
	// Outcome is CopyOutcomeSuccess or the failure's code.
	Outcome string `json:"outcome"`
}

// CopyError is a copy signal's failure.
type CopyError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	At      int64  `json:"at"`
}

// CopyState is a follower's copy state (zero: no copy recorded).
type CopyState struct {
	Last  *CopyEvent
	Error *CopyError
}

// recordCopyScript writes a follower's copy state into its hash (KEYS[1]) unless the hash is
// gone (a late record never re-creates a deleted bot) and publishes the bot ID, so the
// manager mirrors it at once. ARGV: the last-copy field and JSON, the error field and JSON
// ("": unchanged), the channel, the bot ID.
var recordCopyScript = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
if ARGV[4] ~= '' then redis.call('HSET', KEYS[1], ARGV[3], ARGV[4]) end
redis.call('PUBLISH', ARGV[5], ARGV[6])
return 1
`)

// RecordCopy records the outcome of follower id's copy signal; a failure (ce non-nil) also
// becomes its last error.
func (r *Registry) RecordCopy(ctx context.Context, id string, ev CopyEvent, ce *CopyError) error {
	last, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	var fail []byte
	if ce != nil {
		if fail, err = json.Marshal(ce); err != nil {
			return err
		}
	}
	return recordCopyScript.Run(ctx, r.rdb, []string{store.Bot(id)}, FieldCopyLast, last, FieldCopyError, fail,
		store.BotEvents(), id).Err()
}

// ReadCopy reads follower id's copy state.
func (r *Registry) ReadCopy(ctx context.Context, id string) (CopyState, error) {
	v, err := r.rdb.HMGet(ctx, store.Bot(id), FieldCopyLast, FieldCopyError).Result()
	if err != nil {
		return CopyState{}, err
	}
	var st CopyState
	if s := asString(v[0]); s != "" {
		st.Last = &CopyEvent{}
		if err := json.Unmarshal([]byte(s), st.Last); err != nil {
			return CopyState{}, fmt.Errorf("bot %s: corrupt copy state: %w", id, err)
		}
	}
	if s := asString(v[1]); s != "" {
		st.Error = &CopyError{}
		if err := json.Unmarshal([]byte(s), st.Error); err != nil {
			return CopyState{}, fmt.Errorf("bot %s: corrupt copy state: %w", id, err)
		}
	}
	return st, nil
}

// FollowersLater queues the read of master id's followers set on c (a pipeline: the
// executor reads it with a signal's first reads) and returns its decoder. The set is an
// index: a member whose projection no longer copies the master is skipped by its reader
// (Follows).
func FollowersLater(ctx context.Context, c redis.Cmdable, id string) func() ([]string, error) {
	cmd := c.SMembers(ctx, store.CopyFollowers(id))
	return func() ([]string, error) {
		m, err := cmd.Result()
		if errors.Is(err, redis.Nil) {
			return nil, nil
		}
		return m, err
	}
}

// Follows reports whether follower may copy master now: its projection names master, it is
// the same owner's or master is copyable, and master copies no bot itself (a copy never
// feeds another copy). The fan-out checks it for every follower at every fill, so a master
// that stops being copyable stops feeding other owners' bots at once.
func Follows(follower, master Bot) bool {
	if follower.CopyFrom == nil || follower.CopyFrom.MasterID != master.ID || master.CopyFrom != nil {
		return false
	}
	return master.Copyable || emails.Same(follower.Owner, master.Owner)
}
