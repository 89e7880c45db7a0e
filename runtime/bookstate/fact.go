// Package bookstate keeps a copy of each bot's book state in PostgreSQL and puts it back
// into a Redis that lost it: the open positions (with their stop-loss and take-profit
// watch), the per-day analytics with the starting equity, and the risk counters (today's
// realised result, consecutive losses and errors).
//
// The executor's commit script, which writes that state, appends in the same script a
// Fact (the texts it wrote) to the partition's archive stream; the archiver copies it to
// the book_* tables (QueueFact), each row versioned by its archive entry. When Redis has
// lost a partition (its marker store.BookRestored is absent), the executor restores it
// (Restorer.Partition) before it decides or books anything there: the commit script
// refuses to write without the marker, so nothing is booked on an empty book.
package bookstate

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
)

// Fact is a bot's book state after one commit, as the commit wrote it.
type Fact struct {
	Bot    string `json:"b"`
	Symbol string `json:"s"`
	// Position is the symbol's position as the book stores it; "" when closed.
	Position string `json:"p,omitempty"`
	// Date and Day are the day the commit wrote (YYYY-MM-DD and its text); "" when none.
	Date string `json:"d,omitempty"`
	Day  string `json:"dv,omitempty"`
	// Start is the starting equity the commit recorded unless one was; "" when none.
	Start string `json:"st,omitempty"`
	// Risk is the risk counters as written: field, value, ...
	Risk []string `json:"r"`
	// Account is the bot's paper account ("" on an exchange): the archiver copies the
	// account's changes in the same step, so that a position and the paper holdings it
	// stands on are recorded together.
	Account string `json:"a,omitempty"`
}

// Encode is the fact as the archive entry's value.
func (f Fact) Encode() (string, error) {
	b, err := json.Marshal(f)
	return string(b), err
}

// Decode reads an archive entry's value.
func Decode(v string) (Fact, error) {
	var f Fact
	if err := json.Unmarshal([]byte(v), &f); err != nil {
		return Fact{}, err
	}
	if f.Bot == "" || f.Symbol == "" {
		return Fact{}, fmt.Errorf("bookstate: a fact without its bot or symbol")
	}
	return f, nil
}

// Each row keeps the archive entry it was copied from (ms, seq) and is replaced only by a
// later one: the archiver may copy an entry twice (a crash before its position was
// committed), and a partition's entries are in the order its commits ran.
const (
	upsertPosition = `INSERT INTO book_positions (bot_id, symbol, part, position, ms, seq) VALUES ($1, $2, $3, $4, $5, $6)
	ON CONFLICT (bot_id, symbol) DO UPDATE SET part = EXCLUDED.part, position = EXCLUDED.position, ms = EXCLUDED.ms,
	seq = EXCLUDED.seq WHERE (book_positions.ms, book_positions.seq) < (EXCLUDED.ms, EXCLUDED.seq)`
	upsertDay = `INSERT INTO book_days (bot_id, day, part, value, ms, seq) VALUES ($1, $2::date, $3, $4, $5, $6)
	ON CONFLICT (bot_id, day) DO UPDATE SET part = EXCLUDED.part, value = EXCLUDED.value, ms = EXCLUDED.ms,
	seq = EXCLUDED.seq WHERE (book_days.ms, book_days.seq) < (EXCLUDED.ms, EXCLUDED.seq)`
	// The start is written once (the book's HSETNX): a later fact without one keeps it.
	upsertBot = `INSERT INTO book_bots (bot_id, part, start, risk, ms, seq) VALUES ($1, $2, $3::numeric, $4, $5, $6)
	ON CONFLICT (bot_id) DO UPDATE SET part = EXCLUDED.part, start = coalesce(book_bots.start, EXCLUDED.start),
	risk = EXCLUDED.risk, ms = EXCLUDED.ms, seq = EXCLUDED.seq
	WHERE (book_bots.ms, book_bots.seq) < (EXCLUDED.ms, EXCLUDED.seq)`
)

// QueueFact adds the rows of f, copied from the archive entry (ms, seq), to b.
func QueueFact(b *pgx.Batch, f Fact, ms, seq int64) {
	part := store.PartitionOf(f.Bot)
	b.Queue(upsertPosition, f.Bot, f.Symbol, part, nullable(f.Position), ms, seq)
	if f.Date != "" {
		b.Queue(upsertDay, f.Bot, f.Date, part, f.Day, ms, seq)
	}
	risk := f.Risk
	if risk == nil {
		risk = []string{}
	}
	b.Queue(upsertBot, f.Bot, part, nullable(f.Start), risk, ms, seq)
}

// QueuePurge adds to b the removal of a deleted bot's rows.
func QueuePurge(b *pgx.Batch, botID string) {
	b.Queue(`DELETE FROM book_positions WHERE bot_id = $1`, botID)
	b.Queue(`DELETE FROM book_days WHERE bot_id = $1`, botID)
	b.Queue(`DELETE FROM book_bots WHERE bot_id = $1`, botID)
}

func nullable(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// Purge records that a deleted bot's book state is gone: a purge fact on its partition's
// archive stream, after which the archiver drops its rows, so that no later restore brings
// the state of a bot that no longer exists back. The SignalBot finalizer calls it with the
// rest of the bot's clean-up; a repeat appends a fact that deletes nothing more.
func Purge(ctx context.Context, rdb redis.UniversalClient, botID string) error {
	return rdb.XAdd(ctx, &redis.XAddArgs{Stream: store.ArchiveOf(botID),
		Values: []any{"k", store.ArchivePurge, "v", botID}}).Err()
}
