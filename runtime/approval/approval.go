// Package approval holds the live orders of users' connected apps that wait for the user's
// approval (apppolicy.ApprovalNeeded): each is stored with the envelope it would queue,
// sized and priced as the executor would place it (executor.Preview), until the user
// approves it (it is admitted again by the app's policy, counted, and queued with its
// original signal ID), rejects it, or it expires. Nothing of an order waiting here is
// queued, placed or counted; an expired or rejected one never executes.
package approval

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/notify"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/store"
)

// States of an approval.
const (
	AwaitingApproval = "awaiting_approval"
	Approved         = "approved"
	Rejected         = "rejected"
	Expired          = "expired"
	// Refused: approved by the user, then refused by the app's policy at that moment (a
	// cap reached since, the kill switch); nothing was queued.
	Refused = "refused"
)

// DefaultTTL is how long an approval waits unless the bot's maxSignalAge is shorter.
const DefaultTTL = 5 * time.Minute

// Keep is how long a decided or expired approval stays readable (get_signal): a day, a
// signal result's default life in Redis.
const Keep = queue.DefaultResultTTL

// Approval is one order waiting for, or decided by, its user.
type Approval struct {
	// SignalID is the order's signal ID, which it is queued under once approved; it names
	// the approval too.
	SignalID string `json:"signalId"`
	UserID   string `json:"userId"`
	// ClientID and ClientName are the connected app that asked.
	ClientID   string `json:"clientId"`
	ClientName string `json:"clientName"`
	BotID      string `json:"botId"`
	BotName    string `json:"botName"`
	// Tool is the MCP tool called (send_signal, place_order).
	Tool string `json:"tool"`
	// Legs are the orders it would place, sized and priced when it was asked for.
	Legs []executor.PreviewLeg `json:"legs"`
	// Notional is what its entries commit, in the quote currency (USDT).
	Notional httpapi.Number `json:"notional"`
	// Reason is the policy rule that asked for the approval, in words.
	Reason string `json:"reason"`
	// Envelope is what is queued on approval (its entry amounts pinned: Admitted).
	Envelope queue.Envelope `json:"envelope"`
	// Call is the app policy's admission of the order, run again (Approved) on approval.
	Call apppolicy.Call `json:"call"`
	// CreatedAt and ExpiresAt are Unix ms.
	CreatedAt int64 `json:"createdAt"`
	ExpiresAt int64 `json:"expiresAt"`

	// State, DecidedAt (Unix ms, 0 while waiting) and Error (why a Refused one was) are
	// kept beside the record and read with it.
	State     string `json:"state"`
	DecidedAt int64  `json:"decidedAt,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Store keeps approvals on Redis.
type Store struct {
	rdb      redis.UniversalClient
	policies *apppolicy.Policies
	now      func() time.Time
}

// New is the approvals on rdb, admitted on approval by policies; now is the clock (nil:
// time.Now).
func New(rdb redis.UniversalClient, policies *apppolicy.Policies, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{rdb: rdb, policies: policies, now: now}
}

// createScript stores an approval unless the app's idempotency key already names one.
//
//	KEYS[1] the approval, KEYS[2] the user's index, KEYS[3] the key's mapping ("" key: a
//	key of the same slot that is never written)
//	ARGV: record, signalId, expiresAt ms, keep ms, has key
//
// Returns the signal ID of the approval that stands (the key's earlier one, or this one).
var createScript = redis.NewScript(`
if ARGV[5] == '1' then
  local prev = redis.call('GET', KEYS[3])
  if prev then return prev end
  redis.call('SET', KEYS[3], ARGV[2], 'PX', ARGV[4])
end
redis.call('HSET', KEYS[1], 'record', ARGV[1], 'state', 'awaiting_approval')
redis.call('PEXPIRE', KEYS[1], ARGV[4])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[2])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
return ARGV[2]
`)

// Create stores a as awaiting approval until its ExpiresAt, and announces it to the
// user's open dashboard pages. With an idempotency key (the app's, for a retry of the same
// call), an approval the key already asked for stands, and is returned instead.
func (s *Store) Create(ctx context.Context, a Approval, idempotencyKey string) (Approval, error) {
	a.State = AwaitingApproval
	rec, err := json.Marshal(a)
	if err != nil {
		return a, err
	}
	keyKey := store.ApprovalKey(a.UserID, "")
	if idempotencyKey != "" {
		sum := sha256.Sum256([]byte(a.ClientID + "\n" + idempotencyKey))
		keyKey = store.ApprovalKey(a.UserID, hex.EncodeToString(sum[:]))
	}
	id, err := createScript.Run(ctx, s.rdb, []string{store.Approval(a.UserID, a.SignalID), store.UserApprovals(a.UserID), keyKey},
		rec, a.SignalID, a.ExpiresAt, Keep.Milliseconds(), flag(idempotencyKey != "")).Text()
	if err != nil {
		return a, err
	}
	if id != a.SignalID {
		return s.Get(ctx, a.UserID, id)
	}
	s.announce(ctx, a.UserID)
	s.tell(ctx, a, notify.ApprovalRequested, "")
	return a, nil
}

// tell hands the user's notification of a (asked for, or decided as state) to notifyd.
// A failure is not the caller's: the approval stands, and the dashboard shows it.
func (s *Store) tell(ctx context.Context, a Approval, kind notify.Kind, state string) {
	e := notify.Event{ID: "approval:" + a.SignalID + ":" + string(kind), Kind: kind, At: s.now(),
		User: a.UserID, BotID: a.BotID, Bot: a.BotName, App: a.ClientName, Reason: state, Signal: a.SignalID,
		Expires: time.UnixMilli(a.ExpiresAt)}
	if state != "" {
		e.ID += ":" + state
	}
	if len(a.Legs) > 0 {
		l := a.Legs[0]
		e.Symbol, e.Side, e.Amount, e.Price = l.Symbol, string(l.Side), l.Amount, l.ReferencePrice
	}
	_ = notify.Tell(context.WithoutCancel(ctx), s.rdb, e)
}

// Get is user's approval of signalID, its state as of now (an approval waiting past its
// expiry is Expired). NOT_FOUND for none (or another user's).
func (s *Store) Get(ctx context.Context, userID, signalID string) (Approval, error) {
	m, err := s.rdb.HGetAll(ctx, store.Approval(userID, signalID)).Result()
	if err != nil {
		return Approval{}, err
	}
	return s.decode(m, signalID)
}

func (s *Store) decode(m map[string]string, signalID string) (Approval, error) {
	if m["record"] == "" {
		return Approval{}, errs.New(errs.NotFound, "no approval for signal %s", signalID)
	}
	var a Approval
	if err := json.Unmarshal([]byte(m["record"]), &a); err != nil {
		return Approval{}, fmt.Errorf("approval %s: %w", signalID, err)
	}
	a.State, a.Error = m["state"], m["error"]
	fmt.Sscan(m["decidedAt"], &a.DecidedAt)
	if a.State == AwaitingApproval && s.now().UnixMilli() >= a.ExpiresAt {
		a.State = Expired
	}
	return a, nil
}

// Pending is user's approvals still waiting, oldest first.
func (s *Store) Pending(ctx context.Context, userID string) ([]Approval, error) {
	ids, err := s.rdb.ZRangeByScore(ctx, store.UserApprovals(userID), &redis.ZRangeBy{
		Min: fmt.Sprint(s.now().UnixMilli() + 1), Max: "+inf"}).Result()
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	cmds := make([]*redis.MapStringStringCmd, len(ids))
	if _, err := s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.HGetAll(ctx, store.Approval(userID, id))
		}
		return nil
	}); err != nil {
		return nil, err
	}
	var out []Approval
	for i, c := range cmds {
		a, err := s.decode(c.Val(), ids[i])
		if err != nil {
			continue // expired from Redis since the index was read
		}
		if a.State == AwaitingApproval {
			out = append(out, a)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].CreatedAt != out[j].CreatedAt {
			return out[i].CreatedAt < out[j].CreatedAt
		}
		return out[i].SignalID < out[j].SignalID
	})
	return out, nil
}

// PendingCount is how many of user's approvals wait (the dashboard's badge): one ZCOUNT.
// Decided approvals leave the index, so the count is of the waiting ones.
func (s *Store) PendingCount(ctx context.Context, userID string) (int64, error) {
	return s.rdb.ZCount(ctx, store.UserApprovals(userID), fmt.Sprint(s.now().UnixMilli()+1), "+inf").Result()
}

// decideScript moves an approval from waiting to a decision, once.
//
//	KEYS[1] the approval, KEYS[2] the user's index
//	ARGV: the decision, now ms, signalId
//
// Returns {state before, ""}: "awaiting_approval" when this call decided it.
var decideScript = redis.NewScript(`
local rec = redis.call('HMGET', KEYS[1], 'record', 'state')
if not rec[1] then return {'', ''} end
if rec[2] ~= 'awaiting_approval' then return {rec[2], ''} end
local exp = tonumber(redis.call('ZSCORE', KEYS[2], ARGV[3]) or '0')
if tonumber(ARGV[2]) >= exp then return {'expired', ''} end
redis.call('HSET', KEYS[1], 'state', ARGV[1], 'decidedAt', ARGV[2])
redis.call('ZREM', KEYS[2], ARGV[3])
return {'awaiting_approval', ''}
`)

// Reject rejects user's waiting approval of signalID: it never executes.
func (s *Store) Reject(ctx context.Context, userID, signalID string) (Approval, error) {
	if err := s.decide(ctx, userID, signalID, Rejected); err != nil {
		return Approval{}, err
	}
	return s.Get(ctx, userID, signalID)
}

// Approve approves user's waiting approval of signalID: the app's policy admits it again
// (counted now; a limit reached since, or the kill switch, refuses it: Refused, and
// nothing is queued), and it is queued under its signal ID, received now. Only the call
// that decided it admits it; another call finding it approved (a second click, another
// replica) queues it only once it was admitted (a retry after a failure between admission
// and queueing), and queue.EnqueueOnce queues it once whoever gets there. A process that
// dies between the decision and the admission leaves it approved and never queued: the
// safe side (get_signal shows it approved, and the app may ask again).
func (s *Store) Approve(ctx context.Context, userID, signalID string) (Approval, error) {
	key := store.Approval(userID, signalID)
	err := s.decide(ctx, userID, signalID, Approved)
	if e, ok := errs.As(err); ok && e.Details["state"] == Approved {
		admitted, rerr := s.rdb.HGet(ctx, key, "admitted").Result()
		if rerr != nil && !errors.Is(rerr, redis.Nil) {
			return Approval{}, rerr
		}
		if admitted != "1" {
			return s.Get(ctx, userID, signalID) // the deciding call admits and queues it
		}
	} else if err != nil {
		return Approval{}, err
	} else {
		a, gerr := s.Get(ctx, userID, signalID)
		if gerr != nil {
			return a, gerr
		}
		call := a.Call
		call.Approved = true
		if perr := s.policies.Admit(ctx, call); perr != nil {
			if _, coded := errs.As(perr); !coded {
				return a, perr
			}
			if serr := s.rdb.HSet(ctx, key, "state", Refused, "error", perr.Error()).Err(); serr != nil {
				return a, serr
			}
			s.announce(ctx, userID)
			s.tell(ctx, a, notify.ApprovalDecided, Refused)
			return a, perr
		}
		if err := s.rdb.HSet(ctx, key, "admitted", "1").Err(); err != nil {
			return a, err
		}
	}
	a, err := s.Get(ctx, userID, signalID)
	if err != nil {
		return a, err
	}
	env := a.Envelope
	env.ReceivedAt = s.now().UnixMilli()
	if _, _, err := queue.EnqueueOnce(ctx, s.rdb, env, store.ApprovalQueued(env.BotID, env.SignalID), "1", Keep); err != nil {
		return a, err
	}
	s.announce(ctx, userID)
	return a, nil
}

// decide moves the approval to state. Refusals: NOT_FOUND, and INVALID_ACTION naming the
// state it is in (details.state: expired, approved, rejected, refused).
func (s *Store) decide(ctx context.Context, userID, signalID, state string) error {
	res, err := decideScript.Run(ctx, s.rdb, []string{store.Approval(userID, signalID), store.UserApprovals(userID)},
		state, s.now().UnixMilli(), signalID).StringSlice()
	if err != nil {
		return err
	}
	switch res[0] {
	case AwaitingApproval:
		if a, err := s.Get(ctx, userID, signalID); err == nil {
			s.tell(ctx, a, notify.ApprovalDecided, state)
		}
		return nil
	case "":
		return errs.New(errs.NotFound, "no approval for signal %s", signalID)
	}
	return errs.New(errs.InvalidAction, "the order is %s, not awaiting approval", stateWords(res[0])).
		WithDetails(map[string]any{"state": res[0], "signalId": signalID})
}

func stateWords(s string) string {
	switch s {
	case Expired:
		return "expired (it was never placed)"
	case Rejected:
		return "rejected"
	case Refused:
		return "refused by the app's policy"
	}
	return s
}

// announce tells the user's open dashboard pages that their approvals changed. Pub/sub is
// best effort: a page that misses it re-reads on its next resync.
func (s *Store) announce(ctx context.Context, userID string) {
	_ = s.rdb.Publish(ctx, store.ApprovalEvents(), userID).Err()
}

// ExpiryFor is when an approval asked for at now expires: DefaultTTL, or the bot's
// maxSignalAge when that is shorter (an entry older than it is refused as stale anyway).
func ExpiryFor(now time.Time, maxSignalAgeMillis int64) time.Time {
	ttl := DefaultTTL
	if maxSignalAgeMillis > 0 && time.Duration(maxSignalAgeMillis)*time.Millisecond < ttl {
		ttl = time.Duration(maxSignalAgeMillis) * time.Millisecond
	}
	return now.Add(ttl)
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}
