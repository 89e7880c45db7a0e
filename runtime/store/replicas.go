package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// DefaultReplicaAckTimeout bounds how long a write waits for its replicas (WAIT). A healthy
// replica on the same network acknowledges within a millisecond or two, and WAIT returns as
// soon as enough have, so the bound is paid only when a replica is down or far behind. Half a
// second keeps a signal's answer well inside a webhook sender's own time-out (a few seconds)
// and far below the client's 2 s read time-out, which the pipeline carrying WAIT runs under.
const DefaultReplicaAckTimeout = 500 * time.Millisecond

// MaxReplicaAckTimeout is the longest bound accepted: WAIT travels in a pipeline read under
// the client's 2 s read time-out, and a bound near it would turn a slow replica into a
// broken connection.
const MaxReplicaAckTimeout = time.Second

// ReplicasAuto is the value of --redis-min-replicas-ack that asks for one replica when the
// master has any and none otherwise.
const ReplicasAuto = "auto"

// ErrNotReplicated: a write reached fewer replicas than asked within the bound. The write is
// on the master all the same; it may be lost if the master fails before a replica has it.
var ErrNotReplicated = errors.New("redis: write not acknowledged by enough replicas")

// ackPolicy is how many replicas a client's writes of signals and order staging must reach.
type ackPolicy struct {
	min     int // -1: auto
	timeout time.Duration
	// sentinel: the master is found through Sentinels, whose deployment has replicas by
	// design, so auto waits for one whatever the master reports (see want).
	sentinel bool
	// seen is the connected replicas the master reported to the client's newest connection
	// (INFO replication on connect): a failover or a reconnect re-reads it.
	seen atomic.Int64
	// master is the run ID of the master the client's newest connection reached ("" none
	// yet); see MasterChanges.
	master atomic.Pointer[string]
}

// want is the number of replicas a write waits for. Auto is one under Sentinels: right
// after a failover the promoted master reports no replica until the others have
// reconnected, and a write it acknowledged alone would be lost with a second failover
// (the Sentinels may deem the new master down while it is busy taking them back). The
// write waits, and fails with ErrNotReplicated, until one has. On a single server auto is
// one when the master reported a replica to the client's newest connection, else none.
func (p *ackPolicy) want() int {
	if p == nil {
		return 0
	}
	if p.min >= 0 {
		return p.min
	}
	if p.sentinel {
		return 1
	}
	return int(min(1, p.seen.Load()))
}

// policies holds the ackPolicy of every client Connect made, so that writers reach it
// through the client they already hold.
var policies sync.Map // *redis.Client -> *ackPolicy

// parseMinReplicas reads --redis-min-replicas-ack: "" or "auto" is -1.
func parseMinReplicas(s string) (int, error) {
	if s == "" || s == ReplicasAuto {
		return -1, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("--%s must be %q or a number of replicas (0 or more), not %q", flagMinReplicasAck, ReplicasAuto, s)
	}
	return n, nil
}

// newAckPolicy is o's policy (a Cluster client's is kept per node: cluster_ack.go).
func (o Options) newAckPolicy() *ackPolicy {
	n, _ := parseMinReplicas(o.MinReplicasAck)
	t := o.ReplicaAckTimeout
	if t == 0 {
		t = DefaultReplicaAckTimeout
	}
	return &ackPolicy{min: n, timeout: t, sentinel: len(o.SentinelAddrs) > 0}
}

// onConnect records the connected replicas and the run ID a new connection's master
// reports. A Sentinel answers INFO without a master's replication fields and is skipped; so
// is a failed read, which never fails the connection. A command under a broken GuardMaster
// fails here, before it is sent on the connection.
func (p *ackPolicy) onConnect(ctx context.Context, cn *redis.Conn) error {
	info, err := cn.InfoMap(unguarded(ctx), "server", "replication").Result()
	if err != nil {
		return nil
	}
	if n, ok := connectedReplicas(info); ok {
		p.seen.Store(int64(n))
		p.noteMaster(info["Server"]["run_id"])
		if guardBroken(ctx) {
			return ErrMasterChanged // this connection reached the new master (GuardMaster)
		}
	}
	return nil
}

// connectedReplicas reads connected_slaves from INFO replication; ok is false for anything
// but a master's (a Sentinel's INFO has no such section).
func connectedReplicas(info map[string]map[string]string) (n int, ok bool) {
	fields := info["Replication"]
	if fields["role"] != "master" {
		return 0, false
	}
	n, err := strconv.Atoi(fields["connected_slaves"])
	return n, err == nil
}

// ack is what a write through a client waits for: n replicas (0: none) within timeout, on
// rc, the client as one whose pipelines run on one connection.
type ack struct {
	rc      *redis.Client
	n       int
	timeout time.Duration
	// topology labels a failed acknowledgement (sigops_redis_replica_ack_failures_total).
	topology string
}

// ackOf is c's ack; none for a client Connect did not make, a Cluster client, or none
// wanted.
func ackOf(c any) ack {
	rc, ok := c.(*redis.Client)
	if !ok {
		return ack{}
	}
	v, ok := policies.Load(rc)
	if !ok {
		return ack{}
	}
	p := v.(*ackPolicy)
	topology := topologySingle
	if p.sentinel {
		topology = topologySentinel
	}
	return ack{rc: rc, n: p.want(), timeout: p.timeout, topology: topology}
}

// ReplicasWanted is how many replicas a write through c waits for (0: none). On a Cluster
// it is the number for a node not known yet (under auto: one when any master reported a
// replica).
func ReplicasWanted(c any) int {
	if _, ca := clusterAckOf(c); ca != nil {
		return ca.wantAny()
	}
	return ackOf(c).n
}

// ClusterWaits reports whether c is a Cluster client whose writes wait for replicas
// (--redis-min-replicas-ack; under auto, once a master reported one). A write to another
// slot than the one a signal confirms (its bot's: the fence and WAIT of "a finished signal
// survives a failover") has a master of its own there, which that confirmation does not
// cover, so such a write must wait on its own slot's master (AckScript, AckPipelined).
func ClusterWaits(c any) bool {
	_, ca := clusterAckOf(c)
	return ca != nil && ca.wantAny() > 0
}

// Pipeliner is a client that runs pipelines.
type Pipeliner interface {
	Pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error)
}

// AckPipelined runs fn's commands in one pipeline on c and, when c's writes must reach
// replicas (--redis-min-replicas-ack), WAIT in the same pipeline: on the same connection,
// so WAIT counts the replicas holding everything fn wrote, in one round trip. It returns
// the commands' error first, then a wrapped ErrNotReplicated when WAIT answered fewer
// replicas than asked within the bound. Without replicas to wait for it is c.Pipelined(fn).
func AckPipelined(ctx context.Context, c Pipeliner, fn func(redis.Pipeliner) error) ([]redis.Cmder, error) {
	if cc, ca := clusterAckOf(c); ca != nil {
		return ca.pipelined(ctx, cc, fn)
	}
	a := ackOf(c)
	if a.n == 0 {
		return c.Pipelined(ctx, fn)
	}
	return a.pipelined(ctx, fn)
}

// pipelined runs fn's commands in one pipeline on a's client with WAIT at its end when a
// asks for replicas, and checks the WAIT's answer.
func (a ack) pipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error) {
	var wait *redis.Cmd
	cmds, err := a.rc.Pipelined(ctx, func(p redis.Pipeliner) error {
		if err := fn(p); err != nil {
			return err
		}
		if a.n > 0 {
			wait = a.wait(ctx, p)
		}
		return nil
	})
	if err != nil {
		return cmds, err
	}
	return cmds, a.check(wait)
}

// wait is WAIT on c for a's replicas within its bound. A Pipeliner has no Wait method, so
// it goes by Do.
func (a ack) wait(ctx context.Context, c interface {
	Do(context.Context, ...any) *redis.Cmd
}) *redis.Cmd {
	return c.Do(ctx, "wait", a.n, a.timeout.Milliseconds())
}

// check is ErrNotReplicated, wrapped with the count, unless WAIT reached a's replicas.
func (a ack) check(wait *redis.Cmd) error {
	if wait == nil {
		return nil // fn queued nothing to wait for
	}
	got, err := wait.Int64()
	if err != nil {
		return fmt.Errorf("redis: wait for replicas: %w", err)
	}
	if got < int64(a.n) {
		replicaAckFailures.WithLabelValues(a.topology).Inc()
		return fmt.Errorf("%w: %d of %d within %s", ErrNotReplicated, got, a.n, a.timeout)
	}
	return nil
}

// AckScript runs script s on c like s.Run (EVALSHA, and EVAL when the server lacks the
// script) and, when c's writes must reach replicas, WAIT in the same pipeline (see
// AckPipelined). The script's reply is the returned command's; its error is the script's,
// or a wrapped ErrNotReplicated.
func AckScript(ctx context.Context, c redis.Scripter, s *redis.Script, keys []string, args ...any) *redis.Cmd {
	a := ackOf(c)
	if cc, ca := clusterAckOf(c); ca != nil && len(keys) > 0 {
		var err error
		if a, err = ca.node(ctx, cc, keys[0]); err != nil {
			cmd := redis.NewCmd(ctx)
			cmd.SetErr(err)
			return cmd
		}
		if a.n == 0 {
			return s.Run(ctx, c, keys, args...) // through the Cluster client, which follows redirects
		}
		cmd := a.scriptAcked(ctx, s, keys, args...)
		ca.reloadOnMove(ctx, cc, cmd.Err())
		return cmd
	}
	if a.n == 0 {
		return s.Run(ctx, c, keys, args...)
	}
	return a.scriptAcked(ctx, s, keys, args...)
}

// scriptAcked runs s on a's client with WAIT after it (EVALSHA, and EVAL when the server
// lacks the script).
func (a ack) scriptAcked(ctx context.Context, s *redis.Script, keys []string, args ...any) *redis.Cmd {
	cmd := a.script(ctx, func(p redis.Pipeliner) *redis.Cmd { return s.EvalSha(ctx, p, keys, args...) })
	if redis.HasErrorPrefix(cmd.Err(), "NOSCRIPT") {
		cmd = a.script(ctx, func(p redis.Pipeliner) *redis.Cmd { return s.Eval(ctx, p, keys, args...) })
	}
	return cmd
}

// script pipelines the script call of eval and WAIT on a's client.
func (a ack) script(ctx context.Context, eval func(redis.Pipeliner) *redis.Cmd) *redis.Cmd {
	var cmd, wait *redis.Cmd
	_, err := a.rc.Pipelined(ctx, func(p redis.Pipeliner) error {
		cmd = eval(p)
		wait = a.wait(ctx, p)
		return nil
	})
	if cmd.Err() != nil {
		return cmd
	}
	if err == nil {
		err = a.check(wait)
	}
	if err != nil {
		cmd.SetErr(err)
	}
	return cmd
}

// AckTxPipelined runs fn's commands as a transaction (MULTI/EXEC) on one connection of c
// and then, when c's writes must reach replicas, WAIT on that connection: two round trips,
// because a transaction's EXEC and a WAIT after it cannot share one go-redis pipeline.
// Errors as AckPipelined.
func AckTxPipelined(ctx context.Context, c redis.UniversalClient, fn func(redis.Pipeliner) error) ([]redis.Cmder, error) {
	if cc, ca := clusterAckOf(c); ca != nil {
		return ca.txPipelined(ctx, cc, fn)
	}
	a := ackOf(c)
	if a.n == 0 {
		return c.TxPipelined(ctx, fn)
	}
	return a.txPipelined(ctx, fn)
}

// txPipelined runs fn's commands as a transaction on one connection of a's client and
// then, when a asks for replicas, WAIT on that connection.
func (a ack) txPipelined(ctx context.Context, fn func(redis.Pipeliner) error) ([]redis.Cmder, error) {
	conn := a.rc.Conn()
	defer conn.Close()
	cmds, err := conn.TxPipelined(ctx, fn)
	if err != nil || a.n == 0 {
		return cmds, err
	}
	return cmds, a.check(a.wait(ctx, conn))
}
