package store

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// parse reads args as a daemon does.
func parse(t *testing.T, args ...string) Options {
	t.Helper()
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	var o Options
	BindFlags(fs, &o)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return o
}

// Contradictory flags are refused with an error that names them; consistent ones pass.
func TestValidateFlagCombinations(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // "" means accepted
	}{
		{nil, ""},
		{[]string{"--redis-addr=r:6379", "--redis-db=2", "--redis-password-file=/pw"}, ""},
		{[]string{"--redis-sentinel-addrs=s1:26379, s2:26379,", "--redis-master-name=m", "--redis-db=1"}, ""},
		{[]string{"--redis-cluster-addrs=n1:6379,n2:6379"}, ""},
		{[]string{"--redis-sentinel-addrs=s:26379", "--redis-master-name=m", "--redis-cluster-addrs=n:6379"}, "exclude each other"},
		{[]string{"--redis-addr=r:6379", "--redis-sentinel-addrs=s:26379", "--redis-master-name=m"}, "--redis-addr names a single server"},
		{[]string{"--redis-addr=r:6379", "--redis-cluster-addrs=n:6379"}, "--redis-addr names a single server"},
		{[]string{"--redis-sentinel-addrs=s:26379"}, "needs --redis-master-name"},
		{[]string{"--redis-master-name=m"}, "needs --redis-sentinel-addrs"},
		{[]string{"--redis-master-name=m", "--redis-addr=r:6379"}, "needs --redis-sentinel-addrs"},
		{[]string{"--redis-cluster-addrs=n:6379", "--redis-db=3"}, "database 0 only"},
		{[]string{"--redis-db=-1"}, "must not be negative"},
		{[]string{"--redis-min-replicas-ack=auto", "--redis-replica-ack-timeout=1s"}, ""},
		{[]string{"--redis-min-replicas-ack=2", "--redis-replica-ack-timeout=250ms"}, ""},
		{[]string{"--redis-cluster-addrs=n:6379", "--redis-min-replicas-ack=0"}, ""},
		{[]string{"--redis-min-replicas-ack=-1"}, "a number of replicas"},
		{[]string{"--redis-min-replicas-ack=one"}, "a number of replicas"},
		{[]string{"--redis-cluster-addrs=n:6379", "--redis-min-replicas-ack=1"}, ""}, // each write waits on its slot's master
		{[]string{"--redis-replica-ack-timeout=2s"}, "between 0 and 1s"},
		{[]string{"--redis-replica-ack-timeout=-1ms"}, "between 0 and 1s"},
	} {
		err := parse(t, tc.args...).Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%v: refused: %v", tc.args, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%v: error %v, want one with %q", tc.args, err, tc.want)
		}
	}
}

// Args gives a child process the same options back.
func TestArgsRoundTrip(t *testing.T) {
	for _, o := range []Options{
		{},
		{Addr: "r:6379", DB: 4, PasswordFile: "/run/pw"},
		{SentinelAddrs: []string{"s1:26379", "s2:26379"}, MasterName: "m", DB: 1},
		{ClusterAddrs: []string{"n1:6379", "n2:6379"}, PasswordFile: "/run/pw"},
		{Addr: "r:6379", MinReplicasAck: "0", ReplicaAckTimeout: 300 * time.Millisecond},
		{SentinelAddrs: []string{"s1:26379"}, MasterName: "m", MinReplicasAck: ReplicasAuto},
	} {
		if got := parse(t, o.Args()...); !reflect.DeepEqual(got, o) {
			t.Errorf("%v: parsed back as %+v, want %+v", o.Args(), got, o)
		}
	}
}

// Each deployment gets its kind of client, with the database, password and pool given.
func TestClientKinds(t *testing.T) {
	for _, tc := range []struct {
		o       Options
		addrs   []string
		master  string
		cluster bool
	}{
		{Options{}, []string{DefaultAddr}, "", false},
		{Options{Addr: "r:6379", DB: 2, PoolSize: 50}, []string{"r:6379"}, "", false},
		{Options{SentinelAddrs: []string{"s1:26379", "s2:26379"}, MasterName: "m", DB: 1}, []string{"s1:26379", "s2:26379"}, "m", false},
		// One seed node is still a cluster.
		{Options{ClusterAddrs: []string{"n1:6379"}, PoolSize: 50}, []string{"n1:6379"}, "", true},
	} {
		u := tc.o.universal("secret", nil)
		if !reflect.DeepEqual(u.Addrs, tc.addrs) || u.MasterName != tc.master || u.IsClusterMode != tc.cluster ||
			u.DB != tc.o.DB || u.Password != "secret" || u.PoolSize != tc.o.PoolSize {
			t.Errorf("%v: options %+v", tc.o, u)
		}
		c := redis.NewUniversalClient(u)
		_, isCluster := c.(*redis.ClusterClient)
		_, isClient := c.(*redis.Client)
		if isCluster != tc.cluster || isClient == tc.cluster {
			t.Errorf("%v: client %T", tc.o, c)
		}
		_ = c.Close()
	}
}

// Connect reads the password from its file and refuses a server it cannot reach, naming it.
func TestConnectSingleServer(t *testing.T) {
	ctx := context.Background()
	srv, admin := storetest.NewServer(t)
	if err := admin.ConfigSet(ctx, "requirepass", "s3cret").Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := Connect(ctx, Options{Addr: srv.Addr}); err == nil {
		t.Fatal("connected without the password")
	}
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("s3cret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Connect(ctx, Options{Addr: srv.Addr, DB: 3, PasswordFile: pw})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	db3 := redis.NewClient(&redis.Options{Addr: srv.Addr, Password: "s3cret", DB: 3})
	defer db3.Close()
	if got, err := db3.Get(ctx, "k").Result(); got != "v" {
		t.Errorf("database 3 holds %q (%v)", got, err)
	}

	_, err = Connect(ctx, Options{Addr: "127.0.0.1:1"})
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("unreachable server: %v", err)
	}
	if _, err := Connect(ctx, Options{MasterName: "m"}); err == nil || !strings.Contains(err.Error(), "--redis-sentinel-addrs") {
		t.Errorf("contradictory options: %v", err)
	}
}

// Through a real Sentinel the client finds the master and writes to it.
func TestConnectSentinel(t *testing.T) {
	ctx := context.Background()
	master, admin := storetest.NewServer(t)
	sentinel := startSentinel(t, master.Addr, "sigops-master")
	c, err := Connect(ctx, Options{SentinelAddrs: []string{"127.0.0.1:1", sentinel}, MasterName: "sigops-master"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Set(ctx, "through-sentinel", "yes", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if got, _ := admin.Get(ctx, "through-sentinel").Result(); got != "yes" {
		t.Errorf("master holds %q", got)
	}
	if _, err := Connect(ctx, Options{SentinelAddrs: []string{sentinel}, MasterName: "no-such-master"}); err == nil {
		t.Error("connected to a master no Sentinel knows")
	}
}

// After a failover the same client writes to the promoted replica.
func TestSentinelFailoverFollowed(t *testing.T) {
	ctx := context.Background()
	master, _ := storetest.NewServer(t)
	replica, rc := storetest.NewServer(t)
	host, port, _ := net.SplitHostPort(master.Addr)
	if err := rc.ReplicaOf(ctx, host, port).Err(); err != nil {
		t.Fatal(err)
	}
	sentinel := startSentinel(t, master.Addr, "sigops-master")
	c, err := Connect(ctx, Options{SentinelAddrs: []string{sentinel}, MasterName: "sigops-master"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	sc := redis.NewSentinelClient(&redis.Options{Addr: sentinel})
	defer sc.Close()
	changes := MasterChanges()
	// The Sentinel learns the replica from the master's INFO, every 10 s at first.
	testkit.Eventually(t, 30*time.Second, "failover", func() error { return sc.Failover(ctx, "sigops-master").Err() })
	_, replicaPort, _ := net.SplitHostPort(replica.Addr)
	testkit.Eventually(t, 30*time.Second, "the client reaches the promoted replica", func() error {
		// The port the client's connection reaches says which server it writes to.
		reached, err := c.ConfigGet(ctx, "port").Result()
		if err == nil && reached["port"] != replicaPort {
			err = fmt.Errorf("reached port %s, not %s", reached["port"], replicaPort)
		}
		return err
	})
	if err := c.Set(ctx, "after-failover", "yes", 0).Err(); err != nil {
		t.Fatalf("write to the promoted replica: %v", err)
	}
	// What the old master acknowledged may be missing on the new one: writers are told.
	if MasterChanges() == changes {
		t.Error("the failover to another server counted no master change")
	}
}

// A server that restarted is a new master to its clients (it may have lost what it
// acknowledged last); a new connection to the same server is not.
func TestMasterChangesCountsARestart(t *testing.T) {
	ctx := context.Background()
	srv, _ := storetest.NewServer(t)
	c, err := Connect(ctx, Options{Addr: srv.Addr, PoolSize: 4})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	changes := MasterChanges()
	// Four connections at once: the pool dials new ones to the same server.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() { _ = c.Do(ctx, "debug", "sleep", "0.05").Err() })
	}
	wg.Wait()
	if n := c.PoolStats().TotalConns; n < 2 || MasterChanges() != changes {
		t.Fatalf("%d connections to one server counted %d master changes", n, MasterChanges()-changes)
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "the client reaches the restarted server", func() error { return c.Ping(ctx).Err() })
	if MasterChanges() == changes {
		t.Error("a restarted server counted no master change")
	}
}

// startSentinel runs `redis-server --sentinel` watching the master at masterAddr and returns
// its address once it knows the master.
func startSentinel(t *testing.T, masterAddr, name string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()
	host, masterPort, _ := net.SplitHostPort(masterAddr)
	// Sentinel rewrites its configuration file, so it gets one of its own.
	conf := filepath.Join(t.TempDir(), "sentinel.conf")
	body := fmt.Sprintf("bind 127.0.0.1\nport %d\nsentinel monitor %s %s %s 1\n", port, name, host, masterPort)
	if err := os.WriteFile(conf, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("redis-server", conf, "--sentinel")
	if err := cmd.Start(); err != nil {
		t.Fatalf("redis-server --sentinel: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := net.JoinHostPort("127.0.0.1", fmt.Sprint(port))
	sc := redis.NewSentinelClient(&redis.Options{Addr: addr})
	defer sc.Close()
	testkit.Eventually(t, 10*time.Second, "sentinel on "+addr+" knows the master", func() error {
		got, err := sc.GetMasterAddrByName(context.Background(), name).Result()
		if err == nil && (len(got) != 2 || got[1] != masterPort) {
			err = fmt.Errorf("master at %v", got)
		}
		return err
	})
	return addr
}

// An operation under GuardMaster never writes on a master other than the one it began on:
// after a restart its next command fails with ErrMasterChanged, unsent, whether it opens
// the connection to the new master itself or takes one another command opened.
func TestGuardMasterStopsWritesOnANewMaster(t *testing.T) {
	ctx := context.Background()
	srv, admin := storetest.NewServer(t)
	c, err := Connect(ctx, Options{Addr: srv.Addr})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, othersFirst := range []bool{false, true} {
		op := GuardMaster(ctx)
		if err := c.Set(op, "before", "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if err := srv.Restart(); err != nil {
			t.Fatal(err)
		}
		if othersFirst {
			// An unguarded command reaches the new master first; its connection is pooled.
			testkit.Eventually(t, 10*time.Second, "the client reaches the restarted server", func() error { return c.Ping(ctx).Err() })
		}
		testkit.Eventually(t, 10*time.Second, "the guarded write refused", func() error {
			if err := c.Set(op, "after", "1", 0).Err(); !errors.Is(err, ErrMasterChanged) {
				return fmt.Errorf("set = %v, want ErrMasterChanged", err)
			}
			return nil
		})
		if n := admin.Exists(ctx, "after").Val(); n != 0 {
			t.Fatalf("others first %v: the guarded write reached the new master", othersFirst)
		}
		if err := c.Set(GuardMaster(ctx), "after", "1", 0).Err(); err != nil {
			t.Fatalf("a guard taken on the new master: %v", err)
		}
		admin.Del(ctx, "after")
	}
}
