package retention_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
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
// leaves Redis only after the compactor has written it to PostgreSQL (so history booked
// before the archive existed, with no archive entry, is carried over too), never while
// PostgreSQL refuses, and an order still open stays whatever its age. The archiver's later
// copy of the same facts adds no row.
func TestTheHotWindowRemovesOnlyWhatTheArchiveHolds(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	url := dbtest.NewURL(t)
	db := dbtest.Pool(t, url)
	now := time.Now().UTC()
	bot := botIn(5, 1)
	if err := registry.New(rdb).Project(ctx, registry.Bot{ID: bot, Namespace: "ns", Name: bot, Owner: "a@x.io"}, "hook"); err != nil {
		t.Fatal(err)
	}
	compactor := func(db *pgxpool.Pool) *retention.Compactor {
		c, err := retention.New(retention.Options{Redis: rdb, Owner: owned{5}, Archive: archive.Keeper{DB: db},
			Retention: 10 * time.Minute, Now: func() time.Time { return now }})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c := compactor(db)
	if want := now.Add(-10 * time.Minute).Truncate(time.Second); !c.Cutoff(now).Equal(want) {
		t.Fatalf("cutoff %s, want the window to the second (%s)", c.Cutoff(now), want)
	}
	// Three trades and orders from an hour ago, booked before the archive existed (no
	// archive entry), one from a minute ago, and an order still open since two hours ago.
	for _, id := range []string{"t1", "t2", "t3"} {
		book(t, rdb, bot, id, now.Add(-time.Hour))
	}
	rdb.Del(ctx, store.ArchiveOf(bot))
	book(t, rdb, bot, "t4", now.Add(-time.Minute))
	open := position.OrderRecord{ClientOrderID: "o-open", BotID: bot, Status: exchange.StatusOpen,
		CreatedAt: now.Add(-2 * time.Hour).UnixMilli(), UpdatedAt: now.Add(-2 * time.Hour).UnixMilli()}
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { return position.StageOrder(ctx, p, open, true) }); err != nil {
		t.Fatal(err)
	}
	if ttl := rdb.TTL(ctx, store.BookOrder(bot, "o-open")).Val(); ttl < position.OrderTTL-time.Minute {
		t.Fatalf("an open order's record expires in %s, before any fill could be booked", ttl)
	}

	// PostgreSQL refuses: nothing leaves Redis.
	down := dbtest.Pool(t, url)
	down.Close()
	if r, err := compactor(down).Partitions(ctx, []int{5}, c.Cutoff(now)); err != nil || r.Trades != 0 || r.Orders != 0 {
		t.Fatalf("with PostgreSQL down: removed %+v (%v), want nothing", r, err)
	}
	if n := rdb.LLen(ctx, store.BookTrades(bot)).Val(); n != 4 {
		t.Fatalf("with PostgreSQL down the trade list holds %d, want all 4", n)
	}

	r, err := c.Partitions(ctx, []int{5}, c.Cutoff(now))
	if err != nil || r.Trades != 3 || r.Orders != 3 {
		t.Fatalf("removed %+v (%v), want the 3 old trades and their orders", r, err)
	}
	ids, _ := rdb.LRange(ctx, store.BookOrders(bot), 0, -1).Result()
	if len(ids) != 2 || ids[0] != "o-open" || ids[1] != "o-t4" {
		t.Fatalf("orders left: %v, want o-open and o-t4", ids)
	}
	var trades, orders int
	var net string
	if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM trades), (SELECT sum(net_pnl)::text FROM trades),
		(SELECT count(*) FROM orders)`).Scan(&trades, &net, &orders); err != nil {
		t.Fatal(err)
	}
	if trades != 3 || net != "3.75" || orders != 3 {
		t.Fatalf("PostgreSQL holds %d trades (net %s) and %d orders, want the 3 removed (3.75) and their orders", trades, net, orders)
	}
	// The archiver copies what the streams hold (t4 and the open order): one row each.
	if _, _, err := archive.New(archive.Options{Redis: rdb, DB: db}).Step(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM trades), (SELECT count(*) FROM orders)`).Scan(&trades, &orders); err != nil {
		t.Fatal(err)
	}
	if trades != 4 || orders != 5 {
		t.Fatalf("after the archiver: %d trades and %d orders, want 4 and 5", trades, orders)
	}
}
