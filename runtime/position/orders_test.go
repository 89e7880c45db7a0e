package position_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

func pendingRecord(bot, cid string) position.OrderRecord {
	return position.OrderRecord{ClientOrderID: cid, SignalID: "sig-1", BotID: bot, Leg: "close:BTC/USDT",
		Symbol: "BTC/USDT", Kind: exchange.Futures, Side: exchange.SideSell, Type: exchange.Limit,
		Status: exchange.StatusPending, Amount: httpapi.Num(testkit.D("0.015")), Price: httpapi.Num(testkit.D("65000.5")),
		ReduceOnly: true, Leverage: 3, CreatedAt: 1_795_000_000_000, UpdatedAt: 1_795_000_000_000}
}

// stored checks that rec is the bot's record under its client order ID, kept for OrderTTL,
// and that the bot's order list is want.
func stored(t *testing.T, rdb redis.UniversalClient, rec position.OrderRecord, want ...string) {
	t.Helper()
	ctx := context.Background()
	got, err := position.ReadOrder(ctx, rdb, rec.BotID, rec.ClientOrderID)
	if err != nil || got == nil {
		t.Fatalf("record: %v, %v", got, err)
	}
	// Decimals compared as their JSON: 0 decodes to a different but equal value.
	g, _ := json.Marshal(*got)
	w, _ := json.Marshal(rec)
	if string(g) != string(w) {
		t.Fatalf("record = %s, want %s", g, w)
	}
	if ttl := rdb.TTL(ctx, store.BookOrder(rec.BotID, rec.ClientOrderID)).Val(); (position.OrderTTL - ttl).Abs() > time.Minute {
		t.Errorf("record TTL %s, want %s", ttl, position.OrderTTL)
	}
	if list := rdb.LRange(ctx, store.BookOrders(rec.BotID), 0, -1).Val(); !reflect.DeepEqual(list, want) {
		t.Errorf("order list %v, want %v", list, want)
	}
}

func TestStageOrderWritesTheRecordAndListsItOnce(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	rdb.LPush(ctx, store.BookOrders("bot"), "older")
	rec := pendingRecord("bot", "cid-1")
	stage := func(isNew bool) {
		t.Helper()
		if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			return position.StageOrder(ctx, p, rec, isNew)
		}); err != nil {
			t.Fatal(err)
		}
	}
	stage(true)
	stored(t, rdb, rec, "cid-1", "older")

	// A later change rewrites the record (and renews its TTL) without listing it again.
	rdb.Expire(ctx, store.BookOrder("bot", "cid-1"), time.Hour)
	if _, err := rec.ApplyExchange(exchange.Order{ID: "X1", Status: exchange.StatusFilled,
		FilledAmount: testkit.D("0.015"), AvgPrice: testkit.D("65000.5"), Fee: testkit.D("0.9750075"), FeeAsset: "USDT"},
		1_795_000_000_100); err != nil {
		t.Fatal(err)
	}
	stage(false)
	stored(t, rdb, rec, "cid-1", "older")
}

func TestStageOrderKeepsTheNewestMaxOrders(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	ids := make([]any, position.MaxOrders)
	for i := range ids {
		ids[i] = "old-" + strconv.Itoa(i)
	}
	rdb.RPush(ctx, store.BookOrders("bot"), ids...)
	rec := pendingRecord("bot", "newest")
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		return position.StageOrder(ctx, p, rec, true)
	}); err != nil {
		t.Fatal(err)
	}
	list := rdb.LRange(ctx, store.BookOrders("bot"), 0, -1).Val()
	if len(list) != position.MaxOrders || list[0] != "newest" || list[len(list)-1] != fmt.Sprint(ids[len(ids)-2]) {
		t.Fatalf("list of %d from %s to %s, want %d from newest to %s",
			len(list), list[0], list[len(list)-1], position.MaxOrders, ids[len(ids)-2])
	}
}

// A caller's script makes the same write with OrderLua at its own offsets, after and
// depending on writes of its own, all or nothing.
func TestOrderLuaInACallersScript(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	script := redis.NewScript(`
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return 0 end
` + position.OrderLua(2, 3) + `
return 1
`)
	run := func(rec position.OrderRecord, isNew bool) int {
		t.Helper()
		w, err := position.NewOrderWrite(rec, isNew)
		if err != nil {
			t.Fatal(err)
		}
		// The guard is in the bot's slot, as a caller's key must be (the executor's is the
		// signal's progress record).
		keys := append([]string{store.SignalProgress("bot", "guard")}, w.Keys...)
		args := append([]any{rec.ClientOrderID, "1"}, w.Args...)
		n, err := script.Run(ctx, rdb, keys, args...).Int()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	rdb.LPush(ctx, store.BookOrders("bot"), "older")
	rec := pendingRecord("bot", "cid-1")
	if run(rec, true) != 1 {
		t.Fatal("the script did not write")
	}
	stored(t, rdb, rec, "cid-1", "older")

	// The script's own condition fails: the record is not written.
	changed := rec
	changed.Status = exchange.StatusOpen
	if run(changed, true) != 0 {
		t.Fatal("the script wrote past its guard")
	}
	stored(t, rdb, rec, "cid-1", "older")
}

func TestOrderPageNewestFirstWithStatusFilter(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	book := position.NewBook(rdb)
	// Orders c0 … c9 listed in that order, so c9 is the newest; every third is open.
	for i := range 10 {
		rec := pendingRecord("bot-p", fmt.Sprintf("c%d", i))
		if i%3 == 0 {
			rec.Status = exchange.StatusOpen
		}
		if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { return position.StageOrder(ctx, p, rec, true) }); err != nil {
			t.Fatal(err)
		}
	}
	// An ID whose record expired is skipped.
	rdb.LPush(ctx, store.BookOrders("bot-p"), "gone")
	cids := func(p position.OrderPage) string {
		out := ""
		for _, o := range p.Orders {
			out += o.ClientOrderID + " "
		}
		return out + "next=" + p.Next
	}
	var got []string
	q := position.OrderQuery{Limit: 4}
	for {
		p, err := book.OrderPage(ctx, "bot-p", q)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, cids(p))
		if p.Next == "" {
			break
		}
		q.After = p.Next
	}
	want := []string{"c9 c8 c7 c6 next=c6", "c5 c4 c3 c2 next=c2", "c1 c0 next="}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("pages %q, want %q", got, want)
	}
	// Open ones: c9, c6, c3, c0 (i % 3 == 0), two a page.
	open := position.OrderQuery{Limit: 2, Statuses: []exchange.OrderStatus{exchange.StatusOpen, exchange.StatusPartiallyFilled}}
	p1, err := book.OrderPage(ctx, "bot-p", open)
	if err != nil || cids(p1) != "c9 c6 next=c6" {
		t.Fatalf("open page 1: %s %v", cids(p1), err)
	}
	open.After = p1.Next
	p2, err := book.OrderPage(ctx, "bot-p", open)
	if err != nil || cids(p2) != "c3 c0 next=" {
		t.Fatalf("open page 2: %s %v", cids(p2), err)
	}
	if _, err := book.OrderPage(ctx, "bot-p", position.OrderQuery{Limit: 2, After: "c-unknown"}); err != position.ErrCursorGone {
		t.Fatalf("unknown cursor: %v", err)
	}
	// Orders (the read API's and trading's) is the first page.
	all, err := book.Orders(ctx, "bot-p", 3)
	if err != nil || len(all) != 3 || all[0].ClientOrderID != "c9" || all[2].ClientOrderID != "c7" {
		t.Fatalf("Orders: %+v %v", all, err)
	}
}
