package storetest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/redis/go-redis/v9"
)

// The cluster StartCluster forms serves every slot, spreads keys over its masters and
// refuses a command whose keys hash to different slots, as a production cluster does; the
// whole-Redis helpers reach every master.
func TestCluster(t *testing.T) {
	s, err := StartCluster()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	c := s.Client()
	defer c.Close()
	if _, ok := c.(*redis.ClusterClient); !ok || !s.Cluster() || len(s.ClusterAddrs) != clusterMasters || s.Addr != "" {
		t.Fatalf("client %T, cluster %v, nodes %v, addr %q", c, s.Cluster(), s.ClusterAddrs, s.Addr)
	}
	ctx := context.Background()
	var want []string
	for i := range 30 {
		k := fmt.Sprintf("k%d", i)
		if err := c.Set(ctx, k, i, 0).Err(); err != nil {
			t.Fatal(err)
		}
		want = append(want, k)
	}
	slices.Sort(want)
	// ForEachMaster calls back on every master at once: count atomically.
	var masters atomic.Int32
	if err := ForEachNode(ctx, c, func(ctx context.Context, n *redis.Client) error {
		size, err := n.DBSize(ctx).Result()
		if size > 0 {
			masters.Add(1)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if masters := int(masters.Load()); masters != clusterMasters {
		t.Errorf("keys on %d masters, want %d", masters, clusterMasters)
	}
	if got, err := Keys(ctx, c, "k*"); err != nil || !slices.Equal(got, want) {
		t.Fatalf("Keys = %v, %v", got, err)
	}
	if err := c.Eval(ctx, "return redis.call('MSET', KEYS[1], 1, KEYS[2], 2)", []string{"{a}x", "{b}y"}).Err(); !redis.HasErrorPrefix(err, "CROSSSLOT") {
		t.Errorf("a script over two slots: %v; want CROSSSLOT", err)
	}
	if err := c.Eval(ctx, "return redis.call('MSET', KEYS[1], 1, KEYS[2], 2)", []string{"{a}x", "{a}y"}).Err(); err != nil {
		t.Errorf("a script over one slot: %v", err)
	}
	if err := FlushAll(ctx, c); err != nil {
		t.Fatal(err)
	}
	if got, _ := Keys(ctx, c, "*"); len(got) != 0 {
		t.Errorf("after FlushAll: %v", got)
	}
}

// SIGOPS_REDIS_SERVER chooses the server program: a stand-in named there (here a script
// that notes its start and runs redis-server, as valkey-server would be named) is what
// StartServer runs; an unknown name is refused with the variable's name.
func TestServerEnvChoosesTheProgram(t *testing.T) {
	real, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	script := filepath.Join(dir, "other-server")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho \"$@\" >> "+marker+"\nexec "+real+" \"$@\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(ServerEnv, script)
	s, err := StartServer()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	c := s.Client()
	defer c.Close()
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(marker); err != nil || !strings.Contains(string(b), "--port") {
		t.Errorf("the program %s names was not run (%q, %v)", ServerEnv, b, err)
	}

	t.Setenv(ServerEnv, "no-such-server-program")
	if _, err := StartServer(); err == nil || !strings.Contains(err.Error(), ServerEnv) {
		t.Errorf("an unknown program: %v; want an error naming %s", err, ServerEnv)
	}
}
