package controllers_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/controllers"
	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/store/storetest"
	"github.com/sigops/sigops/test/testenv"
)

// The suite runs the real controllers in the environment test/testenv starts: the control
// plane of `make run` (with kube-controller-manager, so owned objects are garbage-collected
// as on a real cluster) and a Redis from storetest.
var (
	users *auth.Users
	k8s   client.Client
	rdb   redis.UniversalClient
	// redisServer is the suite's Redis, which the re-projection test restarts empty.
	redisServer *storetest.Server
	clock       = testkit.WallClock()
	nsSerial    atomic.Int64

	// masterKey seals credentials in the suite's manager; exchanges is its only connector
	// (binance), a stub answering by API key; logs holds everything the manager logged.
	masterKey  = bytes.Repeat([]byte{0x5e, 0xc7, 0x21, 0x9a}, 8)
	masterKeys *credentials.Ring
	exchanges  = newStubConnector("binance")
	logs       = &testkit.LogBuffer{}
)

const baseURL = "https://sigops.test"

func TestMain(m *testing.M) { os.Exit(runSuite(m)) }

func runSuite(m *testing.M) int {
	env, err := testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Stop()
	rdb, redisServer = env.RDB, env.Redis
	// The owner of the live bots in these tests: an account whose tier includes live trading.
	if users, err = env.LiveOwners(context.Background(), "a@x.io"); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}

	ctrl.SetLogger(logr.FromSlogHandler(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if masterKeys, err = credentials.NewRing(masterKey); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env.Config.QPS, env.Config.Burst = 500, 1000
	ctx, cancel := context.WithCancel(context.Background())
	done, err := env.StartControllers(ctx, controllers.Options{
		Redis: rdb, BaseURL: baseURL, TombstoneTTL: time.Hour, MaxConcurrentReconciles: 4,
		PaperSyncPeriod: time.Second, CredentialsRetryPeriod: time.Second, Clock: clock.Now,
		MasterKeys: masterKeys, Connectors: map[string]exchange.Connector{"binance": exchanges},
		ExchangeRetryBackoff: 200 * time.Millisecond, ReprojectCheckPeriod: 250 * time.Millisecond,
	})
	if err != nil {
		cancel()
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { cancel(); <-done }()

	if k8s, err = env.Client(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

// namespace creates a fresh namespace for one test.
func namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("t%d-%d", time.Now().UnixNano()%1e6, nsSerial.Add(1))}}
	if err := k8s.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	return ns.Name
}

// eventually is testkit.Eventually with the 20 s every wait of the suite allows.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, what, check)
}

func get(t *testing.T, obj client.Object, ns, name string) {
	t.Helper()
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
		t.Fatal(err)
	}
}

func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8s.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %s: %v", obj.GetName(), err)
	}
}

func paperAccount(ns, name, owner string) *tradingv1.PaperAccount {
	return &tradingv1.PaperAccount{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       tradingv1.PaperAccountSpec{Owner: owner},
	}
}

func paperBot(ns, name, owner, account string) *tradingv1.SignalBot {
	return &tradingv1.SignalBot{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: tradingv1.SignalBotSpec{
			Owner:           owner,
			PaperAccountRef: &tradingv1.LocalObjectReference{Name: account},
			Symbol:          "BTC/USDT",
		},
	}
}

// waitFor re-reads obj until ok accepts it.
func waitFor[T client.Object](t *testing.T, obj T, ns, name, what string, ok func(T) error) T {
	t.Helper()
	eventually(t, what, func() error {
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj); err != nil {
			return err
		}
		return ok(obj)
	})
	return obj
}

func keyOf(ns, name string) client.ObjectKey { return client.ObjectKey{Namespace: ns, Name: name} }
