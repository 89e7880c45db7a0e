package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
)

// Group is the consumer group every executor reads the streams through. There is one group
// per stream; the executors are its consumers.
const Group = "executors"

// MaxLen caps each stream (XADD MAXLEN ~ MaxLen), a safety valve against a runaway producer
// while no executor runs. Executed signals are deleted from their stream (see Consumer), so
// a stream's length is its backlog and the cap never bites in normal operation. 100,000 per
// stream is 12.8 million signals over the 128 streams, about 6 GB at 500 bytes a signal: a
// larger cap would never trigger before Redis runs out of memory, which is what it guards
// against. When it does bite, the oldest waiting signals are dropped: after that long a
// backlog they are stale trading advice anyway.
const MaxLen = 100_000

// numPriorities sizes the per-priority arrays (len(Priorities) is not a constant).
const numPriorities = 4

// Valid reports whether p is one of the four priorities.
func (p Priority) Valid() bool { return p >= PriorityManualClose && p <= PriorityWebhook }

// StreamOf is the stream a bot's signals of one priority go to. Producers that XADD on their
// own (webhookd's intake script) must use it, with EnvelopeField, MaxLen and Envelope JSON.
func StreamOf(botID string, p Priority) string {
	return store.QueueStream(PartitionOf(botID), int(p))
}

// Validate checks what the queue relies on: a signal ID (also the result key and the reply
// dispatch key, so no newline), a bot ID (the partition) and a valid priority.
func (e Envelope) Validate() error {
	switch {
	case e.SignalID == "" || strings.ContainsAny(e.SignalID, "\r\n"):
		return fmt.Errorf("queue: envelope: bad signal ID %q", e.SignalID)
	case e.BotID == "":
		return fmt.Errorf("queue: envelope %s: empty bot ID", e.SignalID)
	case !e.Priority.Valid():
		return fmt.Errorf("queue: envelope %s: priority %d is not 1-4", e.SignalID, e.Priority)
	}
	return nil
}

// Enqueue appends env to its bot's partition stream at its priority and returns the stream
// entry ID. A zero ReceivedAt is set to now. The caller registers with a Waiter before
// enqueueing when it wants to wait for the result.
func Enqueue(ctx context.Context, rdb redis.UniversalClient, env Envelope) (string, error) {
	if err := env.Validate(); err != nil {
		return "", err
	}
	if env.ReceivedAt == 0 {
		env.ReceivedAt = time.Now().UnixMilli()
	}
	data, err := json.Marshal(env)
	if err != nil {
		return "", fmt.Errorf("queue: encode envelope %s: %w", env.SignalID, err)
	}
	id, err := rdb.XAdd(ctx, &redis.XAddArgs{
		Stream: StreamOf(env.BotID, env.Priority),
		MaxLen: MaxLen,
		Approx: true,
		Values: []any{EnvelopeField, data},
	}).Result()
	if err != nil {
		return "", fmt.Errorf("queue: enqueue %s: %w", env.SignalID, err)
	}
	return id, nil
}
