// Command localstack runs the sigops local stack (test/stack/localstack): the Kubernetes
// control plane, Redis, the manager, the executors, webhookd, authd and mcpd behind nginx,
// and the sample resources, every program restarted with backoff when it exits. `make run`
// (hack/local-stack.sh) builds and starts it; Ctrl-C stops everything it started.
// `localstack -status` (`make status`) lists a running stack's programs with their PIDs,
// restarts and health.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sigops/sigops/test/stack"
	"github.com/sigops/sigops/test/stack/localstack"
)

func main() {
	var o localstack.Options
	flag.BoolVar(&o.Fresh, "fresh", false, "delete the local cluster's and Redis's data (bin/local/etcd, bin/local/redis, bin/local/redis-cluster, bin/local/redis-sentinel) before starting")
	flag.StringVar(&o.Redis, "redis", localstack.RedisSingle, "the Redis the stack runs on: "+localstack.RedisSingle+" (one server), "+
		localstack.RedisCluster+" (a Redis Cluster of three masters, a replica each) or "+localstack.RedisSentinel+" (a primary, two replicas and three Sentinels)")
	flag.IntVar(&o.Executors, "executors", 1, "executor replicas (they share the queue partitions)")
	flag.IntVar(&o.Webhookd, "webhookd", 1, "webhookd replicas (nginx balances them)")
	flag.IntVar(&o.MCPD, "mcpd", 1, "mcpd replicas (nginx balances them)")
	flag.DurationVar(&o.HistoryRetention, "history-retention", 0, "the executors' hot window of history in Redis in front of PostgreSQL (default theirs, 24h; at least 10m)")
	status := flag.Bool("status", false, "list the running stack's programs (PID, restarts, health) and exit")
	flag.Parse()
	root, err := stack.RepoRoot()
	if err != nil {
		os.Exit(fail(err))
	}
	o.Root, o.Dir = root, filepath.Join(root, "bin", "local")
	if *status {
		if err := localstack.Status(context.Background(), os.Stdout, o.Dir); err != nil {
			os.Exit(fail(err))
		}
		return
	}
	for _, n := range []int{o.Executors, o.Webhookd, o.MCPD} {
		if n < 1 {
			os.Exit(fail(errors.New("every daemon needs at least one replica")))
		}
	}
	// Only warnings and errors of envtest and the client reach the terminal.
	ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	os.Exit(run(o))
}

func run(o localstack.Options) int {
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return fail(err)
	}
	pidFile := filepath.Join(o.Dir, "pid")
	lock, err := takeLock(filepath.Join(o.Dir, "lock"), pidFile)
	if err != nil {
		return fail(err)
	}
	if lock == nil {
		return 1 // another stack runs; takeLock said so
	}
	defer lock.Close() // holds the flock for the life of the process

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-signals
		fmt.Println("\nstopping...")
		cancel()
		for range signals { // keep Ctrl-C from killing us before the children are stopped
			fmt.Println("still stopping; waiting for the daemons, Redis and the control plane to exit")
		}
	}()
	defer func() {
		_ = os.Remove(pidFile)
		fmt.Println("stopped")
	}()

	s, err := localstack.Start(ctx, o)
	if err != nil {
		if ctx.Err() != nil {
			return 130 // interrupted while starting
		}
		return fail(err)
	}
	defer s.Stop()
	s.PrintReady(os.Stdout)
	select {
	case <-ctx.Done():
		return 0
	case err := <-s.Failed():
		return fail(err)
	}
}

// takeLock takes the lock file so that only one local stack runs; it returns nil (after
// saying why) when another one holds it.
func takeLock(lockFile, pidFile string) (*os.File, error) {
	f, err := os.OpenFile(lockFile, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %s: %w", lockFile, err)
		}
		pid := "unknown"
		if b, err := os.ReadFile(pidFile); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			pid = strings.TrimSpace(string(b))
		}
		fmt.Fprintf(os.Stderr, "sigops local stack is already running (pid %s); stop it with Ctrl-C in its terminal\n", pid)
		return nil, nil
	}
	if err := os.WriteFile(pidFile, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, "error:", err)
	return 1
}
