package retention_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/archive"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/retention"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// With the archive, the retention is Redis's hot window: history older than the window
// leaves Redis only once PostgreSQL holds it, and an order still open stays whatever its
// age.
func TestTheHotWindowRemovesOnlyWhatTheArchiveHolds(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	db := dbtest.New(t)
	now := time.Now().UTC()
	bot := botIn(5, 1)
	if err := registry.New(rdb).Project(ctx, registry.Bot{ID: bot, Namespace: "ns", Name: bot, Owner: "a@x.io"}, "hook"); err != nil {
		t.Fatal(err)
	}
	c, err := retention.New(retention.Options{Redis: rdb, Owner: owned{5}, Archive: archive.Held{DB: db},
		Retention: 10 * time.Minute, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if want := now.Add(-10 * time.Minute).Truncate(time.Second); !c.Cutoff(now).Equal(want) {
		t.Fatalf("cutoff %s, want the window to the second (%s)", c.Cutoff(now), want)
	}
	// Three trades and orders from an hour ago, one from a minute ago, and an order that is
	// still open since an hour ago.
	for _, id := range []string{"t1", "t2", "t3"} {
		book(t, rdb, bot, id, now.Add(-time.Hour))
	}
	book(t, rdb, bot, "t4", now.Add(-time.Minute))
	open := position.OrderRecord{ClientOrderID: "o-open", BotID: bot, Status: exchange.StatusOpen,
		CreatedAt: now.Add(-2 * time.Hour).UnixMilli(), UpdatedAt: now.Add(-2 * time.Hour).UnixMilli()}
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { return position.StageOrder(ctx, p, open, true) }); err != nil {
		t.Fatal(err)
	}
	if ttl := rdb.TTL(ctx, store.BookOrder(bot, "o-open")).Val(); ttl < position.OrderTTL-time.Minute {
		t.Fatalf("an open order's record expires in %s, before any fill could be booked", ttl)
	}

	// Nothing is archived yet: nothing leaves Redis.
	r, err := c.Partitions(ctx, []int{5}, c.Cutoff(now))
	if err != nil || r.Trades != 0 || r.Orders != 0 {
		t.Fatalf("before the archive: removed %+v (%v), want nothing", r, err)
	}
	if _, _, err := archive.New(archive.Options{Redis: rdb, DB: db}).Step(ctx); err != nil {
		t.Fatal(err)
	}
	// A trade and an order version the archive lacks (here: lost from it) stay in Redis,
	// and so does everything after them in their list.
	if _, err := db.Exec(ctx, `DELETE FROM trades WHERE id = 't2'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `UPDATE orders SET updated_at = updated_at - interval '1 millisecond' WHERE client_order_id = 'o-t2'`); err != nil {
		t.Fatal(err)
	}
	r, err = c.Partitions(ctx, []int{5}, c.Cutoff(now))
	if err != nil || r.Trades != 1 || r.Orders != 1 {
		t.Fatalf("with t2 missing from the archive: removed %+v (%v), want t1 and its order", r, err)
	}
	if _, _, err := archive.New(archive.Options{Redis: rdb, DB: db}).Step(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `INSERT INTO trades SELECT 't2', bot_id, signal_id, position_id, symbol, kind, side, size,
		entry_price, exit_price, leverage, pnl, fees, net_pnl, closed, reason, opened_at, closed_at FROM trades WHERE id = 't1'`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, `UPDATE orders SET updated_at = updated_at + interval '1 millisecond' WHERE client_order_id = 'o-t2'`); err != nil {
		t.Fatal(err)
	}
	r, err = c.Partitions(ctx, []int{5}, c.Cutoff(now))
	if err != nil || r.Trades != 2 {
		t.Fatalf("once the archive holds them: removed %+v (%v), want the other 2 old trades", r, err)
	}
	ids, _ := rdb.LRange(ctx, store.BookOrders(bot), 0, -1).Result()
	if len(ids) != 2 || ids[0] != "o-open" || ids[1] != "o-t4" {
		// The list is newest first: o-open (staged last) and o-t4 stay; the open order,
		// though the oldest, is never dropped, and the tail stops at it.
		t.Fatalf("orders left: %v, want o-open and o-t4", ids)
	}
}
