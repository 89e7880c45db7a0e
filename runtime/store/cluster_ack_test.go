package store_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// ackFailures reads sigops_redis_replica_ack_failures_total{topology}.
func ackFailures(t *testing.T, topology string) float64 {
	t.Helper()
	reg := prometheus.NewRegistry()
	reg.MustRegister(store.Collectors()...)
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "sigops_redis_replica_ack_failures_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "topology" && l.GetValue() == topology {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	t.Fatalf("no sigops_redis_replica_ack_failures_total{topology=%q}", topology)
	return 0
}

// onReplica reads key from the replica at addr (READONLY, so the replica answers for its
// master's slots instead of redirecting).
func onReplica(t *testing.T, addr, key string) string {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, OnConnect: func(ctx context.Context, cn *redis.Conn) error {
		return cn.ReadOnly(ctx).Err()
	}})
	defer c.Close()
	v, err := c.Get(context.Background(), key).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	return v
}

// keyOn is a key of a slot master i of s serves (the three masters hold equal slot ranges
// in order; a key is tried until one lands there).
func keyOn(t *testing.T, c *redis.ClusterClient, s *storetest.Server, i int, prefix string) string {
	t.Helper()
	for n := 0; n < 1000; n++ {
		key := fmt.Sprintf("%s:{%d}", prefix, n)
		node, err := c.MasterForKey(context.Background(), key)
		if err != nil {
			t.Fatal(err)
		}
		if node.Options().Addr == s.ClusterAddrs[i] {
			return key
		}
	}
	t.Fatalf("no key on master %d", i)
	return ""
}

// On a Redis Cluster a write waits for its slot's replica as on Sentinel: once a script, a
// pipeline over two masters' slots, or a transaction returns, each replica holds what its
// master wrote; a master killed right after loses nothing acknowledged (its replica takes
// over with it) and is counted as a master change; a master whose replica is gone fails
// the write with ErrNotReplicated, counted in sigops_redis_replica_ack_failures_total.
func TestClusterWritesWaitForTheSlotReplica(t *testing.T) {
	s, err := storetest.StartReplicatedCluster()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	ctx := context.Background()
	uc := connect(t, store.Options{ClusterAddrs: s.ClusterAddrs, ReplicaAckTimeout: 300 * time.Millisecond})
	c := uc.(*redis.ClusterClient)
	if n := store.ReplicasWanted(c); n != 1 {
		t.Fatalf("auto wants %d replicas on a cluster whose masters have one each", n)
	}
	k0, k1 := keyOn(t, c, s, 0, "a"), keyOn(t, c, s, 1, "b")
	set := redis.NewScript(`redis.call('SET', KEYS[1], ARGV[1]) return 1`)

	// A script, a pipeline over two masters, a transaction: each on its replicas on return.
	if err := store.AckScript(ctx, c, set, []string{k0}, "script").Err(); err != nil {
		t.Fatal(err)
	}
	if got := onReplica(t, s.Replicas[0], k0); got != "script" {
		t.Fatalf("replica 0 holds %q after the script returned", got)
	}
	if _, err := store.AckPipelined(ctx, c, func(p redis.Pipeliner) error {
		p.Set(ctx, k0, "pipelined", 0)
		p.Set(ctx, k1, "pipelined", 0)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if a, b := onReplica(t, s.Replicas[0], k0), onReplica(t, s.Replicas[1], k1); a != "pipelined" || b != "pipelined" {
		t.Fatalf("replicas hold %q and %q after the pipeline returned", a, b)
	}
	if _, err := store.AckTxPipelined(ctx, c, func(p redis.Pipeliner) error {
		p.Set(ctx, k1, "tx", 0)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if got := onReplica(t, s.Replicas[1], k1); got != "tx" {
		t.Fatalf("replica 1 holds %q after the transaction returned", got)
	}

	// Master 0 crashes right after an acknowledged write: its replica is promoted with it.
	changes := store.MasterChanges()
	if err := store.AckScript(ctx, c, set, []string{k0}, "acknowledged").Err(); err != nil {
		t.Fatal(err)
	}
	if err := s.KillNode(s.ClusterAddrs[0]); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := store.AckScript(ctx, c, set, []string{k0 + "-after"}, "x").Err()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write on master 0's slots after its failover: %v", err)
		}
		c.ReloadState(ctx)
		time.Sleep(200 * time.Millisecond)
	}
	if v, err := c.Get(ctx, k0).Result(); err != nil || v != "acknowledged" {
		t.Fatalf("after the failover the acknowledged write reads %q, %v", v, err)
	}
	if store.MasterChanges() == changes {
		t.Fatal("the slot's move to the promoted replica was not counted as a master change")
	}

	// Master 1's replica is gone: its writes are not acknowledged, and counted.
	before := ackFailures(t, "cluster")
	if err := s.KillNode(s.Replicas[1]); err != nil {
		t.Fatal(err)
	}
	err = store.AckScript(ctx, c, set, []string{k1}, "alone").Err()
	if !errors.Is(err, store.ErrNotReplicated) {
		t.Fatalf("a write without its replica: %v, want ErrNotReplicated", err)
	}
	if after := ackFailures(t, "cluster"); after != before+1 {
		t.Fatalf("ack failures %v -> %v", before, after)
	}
}
