// Package load drives the signal pipeline with webhook traffic and checks what came out:
// it sets up a fleet of paper-trading bots (Setup), sends signals at fixed rates or at full
// speed over keep-alive connections (Runner), and reconciles every accepted signal with its
// stored result and its orders (Checker). hack/loadgen runs it against the local stack
// (`make run`); BenchmarkSignalPipeline starts its own stack and runs it (`make bench`).
//
// Nothing in this package starts a process by itself; only the benchmarks do, and plain
// `go test` runs no benchmark.
package load

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/controllers"
)

// Defaults of SetupOptions.
const (
	DefaultNamespace = "load"
	DefaultBots      = 100
	DefaultOwner     = "load@sigops.local"
	// DefaultBalance is each bot's own paper balance (USDT): a buy of 0.001 BTC costs about
	// 65 USDT, so it never runs out however many round trips a run makes.
	DefaultBalance = "1000000"
	// PositionSize is every bot's fixed entry size (BTC), the size the signals carry too.
	PositionSize = "0.001"
	// Symbol is every bot's fixed pair.
	Symbol = "BTC/USDT"
	// WebhookPathPrefix + webhook ID is a bot's webhook path.
	WebhookPathPrefix = "/api/webhooks/trade/"
)

// SetupOptions configure Setup. Zero values take the defaults.
type SetupOptions struct {
	Namespace string
	Bots      int
	Owner     string
	// Balance is each paper account's initialBalance.
	Balance string
	// ReadyTimeout bounds the wait for every account and bot to be Ready (default 2 min).
	ReadyTimeout time.Duration
	// Creators is how many goroutines create objects (default 8).
	Creators int
}

// Bot is one bot of the fleet.
type Bot struct {
	Name string
	// ID is the SignalBot's UID, the bot's ID in Redis (queue, book, results).
	ID string
	// AccountID is the UID of the bot's own PaperAccount (the paper exchange's account key).
	AccountID string
	WebhookID string
	// Path is the webhook path, WebhookPathPrefix + WebhookID.
	Path string
	// AccountName and SecretName are the bot's PaperAccount and webhook Secret.
	AccountName, SecretName string
}

// Fleet is the set of bots a load run sends to.
type Fleet struct {
	Namespace string
	Bots      []Bot
}

// Paths are the bots' webhook paths, in fleet order.
func (f *Fleet) Paths() []string {
	out := make([]string, len(f.Bots))
	for i, b := range f.Bots {
		out[i] = b.Path
	}
	return out
}

func botName(i int) string     { return fmt.Sprintf("load-bot-%03d", i) }
func accountName(i int) string { return fmt.Sprintf("load-paper-%03d", i) }

// Setup makes (or reuses) one PaperAccount and one SignalBot per bot in the namespace,
// waits until every one is Ready and active, and reads each bot's webhook ID from its
// `<bot>-webhook` Secret.
//
// Every bot has its own account, so fills never contend on one balance key (the paper
// exchange fills in an optimistic transaction per account). Bots trade BTC/USDT spot with
// a fixed size of 0.001 BTC, no risk limits, no stop-loss or take-profit (no price-watcher
// signals), dedupeWindow 0 and the CRD's highest rate limit (60,000 a minute, burst 1,000),
// so neither the dedupe nor the per-bot limiter refuses anything at the rates a load run
// sends. Objects that already exist are reused as they are (hack/loadgen on a long-lived
// stack).
func Setup(ctx context.Context, c client.Client, o SetupOptions) (*Fleet, error) {
	if o.Namespace == "" {
		o.Namespace = DefaultNamespace
	}
	if o.Bots <= 0 {
		o.Bots = DefaultBots
	}
	if o.Owner == "" {
		o.Owner = DefaultOwner
	}
	if o.Balance == "" {
		o.Balance = DefaultBalance
	}
	if o.ReadyTimeout <= 0 {
		o.ReadyTimeout = 2 * time.Minute
	}
	if o.Creators <= 0 {
		o.Creators = 8
	}
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: o.Namespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, fmt.Errorf("create namespace %s: %w", o.Namespace, err)
	}
	// Accounts first, so that bots find them Ready and do not start disabled.
	if err := parallel(ctx, o.Bots, o.Creators, func(i int) error {
		return createIfMissing(ctx, c, &tradingv1.PaperAccount{
			ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: accountName(i)},
			Spec:       tradingv1.PaperAccountSpec{Owner: o.Owner, InitialBalance: o.Balance, Currency: "USDT"},
		})
	}); err != nil {
		return nil, err
	}
	deadline := time.Now().Add(o.ReadyTimeout)
	accounts, err := waitAllReady(ctx, c, o.Namespace, o.Bots, deadline, listAccounts)
	if err != nil {
		return nil, err
	}
	dedupe := metav1.Duration{}
	if err := parallel(ctx, o.Bots, o.Creators, func(i int) error {
		return createIfMissing(ctx, c, &tradingv1.SignalBot{
			ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: botName(i)},
			Spec: tradingv1.SignalBotSpec{
				Owner:           o.Owner,
				PaperAccountRef: &tradingv1.LocalObjectReference{Name: accountName(i)},
				Market:          tradingv1.MarketSpot,
				Symbol:          Symbol,
				PositionSize:    PositionSize,
				RateLimit:       tradingv1.RateLimitSpec{PerMinute: 60000, Burst: 1000},
				DedupeWindow:    &dedupe,
			},
		})
	}); err != nil {
		return nil, err
	}
	bots, err := waitAllReady(ctx, c, o.Namespace, o.Bots, deadline, listBots)
	if err != nil {
		return nil, err
	}

	f := &Fleet{Namespace: o.Namespace, Bots: make([]Bot, o.Bots)}
	if err := parallel(ctx, o.Bots, o.Creators, func(i int) error {
		b, a := bots[botName(i)], accounts[accountName(i)]
		if b.availability != string(tradingv1.AvailabilityActive) {
			return fmt.Errorf("SignalBot %s/%s is %s (%s), not active: a previous run left it so; delete the namespace %s or resume the bot",
				o.Namespace, b.name, b.availability, b.reason, o.Namespace)
		}
		secretName := b.secret
		if secretName == "" {
			secretName = b.name + "-webhook"
		}
		var s corev1.Secret
		if err := c.Get(ctx, types.NamespacedName{Namespace: o.Namespace, Name: secretName}, &s); err != nil {
			return fmt.Errorf("webhook Secret of %s: %w", b.name, err)
		}
		id := string(s.Data[controllers.WebhookSecretKeyID])
		if id == "" {
			return fmt.Errorf("secret %s/%s has no %s", o.Namespace, secretName, controllers.WebhookSecretKeyID)
		}
		f.Bots[i] = Bot{Name: b.name, ID: b.uid, AccountID: a.uid, WebhookID: id, Path: WebhookPathPrefix + id,
			AccountName: a.name, SecretName: secretName}
		return nil
	}); err != nil {
		return nil, err
	}
	return f, nil
}

func createIfMissing(ctx context.Context, c client.Client, obj client.Object) error {
	if err := c.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
	}
	return nil
}

// parallel runs fn(0..n-1) on workers goroutines and returns the first error.
func parallel(ctx context.Context, n, workers int, fn func(i int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		first error
		next  int
		wg    sync.WaitGroup
	)
	for range min(workers, n) {
		wg.Go(func() {
			for {
				mu.Lock()
				i := next
				next++
				stop := first != nil || ctx.Err() != nil
				mu.Unlock()
				if i >= n || stop {
					return
				}
				if err := fn(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					cancel()
					return
				}
			}
		})
	}
	wg.Wait()
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// observed is what Setup needs of an account or bot.
type observed struct {
	name, uid, secret    string
	ready                bool
	availability, reason string
	readyMessage         string
}

type lister func(ctx context.Context, c client.Client, ns string) (map[string]observed, error)

func listAccounts(ctx context.Context, c client.Client, ns string) (map[string]observed, error) {
	var l tradingv1.PaperAccountList
	if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	out := make(map[string]observed, len(l.Items))
	for _, a := range l.Items {
		ob := observed{name: a.Name, uid: string(a.UID)}
		if cond := meta.FindStatusCondition(a.Status.Conditions, tradingv1.ConditionReady); cond != nil {
			ob.ready = cond.Status == metav1.ConditionTrue && cond.ObservedGeneration >= a.Generation
			ob.readyMessage = cond.Reason + ": " + cond.Message
		}
		out[a.Name] = ob
	}
	return out, nil
}

func listBots(ctx context.Context, c client.Client, ns string) (map[string]observed, error) {
	var l tradingv1.SignalBotList
	if err := c.List(ctx, &l, client.InNamespace(ns)); err != nil {
		return nil, err
	}
	out := make(map[string]observed, len(l.Items))
	for _, b := range l.Items {
		ob := observed{name: b.Name, uid: string(b.UID), secret: b.Status.WebhookSecretName,
			availability: string(b.Status.Availability), reason: string(b.Status.PausedReason)}
		if cond := meta.FindStatusCondition(b.Status.Conditions, tradingv1.ConditionReady); cond != nil {
			ob.ready = cond.Status == metav1.ConditionTrue && cond.ObservedGeneration >= b.Generation
			ob.readyMessage = cond.Reason + ": " + cond.Message
		}
		out[b.Name] = ob
	}
	return out, nil
}

// waitAllReady polls the list until n objects are Ready or the deadline passes.
func waitAllReady(ctx context.Context, c client.Client, ns string, n int, deadline time.Time, list lister) (map[string]observed, error) {
	for {
		objs, err := list(ctx, c, ns)
		last := ""
		if err == nil {
			ready := 0
			for _, o := range objs {
				if o.ready {
					ready++
				} else if last == "" {
					last = fmt.Sprintf("; %s not Ready (%s)", o.name, o.readyMessage)
				}
			}
			if ready >= n {
				return objs, nil
			}
			last = fmt.Sprintf("%d of %d Ready%s", ready, n, last)
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			return nil, errors.New("load setup: not all objects Ready in time: " + last)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// Teardown deletes the fleet's SignalBots, waits until the manager has finalized them (their
// Redis state removed), then deletes their PaperAccounts and webhook Secrets, all by name.
// The namespace stays: the local stack's control plane runs no namespace controller, so a
// deleted namespace would stay Terminating and refuse the next Setup.
func Teardown(ctx context.Context, c client.Client, f *Fleet, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	del := func(obj client.Object) error {
		if err := c.Delete(ctx, obj); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %T %s/%s: %w", obj, obj.GetNamespace(), obj.GetName(), err)
		}
		return nil
	}
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Namespace: f.Namespace, Name: name} }
	if err := parallel(ctx, len(f.Bots), 8, func(i int) error {
		return del(&tradingv1.SignalBot{ObjectMeta: meta(f.Bots[i].Name)})
	}); err != nil {
		return err
	}
	for {
		bots, err := listBots(ctx, c, f.Namespace)
		if err != nil {
			return err
		}
		left := 0
		for _, b := range f.Bots {
			if _, ok := bots[b.Name]; ok {
				left++
			}
		}
		if left == 0 {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("load teardown: %d SignalBots still being finalized after %s", left, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(250 * time.Millisecond):
		}
	}
	return parallel(ctx, len(f.Bots), 8, func(i int) error {
		if err := del(&tradingv1.PaperAccount{ObjectMeta: meta(f.Bots[i].AccountName)}); err != nil {
			return err
		}
		return del(&corev1.Secret{ObjectMeta: meta(f.Bots[i].SecretName)})
	})
}
