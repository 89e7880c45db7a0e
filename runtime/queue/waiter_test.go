package queue

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

func newTestWaiter(t testing.TB, rdb redis.UniversalClient, id string) *Waiter {
	t.Helper()
	w, err := NewWaiter(context.Background(), rdb, id)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = w.Close() })
	return w
}

func receive(t *testing.T, ch <-chan result.Result) result.Result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(10 * time.Second):
		t.Fatal("no result")
		return result.Result{}
	}
}

func TestPublishResultAndWait(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	w := newTestWaiter(t, rdb, "webhookd-1")
	if w.Channel() != store.ReplyChannel("webhookd-1") {
		t.Fatalf("channel %q", w.Channel())
	}
	env := Envelope{SignalID: "sig-1", BotID: "bot-1", Priority: PriorityWebhook, ReplyTo: w.Channel()}
	ch, cancel := w.Register(env.SignalID)
	defer cancel()
	res := result.Result{Success: true, Message: "filled", Timestamp: 42}
	if err := PublishResult(ctx, rdb, env, res); err != nil {
		t.Fatal(err)
	}
	got := receive(t, ch)
	if got.SignalID != "sig-1" || got.BotID != "bot-1" || !got.Success || got.Message != "filled" || got.Timestamp != 42 {
		t.Errorf("received %+v", got)
	}
	if n := w.Waiting(); n != 0 {
		t.Errorf("%d waits left after delivery", n)
	}

	st, err := GetResult(ctx, rdb, "sig-1")
	stored, ok := st.Result, st.Found
	if err != nil || !ok || stored.Message != "filled" {
		t.Fatalf("GetResult = %+v, %v, %v", stored, ok, err)
	}
	ttl := rdb.TTL(ctx, store.SignalResult("sig-1")).Val()
	if ttl < ResultTTL()-time.Minute || ttl > ResultTTL() {
		t.Errorf("result TTL %s, want about %s", ttl, ResultTTL())
	}
	if st, err := GetResult(ctx, rdb, "no-such-signal"); st.Found || err != nil {
		t.Errorf("GetResult of a missing signal = %v, %v", ok, err)
	}

	// A failure result keeps its code; nobody waiting (no ReplyTo) still stores it.
	fail := result.Failure("sig-2", "bot-1", errs.New(errs.ExchangeError, "exchange down"), 7)
	if err := PublishResult(ctx, rdb, Envelope{SignalID: "sig-2", BotID: "bot-1"}, fail); err != nil {
		t.Fatal(err)
	}
	if st, _ := GetResult(ctx, rdb, "sig-2"); !st.Found || st.Result.Code != errs.ExchangeError {
		t.Errorf("stored failure %+v", got)
	}
	if err := PublishResult(ctx, rdb, env, result.Result{SignalID: "other"}); err == nil {
		t.Error("a result for another signal was accepted")
	}
}

// A wait cancelled before the result arrives receives nothing and leaves nothing behind.
func TestWaiterCancelledGetsNothing(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	w := newTestWaiter(t, rdb, "webhookd-2")
	gone, cancelGone := w.Register("gone")
	later, cancelLater := w.Register("later")
	defer cancelLater()
	cancelGone()
	cancelGone() // idempotent
	for _, id := range []string{"gone", "later"} {
		if err := PublishResult(ctx, rdb, Envelope{SignalID: id, BotID: "b", ReplyTo: w.Channel()}, result.Result{Success: true}); err != nil {
			t.Fatal(err)
		}
	}
	receive(t, later) // messages arrive in order: "gone" was dispatched before this
	select {
	case r := <-gone:
		t.Errorf("cancelled wait received %+v", r)
	default:
	}
	if n := w.Waiting(); n != 0 {
		t.Errorf("%d waits left", n)
	}
}

// Thousands of concurrent waits over the one subscription, two waits on one signal included.
func TestWaiterManyConcurrent(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	w := newTestWaiter(t, rdb, "webhookd-3")
	const n = 3000
	chans := make([]<-chan result.Result, n)
	for i := range chans {
		ch, cancel := w.Register(fmt.Sprintf("s-%d", i))
		defer cancel()
		chans[i] = ch
	}
	dup, cancelDup := w.Register("s-0")
	defer cancelDup()
	errc := make(chan error, 8)
	for g := 0; g < 8; g++ {
		go func() {
			for i := g; i < n; i += 8 {
				id := fmt.Sprintf("s-%d", i)
				if err := PublishResult(ctx, rdb, Envelope{SignalID: id, BotID: "b", ReplyTo: w.Channel()}, result.Result{Success: true}); err != nil {
					errc <- err
					return
				}
			}
			errc <- nil
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-errc; err != nil {
			t.Fatal(err)
		}
	}
	for i, ch := range chans {
		if r := receive(t, ch); r.SignalID != fmt.Sprintf("s-%d", i) {
			t.Fatalf("wait %d got %s", i, r.SignalID)
		}
	}
	if r := receive(t, dup); r.SignalID != "s-0" {
		t.Errorf("second wait on s-0 got %s", r.SignalID)
	}
}

// After the subscription connection is killed, a result published while it was down (here:
// stored without a message, as if the message was lost) still reaches its wait.
func TestWaiterResyncAfterDroppedSubscription(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	w := newTestWaiter(t, rdb, "webhookd-4")
	ch, cancel := w.Register("lost-msg")
	defer cancel()
	old, cancelOld := w.Register("legacy-msg")
	defer cancelOld()
	// The result is stored but its message never comes; another's is under the legacy key,
	// as an older version stored it.
	if err := PublishResult(ctx, rdb, Envelope{SignalID: "lost-msg", BotID: "b"}, result.Result{Success: true, Message: "done"}); err != nil {
		t.Fatal(err)
	}
	rdb.Set(ctx, store.LegacySignalResult("legacy-msg"), `{"signalId":"legacy-msg","success":true,"message":"done before"}`, time.Minute)
	if err := storetest.ForEachNode(ctx, rdb, func(ctx context.Context, n *redis.Client) error {
		return n.ClientKillByFilter(ctx, "TYPE", "pubsub").Err()
	}); err != nil {
		t.Fatal(err)
	}
	if r := receive(t, ch); r.Message != "done" {
		t.Errorf("got %+v", r)
	}
	if r := receive(t, old); r.Message != "done before" {
		t.Errorf("legacy: got %+v", r)
	}
	if w.resyncs.Load() < 1 {
		t.Error("no resync recorded")
	}
	// And the re-established subscription carries messages again.
	ch2, cancel2 := w.Register("after")
	defer cancel2()
	testkit.EventuallyTrue(t, 10*time.Second, "published after reconnect", func() bool {
		_ = PublishResult(ctx, rdb, Envelope{SignalID: "after", BotID: "b", ReplyTo: w.Channel()}, result.Result{Success: true})
		select {
		case r := <-ch2:
			return r.SignalID == "after"
		case <-time.After(100 * time.Millisecond):
			return false
		}
	})
}

func TestWaiterClosesWithContext(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := NewWaiter(ctx, rdb, "webhookd-5")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	testkit.EventuallyTrue(t, 10*time.Second, "waiter closed", w.isClosed)
	_ = w.Close()
	ch, c := w.Register("x")
	defer c()
	select {
	case <-ch:
		t.Error("closed waiter delivered")
	default:
	}
}

// Idempotent runs a signal once; a redelivered one re-publishes the stored result.
func TestIdempotentSkipsDone(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	w := newTestWaiter(t, rdb, "webhookd-6")
	var calls int
	h := Idempotent(rdb, func(ctx context.Context, env Envelope) error {
		calls++
		return PublishResult(ctx, rdb, env, result.Result{Success: true, Message: "placed"})
	})
	env := Envelope{SignalID: "once", BotID: "b", Priority: PriorityWebhook, ReplyTo: w.Channel()}
	for i := 0; i < 2; i++ { // the second call is a redelivery
		ch, cancel := w.Register(env.SignalID)
		if err := h(ctx, env); err != nil {
			t.Fatal(err)
		}
		if r := receive(t, ch); r.Message != "placed" {
			t.Errorf("delivery %d: %+v", i, r)
		}
		cancel()
	}
	if calls != 1 {
		t.Errorf("inner handler ran %d times, want 1", calls)
	}
}
