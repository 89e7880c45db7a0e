package queue

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/events"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/store"
)

// DefaultResultTTL is how long a signal's result stays in Redis under its signalId (API,
// MCP, the executor's "already done" check) when the process sets no other life
// (SetResultTTL).
const DefaultResultTTL = 24 * time.Hour

// MinResultTTL is the shortest life SetResultTTL gives a result: every retry inside a
// signal's retry budget (about two minutes) still finds it in Redis.
const MinResultTTL = 10 * time.Minute

// resultTTL is the results' life (DefaultResultTTL until SetResultTTL).
var resultTTL = store.NewTTL(DefaultResultTTL, MinResultTTL)

// SetResultTTL makes d (at least MinResultTTL) the life in Redis of every result this
// process stores after the call. The executor sets it to its hot window when PostgreSQL
// archives results: past it a result is read from the archive (runtime/history), and an
// entry older than it checks the archive before it runs again (the executor's Handle).
func SetResultTTL(d time.Duration) { resultTTL.Set(d) }

// ResultTTL is the life in Redis of a result stored now (see SetResultTTL).
func ResultTTL() time.Duration { return resultTTL.Get() }

// PublishResult stores res under env's signalId for ResultTTL() and, when someone waits
// (env.ReplyTo), publishes it on that channel: both in one round trip, the store first, so a
// waiter that hears nothing (a dropped subscription) still finds the result with GetResult.
// The message is the signalId, a newline and the result JSON: the Waiter dispatches on the
// ID without decoding results nobody waits for any more.
//
// Whoever finishes a signal stores its result first and acknowledges the entry after, and a
// crash in between leaves an entry whose result exists, which Idempotent (the executor's
// "already done" check) finishes without executing the signal again. The executor stores the
// result of a fill inside its booking script instead (ResultLua); this is the path of every
// other result.
func PublishResult(ctx context.Context, rdb redis.UniversalClient, env Envelope, res result.Result) error {
	w, err := NewResultWrite(env, res)
	if err != nil {
		return err
	}
	// The index is written after the result, so every entry it lists has had a result
	// (unless expired since). They are separate commands of one round trip: a result whose
	// ID is not in its bot's partition (SignalIDFor) is in another slot than the index.
	_, err = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		// NX: a signal's first stored result is its result. A second attempt of the same
		// signal running at once (a partition reclaimed while its first holder still
		// worked) may plan from a book the first attempt already changed and reach another
		// outcome; it must not replace the one already stored and answered, nor be
		// archived: the script appends to the archive only the result it stored.
		storeNXScript.Eval(ctx, p, []string{w.Keys[0], w.Keys[2], keptRecord(env.SignalID)}, w.Args[0], w.Args[1], w.Args[2], w.Args[3])
		if w.Args[2] != "" {
			indexScript.Eval(ctx, p, []string{w.Keys[1]}, w.Args[2], w.Args[1])
		}
		if env.ReplyTo != "" {
			p.Publish(ctx, env.ReplyTo, w.Args[5])
		}
		if w.Args[7] != "" {
			p.Publish(ctx, store.ResultEvents(), w.Args[7])
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("queue: publish result %s: %w", env.SignalID, err)
	}
	return nil
}

// storeNXScript stores a result (KEYS[1], ARGV[1] for ARGV[2] s) unless one is stored,
// under its key or in the order record of the signal's main leg (KEYS[3], keptRecord: the
// same slot), and then only appends it to the archive stream of its slot (KEYS[2]) with
// its index entry (ARGV[3], "" when no bot) and when the intake accepted it (ARGV[4]).
var storeNXScript = redis.NewScript(position.OrderStateLua + `
local rec = redis.call('GET', KEYS[3])
if rec and select(3, orderState(rec)) then return 0 end
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2]) then return 0 end
` + store.ArchiveLua(2, store.ArchiveResult, 1, "'s'", "ARGV[3]", "'at'", "ARGV[4]") + `return 1
`)

// keptRecord is the order record that may hold signalID's result (ResultWrite.KeepInRecord):
// its main leg's, in the signal's partition.
func keptRecord(signalID string) string {
	return store.BookOrderIn(store.SignalPartition(signalID), order.ClientOrderID(signalID, ""))
}

// indexLua pushes ARGV[at] (an index entry) at the head of the bot's index KEYS[key] unless
// one of its newest indexScan entries is the same, caps the list at MaxBotSignals and sets
// its life to ARGV[ttl] seconds. A result published again (a waiter that missed it, a
// second attempt that found it stored) finds its entry among the newest, since a bot's
// signals finish in order; a reader drops any copy further down (recentLater).
func indexLua(key, at, ttl int) string {
	return fmt.Sprintf(`if not redis.call('LPOS', KEYS[%[1]d], ARGV[%[2]d], 'MAXLEN', %[3]d) then
  redis.call('LPUSH', KEYS[%[1]d], ARGV[%[2]d])
  redis.call('LTRIM', KEYS[%[1]d], 0, %[4]d)
end
redis.call('EXPIRE', KEYS[%[1]d], ARGV[%[5]d])
`, key, at, indexScan, MaxBotSignals-1, ttl)
}

// indexScan is how many of the newest index entries a push compares its entry with.
const indexScan = 16

// indexScript is indexLua alone: PublishResult's index write, in the bot's slot, which is
// not the result's when the signal ID is not in its bot's partition.
var indexScript = redis.NewScript(indexLua(1, 1, 2) + "return 1\n")

// ResultWrite is the publication of one result as data: the keys and arguments ResultLua
// takes, and from which PublishResult sends the same writes, so that the result's JSON, its
// TTL, the index entry, its archive entry and both announcements have one owner, this file.
type ResultWrite struct {
	// Keys are the result, the bot's signal index (store.BotSignals; the result's key
	// again when the envelope names no bot) and the archive stream of the result's slot.
	Keys []string
	// Args are the result JSON, ResultTTL() (s), the index entry ("" when no bot), the time
	// the intake accepted the signal (ms), the reply channel and message ("" when nobody
	// waits), the events channel and message ("" when no bot), and "1" when the result is
	// stored under its key ("": its order record holds it, KeepInRecord).
	Args []any
}

// ResultArgs is the number of a ResultWrite's Args.
const ResultArgs = 9

// KeepInRecord makes w leave the result out of its own key: the signal's only order record,
// written in the same script, holds it (position.Outcome), and GetResult reads it there.
// Everything else (archive, index, announcements) is written as before.
func (w *ResultWrite) KeepInRecord() { w.Args[8] = "" }

// NewResultWrite checks res against env (the same signal; a missing signal or bot ID is
// filled in from env) and encodes its publication.
func NewResultWrite(env Envelope, res result.Result) (ResultWrite, error) {
	if env.SignalID == "" || strings.ContainsAny(env.SignalID, "\r\n") {
		return ResultWrite{}, fmt.Errorf("queue: publish result: bad signal ID %q", env.SignalID)
	}
	switch res.SignalID {
	case "":
		res.SignalID = env.SignalID
	case env.SignalID:
	default:
		return ResultWrite{}, fmt.Errorf("queue: publish result: result of %s given for signal %s", res.SignalID, env.SignalID)
	}
	if res.BotID == "" {
		res.BotID = env.BotID
	}
	data, err := json.Marshal(res)
	if err != nil {
		return ResultWrite{}, fmt.Errorf("queue: encode result %s: %w", env.SignalID, err)
	}
	w := ResultWrite{Keys: []string{store.SignalResult(env.SignalID), store.SignalResult(env.SignalID), store.Archive(store.SignalPartition(env.SignalID))},
		Args: []any{data, int64(ResultTTL() / time.Second), "", env.ReceivedAt, env.ReplyTo, "", store.ResultEvents(), "", "1"}}
	if env.ReplyTo != "" {
		w.Args[5] = encodeReply(env.SignalID, data)
	}
	if env.BotID != "" {
		w.Keys[1], w.Args[2] = store.BotRecent(env.BotID), signalEntryOf(env).Encode()
		w.Args[7] = string(events.ResultPayload(env.BotID, env.SignalID, res.Success))
	}
	return w, nil
}

// ResultLua returns the Lua statements that make a ResultWrite inside a script, in the order
// PublishResult makes them: they read its Keys from KEYS[keyAt] to KEYS[keyAt+2] and its
// Args from ARGV[argAt] on. Every key must be in the script's slot, which they are when the
// signal ID is in its bot's partition (SignalIDFor). The statements return nothing.
func ResultLua(keyAt, argAt int) string {
	return fmt.Sprintf("if ARGV[%d] ~= '' then redis.call('SET', KEYS[%d], ARGV[%d], 'EX', ARGV[%d]) end\n", argAt+8, keyAt, argAt, argAt+1) +
		store.ArchiveLua(keyAt+2, store.ArchiveResult, argAt, "'s'", fmt.Sprintf("ARGV[%d]", argAt+2), "'at'", fmt.Sprintf("ARGV[%d]", argAt+3)) +
		fmt.Sprintf("if ARGV[%d] ~= '' then\n", argAt+2) + indexLua(keyAt+1, argAt+2, argAt+1) + "end\n" +
		fmt.Sprintf(`if ARGV[%[1]d] ~= '' then redis.call('PUBLISH', ARGV[%[1]d], ARGV[%[2]d]) end
if ARGV[%[4]d] ~= '' then redis.call('PUBLISH', ARGV[%[3]d], ARGV[%[4]d]) end
`, argAt+4, argAt+5, argAt+6, argAt+7)
}

// MaxBotSignals is how many signals a bot's index (store.BotSignals) keeps: the newest by
// the time the intake accepted them.
const MaxBotSignals = 1000

// SignalEntry is one signal of a bot's index: what the result does not say.
type SignalEntry = result.Entry

// signalEntryOf is env's index entry. It is the same for every publication of one
// envelope, so a re-published result adds no second entry.
func signalEntryOf(env Envelope) SignalEntry {
	var body struct {
		Action string `json:"action"`
		Type   string `json:"type"`
	}
	_ = json.Unmarshal(env.Signal, &body) // an undecodable signal has no action to show
	return SignalEntry{SignalID: env.SignalID, Source: env.Source, Action: cmp.Or(body.Action, body.Type), ReceivedAt: env.ReceivedAt}
}

// RecentSignals is the bot's index, newest first (ties by signal ID), at most
// MaxBotSignals entries of the last ResultTTL().
func RecentSignals(ctx context.Context, rdb redis.UniversalClient, botID string) ([]SignalEntry, error) {
	return recentLater(ctx, rdb, botID, -1)()
}

// BotSignal is an entry of a bot's index, with the bot.
type BotSignal struct {
	BotID string `json:"botId"`
	SignalEntry
}

// NewestSignals are the newest n entries of the indexes of botIDs together, newest first
// (ties by signal ID, then bot ID), read in one pipelined round trip: each bot's newest n,
// then merged.
func NewestSignals(ctx context.Context, rdb redis.UniversalClient, botIDs []string, n int) ([]BotSignal, error) {
	if n <= 0 || len(botIDs) == 0 {
		return []BotSignal{}, nil
	}
	reads := make([]func() ([]SignalEntry, error), len(botIDs))
	// Errors are per command; each read reports its own.
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range botIDs {
			reads[i] = recentLater(ctx, p, id, int64(n-1))
		}
		return nil
	})
	var out []BotSignal
	for i, read := range reads {
		entries, err := read()
		if err != nil {
			return nil, err
		}
		for _, e := range entries {
			out = append(out, BotSignal{BotID: botIDs[i], SignalEntry: e})
		}
	}
	slices.SortFunc(out, func(a, b BotSignal) int {
		return cmp.Or(cmp.Compare(b.ReceivedAt, a.ReceivedAt), strings.Compare(b.SignalID, a.SignalID), strings.Compare(a.BotID, b.BotID))
	})
	if len(out) > n {
		out = out[:n]
	}
	if out == nil {
		out = []BotSignal{}
	}
	return out, nil
}

// recentLater queues the read of the bot's newest stop+1 index entries (-1: all) on c (a
// pipeline) and returns the decoder to call once it has run. It reads the list
// (store.BotRecent) and the sorted set the index was before it (store.BotSignals, until
// that expires), and answers their entries newest first by the time the intake accepted
// them (ties by signal ID), each signal once. The list is in the order the results were
// stored, which is a bot's signal order; the sort puts right the rare entry stored out of
// it (a result published from outside the executor), and drops a copy the push did not
// see.
func recentLater(ctx context.Context, c redis.Cmdable, botID string, stop int64) func() ([]SignalEntry, error) {
	list := c.LRange(ctx, store.BotRecent(botID), 0, stop)
	old := c.ZRevRangeWithScores(ctx, store.BotSignals(botID), 0, stop)
	return func() ([]SignalEntry, error) {
		items, err := list.Result()
		if err != nil {
			return nil, fmt.Errorf("queue: read signals of %s: %w", botID, err)
		}
		zs, err := old.Result()
		if err != nil {
			return nil, fmt.Errorf("queue: read signals of %s: %w", botID, err)
		}
		out := make([]SignalEntry, 0, len(items)+len(zs))
		for _, it := range items {
			e, err := result.DecodeEntry(it, 0)
			if err != nil {
				return nil, fmt.Errorf("queue: signal index of %s: %w", botID, err)
			}
			out = append(out, e)
		}
		for _, z := range zs {
			raw, _ := z.Member.(string)
			e, err := result.DecodeEntry(raw, int64(z.Score))
			if err != nil {
				return nil, fmt.Errorf("queue: signal index of %s: %w", botID, err)
			}
			out = append(out, e)
		}
		slices.SortStableFunc(out, func(a, b SignalEntry) int {
			return cmp.Or(cmp.Compare(b.ReceivedAt, a.ReceivedAt), strings.Compare(b.SignalID, a.SignalID))
		})
		out = slices.CompactFunc(out, func(a, b SignalEntry) bool { return a.SignalID == b.SignalID })
		if stop >= 0 && int64(len(out)) > stop+1 {
			out = out[:stop+1]
		}
		return out, nil
	}
}

// GetResult reads a signal's stored result, in one round trip (see GetResultLater).
func GetResult(ctx context.Context, rdb redis.UniversalClient, signalID string) (result.Stored, error) {
	var read func() (result.Stored, error)
	// Errors are per command; the decoder reports them.
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		read = GetResultLater(ctx, p, signalID)
		return nil
	})
	return read()
}

// GetResultLater queues GetResult's read on c (a pipeline) and returns the decoder to call
// once the pipeline has run, so that the read can share a round trip with others. It reads
// the result key (store.SignalResult), the key a result had before results joined the
// partition slot (store.LegacySignalResult), and the order record of the signal's main leg
// in the signal's partition (store.BookOrderIn), which holds the result of a signal whose
// only order it is (ResultWrite.KeepInRecord); it answers the first that has the result: a
// signal finished by an older version is still answered while its result lasts. The keys
// are in different slots: separate GETs, never an MGET.
func GetResultLater(ctx context.Context, c redis.Cmdable, signalID string) func() (result.Stored, error) {
	cmd, legacy := c.Get(ctx, store.SignalResult(signalID)), c.Get(ctx, store.LegacySignalResult(signalID))
	rec := c.Get(ctx, keptRecord(signalID))
	return func() (result.Stored, error) {
		data, err := cmd.Bytes()
		if errors.Is(err, redis.Nil) {
			data, err = legacy.Bytes()
		}
		if errors.Is(err, redis.Nil) {
			return keptResult(rec, signalID)
		}
		if err != nil {
			return result.Stored{}, fmt.Errorf("queue: read result %s: %w", signalID, err)
		}
		var res result.Result
		if err := json.Unmarshal(data, &res); err != nil {
			return result.Stored{}, fmt.Errorf("queue: result %s: corrupt: %w", signalID, err)
		}
		return result.Stored{Result: res, Found: true}, nil
	}
}

// keptResult is the result the order record read by cmd holds for signalID, if any.
func keptResult(cmd *redis.StringCmd, signalID string) (result.Stored, error) {
	text, err := cmd.Result()
	if errors.Is(err, redis.Nil) {
		return result.Stored{}, nil
	}
	if err != nil {
		return result.Stored{}, fmt.Errorf("queue: read result %s: %w", signalID, err)
	}
	rec, err := position.DecodeOrder(text)
	if err != nil {
		return result.Stored{}, fmt.Errorf("queue: result %s: corrupt order record: %w", signalID, err)
	}
	res, ok := rec.KeptResult()
	if !ok || res.SignalID != signalID {
		return result.Stored{}, nil
	}
	return result.Stored{Result: res, Found: true}, nil
}

// Idempotent wraps h for exactly-once effect under at-least-once delivery: a signal whose
// result is already stored (its executor finished it, then died or lost its lease before
// acknowledging) is not executed again; its stored result is re-published to env.ReplyTo
// instead, in case the waiter missed it. h must store its result (PublishResult) before it
// returns nil. The window this cannot close, an order placed but its result not yet stored,
// belongs to the order layer (a client order ID derived from the signal ID).
func Idempotent(rdb redis.UniversalClient, h Handler) Handler {
	return func(ctx context.Context, env Envelope) error {
		stored, err := GetResult(ctx, rdb, env.SignalID)
		switch {
		case err != nil:
			return err // infrastructure failure: the queue retries
		case !stored.Found:
			return h(ctx, env)
		case env.ReplyTo == "":
			return nil
		default:
			return PublishResult(ctx, rdb, env, stored.Result)
		}
	}
}

func encodeReply(signalID string, data []byte) string {
	var b strings.Builder
	b.Grow(len(signalID) + 1 + len(data))
	b.WriteString(signalID)
	b.WriteByte('\n')
	b.Write(data)
	return b.String()
}

func decodeReply(payload string) (signalID, data string, ok bool) {
	return strings.Cut(payload, "\n")
}
