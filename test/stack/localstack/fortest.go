package localstack

import (
	"context"
	"net"
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
		ports, err := stack.FreeClusterPorts(clusterMasters)
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

// testLog writes each progress line to a test's log.
type testLog struct{ t testing.TB }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
