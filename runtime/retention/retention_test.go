package retention_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/retention"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

type owned []int

func (o owned) Owned() []int { return o }

// book books a trade with its day and a filled order record, as the executor's commit.
func book(t *testing.T, rdb redis.UniversalClient, botID, id string, at time.Time) {
	t.Helper()
	ctx := context.Background()
	tr := position.Trade{ID: id, BotID: botID, NetPnl: httpapi.Num(testkit.D("1.25")), ClosedAt: at.UnixMilli()}
	date := analytics.DateOfMS(tr.ClosedAt)
	d, err := analytics.ReadDayLater(ctx, rdb, botID, date)()
	if err != nil {
		t.Fatal(err)
	}
	d.Add(tr)
	rec := position.OrderRecord{ClientOrderID: "o-" + id, BotID: botID, Status: exchange.StatusFilled, CreatedAt: tr.ClosedAt, UpdatedAt: tr.ClosedAt}
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if err := position.StageTrade(ctx, p, tr); err != nil {
			return err
		}
		if err := position.StageOrder(ctx, p, rec, true); err != nil {
			return err
		}
		return analytics.StageDay(ctx, p, botID, date, d)
	}); err != nil {
		t.Fatal(err)
	}
}

// botIn is a bot ID of the given partition.
func botIn(partition int, n int) string {
	for i := 0; ; i++ {
		id := fmt.Sprintf("bot-%d-%d", n, i)
		if store.PartitionOf(id) == partition {
			return id
		}
	}
}

// The compactor works the bots of the partitions it is given, from the registry, and keeps
// whole days from the cutoff on.
func TestPartitions(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	now := time.Date(2026, 11, 25, 13, 30, 0, 0, time.UTC)
	c, err := retention.New(retention.Options{Redis: rdb, Owner: owned{3}, Retention: 10 * 24 * time.Hour,
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	// 25 Nov 13:30 − 10 days = 15 Nov 13:30, whose day starts at 00:00.
	cutoff := c.Cutoff(now)
	if want := time.Date(2026, 11, 15, 0, 0, 0, 0, time.UTC); !cutoff.Equal(want) {
		t.Fatalf("cutoff %s, want %s", cutoff, want)
	}
	mine, theirs := botIn(3, 1), botIn(4, 2)
	reg := registry.New(rdb)
	for _, id := range []string{mine, theirs} {
		if err := reg.Project(ctx, registry.Bot{ID: id, Namespace: "ns", Name: id, Owner: "a@x.io"}, "hook-"+id); err != nil {
			t.Fatal(err)
		}
		book(t, rdb, id, "t1", time.Date(2026, 11, 14, 23, 59, 0, 0, time.UTC))
		book(t, rdb, id, "t2", time.Date(2026, 11, 15, 0, 0, 0, 0, time.UTC))
	}
	r, err := c.Partitions(ctx, []int{3}, cutoff)
	if err != nil || r.Trades != 1 || r.Orders != 1 {
		t.Fatalf("removed %+v, %v; want 1 trade, 1 order", r, err)
	}
	for id, want := range map[string]int64{mine: 1, theirs: 2} {
		if n := rdb.LLen(ctx, store.BookTrades(id)).Val(); n != want {
			t.Errorf("%s: %d trades listed, want %d", id, n, want)
		}
		if n := rdb.LLen(ctx, store.BookOrders(id)).Val(); n != want {
			t.Errorf("%s: %d orders listed, want %d", id, n, want)
		}
	}
	first, _ := position.DecodeTrade(rdb.LIndex(ctx, store.BookTrades(mine), 0).Val())
	if first.ID != "t2" {
		t.Errorf("first trade kept %q, want t2", first.ID)
	}
}

func TestRetentionBounds(t *testing.T) {
	if _, err := retention.New(retention.Options{Retention: 6 * 24 * time.Hour}); err == nil {
		t.Error("a 6-day retention was accepted")
	}
	c, err := retention.New(retention.Options{})
	if err != nil || c.Retention() != 90*24*time.Hour {
		t.Errorf("default retention %v, %v; want 2160h", c, err)
	}
}

// Run compacts the partitions the executor holds at the time of each run.
func TestRunWorksTheHeldPartitions(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	id := botIn(7, 3)
	if err := registry.New(rdb).Project(ctx, registry.Bot{ID: id, Namespace: "ns", Name: id, Owner: "a@x.io"}, "hook"); err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 11, 25, 13, 30, 0, 0, time.UTC)
	book(t, rdb, id, "t1", now.Add(-91*24*time.Hour))
	book(t, rdb, id, "t2", now)
	c, err := retention.New(retention.Options{Redis: rdb, Owner: owned{7}, Interval: 20 * time.Millisecond,
		Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	testkit.EventuallyTrue(t, 5*time.Second, "the old trade and order removed", func() bool {
		return rdb.LLen(ctx, store.BookTrades(id)).Val() == 1 && rdb.LLen(ctx, store.BookOrders(id)).Val() == 1
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
