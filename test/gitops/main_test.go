// Package gitops_test checks that GitOps tools read the health of every sigops kind from
// what the real manager writes: kstatus (sigs.k8s.io/cli-utils, as Flux and kpt use it) and
// the Argo CD health script of config/argocd, run by gopher-lua as Argo CD runs it.
package gitops_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sigops/sigops/controllers"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/exchange/binance/binancefake"
	"github.com/sigops/sigops/runtime/exchange/connectors"
	"github.com/sigops/sigops/test/stack"
	"github.com/sigops/sigops/test/testenv"
)

// owner owns every account and bot of the suite; its tier allows live trading.
const owner = "ops@sigops.test"

var (
	k8s client.Client
	// exchangeURL is a fake Binance the Ready connections are validated against.
	exchangeURL string
	// redisAddr is the manager's Redis (empty on a Redis Cluster).
	redisAddr string
	// repoRoot locates config/argocd.
	repoRoot string
	// argoConfig is argocd-cm with the sigops health checks, as the component renders it.
	argoConfig *corev1.ConfigMap
)

func TestMain(m *testing.M) { os.Exit(runSuite(m)) }

func runSuite(m *testing.M) int {
	if err := startSuite(m); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// startSuite runs the control plane, Redis, a fake exchange and the manager's controllers
// around the tests; a failing test is reported as an error.
func startSuite(m *testing.M) error {
	root, err := stack.RepoRoot()
	if err != nil {
		return err
	}
	repoRoot = root
	if argoConfig, err = renderArgoCM(root); err != nil {
		return err
	}
	env, err := testenv.Start()
	if err != nil {
		return err
	}
	defer env.Stop()
	redisAddr = env.Redis.Addr
	if _, err := env.LiveOwners(context.Background(), owner); err != nil {
		return err
	}
	keys, err := credentials.NewRing(bytes.Repeat([]byte{0x6b, 0x1f, 0xa4, 0x3c}, 8))
	if err != nil {
		return err
	}
	fake := binancefake.New()
	defer fake.Close()
	exchangeURL = fake.URL()

	ctrl.SetLogger(logr.Discard())
	ctx, cancel := context.WithCancel(context.Background())
	done, err := env.StartControllers(ctx, controllers.Options{Redis: env.RDB, BaseURL: "https://sigops.test",
		TombstoneTTL: time.Hour, MaxConcurrentReconciles: 2, PaperSyncPeriod: time.Second,
		CredentialsRetryPeriod: time.Second, MasterKeys: keys, Connectors: connectors.All(),
		ExchangeRetryBackoff: 200 * time.Millisecond})
	if err != nil {
		cancel()
		return err
	}
	defer func() { cancel(); <-done }()
	if k8s, err = env.Client(); err != nil {
		return err
	}
	if code := m.Run(); code != 0 {
		return fmt.Errorf("tests failed (exit %d)", code)
	}
	return nil
}
