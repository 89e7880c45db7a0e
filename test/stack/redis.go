package stack

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store/storetest"
)

// RedisOptions configure StartRedis.
type RedisOptions struct {
	// Port on 127.0.0.1; 0 picks a free one.
	Port int
	// DataDir turns persistence on: the server runs with ShippedRedisFlags exactly (its
	// append-only file in DataDir). Empty keeps everything in memory only: the same flags
	// with appendonly off, and a replica's full sync loaded without a file.
	DataDir string
	// LogFile receives the server's log; empty discards it. AppendLog adds to it (a
	// restarted server's log follows its previous run's) instead of starting it afresh.
	LogFile   string
	AppendLog bool
	// MaxMemory caps the data set (redis-server's maxmemory, e.g. "512mb"); empty:
	// DefaultRedisMaxMemory.
	MaxMemory string
	// Flags replace or add settings over ShippedRedisFlags, as "--name", "value" pairs
	// (e.g. "--save", "60 10000"), for measuring another configuration against the
	// shipped one.
	Flags []string
	// Password, when set, is required of every client (requirepass) and given to the
	// master by a replica (masterauth), as config/redis runs it.
	Password string
}

// DefaultRedisMaxMemory is the local stack's Redis cap: room for thousands of bots' queues
// and state on a laptop. Like config/redis the policy is noeviction: a full Redis refuses
// writes (webhookd answers 503) instead of silently dropping queued signals.
const DefaultRedisMaxMemory = "512mb"

// ShippedRedisFlags are the redis-server settings sigops ships, as "--name", "value"
// pairs: config/redis/redis.yaml runs Redis with exactly these followed by its
// --maxmemory (TestShippedRedisFlagsMatchConfig holds the two together), and the local
// stack and the load benchmark run them too. docs/operations.md, "Redis settings for
// production", says why each is set.
func ShippedRedisFlags() []string {
	return []string{
		"--maxmemory-policy", "noeviction",
		"--appendonly", "yes",
		"--appendfsync", "everysec",
		"--aof-use-rdb-preamble", "yes",
		"--save", "",
		"--auto-aof-rewrite-percentage", "100",
		"--auto-aof-rewrite-min-size", "512mb",
		"--no-appendfsync-on-rewrite", "no",
		"--lazyfree-lazy-expire", "yes",
		"--lazyfree-lazy-server-del", "yes",
		"--lazyfree-lazy-user-del", "yes",
		"--disable-thp", "yes",
		"--latency-monitor-threshold", "2",
	}
}

// withFlags is base with each "--name", "value" pair of over replacing base's value of
// that name, or appended when base has none. Every flag is one name and one value.
func withFlags(base, over []string) ([]string, error) {
	if len(over)%2 != 0 {
		return nil, fmt.Errorf("redis flags %q: want \"--name\", \"value\" pairs", over)
	}
	out := slices.Clone(base)
	for i := 0; i < len(over); i += 2 {
		name, value := over[i], over[i+1]
		if !strings.HasPrefix(name, "--") {
			return nil, fmt.Errorf("redis flag %q: want --name", name)
		}
		at := -1
		for j := 0; j+1 < len(out); j += 2 {
			if out[j] == name {
				at = j
			}
		}
		if at < 0 {
			out = append(out, name, value)
		} else {
			out[at+1] = value
		}
	}
	return out, nil
}

// Redis is a running redis-server.
type Redis struct {
	*Process
	// Addr is host:port.
	Addr string
	// password is RedisOptions.Password.
	password string
}

// StartRedis starts redis-server on 127.0.0.1 and waits until it answers PING.
func StartRedis(ctx context.Context, o RedisOptions) (*Redis, error) {
	path, err := storetest.ServerBinary()
	if err != nil {
		return nil, err
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
	local := []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(port), "--protected-mode", "yes", "--daemonize", "no",
		"--maxmemory", maxMemory}
	if o.DataDir != "" {
		if err := os.MkdirAll(o.DataDir, 0o700); err != nil {
			return nil, err
		}
		local = append(local, "--dir", o.DataDir)
	} else {
		// A replica loads a full sync from the socket: with the default it writes the
		// snapshot as dump.rdb to its working directory, which is the caller's.
		local = append(local, "--appendonly", "no", "--repl-diskless-load", "swapdb")
	}
	if o.Password != "" {
		local = append(local, "--requirepass", o.Password, "--masterauth", o.Password)
	}
	args, err := withFlags(ShippedRedisFlags(), append(local, o.Flags...))
	if err != nil {
		return nil, err
	}
	mode := os.O_TRUNC
	if o.AppendLog {
		mode = os.O_APPEND
	}
	p, err := startLogged("redis-server", exec.Command(path, args...), o.LogFile, mode)
	if err != nil {
		return nil, err
	}
	r := &Redis{Process: p, Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), password: o.Password}
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

// Client returns a new client of the server (with its password).
func (r *Redis) Client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: r.Addr, Password: r.password})
}
