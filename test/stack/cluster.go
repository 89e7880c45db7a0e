package stack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store/storetest"
)

// ClusterOptions configure StartRedisCluster.
type ClusterOptions struct {
	// Ports are the masters' client ports on 127.0.0.1, at least three (the fewest a Redis
	// Cluster accepts as healthy). Each node's cluster bus is its port + 10000, Redis's
	// default, so both must be free.
	Ports []int
	// DataDir holds a directory per node (node-<port>) with its nodes.conf and append-only
	// file, written with ShippedRedisFlags: a cluster formed there once is found again, with
	// its data, on the next start. Required.
	DataDir string
	// LogDir receives each node's log as redis-<port>.log; empty discards them.
	LogDir string
	// MaxMemory caps each node's data set; empty: DefaultRedisMaxMemory.
	MaxMemory string
	// ReplicaPorts, when set, start a replica for each master (as many as Ports, in the
	// same order), as a production Cluster runs: a write then waits for its slot's replica
	// (store's acknowledged writes) and a master that fails is replaced by its replica.
	ReplicaPorts []int
	// NodeTimeout is how long a node that does not answer its peers takes to be deemed
	// failing, after which its replica takes over its slots (0: 5 s, config/redis's).
	NodeTimeout time.Duration
}

// clusterBusOffset is how far above its client port a node's cluster bus listens.
const clusterBusOffset = 10000

// RedisCluster is a running Redis Cluster on 127.0.0.1, each node persisting as shipped:
// its masters, then their replicas when ClusterOptions.ReplicaPorts asked for them. Which
// node is a master changes with failovers; Masters says which are now.
type RedisCluster struct {
	Nodes []*Redis
	// masters is how many of Nodes were started as masters (the rest are their replicas).
	masters int
	// opts are each node's start options, for StartNode.
	opts []RedisOptions
}

// StartRedisCluster starts the nodes and, when their data directories hold no cluster yet,
// forms one (each master a third of the slots); otherwise it waits until the nodes found
// each other again from their nodes.conf.
func StartRedisCluster(ctx context.Context, o ClusterOptions) (c *RedisCluster, err error) {
	if len(o.Ports) < 3 {
		return nil, fmt.Errorf("a Redis Cluster needs at least three masters, not %d", len(o.Ports))
	}
	if o.DataDir == "" {
		return nil, errors.New("a Redis Cluster needs a data directory")
	}
	if len(o.ReplicaPorts) > 0 && len(o.ReplicaPorts) != len(o.Ports) {
		return nil, fmt.Errorf("a replica per master: %d replica ports for %d masters", len(o.ReplicaPorts), len(o.Ports))
	}
	c = &RedisCluster{masters: len(o.Ports)}
	nodeTimeout := o.NodeTimeout
	if nodeTimeout == 0 {
		nodeTimeout = 5 * time.Second
	}
	defer func() {
		if err != nil {
			_ = c.Stop(5 * time.Second)
		}
	}()
	for _, port := range append(append([]int{}, o.Ports...), o.ReplicaPorts...) {
		for _, p := range []int{port, port + clusterBusOffset} {
			if !PortFree(p) {
				return nil, fmt.Errorf("port %d of the Redis Cluster is taken", p)
			}
		}
		log := ""
		if o.LogDir != "" {
			log = filepath.Join(o.LogDir, fmt.Sprintf("redis-%d.log", port))
		}
		ro := RedisOptions{Port: port, LogFile: log, MaxMemory: o.MaxMemory,
			DataDir: filepath.Join(o.DataDir, fmt.Sprintf("node-%d", port)),
			Flags: []string{"--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
				"--cluster-port", strconv.Itoa(port + clusterBusOffset),
				// A node that misses its peers this long is deemed failing, and its replica
				// takes over its slots; without replicas this only bounds how long a restart
				// looks like an outage to the others.
				"--cluster-node-timeout", strconv.FormatInt(nodeTimeout.Milliseconds(), 10)}}
		n, err := StartRedis(ctx, ro)
		if err != nil {
			return nil, err
		}
		c.Nodes, c.opts = append(c.Nodes, n), append(c.opts, ro)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	formed, err := c.formed(ctx)
	if err != nil {
		return nil, err
	}
	masters := c.Addrs()[:c.masters]
	if !formed {
		bus := make([]int, len(o.Ports))
		for i, p := range o.Ports {
			bus[i] = p + clusterBusOffset
		}
		if err := storetest.FormCluster(ctx, masters, bus); err != nil {
			return c, err
		}
	} else if err := storetest.WaitClusterHealthy(ctx, masters); err != nil && len(o.ReplicaPorts) == 0 {
		return c, err
	}
	if len(o.ReplicaPorts) == 0 {
		return c, nil
	}
	// Replicas join on the first start with them (a cluster formed earlier without them
	// gains them too); on later starts they find the others from their nodes.conf.
	bus := make([]int, len(o.ReplicaPorts))
	for i, p := range o.ReplicaPorts {
		bus[i] = p + clusterBusOffset
	}
	return c, storetest.JoinReplicas(ctx, masters, c.Addrs()[c.masters:], bus)
}

// Masters are the indexes in Nodes of the nodes that are masters now (a failover makes a
// replica one), as their own INFO says; a node that does not answer is left out.
func (c *RedisCluster) Masters(ctx context.Context) []int {
	var out []int
	for i, n := range c.Nodes {
		rdb := n.Client()
		info, err := rdb.Info(ctx, "replication").Result()
		_ = rdb.Close()
		if err == nil && strings.Contains(info, "role:master") {
			out = append(out, i)
		}
	}
	return out
}

// formed reports whether the nodes were formed into a cluster on an earlier start: any of
// them has slots assigned. A partly formed set (a start interrupted while forming) is
// refused rather than guessed at.
func (c *RedisCluster) formed(ctx context.Context) (bool, error) {
	assigned := 0
	for _, n := range c.Nodes {
		rdb := n.Client()
		info, err := rdb.ClusterInfo(ctx).Result()
		_ = rdb.Close()
		if err != nil {
			return false, fmt.Errorf("cluster info of %s: %w", n.Addr, err)
		}
		if v := storetest.ClusterInfoField(info, "cluster_slots_assigned"); v != "" && v != "0" {
			assigned++
		}
	}
	return assigned > 0, nil
}

// StartNode starts node i again once it has exited, on its port and from its data
// directory: it loads its append-only file and rejoins the others from its nodes.conf.
func (c *RedisCluster) StartNode(ctx context.Context, i int) (*Redis, error) {
	select {
	case <-c.Nodes[i].Done():
	default:
		return nil, fmt.Errorf("redis cluster node %s is still running", c.Nodes[i].Addr)
	}
	o := c.opts[i]
	o.AppendLog = true
	n, err := StartRedis(ctx, o)
	if err != nil {
		return nil, err
	}
	c.Nodes[i] = n
	return n, nil
}

// Addrs are the nodes' host:port, for store.Options.ClusterAddrs.
func (c *RedisCluster) Addrs() []string {
	addrs := make([]string, len(c.Nodes))
	for i, n := range c.Nodes {
		addrs[i] = n.Addr
	}
	return addrs
}

// Client returns a new cluster client of the nodes.
func (c *RedisCluster) Client() *redis.ClusterClient {
	return redis.NewClusterClient(&redis.ClusterOptions{Addrs: c.Addrs()})
}

// Ports are the nodes' client ports.
func (c *RedisCluster) Ports() []int {
	ports := make([]int, len(c.Nodes))
	for i, n := range c.Nodes {
		_, p, _ := net.SplitHostPort(n.Addr)
		ports[i], _ = strconv.Atoi(p)
	}
	return ports
}

// Stop stops every node (SIGTERM, then SIGKILL after timeout): each writes its data first.
func (c *RedisCluster) Stop(timeout time.Duration) error {
	var errs []error
	for _, n := range c.Nodes {
		if err := n.Stop(timeout); err != nil {
			errs = append(errs, fmt.Errorf("redis %s: %w", n.Addr, err))
		}
	}
	return errors.Join(errs...)
}

// FreeClusterPorts finds n client ports whose cluster bus ports (+10000) are free too.
func FreeClusterPorts(n int) ([]int, error) {
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		if tries > 1000 {
			return nil, errors.New("no free ports for a Redis Cluster")
		}
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		if p+clusterBusOffset <= 65535 && PortFree(p+clusterBusOffset) && !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	return ports, nil
}
