// Package audit is the journal of every tool call that changes something (mcpd's tools and
// the dashboard's actions): who called (user, OAuth client, channel), which tool, its
// arguments with secrets removed, the outcome, and when. Each user's entries are one Redis
// stream in the user's slot (store.UserAudit), kept for a retention (90 days by default)
// and read by that user only, newest first, a bounded page at a time.
//
// With a database (Options.DB) PostgreSQL is the journal's record: each entry is also
// appended to the archive stream of the user's partition, which the executors' archiver
// copies to the audit_log table by the entry's ID (runtime/archive), and List merges that
// table with the Redis stream (archived.go), so a lost Redis loses at most the entries the
// archive had not copied yet.
package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/store"
)

// Channels through which a call arrives.
const (
	ChannelMCP       = "mcp"
	ChannelDashboard = "dashboard"
	// ChannelTelegram: a button pressed or a command sent in the user's linked chat.
	ChannelTelegram = "telegram"
)

const (
	// DefaultRetention is how long entries are kept (the daemons' --audit-retention).
	DefaultRetention = 90 * 24 * time.Hour
	// DefaultMaxEntries bounds one user's journal: at most about 4.3 KB an entry (the
	// arguments' cap plus the other fields), 10,000 entries hold at most about 43 MB.
	DefaultMaxEntries = 10_000
	// DefaultPageSize is the page List returns for a limit of 0 or less.
	DefaultPageSize = 50
	// MaxPageSize bounds one page of List; larger limits are lowered to it.
	MaxPageSize = 200
	// InternalMessage is the message recorded for an error that carries no code: its own
	// text may hold internal detail (addresses, keys, stack context).
	InternalMessage = "internal error"
)

// Outcome is how a call ended: OK, or the error code and client-facing message.
type Outcome struct {
	OK      bool
	Code    errs.Code
	Message string
}

// OutcomeOf is the outcome of a call that returned err. A *errs.Error in err's chain gives
// its code and client-facing Message (never the wrapped cause's text); any other error is
// INTERNAL_ERROR with InternalMessage.
func OutcomeOf(err error) Outcome {
	if err == nil {
		return Outcome{OK: true}
	}
	if e, ok := errs.As(err); ok {
		return Outcome{Code: e.Code, Message: e.Message}
	}
	return Outcome{Code: errs.InternalError, Message: InternalMessage}
}

// Entry is one recorded call.
type Entry struct {
	// ID is the entry's stream ID, set by List; Record ignores it.
	ID     string
	UserID string
	// ClientID and ClientName name the OAuth client; both empty for a full-access bearer
	// JWT and for the dashboard.
	ClientID   string
	ClientName string
	// Channel is ChannelMCP or ChannelDashboard.
	Channel string
	Tool    string
	// Arguments is the call's JSON arguments. Record stores them redacted and capped
	// (RedactArguments), and List returns what was stored.
	Arguments json.RawMessage
	Outcome   Outcome
	// Time is set by Record from the journal's clock (milliseconds).
	Time time.Time
}

// Options configure a Journal; zero values take the defaults.
type Options struct {
	// Retention is how long an entry is kept (DefaultRetention when 0).
	Retention time.Duration
	// MaxEntries caps one user's stream (DefaultMaxEntries when 0): the oldest entries go
	// first, so an agent calling in a loop bounds its user's memory before the retention does.
	MaxEntries int
	// MaxArguments caps the stored arguments of one entry in bytes (DefaultMaxArguments).
	MaxArguments int
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// DB, when set, is PostgreSQL, the journal's record: entries are archived to it and
	// listed from it and Redis together.
	DB *pgxpool.Pool
}

// Journal records and lists audit entries.
type Journal struct {
	rdb       redis.UniversalClient
	db        *pgxpool.Pool
	retention time.Duration
	maxArgs   int
	maxLen    int
	now       func() time.Time
}

// New makes a Journal over rdb.
func New(rdb redis.UniversalClient, o Options) *Journal {
	j := &Journal{rdb: rdb, db: o.DB, retention: o.Retention, maxArgs: o.MaxArguments, maxLen: o.MaxEntries, now: o.Now}
	if j.retention <= 0 {
		j.retention = DefaultRetention
	}
	if j.maxArgs <= 0 {
		j.maxArgs = DefaultMaxArguments
	}
	if j.maxLen <= 0 {
		j.maxLen = DefaultMaxEntries
	}
	if j.now == nil {
		j.now = time.Now
	}
	return j
}

// Retention is how long the journal keeps an entry.
func (j *Journal) Retention() time.Duration { return j.retention }

// recordScript appends one entry with an ID of the caller's clock in milliseconds, trims
// the entries older than the cutoff and beyond the entry cap, and keeps the key alive for one retention past its
// newest entry, so a user who stops calling leaves nothing behind. A clock that went back
// behind the stream's last ID appends at that ID's millisecond instead, since stream IDs
// only grow.
//
// KEYS[1] the user's stream; ARGV[1] now (ms), ARGV[2] cutoff (ms), ARGV[3] TTL (ms),
// ARGV[4] the entry cap, ARGV[5..] field/value pairs.
var recordScript = redis.NewScript(`
local fields = {}
for i = 5, #ARGV do fields[#fields + 1] = ARGV[i] end
local ok, id = pcall(redis.call, 'XADD', KEYS[1], 'MINID', '=', ARGV[2], ARGV[1] .. '-*', unpack(fields))
if not ok then
  local info = redis.call('XINFO', 'STREAM', KEYS[1])
  local last
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' then last = info[i + 1] end
  end
  local ms = string.match(last, '^(%d+)-')
  id = redis.call('XADD', KEYS[1], 'MINID', '=', ARGV[2], ms .. '-*', unpack(fields))
end
redis.call('XTRIM', KEYS[1], 'MAXLEN', '=', ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return id
`)

// Record appends e to its user's journal, with the arguments redacted and capped and the
// time taken from the journal's clock.
func (j *Journal) Record(ctx context.Context, e Entry) error {
	if e.UserID == "" || e.Tool == "" {
		return errors.New("audit: an entry needs a user and a tool")
	}
	if e.Channel != ChannelMCP && e.Channel != ChannelDashboard && e.Channel != ChannelTelegram {
		return fmt.Errorf("audit: unknown channel %q", e.Channel)
	}
	now := j.now().UnixMilli()
	ok := "0"
	if e.Outcome.OK {
		ok = "1"
	}
	redacted := RedactArguments(e.Arguments, j.maxArgs)
	args := []any{
		now, now - j.retention.Milliseconds(), j.retention.Milliseconds(), j.maxLen,
		"at", now, "client", e.ClientID, "clientName", e.ClientName, "channel", e.Channel,
		"tool", e.Tool, "args", redacted,
		"ok", ok, "code", string(e.Outcome.Code), "message", e.Outcome.Message,
	}
	id, err := recordScript.Run(ctx, j.rdb, []string{store.UserAudit(e.UserID)}, args...).Text()
	if err != nil {
		return fmt.Errorf("audit: record: %w", err)
	}
	if j.db != nil {
		e.ID, e.Time = id, time.UnixMilli(now).UTC()
		e.Arguments = json.RawMessage(redacted)
		if err := archive(ctx, j.rdb, e); err != nil {
			return fmt.Errorf("audit: archive: %w", err)
		}
	}
	return nil
}

var cursorPattern = regexp.MustCompile(`^[0-9]{1,20}-[0-9]{1,20}$`)

// List returns up to limit of userID's entries, newest first, starting after cursor (""
// for the newest), and the cursor of the next page ("" when there is none). A limit of 0
// or less means DefaultPageSize; above MaxPageSize it is MaxPageSize. Entries past the
// retention are never returned, trimmed or not. A malformed cursor is INVALID_PARAMETER.
func (j *Journal) List(ctx context.Context, userID, cursor string, limit int) ([]Entry, string, error) {
	if limit <= 0 {
		limit = DefaultPageSize
	}
	limit = min(limit, MaxPageSize)
	start := "+"
	if cursor != "" {
		if !cursorPattern.MatchString(cursor) {
			return nil, "", errs.New(errs.InvalidParameter, "cursor is not valid")
		}
		start = "(" + cursor
	}
	cutoffMs := j.now().UnixMilli() - j.retention.Milliseconds()
	msgs, err := j.rdb.XRevRangeN(ctx, store.UserAudit(userID), start, strconv.FormatInt(cutoffMs, 10), int64(limit)+1).Result()
	if err != nil {
		return nil, "", fmt.Errorf("audit: list: %w", err)
	}
	out := make([]Entry, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, entryOf(userID, m))
	}
	if j.db != nil {
		out = merge(out, j.archived(ctx, userID, cursor, cutoffMs, limit+1))
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = out[limit-1].ID
	}
	return out, next, nil
}

func entryOf(userID string, m redis.XMessage) Entry {
	s := func(k string) string { v, _ := m.Values[k].(string); return v }
	at, _ := strconv.ParseInt(s("at"), 10, 64)
	return Entry{
		ID:         m.ID,
		UserID:     userID,
		ClientID:   s("client"),
		ClientName: s("clientName"),
		Channel:    s("channel"),
		Tool:       s("tool"),
		Arguments:  json.RawMessage(s("args")),
		Outcome:    Outcome{OK: s("ok") == "1", Code: errs.Code(s("code")), Message: s("message")},
		Time:       time.UnixMilli(at).UTC(),
	}
}

// Truncated reports whether stored arguments were cut at the size cap (and so are not JSON).
func Truncated(args json.RawMessage) bool {
	return strings.HasSuffix(string(args), TruncatedMarker)
}
