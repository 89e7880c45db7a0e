package lab

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
	"github.com/sigops/sigops/runtime/strategy"
	"github.com/sigops/sigops/runtime/wallet"
)

var d = decimal.RequireFromString

// now is the simulated market's clock: candles before it are history.
var now = time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC)

type fixture struct {
	srv     *storetest.Server
	db      *pgxpool.Pool
	rdb     redis.UniversalClient
	users   *auth.Users
	wallets *wallet.Wallets
	sim     *marketdata.Simulated
	lab     *Lab
}

// newFixture is a Lab as the service runs it: accounts and wallets recorded in PostgreSQL.
func newFixture(t testing.TB) *fixture {
	t.Helper()
	srv, rdb := storetest.New(t)
	db := dbtest.New(t)
	clock := func() time.Time { return now }
	users := auth.NewUsers(rdb, auth.UsersOptions{KDF: auth.TestKDF, Now: clock, DB: db})
	f := &fixture{srv: srv, db: db, rdb: rdb, users: users, wallets: users.Wallets,
		sim: marketdata.NewSimulated(marketdata.SimulatedOptions{Now: clock})}
	f.lab = New(Options{Redis: rdb, DB: db, Wallets: f.wallets, Users: users, Now: clock})
	return f
}

// user makes an account of tier with an opening wallet balance.
func (f *fixture) user(t testing.TB, email, tier, balance string) Caller {
	t.Helper()
	u, err := f.users.Create(context.Background(), auth.NewUser{Email: email, Password: "correct horse battery",
		Tier: tier, Wallet: d(balance)})
	if err != nil {
		t.Fatal(err)
	}
	return Caller{UserID: u.ID, Email: u.Email}
}

// engine starts an engine owning what owned returns; stop ends it and waits.
func (f *fixture) engine(t testing.TB, name string, history marketdata.History, owned func() []int, workers int) (e *Engine, stop func()) {
	t.Helper()
	return f.engineIn(t, context.Background(), name, history, owned, workers)
}

// engineIn is engine running under parent: cancelling parent stops it at once, from
// anywhere (a test hook inside the engine included), where stop also waits for it.
func (f *fixture) engineIn(t testing.TB, parent context.Context, name string, history marketdata.History, owned func() []int, workers int) (e *Engine, stop func()) {
	t.Helper()
	if history == nil {
		history = f.sim
	}
	// Each engine has a client of its own sized for its blocking readers, as the executor
	// gives it (queue.DedicatedClient).
	rdb, err := queue.DedicatedClient(context.Background(), store.Options{Addr: f.srv.Addr, ClusterAddrs: f.srv.ClusterAddrs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rdb.Close() })
	e = NewEngine(EngineOptions{Redis: rdb, DB: f.db, Wallets: f.wallets, History: history, Owned: owned, Name: name,
		Workers: workers, Poll: 20 * time.Millisecond, HistoryBackoff: time.Millisecond,
		Now: func() time.Time { return now }})
	ctx, cancel := context.WithCancel(parent)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = e.Run(ctx)
	}()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-done }) }
	t.Cleanup(stop)
	return e, stop
}

func all() []int {
	out := make([]int, store.Partitions)
	for i := range out {
		out[i] = i
	}
	return out
}

// request is a job on the last n one-minute candles before now.
func request(family strategy.Family, experiments, minutes int, seed int64) Request {
	return Request{Family: family, Symbol: "BTC/USDT", Market: "spot", Timeframe: "1m",
		From: now.Add(-time.Duration(minutes) * time.Minute), To: now, Experiments: experiments, Seed: &seed,
		AcknowledgeCost: true}
}

// waitDone waits until the job is done or failed.
func (f *fixture) waitDone(t testing.TB, c Caller, jobID string) Job {
	t.Helper()
	var j Job
	testkit.Eventually(t, 60*time.Second, "job "+jobID+" finished", func() error {
		var err error
		if j, err = f.lab.Job(context.Background(), c.UserID, jobID); err != nil {
			return err
		}
		if j.State != StateDone && j.State != StateFailed {
			return fmt.Errorf("state %s, %d of %d experiments", j.State, j.Completed, j.Experiments)
		}
		return nil
	})
	return j
}

// failingHistory fails every period of one symbol.
type failingHistory struct {
	marketdata.History
	symbol string
}

func (h failingHistory) CandlesBetween(ctx context.Context, kind exchange.Kind, symbol, tf string, from, to time.Time) ([]marketdata.Candle, error) {
	if symbol == h.symbol {
		return nil, errors.New("venue unreachable")
	}
	return h.History.CandlesBetween(ctx, kind, symbol, tf, from, to)
}

func itoa(i int) string { return strconv.Itoa(i) }

func ftoa(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

func contains(ps []int, p int) bool { return slices.Contains(ps, p) }
