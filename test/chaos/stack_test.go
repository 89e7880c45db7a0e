package chaos_test

import (
	"context"
	"crypto/x509"
	"fmt"
	"os"
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
	// roots trust nginx's certificate.
	roots *x509.CertPool
}

// startChaosStack starts the stack through localstack.Start, the way `make run` does.
func startChaosStack(ctx context.Context, t *testing.T, redis string) *chaosStack {
	t.Helper()
	s := localstack.StartForTest(ctx, t, localstack.Options{Redis: redis,
		Executors: executors, Webhookd: webhookds, MCPD: mcpds})
	cs := &chaosStack{Stack: s}
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
