package stack

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// SentinelMaster is the master name the Sentinels of StartReplicated watch.
const SentinelMaster = "sigops"

// ReplicatedOptions configure StartReplicated.
type ReplicatedOptions struct {
	// Dir holds the Sentinels' configuration files (a Sentinel rewrites its own) and the
	// servers' logs; required.
	Dir string
	// Replicas is the number of replicas of the primary; Sentinels the number of Sentinels
	// (a majority of them elects the one that runs a failover).
	Replicas, Sentinels int
	// DownAfter is how long a server stays unreachable before a Sentinel deems it down;
	// 0 is one second, so that a test's failover takes a few seconds.
	DownAfter time.Duration
	// Password, when set, is required by the servers (requirepass, and masterauth between
	// them) and by the Sentinels (requirepass, and auth-pass to the servers), as
	// config/redis runs them. It is written to PasswordFile for the daemons' flags.
	Password string
}

// Replicated is a Sentinel-managed Redis: a primary, its replicas and the Sentinels
// watching them, all on 127.0.0.1. Which server is the master changes with a failover:
// ask MasterAddr.
type Replicated struct {
	Servers   []*Redis // the first is the primary at start
	Sentinels []*Sentinel
	dir       string
	// password is ReplicatedOptions.Password; passwordFile holds it.
	password, passwordFile string
}

// Sentinel is a running Redis Sentinel.
type Sentinel struct {
	*Process
	Addr string
	// conf is its configuration file (it rewrites it with what it learns), log its log.
	conf, log string
}

// StartReplicated starts the primary, its replicas (each waits until it has synced) and the
// Sentinels (each waits until it sees every replica and the other Sentinels).
func StartReplicated(ctx context.Context, o ReplicatedOptions) (_ *Replicated, err error) {
	r := &Replicated{dir: o.Dir, password: o.Password}
	defer func() {
		if err != nil {
			r.Stop() // what started before the failure
		}
	}()
	if o.Password != "" {
		if err := os.MkdirAll(o.Dir, 0o700); err != nil {
			return nil, err
		}
		r.passwordFile = filepath.Join(o.Dir, "redis-password")
		if err := os.WriteFile(r.passwordFile, []byte(o.Password+"\n"), 0o600); err != nil {
			return nil, err
		}
	}
	// A replica's first sync waits for no more replicas to join (the default waits 5 s).
	primary, err := r.startServer(ctx, 0, 0, false, "--repl-diskless-sync-delay", "0")
	if err != nil {
		return nil, err
	}
	r.Servers = append(r.Servers, primary)
	host, port, _ := net.SplitHostPort(primary.Addr)
	for i := 1; i <= o.Replicas; i++ {
		rep, err := r.startServer(ctx, i, 0, false, "--replicaof", host+" "+port)
		if err != nil {
			return nil, err
		}
		r.Servers = append(r.Servers, rep)
	}
	if err := waitFor(ctx, "replicas to sync", func(c context.Context) bool {
		for i := range o.Replicas {
			if !strings.Contains(r.infoField(c, primary.Addr, "replication", fmt.Sprintf("slave%d", i)), "state=online") {
				return false
			}
		}
		return true
	}); err != nil {
		return nil, err
	}
	downAfter := o.DownAfter
	if downAfter == 0 {
		downAfter = time.Second
	}
	for i := 0; i < o.Sentinels; i++ {
		s, err := startSentinel(o.Dir, i, primary.Addr, o.Sentinels/2+1, downAfter, o.Password)
		if err != nil {
			return nil, err
		}
		r.Sentinels = append(r.Sentinels, s)
	}
	return r, r.waitSentinels(ctx, o.Replicas, o.Sentinels-1)
}

// startServer starts server i of a replicated set in a directory of its own, persisting as
// config/redis ships (ShippedRedisFlags, an append-only file): a replica writes the
// snapshot of its sync there, and a server started again in the same directory loads it
// before it syncs with the master of the moment. It listens on port (0: a free one) and
// adds to its log file when appendLog (a restart).
func (r *Replicated) startServer(ctx context.Context, i, port int, appendLog bool, flags ...string) (*Redis, error) {
	data := filepath.Join(r.dir, fmt.Sprintf("redis-%d", i))
	if err := os.MkdirAll(data, 0o700); err != nil {
		return nil, err
	}
	return StartRedis(ctx, RedisOptions{Port: port, LogFile: filepath.Join(r.dir, fmt.Sprintf("redis-%d.log", i)), AppendLog: appendLog,
		DataDir: data, Flags: flags, Password: r.password})
}

// startSentinel runs redis-sentinel (or redis-server --sentinel, the same program, where
// the Debian package redis-sentinel is missing) watching master with the given quorum; with
// a password it requires it of its clients (and of the other Sentinels, which use their
// own) and gives it to the servers.
func startSentinel(dir string, i int, master string, quorum int, downAfter time.Duration, password string) (*Sentinel, error) {
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	host, mport, _ := net.SplitHostPort(master)
	conf := filepath.Join(dir, fmt.Sprintf("sentinel-%d.conf", i))
	text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndaemonize no\ndir %s\n"+
		"sentinel monitor %s %s %s %d\nsentinel down-after-milliseconds %s %d\n"+
		"sentinel failover-timeout %s 5000\nsentinel parallel-syncs %s 1\n",
		port, dir, SentinelMaster, host, mport, quorum, SentinelMaster, downAfter.Milliseconds(), SentinelMaster, SentinelMaster)
	if password != "" {
		text += fmt.Sprintf("requirepass %q\nsentinel auth-pass %s %q\n", password, SentinelMaster, password)
	}
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		return nil, err
	}
	cmd, err := sentinelCommand(conf)
	if err != nil {
		return nil, err
	}
	log := filepath.Join(dir, fmt.Sprintf("sentinel-%d.log", i))
	p, err := startProcess("redis-sentinel", cmd, log)
	if err != nil {
		return nil, err
	}
	return &Sentinel{Process: p, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), conf: conf, log: log}, nil
}

// RestartSentinel starts Sentinel i again once it has exited, from the configuration file
// it rewrote (its port, the master of the moment, the replicas and peers it knew).
func (r *Replicated) RestartSentinel(i int) (*Sentinel, error) {
	old := r.Sentinels[i]
	select {
	case <-old.Done():
	default:
		return nil, fmt.Errorf("sentinel %s is still running", old.Addr)
	}
	cmd, err := sentinelCommand(old.conf)
	if err != nil {
		return nil, err
	}
	p, err := startLogged("redis-sentinel", cmd, old.log, os.O_APPEND)
	if err != nil {
		return nil, err
	}
	s := &Sentinel{Process: p, Addr: old.Addr, conf: old.conf, log: old.log}
	r.Sentinels[i] = s
	return s, nil
}

func sentinelCommand(conf string) (*exec.Cmd, error) {
	if os.Getenv(storetest.ServerEnv) == "" {
		if path, err := exec.LookPath("redis-sentinel"); err == nil {
			return exec.Command(path, conf), nil
		}
	}
	path, err := storetest.ServerBinary()
	if err != nil {
		return nil, err
	}
	return exec.Command(path, conf, "--sentinel"), nil
}

// waitSentinels waits until every Sentinel knows the master's replicas and its peers, so
// that a failover can be agreed on at once.
func (r *Replicated) waitSentinels(ctx context.Context, replicas, peers int) error {
	for _, s := range r.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr, Password: r.password})
		err := waitFor(ctx, "sentinel "+s.Addr, func(c context.Context) bool {
			m, err := sc.Master(c, SentinelMaster).Result()
			return err == nil && m["num-slaves"] == strconv.Itoa(replicas) && m["num-other-sentinels"] == strconv.Itoa(peers)
		})
		_ = sc.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// SentinelAddrs are the Sentinels' host:port.
func (r *Replicated) SentinelAddrs() []string {
	addrs := make([]string, len(r.Sentinels))
	for i, s := range r.Sentinels {
		addrs[i] = s.Addr
	}
	return addrs
}

// MasterAddr is the master's host:port as the first live Sentinel names it.
func (r *Replicated) MasterAddr(ctx context.Context) (string, error) {
	var last error
	for _, s := range r.Sentinels {
		sc := redis.NewSentinelClient(&redis.Options{Addr: s.Addr, Password: r.password})
		a, err := sc.GetMasterAddrByName(ctx, SentinelMaster).Result()
		_ = sc.Close()
		if err == nil && len(a) == 2 {
			return net.JoinHostPort(a[0], a[1]), nil
		}
		last = err
	}
	return "", fmt.Errorf("no sentinel names the master: %v", last)
}

// WaitFailover waits until the Sentinels name a master other than old and that server
// answers as a master.
func (r *Replicated) WaitFailover(ctx context.Context, old string) (string, error) {
	var addr string
	err := waitFor(ctx, "failover from "+old, func(c context.Context) bool {
		a, err := r.MasterAddr(c)
		if err != nil || a == old {
			return false
		}
		addr = a
		return r.infoField(c, a, "replication", "role") == "master"
	})
	return addr, err
}

// Server is the running server at addr, or nil.
func (r *Replicated) Server(addr string) *Redis {
	for _, s := range r.Servers {
		if s.Addr == addr {
			return s
		}
	}
	return nil
}

// Restart starts server i again, once it has exited (killed by a test), on its address
// and in its directory, as a replica of the master the Sentinels name now: what a restarted
// pod of config/redis does. The Sentinels then list it again among the master's replicas.
// If they still name it the master (it came back before they deemed it down), it starts
// as the master again, from its own append-only file.
func (r *Replicated) Restart(ctx context.Context, i int) error {
	old := r.Servers[i]
	select {
	case <-old.Done():
	default:
		return fmt.Errorf("redis server %s is still running", old.Addr)
	}
	master, err := r.MasterAddr(ctx)
	if err != nil {
		return err
	}
	_, port, _ := net.SplitHostPort(old.Addr)
	p, _ := strconv.Atoi(port)
	var flags []string
	if master != old.Addr {
		host, mport, _ := net.SplitHostPort(master)
		flags = []string{"--replicaof", host + " " + mport}
	}
	s, err := r.startServer(ctx, i, p, true, flags...)
	if err != nil {
		return err
	}
	r.Servers[i] = s
	return nil
}

// WaitReplica waits until the server at addr is a replica whose link to its master is up.
func (r *Replicated) WaitReplica(ctx context.Context, addr string) error {
	return waitFor(ctx, addr+" to replicate", func(c context.Context) bool {
		return r.infoField(c, addr, "replication", "role") == "slave" && r.infoField(c, addr, "replication", "master_link_status") == "up"
	})
}

// Pause stops (SIGSTOP) or resumes (SIGCONT) server s: a paused replica holds its
// connections but acknowledges nothing, like one stuck or cut off.
func Pause(s *Redis, paused bool) error {
	sig := syscall.SIGCONT
	if paused {
		sig = syscall.SIGSTOP
	}
	return syscall.Kill(s.Pid(), sig)
}

// Stop stops the Sentinels first (so that they run no failover while the servers stop),
// then the servers; a paused server is resumed so that it can stop.
func (r *Replicated) Stop() {
	for _, s := range r.Sentinels {
		_ = s.Stop(5 * time.Second)
	}
	for _, s := range r.Servers {
		_ = Pause(s, false)
		_ = s.Stop(5 * time.Second)
	}
}

// infoField is one field of a server's INFO section, "" when unreadable.
func (r *Replicated) infoField(ctx context.Context, addr, section, field string) string {
	c := redis.NewClient(&redis.Options{Addr: addr, Password: r.password, MaxRetries: -1})
	defer c.Close()
	info, err := c.InfoMap(ctx, section).Result()
	if err != nil {
		return ""
	}
	for _, fields := range info { // the one section asked for
		if v, ok := fields[field]; ok {
			return v
		}
	}
	return ""
}

// waitFor polls ok every 50 ms for up to 30 s (less when ctx ends first).
func waitFor(ctx context.Context, what string, ok func(context.Context) bool) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		done := ok(pctx)
		pcancel()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// StartReplicatedFor starts a primary, replicas and three Sentinels for test t (its
// temporary directory, stopped when it ends), failing t when they do not start.
func StartReplicatedFor(t testing.TB, replicas int) *Replicated {
	t.Helper()
	r, err := StartReplicated(context.Background(), ReplicatedOptions{Dir: t.TempDir(), Replicas: replicas, Sentinels: 3})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Stop)
	return r
}

// PasswordFile is the file holding ReplicatedOptions.Password ("" without one), for the
// daemons' --redis-password-file and --redis-sentinel-password-file.
func (r *Replicated) PasswordFile() string { return r.passwordFile }

// Store is how a daemon reaches r: through its Sentinels, with its password.
func (r *Replicated) Store() store.Options {
	return store.Options{SentinelAddrs: r.SentinelAddrs(), MasterName: SentinelMaster,
		PasswordFile: r.passwordFile, SentinelPasswordFile: r.passwordFile}
}

// Connect is store.Connect through r's Sentinels (with its password) with o's other
// options, closed when t ends.
func (r *Replicated) Connect(t testing.TB, o store.Options) redis.UniversalClient {
	t.Helper()
	s := r.Store()
	o.SentinelAddrs, o.MasterName, o.PasswordFile, o.SentinelPasswordFile = s.SentinelAddrs, s.MasterName, s.PasswordFile, s.SentinelPasswordFile
	c, err := store.Connect(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}
