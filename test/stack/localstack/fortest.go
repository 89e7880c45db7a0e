package localstack

import (
	"context"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/sigops/sigops/test/stack"
)

// StartForTest starts the stack for test t as Start does, with what o leaves empty filled
// so that it shares nothing with another stack on the machine: a temporary state
// directory, free ports for nginx's two origins, Redis and the cluster's masters, and the
// progress lines in t's log. It is stopped when t ends; t fails when it does not start.
func StartForTest(ctx context.Context, t testing.TB, o Options) *Stack {
	t.Helper()
	if o.Dir == "" {
		o.Dir = t.TempDir()
		// Registered after TempDir's removal, so it runs first.
		t.Cleanup(func() { keepLogs(t, o.Dir) })
	}
	addr := func() string {
		port, err := stack.FreePort()
		if err != nil {
			t.Fatal(err)
		}
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	if o.OriginAddr == "" {
		o.OriginAddr = addr()
	}
	if o.MCPOriginAddr == "" {
		o.MCPOriginAddr = addr()
	}
	if o.RedisPort == 0 {
		_, port, _ := net.SplitHostPort(addr())
		o.RedisPort, _ = strconv.Atoi(port)
	}
	if o.Redis == RedisCluster && len(o.ClusterPorts) == 0 {
		ports, err := stack.FreeClusterPorts(clusterNodes)
		if err != nil {
			t.Fatal(err)
		}
		o.ClusterPorts = ports
	}
	if o.Out == nil {
		o.Out = testLog{t}
	}
	s, err := Start(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// keepLogs copies the logs of a failed test's stack (every *.log under dir) to a new
// directory that outlives the test, and names it in the test's log.
func keepLogs(t testing.TB, dir string) {
	if !t.Failed() {
		return
	}
	kept, err := os.MkdirTemp("", "sigops-failed-logs-")
	if err != nil {
		t.Logf("keeping the logs: %v", err)
		return
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".log") {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		to := filepath.Join(kept, rel)
		if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
	t.Logf("the stack's logs are kept in %s (%v)", kept, err)
}

// testLog writes each progress line to a test's log.
type testLog struct{ t testing.TB }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
