package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/test/stack"
)

// startRedis starts the Redis that -redis names, persisting in bin/local, and sets how the
// daemons reach it. The two keep their data apart (bin/local/redis, bin/local/redis-cluster):
// switching starts the other one as it was left, and the manager, finding its projection
// marker missing there, projects every bot, account and connection into it by itself.
func (s *localStack) startRedis(ctx context.Context) error {
	if s.topology == redisCluster {
		return s.startCluster(ctx)
	}
	port := redisPort
	if !stack.PortFree(port) {
		var err error
		if port, err = stack.FreePort(); err != nil {
			return err
		}
		fmt.Printf("port %d is taken; using %d for Redis\n", redisPort, port)
	}
	fmt.Printf("starting redis on 127.0.0.1:%d (data: %s, log: %s)\n", port, s.rel(s.redisDir), s.rel(s.redisLog))
	r, err := stack.StartRedis(ctx, stack.RedisOptions{Port: port, DataDir: s.redisDir, LogFile: s.redisLog})
	if err != nil {
		return err
	}
	s.redis, s.store = r, store.Options{Addr: r.Addr}
	return migrateKeys(ctx, r)
}

// startCluster starts the three masters of -redis=cluster on their fixed ports, or on free
// ones when those are taken and no cluster was formed yet.
func (s *localStack) startCluster(ctx context.Context) error {
	ports := make([]int, clusterMasters)
	free := true
	for i := range ports {
		ports[i] = clusterBasePort + i
		free = free && stack.PortFree(ports[i]) && stack.PortFree(ports[i]+10000)
	}
	if !free {
		if _, err := os.Stat(s.clusterDir); err == nil {
			return fmt.Errorf("a port of the local Redis Cluster (%d-%d or their buses %d-%d) is taken, and its nodes recorded them "+
				"when it was formed: free them, or start an empty cluster with -fresh", ports[0], ports[len(ports)-1], ports[0]+10000, ports[len(ports)-1]+10000)
		}
		var err error
		if ports, err = stack.FreeClusterPorts(clusterMasters); err != nil {
			return err
		}
		fmt.Printf("ports %d-%d are taken; using %v for the Redis Cluster\n", clusterBasePort, clusterBasePort+clusterMasters-1, ports)
	}
	fmt.Printf("starting a Redis Cluster of %d masters on 127.0.0.1:%v (data: %s, logs: %s)\n", clusterMasters, ports, s.rel(s.clusterDir),
		s.rel(filepath.Join(s.dir, fmt.Sprintf("redis-%d.log", ports[0]))))
	c, err := stack.StartRedisCluster(ctx, stack.ClusterOptions{Ports: ports, DataDir: s.clusterDir, LogDir: s.dir})
	if err != nil {
		return err
	}
	s.cluster, s.store = c, store.Options{ClusterAddrs: c.Addrs()}
	return nil
}

// redisAddrs are the addresses of the server, or of the cluster's masters.
func (s *localStack) redisAddrs() []string {
	if s.cluster != nil {
		return s.cluster.Addrs()
	}
	return []string{s.redis.Addr}
}

// redisShown is the Redis for the ready banner.
func (s *localStack) redisShown() string {
	if s.cluster != nil {
		return "cluster " + strings.Join(s.cluster.Addrs(), ",")
	}
	return s.redis.Addr
}

// redisExited delivers the first Redis server that exits.
func (s *localStack) redisExited() <-chan *stack.Redis {
	out := make(chan *stack.Redis, 1)
	nodes := []*stack.Redis{s.redis}
	if s.cluster != nil {
		nodes = s.cluster.Nodes
	}
	for _, n := range nodes {
		go func() {
			<-n.Done()
			select {
			case out <- n:
			default:
			}
		}()
	}
	return out
}

// redisLogOf is the log file of a Redis server the stack started.
func (s *localStack) redisLogOf(r *stack.Redis) string {
	if s.cluster == nil {
		return s.redisLog
	}
	_, port, _ := strings.Cut(r.Addr, ":")
	return filepath.Join(s.dir, "redis-"+port+".log")
}
