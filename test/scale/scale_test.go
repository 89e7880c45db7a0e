// Package scale_test measures the operator at scale against real processes: kube-apiserver
// and etcd (envtest), redis-server and the manager binary, started the way the local stack
// starts them. Run it with `make bench`; plain `go test ./...` does not (benchmarks only).
package scale_test

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/controllers"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/test/stack"
)

// The targets on the reference machine of docs/benchmarks.md (2 cores shared by the API
// server, etcd, Redis, the manager and the test): a miss fails the benchmark after its
// figures are reported.
const (
	peakRSSLimit = 300 << 20 // bytes: the manager's VmHWM
	// writesPerBot is the manager's budget of API writes per new bot: the webhook Secret's
	// create (carrying the cleanup finalizer) and the status patch. A conflict retry would
	// add one; the budget is exact because the manager has nothing else to write.
	writesPerBot = 2
	pollInterval = 100 * time.Millisecond
	owner        = "bench@sigops.local"
	paperName    = "bench-paper"
)

// scaleCase is one size: how many bots, from how many creating goroutines, and the target
// from the first create to every bot Ready and projected.
type scaleCase struct {
	bots, creators int
	readyWithin    time.Duration
}

var scaleCases = []scaleCase{
	{bots: 1000, creators: 8, readyWithin: 10 * time.Second},
	{bots: 10000, creators: 32, readyWithin: 90 * time.Second},
}

// BenchmarkCreateSignalBots creates N SignalBots on one paper account against the real
// manager binary and measures the time until every one is Ready and projected into Redis,
// the manager's peak resident memory and its API writes per bot. The reference is the API
// server's own ceiling on this machine, measured in the same run once the manager is
// stopped: the test's creators alone make the same objects (N bots, N Secrets, N status
// patches). Run each size once: -benchtime 1x.
func BenchmarkCreateSignalBots(b *testing.B) {
	ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	for _, sc := range scaleCases {
		b.Run(strconv.Itoa(sc.bots), func(b *testing.B) { benchCreate(b, sc) })
	}
}

// benchCreate runs one size on its own control plane, Redis and manager.
func benchCreate(b *testing.B, sc scaleCase) {
	ctx := b.Context()
	env := startEnv(ctx, b)
	var took time.Duration
	var writes float64
	for i := range b.N {
		ns := fmt.Sprintf("bench-%d", i)
		prepare(ctx, b, env.c, ns)
		before, err := managerWrites(ctx, env.mgr)
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		took += createAndWait(ctx, b, env, sc, ns, int64(sc.bots*(i+1)))
		b.StopTimer()
		after, err := managerWrites(ctx, env.mgr)
		if err != nil {
			b.Fatal(err)
		}
		writes += after - before
	}
	rss, err := env.mgr.PeakRSS()
	if err != nil {
		b.Fatal(err)
	}
	if err := env.mgr.Stop(30 * time.Second); err != nil {
		b.Fatal(err)
	}
	ref := reference(ctx, b, env.c, sc)

	secs := took.Seconds() / float64(b.N)
	mib := float64(rss) / (1 << 20)
	perBot := writes / float64(sc.bots*b.N)
	b.ReportMetric(secs, "s-to-ready")
	b.ReportMetric(mib, "MiB-peak-rss")
	b.ReportMetric(perBot, "writes/bot")
	b.ReportMetric(ref.Seconds(), "s-reference")
	b.ReportMetric(secs/ref.Seconds(), "x-reference")
	b.Logf("%d SignalBots Ready and projected in %.2f s (reference: the same objects written by the test alone in %.2f s, ratio %.2f); manager peak RSS %.1f MiB; %.2f API writes per bot",
		sc.bots, secs, ref.Seconds(), secs/ref.Seconds(), mib, perBot)
	if secs > sc.readyWithin.Seconds() {
		b.Errorf("target missed: %d bots Ready in %.2f s; target %s", sc.bots, secs, sc.readyWithin)
	}
	if rss > peakRSSLimit {
		b.Errorf("target missed: manager peak RSS %.1f MiB; target %d MiB", mib, peakRSSLimit>>20)
	}
	if perBot > writesPerBot {
		b.Errorf("the manager made %.3f API writes per new bot; budget %d", perBot, writesPerBot)
	}
}

// env is one size's processes: the control plane, Redis and the manager, with a client of
// the API server (no client-side rate limit: the test must not be what limits the rate)
// and the bot registry.
type env struct {
	c   client.Client
	reg *registry.Registry
	mgr *stack.Manager
}

func startEnv(ctx context.Context, b *testing.B) env {
	b.Helper()
	b.StopTimer()
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
		Binary: bin, Kubeconfig: cp.Kubeconfig, Redis: store.Options{Addr: rds.Addr},
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
	c, err := stack.NewClient(cp.Config, -1, 0)
	if err != nil {
		b.Fatal(err)
	}
	return env{c: c, reg: registry.New(rdb), mgr: mgr}
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

// createAndWait creates sc.bots bots in ns from sc.creators goroutines, then polls until all
// are Ready and Redis holds wantProjected bots, and returns how long that took. It gives up
// at three times the target, so that a miss still has its figure.
func createAndWait(ctx context.Context, b *testing.B, e env, sc scaleCase, ns string, wantProjected int64) time.Duration {
	b.Helper()
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, 3*sc.readyWithin)
	defer cancel()
	var created atomic.Int64
	creating := make(chan error, 1)
	go func() {
		creating <- each(ctx, sc.bots, sc.creators, func(i int) error {
			err := e.c.Create(ctx, newBot(ns, i))
			if err == nil {
				created.Add(1)
			}
			return err
		})
	}()

	tick := time.NewTicker(pollInterval)
	defer tick.Stop()
	lastLog := start
	for done := false; ; {
		select {
		case err := <-creating:
			if err != nil {
				b.Fatalf("create SignalBot: %v", err)
			}
			b.ReportMetric(time.Since(start).Seconds(), "s-to-create")
			b.Logf("created %d SignalBots in %.2f s", sc.bots, time.Since(start).Seconds())
			done = true
		case <-ctx.Done():
			projected, _ := e.reg.Count(context.Background())
			b.Fatalf("not all SignalBots Ready and projected within %s: created %d, projected %d of %d; manager output:\n%s",
				3*sc.readyWithin, created.Load(), projected, wantProjected, e.mgr.Tail())
		case <-tick.C:
		}
		projected, err := e.reg.Count(ctx)
		if err != nil {
			continue // the context ended; reported above on the next turn
		}
		if time.Since(lastLog) >= 10*time.Second {
			lastLog = time.Now()
			b.Logf("%.0f s: %d of %d bots created, %d projected into Redis", time.Since(start).Seconds(), created.Load(), wantProjected, projected)
		}
		// Listing every bot is costly for the API server; do it only once Redis is complete.
		if !done || projected < wantProjected {
			continue
		}
		if ready, err := countReady(ctx, e.c, ns); err == nil && ready == sc.bots {
			return time.Since(start)
		}
	}
}

// each runs do(0) … do(n-1) on workers goroutines and returns the first error (after which
// the others stop taking indexes).
func each(ctx context.Context, n, workers int, do func(i int) error) error {
	var (
		next    atomic.Int64
		wg      sync.WaitGroup
		errOnce sync.Once
		first   error
	)
	for range workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := do(i); err != nil {
					errOnce.Do(func() { first = err })
					next.Store(int64(n))
					return
				}
			}
		})
	}
	wg.Wait()
	if first == nil {
		return ctx.Err()
	}
	return first
}

// reference is how long the test's creators alone take to make what the run made, with the
// manager stopped: per bot, the SignalBot, its webhook Secret and a status patch with a
// Ready condition. It is the API server's write ceiling on this machine at this
// concurrency.
func reference(ctx context.Context, b *testing.B, c client.Client, sc scaleCase) time.Duration {
	b.Helper()
	const ns = "reference"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	err := each(ctx, sc.bots, sc.creators, func(i int) error {
		bot := newBot(ns, i)
		if err := c.Create(ctx, bot); err != nil {
			return err
		}
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: bot.Name + "-webhook",
				Labels: map[string]string{controllers.LabelSecretKind: "webhook"}},
			Data: map[string][]byte{controllers.WebhookSecretKeyID: []byte(uuid.NewString())},
		}
		if err := c.Create(ctx, secret); err != nil {
			return err
		}
		base := bot.DeepCopy()
		meta.SetStatusCondition(&bot.Status.Conditions, metav1.Condition{Type: tradingv1.ConditionReady,
			Status: metav1.ConditionTrue, Reason: "Active", Message: "taking signals"})
		return c.Status().Patch(ctx, bot, client.MergeFrom(base))
	})
	if err != nil {
		b.Fatalf("reference writes: %v", err)
	}
	return time.Since(start)
}

// managerWrites is the manager's API writes so far (POST, PUT, PATCH, DELETE), summed from
// client-go's rest_client_requests_total on its /metrics: every request it sent, retries
// and failures included.
func managerWrites(ctx context.Context, mgr *stack.Manager) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+mgr.MetricsAddr+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var sum float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "rest_client_requests_total{") {
			continue
		}
		labels, value, ok := strings.Cut(line, "} ")
		if !ok {
			return 0, fmt.Errorf("metrics line %q", line)
		}
		for _, m := range []string{`method="POST"`, `method="PUT"`, `method="PATCH"`, `method="DELETE"`} {
			if strings.Contains(labels, m) {
				v, err := strconv.ParseFloat(value, 64)
				if err != nil {
					return 0, fmt.Errorf("metrics line %q: %w", line, err)
				}
				sum += v
			}
		}
	}
	return sum, sc.Err()
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
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("bot-%05d", i)},
		Spec: tradingv1.SignalBotSpec{
			Owner:           owner,
			PaperAccountRef: &tradingv1.LocalObjectReference{Name: paperName},
			Market:          tradingv1.MarketSpot,
			Symbol:          "BTC/USDT",
			PositionSize:    "10%",
		},
	}
}
