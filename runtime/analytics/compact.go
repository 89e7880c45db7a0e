package analytics

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/store"
)

// ErrCompacted: the trade list lacks trades the days count, so the days
// cannot be rebuilt from it.
var ErrCompacted = errors.New("analytics: the trade list is compacted")

// compactScript removes an expired run from the head of the trade list KEYS[1] once the
// days KEYS[2] are complete (they count every trade the list holds plus those compacted
// before: else -1, and nothing changes), adds the run to the days' compacted count and
// raises their cutoff to ARGV[3]. ARGV[1..2] are the run's count and newest item
// (position.TrimTradesLua). Returns the number of trades removed.
var compactScript = redis.NewScript(`
local c = redis.call('HMGET', KEYS[2], '` + fieldTrades + `', '` + fieldDropped + `')
if (tonumber(c[1]) or 0) ~= redis.call('LLEN', KEYS[1]) + (tonumber(c[2]) or 0) then return -1 end
` + position.TrimTradesLua(1, 1) + `
if trimmed > 0 then
  redis.call('HINCRBY', KEYS[2], '` + fieldDropped + `', trimmed)
  local cur = tonumber(redis.call('HGET', KEYS[2], '` + fieldCutoff + `') or '0')
  if tonumber(ARGV[3]) > cur then redis.call('HSET', KEYS[2], '` + fieldCutoff + `', ARGV[3]) end
end
return trimmed
`)

// Compact removes from the bot's trade list up to limit of its oldest trades closed before
// cutoff, which the bot's days already hold, and returns how many it removed. Days that
// count fewer trades than the list (trades booked before the days were kept) are rebuilt
// from the whole list first, so that nothing is removed before it is in the days. Every
// figure of a report stays exact: reports read the days alone.
func Compact(ctx context.Context, rdb redis.UniversalClient, botID string, cutoff time.Time, limit int) (int, error) {
	return CompactKept(ctx, rdb, botID, cutoff, limit, nil)
}

// KeepTrades writes trades to a copy elsewhere (runtime/archive's PostgreSQL),
// idempotently, before they leave Redis.
type KeepTrades func(ctx context.Context, trades []position.Trade) error

// CompactKept is Compact that first writes, with keep (nil: nowhere), the trades it is
// about to remove: a trade leaves Redis only once the archive has it, archived or not yet.
func CompactKept(ctx context.Context, rdb redis.UniversalClient, botID string, cutoff time.Time, limit int, keep KeepTrades) (int, error) {
	cut := cutoff.UnixMilli()
	for range 2 {
		run, err := position.ExpiredTrades(ctx, rdb, botID, cut, limit)
		if err != nil || run.Count == 0 {
			return 0, err
		}
		if keep != nil {
			if err := keep(ctx, run.Trades); err != nil {
				return 0, err
			}
		}
		n, err := compactScript.Run(ctx, rdb, []string{store.BookTrades(botID), store.BookDays(botID)},
			run.Count, run.Last, cut).Int()
		if err != nil || n >= 0 {
			return max(n, 0), err
		}
		if _, err := Rebuild(ctx, rdb, botID, false); err != nil {
			return 0, err
		}
	}
	return 0, fmt.Errorf("compacting the trades of bot %s: its days stay incomplete", botID)
}

// Cutoff is the time before which the bot's trades are only in its days (the trade list
// starts after it); false when no trade was ever compacted.
func Cutoff(ctx context.Context, rdb redis.UniversalClient, botID string) (time.Time, bool, error) {
	s, err := rdb.HGet(ctx, store.BookDays(botID), fieldCutoff).Result()
	if errors.Is(err, redis.Nil) {
		return time.Time{}, false, nil
	}
	if err != nil {
		return time.Time{}, false, err
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("cutoff of bot %s: corrupt: %w", botID, err)
	}
	return time.UnixMilli(ms).UTC(), true, nil
}
