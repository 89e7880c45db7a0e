package queue

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// Pre-filled streams: priority-1 signals of a partition are served before its older
// priority-4 ones, each priority in arrival order. One slot (MaxInFlight 1) makes the
// partition's order total, so the scheduler's choice between bots is visible.
func TestPriorityServedFirst(t *testing.T) {
	_, rdb := storetest.New(t)
	bots := botsIn(7, 2)
	a, b := bots[0], bots[1]
	for i := 0; i < 3; i++ {
		mustEnqueue(t, rdb, testEnv(a, i, PriorityWebhook))
	}
	for i := 0; i < 2; i++ {
		mustEnqueue(t, rdb, testEnv(b, i, PriorityWebhook))
	}
	mustEnqueue(t, rdb, testEnv(a, 3, PriorityManualClose))
	mustEnqueue(t, rdb, testEnv(b, 2, PriorityManualClose))

	rec := &recorder{}
	startConsumer(t, dedicated(t, rdb), Options{MaxInFlight: 1}, func(_ context.Context, env Envelope) error {
		rec.add(env.SignalID)
		return nil
	})
	testkit.EventuallyTrue(t, 20*time.Second, "7 signals handled", func() bool { return rec.len() == 7 })
	want := []string{a + "/3", b + "/2", a + "/0", a + "/1", a + "/2", b + "/0", b + "/1"}
	if got := rec.snapshot(); !slices.Equal(got, want) {
		t.Fatalf("order:\n got %v\nwant %v", got, want)
	}
}

// A priority-1 signal that arrives while a priority-4 backlog is being worked is served
// next, ahead of the already buffered priority-4 signals (one slot, as above).
func TestPriorityPreemptsBacklog(t *testing.T) {
	_, rdb := storetest.New(t)
	bots := botsIn(3, 2)
	a, b := bots[0], bots[1]
	for i := 0; i < 5; i++ {
		mustEnqueue(t, rdb, testEnv(a, i, PriorityWebhook))
	}
	entered, proceed := make(chan struct{}), make(chan struct{})
	rec := &recorder{}
	startConsumer(t, dedicated(t, rdb), Options{MaxInFlight: 1}, func(_ context.Context, env Envelope) error {
		rec.add(env.SignalID)
		if env.SignalID == a+"/0" {
			close(entered)
			<-proceed
		}
		return nil
	})
	<-entered
	mustEnqueue(t, rdb, testEnv(b, 0, PriorityManualClose))
	// The reader runs beside the handler: let it take the new entry in (delivered, then
	// routed a moment later) before the signal in hand ends.
	testkit.EventuallyTrue(t, 10*time.Second, "the priority-1 entry read", func() bool {
		return rdb.XPending(context.Background(), StreamOf(b, PriorityManualClose), Group).Val().Count == 1
	})
	time.Sleep(100 * time.Millisecond)
	close(proceed)
	testkit.EventuallyTrue(t, 20*time.Second, "6 signals handled", func() bool { return rec.len() == 6 })
	want := []string{a + "/0", b + "/0", a + "/1", a + "/2", a + "/3", a + "/4"}
	if got := rec.snapshot(); !slices.Equal(got, want) {
		t.Fatalf("order:\n got %v\nwant %v", got, want)
	}
}

// A Handler error retries the same signal; the bot's later signals wait for it.
func TestHandlerErrorRetriesSameSignal(t *testing.T) {
	_, rdb := storetest.New(t)
	bot := "bot-retry"
	for i := 0; i < 3; i++ {
		mustEnqueue(t, rdb, testEnv(bot, i, PriorityStrategyEntry))
	}
	rec := &recorder{}
	failures := 3
	r := startConsumer(t, dedicated(t, rdb), Options{}, func(_ context.Context, env Envelope) error {
		rec.add(env.SignalID)
		if env.SignalID == bot+"/0" && failures > 0 {
			failures-- // only this partition's goroutine calls with this bot: no race
			return errors.New("redis down")
		}
		return nil
	})
	testkit.EventuallyTrue(t, 20*time.Second, "6 handler calls", func() bool { return rec.len() == 6 })
	want := []string{bot + "/0", bot + "/0", bot + "/0", bot + "/0", bot + "/1", bot + "/2"}
	if got := rec.snapshot(); !slices.Equal(got, want) {
		t.Fatalf("calls:\n got %v\nwant %v", got, want)
	}
	if n := metricValue(t, r.c.m.handlerErrors.WithLabelValues("3")); n != 3 {
		t.Errorf("handler errors metric = %v, want 3", n)
	}
	// A signal counts as processed once its acknowledgement is confirmed, just after its
	// handler call.
	processed := r.c.m.processed.WithLabelValues("3")
	testkit.EventuallyTrue(t, 5*time.Second, "3 signals processed", func() bool { return metricValue(t, processed) >= 3 })
	if n := metricValue(t, processed); n != 3 {
		t.Errorf("processed metric = %v, want 3", n)
	}
}

// Undecodable entries are dead-lettered and leave the stream; an entry in the wrong partition is moved
// to its own and executed once; executed entries leave the streams.
func TestMalformedAndMisplacedEntries(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	bot := botsIn(5, 1)[0]
	other := botsIn(6, 1)[0]
	s := store.QueueStream(5, int(PriorityWebhook))
	for _, vals := range [][]any{{EnvelopeField, "not json"}, {"x", "no envelope field"}, {EnvelopeField, `{"signalId":"","botId":"b","priority":4}`}} {
		if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: s, Values: vals}).Err(); err != nil {
			t.Fatal(err)
		}
	}
	misplaced, _ := jsonOf(testEnv(other, 0, PriorityWebhook))
	if err := rdb.XAdd(ctx, &redis.XAddArgs{Stream: s, Values: []any{EnvelopeField, misplaced}}).Err(); err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, rdb, testEnv(bot, 0, PriorityWebhook))

	rec := &recorder{}
	r := startConsumer(t, dedicated(t, rdb), Options{}, func(_ context.Context, env Envelope) error {
		if PartitionOf(env.BotID) == 5 || env.BotID == other {
			rec.add(env.SignalID)
		}
		return nil
	})
	testkit.EventuallyTrue(t, 20*time.Second, "2 signals handled", func() bool { return rec.len() == 2 })
	got := rec.snapshot()
	slices.Sort(got)
	if want := []string{bot + "/0", other + "/0"}; !slices.Equal(got, want) {
		t.Fatalf("handled %v, want %v", got, want)
	}
	testkit.EventuallyTrue(t, 10*time.Second, "malformed entries dead-lettered", func() bool {
		return metricValue(t, r.c.m.malformed) == 3 && metricValue(t, r.c.m.deadLetters.WithLabelValues(ReasonMalformed)) == 3
	})
	dls, err := ListDeadLetters(ctx, rdb, "", 10)
	if err != nil || len(dls) != 3 {
		t.Fatalf("dead letters %v, %v; want 3", dls, err)
	}
	for _, dl := range dls {
		if dl.Reason != ReasonMalformed || dl.Partition != 5 || dl.Entry == "" || dl.LastError == "" {
			t.Errorf("malformed dead letter %+v", dl)
		}
	}
	if _, err := RetryDeadLetter(ctx, rdb, dls[0].ID, false); err == nil {
		t.Error("a malformed dead letter was retried")
	}
	testkit.EventuallyTrue(t, 10*time.Second, "streams emptied", func() bool {
		n := int64(0)
		for _, p := range Priorities {
			n += rdb.XLen(ctx, store.QueueStream(5, int(p))).Val()
			n += rdb.XLen(ctx, StreamOf(other, p)).Val()
		}
		return n == 0
	})
}

// Shutdown lets the signal in hand finish (its context is not cancelled), acknowledges it,
// releases the leases and leaves the heartbeat set.
func TestShutdownFinishesInFlight(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	bot := "bot-shutdown"
	mustEnqueue(t, rdb, testEnv(bot, 0, PriorityStrategyExit))
	entered, proceed := make(chan struct{}), make(chan struct{})
	ctxErr := make(chan error, 1)
	r := startConsumer(t, dedicated(t, rdb), Options{Name: "shutdown"}, func(hctx context.Context, env Envelope) error {
		close(entered)
		<-proceed
		ctxErr <- hctx.Err()
		return nil
	})
	<-entered
	r.cancel()
	close(proceed)
	r.stop(t)
	if err := <-ctxErr; err != nil {
		t.Errorf("handler context cancelled on shutdown: %v", err)
	}
	s := StreamOf(bot, PriorityStrategyExit)
	if n := rdb.XLen(ctx, s).Val(); n != 0 {
		t.Errorf("stream still holds %d entries", n)
	}
	if p := rdb.XPending(ctx, s, Group).Val(); p.Count != 0 {
		t.Errorf("%d entries still pending", p.Count)
	}
	for p := 0; p < Partitions; p++ {
		if v := rdb.Exists(ctx, store.QueueLease(p)).Val(); v != 0 {
			t.Errorf("lease of partition %d not released", p)
		}
	}
	if _, err := rdb.ZScore(ctx, store.QueueExecutors(), "shutdown").Result(); !errors.Is(err, redis.Nil) {
		t.Errorf("still in the heartbeat set: %v", err)
	}
}

// The collectors register cleanly and the depth gauge sums XLEN per priority.
func TestMetricsCollectors(t *testing.T) {
	_, rdb := storetest.New(t)
	for i := 0; i < 3; i++ {
		mustEnqueue(t, rdb, testEnv(botsIn(i, 1)[0], i, PriorityManualClose))
	}
	mustEnqueue(t, rdb, testEnv("bot-x", 9, PriorityWebhook))
	c := NewConsumer(rdb, Options{Logger: testLogger(t)})
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c.Collectors()...)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	depth := map[string]float64{}
	for _, f := range families {
		if f.GetName() != "sigops_queue_depth" {
			continue
		}
		for _, m := range f.GetMetric() {
			depth[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue()
		}
	}
	want := map[string]float64{"1": 3, "2": 0, "3": 0, "4": 1}
	for k, v := range want {
		if depth[k] != v {
			t.Errorf("depth %v, want %v", depth, want)
			break
		}
	}
}

// A dedicated client has at least MinPoolSize connections, and a larger pool asked for stays.
func TestDedicatedClientPool(t *testing.T) {
	srv, _ := storetest.New(t)
	o := func(pool int) store.Options {
		return store.Options{Addr: srv.Addr, ClusterAddrs: srv.ClusterAddrs, PoolSize: pool}
	}
	for _, tc := range []struct {
		o    store.Options
		want int
	}{
		{o(0), MinPoolSize},
		{o(4), MinPoolSize},
		{o(MinPoolSize + 10), MinPoolSize + 10},
	} {
		c, err := DedicatedClient(context.Background(), tc.o)
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := poolSize(c); !ok || got != tc.want {
			t.Errorf("pool size %d (%v), want %d", got, ok, tc.want)
		}
		_ = c.Close()
	}
}

func TestEnqueueValidates(t *testing.T) {
	_, rdb := storetest.New(t)
	for _, env := range []Envelope{
		{BotID: "b", Priority: 1},
		{SignalID: "a\nb", BotID: "b", Priority: 1},
		{SignalID: "s", Priority: 1},
		{SignalID: "s", BotID: "b", Priority: 5},
		{SignalID: "s", BotID: "b"},
	} {
		if _, err := Enqueue(context.Background(), rdb, env); err == nil {
			t.Errorf("Enqueue(%+v) accepted", env)
		}
	}
}
