package stack

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestRedisClusterKeepsItsData starts the local stack's Redis Cluster in a data directory,
// writes keys that land on every master, stops it and starts it again from the same
// directory: the nodes find each other from their nodes.conf (nothing is formed twice) and
// every key is back from the append-only files.
func TestRedisClusterKeepsItsData(t *testing.T) {
	ctx := t.Context()
	ports, err := FreeClusterPorts(3)
	if err != nil {
		t.Fatal(err)
	}
	o := ClusterOptions{Ports: ports, DataDir: t.TempDir()}
	c, err := StartRedisCluster(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	rdb := c.Client()
	keys := map[string]bool{} // one key per master at least
	for i := 0; i < 30; i++ {
		k := fmt.Sprintf("k%d", i)
		if err := rdb.Set(ctx, k, i, 0).Err(); err != nil {
			t.Fatal(err)
		}
		keys[k] = true
	}
	masters := map[string]bool{}
	for k := range keys {
		slot, err := rdb.ClusterKeySlot(ctx, k).Result()
		if err != nil {
			t.Fatal(err)
		}
		masters[fmt.Sprint(slot*3/16384)] = true
	}
	if len(masters) != 3 {
		t.Fatalf("keys landed on %d masters' slot ranges; want 3", len(masters))
	}
	// appendfsync everysec: a clean stop writes the AOF out before the process exits.
	_ = rdb.Close()
	if err := c.Stop(10 * time.Second); err != nil {
		t.Fatal(err)
	}

	c2, err := StartRedisCluster(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c2.Stop(10 * time.Second) })
	rdb2 := c2.Client()
	defer rdb2.Close()
	for k := range keys {
		if v, err := rdb2.Get(ctx, k).Result(); err != nil || v != k[1:] {
			t.Errorf("%s after the restart: %q, %v; want %s", k, v, err, k[1:])
		}
	}
	if n, err := rdb2.ClusterInfo(ctx).Result(); err != nil {
		t.Fatal(err)
	} else if want := "cluster_known_nodes:3"; !strings.Contains(n, want) {
		t.Errorf("cluster info after the restart lacks %s:\n%s", want, n)
	}
}
