package stack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// RedisOptions configure StartRedis.
type RedisOptions struct {
	// Port on 127.0.0.1; 0 picks a free one.
	Port int
	// DataDir turns persistence on (append-only file in DataDir); empty keeps everything
	// in memory only.
	DataDir string
	// LogFile receives the server's log; empty discards it.
	LogFile string
	// MaxMemory caps the data set (redis-server's maxmemory, e.g. "512mb"); empty:
	// DefaultRedisMaxMemory.
	MaxMemory string
}

// DefaultRedisMaxMemory is the local stack's Redis cap: room for thousands of bots' queues
// and state on a laptop. Like config/redis the policy is noeviction: a full Redis refuses
// writes (webhookd answers 503) instead of silently dropping queued signals.
const DefaultRedisMaxMemory = "512mb"

// Redis is a running redis-server.
type Redis struct {
	*Process
	// Addr is host:port.
	Addr string
}

// StartRedis starts redis-server on 127.0.0.1 and waits until it answers PING.
func StartRedis(ctx context.Context, o RedisOptions) (*Redis, error) {
	path, err := exec.LookPath("redis-server")
	if err != nil {
		return nil, errors.New("redis-server not found: run hack/install-deps.sh (make deps)")
	}
	port := o.Port
	if port == 0 {
		if port, err = FreePort(); err != nil {
			return nil, err
		}
	}
	maxMemory := o.MaxMemory
	if maxMemory == "" {
		maxMemory = DefaultRedisMaxMemory
	}
	args := []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--protected-mode", "yes", "--daemonize", "no",
		"--maxmemory", maxMemory, "--maxmemory-policy", "noeviction"}
	if o.DataDir != "" {
		if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
			return nil, err
		}
		args = append(args, "--dir", o.DataDir, "--appendonly", "yes")
	} else {
		args = append(args, "--save", "", "--appendonly", "no")
	}
	p, err := startProcess("redis-server", exec.Command(path, args...), o.LogFile)
	if err != nil {
		return nil, err
	}
	r := &Redis{Process: p, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port))}
	c := r.Client()
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	for {
		pctx, pcancel := context.WithTimeout(ctx, time.Second)
		err := c.Ping(pctx).Err()
		pcancel()
		if err == nil {
			return r, nil
		}
		select {
		case <-p.Done():
			return nil, p.exited()
		case <-ctx.Done():
			_ = r.Stop(5 * time.Second)
			return nil, fmt.Errorf("redis-server on %s did not answer: %w", r.Addr, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// Client returns a new client of the server.
func (r *Redis) Client() *redis.Client { return redis.NewClient(&redis.Options{Addr: r.Addr}) }
