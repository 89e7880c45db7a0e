package queue

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// Several consumers, instances joining and one leaving while signals flow: every bot's
// signals run in arrival order, never two at once, each exactly once.
func TestPerBotOrderAndExclusivity(t *testing.T) {
	_, rdb := storetest.New(t)
	const bots, perBot = 50, 40
	type botState struct {
		inFlight atomic.Int32
		mu       sync.Mutex
		seqs     []int
	}
	state := map[string]*botState{}
	var ids []string
	for i := 0; i < bots; i++ {
		id := "order-bot-" + string(rune('A'+i%26)) + string(rune('a'+i/26))
		ids = append(ids, id)
		state[id] = &botState{}
	}
	var overlaps, handled atomic.Int64
	h := func(_ context.Context, env Envelope) error {
		st := state[env.BotID]
		if st.inFlight.Add(1) != 1 {
			overlaps.Add(1)
		}
		time.Sleep(time.Duration(500+rand.IntN(1500)) * time.Microsecond)
		st.mu.Lock()
		st.seqs = append(st.seqs, seqOf(t, env))
		st.mu.Unlock()
		st.inFlight.Add(-1)
		handled.Add(1)
		return nil
	}
	opts := func(name string) Options { return Options{Name: name, LeaseTTL: 2 * time.Second} }
	c0 := startConsumer(t, dedicated(t, rdb), opts("c0"), h)
	startConsumer(t, dedicated(t, rdb), opts("c1"), h)

	var wg sync.WaitGroup
	for i, id := range ids {
		wg.Go(func() {
			prio := Priorities[i%len(Priorities)] // one priority per bot: arrival order is total
			for s := 0; s < perBot; s++ {
				mustEnqueue(t, rdb, testEnv(id, s, prio))
				// Bursts of 5 build a backlog per bot (two readers of one partition would
				// show), paced over about 3 s so instances join and leave while they flow.
				if s%5 == 4 {
					time.Sleep(time.Duration(300+rand.IntN(200)) * time.Millisecond)
				}
			}
		})
	}
	testkit.EventuallyTrue(t, 60*time.Second, "a first share handled", func() bool { return handled.Load() >= 200 })
	c2 := startConsumer(t, dedicated(t, rdb), opts("c2"), h)
	testkit.EventuallyTrue(t, 60*time.Second, "half handled", func() bool { return handled.Load() >= bots*perBot/2 })
	c0.stop(t) // graceful: its partitions move to c1 and c2
	wg.Wait()
	testkit.EventuallyTrue(t, 90*time.Second, "all handled", func() bool { return handled.Load() >= bots*perBot })
	time.Sleep(200 * time.Millisecond) // let any duplicate show up before checking

	if n := overlaps.Load(); n != 0 {
		t.Errorf("%d handler calls overlapped another of the same bot", n)
	}
	want := make([]int, perBot)
	for i := range want {
		want[i] = i
	}
	for _, id := range ids {
		st := state[id]
		st.mu.Lock()
		if !slices.Equal(st.seqs, want) {
			t.Errorf("bot %s saw %v, want 0..%d once each in order", id, st.seqs, perBot-1)
		}
		st.mu.Unlock()
	}
	if n := handled.Load(); n != bots*perBot {
		t.Errorf("handled %d, want %d", n, bots*perBot)
	}
	// The scenario did move partitions while signals flowed.
	if n := metricValue(t, c0.c.m.leases.WithLabelValues(leaseReleased)); n < 1 {
		t.Errorf("c0 released %v partitions, want some", n)
	}
	if n := metricValue(t, c2.c.m.leases.WithLabelValues(leaseAcquired)); n < 1 {
		t.Errorf("c2 acquired %v partitions, want some", n)
	}
}

// An executor that dies mid-signal (it hangs and loses Redis) loses its lease; another takes
// the partition over, reclaims the signal and runs it again, then the bot's later signals
// in order.
func TestKilledConsumerReclaimed(t *testing.T) {
	_, rdb := storetest.New(t)
	bot := "bot-killed"
	rdbA := dedicated(t, rdb)

	entered, release := make(chan struct{}), make(chan struct{})
	aCtx := make(chan context.Context, 1)
	var aCalls atomic.Int64
	a := startConsumer(t, rdbA, Options{Name: "A", LeaseTTL: time.Second}, func(ctx context.Context, env Envelope) error {
		aCalls.Add(1)
		if env.SignalID == bot+"/0" {
			aCtx <- ctx
			close(entered)
			<-release // hangs, deaf to its context, like a process that died mid-way
		}
		return nil
	})
	t.Cleanup(func() { a.cancel(); close(release) }) // runs before a.stop (LIFO)
	testkit.EventuallyTrue(t, 10*time.Second, "A owns every partition", func() bool { return len(a.c.Owned()) == Partitions })

	mustEnqueue(t, rdb, testEnv(bot, 0, PriorityWebhook))
	<-entered
	for i := 1; i < 5; i++ {
		mustEnqueue(t, rdb, testEnv(bot, i, PriorityWebhook))
	}
	_ = rdbA.Close() // A can neither renew, nor ack, nor read

	rec := &recorder{}
	b := startConsumer(t, dedicated(t, rdb), Options{Name: "B", LeaseTTL: time.Second}, func(_ context.Context, env Envelope) error {
		if env.BotID == bot {
			rec.add(env.SignalID)
		}
		return nil
	})
	testkit.EventuallyTrue(t, 30*time.Second, "B handled the bot's 5 signals", func() bool { return rec.len() >= 5 })
	want := []string{bot + "/0", bot + "/1", bot + "/2", bot + "/3", bot + "/4"}
	if got := rec.snapshot(); !slices.Equal(got, want) {
		t.Fatalf("B handled %v, want %v", got, want)
	}
	if n := aCalls.Load(); n != 1 {
		t.Errorf("A handled %d signals, want 1 (the one it died on)", n)
	}
	select {
	case <-(<-aCtx).Done(): // A gave its lease up and cancelled the signal's context
	case <-time.After(10 * time.Second):
		t.Error("A's handler context was not cancelled after its lease was lost")
	}
	if n := metricValue(t, b.c.m.reclaimed); n < 1 {
		t.Errorf("reclaimed = %v, want >= 1", n)
	}
	testkit.EventuallyTrue(t, 10*time.Second, "B owns every partition", func() bool { return len(b.c.Owned()) == Partitions })
}

// Partitions spread over the live instances and come back when one leaves.
func TestRebalance(t *testing.T) {
	_, rdb := storetest.New(t)
	noop := func(context.Context, Envelope) error { return nil }
	opts := func(name string) Options { return Options{Name: name, LeaseTTL: time.Second} }
	a := startConsumer(t, dedicated(t, rdb), opts("A"), noop)
	testkit.EventuallyTrue(t, 10*time.Second, "A owns all", func() bool { return len(a.c.Owned()) == Partitions })

	b := startConsumer(t, dedicated(t, rdb), opts("B"), noop)
	testkit.EventuallyTrue(t, 15*time.Second, "A and B own 16 each", func() bool {
		oa, ob := a.c.Owned(), b.c.Owned()
		return len(oa) == Partitions/2 && len(ob) == Partitions/2
	})
	union := append(a.c.Owned(), b.c.Owned()...)
	slices.Sort(union)
	if len(slices.Compact(union)) != Partitions {
		t.Fatalf("owned partitions overlap or miss some: %v", union)
	}

	b.stop(t)
	testkit.EventuallyTrue(t, 15*time.Second, "A owns all again", func() bool { return len(a.c.Owned()) == Partitions })
	if n := metricValue(t, a.c.m.leases.WithLabelValues(leaseLost)); n != 0 {
		t.Errorf("A lost %v leases during a clean rebalance", n)
	}
}

// A lease taken from under its owner (renewal answers "not yours") stops that partition at
// once; when the key frees up the owner takes the partition back.
func TestLeaseTakenStopsPartition(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	a := startConsumer(t, dedicated(t, rdb), Options{Name: "A", LeaseTTL: time.Second}, func(context.Context, Envelope) error { return nil })
	testkit.EventuallyTrue(t, 10*time.Second, "A owns all", func() bool { return len(a.c.Owned()) == Partitions })
	if err := rdb.Set(ctx, store.QueueLease(9), "intruder", 0).Err(); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, 10*time.Second, "A gives partition 9 up", func() bool { return !slices.Contains(a.c.Owned(), 9) })
	if n := metricValue(t, a.c.m.leases.WithLabelValues(leaseLost)); n != 1 {
		t.Errorf("lost = %v, want 1", n)
	}
	if v := rdb.Get(ctx, store.QueueLease(9)).Val(); v != "intruder" {
		t.Errorf("A's release deleted someone else's lease: %q", v)
	}
	rdb.Del(ctx, store.QueueLease(9))
	testkit.EventuallyTrue(t, 10*time.Second, "A takes partition 9 back", func() bool { return slices.Contains(a.c.Owned(), 9) })
}

// An entry delivered to another consumer after the owner took the partition over (a frozen
// former owner's read served late) is found by the owner's sweep and executed, not lost.
// MaxHeld 1 stops B's reader while x/0 runs, so the ghost's read is the one that gets y/0.
func TestSweepClaimsLateDelivery(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	bots := botsIn(11, 2)
	x, y := bots[0], bots[1]
	entered, proceed := make(chan struct{}), make(chan struct{})
	rec := &recorder{}
	b := startConsumer(t, dedicated(t, rdb), Options{Name: "B", LeaseTTL: time.Second, MaxInFlight: 1, MaxHeld: 1}, func(_ context.Context, env Envelope) error {
		rec.add(env.SignalID)
		if env.SignalID == x+"/0" {
			close(entered)
			<-proceed
		}
		return nil
	})
	testkit.EventuallyTrue(t, 10*time.Second, "B owns all", func() bool { return len(b.c.Owned()) == Partitions })
	mustEnqueue(t, rdb, testEnv(x, 0, PriorityWebhook))
	<-entered
	mustEnqueue(t, rdb, testEnv(y, 0, PriorityWebhook))
	// The ghost of a former owner reads it while B is busy.
	res, err := rdb.XReadGroup(ctx, &redis.XReadGroupArgs{Group: Group, Consumer: "ghost",
		Streams: []string{StreamOf(y, PriorityWebhook), ">"}, Count: 10, Block: -1}).Result()
	if err != nil || len(res) != 1 || len(res[0].Messages) != 1 {
		t.Fatalf("ghost read %v, %v", res, err)
	}
	close(proceed)
	testkit.EventuallyTrue(t, 10*time.Second, "B handled the ghost's entry", func() bool { return slices.Contains(rec.snapshot(), y+"/0") })
	if n := metricValue(t, b.c.m.reclaimed); n != 1 {
		t.Errorf("reclaimed = %v, want 1", n)
	}
}

// Wiping Redis (streams, groups, leases, heartbeats) under a running consumer: it recreates
// what it needs and goes on serving.
func TestSurvivesFlush(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	rec := &recorder{}
	startConsumer(t, dedicated(t, rdb), Options{LeaseTTL: time.Second}, func(_ context.Context, env Envelope) error {
		rec.add(env.SignalID)
		return nil
	})
	mustEnqueue(t, rdb, testEnv("bot-flush", 0, PriorityWebhook))
	testkit.EventuallyTrue(t, 10*time.Second, "first signal handled", func() bool { return rec.len() == 1 })
	if err := storetest.FlushAll(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 3; i++ {
		mustEnqueue(t, rdb, testEnv("bot-flush", i, PriorityWebhook))
	}
	testkit.EventuallyTrue(t, 20*time.Second, "signals after the flush handled", func() bool { return rec.len() == 4 })
	want := []string{"bot-flush/0", "bot-flush/1", "bot-flush/2", "bot-flush/3"}
	if got := rec.snapshot(); !slices.Equal(got, want) {
		t.Errorf("handled %v, want %v", got, want)
	}
}
