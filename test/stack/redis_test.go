package stack

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

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
