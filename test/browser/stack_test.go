// Package browser_test drives the dashboard in a real headless Chromium (chromedp) against
// the whole path a user has: authd with the dashboard and its live-event hub, webhookd, an
// executor (paper venues, the stop-loss watcher and the Strategy Lab engine), the manager's
// controllers on a real API server (test/testenv) and Redis. One origin on loopback TLS
// serves authd and, under the webhook route, webhookd, as the Ingress does, so the webhook
// URL the Bot detail page reveals is the one a curl-like client posts to.
//
// SIGOPS_SCREENSHOTS=<dir> (make screenshots) also saves PNGs of every page at desktop and
// phone width into <dir>.
package browser_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5/pgxpool"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sigops/sigops/authd"
	"github.com/sigops/sigops/controllers"
	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/internal/userapi"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/egress"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/intake"
	"github.com/sigops/sigops/runtime/lab"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/notify/manage"
	"github.com/sigops/sigops/runtime/notify/settings"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/test/testenv"
	"github.com/sigops/sigops/webhookd"
)

// The stack every test of the package runs against.
var (
	env *testenv.Env
	k8s client.Client
	// front is the one HTTPS origin: {base_url}.
	front *httptest.Server
	base  string
	apis  *userapi.APIs
	users *auth.Users
)

func TestMain(m *testing.M) { os.Exit(runSuite(m)) }

func runSuite(m *testing.M) int {
	// The controllers' logs are not this suite's subject.
	ctrllog.SetLogger(logr.Discard())
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	var running sync.WaitGroup
	defer running.Wait() // the daemons stop before Redis and the API server do
	defer cancel()
	stop, err := startStack(ctx, &running)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer stop()
	return m.Run()
}

// startStack starts the daemons on env and serves them on front; the daemons run on running
// until ctx ends, and the returned func closes the listener.
func startStack(ctx context.Context, running *sync.WaitGroup) (func(), error) {
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	if os.Getenv("SIGOPS_BROWSER_LOG") != "" {
		quiet = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	// The listener exists first: its address is {base_url}, which the controllers write
	// into webhook URLs and authd checks request origins against.
	mux := http.NewServeMux()
	front = httptest.NewUnstartedServer(mux)
	base = "https://" + front.Listener.Addr().String()

	done, err := env.StartControllers(ctx, controllers.Options{Redis: env.RDB, BaseURL: base, TombstoneTTL: time.Hour,
		MaxConcurrentReconciles: 2, PaperSyncPeriod: time.Second, CredentialsRetryPeriod: time.Second})
	if err != nil {
		return nil, err
	}
	running.Go(func() { <-done })
	if k8s, err = env.Client(); err != nil {
		return nil, err
	}

	// The executor: the simulated market's default path, the same prices every reader
	// computes (marketdata.Simulated is a pure function of its seed and the time).
	prices := marketdata.NewSimulated(marketdata.SimulatedOptions{})
	exec := executor.New(executor.Deps{Redis: env.RDB, Prices: prices, Logger: quiet,
		Venues: &executor.Paper{Redis: env.RDB, Prices: prices}})
	ro := store.Options{Addr: env.Redis.Addr, ClusterAddrs: env.Redis.ClusterAddrs}
	qrdb, err := queue.DedicatedClient(ctx, ro)
	if err != nil {
		return nil, err
	}
	consumer := queue.NewConsumer(qrdb, queue.Options{LeaseTTL: time.Second, Logger: quiet})
	running.Go(func() { _ = consumer.Run(ctx, exec.Handle) })
	watcher := exec.NewWatcher(executor.WatcherDeps{Redis: env.RDB, Prices: prices, Interval: 100 * time.Millisecond, Logger: quiet})
	running.Go(func() { _ = watcher.Run(ctx) })
	// The Strategy Lab's engine serves the jobs of the partitions the consumer holds, on a
	// client of its own, as cmd/executor runs it.
	lrdb, err := queue.DedicatedClient(ctx, ro)
	if err != nil {
		return nil, err
	}
	engine := lab.NewEngine(lab.EngineOptions{Redis: lrdb, Owned: consumer.Owned, Name: consumer.Name(),
		History: prices, Workers: 2, Poll: 100 * time.Millisecond, Logger: quiet})
	running.Go(func() { _ = engine.Run(ctx) })

	// authd with the dashboard, its APIs on the suite's Redis and a fleet on the API server.
	keys, err := auth.NewKeyring([]byte("browser-test-signing-key-0123456789ab"), nil)
	if err != nil {
		return nil, err
	}
	apis = userapi.OnRedis(env.RDB)
	apis.Fleet = fleet.New(fleet.Options{Client: k8s, Redis: env.RDB})
	users = auth.NewUsers(env.RDB, auth.UsersOptions{KDF: auth.TestKDF})
	// webhookd.
	waiter, err := queue.NewWaiter(ctx, env.RDB, "browser")
	if err != nil {
		return nil, err
	}
	hooks, err := webhookd.New(webhookd.Options{Intake: intake.New(env.RDB), Waiter: waiter,
		Symbols: apis.Symbols, WaitBound: 5 * time.Second, Logger: quiet})
	if err != nil {
		return nil, err
	}

	// The Notifications settings, on a database of the suite's.
	dbURL, err := dbtest.SuiteURL()
	if err != nil {
		return nil, err
	}
	db, err := pgxpool.New(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	notifications := &manage.Manager{Settings: &settings.Store{DB: db}, Egress: egress.New(egress.Options{}), BotUsername: "sigops_bot"}
	as, err := authd.New(authd.Options{Redis: env.RDB, Keys: keys, BaseURL: base, KDF: auth.TestKDF, APIs: apis, Logger: quiet,
		Notifications: notifications})
	if err != nil {
		return nil, err
	}
	running.Go(func() { _ = as.Run(ctx) })

	// Routed as the Ingress routes them: the webhook endpoint to webhookd, the rest to authd.
	mux.Handle(controllers.WebhookPath, hooks.Handler())
	mux.Handle("/", as.Handler())
	front.StartTLS()
	return front.Close, nil
}

func trimBase(u string) string { return strings.TrimPrefix(u, base) }
