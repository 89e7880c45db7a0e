// Package scale_test measures the operator at scale against real processes: kube-apiserver
// and etcd (envtest), redis-server and the manager binary, started the way the local stack
// starts them. Run it with `make bench`; plain `go test ./...` does not (benchmarks only).
package scale_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/test/stack"
)

const (
	botCount     = 1000
	creators     = 8                 // goroutines creating bots
	readyWithin  = 120 * time.Second // from the first create to all bots ready and projected
	pollInterval = 100 * time.Millisecond
	owner        = "bench@sigops.local"
	paperName    = "bench-paper"
)

// BenchmarkCreate1000SignalBots creates 1,000 SignalBots on one paper account and measures
// the time until every one is Ready and projected into Redis, and the manager's peak
// resident memory. Run it once: -benchtime 1x.
func BenchmarkCreate1000SignalBots(b *testing.B) {
	ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	ctx := b.Context()
	root, err := stack.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()

	cp, err := stack.StartControlPlane(stack.ControlPlaneOptions{Root: root, Kubeconfig: filepath.Join(dir, "kubeconfig")})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := cp.Stop(); err != nil {
			b.Error("stop control plane:", err)
		}
	})
	rds, err := stack.StartRedis(ctx, stack.RedisOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := rds.Stop(10 * time.Second); err != nil {
			b.Error(err)
		}
	})
	rdb := rds.Client()
	b.Cleanup(func() { _ = rdb.Close() })
	bin, err := stack.BuildManager(ctx, root)
	if err != nil {
		b.Fatal(err)
	}
	mgr, err := stack.StartManager(ctx, stack.ManagerOptions{
		Binary: bin, Kubeconfig: cp.Kubeconfig, RedisAddr: rds.Addr,
		BaseURL: "https://sigops.bench", LogFile: filepath.Join(dir, "manager.log"),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := mgr.Stop(30 * time.Second); err != nil {
			b.Error(err)
		}
	})
	c, err := stack.NewClient(cp.Config, 1000, 2000)
	if err != nil {
		b.Fatal(err)
	}
	reg := registry.New(rdb)

	b.ResetTimer()
	var total time.Duration
	for i := range b.N {
		ns := "bench"
		if i > 0 {
			ns = fmt.Sprintf("bench-%d", i)
		}
		b.StopTimer()
		prepare(ctx, b, c, ns)
		b.StartTimer()
		total += createAndWait(ctx, b, c, reg, mgr, ns, int64(botCount*(i+1)))
	}
	b.StopTimer()

	rss, err := mgr.PeakRSS()
	if err != nil {
		b.Fatal(err)
	}
	secs := total.Seconds() / float64(b.N)
	mib := float64(rss) / (1 << 20)
	b.ReportMetric(secs, "s-to-ready")
	b.ReportMetric(mib, "MiB-peak-rss")
	b.Logf("%d SignalBots Ready and projected in %.2f s; manager peak RSS %.1f MiB", botCount, secs, mib)
}

// prepare makes the namespace and a Ready paper account for the bots.
func prepare(ctx context.Context, b *testing.B, c client.Client, ns string) {
	b.Helper()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}
	acct := &tradingv1.PaperAccount{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: paperName},
		Spec:       tradingv1.PaperAccountSpec{Owner: owner, InitialBalance: "10000", Currency: "USDT"},
	}
	if err := c.Create(ctx, acct); err != nil {
		b.Fatal(err)
	}
	key := types.NamespacedName{Namespace: ns, Name: paperName}
	if _, err := stack.WaitReady(ctx, c, tradingv1.GroupVersion.WithKind("PaperAccount"), key, time.Minute); err != nil {
		b.Fatal(err)
	}
}

// createAndWait creates botCount bots in ns from several goroutines, then polls until all
// are Ready and Redis holds wantProjected bots, and returns how long that took.
func createAndWait(ctx context.Context, b *testing.B, c client.Client, reg *registry.Registry, mgr *stack.Manager, ns string, wantProjected int64) time.Duration {
	b.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, readyWithin)
	defer cancel()

	var (
		next, created atomic.Int64
		wg            sync.WaitGroup
		errOnce       sync.Once
		createErr     error
	)
	for range creators {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= botCount {
					return
				}
				if err := c.Create(ctx, newBot(ns, int(i))); err != nil {
					errOnce.Do(func() { createErr = err; cancel() })
					return
				}
				created.Add(1)
			}
		})
	}
	creating := make(chan struct{})
	go func() { wg.Wait(); close(creating) }()

	var createdIn time.Duration
	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	lastLog := start
	for {
		select {
		case <-creating:
			if createErr != nil {
				b.Fatalf("create SignalBot: %v", createErr)
			}
			createdIn = time.Since(start)
			b.Logf("created %d SignalBots in %.2f s", botCount, createdIn.Seconds())
			creating = nil
		case <-ctx.Done():
			<-creatingOrClosed(creating)
			if createErr != nil {
				b.Fatalf("create SignalBot: %v", createErr)
			}
			projected, _ := reg.Count(context.Background())
			b.Fatalf("not all SignalBots Ready and projected within %s: created %d, projected %d of %d; manager output:\n%s",
				readyWithin, created.Load(), projected, wantProjected, mgr.Tail())
		case <-tick.C:
		}
		if creating != nil {
			continue
		}
		projected, err := reg.Count(ctx)
		if err != nil {
			continue // the context ended; reported above on the next turn
		}
		if time.Since(lastLog) >= 10*time.Second {
			lastLog = time.Now()
			b.Logf("%.0f s: %d of %d bots projected into Redis", time.Since(start).Seconds(), projected, wantProjected)
		}
		// Listing 1,000 bots is costly for the API server; do it only once Redis is complete.
		if projected < wantProjected {
			continue
		}
		if ready, err := countReady(ctx, c, ns); err == nil && ready == botCount {
			took := time.Since(start)
			b.ReportMetric(createdIn.Seconds(), "s-to-create")
			return took
		}
	}
}

// creatingOrClosed waits for the creators unless they already finished.
func creatingOrClosed(ch chan struct{}) <-chan struct{} {
	if ch == nil {
		closed := make(chan struct{})
		close(closed)
		return closed
	}
	return ch
}

func countReady(ctx context.Context, c client.Client, ns string) (int, error) {
	var list tradingv1.SignalBotList
	if err := c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		return 0, err
	}
	n := 0
	for i := range list.Items {
		if meta.IsStatusConditionTrue(list.Items[i].Status.Conditions, tradingv1.ConditionReady) {
			n++
		}
	}
	return n, nil
}

func newBot(ns string, i int) *tradingv1.SignalBot {
	return &tradingv1.SignalBot{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("bot-%04d", i)},
		Spec: tradingv1.SignalBotSpec{
			Owner:           owner,
			PaperAccountRef: &tradingv1.LocalObjectReference{Name: paperName},
			Market:          tradingv1.MarketSpot,
			Symbol:          "BTC/USDT",
			PositionSize:    "10%",
		},
	}
}
