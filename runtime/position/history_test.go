package position_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// A finished record's life follows SetOrderTTL in both write forms; an order still open
// keeps its record at least OrderTTL, however short the retention.
func TestOrderTTLFollowsTheRetention(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	position.SetOrderTTL(30 * 24 * time.Hour)
	t.Cleanup(func() { position.SetOrderTTL(position.OrderTTL) })
	staged := pendingRecord("bot", "cid-staged")
	staged.Status = exchange.StatusFilled
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		return position.StageOrder(ctx, p, staged, true)
	}); err != nil {
		t.Fatal(err)
	}
	scripted := pendingRecord("bot", "cid-lua")
	scripted.Status = exchange.StatusCancelled
	w, err := position.NewOrderWrite(scripted, true)
	if err != nil {
		t.Fatal(err)
	}
	if err := redis.NewScript(position.OrderLua(1, 1)+"return 1").Run(ctx, rdb, w.Keys, w.Args...).Err(); err != nil {
		t.Fatal(err)
	}
	for _, cid := range []string{"cid-staged", "cid-lua"} {
		if ttl := rdb.TTL(ctx, store.BookOrder("bot", cid)).Val(); (30*24*time.Hour - ttl).Abs() > time.Minute {
			t.Errorf("%s: TTL %s, want 720h", cid, ttl)
		}
	}
	position.SetOrderTTL(10 * time.Minute)
	open := pendingRecord("bot", "cid-open")
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		return position.StageOrder(ctx, p, open, true)
	}); err != nil {
		t.Fatal(err)
	}
	if ttl := rdb.TTL(ctx, store.BookOrder("bot", "cid-open")).Val(); (position.OrderTTL - ttl).Abs() > time.Minute {
		t.Errorf("pending order under a 10 minute retention: TTL %s, want %s", ttl, position.OrderTTL)
	}
}

// orderAt stores a record last changed at ms and lists it as new.
func orderAt(t *testing.T, rdb redis.UniversalClient, bot, cid string, ms int64) {
	t.Helper()
	rec := pendingRecord(bot, cid)
	rec.Status, rec.CreatedAt, rec.UpdatedAt = exchange.StatusFilled, ms, ms
	if _, err := rdb.TxPipelined(context.Background(), func(p redis.Pipeliner) error {
		return position.StageOrder(context.Background(), p, rec, true)
	}); err != nil {
		t.Fatal(err)
	}
}

// CompactOrders drops, from the oldest end, IDs whose record is gone or older than the
// cutoff (deleting such a record) and stops at the first record it keeps.
func TestCompactOrders(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	const cutoff = 1_000_000
	orderAt(t, rdb, "bot", "o1", cutoff-3)     // old: dropped, record deleted
	orderAt(t, rdb, "bot", "o2", cutoff-2)     // expired below: dropped
	orderAt(t, rdb, "bot", "o3", cutoff)       // kept: the walk stops here
	orderAt(t, rdb, "bot", "o4", cutoff-1)     // old, but behind a kept one: stays
	rdb.Del(ctx, store.BookOrder("bot", "o2")) // as its TTL would
	orderAt(t, rdb, "other", "x1", cutoff-5)   // another bot: untouched
	n, err := position.CompactOrders(ctx, rdb, "bot", cutoff)
	if err != nil || n != 2 {
		t.Fatalf("compacted %d, %v; want 2", n, err)
	}
	if list := rdb.LRange(ctx, store.BookOrders("bot"), 0, -1).Val(); !reflect.DeepEqual(list, []string{"o4", "o3"}) {
		t.Errorf("list %v, want [o4 o3]", list)
	}
	if rdb.Exists(ctx, store.BookOrder("bot", "o1")).Val() != 0 || rdb.Exists(ctx, store.BookOrder("bot", "o3")).Val() != 1 {
		t.Error("records: o1 should be deleted, o3 kept")
	}
	if rdb.LLen(ctx, store.BookOrders("other")).Val() != 1 {
		t.Error("another bot's list changed")
	}
	// An order still open on its venue is never dropped, however old: the walk stops at it.
	orderAt(t, rdb, "opn", "p1", cutoff-9)
	open := pendingRecord("opn", "p2")
	open.Status, open.CreatedAt, open.UpdatedAt = exchange.StatusOpen, cutoff-8, cutoff-8
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { return position.StageOrder(ctx, p, open, true) }); err != nil {
		t.Fatal(err)
	}
	orderAt(t, rdb, "opn", "p3", cutoff-7)
	if n, err := position.CompactOrders(ctx, rdb, "opn", cutoff); err != nil || n != 1 {
		t.Fatalf("with an open order: compacted %d, %v; want 1", n, err)
	}
	// A long list is walked in several passes.
	for i := range 450 {
		orderAt(t, rdb, "long", fmt.Sprintf("l%03d", i), cutoff-1)
	}
	if n, err := position.CompactOrders(ctx, rdb, "long", cutoff); err != nil || n != 450 {
		t.Fatalf("long list: compacted %d, %v; want 450", n, err)
	}
	if rdb.Exists(ctx, store.BookOrders("long")).Val() != 0 {
		t.Error("the emptied list remains")
	}
	// Records stored as JSON (before the compact form) are compacted by the same rule: an
	// old finished one goes, a newer one stops the walk.
	for i, at := range []int64{cutoff - 2, cutoff + 1} {
		rec := pendingRecord("json", fmt.Sprintf("j%d", i))
		rec.Status, rec.CreatedAt, rec.UpdatedAt = exchange.StatusFilled, at, at
		data, _ := json.Marshal(rec)
		rdb.Set(ctx, store.BookOrder("json", rec.ClientOrderID), data, 0)
		rdb.LPush(ctx, store.BookOrders("json"), rec.ClientOrderID)
	}
	if n, err := position.CompactOrders(ctx, rdb, "json", cutoff); err != nil || n != 1 {
		t.Fatalf("JSON records: compacted %d, %v; want 1", n, err)
	}
	if rdb.Exists(ctx, store.BookOrder("json", "j0")).Val() != 0 || rdb.Exists(ctx, store.BookOrder("json", "j1")).Val() != 1 {
		t.Error("JSON records: j0 should be deleted, j1 kept")
	}
}

func pushTrades(t *testing.T, rdb redis.UniversalClient, bot string, closed ...int64) {
	t.Helper()
	for i, ms := range closed {
		data, _ := json.Marshal(position.Trade{ID: fmt.Sprintf("t%d", i), BotID: bot, ClosedAt: ms})
		rdb.RPush(context.Background(), store.BookTrades(bot), data)
	}
}

// ExpiredTrades is the head run closed before the cutoff; TrimTradesLua drops it only while
// the list's head is still the one read.
func TestExpiredTradesAndTrim(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	// t3 closed before the cutoff but after t2, which did not: it waits.
	pushTrades(t, rdb, "bot", 10, 20, 100, 30, 200)
	run, err := position.ExpiredTrades(ctx, rdb, "bot", 100, 10)
	var last position.Trade
	_ = json.Unmarshal([]byte(run.Last), &last)
	if err != nil || run.Count != 2 || last.ID != "t1" {
		t.Fatalf("run %+v, %v; want t0 t1", run, err)
	}
	if r, _ := position.ExpiredTrades(ctx, rdb, "bot", 100, 1); r.Count != 1 {
		t.Fatalf("limit 1: %d trades", r.Count)
	}
	trim := redis.NewScript(position.TrimTradesLua(1, 1) + "return trimmed")
	// Another compactor moved the head first: the stale run drops nothing.
	rdb.LPop(ctx, store.BookTrades("bot"))
	if n, err := trim.Run(ctx, rdb, []string{store.BookTrades("bot")}, run.Count, run.Last).Int(); err != nil || n != 0 {
		t.Fatalf("stale trim dropped %d, %v", n, err)
	}
	run, _ = position.ExpiredTrades(ctx, rdb, "bot", 100, 10)
	if n, err := trim.Run(ctx, rdb, []string{store.BookTrades("bot")}, run.Count, run.Last).Int(); err != nil || n != 1 {
		t.Fatalf("trim dropped %d, %v; want 1", n, err)
	}
	all, _ := position.AllTrades(ctx, rdb, "bot")
	if len(all) != 3 || all[0].ID != "t2" {
		t.Fatalf("list after trim %+v", all)
	}
}

// Trades answers at most the newest MaxTrades, oldest first.
func TestTradesIsBounded(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	items := make([]any, position.MaxTrades+3)
	for i := range items {
		items[i], _ = json.Marshal(position.Trade{ID: fmt.Sprintf("t%d", i), ClosedAt: int64(i)})
	}
	rdb.RPush(ctx, store.BookTrades("bot"), items...)
	got, err := position.NewBook(rdb).Trades(ctx, "bot")
	if err != nil || len(got) != position.MaxTrades || got[0].ID != "t3" || got[len(got)-1].ID != fmt.Sprintf("t%d", position.MaxTrades+2) {
		t.Fatalf("%d trades from %v, %v", len(got), got[0].ID, err)
	}
}

// TradeResultsIn is the newest limit of the trades closed in the range, oldest first in
// list order, read back from the list's newest end no further than the range's start, and
// among the newest MaxTrades alone.
func TestTradeResultsIn(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	items := make([]any, 2000)
	for i := range items {
		items[i], _ = json.Marshal(position.Trade{ID: fmt.Sprintf("t%d", i), NetPnl: httpapi.Num(decimal.New(int64(i), -2)), ClosedAt: int64(10 * i)})
	}
	rdb.RPush(ctx, store.BookTrades("bot"), items...)
	ids := func(rs []position.TradeResult) string {
		var out []string
		for _, r := range rs {
			out = append(out, r.ID+"="+r.NetPnl.String())
		}
		return strings.Join(out, " ")
	}
	for _, c := range []struct {
		from, to int64
		limit    int
		want     string
	}{
		{19_950, 20_000, 100, "t1995=19.95 t1996=19.96 t1997=19.97 t1998=19.98 t1999=19.99"},
		{100, 131, 100, "t10=0.1 t11=0.11 t12=0.12 t13=0.13"}, // the range's end is exclusive
		{0, 20_000, 2, "t1998=19.98 t1999=19.99"},
		{30_000, 40_000, 5, ""},
		{100, 200, 0, ""},
	} {
		got, err := position.TradeResultsIn(ctx, rdb, "bot", c.from, c.to, c.limit)
		if err != nil || ids(got) != c.want {
			t.Errorf("[%d, %d) limit %d: %q %v, want %q", c.from, c.to, c.limit, ids(got), err, c.want)
		}
	}
	// A read of the newest trades stops at the range's start: two pages (64, 128).
	hook := &storetest.Trips{}
	rdb.AddHook(hook)
	if got, _ := position.TradeResultsIn(ctx, rdb, "bot", 19_000, 20_000, 1000); len(got) != 100 {
		t.Fatalf("%d trades, want 100", len(got))
	}
	if trips := hook.Take(); len(trips) != 2 {
		t.Fatalf("round trips %q, want 2", trips)
	}
	// Past the newest MaxTrades nothing is read.
	more := make([]any, position.MaxTrades)
	for i := range more {
		more[i], _ = json.Marshal(position.Trade{ID: fmt.Sprintf("n%d", i), ClosedAt: int64(100_000 + i)})
	}
	rdb.RPush(ctx, store.BookTrades("bot"), more...)
	if got, err := position.TradeResultsIn(ctx, rdb, "bot", 0, 20_000, 10); err != nil || len(got) != 0 {
		t.Fatalf("beyond MaxTrades: %q %v", ids(got), err)
	}
}
