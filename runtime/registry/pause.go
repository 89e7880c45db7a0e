package registry

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
)

// A bot's runtime pause is the one piece of a bot's state that the runtime, not the
// controller, decides: the executor's Errors and Risk pauses, authd's tier Downgrade and the
// Manual pause a user sets through fleet.
// It lives in the bot's hash (store.Bot) as FieldPause and FieldPauseUntil, so that the
// webhook intake's script reads it with the gate fields in the same HMGET, and it dies with
// the projection when the bot is deleted. This file is the only writer of those fields; the
// intake script and everything else read them through ReadPause or the documented fields.
//
// Every call touches one bot's hash and its partition's archive stream only (one Redis
// Cluster slot). Every change is published on store.BotEvents() with the bot ID, so that the
// manager mirrors it into the SignalBot's status within moments, and appended to the
// archive stream (store.ArchivePause, store.ArchiveResume) in the same step, so that
// notifyd tells the owner exactly once per change (runtime/notify).

// Pause reasons. A pause of the spec (suspend) lives in the projection's Availability and
// PausedReason instead; PauseManual is the runtime pause a user asks for through mcpd or the
// dashboard (fleet), which works on a bot applied through GitOps too because no sync
// reverts it.
const (
	// PauseManual: the user paused the bot through fleet; until resumed.
	PauseManual = "Manual"
	// PauseErrors: MaxConsecutiveErrors execution errors in a row (runtime/risk); until
	// resumed.
	PauseErrors = "Errors"
	// PauseRisk: the daily loss limit or the consecutive-loss limit was reached
	// (runtime/risk); until the next UTC day.
	PauseRisk = "Risk"
	// PauseDowngrade: the owner's tier lost live trading (runtime/auth); until the tier
	// regains it.
	PauseDowngrade = "Downgrade"
)

// Pause is a bot's runtime pause.
type Pause struct {
	Reason string
	// Until is when it ends; zero means until resumed.
	Until time.Time
	// Since is when it was written (zero when not known: written before the field was).
	Since time.Time
}

// untilText is Until as stored: ms since epoch, "0" for until resumed.
func (p Pause) untilText() string {
	if p.Until.IsZero() {
		return "0"
	}
	return strconv.FormatInt(p.Until.UnixMilli(), 10)
}

// luaNames fills the field names, the Downgrade reason and the events channel into the
// scripts' source, so that the scripts and the Go side cannot spell them differently.
var luaNames = strings.NewReplacer(
	"$PAUSE", FieldPause, "$UNTIL", FieldPauseUntil, "$SINCE", FieldPauseSince, "$SEQ", FieldPauseSeq,
	"$DOWNGRADE", PauseDowngrade, "$CHANNEL", store.BotEvents(), "$KPAUSE", store.ArchivePause,
	"$KRESUME", store.ArchiveResume,
)

// pauseLua defines set_pause(botKey, archiveKey, botId, reason, untilText, now), the one
// rule by which a pause is written (and told: pause_fact appends it to the archive stream); PauseScript lets a caller's script use it inside its own atomic step.
//
//   - Nothing is written for a bot whose hash is gone, so a late pause never re-creates the
//     hash of a deleted bot.
//   - A Downgrade pause replaces any other: a Risk pause ends by itself and an Errors pause
//     can be resumed, and neither may let a live bot trade for an owner without live
//     trading. A Downgrade pause already in place is left as it is.
//   - Any other pause leaves an active pause that lasts at least as long: an open-ended pause
//     (Errors, Downgrade) is never shortened by a Risk pause, and a Risk pause is never
//     shortened by one ending sooner. An ended pause counts as none.
//
// It returns 1 when it wrote (and published) the pause, 0 when it left things as they were.
var pauseLua = luaNames.Replace(pauseFactLua + `
local function set_pause(botKey, archiveKey, botId, reason, untilText, now)
  if redis.call('EXISTS', botKey) == 0 then return 0 end
  local cur = redis.call('HMGET', botKey, '$PAUSE', '$UNTIL')
  local curReason = cur[1] or ''
  local curUntil = tonumber(cur[2] or '0') or 0
  local untilMs = tonumber(untilText) or 0
  if reason == '$DOWNGRADE' then
    if curReason == reason and curUntil == 0 then return 0 end
  elseif curReason ~= '' and (curUntil == 0 or curUntil > now) then
    -- an active pause that lasts at least as long stays
    if curUntil == 0 or (untilMs ~= 0 and curUntil >= untilMs) then return 0 end
  end
  redis.call('HSET', botKey, '$PAUSE', reason, '$UNTIL', untilText, '$SINCE', tostring(now))
  redis.call('HINCRBY', botKey, '$SEQ', 1)
  redis.call('PUBLISH', '$CHANNEL', botId)
  pause_fact(archiveKey, '$KPAUSE', botId, reason, untilText, now)
  return 1
end
`)

// pauseFactLua defines pause_fact, the archive entry of a pause or a resume: field b the bot,
// v the fact ({"r": reason, "u": until ms or "0", "at": ms}). The archiver keeps no row of
// it; notifyd reads it (runtime/notify PauseFact).
const pauseFactLua = `
local function pause_fact(archiveKey, kind, botId, reason, untilText, now)
  redis.call('XADD', archiveKey, '*', 'k', kind, 'b', botId,
    'v', cjson.encode({r = reason, u = untilText, at = tostring(now)}))
end
`

// PauseScript is a script whose body may call set_pause (see pauseLua), for a caller that
// must write a pause in the same atomic step as its own keys (runtime/risk counts an
// execution error and pauses at the fifth). The bot's hash and its partition's archive
// stream must be among its KEYS.
func PauseScript(body string) *redis.Script { return redis.NewScript(pauseLua + body) }

// PauseLua returns the Lua statement of a PauseScript body that writes, by the rule of
// set_pause, the pause PauseArgs encodes: the bot's hash is KEYS[keyAt], its partition's
// archive stream KEYS[archiveAt], the arguments are ARGV[argAt] to ARGV[argAt+3]. An empty
// reason writes nothing.
func PauseLua(keyAt, archiveAt, argAt int) string {
	return fmt.Sprintf("if ARGV[%[2]d] ~= '' then set_pause(KEYS[%[1]d], KEYS[%[3]d], ARGV[%[2]d+3], ARGV[%[2]d], ARGV[%[2]d+1], tonumber(ARGV[%[2]d+2])) end\n",
		keyAt, argAt, archiveAt)
}

// PauseArgs encodes pause p (nil: none) of bot id at now for PauseLua: reason, until (ms,
// "0"), now (ms), bot ID.
func PauseArgs(id string, p *Pause, now time.Time) []any {
	if p == nil {
		return []any{"", "", now.UnixMilli(), id}
	}
	return []any{p.Reason, p.untilText(), now.UnixMilli(), id}
}

// setPauseScript: KEYS[1] the bot's hash, KEYS[2] its archive stream; ARGV as PauseArgs.
var setPauseScript = PauseScript(`
return set_pause(KEYS[1], KEYS[2], ARGV[4], ARGV[1], ARGV[2], tonumber(ARGV[3]))
`)

// resumeScript lifts the pause only while it is the one the caller means (same reason and
// end), so that a pause written meanwhile (a Downgrade over an Errors pause being resumed)
// stays. KEYS[1] the bot's hash, KEYS[2] its archive stream; ARGV reason, until (ms, "0"),
// bot ID, now (ms).
var resumeScript = redis.NewScript(luaNames.Replace(pauseFactLua + `
local cur = redis.call('HMGET', KEYS[1], '$PAUSE', '$UNTIL')
if not cur[1] or cur[1] == '' or cur[1] ~= ARGV[1] then return 0 end
if (tonumber(cur[2] or '0') or 0) ~= (tonumber(ARGV[2]) or 0) then return 0 end
redis.call('HDEL', KEYS[1], '$PAUSE', '$UNTIL', '$SINCE')
redis.call('HINCRBY', KEYS[1], '$SEQ', 1)
redis.call('PUBLISH', '$CHANNEL', ARGV[3])
pause_fact(KEYS[2], '$KRESUME', ARGV[3], ARGV[1], ARGV[2], tonumber(ARGV[4]))
return 1
`))

// Pause writes a runtime pause of bot id by the rule of pauseLua; it reports whether it was
// written.
func (r *Registry) Pause(ctx context.Context, id string, p Pause, now time.Time) (bool, error) {
	n, err := setPauseScript.Run(ctx, r.rdb, pauseKeys(id), PauseArgs(id, &p, now)...).Int()
	return n == 1, err
}

// pauseKeys are the keys of a pause or resume of bot id: its hash and its archive stream.
func pauseKeys(id string) []string { return []string{store.Bot(id), store.ArchiveOf(id)} }

// StagePause adds Registry.Pause to a transaction (the executor's booking), so that the
// pause is written with the trade that triggered it or not at all.
func StagePause(ctx context.Context, tx redis.Pipeliner, id string, p Pause, now time.Time) {
	setPauseScript.Eval(ctx, tx, pauseKeys(id), PauseArgs(id, &p, now)...)
}

// Resume lifts bot id's runtime pause if it is still p (same reason and end) and reports
// whether it did; a different pause, written since p was read, stays.
func (r *Registry) Resume(ctx context.Context, id string, p Pause) (bool, error) {
	n, err := resumeScript.Run(ctx, r.rdb, pauseKeys(id), p.Reason, p.untilText(), id, time.Now().UnixMilli()).Int()
	return n == 1, err
}

// ReadPause is bot id's runtime pause in force at now, or nil. A pause whose time is over is
// lifted (and published) on the way, so that status and the intake agree.
func (r *Registry) ReadPause(ctx context.Context, id string, now time.Time) (*Pause, error) {
	return r.ReadPauseLater(ctx, r.rdb, id, now)()
}

// ReadPauseLater queues ReadPause's read on c (a pipeline) and returns the function to call
// once the pipeline has run: it decodes the pause and, like ReadPause, lifts one whose time
// is over (a round trip of its own, only then).
func (r *Registry) ReadPauseLater(ctx context.Context, c redis.Cmdable, id string, now time.Time) func() (*Pause, error) {
	cmd := c.HMGet(ctx, store.Bot(id), FieldPause, FieldPauseUntil)
	return func() (*Pause, error) {
		v, err := cmd.Result()
		if err != nil {
			return nil, err
		}
		p := Pause{Reason: asString(v[0])}
		if p.Reason == "" {
			return nil, nil
		}
		ms, _ := strconv.ParseInt(asString(v[1]), 10, 64)
		if ms == 0 {
			return &p, nil
		}
		if p.Until = time.UnixMilli(ms); p.Until.After(now) {
			return &p, nil
		}
		if _, err := r.Resume(ctx, id, p); err != nil {
			return nil, err
		}
		return nil, nil
	}
}

// WithPauses shows on bots the runtime pauses in force at now, read in one pipelined round
// trip: an active bot under a pause is paused for the pause's reason. The projection keeps
// the spec-level availability (the manager mirrors a runtime pause into the SignalBot's
// status, not into the projection), so a view of a bot's state applies its pause with
// this; a bot already disabled or paused by its spec stays as it is, as in the status.
func (r *Registry) WithPauses(ctx context.Context, bots []Bot, now time.Time) error {
	if len(bots) == 0 {
		return nil
	}
	pipe := r.rdb.Pipeline()
	reads := make([]func() (*Pause, error), len(bots))
	for i := range bots {
		reads[i] = r.ReadPauseLater(ctx, pipe, bots[i].ID, now)
	}
	// Errors are per command; each read reports its own.
	_, _ = pipe.Exec(ctx)
	for i, read := range reads {
		p, err := read()
		if err != nil {
			return err
		}
		if p != nil && bots[i].Availability == "active" {
			bots[i].Availability, bots[i].PausedReason = "paused", p.Reason
		}
	}
	return nil
}

// Recorded pauses.
//
// A runtime pause lives in Redis, where the intake reads it, and the manager mirrors it
// into the SignalBot's status with the hash's change count (FieldPauseSeq). Redis can lose
// the pause: a FLUSHALL, a lost volume, or a restore from a backup older than the pause.
// Then the hash's count is behind the status' (a re-created hash has none), and the
// projection writes the recorded state back in the same step that writes the bot, so no
// signal is admitted between the two (Project, RecordedPause). A count that is not behind
// means Redis saw every change the status saw: a pause missing from it was lifted.

// Recorded is the runtime state the SignalBot's status holds: the pause (nil: none) and the
// change count it was read with, and the bot's risk counters (runtime/risk) as last
// mirrored, which the projection writes back over Redis's when Redis's are missing or
// older (store.VersionedHashLua), so a rule that paused the bot goes on from the same
// amount.
type Recorded struct {
	Pause *Pause
	Seq   int64
	// Counters are the risk counters' field/value pairs as the risk package stores them
	// (nil: none recorded), at version CountersVersion of the field CountersVersionField.
	Counters             []any
	CountersVersion      int64
	CountersVersionField string
}

// recordedArgs are switchScript's ARGV[7..11] for r (nil: nothing recorded).
func recordedArgs(r *Recorded, now time.Time) []any {
	if r == nil || r.Seq <= 0 {
		return []any{"", "", "", "", now.UnixMilli()}
	}
	if r.Pause == nil {
		return []any{r.Seq, "", "0", "", now.UnixMilli()}
	}
	since := ""
	if !r.Pause.Since.IsZero() {
		since = strconv.FormatInt(r.Pause.Since.UnixMilli(), 10)
	}
	return []any{r.Seq, r.Pause.Reason, r.Pause.untilText(), since, now.UnixMilli()}
}

// recordedCountersArgs are switchScript's ARGV[14..] for r's counters.
func recordedCountersArgs(r *Recorded) []any {
	if r == nil {
		return store.VersionedHashArgs("", 0, nil)
	}
	return store.VersionedHashArgs(r.CountersVersionField, r.CountersVersion, r.Counters)
}

// restoreLua is switchScript's step that writes a recorded pause back (see "Recorded
// pauses"): when the hash's count is behind ARGV[7], the recorded pause (ARGV[8] reason,
// ARGV[9] until, ARGV[10] since) is written if it is still due at ARGV[11], else any pause
// the hash holds is lifted; the count is set to the recorded one and the change published.
var restoreLua = luaNames.Replace(`
local restored = 0
local rseq = tonumber(ARGV[7])
if rseq and (tonumber(redis.call('HGET', KEYS[1], '$SEQ') or '0') or 0) < rseq then
  local untilMs = tonumber(ARGV[9]) or 0
  if ARGV[8] ~= '' and (untilMs == 0 or untilMs > tonumber(ARGV[11])) then
    redis.call('HSET', KEYS[1], '$PAUSE', ARGV[8], '$UNTIL', ARGV[9])
    if ARGV[10] ~= '' then redis.call('HSET', KEYS[1], '$SINCE', ARGV[10]) end
  else
    redis.call('HDEL', KEYS[1], '$PAUSE', '$UNTIL', '$SINCE')
  end
  redis.call('HSET', KEYS[1], '$SEQ', rseq)
  restored = 1
end
`)

// ReadPauseSeq is ReadPause with the hash's change count, read together in one HMGET so
// that the status never records a pause with the count of another. A pause whose time is
// over is lifted first (which counts as a change) and the state read again.
func (r *Registry) ReadPauseSeq(ctx context.Context, id string, now time.Time) (*Pause, int64, error) {
	for {
		v, err := r.rdb.HMGet(ctx, store.Bot(id), FieldPause, FieldPauseUntil, FieldPauseSince, FieldPauseSeq).Result()
		if err != nil {
			return nil, 0, err
		}
		seq, _ := strconv.ParseInt(asString(v[3]), 10, 64)
		p := Pause{Reason: asString(v[0])}
		if p.Reason == "" {
			return nil, seq, nil
		}
		if ms, _ := strconv.ParseInt(asString(v[2]), 10, 64); ms > 0 {
			p.Since = time.UnixMilli(ms)
		}
		ms, _ := strconv.ParseInt(asString(v[1]), 10, 64)
		if ms == 0 {
			return &p, seq, nil
		}
		if p.Until = time.UnixMilli(ms); p.Until.After(now) {
			return &p, seq, nil
		}
		if _, err := r.Resume(ctx, id, p); err != nil {
			return nil, 0, err
		}
	}
}
