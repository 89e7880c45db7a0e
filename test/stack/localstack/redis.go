package localstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/test/stack"
)

// startRedis starts the Redis that Options.Redis names, persisting in Dir, each server
// supervised (a server that exits starts again from its append-only file), and sets how
// the daemons reach it. The two keep their data apart (redis, redis-cluster): switching
// starts the other one as it was left, and the manager, finding its projection marker
// missing there, projects every bot, account and connection into it by itself.
func (s *Stack) startRedis(ctx context.Context) error {
	switch s.o.Redis {
	case RedisCluster:
		return s.startCluster(ctx)
	case RedisSentinel:
		return s.startSentinelSet(ctx)
	}
	port := s.o.RedisPort
	if !stack.PortFree(port) {
		var err error
		if port, err = stack.FreePort(); err != nil {
			return err
		}
		s.printf("port %d is taken; using %d for Redis\n", s.o.RedisPort, port)
	}
	s.printf("starting redis on 127.0.0.1:%d (data: %s, log: %s)\n", port, s.rel(s.redisDir), s.rel(s.redisLog))
	ro := stack.RedisOptions{Port: port, DataDir: s.redisDir, LogFile: s.redisLog}
	r, err := stack.StartRedis(ctx, ro)
	if err != nil {
		return err
	}
	s.redis, s.store = r, store.Options{Addr: r.Addr}
	ro.AppendLog = true
	s.superviseStore("redis", r.Process, s.redisLog, s.o.Backoff, func() (*stack.Process, error) {
		n, err := stack.StartRedis(context.WithoutCancel(ctx), ro)
		if err != nil {
			return nil, err
		}
		return n.Process, nil
	})
	return s.migrateKeys(ctx, r)
}

// startCluster starts the three masters of RedisCluster and their replicas on their fixed ports, or on free
// ones when those are taken and no cluster was formed yet.
func (s *Stack) startCluster(ctx context.Context) error {
	ports := s.o.ClusterPorts
	free := true
	for _, p := range ports {
		free = free && stack.PortFree(p) && stack.PortFree(p+10000)
	}
	if !free {
		if _, err := os.Stat(s.clusterDir); err == nil {
			return fmt.Errorf("a port of the local Redis Cluster (%v or their buses 10000 above) is taken, and its nodes recorded them "+
				"when it was formed: free them, or start an empty cluster with -fresh", ports)
		}
		var err error
		if ports, err = stack.FreeClusterPorts(clusterNodes); err != nil {
			return err
		}
		s.printf("ports %v are taken; using %v for the Redis Cluster\n", s.o.ClusterPorts, ports)
	}
	s.printf("starting a Redis Cluster of %d masters on 127.0.0.1:%v, a replica each on %v (data: %s, logs: %s)\n", clusterMasters,
		ports[:clusterMasters], ports[clusterMasters:], s.rel(s.clusterDir),
		s.rel(filepath.Join(s.dir, fmt.Sprintf("redis-%d.log", ports[0]))))
	c, err := stack.StartRedisCluster(ctx, stack.ClusterOptions{Ports: ports[:clusterMasters], ReplicaPorts: ports[clusterMasters:],
		DataDir: s.clusterDir, LogDir: s.dir, NodeTimeout: ClusterNodeTimeout})
	if err != nil {
		return err
	}
	s.cluster, s.store = c, store.Options{ClusterAddrs: c.Addrs()}
	for i, n := range c.Nodes {
		name := fmt.Sprintf("redis-%d", i)
		// Restarted after its replica has taken over (ClusterNodeTimeout and the election), as
		// a Sentinel set's server is: it comes back as that replica's replica.
		s.superviseStore(name, n.Process, filepath.Join(s.dir, fmt.Sprintf("redis-%d.log", ports[i])), max(s.o.Backoff, sentinelServerBackoff), func() (*stack.Process, error) {
			n, err := c.StartNode(context.WithoutCancel(ctx), i)
			if err != nil {
				return nil, err
			}
			return n.Process, nil
		})
	}
	return nil
}

// sentinelServerBackoff is how long a Sentinel-set server waits before its restart: longer
// than the Sentinels take to deem it down (SentinelDownAfter) and promote a replica, as a
// pod's restart takes seconds, so that a killed primary shows a failover and comes back as
// the new primary's replica. Sooner, it would come back as the primary it was, before
// anyone noticed.
const sentinelServerBackoff = 5 * time.Second

// startSentinelSet starts a primary, two replicas and three Sentinels watching them (down
// after SentinelDownAfter, quorum 2), each server persisting in its own directory under
// redis-sentinel and supervised: a restarted server asks the Sentinels for the master and
// rejoins as its replica (or as the master, if they still name it), a restarted Sentinel
// reads the configuration it rewrote. At each start of the stack server 0 is the primary
// and the others resync from it. Like config/redis, the servers and the Sentinels require a
// password, new at each start, which the daemons read from a file
// (--redis-password-file, --redis-sentinel-password-file).
func (s *Stack) startSentinelSet(ctx context.Context) error {
	s.printf("starting a Sentinel-managed Redis: a primary, two replicas and three Sentinels, with a password (data and logs: %s)\n", s.rel(s.sentinelDir))
	password := make([]byte, 16)
	if _, err := rand.Read(password); err != nil {
		return err
	}
	r, err := stack.StartReplicated(ctx, stack.ReplicatedOptions{Dir: s.sentinelDir, Replicas: 2, Sentinels: 3, DownAfter: SentinelDownAfter,
		Password: hex.EncodeToString(password)})
	if err != nil {
		return err
	}
	s.sentinel, s.store = r, r.Store()
	// The Sentinels first: Stop stops them before the servers, so that no failover runs
	// while the servers stop.
	for i, sen := range r.Sentinels {
		name := fmt.Sprintf("sentinel-%d", i)
		s.superviseStore(name, sen.Process, filepath.Join(s.sentinelDir, name+".log"), s.o.Backoff, func() (*stack.Process, error) {
			n, err := r.RestartSentinel(i)
			if err != nil {
				return nil, err
			}
			return n.Process, nil
		})
	}
	for i, srv := range r.Servers {
		name := fmt.Sprintf("redis-%d", i)
		s.superviseStore(name, srv.Process, filepath.Join(s.sentinelDir, name+".log"), max(s.o.Backoff, sentinelServerBackoff), func() (*stack.Process, error) {
			if err := r.Restart(context.WithoutCancel(ctx), i); err != nil {
				return nil, err
			}
			return r.Servers[i].Process, nil
		})
	}
	return nil
}

// superviseStore restarts a Redis or PostgreSQL server whenever it exits, as a StatefulSet restarts its
// pod, and gives up (stopping the stack) only when it cannot be started again at all.
func (s *Stack) superviseStore(name string, p *stack.Process, log string, backoff time.Duration, restart func() (*stack.Process, error)) {
	sup := stack.SuperviseProcess(p, s.supervision(stack.DaemonOptions{Name: name, LogFile: log}, backoff), restart)
	s.storeRuns = append(s.storeRuns, sup)
	s.writePids()
}

// RedisAddrs are the addresses of the server, of the cluster's nodes (masters first), or of the
// Sentinel set's servers (the primary at start first).
func (s *Stack) RedisAddrs() []string {
	switch {
	case s.cluster != nil:
		return s.cluster.Addrs()
	case s.sentinel != nil:
		var out []string
		for _, srv := range s.sentinel.Servers {
			out = append(out, srv.Addr)
		}
		return out
	}
	return []string{s.redis.Addr}
}

// Cluster is the Redis Cluster (Options.Redis RedisCluster), or nil.
func (s *Stack) Cluster() *stack.RedisCluster { return s.cluster }

// Sentinel is the Sentinel-managed Redis (Options.Redis RedisSentinel), or nil.
func (s *Stack) Sentinel() *stack.Replicated { return s.sentinel }

// redisShown is the Redis for the ready banner.
func (s *Stack) redisShown() string {
	switch {
	case s.cluster != nil:
		return "cluster " + strings.Join(s.cluster.Addrs(), ",")
	case s.sentinel != nil:
		return "Sentinel set: servers " + strings.Join(s.RedisAddrs(), ",") + " (the first is the primary at start), Sentinels " +
			strings.Join(s.sentinel.SentinelAddrs(), ",") + ", password in " + s.rel(s.sentinel.PasswordFile())
	}
	return s.redis.Addr
}
