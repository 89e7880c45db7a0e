package stack

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
)

// With a password (as config/redis and `make run ARGS=-redis=sentinel` run it), a server
// and a Sentinel refuse a client without it; a client configured as the daemons are (the
// password file for both) reaches the master and follows it through a failover, which the
// Sentinels run with their auth-pass; without the Sentinels' password it cannot start.
func TestReplicatedWithPassword(t *testing.T) {
	ctx := context.Background()
	const password = "s3cret-of-the-set"
	r, err := StartReplicated(ctx, ReplicatedOptions{Dir: t.TempDir(), Replicas: 1, Sentinels: 3, Password: password})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)

	bare := redis.NewClient(&redis.Options{Addr: r.Servers[0].Addr, MaxRetries: -1})
	defer bare.Close()
	if err := bare.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Fatalf("server without the password: PING %v, want NOAUTH", err)
	}
	bareSentinel := redis.NewSentinelClient(&redis.Options{Addr: r.Sentinels[0].Addr, MaxRetries: -1})
	defer bareSentinel.Close()
	if err := bareSentinel.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Fatalf("Sentinel without the password: PING %v, want NOAUTH", err)
	}
	o := r.Store()
	if o.PasswordFile == "" || o.SentinelPasswordFile != o.PasswordFile {
		t.Fatalf("store options %+v: want the password file for the servers and the Sentinels", o)
	}
	noSentinelPassword := o
	noSentinelPassword.SentinelPasswordFile = ""
	if c, err := store.Connect(ctx, noSentinelPassword); err == nil {
		_ = c.Close()
		t.Fatal("connected through the Sentinels without their password")
	}

	c := r.Connect(t, store.Options{})
	if err := c.Set(ctx, "before", "kept", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if err := c.Do(ctx, "WAIT", 1, 5000).Err(); err != nil {
		t.Fatal(err)
	}
	old := r.Servers[0].Addr
	if err := r.Servers[0].Kill(); err != nil {
		t.Fatal(err)
	}
	if _, err := r.WaitFailover(ctx, old); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := c.Set(ctx, "after", "written", 0).Err()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no write after the failover: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if v, err := c.Get(ctx, "before").Result(); err != nil || v != "kept" {
		t.Fatalf("after the failover: before = %q (%v)", v, err)
	}
}
