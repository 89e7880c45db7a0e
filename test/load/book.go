package load

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/history"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
)

// BookSnapshot is what the fleet's owners read of their bots' books, as JSON: each bot's
// analytics over all time (every past day's figures and the equity curve, whose per-trade
// points the read API takes from Redis's trade lists and db's archive, as here; db nil:
// Redis alone), its open positions, and its paper account's balance and holdings. Two
// snapshots are equal when nothing a user reads changed.
func (f *Fleet) BookSnapshot(ctx context.Context, rdb redis.UniversalClient, db *pgxpool.Pool, now time.Time) (string, error) {
	q, err := analytics.ParseQuery("all", "", "", "true", now)
	if err != nil {
		return "", err
	}
	an := analytics.New(rdb).WithTrades(history.New(rdb, db, slog.New(slog.DiscardHandler)))
	reg, book, accounts := registry.New(rdb), position.NewBook(rdb), paper.NewAccounts(rdb)
	out := make([]map[string]any, 0, len(f.Bots))
	for _, b := range f.Bots {
		bot, err := reg.Get(ctx, b.ID)
		if err != nil {
			return "", fmt.Errorf("bot %s: %w", b.Name, err)
		}
		rep, err := an.Bot(ctx, bot, q)
		if err != nil {
			return "", err
		}
		pos, err := book.List(ctx, b.ID)
		if err != nil {
			return "", err
		}
		st, err := accounts.Get(ctx, b.AccountID)
		if err != nil {
			return "", fmt.Errorf("account %s: %w", b.AccountName, err)
		}
		holdings, err := rdb.HGetAll(ctx, store.PaperPositions(b.AccountID)).Result()
		if err != nil {
			return "", err
		}
		out = append(out, map[string]any{"bot": b.Name, "analytics": rep.Metrics, "curve": rep.EquityCurve, "positions": pos,
			"balance": st.Balance.String(), "margin": st.Margin.String(), "holdings": holdings})
	}
	data, err := json.Marshal(out)
	return string(data), err
}

// WaitCopied waits until the archiver has copied everything the fleet's bots and accounts
// appended (their partitions' and accounts' archive streams are empty).
func (f *Fleet) WaitCopied(ctx context.Context, rdb redis.UniversalClient, within time.Duration) error {
	var keys []string
	for _, b := range f.Bots {
		keys = append(keys, store.ArchiveOf(b.ID), store.PaperArchive(b.AccountID))
	}
	deadline := time.Now().Add(within)
	for {
		left := int64(0)
		for _, k := range keys {
			n, err := rdb.XLen(ctx, k).Result()
			if err != nil {
				return err
			}
			left += n
		}
		if left == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("archive: %d entries still waiting for PostgreSQL", left)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
