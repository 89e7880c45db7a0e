// Package storetest starts real, throwaway Redis for tests: one redis-server, or, when the
// environment variable SIGOPS_TEST_REDIS is "cluster", a Redis Cluster of three masters.
// Every caller gets its own Redis on free loopback ports, so tests never share state, and
// the same tests run unchanged on both (`make test` runs the Redis-backed packages once
// each way): a script or transaction whose keys fall in more than one slot fails on the
// cluster.
package storetest

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// ModeEnv names the environment variable that chooses the Redis the tests get: "cluster"
// for a Redis Cluster, anything else for one server.
const ModeEnv = "SIGOPS_TEST_REDIS"

// ServerEnv names the environment variable that chooses the server program every test and
// the local stack run: "redis-server" when unset, or another RESP server that takes
// redis-server's flags, such as "valkey-server" (a name on PATH or a path). Its Sentinels
// run as the same program with --sentinel.
const ServerEnv = "SIGOPS_REDIS_SERVER"

// ServerBinary is the path of the server program ServerEnv names.
func ServerBinary() (string, error) {
	name := os.Getenv(ServerEnv)
	if name == "" {
		name = "redis-server"
	}
	path, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("%s not found: run hack/install-deps.sh (make deps), or set %s to a server that is installed", name, ServerEnv)
	}
	return path, nil
}

// ClusterMode reports whether the tests run on a Redis Cluster (ModeEnv is "cluster").
func ClusterMode() bool { return os.Getenv(ModeEnv) == "cluster" }

// Server is a running Redis: one redis-server, or the masters of a Redis Cluster. Addr and
// ClusterAddrs are what runtime/store.Options takes, so store.Options{Addr: s.Addr,
// ClusterAddrs: s.ClusterAddrs} reaches either.
type Server struct {
	// Addr is a single server's address; empty on a cluster.
	Addr string
	// ClusterAddrs are a cluster's masters; empty for a single server.
	ClusterAddrs []string
	// Replicas are a replicated cluster's replicas, one per master in the order of
	// ClusterAddrs (StartReplicatedCluster); empty otherwise.
	Replicas []string
	// busPorts are the cluster nodes' bus ports, in the order of ClusterAddrs.
	busPorts []int
	procs    []*exec.Cmd
	dirs     []string
}

// Start starts what ModeEnv asks for: StartCluster or StartServer.
func Start() (*Server, error) {
	if ClusterMode() {
		return StartCluster()
	}
	return StartServer()
}

// StartServer runs one redis-server on a free port with persistence off. It fails (never
// skips) when redis-server is missing: `make test` installs it, and a skipped test proves
// nothing.
func StartServer() (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	s := &Server{}
	addr, err := s.launch(port, false)
	if err != nil {
		s.Stop()
		return nil, err
	}
	s.Addr = addr
	return s, nil
}

// clusterMasters is how many masters StartCluster runs: the fewest Redis Cluster accepts
// as healthy, and enough that keys of different slots land on different processes.
const clusterMasters = 3

// StartCluster runs a Redis Cluster of three masters (no replicas) on free ports, each with
// a temporary directory for its nodes.conf and persistence off, assigns the 16,384 slots in
// three ranges, joins the nodes and waits until every node reports the cluster healthy. A
// free port can be taken by another process before its node binds it (six per cluster), so
// a failed start is tried again on new ports.
func StartCluster() (s *Server, err error) {
	for range 3 {
		if s, err = startCluster(); err == nil {
			return s, nil
		}
	}
	return nil, err
}

func startCluster() (*Server, error) {
	ports, err := freePorts(2 * clusterMasters) // a client port and a bus port per node
	if err != nil {
		return nil, err
	}
	s := &Server{busPorts: ports[clusterMasters:]}
	for _, port := range ports[:clusterMasters] {
		addr, err := s.launch(port, true)
		if err != nil {
			s.Stop()
			return nil, err
		}
		s.ClusterAddrs = append(s.ClusterAddrs, addr)
	}
	if err := s.formCluster(); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// StartReplicatedCluster is StartCluster with a replica behind each master (six
// processes): what a production Cluster runs, so that a write can wait for its slot's
// replica (WAIT) and a master can fail over. Replicas lists the replicas' addresses in the
// order of their masters in ClusterAddrs.
func StartReplicatedCluster() (s *Server, err error) {
	for range 3 {
		if s, err = startCluster(); err != nil {
			continue
		}
		if err = s.addReplicas(); err == nil {
			return s, nil
		}
		s.Stop()
	}
	return nil, err
}

// addReplicas starts a replica for each master and joins it (JoinReplicas).
func (s *Server) addReplicas() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ports, err := freePorts(2 * clusterMasters)
	if err != nil {
		return err
	}
	s.busPorts = append(s.busPorts, ports[clusterMasters:]...)
	for _, port := range ports[:clusterMasters] {
		addr, err := s.launch(port, true)
		if err != nil {
			return err
		}
		s.Replicas = append(s.Replicas, addr)
	}
	return JoinReplicas(ctx, s.ClusterAddrs, s.Replicas, s.busPorts[clusterMasters:])
}

// JoinReplicas makes each new node of replicas (bus ports in the same order) the replica
// of the master at the same place in masters: it is introduced to the cluster and told to
// replicate that master. A node that already knows others (it joined on an earlier start,
// and may be a master since a failover) is left as it is. It returns once every node is
// known to all and each joined replica's link to its master is up, or ctx ends.
func JoinReplicas(ctx context.Context, masters, replicas []string, busPorts []int) error {
	if len(replicas) != len(masters) || len(busPorts) != len(replicas) {
		return fmt.Errorf("join %d replicas with %d bus ports to %d masters", len(replicas), len(busPorts), len(masters))
	}
	seed := redis.NewClient(&redis.Options{Addr: masters[0]})
	defer seed.Close()
	var joined []string
	for i, addr := range replicas {
		replica := redis.NewClient(&redis.Options{Addr: addr})
		info, err := replica.ClusterInfo(ctx).Result()
		if err != nil {
			_ = replica.Close()
			return fmt.Errorf("cluster info of %s: %w", addr, err)
		}
		if known, _ := strconv.Atoi(ClusterInfoField(info, "cluster_known_nodes")); known > 1 {
			_ = replica.Close()
			continue
		}
		master := redis.NewClient(&redis.Options{Addr: masters[i]})
		id, err := master.Do(ctx, "cluster", "myid").Text()
		_ = master.Close()
		if err != nil {
			_ = replica.Close()
			return err
		}
		host, p, _ := net.SplitHostPort(addr)
		if err := seed.Do(ctx, "cluster", "meet", host, p, busPorts[i]).Err(); err != nil {
			_ = replica.Close()
			return fmt.Errorf("cluster meet %s: %w", addr, err)
		}
		// The replica must know the master's node ID first: retried until the meeting has
		// told it.
		err = WaitFor(ctx, func() error { return replica.Do(ctx, "cluster", "replicate", id).Err() })
		_ = replica.Close()
		if err != nil {
			return fmt.Errorf("cluster replicate on %s: %w", addr, err)
		}
		joined = append(joined, addr)
	}
	for _, a := range joined {
		replica := redis.NewClient(&redis.Options{Addr: a})
		err := WaitFor(ctx, func() error {
			info, err := replica.Info(ctx, "replication").Result()
			if err != nil {
				return err
			}
			if !strings.Contains(info, "master_link_status:up") {
				return fmt.Errorf("replica %s: link to its master not up yet", a)
			}
			return nil
		})
		_ = replica.Close()
		if err != nil {
			return err
		}
	}
	return WaitClusterHealthy(ctx, append(append([]string{}, masters...), replicas...))
}

// WaitFor retries fn every 50 ms until it succeeds, or returns its last error once ctx
// ends.
func WaitFor(ctx context.Context, fn func() error) error {
	for {
		err := fn()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %v)", ctx.Err(), err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// KillNode kills the cluster node at addr (a master or a replica) with SIGKILL, as a
// crash would: it neither saves nor tells the others.
func (s *Server) KillNode(addr string) error {
	all := append(append([]string{}, s.ClusterAddrs...), s.Replicas...)
	for i, a := range all {
		if a == addr && i < len(s.procs) && s.procs[i].Process != nil {
			return s.procs[i].Process.Kill()
		}
	}
	return fmt.Errorf("storetest: no node at %s", addr)
}

// launch starts one redis-server on port (a cluster node, with the next of s.busPorts, if
// cluster), waits until it answers and returns its address.
func (s *Server) launch(port int, cluster bool) (string, error) {
	path, err := ServerBinary()
	if err != nil {
		return "", err
	}
	args := []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port),
		"--save", "", "--appendonly", "no", "--protected-mode", "yes"}
	if cluster {
		removeStaleDirs.Do(removeDeadProcessesDirs)
		dir, err := os.MkdirTemp("", fmt.Sprintf("%s%d-", clusterDirPrefix, os.Getpid()))
		if err != nil {
			return "", err
		}
		s.dirs = append(s.dirs, dir)
		bus := s.busPorts[len(s.dirs)-1]
		args = append(args, "--dir", dir, "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-port", strconv.Itoa(bus), "--cluster-node-timeout", "5000")
	}
	cmd := exec.Command(path, args...)
	// The server ends with the test process even when no cleanup runs (a pooled server
	// outlives the tests; the process exits).
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return "", err
	}
	if err := cmd.Start(); err != nil {
		return "", err
	}
	s.procs = append(s.procs, cmd)
	exited := make(chan struct{})
	go func() { // drain the log so redis never blocks on a full pipe
		sc := bufio.NewScanner(out)
		for sc.Scan() {
		}
		close(exited) // the pipe closes when the server exits
	}()
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := c.Ping(context.Background()).Err()
		if err == nil {
			return addr, nil
		}
		select {
		case <-exited:
			return "", fmt.Errorf("redis-server on %s exited (its port may have been taken): %w", addr, err)
		default:
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("redis-server on %s did not answer: %w", addr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// clusterDirPrefix names the cluster nodes' temporary directories, followed by the test
// process's ID: a pooled cluster's directories outlive its process, and the next process
// removes those whose process is gone.
const clusterDirPrefix = "sigops-redis-cluster-"

var removeStaleDirs sync.Once

// removeDeadProcessesDirs removes the cluster directories of test processes that have
// exited.
func removeDeadProcessesDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), clusterDirPrefix+"*"))
	for _, d := range dirs {
		rest := strings.TrimPrefix(filepath.Base(d), clusterDirPrefix)
		pid, err := strconv.Atoi(strings.SplitN(rest, "-", 2)[0])
		if err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(err) {
			_ = os.RemoveAll(d)
		}
	}
}

// formCluster forms s's nodes into one cluster (FormCluster).
func (s *Server) formCluster() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return FormCluster(ctx, s.ClusterAddrs, s.busPorts)
}

// FormCluster makes a Redis Cluster of new, empty cluster-enabled nodes (addrs, with
// their cluster bus ports in the same order): it gives each master an equal range of the
// 16,384 slots, introduces the nodes to each other and waits until every node reports
// the cluster healthy with all of them known. The local stack forms its cluster this way
// too.
func FormCluster(ctx context.Context, addrs []string, busPorts []int) error {
	if len(addrs) == 0 || len(busPorts) != len(addrs) {
		return fmt.Errorf("form a cluster of %d nodes with %d bus ports", len(addrs), len(busPorts))
	}
	nodes := make([]*redis.Client, len(addrs))
	for i, a := range addrs {
		nodes[i] = redis.NewClient(&redis.Options{Addr: a})
		defer nodes[i].Close()
	}
	const slots = 16384
	for i, n := range nodes {
		first, last := i*slots/len(nodes), (i+1)*slots/len(nodes)-1
		if err := n.Do(ctx, "cluster", "addslotsrange", first, last).Err(); err != nil {
			return fmt.Errorf("cluster addslotsrange on %s: %w", addrs[i], err)
		}
	}
	for i := 1; i < len(nodes); i++ {
		host, port, _ := net.SplitHostPort(addrs[i])
		if err := nodes[0].Do(ctx, "cluster", "meet", host, port, busPorts[i]).Err(); err != nil {
			return fmt.Errorf("cluster meet %s: %w", addrs[i], err)
		}
	}
	return WaitClusterHealthy(ctx, addrs)
}

// WaitClusterHealthy waits until every node at addrs reports cluster_state:ok with all of
// them known (a formed cluster's nodes restarted from their nodes.conf find each other
// again), until ctx ends.
func WaitClusterHealthy(ctx context.Context, addrs []string) error {
	for _, a := range addrs {
		n := redis.NewClient(&redis.Options{Addr: a, MaxRetries: -1})
		for {
			info, err := n.ClusterInfo(ctx).Result()
			if err == nil && clusterReady(info, len(addrs)) {
				break
			}
			select {
			case <-ctx.Done():
				_ = n.Close()
				return fmt.Errorf("redis cluster node %s did not become healthy: %s (%v)", a, info, err)
			case <-time.After(50 * time.Millisecond):
			}
		}
		_ = n.Close()
	}
	return nil
}

// clusterReady reads CLUSTER INFO: healthy, and every node known.
func clusterReady(info string, nodes int) bool {
	known, _ := strconv.Atoi(ClusterInfoField(info, "cluster_known_nodes"))
	return ClusterInfoField(info, "cluster_state") == "ok" && known == nodes
}

// ClusterInfoField is one field of a CLUSTER INFO reply ("" when absent).
func ClusterInfoField(info, field string) string {
	for _, line := range strings.Split(info, "\r\n") {
		if k, v, _ := strings.Cut(line, ":"); k == field {
			return v
		}
	}
	return ""
}

// Stop kills the servers and removes their directories.
func (s *Server) Stop() {
	for _, cmd := range s.procs {
		if cmd.Process != nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	}
	s.procs = nil
	for _, d := range s.dirs {
		_ = os.RemoveAll(d)
	}
	s.dirs = nil
}

// Restart kills the servers and starts new ones on the same ports. Persistence is off, so
// the new servers are empty: to its clients, a Redis that lost everything (a restart with an
// empty data directory). A cluster is formed again.
func (s *Server) Restart() error {
	addrs := s.ClusterAddrs
	if !s.Cluster() {
		addrs = []string{s.Addr}
	}
	ports := make([]int, len(addrs))
	for i, a := range addrs {
		_, p, err := net.SplitHostPort(a)
		if err != nil {
			return err
		}
		if ports[i], err = strconv.Atoi(p); err != nil {
			return err
		}
	}
	s.Stop()
	for _, port := range ports {
		if _, err := s.launch(port, s.Cluster()); err != nil {
			return err
		}
	}
	if s.Cluster() {
		return s.formCluster()
	}
	return nil
}

// Cluster reports whether s is a Redis Cluster.
func (s *Server) Cluster() bool { return len(s.ClusterAddrs) > 0 }

// Client returns a new client of the server: a *redis.ClusterClient on a cluster, a
// *redis.Client otherwise.
func (s *Server) Client() redis.UniversalClient {
	if s.Cluster() {
		return redis.NewClusterClient(&redis.ClusterOptions{Addrs: s.ClusterAddrs})
	}
	return redis.NewClient(&redis.Options{Addr: s.Addr})
}

// New starts a Redis (Start) for one test and stops it when the test ends.
func New(t testing.TB) (*Server, redis.UniversalClient) {
	t.Helper()
	return started(t, ClusterMode(), Start)
}

// NewServer is New for a test about one server (a Sentinel's master, a migration of a
// server's data), whatever ModeEnv says: it always starts one redis-server.
func NewServer(t testing.TB) (*Server, redis.UniversalClient) {
	t.Helper()
	return started(t, false, StartServer)
}

// started takes a Redis of the kind asked (a cluster or one server) from the process's
// pool of idle ones, or starts one, and gives it back to the pool when the test ends.
func started(t testing.TB, cluster bool, start func() (*Server, error)) (*Server, redis.UniversalClient) {
	t.Helper()
	s, err := take(cluster, start)
	if err != nil {
		t.Fatal(err)
	}
	c := s.Client()
	t.Cleanup(func() { _ = c.Close(); s.release(cluster) })
	return s, c
}

// Reuse across the tests of a package.
//
// Starting a Redis Cluster takes about a second (six processes' worth of ports, forming,
// waiting for every node to agree), and a package whose tests each start one spent most of
// `make test-cluster` doing it. So a test's Redis goes back to a pool of its process when
// the test ends, and the next test of the process takes it, emptied and reset as a new one
// would be: every key gone (FLUSHALL on every master), no script cached, the settings a
// test may change set back (maxmemory, the eviction policy), and the test's leftover
// client connections closed. A Redis the test broke (stopped, killed, locked with a
// password) fails the reset and is stopped instead; tests running in parallel each get
// their own. The servers run with the test process as their parent-death signal's
// target, so they end with the process (Pdeathsig: Linux, which is what the tests run on).
var pool struct {
	sync.Mutex
	idle map[bool][]*Server
}

// take is an idle pooled Redis of the kind, reset, or a new one from start.
func take(cluster bool, start func() (*Server, error)) (*Server, error) {
	for {
		pool.Lock()
		idle := pool.idle[cluster]
		if len(idle) == 0 {
			pool.Unlock()
			return start()
		}
		s := idle[len(idle)-1]
		pool.idle[cluster] = idle[:len(idle)-1]
		pool.Unlock()
		if err := s.reset(); err == nil {
			return s, nil
		}
		s.Stop()
	}
}

// waitPublishesDelivered waits until every message published on a cluster node has reached
// the other nodes. A node forwards a PUBLISH to the others over the cluster bus, and a
// message still on its way when a test ends would reach a subscriber of the next test on
// the same channel (a bot's events, say). The bus counts what it sent and received by
// message type (CLUSTER INFO), so the nodes are quiet when the two sums agree.
func waitPublishesDelivered(ctx context.Context, c redis.UniversalClient) error {
	for {
		var mu sync.Mutex
		var sent, received int64
		err := ForEachNode(ctx, c, func(ctx context.Context, n *redis.Client) error {
			info, err := n.ClusterInfo(ctx).Result()
			if err != nil {
				return err
			}
			s, _ := strconv.ParseInt(ClusterInfoField(info, "cluster_stats_messages_publish_sent"), 10, 64)
			r, _ := strconv.ParseInt(ClusterInfoField(info, "cluster_stats_messages_publish_received"), 10, 64)
			mu.Lock()
			sent, received = sent+s, received+r
			mu.Unlock()
			return nil
		})
		if err != nil || sent == received {
			return err
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("storetest: published messages still on their way: %d sent, %d received", sent, received)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// release resets s and puts it in the pool, or stops it when it cannot be reset.
func (s *Server) release(cluster bool) {
	if len(s.Replicas) > 0 || s.Cluster() != cluster || s.reset() != nil {
		s.Stop()
		return
	}
	pool.Lock()
	defer pool.Unlock()
	if pool.idle == nil {
		pool.idle = map[bool][]*Server{}
	}
	pool.idle[cluster] = append(pool.idle[cluster], s)
}

// reset makes s as a new server is: empty, no script, default settings, no client but
// its own.
func (s *Server) reset() error {
	if len(s.procs) == 0 {
		return fmt.Errorf("storetest: stopped")
	}
	c := s.Client()
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if s.Cluster() {
		if err := waitPublishesDelivered(ctx, c); err != nil {
			return err
		}
	}
	return ForEachNode(ctx, c, func(ctx context.Context, n *redis.Client) error {
		_, err := n.Pipelined(ctx, func(p redis.Pipeliner) error {
			p.ClientKillByFilter(ctx, "TYPE", "normal", "SKIPME", "yes")
			p.ClientKillByFilter(ctx, "TYPE", "pubsub", "SKIPME", "yes")
			p.FlushAll(ctx)
			p.ScriptFlush(ctx)
			p.ConfigSet(ctx, "maxmemory", "0")
			p.ConfigSet(ctx, "maxmemory-policy", "noeviction")
			p.ConfigResetStat(ctx)
			return nil
		})
		return err
	})
}

func freePort() (int, error) {
	ports, err := freePorts(1)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// freePorts returns n distinct free ports: all are held open until all are found.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
