package analytics

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/store"
)

// The days hash (store.BookDays) of a bot holds, beside one field per UTC day with trades
// (YYYY-MM-DD → the Day as JSON):
const (
	// fieldStart is the bot's starting equity: the free quote balance its first booked
	// entry was sized from, written once (HSETNX). Empty: not known (the bot traded before
	// the days were kept, see Rebuild).
	fieldStart = "start"
	// fieldTrades is the number of trades the days count. It equals the length of the
	// trade list when every trade was booked with its day; otherwise the days are
	// incomplete and the report is computed from the trade list.
	fieldTrades = "trades"
	// fieldDropped is the number of counted trades the retention compactor has removed
	// from the trade list (Compact): the days are complete when they count as many trades
	// as the list holds plus those.
	fieldDropped = "dropped"
	// fieldCutoff is the compactor's latest cutoff (Unix ms): the trades closed before it
	// are only in the days.
	fieldCutoff = "cutoff"
)

// ReadDayLater queues the read of the bot's day date on c (a pipeline) and returns the
// decoder to call once it has run; a day without trades is the zero Day.
func ReadDayLater(ctx context.Context, c redis.Cmdable, botID string, date Date) func() (Day, error) {
	read := ReadDayTextLater(ctx, c, botID, date)
	return func() (Day, error) {
		d, _, _, err := read()
		return d, err
	}
}

// ReadDayTextLater is ReadDayLater whose decoder also returns the day's stored text (nil: no
// trades that day), for a caller whose script writes only while the field still holds that
// text, and whether the bot's starting equity is recorded.
func ReadDayTextLater(ctx context.Context, c redis.Cmdable, botID string, date Date) func() (Day, *string, bool, error) {
	cmd := c.HMGet(ctx, store.BookDays(botID), date.String(), fieldStart)
	return func() (Day, *string, bool, error) {
		v, err := cmd.Result()
		if err != nil {
			return Day{}, nil, false, err
		}
		s, ok := v[0].(string)
		_, started := v[1].(string)
		if !ok {
			return Day{}, nil, started, nil
		}
		d, err := decodeDay(botID, date.String(), s)
		return d, &s, started, err
	}
}

func decodeDay(botID, field, s string) (Day, error) {
	// Straight to the day's own parser: json.Unmarshal would scan the text once more first.
	d, err := parseDay(s)
	if err != nil {
		return Day{}, fmt.Errorf("day %s of bot %s: corrupt: %w", field, botID, err)
	}
	return d, nil
}

// decodeNet is decodeDay for a caller that sums the days' trade counts and net results
// alone (History): only those two values, with the array's shape, are read and checked.
func decodeNet(botID, field, s string) (int, decimal.Decimal, error) {
	trades, net, err := parseDayNet(s)
	if err != nil {
		return 0, decimal.Zero, fmt.Errorf("day %s of bot %s: corrupt: %w", field, botID, err)
	}
	return trades, net, nil
}

// StageDay writes the bot's day date after one more trade (the booking's transaction):
// the day, and the count of trades the days hold.
func StageDay(ctx context.Context, p redis.Pipeliner, botID string, date Date, d Day) error {
	data, err := d.MarshalJSON()
	if err != nil {
		return err
	}
	key := store.BookDays(botID)
	p.HSet(ctx, key, date.String(), data)
	p.HIncrBy(ctx, key, fieldTrades, 1)
	return nil
}

// StageStart records the bot's starting equity unless one is recorded (an entry's
// booking: only the first one's stays).
func StageStart(ctx context.Context, p redis.Pipeliner, botID string, equity decimal.Decimal) {
	p.HSetNX(ctx, store.BookDays(botID), fieldStart, equity.String())
}

// DayLua returns the Lua statements that make, inside a caller's script, the writes of
// StageDay and StageStart as NewDayWrite encodes them: the key is KEYS[keyAt], the
// arguments ARGV[argAt] to ARGV[argAt+2]. They return nothing.
func DayLua(keyAt, argAt int) string {
	return fmt.Sprintf(`if ARGV[%[2]d] ~= '' then
  redis.call('HSET', KEYS[%[1]d], ARGV[%[2]d], ARGV[%[2]d+1])
  redis.call('HINCRBY', KEYS[%[1]d], '%[3]s', 1)
end
if ARGV[%[2]d+2] ~= '' then redis.call('HSETNX', KEYS[%[1]d], '%[4]s', ARGV[%[2]d+2]) end
`, keyAt, argAt, fieldTrades, fieldStart)
}

// NewDayWrite encodes for DayLua the bot's day date after one more trade (d; nil: no trade)
// and the starting equity to record unless one is (nil: none).
func NewDayWrite(botID string, date Date, d *Day, start *decimal.Decimal) (key string, args []any, err error) {
	args = []any{"", "", ""}
	if d != nil {
		data, err := d.MarshalJSON()
		if err != nil {
			return "", nil, err
		}
		args[0], args[1] = date.String(), string(data)
	}
	if start != nil {
		args[2] = start.String()
	}
	return store.BookDays(botID), args, nil
}

// RestoredFields are the fields of a bot's days hash rebuilt, in a Redis that lost it,
// from its recorded days (date → the day as StageDay stores it) and starting equity (""
// when not known): the days, the start, and the count of trades they hold, every one
// counted as compacted, since the trade list that Redis lost is in the archive. A report
// then reads the days alone, as for a compacted bot.
func RestoredFields(botID string, days map[string]string, start string) ([]any, error) {
	out := make([]any, 0, 2*len(days)+6)
	n := 0
	for date, text := range days {
		d, err := decodeDay(botID, date, text)
		if err != nil {
			return nil, err
		}
		n += d.Trades
		out = append(out, date, text)
	}
	out = append(out, fieldTrades, strconv.Itoa(n), fieldDropped, strconv.Itoa(n))
	if start != "" {
		out = append(out, fieldStart, start)
	}
	return out, nil
}

// Purge removes a deleted bot's days. The bot's SignalBot finalizer calls it with the rest
// of the bot's runtime state.
func Purge(ctx context.Context, rdb redis.UniversalClient, botID string) error {
	return rdb.Del(ctx, store.BookDays(botID)).Err()
}

// dated is a day with its date and, when they are known, its trades.
type dated struct {
	date Date
	day  Day
	// marks are the day's trades in booking order, when every one of them is known (the
	// day built from them, or read and checked by attach); nil otherwise.
	marks []mark
}

// history is what a report is computed from: the bot's days with trades, oldest first,
// and its starting equity (nil: not known).
type history struct {
	days  []dated
	start *decimal.Decimal
}

// load reads the bot's history: the days hash and the trade list's length in one MULTI
// (one round trip, and the two agree); when the days count fewer trades than the list
// holds, the days are built from the trade list instead (a second round trip, and work in
// proportion to the trades).
func load(ctx context.Context, rdb redis.UniversalClient, botID string) (history, error) {
	var read func() (history, error)
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		read = loadLater(ctx, p, rdb, botID)
		return nil
	}); err != nil {
		return history{}, err
	}
	return read()
}

// loadMany reads the histories of botIDs, in that order, in one pipelined round trip (on a
// Cluster, one per node, side by side), as HistoryLater reads each.
func loadMany(ctx context.Context, rdb redis.UniversalClient, botIDs []string) ([]History, error) {
	reads := make([]func() (History, error), len(botIDs))
	if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range botIDs {
			reads[i] = HistoryLater(ctx, p, rdb, id)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	out := make([]History, len(botIDs))
	for i, read := range reads {
		h, err := read()
		if err != nil {
			return nil, err
		}
		out[i] = h
	}
	return out, nil
}

// loadLater queues the reads of the bot's history on c (a pipeline or a MULTI: the days
// hash and the trade list's length) and returns the function that decodes them once it has
// run, reading the trade list on rdb when the days count fewer trades than it holds.
func loadLater(ctx context.Context, c redis.Cmdable, rdb redis.UniversalClient, botID string) func() (history, error) {
	read := readDaysLater(ctx, c, rdb, botID)
	return func() (history, error) {
		st, err := read()
		if err != nil {
			return history{}, err
		}
		if st.listed {
			return history{days: fromTrades(st.trades)}, nil
		}
		h := history{days: make([]dated, 0, len(st.fields))}
		if s, ok := st.fields[fieldStart]; ok && s != "" {
			v, err := decimal.NewFromString(s)
			if err != nil {
				return history{}, fmt.Errorf("starting equity of bot %s: corrupt: %w", botID, err)
			}
			h.start = &v
		}
		err = st.each(func(date Date, field, text string) error {
			d, err := decodeDay(botID, field, text)
			h.days = append(h.days, dated{date: date, day: d})
			return err
		})
		return h, err
	}
}

// storedDays is one read of a bot's days: the days hash's fields, or, when the days count
// fewer trades than the trade list holds (listed), the trade list instead.
type storedDays struct {
	fields map[string]string
	listed bool
	trades []position.Trade
}

// readDaysLater queues the reads of the bot's days on c (the days hash and the trade
// list's length) and returns the function that, once c has run, returns them, having read
// the trade list on rdb when the days count fewer trades than it holds.
func readDaysLater(ctx context.Context, c redis.Cmdable, rdb redis.UniversalClient, botID string) func() (storedDays, error) {
	all := c.HGetAll(ctx, store.BookDays(botID))
	n := c.LLen(ctx, store.BookTrades(botID))
	return func() (storedDays, error) {
		fields, err := all.Result()
		if err != nil {
			return storedDays{}, err
		}
		if err := n.Err(); err != nil {
			return storedDays{}, err
		}
		counted, _ := strconv.ParseInt(fields[fieldTrades], 10, 64)
		// A compacted bot's days are complete by construction (Compact trims only complete
		// days), and its list lacks the trades before the cutoff: the days are read whatever the
		// counts say (outside a MULTI a booking may land between the two reads).
		if _, compacted := fields[fieldDropped]; !compacted && counted != n.Val() {
			// The trades booked before the days were kept are not in them, so a starting
			// equity recorded since is not the one before the first trade.
			trades, err := position.AllTrades(ctx, rdb, botID)
			return storedDays{listed: true, trades: trades}, err
		}
		return storedDays{fields: fields}, nil
	}
}

// each calls day with every day's date, field name and text, oldest first.
func (st storedDays) each(day func(date Date, field, text string) error) error {
	// YYYY-MM-DD sorts as the dates do; the names are sorted rather than the days.
	names := make([]string, 0, len(st.fields))
	for f := range st.fields {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		date, ok := ParseDate(f)
		if !ok {
			continue
		}
		if err := day(date, f, st.fields[f]); err != nil {
			return err
		}
	}
	return nil
}

// fromTrades aggregates trades (oldest first) into their days (the UTC day of ClosedAt),
// oldest first.
func fromTrades(trades []position.Trade) []dated {
	idx := map[Date]int{}
	var out []dated
	for _, t := range trades {
		date := DateOfMS(t.ClosedAt)
		i, ok := idx[date]
		if !ok {
			i = len(out)
			idx[date] = i
			out = append(out, dated{date: date})
		}
		out[i].day.Add(t)
		out[i].marks = append(out[i].marks, mark{at: t.ClosedAt, net: t.NetPnl.Decimal})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].date < out[j].date })
	return out
}

// Rebuild writes the bot's days from its trade list when the days count fewer trades than
// the list holds (trades booked before the days were kept), keeping a recorded starting
// equity and marking it unknown (empty) when none is. It reports whether it wrote; dry
// only reports. It never rebuilds from a compacted list (ErrCompacted): that list lacks the
// trades before the cutoff, which only the days hold. The trade list and the days are watched, so a booking in between makes it
// start again. queuectl migrate-keys runs it for every bot with trades.
func Rebuild(ctx context.Context, rdb redis.UniversalClient, botID string, dry bool) (bool, error) {
	days, trades := store.BookDays(botID), store.BookTrades(botID)
	var wrote bool
	txf := func(tx *redis.Tx) error {
		wrote = false
		var counted, start, dropped *redis.StringCmd
		var items *redis.StringSliceCmd
		if _, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
			counted = p.HGet(ctx, days, fieldTrades)
			start = p.HGet(ctx, days, fieldStart)
			dropped = p.HGet(ctx, days, fieldDropped)
			items = p.LRange(ctx, trades, 0, -1)
			return nil
		}); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
		n, _ := strconv.Atoi(counted.Val())
		gone, _ := strconv.Atoi(dropped.Val())
		if n == len(items.Val())+gone {
			return nil
		}
		if gone > 0 {
			return fmt.Errorf("the days of bot %s count %d trades, its list holds %d after %d compacted: %w",
				botID, n, len(items.Val()), gone, ErrCompacted)
		}
		wrote = true
		if dry {
			return nil
		}
		list, err := position.DecodeTrades(botID, items.Val())
		if err != nil {
			return err
		}
		values := []any{fieldTrades, len(list), fieldStart, start.Val()}
		for _, d := range fromTrades(list) {
			data, err := json.Marshal(d.day)
			if err != nil {
				return err
			}
			values = append(values, d.date.String(), data)
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Del(ctx, days)
			p.HSet(ctx, days, values...)
			return nil
		})
		return err
	}
	for range 20 {
		err := rdb.Watch(ctx, txf, days, trades)
		if errors.Is(err, redis.TxFailedErr) {
			continue
		}
		return wrote, err
	}
	return false, fmt.Errorf("rebuilding the days of bot %s: too much contention", botID)
}
