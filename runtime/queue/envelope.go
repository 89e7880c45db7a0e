// Package queue carries signals from the intake (webhookd, manual API, price watcher) to the
// executor through Redis Streams with consumer groups, and carries results back.
//
// Layout: bots are spread over Partitions partitions by a hash of the bot ID; each partition
// has one stream per priority (store.QueueStream). One executor at a time owns a partition
// (a lease in Redis), so a bot's signals run in arrival order and never two at once, with
// any number of executor replicas; the owner serves priority 1 before 2, 3 and 4.
package queue

import (
	"encoding/json"

	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/store"
)

// Priority orders signals: lower numbers are served first (spec: Signal queue priority).
type Priority int

// The spec's four priorities.
const (
	PriorityManualClose   Priority = 1
	PriorityStrategyExit  Priority = 2
	PriorityStrategyEntry Priority = 3
	PriorityWebhook       Priority = 4
)

// Priorities lists them highest first.
var Priorities = []Priority{PriorityManualClose, PriorityStrategyExit, PriorityStrategyEntry, PriorityWebhook}

// Partitions is how many partitions the bots are spread over (store.Partitions, which also
// decides the Redis Cluster slot of a bot's keys).
const Partitions = store.Partitions

// EnvelopeField is the stream entry's single field, holding the Envelope as JSON.
const EnvelopeField = "e"

// Envelope is one queued signal.
type Envelope struct {
	SignalID string   `json:"signalId"`
	BotID    string   `json:"botId"`
	Priority Priority `json:"priority"`
	// Source is webhook, manual, strategy, copy or watcher.
	Source string `json:"source"`
	// Signal is the runtime/signal.Signal (webhook and watcher) or a runtime order request
	// (manual), as JSON.
	Signal json.RawMessage `json:"signal"`
	// ReceivedAt is when the intake accepted it, ms since epoch.
	ReceivedAt int64 `json:"receivedAt"`
	// ReplyTo is the channel of the webhookd instance waiting for the result; empty when
	// nobody waits (the result is still stored under the signalId).
	ReplyTo string `json:"replyTo,omitempty"`
	// Admitted are entry amounts by leg name (the executor's plan: "" is the main leg)
	// that a connected app's policy admitted, or its user approved, when the signal was
	// queued: the executor places these amounts instead of sizing the entries again, so
	// that the order placed is the one the limits were checked against.
	Admitted map[string]httpapi.Number `json:"admitted,omitempty"`
}

// Sources of signals.
const (
	SourceWebhook  = "webhook"
	SourceManual   = "manual"
	SourceStrategy = "strategy"
	SourceCopy     = "copy"
	SourceWatcher  = "watcher"
)

// PartitionOf maps a bot to its partition (store.PartitionOf).
func PartitionOf(botID string) int { return store.PartitionOf(botID) }
