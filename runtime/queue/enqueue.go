package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
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
	notePlacement(env)
	data, err := json.Marshal(env)
	if err != nil {
		return "", fmt.Errorf("queue: encode envelope %s: %w", env.SignalID, err)
	}
	var add *redis.StringCmd
	// On the replicas before the caller is told it is queued (store.AckPipelined).
	if _, err := store.AckPipelined(ctx, rdb, func(p redis.Pipeliner) error {
		add = p.XAdd(ctx, &redis.XAddArgs{
			Stream: StreamOf(env.BotID, env.Priority),
			MaxLen: MaxLen,
			Approx: true,
			Values: []any{EnvelopeField, data},
		})
		return nil
	}); err != nil {
		return "", fmt.Errorf("queue: enqueue %s: %w", env.SignalID, err)
	}
	return add.Val(), nil
}

// unplaced counts the envelopes this process enqueued whose signal ID is not in their bot's
// partition (InBotPartition).
var unplaced atomic.Int64

// notePlacement logs an envelope whose signal ID its producer did not place for the bot
// (SignalIDFor): a producer that forgot, since every one in this module places its IDs. It
// is queued all the same, as a signal queued by an older version must be: its result key
// is merely in another slot than its bot's keys. The first and every 1,000th are logged, so
// that a producer at a high rate cannot flood the log.
func notePlacement(env Envelope) {
	if InBotPartition(env.BotID, env.SignalID) {
		return
	}
	if n := unplaced.Add(1); n == 1 || n%1000 == 0 {
		slog.Warn("queue: signal ID outside its bot's partition; queued all the same",
			"signalId", env.SignalID, "botId", env.BotID, "unplacedSoFar", n)
	}
}

// enqueueOnceScript sets the marker KEYS[1] to ARGV[5] for ARGV[1] seconds and XADDs the
// envelope ARGV[4] under field ARGV[3] to the stream KEYS[2] (MAXLEN ~ ARGV[2]), only when
// the marker was absent: one step in the bot's partition slot, so a repeat enqueues nothing
// and a crash cannot leave a marker without its entry. Returns {1} when it enqueued, {0,
// the marker's value} otherwise.
//
// A repeat rewrites the marker's own expiry: a write, so that the WAIT which follows on the
// caller's connection (store.AckScript) also covers the first call's entry, written perhaps
// on another connection, before the repeat is answered.
var enqueueOnceScript = redis.NewScript(`
local prev = redis.call('GET', KEYS[1])
if prev then
  local at = redis.call('PEXPIRETIME', KEYS[1])
  if at > 0 then redis.call('PEXPIREAT', KEYS[1], at) end
  return {0, prev}
end
redis.call('SET', KEYS[1], ARGV[5], 'EX', ARGV[1])
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', ARGV[3], ARGV[4])
return {1}
`)

// EnqueueOnceLater queues on c (a pipeline, or a client) the enqueue of env, like Enqueue,
// unless marker (a key in env.BotID's partition slot, named by runtime/store) was set by an
// earlier call within ttl, and sets it. The returned function, called once the pipeline has
// run, reports whether it enqueued. A producer that may run twice for one signal (the
// executor's copy fan-out, repeated when its master signal is redelivered) gives each
// signal its marker. The script goes by EVAL, so a pipeline of them needs no loaded script.
func EnqueueOnceLater(ctx context.Context, c redis.Scripter, env Envelope, marker string, ttl time.Duration) (func() (bool, error), error) {
	done, err := enqueueOnce(env, marker, "1", ttl, func(keys []string, args ...any) *redis.Cmd {
		return enqueueOnceScript.Eval(ctx, c, keys, args...)
	})
	if err != nil {
		return nil, err
	}
	return func() (bool, error) {
		_, enqueued, err := done()
		return enqueued, err
	}, nil
}

// EnqueueOnce enqueues env, like Enqueue, and sets marker (a key in env.BotID's partition
// slot, named by runtime/store) to value for ttl, unless marker is set already: then it
// enqueues nothing and returns the marker's value. A caller that names its requests by a
// key of its own (an idempotency key) stores in value what a repeat must answer.
func EnqueueOnce(ctx context.Context, c redis.Scripter, env Envelope, marker, value string, ttl time.Duration) (prev string, enqueued bool, err error) {
	done, err := enqueueOnce(env, marker, value, ttl, func(keys []string, args ...any) *redis.Cmd {
		// On the replicas before the caller is told it is queued.
		return store.AckScript(ctx, c, enqueueOnceScript, keys, args...)
	})
	if err != nil {
		return "", false, err
	}
	return done()
}

// enqueueOnce runs enqueueOnceScript for env through run.
func enqueueOnce(env Envelope, marker, value string, ttl time.Duration, run func(keys []string, args ...any) *redis.Cmd) (func() (string, bool, error), error) {
	if err := env.Validate(); err != nil {
		return nil, err
	}
	if env.ReceivedAt == 0 {
		env.ReceivedAt = time.Now().UnixMilli()
	}
	notePlacement(env)
	data, err := json.Marshal(env)
	if err != nil {
		return nil, fmt.Errorf("queue: encode envelope %s: %w", env.SignalID, err)
	}
	cmd := run([]string{marker, StreamOf(env.BotID, env.Priority)},
		max(1, int64(ttl/time.Second)), MaxLen, EnvelopeField, data, value)
	return func() (string, bool, error) {
		reply, err := cmd.Slice()
		if err != nil {
			return "", false, fmt.Errorf("queue: enqueue %s: %w", env.SignalID, err)
		}
		if n, _ := reply[0].(int64); n == 1 {
			return "", true, nil
		}
		if len(reply) != 2 {
			return "", false, fmt.Errorf("queue: enqueue %s: unexpected reply %v", env.SignalID, reply)
		}
		prev, _ := reply[1].(string)
		return prev, false, nil
	}, nil
}
