package queue

import (
	"context"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
	"github.com/sigops/sigops/test/stack"
)

// startPair starts a master and a replica of it (in memory, as the servers of the other
// queue tests) and waits until the replica has synced.
func startPair(t *testing.T) (master, replica *stack.Redis) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	master, err := stack.StartRedis(ctx, stack.RedisOptions{LogFile: filepath.Join(dir, "master.log")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = master.Stop(5 * time.Second) })
	host, port, _ := net.SplitHostPort(master.Addr)
	replica, err = stack.StartRedis(ctx, stack.RedisOptions{LogFile: filepath.Join(dir, "replica.log"),
		Flags: []string{"--replicaof", host + " " + port}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stack.Pause(replica, false); _ = replica.Stop(5 * time.Second) })
	rc := replica.Client()
	defer rc.Close()
	testkit.EventuallyTrue(t, 30*time.Second, "the replica syncs", func() bool {
		return strings.Contains(rc.Info(ctx, "replication").Val(), "master_link_status:up")
	})
	return master, replica
}

// connectTo is a consumer's client of addr through store.Connect, as the daemon makes it
// (its replica acknowledgement policy and master tracking included).
func connectTo(t *testing.T, o store.Options) redis.UniversalClient {
	t.Helper()
	c, err := DedicatedClient(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// failoverRig is a master and its replica, with clients that reach the master through a
// proxy the test moves to the replica (a failover at a moment it chooses): the consumer's
// client (store.Connect with o), the Handler's writer (as the executor's own client), and a
// direct client of the replica, which promotes it.
type failoverRig struct {
	master, replica *stack.Redis
	proxy           *storetest.Proxy
	rdb             redis.UniversalClient
	writer, promote *redis.Client
}

func newFailoverRig(t *testing.T, o store.Options) *failoverRig {
	t.Helper()
	f := &failoverRig{}
	f.master, f.replica = startPair(t)
	f.proxy = storetest.NewProxy(t, f.master.Addr)
	o.Addr = f.proxy.Addr
	f.rdb = connectTo(t, o)
	f.writer = redis.NewClient(&redis.Options{Addr: f.proxy.Addr})
	f.promote = f.replica.Client()
	t.Cleanup(func() {
		_ = f.writer.Close()
		_ = f.promote.Close()
	})
	return f
}

// A finished signal counts only once the replica holds what it wrote: while the replica is
// stopped the bot's next signal waits (its first one is run again, finding its result),
// and once the replica is back the next one runs, once.
func TestBotWaitsUntilTheReplicaHoldsItsSignal(t *testing.T) {
	master, replica := startPair(t)
	ctx := context.Background()
	admin := master.Client()
	defer admin.Close()
	rdb := connectTo(t, store.Options{Addr: master.Addr, ReplicaAckTimeout: 100 * time.Millisecond})
	if n := store.ReplicasWanted(rdb); n != 1 {
		t.Fatalf("the consumer's client wants %d replicas, want 1", n)
	}
	bot := botsIn(5, 1)[0]
	rec := &recorder{}
	r := startConsumer(t, rdb, Options{LeaseTTL: 2 * time.Second}, func(ctx context.Context, env Envelope) error {
		rec.add(env.SignalID)
		return admin.Set(ctx, "done:"+env.SignalID, "1", 0).Err()
	})
	testkit.EventuallyTrue(t, 10*time.Second, "the consumer owns partition 5", func() bool { return slices.Contains(r.c.Owned(), 5) })
	if err := stack.Pause(replica, true); err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, admin, testEnv(bot, 0, PriorityWebhook))
	mustEnqueue(t, admin, testEnv(bot, 1, PriorityWebhook))
	testkit.EventuallyTrue(t, 10*time.Second, "the first signal is run again while unconfirmed", func() bool {
		return len(rec.snapshot()) >= 3
	})
	if got := rec.snapshot(); slices.Contains(got, bot+"/1") {
		t.Fatalf("the bot's next signal ran before the replica held the first: %v", got)
	}
	if n := metricValue(t, r.c.m.unconfirmed); n < 2 {
		t.Errorf("unconfirmed = %v, want 2 or more", n)
	}
	if err := stack.Pause(replica, false); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, 10*time.Second, "the next signal runs", func() bool { return slices.Contains(rec.snapshot(), bot+"/1") })
	time.Sleep(300 * time.Millisecond) // let a second run of it show
	got := rec.snapshot()
	if n := len(got); got[n-1] != bot+"/1" || slices.Index(got, bot+"/1") != n-1 {
		t.Errorf("handled %v: the next signal not once and last", got)
	}
	testkit.EventuallyTrue(t, 5*time.Second, "both entries acknowledged", func() bool {
		return admin.XLen(ctx, StreamOf(bot, PriorityWebhook)).Val() == 0
	})
}

// A failover that loses what a finished signal wrote: the replica is promoted with the
// state from before the signal ran, after its Handler returned. The consumer sees a
// different master when it acknowledges, runs the signal again (the Handler finds its
// result missing and writes it on the new master), and only then the bot's next signal.
func TestSignalRunsAgainWhenAFailoverLostIt(t *testing.T) {
	ctx := context.Background()
	// Only the master change can tell the consumer: it waits for no replica.
	f := newFailoverRig(t, store.Options{MinReplicasAck: "0"})
	proxy, rdb, writer, promote, replica := f.proxy, f.rdb, f.writer, f.promote, f.replica
	bot := botsIn(7, 1)[0]
	first := bot + "/0"
	rec := &recorder{}
	var failedOver atomic.Bool
	r := startConsumer(t, rdb, Options{LeaseTTL: 2 * time.Second}, func(ctx context.Context, env Envelope) error {
		rec.add(env.SignalID)
		if env.SignalID != first || failedOver.Load() {
			// The "already done" check: write only what the master does not hold.
			return writer.SetNX(ctx, "done:"+env.SignalID, "1", 0).Err()
		}
		failedOver.Store(true)
		// The replica gets everything so far (the entries' delivery included) and is then
		// cut off: it is the master-to-be, without what the signal writes next.
		if err := writer.Do(ctx, "wait", 1, 5000).Err(); err != nil {
			return err
		}
		if err := promote.ReplicaOf(ctx, "no", "one").Err(); err != nil {
			return err
		}
		if err := writer.Set(ctx, "done:"+env.SignalID, "1", 0).Err(); err != nil {
			return err
		}
		proxy.Switch(replica.Addr) // the old master is gone for every client
		return nil
	})
	testkit.EventuallyTrue(t, 10*time.Second, "the consumer owns partition 7", func() bool { return slices.Contains(r.c.Owned(), 7) })
	mustEnqueue(t, writer, testEnv(bot, 0, PriorityWebhook))
	mustEnqueue(t, writer, testEnv(bot, 1, PriorityWebhook))
	testkit.EventuallyTrue(t, 20*time.Second, "the next signal runs", func() bool { return slices.Contains(rec.snapshot(), bot+"/1") })
	time.Sleep(300 * time.Millisecond)
	if got, want := rec.snapshot(), []string{first, first, bot + "/1"}; !slices.Equal(got, want) {
		t.Errorf("handled %v, want %v", got, want)
	}
	nm := promote.Get(ctx, "done:"+first)
	if nm.Val() != "1" {
		t.Errorf("the new master lacks the first signal's result (%v)", nm.Err())
	}
	if n := promote.XLen(ctx, StreamOf(bot, PriorityWebhook)).Val(); n != 0 {
		t.Errorf("%d entries left on the new master", n)
	}
	if n := metricValue(t, r.c.m.unconfirmed); n < 1 {
		t.Errorf("unconfirmed = %v, want 1 or more", n)
	}
}

// A read that Redis served but whose reply the consumer never got (the connection broke on
// the way) leaves the entries it delivered pending for the consumer, unknown to it. After
// the failed read the consumer reads its own pending list again and runs them, in order;
// a sweep would find them only a lease TTL (10 s here) later.
func TestEntriesOfALostReadAreRun(t *testing.T) {
	ctx := context.Background()
	rdb, rec, bot, stream := lostRead(t, 10*time.Second)
	// Its read fails: every connection of the consumer is cut.
	if err := storetest.ForEachNode(ctx, rdb, func(ctx context.Context, n *redis.Client) error {
		return n.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes").Err()
	}); err != nil {
		t.Fatal(err)
	}
	testkit.EventuallyTrue(t, 5*time.Second, "the entry of the lost read runs", func() bool { return slices.Contains(rec.snapshot(), bot+"/1") })
	testkit.EventuallyTrue(t, 5*time.Second, "every entry acknowledged", func() bool { return rdb.XLen(ctx, stream).Val() == 0 })
}

// The same entries, with no failure the consumer could see (a client that resent the read
// by itself would hide it): the sweep finds more entries pending for the consumer than it
// holds, and they run within a lease TTL.
func TestSweepFindsEntriesOfALostRead(t *testing.T) {
	ctx := context.Background()
	rdb, rec, bot, stream := lostRead(t, time.Second)
	testkit.EventuallyTrue(t, 5*time.Second, "the entry of the lost read runs", func() bool { return slices.Contains(rec.snapshot(), bot+"/1") })
	testkit.EventuallyTrue(t, 5*time.Second, "every entry acknowledged", func() bool { return rdb.XLen(ctx, stream).Val() == 0 })
}

// lostRead starts a consumer with leaseTTL, runs a bot's first signal, then delivers its
// second to the consumer by a read the consumer never sees (queued and read in one
// transaction, so its blocked reader finds nothing new), and runs the third. The second
// has not run when it returns.
func lostRead(t *testing.T, leaseTTL time.Duration) (redis.UniversalClient, *recorder, string, string) {
	t.Helper()
	_, rdb := storetest.New(t)
	ctx := context.Background()
	bot := botsIn(3, 1)[0]
	rec := &recorder{}
	r := startConsumer(t, dedicated(t, rdb), Options{LeaseTTL: leaseTTL}, func(_ context.Context, env Envelope) error {
		rec.add(env.SignalID)
		return nil
	})
	testkit.EventuallyTrue(t, 10*time.Second, "the consumer owns partition 3", func() bool { return slices.Contains(r.c.Owned(), 3) })
	mustEnqueue(t, rdb, testEnv(bot, 0, PriorityWebhook))
	testkit.EventuallyTrue(t, 10*time.Second, "the first signal runs", func() bool { return rec.len() == 1 })
	stream := StreamOf(bot, PriorityWebhook)
	data, err := jsonOf(testEnv(bot, 1, PriorityWebhook))
	if err != nil {
		t.Fatal(err)
	}
	var read *redis.XStreamSliceCmd
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAdd(ctx, &redis.XAddArgs{Stream: stream, Values: []any{EnvelopeField, data}})
		read = p.XReadGroup(ctx, &redis.XReadGroupArgs{Group: Group, Consumer: r.c.Name(), Streams: []string{stream, ">"}, Count: 10, Block: -1})
		return nil
	}); err != nil || len(read.Val()) != 1 {
		t.Fatalf("delivering the entry: %v, %v", read.Val(), err)
	}
	mustEnqueue(t, rdb, testEnv(bot, 2, PriorityWebhook))
	testkit.EventuallyTrue(t, 10*time.Second, "the next signal runs", func() bool { return slices.Contains(rec.snapshot(), bot+"/2") })
	if leaseTTL >= 10*time.Second && slices.Contains(rec.snapshot(), bot+"/1") {
		t.Fatal("the undelivered entry ran before its read failed")
	}
	return rdb, rec, bot, stream
}

// An entry read from a master that fails before a replica has it is not run on the new
// master, which lacks it: its sender was never acknowledged and sends it again as a new
// signal, so running it from memory would execute one signal twice.
func TestEntryTheNewMasterLacksIsNotRun(t *testing.T) {
	ctx := context.Background()
	// Writes wait for a replica, as the intake's do: an entry missing on the new master was
	// never acknowledged to its sender.
	f := newFailoverRig(t, store.Options{MinReplicasAck: "1", ReplicaAckTimeout: 100 * time.Millisecond})
	proxy, rdb, writer, promote, master, replica := f.proxy, f.rdb, f.writer, f.promote, f.master, f.replica
	bot := botsIn(9, 1)[0]
	first := bot + "/0"
	rec := &recorder{}
	entered, release := make(chan struct{}), make(chan struct{})
	var once atomic.Bool
	r := startConsumer(t, rdb, Options{LeaseTTL: 2 * time.Second}, func(_ context.Context, env Envelope) error {
		rec.add(env.SignalID)
		if env.SignalID == first && once.CompareAndSwap(false, true) {
			close(entered)
			<-release
		}
		return nil
	})
	testkit.EventuallyTrue(t, 10*time.Second, "the consumer owns partition 9", func() bool { return slices.Contains(r.c.Owned(), 9) })
	mustEnqueue(t, writer, testEnv(bot, 0, PriorityWebhook))
	<-entered
	// The replica has the first entry, then is cut off; the second is queued on the old
	// master only, and read there while the first runs.
	if err := writer.Do(ctx, "wait", 1, 5000).Err(); err != nil {
		t.Fatal(err)
	}
	if err := promote.ReplicaOf(ctx, "no", "one").Err(); err != nil {
		t.Fatal(err)
	}
	mustEnqueue(t, writer, testEnv(bot, 1, PriorityWebhook))
	testkit.EventuallyTrue(t, 10*time.Second, "the second entry is read", func() bool {
		p, err := writer.XPending(ctx, StreamOf(bot, PriorityWebhook), Group).Result()
		return err == nil && p.Count == 2
	})
	proxy.Switch(replica.Addr)
	// The old master comes back as the new one's replica (its own data dropped).
	old := master.Client()
	defer old.Close()
	host, port, _ := net.SplitHostPort(replica.Addr)
	if err := old.ReplicaOf(ctx, host, port).Err(); err != nil {
		t.Fatal(err)
	}
	close(release)
	testkit.EventuallyTrue(t, 20*time.Second, "the dropped entry is counted", func() bool { return metricValue(t, r.c.m.lost) == 1 })
	time.Sleep(300 * time.Millisecond)
	// The first runs again on the new master, which has it (until the replica confirms it);
	// the second never runs.
	testkit.EventuallyTrue(t, 20*time.Second, "the first entry acknowledged on the new master", func() bool {
		return promote.XLen(ctx, StreamOf(bot, PriorityWebhook)).Val() == 0
	})
	got := rec.snapshot()
	if len(got) < 2 || slices.ContainsFunc(got, func(id string) bool { return id != first }) {
		t.Errorf("handled %v, want %s twice or more and nothing else", got, first)
	}
}
