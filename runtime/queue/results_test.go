package queue_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

func TestPublishResultIndexesTheBotsSignals(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	publish := func(env queue.Envelope) {
		t.Helper()
		if err := queue.PublishResult(ctx, rdb, env, result.Result{Success: true, Timestamp: env.ReceivedAt + 5}); err != nil {
			t.Fatal(err)
		}
	}
	web := queue.Envelope{SignalID: "s-web", BotID: "bot-i", Source: queue.SourceWebhook,
		Signal: []byte(`{"action":"buy","symbol":"BTCUSDT"}`), ReceivedAt: 2000}
	manual := queue.Envelope{SignalID: "s-man", BotID: "bot-i", Source: queue.SourceManual,
		Signal: []byte(`{"type":"close","symbol":"BTC/USDT"}`), ReceivedAt: 3000}
	odd := queue.Envelope{SignalID: "s-odd", BotID: "bot-i", Source: queue.SourceWatcher, Signal: []byte(`not json`), ReceivedAt: 1000}
	for _, env := range []queue.Envelope{web, manual, odd, web} { // web twice: a re-published result
		publish(env)
	}
	publish(queue.Envelope{SignalID: "s-other", BotID: "bot-j", Source: queue.SourceWebhook, ReceivedAt: 500})
	got, err := queue.RecentSignals(ctx, rdb, "bot-i")
	if err != nil {
		t.Fatal(err)
	}
	want := []queue.SignalEntry{
		{SignalID: "s-man", Source: "manual", Action: "close", ReceivedAt: 3000},
		{SignalID: "s-web", Source: "webhook", Action: "buy", ReceivedAt: 2000},
		{SignalID: "s-odd", Source: "watcher", ReceivedAt: 1000},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("index %+v, want %+v", got, want)
	}
	if ttl := rdb.TTL(ctx, store.BotRecent("bot-i")).Val(); (queue.ResultTTL() - ttl).Abs() > time.Minute {
		t.Fatalf("index TTL %s, want %s", ttl, queue.ResultTTL())
	}
	// Past MaxBotSignals the oldest leave: of 3 + 1,000 signals, the first three.
	for i := range queue.MaxBotSignals {
		publish(queue.Envelope{SignalID: fmt.Sprintf("s-%04d", i), BotID: "bot-i", Source: queue.SourceWebhook,
			ReceivedAt: int64(4000 + i)})
	}
	got, err = queue.RecentSignals(ctx, rdb, "bot-i")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != queue.MaxBotSignals || got[0].SignalID != fmt.Sprintf("s-%04d", queue.MaxBotSignals-1) ||
		got[len(got)-1].SignalID != "s-0000" {
		t.Fatalf("capped index: %d entries, newest %+v, oldest %+v", len(got), got[0], got[len(got)-1])
	}
}

// NewestSignals merges the newest entries of several bots' indexes, newest first, in one
// round trip.
func TestNewestSignals(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	for _, e := range []queue.Envelope{
		{SignalID: "a1", BotID: "bot-a", ReceivedAt: 1000}, {SignalID: "a2", BotID: "bot-a", ReceivedAt: 4000},
		{SignalID: "a3", BotID: "bot-a", ReceivedAt: 6000},
		{SignalID: "b1", BotID: "bot-b", ReceivedAt: 5000}, {SignalID: "b2", BotID: "bot-b", ReceivedAt: 6000},
		{SignalID: "c1", BotID: "bot-c", ReceivedAt: 9000},
	} {
		e.Source, e.Signal = queue.SourceWebhook, []byte(`{"action":"buy"}`)
		if err := queue.PublishResult(ctx, rdb, e, result.Result{Success: true}); err != nil {
			t.Fatal(err)
		}
	}
	trips := &storetest.Trips{}
	rdb.AddHook(trips)
	got, err := queue.NewestSignals(ctx, rdb, []string{"bot-a", "bot-b", "bot-none"}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(trips.Take()); n != 1 {
		t.Fatalf("%d round trips, want 1", n)
	}
	// bot-c is not asked for. Newest first; b2 and a3 tie at 6000: the larger signal ID
	// first, as one bot's index orders its ties.
	var ids []string
	for _, s := range got {
		ids = append(ids, s.BotID+"/"+s.SignalID)
		if s.Action != "buy" || s.Source != queue.SourceWebhook {
			t.Fatalf("entry %+v", s)
		}
	}
	if want := []string{"bot-b/b2", "bot-a/a3", "bot-b/b1"}; !reflect.DeepEqual(ids, want) {
		t.Fatalf("%v, want %v", ids, want)
	}
	none, err := queue.NewestSignals(ctx, rdb, nil, 3)
	if err != nil || none == nil || len(none) != 0 {
		t.Fatalf("no bots: %v, %v", none, err)
	}
}

// GetResult answers the result under the partition key, else the one under the legacy key
// (stored by an older version, kept ResultTTL), in one round trip either way; the
// partition key wins when both exist.
func TestGetResultFallsBackToTheLegacyKey(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	legacy := func(id, msg string) {
		t.Helper()
		if err := rdb.Set(ctx, store.LegacySignalResult(id), `{"signalId":"`+id+`","success":true,"message":"`+msg+`"}`, time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	newID := queue.NewSignalID("bot-r")
	if err := queue.PublishResult(ctx, rdb, queue.Envelope{SignalID: newID, BotID: "bot-r"}, result.Result{Success: true, Message: "new"}); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, store.SignalResult(newID)).Val(); n != 1 {
		t.Fatalf("no result under %s", store.SignalResult(newID))
	}
	legacy("old-1", "old")
	legacy("both-1", "legacy")
	if err := rdb.Set(ctx, store.SignalResult("both-1"), `{"signalId":"both-1","success":true,"message":"partition"}`, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	trips := &storetest.Trips{}
	rdb.AddHook(trips)
	for id, want := range map[string]string{newID: "new", "old-1": "old", "both-1": "partition", "none-1": ""} {
		st, err := queue.GetResult(ctx, rdb, id)
		if err != nil || st.Found != (want != "") || st.Result.Message != want {
			t.Fatalf("GetResult(%s) = %+v, %v; want message %q", id, st, err, want)
		}
		if got := trips.Take(); len(got) != 1 {
			t.Fatalf("GetResult(%s): %d round trips %v, want 1", id, len(got), got)
		}
	}
	if err := rdb.Set(ctx, store.LegacySignalResult("bad-1"), `not json`, time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := queue.GetResult(ctx, rdb, "bad-1"); err == nil {
		t.Fatal("a corrupt legacy result read without error")
	}
}

// GetResult of a stored result: the partition key and the legacy key, two GETs in one
// pipelined round trip.
func BenchmarkGetResult(b *testing.B) {
	rdb, id := storedResult(b)
	ctx := context.Background()
	for b.Loop() {
		if st, err := queue.GetResult(ctx, rdb, id); err != nil || !st.Found {
			b.Fatal(st, err)
		}
	}
}

// The reference: one GET of the result key alone, as a reader without the fallback would.
func BenchmarkGetResultReference(b *testing.B) {
	rdb, id := storedResult(b)
	ctx := context.Background()
	for b.Loop() {
		if _, err := rdb.Get(ctx, store.SignalResult(id)).Bytes(); err != nil {
			b.Fatal(err)
		}
	}
}

// storedResult is a Redis holding one signal's result, and the signal's ID.
func storedResult(b *testing.B) (redis.UniversalClient, string) {
	_, rdb := storetest.New(b)
	id := queue.NewSignalID("bench-bot")
	if err := queue.PublishResult(context.Background(), rdb, queue.Envelope{SignalID: id, BotID: "bench-bot"}, result.Result{Success: true}); err != nil {
		b.Fatal(err)
	}
	return rdb, id
}

// A signal's first stored result stays its result: a concurrent second attempt that reached
// another outcome (it planned from a book the first had already changed) does not replace it.
func TestPublishResultKeepsTheFirstResult(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	env := queue.Envelope{SignalID: queue.NewSignalID("bot-k"), BotID: "bot-k", Source: queue.SourceWebhook, ReceivedAt: 1000}
	if err := queue.PublishResult(ctx, rdb, env, result.Result{Success: true, Message: "filled", Timestamp: 1005}); err != nil {
		t.Fatal(err)
	}
	if err := queue.PublishResult(ctx, rdb, env, result.Result{Success: false, Code: "POSITION_NOT_FOUND", Timestamp: 1009}); err != nil {
		t.Fatal(err)
	}
	st, err := queue.GetResult(ctx, rdb, env.SignalID)
	if err != nil {
		t.Fatal(err)
	}
	if !st.Found || !st.Result.Success || st.Result.Message != "filled" {
		t.Fatalf("stored result %+v, want the first one (success, filled)", st)
	}
	if ttl := rdb.TTL(ctx, store.SignalResult(env.SignalID)).Val(); ttl <= 0 || ttl > queue.ResultTTL() {
		t.Fatalf("result TTL %v, want (0, %v]", ttl, queue.ResultTTL())
	}
}

// The index written before the list (a sorted set of JSON members scored by the time) is
// read beside it until it expires: its entries and the list's come out together, newest
// first, a signal in both once.
func TestRecentSignalsReadsTheSortedSetBeforeTheList(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	old := store.BotSignals("bot-u")
	rdb.ZAdd(ctx, old, redis.Z{Score: 1000, Member: `{"id":"s-1","source":"webhook","action":"buy"}`},
		redis.Z{Score: 2000, Member: `{"id":"s-2","source":"manual","action":"close"}`})
	for _, env := range []queue.Envelope{
		{SignalID: "s-2", BotID: "bot-u", Source: queue.SourceManual, Signal: []byte(`{"type":"close"}`), ReceivedAt: 2000},
		{SignalID: "s-3", BotID: "bot-u", Source: queue.SourceWebhook, Signal: []byte(`{"action":"sell"}`), ReceivedAt: 3000},
	} {
		if err := queue.PublishResult(ctx, rdb, env, result.Result{Success: true}); err != nil {
			t.Fatal(err)
		}
	}
	got, err := queue.RecentSignals(ctx, rdb, "bot-u")
	if err != nil {
		t.Fatal(err)
	}
	want := []queue.SignalEntry{
		{SignalID: "s-3", Source: "webhook", Action: "sell", ReceivedAt: 3000},
		{SignalID: "s-2", Source: "manual", Action: "close", ReceivedAt: 2000},
		{SignalID: "s-1", Source: "webhook", Action: "buy", ReceivedAt: 1000},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("index %+v, want %+v", got, want)
	}
	if n := rdb.LLen(ctx, store.BotRecent("bot-u")).Val(); n != 2 {
		t.Fatalf("the list holds %d entries, want 2 (the sorted set is never written)", n)
	}
}
