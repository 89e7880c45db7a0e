package archive

import (
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/result"
)

// The rows of the facts, each written so that a second copy changes nothing: a trade never
// changes once realised; an order record is replaced only by a version at least as new (its
// updatedAt; the stream's order breaks a tie); a result is replaced only by one decided
// later (a dead letter replayed on purpose stores a new result for the same signal).

const insertTrade = `INSERT INTO trades (id, bot_id, signal_id, position_id, symbol, kind, side, size,
	entry_price, exit_price, leverage, pnl, fees, net_pnl, closed, reason, opened_at, closed_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18)
	ON CONFLICT (bot_id, id) DO NOTHING`

func queueTrade(b *pgx.Batch, t position.Trade) {
	b.Queue(insertTrade, t.ID, t.BotID, t.SignalID, t.PositionID, t.Symbol, string(t.Kind), string(t.Side), t.Size,
		t.EntryPrice, t.ExitPrice, t.Leverage, t.Pnl, t.Fees, t.NetPnl, t.Closed, t.Reason, at(t.OpenedAt), at(t.ClosedAt))
}

const upsertOrder = `INSERT INTO orders (bot_id, client_order_id, order_id, signal_id, leg, symbol, kind, side, type,
	status, amount, price, filled_amount, avg_price, fee, fee_asset, reduce_only, leverage, code, error, created_at, updated_at)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)
	ON CONFLICT (bot_id, client_order_id) DO UPDATE SET order_id = EXCLUDED.order_id, signal_id = EXCLUDED.signal_id,
	leg = EXCLUDED.leg, symbol = EXCLUDED.symbol, kind = EXCLUDED.kind, side = EXCLUDED.side, type = EXCLUDED.type,
	status = EXCLUDED.status, amount = EXCLUDED.amount, price = EXCLUDED.price, filled_amount = EXCLUDED.filled_amount,
	avg_price = EXCLUDED.avg_price, fee = EXCLUDED.fee, fee_asset = EXCLUDED.fee_asset, reduce_only = EXCLUDED.reduce_only,
	leverage = EXCLUDED.leverage, code = EXCLUDED.code, error = EXCLUDED.error, created_at = EXCLUDED.created_at,
	updated_at = EXCLUDED.updated_at
	WHERE orders.updated_at <= EXCLUDED.updated_at`

func queueOrder(b *pgx.Batch, r position.OrderRecord) {
	b.Queue(upsertOrder, r.BotID, r.ClientOrderID, r.OrderID, r.SignalID, r.Leg, r.Symbol, string(r.Kind), string(r.Side),
		string(r.Type), string(r.Status), r.Amount, nullable(r.Price.Decimal), r.FilledAmount, r.AvgPrice, r.Fee, r.FeeAsset,
		r.ReduceOnly, r.Leverage, r.Code, r.Error, at(r.CreatedAt), at(r.UpdatedAt))
}

const upsertResult = `INSERT INTO signal_results (signal_id, bot_id, success, code, source, action, received_at, decided_at, result)
	VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
	ON CONFLICT (signal_id) DO UPDATE SET bot_id = EXCLUDED.bot_id, success = EXCLUDED.success, code = EXCLUDED.code,
	source = EXCLUDED.source, action = EXCLUDED.action, received_at = EXCLUDED.received_at,
	decided_at = EXCLUDED.decided_at, result = EXCLUDED.result
	WHERE signal_results.decided_at <= EXCLUDED.decided_at`

// queueResult writes r (its JSON raw, as stored) with its signal index entry (member, ""
// when the signal has no bot) and when the intake accepted it (receivedMs, ms).
func queueResult(b *pgx.Batch, r result.Result, raw, member, receivedMs string) error {
	var entry result.Entry
	if member != "" {
		var err error
		if entry, err = result.DecodeEntry(member, 0); err != nil {
			return err
		}
	}
	var received *time.Time
	if ms, err := strconv.ParseInt(receivedMs, 10, 64); err == nil && ms > 0 {
		t := at(ms)
		received = &t
	}
	b.Queue(upsertResult, r.SignalID, r.BotID, r.Success, string(r.Code), entry.Source, entry.Action, received,
		at(r.Timestamp), raw)
	return nil
}

const insertAudit = `INSERT INTO audit_log (user_id, ms, seq, at, client_id, client_name, channel, tool, arguments,
	ok, code, message) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) ON CONFLICT DO NOTHING`

// queueAudit writes an audit journal entry, keyed by its user and its ID in the user's
// stream: a second copy changes nothing.
func queueAudit(b *pgx.Batch, e audit.Archived) error {
	ms, seq, ok := e.IDParts()
	if !ok || e.UserID == "" {
		return errors.New("audit entry without a user or a stream ID")
	}
	b.Queue(insertAudit, e.UserID, ms, seq, e.Time.UTC(), e.ClientID, e.ClientName, e.Channel, e.Tool, e.Arguments,
		e.OK, e.Code, e.Message)
	return nil
}

// at is a book's time (ms since epoch) as PostgreSQL keeps it: exact, in UTC.
func at(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// nullable is a decimal the book leaves out when zero (an order's limit price): NULL then.
func nullable(d decimal.Decimal) *decimal.Decimal {
	if d.IsZero() {
		return nil
	}
	return &d
}
