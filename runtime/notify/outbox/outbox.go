// Package outbox is notifyd's delivery queue and delivery log, one PostgreSQL table
// (notify_outbox): a row per event and channel (the user's Telegram chat, or one of their
// webhook destinations), unique on the two, so that an event read twice is queued once.
// A row is pending until it is sent (sent), gathered into another row's message (merged),
// or given up after MaxAge (dropped); sent and dropped rows stay for the delivery log until
// Prune removes them.
//
// The feed's positions in the Redis streams are saved in the transaction that queues what
// was read up to them, so a crash repeats reading, never loses a queued event.
package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sigops/sigops/runtime/notify"
	"github.com/sigops/sigops/runtime/store"
)

// MaxAge is how long an undelivered message is retried before it is dropped.
const MaxAge = 24 * time.Hour

// Keep is how long delivered and dropped rows stay for the delivery log.
const Keep = 7 * 24 * time.Hour

// States of a row.
const (
	Pending = "pending"
	Sent    = "sent"
	Merged  = "merged"
	Dropped = "dropped"
)

// Channels: the user's Telegram chat, or a webhook destination (WebhookChannel).
const Telegram = "telegram"

// WebhookChannel is the channel of webhook destination id.
func WebhookChannel(id string) string { return "webhook:" + id }

// Row is one event queued for one channel.
type Row struct {
	ID       int64
	Channel  string
	User     string
	Event    notify.Event
	Attempts int
	Created  time.Time
	State    string
	SentAt   *time.Time
	Status   string
}

// burstOf is the burst a row belongs to: its bot (or connection) and kind; an urgent event
// is a burst of its own.
func burstOf(e notify.Event) string {
	if e.Kind.Urgent() {
		return "urgent:" + e.ID
	}
	return e.BotID + "\x1f" + e.Connection + "\x1f" + string(e.Kind)
}

// Queue writes rows (pending, due at now) and the feed's new positions in one transaction.
func Queue(ctx context.Context, db *pgxpool.Pool, rows []Row, positions map[string]string, now time.Time) error {
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, r := range rows {
			ev, err := json.Marshal(r.Event)
			if err != nil {
				return err
			}
			burst := burstOf(r.Event)
			b.Queue(`INSERT INTO notify_outbox (event_id, channel, user_id, burst, event, state, created_at, next_at)
				VALUES ($1, $2, $3, $4, $5, 'pending', $6, $6) ON CONFLICT (event_id, channel) DO NOTHING`,
				r.Event.ID, r.Channel, r.User, burst, ev, now)
			// A new burst is due now; one gathering or retrying keeps its time.
			b.Queue(`INSERT INTO notify_bursts (channel, burst, user_id, next_at, seq, has_pending) VALUES ($1, $2, $3, $4, 1, true)
				ON CONFLICT (channel, burst) DO UPDATE SET seq = notify_bursts.seq + 1, has_pending = true`,
				r.Channel, burst, r.User, now)
		}
		for stream, id := range positions {
			ms, seq, ok := store.SplitStreamID(id)
			if !ok {
				return errors.New("outbox: bad stream position " + id)
			}
			b.Queue(`INSERT INTO notify_progress (stream, last_ms, last_seq, updated_at) VALUES ($1, $2, $3, $4)
				ON CONFLICT (stream) DO UPDATE SET last_ms = EXCLUDED.last_ms, last_seq = EXCLUDED.last_seq,
				updated_at = EXCLUDED.updated_at`, stream, ms, seq, now)
		}
		return tx.SendBatch(ctx, b).Close()
	})
}

// Positions are the feed's saved positions in streams ("0-0" for one never read).
func Positions(ctx context.Context, db *pgxpool.Pool, streams []string) (map[string]string, error) {
	out := make(map[string]string, len(streams))
	for _, s := range streams {
		out[s] = "0-0"
	}
	rows, err := db.Query(ctx, `SELECT stream, last_ms, last_seq FROM notify_progress WHERE stream = ANY($1)`, streams)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		var ms, seq int64
		if err := rows.Scan(&s, &ms, &seq); err != nil {
			return nil, err
		}
		out[s] = formatID(ms, seq)
	}
	return out, rows.Err()
}

func formatID(ms, seq int64) string {
	return strconv.FormatInt(ms, 10) + "-" + strconv.FormatInt(seq, 10)
}

// Prune removes delivered, merged and dropped rows older than Keep, and bursts with
// nothing pending whose window ended a day ago.
func Prune(ctx context.Context, db *pgxpool.Pool, now time.Time) (int64, error) {
	t, err := db.Exec(ctx, `DELETE FROM notify_outbox WHERE state <> 'pending' AND created_at < $1`, now.Add(-Keep))
	if err != nil {
		return 0, err
	}
	_, err = db.Exec(ctx, `DELETE FROM notify_bursts WHERE NOT has_pending AND next_at < $1`, now.Add(-24*time.Hour))
	return t.RowsAffected(), err
}

// Log is channel's last deliveries (at most limit), newest first: what the dashboard shows
// beside a destination.
func Log(ctx context.Context, db *pgxpool.Pool, user, channel string, limit int) ([]Row, error) {
	rows, err := db.Query(ctx, `SELECT id, channel, user_id, event, attempts, created_at, state, sent_at, last_status, burst
		FROM notify_outbox WHERE channel = $1 AND user_id = $2 AND state <> 'merged' ORDER BY id DESC LIMIT $3`, channel, user, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanRow)
}

func scanRow(r pgx.CollectableRow) (Row, error) {
	row, _, err := scanDue(r)
	return row, err
}
