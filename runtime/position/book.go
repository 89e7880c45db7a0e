package position

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/store"
)

// Book reads a bot's positions, orders and trades. Writes happen inside the executor's
// record transaction through the Stage functions (order records: orders.go), so that a
// fill is booked exactly once together with its risk counters.
type Book struct{ rdb redis.UniversalClient }

// NewBook returns a Book on rdb.
func NewBook(rdb redis.UniversalClient) *Book { return &Book{rdb: rdb} }

// Get is the bot's open position on symbol, or nil.
func (b *Book) Get(ctx context.Context, botID, symbol string) (*Position, error) {
	return Read(ctx, b.rdb, botID, symbol)
}

// Read is Get on any client (a transaction's too).
func Read(ctx context.Context, c redis.Cmdable, botID, symbol string) (*Position, error) {
	return ReadLater(ctx, c, botID, symbol)()
}

// ReadLater queues the read on c (a pipeline) and returns the decoder to call once the
// pipeline has run.
func ReadLater(ctx context.Context, c redis.Cmdable, botID, symbol string) func() (*Position, error) {
	read := ReadTextLater(ctx, c, botID, symbol)
	return func() (*Position, error) {
		p, _, err := read()
		return p, err
	}
}

// ReadTextLater is ReadLater whose decoder also returns the position's stored text (nil: no
// position), for a caller whose script writes only while the key still holds that text.
func ReadTextLater(ctx context.Context, c redis.Cmdable, botID, symbol string) func() (*Position, *string, error) {
	cmd := c.Get(ctx, store.BookPosition(botID, symbol))
	return func() (*Position, *string, error) {
		text, err := cmd.Result()
		if errors.Is(err, redis.Nil) {
			return nil, nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		// Every signal reads its position: decoded without reflection (DecodePosition,
		// the same value json.Unmarshal makes of it).
		p, err := DecodePosition(text)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: corrupt: %w", cmd.Args()[1], err)
		}
		return &p, &text, nil
	}
}

// List is every open position of the bot, by symbol: the symbols, then every position in
// one pipeline (two round trips whatever the number of positions).
func (b *Book) List(ctx context.Context, botID string) ([]Position, error) {
	return ListLater(ctx, b.rdb, botID)(ctx, b.rdb)
}

// ListLater queues the read of the bot's open symbols on c (a pipeline, to share a round
// trip with other reads) and returns the function that, once the pipeline has run, reads
// their positions on rc in one more pipeline.
func ListLater(ctx context.Context, c redis.Cmdable, botID string) func(context.Context, redis.Cmdable) ([]Position, error) {
	cmd := c.SMembers(ctx, store.BookPositions(botID))
	return func(ctx context.Context, rc redis.Cmdable) ([]Position, error) {
		symbols, err := cmd.Result()
		if err != nil {
			return nil, err
		}
		sort.Strings(symbols)
		out := make([]Position, 0, len(symbols))
		if len(symbols) == 0 {
			return out, nil
		}
		reads := make([]func() (*Position, error), len(symbols))
		// Each read's error is its own (a missing key is a position closed meanwhile).
		_, _ = rc.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, s := range symbols {
				reads[i] = ReadLater(ctx, p, botID, s)
			}
			return nil
		})
		for _, read := range reads {
			p, err := read()
			if err != nil {
				return nil, err
			}
			if p != nil {
				out = append(out, *p)
			}
		}
		return out, nil
	}
}

// ListMany is List of each of botIDs, in that order: every bot's symbols in one pipeline,
// then every position in another (two round trips whatever the number of bots and
// positions).
func ListMany(ctx context.Context, rdb redis.UniversalClient, botIDs []string) ([][]Position, error) {
	syms := make([]*redis.StringSliceCmd, len(botIDs))
	if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range botIDs {
			syms[i] = p.SMembers(ctx, store.BookPositions(id))
		}
		return nil
	}); err != nil {
		return nil, err
	}
	symbols := make([][]string, len(botIDs))
	for i := range botIDs {
		symbols[i] = syms[i].Val()
	}
	return ReadMany(ctx, rdb, botIDs, symbols)
}

// ReadMany is the positions of each of botIDs on its symbols (symbols[i], as the bot's set
// of open symbols listed them), sorted by symbol, in one pipelined round trip; a position
// closed since its symbol was listed is left out.
func ReadMany(ctx context.Context, rdb redis.Cmdable, botIDs []string, symbols [][]string) ([][]Position, error) {
	reads := make([][]func() (*Position, error), len(botIDs))
	// Each read's error is its own (a missing key is a position closed meanwhile).
	_, _ = rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range botIDs {
			syms := slices.Sorted(slices.Values(symbols[i]))
			for _, s := range syms {
				reads[i] = append(reads[i], ReadLater(ctx, p, id, s))
			}
		}
		return nil
	})
	out := make([][]Position, len(botIDs))
	for i := range botIDs {
		out[i] = make([]Position, 0, len(reads[i]))
		for _, read := range reads[i] {
			p, err := read()
			if err != nil {
				return nil, err
			}
			if p != nil {
				out[i] = append(out[i], *p)
			}
		}
	}
	return out, nil
}

// Order is one of the bot's orders by client order ID, or nil.
func (b *Book) Order(ctx context.Context, botID, clientOrderID string) (*OrderRecord, error) {
	return ReadOrder(ctx, b.rdb, botID, clientOrderID)
}

// ReadOrder is Order on any client.
func ReadOrder(ctx context.Context, c redis.Cmdable, botID, clientOrderID string) (*OrderRecord, error) {
	return ReadOrderLater(ctx, c, botID, clientOrderID)()
}

// ReadOrderLater is ReadOrder on a pipeline (see ReadLater).
func ReadOrderLater(ctx context.Context, c redis.Cmdable, botID, clientOrderID string) func() (*OrderRecord, error) {
	read := ReadOrderTextLater(ctx, c, botID, clientOrderID)
	return func() (*OrderRecord, error) {
		r, _, err := read()
		return r, err
	}
}

// ReadOrderTextLater is ReadOrderLater whose decoder also returns the record's stored text
// (nil: no record), as ReadTextLater does for a position.
func ReadOrderTextLater(ctx context.Context, c redis.Cmdable, botID, clientOrderID string) func() (*OrderRecord, *string, error) {
	cmd := c.Get(ctx, store.BookOrder(botID, clientOrderID))
	return func() (*OrderRecord, *string, error) {
		text, err := cmd.Result()
		if errors.Is(err, redis.Nil) {
			return nil, nil, nil
		}
		if err != nil {
			return nil, nil, err
		}
		r, err := DecodeOrder(text)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: corrupt: %w", cmd.Args()[1], err)
		}
		// The key names the partition, not the bot (store.BookOrder): another bot's record
		// is none of this one's.
		if r.BotID != botID {
			return nil, nil, nil
		}
		return &r, &text, nil
	}
}

// Orders is the bot's newest orders, at most limit (0 = 100).
func (b *Book) Orders(ctx context.Context, botID string, limit int) ([]OrderRecord, error) {
	if limit <= 0 {
		limit = 100
	}
	page, err := b.OrderPage(ctx, botID, OrderQuery{Limit: limit})
	return page.Orders, err
}

// OrderQuery selects a page of a bot's orders, newest first.
type OrderQuery struct {
	// After is the client order ID the previous page ended with ("" for the first page).
	After string
	// Limit is the page size (at least 1).
	Limit int
	// Statuses keeps only orders in one of them (empty: every status).
	Statuses []exchange.OrderStatus
}

// OrderPage is a page of a bot's orders.
type OrderPage struct {
	Orders []OrderRecord
	// Next is the After of the following page; empty on the last.
	Next string
}

// ErrCursorGone: the order an OrderQuery continues after is no longer in the bot's list
// (trimmed at MaxOrders, or the book was purged).
var ErrCursorGone = errors.New("position: the order the page continues after is no longer listed")

// orderScan is how many client order IDs one round trip of OrderPage reads.
const orderScan = 200

// OrderPage reads the bot's orders newest first, after q.After, keeping those of
// q.Statuses. The list names the newest MaxOrders orders; a filtered page reads it in
// chunks of orderScan until the page is full or the list ends. An ID whose record has
// expired is skipped.
func (b *Book) OrderPage(ctx context.Context, botID string, q OrderQuery) (OrderPage, error) {
	if q.Limit < 1 {
		q.Limit = 1
	}
	key := store.BookOrders(botID)
	start := int64(0)
	if q.After != "" {
		pos, err := b.rdb.LPos(ctx, key, q.After, redis.LPosArgs{}).Result()
		if errors.Is(err, redis.Nil) {
			return OrderPage{}, ErrCursorGone
		}
		if err != nil {
			return OrderPage{}, err
		}
		start = pos + 1
	}
	var out OrderPage
	for {
		chunk := int64(max(q.Limit+1, orderScan))
		if len(q.Statuses) == 0 {
			chunk = int64(q.Limit + 1) // one more tells whether a next page exists
		}
		ids, err := b.rdb.LRange(ctx, key, start, start+chunk-1).Result()
		if err != nil {
			return OrderPage{}, err
		}
		reads := make([]func() (*OrderRecord, error), len(ids))
		if _, err := b.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, id := range ids {
				reads[i] = ReadOrderLater(ctx, p, botID, id)
			}
			return nil
		}); err != nil && !errors.Is(err, redis.Nil) {
			return OrderPage{}, err
		}
		for _, read := range reads {
			r, err := read()
			if err != nil {
				return OrderPage{}, err
			}
			if r == nil || (len(q.Statuses) > 0 && !slices.Contains(q.Statuses, r.Status)) {
				continue
			}
			if len(out.Orders) == q.Limit {
				// A further match exists: the page ends at the last one kept.
				out.Next = out.Orders[q.Limit-1].ClientOrderID
				return out, nil
			}
			out.Orders = append(out.Orders, *r)
		}
		if int64(len(ids)) < chunk {
			return out, nil
		}
		start += chunk
	}
}

// Trades is the bot's newest realised trades, at most MaxTrades, oldest first. The list
// holds the trades closed since the history retention's cutoff (history.go), which at a
// high rate is far more than one answer should carry.
func (b *Book) Trades(ctx context.Context, botID string) ([]Trade, error) {
	items, err := b.rdb.LRange(ctx, store.BookTrades(botID), -MaxTrades, -1).Result()
	if err != nil {
		return nil, err
	}
	return DecodeTrades(botID, items)
}

// DecodeTrades decodes the items of a bot's trade list (as LRANGE returns them).
func DecodeTrades(botID string, items []string) ([]Trade, error) {
	out := make([]Trade, 0, len(items))
	for _, it := range items {
		t, err := DecodeTrade(it)
		if err != nil {
			return nil, fmt.Errorf("trade of %s: corrupt: %w", botID, err)
		}
		out = append(out, t)
	}
	return out, nil
}

// The booking's writes of positions and trades have two forms, as order records do
// (orders.go): Stage functions queue plain commands into a caller's transaction, and
// PositionLua and TradeLua make the same writes inside a caller's script from a Write built
// here, so that the encoding and the index entries are this package's alone.

// Write is one of this package's writes as a script's Lua takes it.
type Write struct {
	Keys []string
	Args []any
}

// NewPositionWrite encodes the write of the bot's position on symbol (nil or empty: closed,
// so removed) with its index entries: the bot's set of open symbols and the partition's
// watch index.
func NewPositionWrite(botID, symbol string, pos *Position) (Write, error) {
	w := Write{Keys: []string{store.BookPosition(botID, symbol), store.BookPositions(botID), watchKey(botID)},
		Args: []any{"", symbol, watchField(botID, symbol), ""}}
	if pos == nil || !pos.Size.IsPositive() {
		return w, nil
	}
	data, err := json.Marshal(pos)
	if err != nil {
		return Write{}, err
	}
	w.Args[0] = string(data)
	if it, ok := watchItemOf(*pos); ok {
		wd, err := json.Marshal(it)
		if err != nil {
			return Write{}, err
		}
		w.Args[3] = string(wd)
	}
	return w, nil
}

// PositionLua returns the Lua statements that make a position Write: its Keys from
// KEYS[keyAt] on, its Args from ARGV[argAt] on. They return nothing.
func PositionLua(keyAt, argAt int) string {
	return fmt.Sprintf(`if ARGV[%[2]d] == '' then
  redis.call('DEL', KEYS[%[1]d])
  redis.call('SREM', KEYS[%[1]d+1], ARGV[%[2]d+1])
  redis.call('HDEL', KEYS[%[1]d+2], ARGV[%[2]d+2])
else
  redis.call('SET', KEYS[%[1]d], ARGV[%[2]d])
  redis.call('SADD', KEYS[%[1]d+1], ARGV[%[2]d+1])
  if ARGV[%[2]d+3] == '' then
    redis.call('HDEL', KEYS[%[1]d+2], ARGV[%[2]d+2])
  else
    redis.call('HSET', KEYS[%[1]d+2], ARGV[%[2]d+2], ARGV[%[2]d+3])
  end
end
`, keyAt, argAt)
}

// StagePosition writes pos (nil: the position is closed) with its index entries.
func StagePosition(ctx context.Context, p redis.Pipeliner, botID, symbol string, pos *Position) error {
	w, err := NewPositionWrite(botID, symbol, pos)
	if err != nil {
		return err
	}
	if w.Args[0] == "" {
		p.Del(ctx, w.Keys[0])
		p.SRem(ctx, w.Keys[1], symbol)
		p.HDel(ctx, w.Keys[2], w.Args[2].(string))
		return nil
	}
	p.Set(ctx, w.Keys[0], w.Args[0], 0)
	p.SAdd(ctx, w.Keys[1], symbol)
	if w.Args[3] == "" {
		p.HDel(ctx, w.Keys[2], w.Args[2].(string))
	} else {
		p.HSet(ctx, w.Keys[2], w.Args[2], w.Args[3])
	}
	return nil
}

// NewTradeWrite encodes the append of a realised trade of the bot (nil: none, nothing is
// written).
func NewTradeWrite(botID string, t *Trade) (Write, error) {
	w := Write{Keys: []string{store.BookTrades(botID), store.ArchiveOf(botID)}, Args: []any{""}}
	if t == nil {
		return w, nil
	}
	text, err := EncodeTrade(*t)
	if err != nil {
		return Write{}, err
	}
	w.Args[0] = text
	return w, nil
}

// TradeLua returns the Lua statements that make a trade Write (KEYS[keyAt] and
// KEYS[keyAt+1], the partition's archive stream; ARGV[argAt]).
func TradeLua(keyAt, argAt int) string {
	return fmt.Sprintf("if ARGV[%[2]d] ~= '' then\n  redis.call('RPUSH', KEYS[%[1]d], ARGV[%[2]d])\n  ", keyAt, argAt) +
		store.ArchiveLua(keyAt+1, store.ArchiveTrade, argAt) + "end\n"
}

// StageTrade appends a realised trade.
func StageTrade(ctx context.Context, p redis.Pipeliner, t Trade) error {
	w, err := NewTradeWrite(t.BotID, &t)
	if err != nil {
		return err
	}
	p.RPush(ctx, w.Keys[0], w.Args[0])
	p.XAdd(ctx, &redis.XAddArgs{Stream: w.Keys[1], Values: []any{"k", store.ArchiveTrade, "v", w.Args[0]}})
	return nil
}

// WatchItem is a position the price watcher checks.
type WatchItem struct {
	BotID      string         `json:"botId"`
	Symbol     string         `json:"symbol"`
	Kind       exchange.Kind  `json:"kind"`
	PositionID string         `json:"positionId"`
	Side       Side           `json:"side"`
	StopLoss   *Exit          `json:"stopLoss,omitempty"`
	TakeProfit *Exit          `json:"takeProfit,omitempty"`
	Liquidate  httpapi.Number `json:"liquidationPrice,omitzero"`
}

func watchField(botID, symbol string) string { return botID + "|" + symbol }

// watchKey is the watch index of the bot's partition, in the slot of the bot's book.
func watchKey(botID string) string { return store.Watch(store.PartitionOf(botID)) }

func watchItemOf(p Position) (WatchItem, bool) {
	w := WatchItem{BotID: p.BotID, Symbol: p.Symbol, Kind: p.Kind, PositionID: p.ID, Side: p.Side,
		StopLoss: p.StopLoss, TakeProfit: p.TakeProfit, Liquidate: httpapi.Num(p.Liquidation())}
	return w, w.StopLoss != nil || w.TakeProfit != nil || w.Liquidate.IsPositive()
}

// Watched lists every watched position: every partition's index, read in one pipeline.
func Watched(ctx context.Context, c redis.Cmdable) ([]WatchItem, error) {
	cmds := make([]*redis.MapStringStringCmd, store.Partitions)
	if _, err := c.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i := range cmds {
			cmds[i] = p.HGetAll(ctx, store.Watch(i))
		}
		return nil
	}); err != nil {
		return nil, err
	}
	var out []WatchItem
	for _, cmd := range cmds {
		for field, v := range cmd.Val() {
			var w WatchItem
			if err := json.Unmarshal([]byte(v), &w); err != nil {
				return nil, fmt.Errorf("watch entry %s: corrupt: %w", strings.ReplaceAll(field, "|", " "), err)
			}
			out = append(out, w)
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].BotID != out[j].BotID {
			return out[i].BotID < out[j].BotID
		}
		return out[i].Symbol < out[j].Symbol
	})
	return out, nil
}

// Unwatch removes a position from the watch index.
func Unwatch(ctx context.Context, c redis.Cmdable, botID, symbol string) error {
	return c.HDel(ctx, watchKey(botID), watchField(botID, symbol)).Err()
}

// Purge removes a deleted bot's book: positions, orders, trades and watch entries. The
// bot's SignalBot finalizer calls it with the rest of the bot's runtime state.
func Purge(ctx context.Context, rdb redis.UniversalClient, botID string) error {
	symbols, err := rdb.SMembers(ctx, store.BookPositions(botID)).Result()
	if err != nil {
		return err
	}
	ids, err := rdb.LRange(ctx, store.BookOrders(botID), 0, -1).Result()
	if err != nil {
		return err
	}
	keys := []string{store.BookPositions(botID), store.BookOrders(botID), store.BookTrades(botID)}
	fields := make([]string, 0, len(symbols))
	for _, s := range symbols {
		keys = append(keys, store.BookPosition(botID, s))
		fields = append(fields, watchField(botID, s))
	}
	for _, id := range ids {
		keys = append(keys, store.BookOrder(botID, id))
	}
	_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Del(ctx, keys...)
		if len(fields) > 0 {
			p.HDel(ctx, watchKey(botID), fields...)
		}
		return nil
	})
	return err
}
