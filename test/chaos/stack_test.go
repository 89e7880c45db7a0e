package chaos_test

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/sigops/sigops/test/stack"
	"github.com/sigops/sigops/test/stack/localstack"
)

// Replicas of each daemon, as config/default runs them (the executor at three so that a
// dead one's partitions are shared by two).
const (
	executors = 3
	webhookds = 2
	mcpds     = 2
)

// chaosStack is the local stack as `make run ARGS='-redis=sentinel -executors=3
// -webhookd=2 -mcpd=2'` starts it, on free ports in a temporary directory: every program
// real and supervised.
type chaosStack struct {
	*localstack.Stack
	executor, webhookd []*stack.Supervised
	// roots trust nginx's certificate; origin is its {base_url} host:port.
	roots  *x509.CertPool
	origin string
}

// startChaosStack starts the stack through localstack.Start, the way `make run` does.
func startChaosStack(ctx context.Context, t *testing.T) *chaosStack {
	t.Helper()
	origin := freeAddr(t)
	s, err := localstack.Start(ctx, localstack.Options{Dir: t.TempDir(), Redis: localstack.RedisSentinel,
		Executors: executors, Webhookd: webhookds, MCPD: mcpds, Out: testWriter{t},
		OriginAddr: origin, MCPOriginAddr: freeAddr(t), RedisPort: freePort(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	cs := &chaosStack{Stack: s, origin: origin}
	for i := range executors {
		cs.executor = append(cs.executor, s.Daemon(fmt.Sprintf("executor-%d", i)))
	}
	for i := range webhookds {
		cs.webhookd = append(cs.webhookd, s.Daemon(fmt.Sprintf("webhookd-%d", i)))
	}
	pem, err := os.ReadFile(s.CertFile())
	if err != nil {
		t.Fatal(err)
	}
	cs.roots = x509.NewCertPool()
	cs.roots.AppendCertsFromPEM(pem)
	return cs
}

// testWriter sends the stack's progress lines to the test log.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func freePort(t *testing.T) int {
	t.Helper()
	port, err := stack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return port
}

func freeAddr(t *testing.T) string {
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(freePort(t)))
}
