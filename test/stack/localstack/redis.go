package localstack

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/test/stack"
)

// startRedis starts the Redis that Options.Redis names, persisting in Dir, each server
// supervised (a server that exits starts again from its append-only file), and sets how
// the daemons reach it. The two keep their data apart (redis, redis-cluster): switching
// starts the other one as it was left, and the manager, finding its projection marker
// missing there, projects every bot, account and connection into it by itself.
func (s *Stack) startRedis(ctx context.Context) error {
	if s.o.Redis == RedisCluster {
		return s.startCluster(ctx)
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
	s.superviseRedis("redis", r, s.redisLog, func() (*stack.Process, error) {
		n, err := stack.StartRedis(context.WithoutCancel(ctx), ro)
		if err != nil {
			return nil, err
		}
		return n.Process, nil
	})
	return s.migrateKeys(ctx, r)
}

// startCluster starts the three masters of RedisCluster on their fixed ports, or on free
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
		if ports, err = stack.FreeClusterPorts(clusterMasters); err != nil {
			return err
		}
		s.printf("ports %v are taken; using %v for the Redis Cluster\n", s.o.ClusterPorts, ports)
	}
	s.printf("starting a Redis Cluster of %d masters on 127.0.0.1:%v (data: %s, logs: %s)\n", clusterMasters, ports, s.rel(s.clusterDir),
		s.rel(filepath.Join(s.dir, fmt.Sprintf("redis-%d.log", ports[0]))))
	c, err := stack.StartRedisCluster(ctx, stack.ClusterOptions{Ports: ports, DataDir: s.clusterDir, LogDir: s.dir})
	if err != nil {
		return err
	}
	s.cluster, s.store = c, store.Options{ClusterAddrs: c.Addrs()}
	for i, n := range c.Nodes {
		name := fmt.Sprintf("redis-%d", i)
		s.superviseRedis(name, n, filepath.Join(s.dir, fmt.Sprintf("redis-%d.log", ports[i])), func() (*stack.Process, error) {
			n, err := c.StartNode(context.WithoutCancel(ctx), i)
			if err != nil {
				return nil, err
			}
			return n.Process, nil
		})
	}
	return nil
}

// superviseRedis restarts a Redis server whenever it exits, as a StatefulSet restarts its
// pod, and gives up (stopping the stack) only when it cannot be started again at all.
func (s *Stack) superviseRedis(name string, r *stack.Redis, log string, restart func() (*stack.Process, error)) {
	sup := stack.SuperviseProcess(r.Process, stack.SupervisedOptions{
		DaemonOptions: stack.DaemonOptions{Name: name, LogFile: log},
		Logf:          s.reportf, Backoff: s.o.Backoff, MaxStartFailures: restartGiveUp,
		OnStart: func(*stack.Supervised) { s.writePids() },
	}, restart)
	s.redisRuns = append(s.redisRuns, sup)
	s.writePids()
}

// RedisAddrs are the addresses of the server, or of the cluster's masters.
func (s *Stack) RedisAddrs() []string {
	if s.cluster != nil {
		return s.cluster.Addrs()
	}
	return []string{s.redis.Addr}
}

// redisShown is the Redis for the ready banner.
func (s *Stack) redisShown() string {
	if s.cluster != nil {
		return "cluster " + strings.Join(s.cluster.Addrs(), ",")
	}
	return s.redis.Addr
}
