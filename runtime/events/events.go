// Package events carries what changed in the trading runtime to the pages that show it: a
// signal's result stored (a fill, a failure, a position opened or closed), a bot's runtime
// availability changed (a pause or a resume), and a user's approvals changed. Producers publish on Redis pub/sub as
// part of the write they announce; each dashboard replica holds one subscription (Hub) and
// hands the events to its open pages, whichever replica or executor made the change.
//
// Pub/sub is fire-and-forget: an event published while a replica's subscription is being
// re-established is lost. Pages therefore treat an event as "read again", never as the
// data itself, and Hub tells its listeners to read everything again after a reconnect
// (KindResync), so nothing shown stays stale.
package events

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
)

// Kind says what changed.
type Kind string

// Kinds of events.
const (
	// KindResult: a signal's result was stored (BotID, SignalID, Success).
	KindResult Kind = "result"
	// KindBot: a bot's runtime availability changed (paused, resumed, a pause expired).
	KindBot Kind = "bot"
	// KindApproval: a user's approvals changed (one asked for, approved, rejected); UserID.
	KindApproval Kind = "approval"
	// KindResync: events may have been missed (the subscription was re-established or a
	// listener fell behind); read everything again.
	KindResync Kind = "resync"
)

// Event is one change.
type Event struct {
	Kind     Kind   `json:"kind"`
	BotID    string `json:"botId,omitempty"`
	SignalID string `json:"signalId,omitempty"`
	// Success is the result's success, for KindResult.
	Success bool `json:"success,omitempty"`
	// UserID is the user whose approvals changed, for KindApproval (not sent to pages).
	UserID string `json:"-"`
}

// resultMessage is a KindResult event as published on store.ResultEvents.
type resultMessage struct {
	BotID    string `json:"b"`
	SignalID string `json:"s"`
	Success  bool   `json:"ok,omitempty"`
}

// PublishResult adds the announcement of a stored result to p (the pipeline that stores it,
// so it costs no round trip of its own).
func PublishResult(ctx context.Context, p redis.Cmdable, botID, signalID string, success bool) {
	p.Publish(ctx, store.ResultEvents(), ResultPayload(botID, signalID, success))
}

// ResultPayload is the message PublishResult publishes on store.ResultEvents, for a
// producer that publishes it from inside its own script.
func ResultPayload(botID, signalID string, success bool) []byte {
	data, _ := json.Marshal(resultMessage{BotID: botID, SignalID: signalID, Success: success})
	return data
}

// decode turns a message of either channel into an Event; ok is false for a message that
// is not one.
func decode(channel, payload string) (Event, bool) {
	switch channel {
	case store.BotEvents():
		// runtime/registry publishes the bare bot ID.
		if payload == "" || strings.ContainsAny(payload, "\r\n{") {
			return Event{}, false
		}
		return Event{Kind: KindBot, BotID: payload}, true
	case store.ApprovalEvents():
		// runtime/approval publishes the bare user ID.
		if payload == "" || strings.ContainsAny(payload, "\r\n{") {
			return Event{}, false
		}
		return Event{Kind: KindApproval, UserID: payload}, true
	case store.ResultEvents():
		var m resultMessage
		if json.Unmarshal([]byte(payload), &m) != nil || m.BotID == "" {
			return Event{}, false
		}
		return Event{Kind: KindResult, BotID: m.BotID, SignalID: m.SignalID, Success: m.Success}, true
	}
	return Event{}, false
}
