package position

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/store"
)

// A bot's trade list and order list keep what its history retention keeps: the trades
// closed since the cutoff and the orders changed since it. The retention compactor trims
// both from their old end (the trade list's head, the order list's tail); this file owns
// how, so that the lists' order and encodings stay this package's alone.

// MaxTrades is how many of a bot's newest trades one Trades answer carries.
const MaxTrades = 5000

// tradeScan is how many trades one round trip of ExpiredTrades reads.
const tradeScan = 500

// AllTrades is every trade the bot's list holds, oldest first: work in proportion to the
// list, for the analytics that rebuild days the booking did not keep.
func AllTrades(ctx context.Context, c redis.Cmdable, botID string) ([]Trade, error) {
	items, err := c.LRange(ctx, store.BookTrades(botID), 0, -1).Result()
	if err != nil {
		return nil, err
	}
	return DecodeTrades(botID, items)
}

// TradeResult is what an equity curve needs of a trade: when it closed and its net
// result, with its ID to tell copies of one trade apart.
type TradeResult struct {
	ID       string         `json:"id"`
	NetPnl   httpapi.Number `json:"netPnl"`
	ClosedAt int64          `json:"closedAt"` // ms
}

// TradeResultsIn is the newest limit of the bot's trades closed in [fromMS, toMS), oldest
// first in booking order, among the newest MaxTrades of its list (what Book.Trades
// answers): the list is read from its newest end back, a page at a time (the first small,
// each next one twice as large), and no further than the first trade closed before fromMS,
// so that a read of the last few days costs their trades, not the list. Only the fields of
// TradeResult are decoded.
func TradeResultsIn(ctx context.Context, c redis.Cmdable, botID string, fromMS, toMS int64, limit int) ([]TradeResult, error) {
	key := store.BookTrades(botID)
	var out []TradeResult // newest first
	read, page, done := 0, 64, limit <= 0
	for !done && read < MaxTrades {
		n := min(page, MaxTrades-read)
		items, err := c.LRange(ctx, key, int64(-read-n), int64(-read-1)).Result()
		if err != nil {
			return nil, err
		}
		for i := len(items) - 1; i >= 0 && !done; i-- {
			t, err := decodeTradeResult(items[i])
			if err != nil {
				return nil, fmt.Errorf("trade of %s: corrupt: %w", botID, err)
			}
			switch {
			case t.ClosedAt < fromMS:
				done = true
			case t.ClosedAt < toMS:
				out = append(out, t)
				done = len(out) == limit
			}
		}
		done = done || len(items) < n
		read, page = read+n, min(2*page, 1024)
	}
	slices.Reverse(out)
	return out, nil
}

// Expired is the run of trades at the head of a bot's list that closed before a cutoff.
type Expired struct {
	// Count is the number of trades in the run, Last the list item of its newest one.
	Count int
	Last  string
	// Trades are the run's trades, oldest first.
	Trades []Trade
}

// ExpiredTrades reads the head of the bot's trade list up to limit trades, and returns the
// run of those that closed before cutoffMS. The list is in booking order, which is close
// order; the run ends at the first trade closed at or after the cutoff, so a trade booked
// out of order waits for a later cutoff rather than leaving a gap.
func ExpiredTrades(ctx context.Context, c redis.Cmdable, botID string, cutoffMS int64, limit int) (Expired, error) {
	var out Expired
	key := store.BookTrades(botID)
	for out.Count < limit {
		n := min(tradeScan, limit-out.Count)
		items, err := c.LRange(ctx, key, int64(out.Count), int64(out.Count+n-1)).Result()
		if err != nil {
			return Expired{}, err
		}
		for _, it := range items {
			t, err := DecodeTrade(it)
			if err != nil {
				return Expired{}, fmt.Errorf("trade of %s: corrupt: %w", botID, err)
			}
			if t.ClosedAt >= cutoffMS {
				return out, nil
			}
			out.Count, out.Last = out.Count+1, it
			out.Trades = append(out.Trades, t)
		}
		if len(items) < n {
			break
		}
	}
	return out, nil
}

// TrimTradesLua returns the Lua statements that drop an Expired run from the head of the
// trade list KEYS[keyAt]: ARGV[argAt] is its Count and ARGV[argAt+1] its Last. They drop it
// only when the item at Count-1 is still Last (a compactor that ran meanwhile has moved
// the head: nothing is dropped, the next run reads again), and leave the number dropped in
// the Lua local `trimmed` for the statements after them.
func TrimTradesLua(keyAt, argAt int) string {
	return fmt.Sprintf(`local trimmed = 0
local run = tonumber(ARGV[%[2]d])
if run > 0 and redis.call('LINDEX', KEYS[%[1]d], run - 1) == ARGV[%[3]d] then
  redis.call('LTRIM', KEYS[%[1]d], run, -1)
  trimmed = run
end
`, keyAt, argAt, argAt+1)
}

// orderTailScan is how many client order IDs one pass of CompactOrders reads.
const orderTailScan = 200

// compactOrdersScript drops IDs from the tail (oldest end) of a bot's order list
// (KEYS[1]) while each one's record (KEYS[i]) is gone or finished and last changed before
// the cutoff (ARGV[1], ms), deleting such a record: an order still open on its venue is
// never dropped. ARGV[2..] are the tail's IDs, oldest first, and
// KEYS[2..] their records. It stops at the first ID that is not the list's tail any more
// or whose record is kept, and returns how many it dropped.
var compactOrdersScript = redis.NewScript(OrderStateLua + `
local finished = {` + finishedStatuses() + `}
local cutoff = tonumber(ARGV[1])
local n = 0
for i = 2, #ARGV do
  if redis.call('LINDEX', KEYS[1], -1) ~= ARGV[i] then break end
  local rec = redis.call('GET', KEYS[i])
  if rec then
    local status, updated = orderState(rec)
    if not updated or updated >= cutoff or not finished[status] then break end
    redis.call('DEL', KEYS[i])
  end
  redis.call('RPOP', KEYS[1])
  n = n + 1
end
return n
`)

// CompactOrders removes from the bot's order list the oldest IDs whose record has expired
// or is finished and last changed before cutoffMS, with such records, and returns how many
// it removed. An ID stays while an older one before it in the list is kept (the list is in
// creation order, a record's life runs from its last change): the list's cap bounds such
// IDs.
func CompactOrders(ctx context.Context, rdb redis.UniversalClient, botID string, cutoffMS int64) (int, error) {
	return CompactKeptOrders(ctx, rdb, botID, cutoffMS, nil)
}

// KeepOrders writes order records to a copy elsewhere (runtime/archive's PostgreSQL),
// idempotently, before they leave Redis.
type KeepOrders func(ctx context.Context, recs []OrderRecord) error

// CompactKeptOrders is CompactOrders that first writes, with keep (nil: nowhere), every
// record it is about to remove: a record leaves Redis only once the archive has it.
func CompactKeptOrders(ctx context.Context, rdb redis.UniversalClient, botID string, cutoffMS int64, keep KeepOrders) (int, error) {
	list := store.BookOrders(botID)
	total := 0
	for {
		ids, err := rdb.LRange(ctx, list, -orderTailScan, -1).Result()
		if err != nil || len(ids) == 0 {
			return total, err
		}
		if keep != nil {
			if ids, err = keptTail(ctx, rdb, botID, ids, cutoffMS, keep); err != nil || len(ids) == 0 {
				return total, err
			}
		}
		keys := make([]string, 1, len(ids)+1)
		keys[0] = list
		args := make([]any, 1, len(ids)+1)
		args[0] = cutoffMS
		for i := len(ids) - 1; i >= 0; i-- {
			keys = append(keys, store.BookOrder(botID, ids[i]))
			args = append(args, ids[i])
		}
		n, err := compactOrdersScript.Run(ctx, rdb, keys, args...).Int()
		total += n
		if err != nil || n < len(ids) || n < orderTailScan {
			return total, err
		}
	}
}

// keptTail is the part of the tail ids (oldest last) the script may drop, after keep has
// written its records: from the oldest on, the IDs whose record is gone (expired, nothing
// to keep) or finished and last changed before cutoffMS, up to the first that is not.
func keptTail(ctx context.Context, rdb redis.UniversalClient, botID string, ids []string, cutoffMS int64, keep KeepOrders) ([]string, error) {
	reads := make([]func() (*OrderRecord, error), len(ids))
	if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			reads[i] = ReadOrderLater(ctx, p, botID, id)
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	recs := make([]*OrderRecord, len(ids))
	for i, read := range reads {
		r, err := read()
		if err != nil {
			return nil, err
		}
		recs[i] = r
	}
	from := len(ids)
	var kept []OrderRecord
	for i := len(ids) - 1; i >= 0; i-- {
		if r := recs[i]; r != nil {
			if !r.Status.Terminal() || r.UpdatedAt >= cutoffMS {
				break
			}
			kept = append(kept, *r)
		}
		from = i
	}
	if len(kept) > 0 {
		if err := keep(ctx, kept); err != nil {
			return nil, err
		}
	}
	return ids[from:], nil
}

// finishedStatuses is the Lua table body of the terminal order statuses (exchange's Terminal).
func finishedStatuses() string {
	var out []string
	for _, st := range []exchange.OrderStatus{exchange.StatusPending, exchange.StatusOpen, exchange.StatusPartiallyFilled,
		exchange.StatusFilled, exchange.StatusCancelled, exchange.StatusRejected, exchange.StatusExpired} {
		if st.Terminal() {
			out = append(out, fmt.Sprintf("[%q] = true", string(st)))
		}
	}
	return strings.Join(out, ", ")
}
