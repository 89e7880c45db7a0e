// Package chaos_test runs the whole system as it runs in production, replicated, and breaks
// it while signals flow: the local stack (test/stack/localstack, as `make run
// ARGS='-redis=sentinel -executors=3 -webhookd=2 -mcpd=2'` starts it) with three
// executors, two webhookd and two mcpd behind nginx, the manager, authd, the local control
// plane, and a Sentinel-managed Redis (a primary, two replicas, three Sentinels), every one
// a real process under a supervisor. While 100 paper bots receive signals at a steady
// rate, the test kills (SIGKILL) an executor, a webhookd and the Redis primary at random
// moments, each restarted by its supervisor as Kubernetes would, and then reconciles what
// every sender was told with what the system did.
package chaos_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	goredis "github.com/redis/go-redis/v9"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
	"github.com/sigops/sigops/test/load"
	"github.com/sigops/sigops/test/stack"
	"github.com/sigops/sigops/test/stack/localstack"
)

const (
	bots = 100
	// rate signals a second for runFor, open loop: a stall does not slow the sender.
	rate   = 300
	runFor = 60 * time.Second
	conns  = 64
	// drainBound is how long after the last answer every accepted signal may take to have
	// its result (a dead executor's partitions wait for their lease to lapse).
	drainBound = 2 * time.Minute
	// retryFor is how long a sender retries a request that got no answer, a 502, 503 or
	// 504, with its Idempotency-Key: longer than any repair takes.
	retryFor = 30 * time.Second
	// seedEnv replays a run's fault schedule (the test logs its seed).
	seedEnv = "SIGOPS_CHAOS_SEED"
)

// TestSignalsSurviveCrashesAndFailover is the reconciliation after the faults: every
// signal answered with a signal ID has exactly one result, no signal placed two orders,
// each bot's signals executed in the order they arrived, every paper balance is its
// initial balance plus the booked PnL net of fees to the last decimal, and every daemon is
// back. The figures per fault (sent, acknowledged, p99 of the answers, p99 from answer to
// result) are logged for docs/benchmarks.md.
func TestSignalsSurviveCrashesAndFailover(t *testing.T) {
	runChaos(t, localstack.RedisSentinel)
}

// TestSignalsSurviveAClusterMasterFailover is the same run on a Redis Cluster of three
// masters with a replica each (`make run ARGS='-redis=cluster …'`), whose Redis fault is a
// kill -9 of one master: its replica takes over its slots, and every signal acknowledged
// before is still there, because each write waited for the slot's replica (WAIT on the
// slot's master).
func TestSignalsSurviveAClusterMasterFailover(t *testing.T) {
	runChaos(t, localstack.RedisCluster)
}

// runChaos runs the replicated system on redis (a localstack Redis topology), breaks it
// while signals flow and reconciles.
func runChaos(t *testing.T, redis string) {
	if testing.Short() {
		t.Skip("starts the whole system and runs it for a minute")
	}
	ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	seed := seedOf(t)
	ctx := t.Context()
	s := startChaosStack(ctx, t, redis)
	began := time.Now()
	fleet, err := load.Setup(ctx, s.Client, load.SetupOptions{Bots: bots})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bots Ready in %.1f s", len(fleet.Bots), time.Since(began).Seconds())
	rdb, err := store.Connect(ctx, s.Store())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	checker := load.NewChecker(rdb, fleet)
	runner, err := load.NewRunner(load.Target{BaseURL: s.BaseURL(), RootCAs: s.roots}, fleet.Paths())
	if err != nil {
		t.Fatal(err)
	}

	faults := s.schedule(rand.New(rand.NewPCG(seed, seed)))
	watch := s.watchReadiness(ctx)
	injected := make(chan error, 1)
	start := time.Now()
	go func() { injected <- inject(ctx, t, start, faults) }()
	res, err := runner.Run(ctx, load.Scenario{Name: "chaos", Rate: rate, Duration: runFor, Connections: conns, Retry: retryFor})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-injected; err != nil {
		t.Fatal(err)
	}
	unready := watch()
	rec, err := checker.Reconcile(ctx, res, drainBound)
	if err != nil {
		t.Fatal(err)
	}
	report(t, res, rec, checker, faults, unready, s.counter("sigops_queue_unconfirmed_total"), s.counter("sigops_queue_lost_entries_total"))
	if !rec.OK() {
		t.Fatalf("reconciliation failed: %s", rec.Problems())
	}
	// The sender retries what the faults interrupt, so every signal must end acknowledged:
	// a refusal (a bot disabled by a Redis failover, say) is a signal its sender lost.
	if len(res.Accepted) != res.Sent {
		t.Errorf("%d of %d signals acknowledged; answers %v", len(res.Accepted), res.Sent, res.Outcomes)
	}
	// The killed executor was archiving its partitions too: PostgreSQL holds every result
	// and order once (before checkBalances, whose closes add their own).
	if err := load.WaitArchived(ctx, s.DatabaseURL(), fleet, len(res.Accepted), rec.Orders, time.Minute); err != nil {
		t.Error(err)
	}
	s.checkRecovered(ctx, t)
	checkBalances(ctx, t, rdb, s, fleet)
}

// seedOf is the fault schedule's seed: seedEnv's value, or a new one, logged for a replay.
func seedOf(t *testing.T) uint64 {
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv(seedEnv); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", seedEnv, v, err)
		}
		seed = n
	}
	t.Logf("fault schedule seed %d (replay with %s=%d)", seed, seedEnv, seed)
	return seed
}

// fault is one thing broken during the run.
type fault struct {
	name string
	// at is when, after the run starts, it is injected.
	at time.Duration
	// breakIt injects it and returns a function that waits until the system has repaired
	// it (the process restarted and ready, the failover done), and one (nil for none) that
	// waits until it is whole again beyond that (the old primary back as a replica).
	breakIt func(ctx context.Context) (repaired, restored func(context.Context) error, err error)
	// injected, repaired and restored are when that happened.
	injected, repaired, restored time.Time
}

// schedule orders the three faults at random, each at a random moment of its own third of
// the run, and picks the executor and webhookd replicas to kill.
func (s *chaosStack) schedule(rng *rand.Rand) []*fault {
	ex, hook := s.executor[rng.IntN(len(s.executor))], s.webhookd[rng.IntN(len(s.webhookd))]
	faults := []*fault{
		{name: "kill -9 " + ex.Name(), breakIt: killSupervised(ex)},
		{name: "kill -9 " + hook.Name(), breakIt: killSupervised(hook)},
		{name: "kill -9 redis primary", breakIt: s.failOver},
	}
	if s.Cluster() != nil {
		faults[2] = &fault{name: "kill -9 redis cluster master", breakIt: s.failOverClusterMaster(rng)}
	}
	rng.Shuffle(len(faults), func(i, j int) { faults[i], faults[j] = faults[j], faults[i] })
	third := runFor / 3
	for i, f := range faults {
		// Clear of the run's first and last 5 s, so that each fault has calm on both sides.
		f.at = time.Duration(i)*third + 5*time.Second + time.Duration(rng.Int64N(int64(third-10*time.Second)))
	}
	return faults
}

// inject breaks each fault at its moment and waits for its repair before the next.
func inject(ctx context.Context, t *testing.T, start time.Time, faults []*fault) error {
	for _, f := range faults {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Until(start.Add(f.at))):
		}
		f.injected = time.Now()
		repaired, restored, err := f.breakIt(ctx)
		if err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		if err := repaired(ctx); err != nil {
			return fmt.Errorf("%s: not repaired: %w", f.name, err)
		}
		f.repaired, f.restored = time.Now(), time.Now()
		if restored != nil {
			if err := restored(ctx); err != nil {
				return fmt.Errorf("%s: not restored: %w", f.name, err)
			}
			f.restored = time.Now()
		}
		t.Logf("%s at %.1f s; repaired after %.1f s, whole again after %.1f s", f.name, f.injected.Sub(start).Seconds(),
			f.repaired.Sub(f.injected).Seconds(), f.restored.Sub(f.injected).Seconds())
	}
	return nil
}

// killSupervised kills a daemon's process; it is repaired once its supervisor restarted it
// and the new process is ready.
func killSupervised(d *stack.Supervised) func(context.Context) (func(context.Context) error, func(context.Context) error, error) {
	return func(context.Context) (func(context.Context) error, func(context.Context) error, error) {
		before := d.Restarts()
		if err := d.Kill(); err != nil {
			return nil, nil, err
		}
		return func(ctx context.Context) error {
			if err := waitRestarted(ctx, d, before); err != nil {
				return err
			}
			return d.WaitReady(ctx, time.Minute)
		}, nil, nil
	}
}

// failOver kills the Redis primary; it is repaired once the Sentinels promoted a replica
// (the service is back), and whole again once the old primary, restarted by its
// supervisor, replicates from the new one (its full sync waits the shipped 5 s
// repl-diskless-sync-delay).
func (s *chaosStack) failOver(ctx context.Context) (func(context.Context) error, func(context.Context) error, error) {
	r := s.Sentinel()
	old, err := r.MasterAddr(ctx)
	if err != nil {
		return nil, nil, err
	}
	i := slices.Index(s.RedisAddrs(), old)
	if i < 0 {
		return nil, nil, fmt.Errorf("the master %s is none of the servers %v", old, s.RedisAddrs())
	}
	sup := s.Daemon(fmt.Sprintf("redis-%d", i))
	before := sup.Restarts()
	if err := sup.Kill(); err != nil {
		return nil, nil, err
	}
	repaired := func(ctx context.Context) error {
		_, err := r.WaitFailover(ctx, old)
		return err
	}
	restored := func(ctx context.Context) error {
		if err := waitRestarted(ctx, sup, before); err != nil {
			return err
		}
		return r.WaitReplica(ctx, old)
	}
	return repaired, restored, nil
}

// waitRestarted waits until d's supervisor has started it again since it had before
// restarts.
func waitRestarted(ctx context.Context, d *stack.Supervised, before int) error {
	for d.Restarts() == before {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return nil
}

// failOverClusterMaster kills one of the Cluster's masters, picked by rng; it is repaired
// once its replica serves its slots (the others have marked it failed and the cluster is
// healthy again), and whole again once the old master, restarted by its supervisor, has
// rejoined as the new master's replica with its link up.
func (s *chaosStack) failOverClusterMaster(rng *rand.Rand) func(context.Context) (func(context.Context) error, func(context.Context) error, error) {
	return func(ctx context.Context) (func(context.Context) error, func(context.Context) error, error) {
		c := s.Cluster()
		masters := c.Masters(ctx)
		if len(masters) == 0 {
			return nil, nil, fmt.Errorf("no master among %v", c.Addrs())
		}
		i := masters[rng.IntN(len(masters))]
		old := c.Nodes[i].Addr
		sup := s.Daemon(fmt.Sprintf("redis-%d", i))
		before := sup.Restarts()
		if err := sup.Kill(); err != nil {
			return nil, nil, err
		}
		repaired := func(ctx context.Context) error {
			return storetest.WaitFor(ctx, func() error { return clusterWithout(ctx, c, old) })
		}
		restored := func(ctx context.Context) error {
			if err := waitRestarted(ctx, sup, before); err != nil {
				return err
			}
			return storetest.WaitFor(ctx, func() error { return replicaLinked(ctx, c.Nodes[i].Addr) })
		}
		return repaired, restored, nil
	}
}

// clusterWithout is nil once every other node deems the node at addr failed and reports
// the cluster healthy: another node serves its slots.
func clusterWithout(ctx context.Context, c *stack.RedisCluster, addr string) error {
	for _, n := range c.Nodes {
		if n.Addr == addr {
			continue
		}
		rdb := n.Client()
		nodes, err := rdb.ClusterNodes(ctx).Result()
		info, ierr := rdb.ClusterInfo(ctx).Result()
		_ = rdb.Close()
		if err != nil || ierr != nil {
			return fmt.Errorf("node %s: %v %v", n.Addr, err, ierr)
		}
		if !strings.Contains(info, "cluster_state:ok") {
			return fmt.Errorf("node %s: cluster not healthy yet", n.Addr)
		}
		failed := false
		for _, line := range strings.Split(nodes, "\n") {
			f := strings.Fields(line)
			if len(f) > 2 && strings.HasPrefix(f[1], addr+"@") && strings.Contains(f[2], "fail") && !strings.Contains(f[2], "fail?") {
				failed = true
			}
		}
		if !failed {
			return fmt.Errorf("node %s does not deem %s failed yet", n.Addr, addr)
		}
	}
	return nil
}

// replicaLinked is nil once the node at addr is a replica whose link to its master is up.
func replicaLinked(ctx context.Context, addr string) error {
	rdb := goredis.NewClient(&goredis.Options{Addr: addr})
	defer rdb.Close()
	info, err := rdb.Info(ctx, "replication").Result()
	if err != nil {
		return err
	}
	if !strings.Contains(info, "role:slave") || !strings.Contains(info, "master_link_status:up") {
		return fmt.Errorf("%s is not a linked replica yet", addr)
	}
	return nil
}
