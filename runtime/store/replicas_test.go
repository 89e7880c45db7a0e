package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
	"github.com/sigops/sigops/test/stack"
)

func connect(t *testing.T, o store.Options) redis.UniversalClient {
	t.Helper()
	c, err := store.Connect(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// The default waits for one replica when the master has one and for none when it has none;
// a number given waits for that many.
func TestReplicasWanted(t *testing.T) {
	r := stack.StartReplicatedFor(t, 1)
	if n := store.ReplicasWanted(r.Connect(t, store.Options{})); n != 1 {
		t.Errorf("through Sentinel, master with a replica: wants %d replicas, want 1", n)
	}
	if n := store.ReplicasWanted(connect(t, store.Options{Addr: r.Servers[0].Addr})); n != 1 {
		t.Errorf("single server with a replica: wants %d replicas, want 1", n)
	}
	alone, _ := storetest.NewServer(t)
	if n := store.ReplicasWanted(connect(t, store.Options{Addr: alone.Addr})); n != 0 {
		t.Errorf("server without replicas: wants %d, want 0", n)
	}
	// Under Sentinels a master without replicas is one right after a failover: its writes
	// still wait for one.
	bare := stack.StartReplicatedFor(t, 0)
	if n := store.ReplicasWanted(bare.Connect(t, store.Options{})); n != 1 {
		t.Errorf("through Sentinel, master without a replica: wants %d, want 1", n)
	}
	if n := store.ReplicasWanted(r.Connect(t, store.Options{MinReplicasAck: "0"})); n != 0 {
		t.Errorf("--redis-min-replicas-ack=0: wants %d", n)
	}
	if n := store.ReplicasWanted(r.Connect(t, store.Options{MinReplicasAck: "2"})); n != 2 {
		t.Errorf("--redis-min-replicas-ack=2: wants %d", n)
	}
}

// A write is acknowledged once the replica holds it; while the replica is stopped every
// kind of write answers ErrNotReplicated within the bound, though the master holds it.
func TestWritesWaitForTheReplica(t *testing.T) {
	ctx := context.Background()
	r := stack.StartReplicatedFor(t, 1)
	c := r.Connect(t, store.Options{ReplicaAckTimeout: 200 * time.Millisecond})
	master, replica := r.Servers[0].Client(), r.Servers[1].Client()
	defer master.Close()
	defer replica.Close()
	setScript := redis.NewScript(`return redis.call('SET', KEYS[1], ARGV[1])`)
	writes := map[string]func(key string) error{
		"pipeline": func(key string) error {
			_, err := store.AckPipelined(ctx, c, func(p redis.Pipeliner) error { return p.Set(ctx, key, "v", 0).Err() })
			return err
		},
		"script": func(key string) error { return store.AckScript(ctx, c, setScript, []string{key}, "v").Err() },
		"transaction": func(key string) error {
			_, err := store.AckTxPipelined(ctx, c, func(p redis.Pipeliner) error { return p.Set(ctx, key, "v", 0).Err() })
			return err
		},
	}
	for name, write := range writes {
		if err := write("acked-" + name); err != nil {
			t.Fatalf("%s with the replica up: %v", name, err)
		}
		// Acknowledged means on the replica: no waiting for it here.
		if got, err := replica.Get(ctx, "acked-"+name).Result(); err != nil || got != "v" {
			t.Errorf("%s acknowledged, replica holds %q, %v", name, got, err)
		}
	}
	if err := stack.Pause(r.Servers[1], true); err != nil {
		t.Fatal(err)
	}
	for name, write := range writes {
		err := write("unacked-" + name)
		if !errors.Is(err, store.ErrNotReplicated) {
			t.Errorf("%s with the replica stopped: %v, want ErrNotReplicated", name, err)
		}
		if got, _ := master.Get(ctx, "unacked-"+name).Result(); got != "v" {
			t.Errorf("%s: master holds %q: the write itself must stand", name, got)
		}
	}
	if err := stack.Pause(r.Servers[1], false); err != nil {
		t.Fatal(err)
	}
	if err := writes["script"]("resumed"); err != nil {
		t.Errorf("after the replica resumed: %v", err)
	}
}
