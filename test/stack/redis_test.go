package stack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/sigops/sigops/runtime/store"
)

// TestRedisRefusesWritesWhenFull fills a real redis-server started as the local stack starts
// it, with a tiny cap: writes past the cap are refused with OOM and nothing already stored
// is evicted (a queued signal must never vanish silently).
func TestRedisRefusesWritesWhenFull(t *testing.T) {
	ctx := context.Background()
	def, err := StartRedis(ctx, RedisOptions{})
	if err != nil {
		t.Skip(err)
	}
	defer def.Stop(5 * time.Second)
	c := def.Client()
	defer c.Close()
	cfg, err := c.ConfigGet(ctx, "maxmemory*").Result()
	if err != nil {
		t.Fatal(err)
	}
	if cfg["maxmemory-policy"] != "noeviction" || cfg["maxmemory"] != "536870912" {
		t.Fatalf("default Redis config %v; want noeviction and 512mb", cfg)
	}

	full, err := StartRedis(ctx, RedisOptions{MaxMemory: "4mb"})
	if err != nil {
		t.Fatal(err)
	}
	defer full.Stop(5 * time.Second)
	f := full.Client()
	defer f.Close()
	value := strings.Repeat("x", 64<<10)
	written := 0
	for ; written < 1000; written++ {
		if err = f.Set(ctx, fmt.Sprintf("k%d", written), value, 0).Err(); err != nil {
			break
		}
	}
	if !store.IsOutOfMemory(err) {
		t.Fatalf("after %d writes of 64 KiB into 4 MB: %v; want an OOM refusal", written, err)
	}
	if written == 0 {
		t.Fatal("nothing written before the refusal")
	}
	if n := f.DBSize(ctx).Val(); n != int64(written) {
		t.Fatalf("%d keys left of %d written: keys were evicted", n, written)
	}
}

// TestShippedRedisFlagsMatchConfig holds config/redis/redis.yaml and ShippedRedisFlags
// together: the StatefulSet's redis container passes its args to redis-server, and those
// args are ShippedRedisFlags followed by --maxmemory, at most 75 % of the memory limit (the
// rest is the rewrite child's copy-on-write pages, client buffers and fragmentation).
func TestShippedRedisFlagsMatchConfig(t *testing.T) {
	root, err := RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(root, "config", "redis", "redis.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c *corev1.Container
	for _, doc := range strings.Split(string(data), "\n---\n") {
		var sts appsv1.StatefulSet
		if err := yaml.UnmarshalStrict([]byte(doc), &sts); err != nil || sts.Kind != "StatefulSet" {
			continue
		}
		for i := range sts.Spec.Template.Spec.Containers {
			if sts.Spec.Template.Spec.Containers[i].Name == "redis" {
				c = &sts.Spec.Template.Spec.Containers[i]
			}
		}
	}
	if c == nil {
		t.Fatal("config/redis/redis.yaml: no StatefulSet with a container named redis")
	}
	if len(c.Command) != 4 || !strings.Contains(c.Command[2], `exec redis-server "$@" `) {
		t.Fatalf("redis command %q: want sh -c 'exec redis-server \"$@\" …' redis-server, so the args reach redis-server", c.Command)
	}
	want := ShippedRedisFlags()
	if n := len(want); len(c.Args) != n+2 || !slices.Equal(c.Args[:n], want) || c.Args[n] != "--maxmemory" {
		t.Fatalf("config/redis/redis.yaml args\n %q\nwant ShippedRedisFlags followed by --maxmemory <size>:\n %q", c.Args, want)
	}
	maxMemory, err := redisBytes(c.Args[len(want)+1])
	if err != nil {
		t.Fatal(err)
	}
	limit := c.Resources.Limits.Memory().Value()
	if maxMemory*4 > limit*3 {
		t.Fatalf("maxmemory %s is more than 75 %% of the memory limit %s", c.Args[len(want)+1], c.Resources.Limits.Memory())
	}
}

// redisBytes reads a redis-server memory size: "768mb" is 768 × 1024 × 1024 bytes, "1gb"
// 1024³, a bare number bytes.
func redisBytes(v string) (int64, error) {
	mult := int64(1)
	for suffix, m := range map[string]int64{"kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30} {
		if n, ok := strings.CutSuffix(strings.ToLower(v), suffix); ok {
			v, mult = n, m
		}
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("redis size %q: %w", v, err)
	}
	return n * mult, nil
}

// TestRedisRunsShippedFlags starts the local stack's persistent Redis and reads every
// shipped setting back with CONFIG GET: redis-server took each flag as given.
func TestRedisRunsShippedFlags(t *testing.T) {
	ctx := context.Background()
	_, c := startRedisClient(t, RedisOptions{DataDir: t.TempDir()})
	flags := ShippedRedisFlags()
	for i := 0; i < len(flags); i += 2 {
		name, want := strings.TrimPrefix(flags[i], "--"), flags[i+1]
		got, err := c.ConfigGet(ctx, name).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n, err := redisBytes(want); err == nil && strings.HasSuffix(want, "b") {
			want = strconv.FormatInt(n, 10) // CONFIG GET answers sizes in bytes
		}
		if got[name] != want {
			t.Errorf("CONFIG GET %s = %q; want %q", name, got[name], want)
		}
	}
}

// TestRedisKeepsWritesAcrossRestart writes into the local stack's persistent Redis, has
// it rewrite its append-only file (the base becomes an RDB preamble, the only snapshot
// with save ""), writes more, waits until the server reports those writes in the file
// (aof_buffer_length 0: with appendfsync everysec Redis holds writes back while a
// background fsync still runs, up to 2 s), kills it without a shutdown (a crash: no final
// fsync, no save), and starts a new server on the same data directory: every write is
// back, from the RDB base and the append-only increment after it.
func TestRedisKeepsWritesAcrossRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	r, c := startRedisClient(t, RedisOptions{DataDir: dir})
	if err := c.Set(ctx, "before", "1", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.HSet(ctx, "balance", "USDT", "1000.25").Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.BgRewriteAOF(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	waitRewritten(t, c)
	bases, _ := filepath.Glob(filepath.Join(dir, "appendonlydir", "*.base.rdb"))
	if len(bases) != 1 {
		t.Fatalf("after the rewrite, base files %q; want one RDB preamble base", bases)
	}
	if err := c.XAdd(ctx, &redis.XAddArgs{Stream: "queue", ID: "1-1", Values: []string{"signal", "s1"}}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Set(ctx, "after", "2", time.Hour).Err(); err != nil {
		t.Fatal(err)
	}
	waitWritten(t, c)
	if err := syscall.Kill(r.Pid(), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-r.Done()

	_, a := startRedisClient(t, RedisOptions{DataDir: dir})
	if v := a.Get(ctx, "before").Val(); v != "1" {
		t.Errorf("before = %q after the restart; want 1", v)
	}
	if v := a.HGet(ctx, "balance", "USDT").Val(); v != "1000.25" {
		t.Errorf("balance USDT = %q after the restart; want 1000.25", v)
	}
	if msgs := a.XRange(ctx, "queue", "-", "+").Val(); len(msgs) != 1 || msgs[0].ID != "1-1" || msgs[0].Values["signal"] != "s1" {
		t.Errorf("queue after the restart: %v; want entry 1-1 with signal s1", msgs)
	}
	if v := a.Get(ctx, "after").Val(); v != "2" {
		t.Errorf("after = %q after the restart; want 2", v)
	}
	if ttl := a.TTL(ctx, "after").Val(); ttl <= 0 || ttl > time.Hour {
		t.Errorf("after's TTL %s after the restart; want its hour kept", ttl)
	}
}

// waitWritten waits until the server's append-only buffer is in the file.
func waitWritten(t *testing.T, c *redis.Client) {
	t.Helper()
	waitPersistence(t, c, "the append-only buffer written", func(info string) bool {
		return strings.Contains(info, "aof_buffer_length:0\r")
	})
}

// waitRewritten waits until an append-only rewrite has completed.
func waitRewritten(t *testing.T, c *redis.Client) {
	t.Helper()
	waitPersistence(t, c, "the append-only rewrite complete", func(info string) bool {
		return strings.Contains(info, "aof_rewrite_in_progress:0") && strings.Contains(info, "aof_rewrite_scheduled:0") &&
			!strings.Contains(info, "aof_rewrites:0\r")
	})
}

// waitPersistence polls INFO persistence (at most 10 s) until done holds.
func waitPersistence(t *testing.T, c *redis.Client, what string, done func(info string) bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if done(c.Info(context.Background(), "persistence").Val()) {
			return
		}
	}
	t.Fatalf("%s: not within 10 s", what)
}

// startRedisClient starts a server with o and a client of it, both closed when the test
// ends (a server the test killed already is no error).
func startRedisClient(t *testing.T, o RedisOptions) (*Redis, *redis.Client) {
	t.Helper()
	r, err := StartRedis(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Stop(5 * time.Second) })
	c := r.Client()
	t.Cleanup(func() { _ = c.Close() })
	return r, c
}
