// Package history is the one reader of a bot's trading history for every surface (MCP's
// list and get tools, the dashboard's pages, the CSV export): the hot window in Redis (the
// book's lists and records, and what the archive has not copied yet) merged with
// PostgreSQL's archive (runtime/archive), without a gap or a duplicate at the seam.
//
// The merge rests on two facts. Every fact in PostgreSQL came from Redis, and Redis drops a
// fact only after PostgreSQL has it (the retention compactor checks), so the union of the
// two is the whole history. Both are read in the same order and by the same cursor, so a
// page is the first Limit items of the union of each side's first Limit (+1) items after the
// cursor: an item of the union's page is among the first Limit of whichever side holds it.
// A fact in both is the same fact; the Redis copy wins, as the newer state of an order.
//
// Without a database (Options.DB nil) the reader is the Redis book alone. When PostgreSQL
// does not answer, a page is served from Redis and marked Partial, so that a user still
// sees the recent history while the archive is down.
package history

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/result"
)

// Reader reads history. It is safe for concurrent use.
type Reader struct {
	rdb  redis.UniversalClient
	db   *pgxpool.Pool
	book *position.Book
	log  *slog.Logger
}

// New is a reader of Redis and, when db is not nil, PostgreSQL's archive.
func New(rdb redis.UniversalClient, db *pgxpool.Pool, log *slog.Logger) *Reader {
	if log == nil {
		log = slog.Default()
	}
	return &Reader{rdb: rdb, db: db, book: position.NewBook(rdb), log: log}
}

// Archived reports whether the reader has PostgreSQL's archive.
func (r *Reader) Archived() bool { return r.db != nil }

// unavailable logs a failed archive read that the caller answers from Redis alone.
func (r *Reader) unavailable(what string, err error) {
	r.log.Warn("history: the archive did not answer; serving the hot window only", "read", what, "error", err)
}

// TradeCursor is where a page of trades continues: the last trade served, by close time
// (ms) and ID.
type TradeCursor struct {
	ClosedAt int64
	ID       string
}

// String is the cursor as text ("closedAt/id"); ParseTradeCursor reads it back.
func (c TradeCursor) String() string { return fmt.Sprintf("%020d/%s", c.ClosedAt, c.ID) }

// ParseTradeCursor reads a cursor String wrote.
func ParseTradeCursor(s string) (TradeCursor, error) {
	at, id, ok := strings.Cut(s, "/")
	var c TradeCursor
	if _, err := fmt.Sscanf(at, "%d", &c.ClosedAt); err != nil || !ok || id == "" {
		return TradeCursor{}, errors.New("history: not a trade cursor")
	}
	c.ID = id
	return c, nil
}

func cursorOf(t position.Trade) TradeCursor { return TradeCursor{t.ClosedAt, t.ID} }

func (c TradeCursor) before(o TradeCursor) bool {
	return c.ClosedAt < o.ClosedAt || c.ClosedAt == o.ClosedAt && c.ID < o.ID
}

// TradeQuery selects a page of a bot's trades.
type TradeQuery struct {
	// Newest reads newest first; otherwise oldest first.
	Newest bool
	// After is the cursor of the previous page's last trade (nil: from the start).
	After *TradeCursor
	// Limit is the page size (at least 1).
	Limit int
}

// TradePage is a page of trades.
type TradePage struct {
	Trades []position.Trade
	// Next continues the page (nil on the last).
	Next *TradeCursor
	// Partial: PostgreSQL did not answer; the page holds the hot window only.
	Partial bool
}

// Trades reads a page of the bot's trades in close order (see the package comment).
func (r *Reader) Trades(ctx context.Context, botID string, q TradeQuery) (TradePage, error) {
	q.Limit = max(q.Limit, 1)
	hot, err := r.book.Trades(ctx, botID)
	if err != nil {
		return TradePage{}, err
	}
	var page TradePage
	items := make([]position.Trade, 0, len(hot))
	for _, t := range hot {
		if q.After == nil || q.Newest == cursorOf(t).before(*q.After) && cursorOf(t) != *q.After {
			items = append(items, t)
		}
	}
	if r.db != nil {
		cold, err := r.archivedTrades(ctx, botID, q)
		if err != nil {
			r.unavailable("trades", err)
			page.Partial = true
		}
		items = append(items, cold...)
	}
	slices.SortFunc(items, func(a, b position.Trade) int {
		ca, cb := cursorOf(a), cursorOf(b)
		switch {
		case ca == cb:
			return 0
		case ca.before(cb) != q.Newest:
			return -1
		}
		return 1
	})
	items = slices.CompactFunc(items, func(a, b position.Trade) bool { return a.ID == b.ID && a.ClosedAt == b.ClosedAt })
	if len(items) > q.Limit {
		items = items[:q.Limit]
		next := cursorOf(items[q.Limit-1])
		page.Next = &next
	}
	page.Trades = items
	return page, nil
}

// TradeResultsIn is the newest limit of the bot's trades closed in [fromMS, toMS), oldest
// first, as an equity curve draws them (analytics.TradeReader): the trade list's
// (position.TradeResultsIn, in booking order) and the archive's that the list no longer
// holds, each trade once, in close order. When PostgreSQL does not answer, the list's
// alone: the curve then draws the days it lacks one point each.
func (r *Reader) TradeResultsIn(ctx context.Context, botID string, fromMS, toMS int64, limit int) ([]position.TradeResult, error) {
	hot, err := position.TradeResultsIn(ctx, r.rdb, botID, fromMS, toMS, limit)
	if err != nil || r.db == nil {
		return hot, err
	}
	rows, err := r.db.Query(ctx, `SELECT id, net_pnl, closed_at FROM trades WHERE bot_id = $1 AND closed_at >= $2 AND closed_at < $3
		ORDER BY closed_at DESC, id DESC LIMIT $4`, botID, at(fromMS), at(toMS), limit)
	var cold []position.TradeResult
	if err == nil {
		cold, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (position.TradeResult, error) {
			var t position.TradeResult
			var closed time.Time
			err := row.Scan(&t.ID, &t.NetPnl, &closed)
			t.ClosedAt = closed.UnixMilli()
			return t, err
		})
	}
	if err != nil {
		r.unavailable("trade results", err)
		return hot, nil
	}
	inHot := make(map[TradeCursor]bool, len(hot))
	for _, t := range hot {
		inHot[TradeCursor{t.ClosedAt, t.ID}] = true
	}
	out := make([]position.TradeResult, 0, len(hot)+len(cold))
	for i := len(cold) - 1; i >= 0; i-- {
		if t := cold[i]; !inHot[TradeCursor{t.ClosedAt, t.ID}] {
			out = append(out, t)
		}
	}
	// Stable: the list's trades keep their booking order among equal close times.
	out = append(out, hot...)
	slices.SortStableFunc(out, func(a, b position.TradeResult) int { return cmp.Compare(a.ClosedAt, b.ClosedAt) })
	return out[max(0, len(out)-limit):], nil
}

const tradeColumns = `id, bot_id, signal_id, position_id, symbol, kind, side, size, entry_price, exit_price, leverage,
	pnl, fees, net_pnl, closed, reason, opened_at, closed_at`

// archivedTrades is the first Limit+1 archived trades after q's cursor in q's order.
func (r *Reader) archivedTrades(ctx context.Context, botID string, q TradeQuery) ([]position.Trade, error) {
	order, cmp := "ASC", ">"
	if q.Newest {
		order, cmp = "DESC", "<"
	}
	sql := `SELECT ` + tradeColumns + ` FROM trades WHERE bot_id = $1`
	args := []any{botID, q.Limit + 1}
	if q.After != nil {
		sql += ` AND (closed_at, id) ` + cmp + ` ($3, $4)`
		args = append(args, at(q.After.ClosedAt), q.After.ID)
	}
	sql += ` ORDER BY closed_at ` + order + `, id ` + order + ` LIMIT $2`
	rows, err := r.db.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanTrade)
}

func scanTrade(row pgx.CollectableRow) (position.Trade, error) {
	var t position.Trade
	var kind, side string
	var opened, closed time.Time
	err := row.Scan(&t.ID, &t.BotID, &t.SignalID, &t.PositionID, &t.Symbol, &kind, &side, &t.Size, &t.EntryPrice,
		&t.ExitPrice, &t.Leverage, &t.Pnl, &t.Fees, &t.NetPnl, &t.Closed, &t.Reason, &opened, &closed)
	t.Kind, t.Side, t.OpenedAt, t.ClosedAt = exchange.Kind(kind), position.Side(side), opened.UnixMilli(), closed.UnixMilli()
	return t, err
}

// Order is one of the bot's orders by client order ID: the hot record, or the archived
// one; nil when neither has it.
func (r *Reader) Order(ctx context.Context, botID, clientOrderID string) (*position.OrderRecord, error) {
	rec, err := r.book.Order(ctx, botID, clientOrderID)
	if err != nil || rec != nil || r.db == nil {
		return rec, err
	}
	rows, err := r.db.Query(ctx, `SELECT `+orderColumns+` FROM orders WHERE bot_id = $1 AND client_order_id = $2`, botID, clientOrderID)
	if err != nil {
		return nil, err
	}
	recs, err := pgx.CollectRows(rows, scanOrder)
	if err != nil || len(recs) == 0 {
		return nil, err
	}
	return &recs[0], nil
}

const orderColumns = `bot_id, client_order_id, order_id, signal_id, leg, symbol, kind, side, type, status, amount, price,
	filled_amount, avg_price, fee, fee_asset, reduce_only, leverage, code, error, created_at, updated_at`

func scanOrder(row pgx.CollectableRow) (position.OrderRecord, error) {
	var o position.OrderRecord
	var kind, side, typ, status string
	var price *decimal.Decimal
	var created, updated time.Time
	err := row.Scan(&o.BotID, &o.ClientOrderID, &o.OrderID, &o.SignalID, &o.Leg, &o.Symbol, &kind, &side, &typ, &status,
		&o.Amount, &price, &o.FilledAmount, &o.AvgPrice, &o.Fee, &o.FeeAsset, &o.ReduceOnly, &o.Leverage, &o.Code, &o.Error,
		&created, &updated)
	o.Kind, o.Side, o.Type, o.Status = exchange.Kind(kind), exchange.Side(side), exchange.OrderType(typ), exchange.OrderStatus(status)
	if price != nil {
		o.Price = httpapi.Num(*price)
	}
	o.CreatedAt, o.UpdatedAt = created.UnixMilli(), updated.UnixMilli()
	return o, err
}

// OrderPage reads a page of the bot's orders, newest first (by creation), after q.After,
// keeping q.Statuses. A cursor neither side knows is position.ErrCursorGone.
func (r *Reader) OrderPage(ctx context.Context, botID string, q position.OrderQuery) (position.OrderPage, error) {
	q.Limit = max(q.Limit, 1)
	if r.db == nil {
		return r.book.OrderPage(ctx, botID, q)
	}
	var after *position.OrderRecord
	if q.After != "" {
		rec, err := r.Order(ctx, botID, q.After)
		if err != nil {
			return position.OrderPage{}, err
		}
		if rec == nil {
			return position.OrderPage{}, position.ErrCursorGone
		}
		after = rec
	}
	hot, err := r.book.OrderPage(ctx, botID, q)
	if errors.Is(err, position.ErrCursorGone) {
		// The cursor is archived and has left the hot list, which holds only newer orders.
		hot, err = position.OrderPage{}, nil
	}
	if err != nil {
		return position.OrderPage{}, err
	}
	cold, err := r.archivedOrders(ctx, botID, q, after)
	if err != nil {
		r.unavailable("orders", err)
		return hot, nil
	}
	items := append(hot.Orders, cold...)
	newer := func(a, b position.OrderRecord) bool {
		return a.CreatedAt > b.CreatedAt || a.CreatedAt == b.CreatedAt && a.ClientOrderID > b.ClientOrderID
	}
	// Stable, so that of two copies of one order the hot one (first) is kept.
	slices.SortStableFunc(items, func(a, b position.OrderRecord) int {
		switch {
		case a.ClientOrderID == b.ClientOrderID:
			return 0
		case newer(a, b):
			return -1
		}
		return 1
	})
	items = slices.CompactFunc(items, func(a, b position.OrderRecord) bool { return a.ClientOrderID == b.ClientOrderID })
	out := position.OrderPage{Orders: items}
	if len(items) > q.Limit || hot.Next != "" && len(items) == q.Limit {
		out.Orders = items[:q.Limit]
		out.Next = out.Orders[q.Limit-1].ClientOrderID
	}
	return out, nil
}

// archivedOrders is the first Limit+1 archived orders older than after (nil: the newest),
// in q.Statuses.
func (r *Reader) archivedOrders(ctx context.Context, botID string, q position.OrderQuery, after *position.OrderRecord) ([]position.OrderRecord, error) {
	sql := `SELECT ` + orderColumns + ` FROM orders WHERE bot_id = $1`
	args := []any{botID, q.Limit + 1}
	if after != nil {
		args = append(args, at(after.CreatedAt), after.ClientOrderID)
		sql += fmt.Sprintf(` AND (created_at, client_order_id) < ($%d, $%d)`, len(args)-1, len(args))
	}
	if len(q.Statuses) > 0 {
		st := make([]string, len(q.Statuses))
		for i, s := range q.Statuses {
			st[i] = string(s)
		}
		args = append(args, st)
		sql += fmt.Sprintf(` AND status = ANY($%d)`, len(args))
	}
	sql += ` ORDER BY created_at DESC, client_order_id DESC LIMIT $2`
	rows, err := r.db.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanOrder)
}

// Result is a signal's stored result: the hot one (kept queue.ResultTTL()), or the archived
// one after that.
func (r *Reader) Result(ctx context.Context, signalID string) (result.Stored, error) {
	st, err := queue.GetResult(ctx, r.rdb, signalID)
	if err != nil || st.Found || r.db == nil {
		return st, err
	}
	st, err = r.ArchivedResult(ctx, signalID)
	if errors.Is(err, ErrArchiveUnreachable) {
		r.unavailable("result", err)
		return result.Stored{}, nil
	}
	return st, err
}

// ErrArchiveUnreachable wraps PostgreSQL's failure to answer (ArchivedResult).
var ErrArchiveUnreachable = errors.New("history: the archive cannot be read")

// ArchivedResult is a signal's result as PostgreSQL holds it, with PostgreSQL's failure as
// an error: the executor's check of a late entry must never read "unreachable" as "never
// executed".
func (r *Reader) ArchivedResult(ctx context.Context, signalID string) (result.Stored, error) {
	if r.db == nil {
		return result.Stored{}, nil
	}
	var raw []byte
	err := r.db.QueryRow(ctx, `SELECT result FROM signal_results WHERE signal_id = $1`, signalID).Scan(&raw)
	if errors.Is(err, pgx.ErrNoRows) {
		return result.Stored{}, nil
	}
	if err != nil {
		return result.Stored{}, fmt.Errorf("%w: result %s: %w", ErrArchiveUnreachable, signalID, err)
	}
	var res result.Result
	if err := json.Unmarshal(raw, &res); err != nil {
		return result.Stored{}, err
	}
	return result.Stored{Result: res, Found: true}, nil
}

// at is a book time (ms) as PostgreSQL keeps it.
func at(ms int64) time.Time { return time.UnixMilli(ms).UTC() }
