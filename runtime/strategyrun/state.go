package strategyrun

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/store"
)

// Fields of a bot's runner state (store.StrategyState).
const (
	fieldMark      = "mark"      // open time (ms) of the last evaluated candle
	fieldAction    = "action"    // the last signal emitted: its action,
	fieldCandle    = "candle"    // its candle's open time (ms),
	fieldSignalID  = "signalId"  // its signal ID,
	fieldEmittedAt = "emittedAt" // and when it was queued (ms)
	fieldAnnounced = "announced" // when the state was last announced on store.BotEvents (ms)
)

// AnnounceEvery bounds how often an evaluation that emits nothing announces the bot on
// store.BotEvents (so the SignalBot controller mirrors lastEvaluatedCandle): at most once
// per AnnounceEvery per bot. An emission is always announced.
const AnnounceEvery = time.Minute

// State is a strategy bot's runner state, as the SignalBot controller mirrors it into
// status.strategy.
type State struct {
	// LastEvaluated is the open time of the last candle evaluated; zero before the first.
	LastEvaluated time.Time
	// LastSignal is the last signal the strategy emitted; nil before the first.
	LastSignal *Emitted
}

// Emitted is one signal the runner queued. When one candle emits an exit and an entry, the
// state keeps the entry (queued last).
type Emitted struct {
	Action   signal.Action
	Candle   time.Time // open time of the candle that decided it
	SignalID string
	At       time.Time // when it was queued
}

// ReadState reads a bot's runner state; a bot never evaluated has the zero State.
func ReadState(ctx context.Context, rdb redis.Cmdable, botID string) (State, error) {
	v, err := rdb.HMGet(ctx, store.StrategyState(botID), fieldMark, fieldAction, fieldCandle, fieldSignalID, fieldEmittedAt).Result()
	if err != nil {
		return State{}, err
	}
	var st State
	if ms, ok := millis(v[0]); ok {
		st.LastEvaluated = time.UnixMilli(ms).UTC()
	}
	action, _ := v[1].(string)
	id, _ := v[3].(string)
	if action != "" && id != "" {
		e := &Emitted{Action: signal.Action(action), SignalID: id}
		if ms, ok := millis(v[2]); ok {
			e.Candle = time.UnixMilli(ms).UTC()
		}
		if ms, ok := millis(v[4]); ok {
			e.At = time.UnixMilli(ms).UTC()
		}
		st.LastSignal = e
	}
	return st, nil
}

func millis(v any) (int64, bool) {
	s, ok := v.(string)
	if !ok || s == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// Purge deletes a deleted bot's runner state. A bot created again later (a new UID) starts
// at its newest closed candle like any new bot.
func Purge(ctx context.Context, rdb redis.Cmdable, botID string) error {
	return rdb.Del(ctx, store.StrategyState(botID)).Err()
}

// SignalID is the deterministic signal ID of a strategy signal: the same bot, candle and
// action always give the same ID, so a result in the bot's history leads back to the
// candle that decided it, and an envelope queued twice is executed once (the executor's
// stored-result check). It is placed in the bot's partition (queue.SignalIDFor), which
// keeps it deterministic.
func SignalID(botID string, candleOpenMs int64, action signal.Action) string {
	sum := sha256.Sum256([]byte(botID + "|" + strconv.FormatInt(candleOpenMs, 10) + "|" + string(action)))
	return queue.SignalIDFor(botID, "st-"+hex.EncodeToString(sum[:])[:32])
}

// luaNames fills the state's field names and the events channel into the script, so that
// the script and the Go side cannot spell them differently.
var luaNames = strings.NewReplacer(
	"$MARK", fieldMark, "$ACTION", fieldAction, "$CANDLE", fieldCandle, "$SIGID", fieldSignalID,
	"$EMITTED", fieldEmittedAt, "$ANNOUNCED", fieldAnnounced, "$CHANNEL", store.BotEvents(),
	"$FIELD", queue.EnvelopeField,
)

// emitScript is the one step that moves a bot's mark and queues the candle's envelopes, so
// that whoever runs it first for a candle emits, and anyone after (a second replica during
// a lease hand-over, a restart that evaluates the candle again) finds the mark at or past
// it and emits nothing.
//
// KEYS: the bot's state, the partition's strategy-exit stream (priority 2) and its
// strategy-entry stream (priority 3), all in the bot's partition slot.
// ARGV: candle open time (ms), now (ms), announce interval (ms), bot ID, stream MAXLEN,
// then per envelope four values: priority ("2" or "3"), envelope JSON, action, signal ID.
// Returns {emitted (1, or 0 when the mark was at or past the candle), announced (0/1)}.
var emitScript = redis.NewScript(luaNames.Replace(`
local candle = tonumber(ARGV[1])
local mark = tonumber(redis.call('HGET', KEYS[1], '$MARK') or '-1')
if mark >= candle then return {0, 0} end
redis.call('HSET', KEYS[1], '$MARK', ARGV[1])
local last = nil
for b = 6, #ARGV, 4 do
  local stream = KEYS[3]
  if ARGV[b] == '2' then stream = KEYS[2] end
  redis.call('XADD', stream, 'MAXLEN', '~', ARGV[5], '*', '$FIELD', ARGV[b + 1])
  last = b
end
local now = tonumber(ARGV[2])
if last then
  redis.call('HSET', KEYS[1], '$ACTION', ARGV[last + 2], '$CANDLE', ARGV[1], '$SIGID', ARGV[last + 3],
    '$EMITTED', ARGV[2], '$ANNOUNCED', ARGV[2])
else
  local prev = tonumber(redis.call('HGET', KEYS[1], '$ANNOUNCED') or '0')
  if now - prev < tonumber(ARGV[3]) then return {1, 0} end
  redis.call('HSET', KEYS[1], '$ANNOUNCED', ARGV[2])
end
redis.call('PUBLISH', '$CHANNEL', ARGV[4])
return {1, 1}
`))
