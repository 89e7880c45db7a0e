package executor_test

import (
	"errors"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/test/stack"
)

// A live order's staging must be on the replica before the exchange call: with the replica
// stopped the signal fails with ErrNotReplicated (the queue retries it) and no order
// reaches the exchange; with the replica back the retry places exactly one.
func TestLiveStagingWaitsForTheReplica(t *testing.T) {
	f := newLive(t, nil)
	if f.srv.Cluster() {
		t.Skip("a Redis Cluster waits for no replica")
	}
	host, port, _ := net.SplitHostPort(f.srv.Addr)
	dir := t.TempDir()
	replica, err := stack.StartRedis(f.ctx, stack.RedisOptions{LogFile: filepath.Join(dir, "replica.log"),
		Flags: []string{"--dir", dir, "--replicaof", host + " " + port}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = stack.Pause(replica, false); _ = replica.Stop(5 * time.Second) })
	rc := replica.Client()
	defer rc.Close()
	deadline := time.Now().Add(30 * time.Second)
	for info := ""; !strings.Contains(info, "master_link_status:up"); info = rc.Info(f.ctx, "replication").Val() {
		if time.Now().After(deadline) {
			t.Fatalf("replica did not sync: %s", info)
		}
		time.Sleep(50 * time.Millisecond)
	}
	acked, err := store.Connect(f.ctx, store.Options{Addr: f.srv.Addr, ReplicaAckTimeout: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer acked.Close()
	if n := store.ReplicasWanted(acked); n != 1 {
		t.Fatalf("wants %d replicas, want 1", n)
	}
	f.ex = executor.New(executor.Deps{Redis: acked, Logger: f.quiet, Now: func() time.Time { return f.now },
		Venues: &executor.Paper{Redis: acked, Prices: f.px, Live: f.lv}})
	if err := stack.Pause(replica, true); err != nil {
		t.Fatal(err)
	}
	env := f.envelope(`{"action":"buy","symbol":"BTCUSDT"}`)
	if err := f.ex.Handle(f.ctx, env); !errors.Is(err, store.ErrNotReplicated) {
		t.Fatalf("replica stopped: handle = %v, want ErrNotReplicated", err)
	}
	if n := f.exchangeOrders(); n != 0 {
		t.Fatalf("%d orders reached the exchange before their staging was on the replica", n)
	}
	if err := stack.Pause(replica, false); err != nil {
		t.Fatal(err)
	}
	f.ok(f.run(env))
	if n := f.exchangeOrders(); n != 1 {
		t.Fatalf("orders on the exchange = %d after the retry, want 1", n)
	}
}
