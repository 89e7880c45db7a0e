package store

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Acknowledged writes on a Redis Cluster.
//
// On a single server or under Sentinels a write waits for its replicas with WAIT on the
// connection that wrote it. A Cluster client spreads a pipeline over its nodes, each part
// on a connection of its own, so WAIT sent through it would count another connection's
// writes. Every write of one signal is in its bot's slot, so a Cluster write is instead
// sent to the master of its key's slot directly (the node's own client, from the Cluster
// client's slot map) with WAIT after it on the same connection; a pipeline that spans
// slots (an archive read over partitions, copies to several followers) is split by node,
// one pipeline with its WAIT per node.
//
// The master is followed per slot as the Sentinel path follows it per server: the node a
// slot's keys were last written to, by hash tag, and the run ID each node reported on its
// newest connection. A slot found on another node (a failover promoted its replica, or the
// slot was moved) or a node found with another run ID (it restarted) counts in
// MasterChanges, with the same effect: operations under GuardMaster fail unsent and are
// retried from what the new master holds.

// clusterAck is a Cluster client's acknowledgement state: the policy (how many replicas,
// how long), each node's replicas and run ID as its newest connection reported them, and
// the node each hash tag was last written through.
type clusterAck struct {
	policy *ackPolicy
	mu     sync.Mutex
	nodes  map[string]nodeState // by address
	tags   map[string]string    // hash tag -> node address
}

type nodeState struct {
	replicas int
	runID    string
}

// clusterAcks holds the clusterAck of every Cluster client Connect made.
var clusterAcks sync.Map // *redis.ClusterClient -> *clusterAck

func newClusterAck(p *ackPolicy) *clusterAck {
	return &clusterAck{policy: p, nodes: map[string]nodeState{}, tags: map[string]string{}}
}

// nodeClient is the Cluster options' NewClient: each node's client records what its new
// connections report (replicas, run ID) and enforces GuardMaster, as a single server's
// client does.
func (c *clusterAck) nodeClient(opt *redis.Options) *redis.Client {
	addr, prev := opt.Addr, opt.OnConnect
	opt.OnConnect = func(ctx context.Context, cn *redis.Conn) error {
		if prev != nil {
			if err := prev(ctx, cn); err != nil {
				return err
			}
		}
		return c.onConnect(ctx, addr, cn)
	}
	rc := redis.NewClient(opt)
	rc.AddHook(masterGuard{})
	return rc
}

// onConnect records a master node's replicas and run ID; a run ID other than the one the
// node had is a restart, counted as a master change.
func (c *clusterAck) onConnect(ctx context.Context, addr string, cn *redis.Conn) error {
	info, err := cn.InfoMap(unguarded(ctx), "server", "replication").Result()
	if err != nil {
		return nil
	}
	n, ok := connectedReplicas(info)
	if !ok {
		return nil // a replica's connection (read-only routing): nothing to follow
	}
	runID := info["Server"]["run_id"]
	c.mu.Lock()
	old := c.nodes[addr]
	c.nodes[addr] = nodeState{replicas: n, runID: runID}
	c.mu.Unlock()
	if old.runID != "" && runID != "" && old.runID != runID {
		masterChanges.Add(1)
	}
	if guardBroken(ctx) {
		return ErrMasterChanged
	}
	return nil
}

// want is how many replicas a write to the node at addr waits for: the policy's number, or
// under auto one when the node reported a replica on its newest connection.
func (c *clusterAck) want(addr string) int {
	if c.policy.min >= 0 {
		return c.policy.min
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return min(1, c.nodes[addr].replicas)
}

// wantAny is want for a write whose node is not known yet: the policy's number, or under
// auto one when any node reported a replica.
func (c *clusterAck) wantAny() int {
	if c.policy.min >= 0 {
		return c.policy.min
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nodes {
		if n.replicas > 0 {
			return 1
		}
	}
	return 0
}

// follow notes that key's slot is served by the node at addr; the slot found on another
// node than its last write's is a master change.
func (c *clusterAck) follow(key, addr string) {
	tag := hashTag(key)
	c.mu.Lock()
	old, seen := c.tags[tag]
	c.tags[tag] = addr
	c.mu.Unlock()
	if seen && old != addr {
		masterChanges.Add(1)
	}
}

// hashTag is the part of key Redis Cluster hashes: the text between the first '{' and the
// next '}' when not empty, else the whole key.
func hashTag(key string) string {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			return key[i+1 : i+1+j]
		}
	}
	return key
}

// node is the master of key's slot with the ack a write there waits for. It fails unsent
// under a GuardMaster the move of the slot broke.
func (c *clusterAck) node(ctx context.Context, cc *redis.ClusterClient, key string) (ack, error) {
	rc, err := cc.MasterForKey(ctx, key)
	if err != nil {
		return ack{}, err
	}
	addr := rc.Options().Addr
	c.follow(key, addr)
	if guardBroken(ctx) {
		return ack{}, ErrMasterChanged
	}
	return ack{rc: rc, n: c.want(addr), timeout: c.policy.timeout, topology: topologyCluster}, nil
}

// clusterAckOf is c's Cluster acknowledgement state (nil: not a Cluster client Connect made).
func clusterAckOf(c any) (*redis.ClusterClient, *clusterAck) {
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		return nil, nil
	}
	v, ok := clusterAcks.Load(cc)
	if !ok {
		return nil, nil
	}
	return cc, v.(*clusterAck)
}

// firstKey is the first key of a command as our writes queue them: a script's first key
// (EVAL, EVALSHA and their read-only forms), else the first argument.
func firstKey(cmd redis.Cmder) (string, bool) {
	args := cmd.Args()
	pos := 1
	switch strings.ToLower(cmd.Name()) {
	case "eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro":
		if len(args) < 3 {
			return "", false
		}
		if n, _ := strconv.Atoi(fmt.Sprint(args[2])); n == 0 {
			return "", false
		}
		pos = 3
	}
	if len(args) <= pos {
		return "", false
	}
	k, ok := args[pos].(string)
	return k, ok
}

// clusterPipelined is AckPipelined on a Cluster: fn's commands grouped by their slot's
// master, each group sent to its node as one pipeline with WAIT at its end. A command
// without a key goes with the first group.
func (c *clusterAck) pipelined(ctx context.Context, cc *redis.ClusterClient, fn func(redis.Pipeliner) error) ([]redis.Cmder, error) {
	p := cc.Pipeline()
	if err := fn(p); err != nil {
		return nil, err
	}
	cmds := p.Cmds()
	type group struct {
		a    ack
		cmds []redis.Cmder
	}
	var groups []*group
	byAddr := map[string]*group{}
	var keyless []redis.Cmder
	for _, cmd := range cmds {
		key, ok := firstKey(cmd)
		if !ok {
			keyless = append(keyless, cmd)
			continue
		}
		a, err := c.node(ctx, cc, key)
		if err != nil {
			return cmds, err
		}
		addr := a.rc.Options().Addr
		g := byAddr[addr]
		if g == nil {
			g = &group{a: a}
			byAddr[addr] = g
			groups = append(groups, g)
		}
		g.cmds = append(g.cmds, cmd)
	}
	waits := false
	for _, g := range groups {
		waits = waits || g.a.n > 0
	}
	if !waits {
		// No replica to wait for: through the Cluster client, which follows redirects.
		return cc.Pipelined(ctx, replay(ctx, cmds))
	}
	groups[0].cmds = append(groups[0].cmds, keyless...)
	errs := make([]error, len(groups))
	var wg sync.WaitGroup
	for i, g := range groups {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = g.a.pipelined(ctx, replay(ctx, g.cmds))
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			c.reloadOnMove(ctx, cc, err)
			return cmds, err
		}
	}
	return cmds, nil
}

// replay queues cmds, already built, on a pipeline: what a pipeline of fn's commands
// becomes once they are sorted by node.
func replay(ctx context.Context, cmds []redis.Cmder) func(redis.Pipeliner) error {
	return func(p redis.Pipeliner) error {
		for _, cmd := range cmds {
			_ = p.Process(ctx, cmd)
		}
		return nil
	}
}

// reloadOnMove has the Cluster client read the slot map again after a node answered that
// a slot is elsewhere (or the cluster is failing over): the write was not made, and its
// retry goes to the new master.
func (c *clusterAck) reloadOnMove(ctx context.Context, cc *redis.ClusterClient, err error) {
	for _, prefix := range []string{"MOVED", "ASK", "CLUSTERDOWN", "TRYAGAIN"} {
		if redis.HasErrorPrefix(err, prefix) {
			cc.ReloadState(ctx)
			return
		}
	}
}

// txPipelined is AckTxPipelined on a Cluster: a transaction is in one slot, so it runs on
// that slot's master, on one connection, with WAIT after its EXEC.
func (c *clusterAck) txPipelined(ctx context.Context, cc *redis.ClusterClient, fn func(redis.Pipeliner) error) ([]redis.Cmder, error) {
	p := cc.TxPipeline()
	if err := fn(p); err != nil {
		return nil, err
	}
	cmds := p.Cmds()
	var a ack
	for _, cmd := range cmds {
		if key, ok := firstKey(cmd); ok {
			var err error
			if a, err = c.node(ctx, cc, key); err != nil {
				return cmds, err
			}
			break
		}
	}
	if a.rc == nil || a.n == 0 {
		return cc.TxPipelined(ctx, replay(ctx, cmds))
	}
	out, err := a.txPipelined(ctx, replay(ctx, cmds))
	c.reloadOnMove(ctx, cc, err)
	return out, err
}
