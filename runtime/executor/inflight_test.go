package executor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/binance"
	"github.com/sigops/sigops/runtime/exchange/binance/binancefake"
	"github.com/sigops/sigops/runtime/exchange/bybit"
	"github.com/sigops/sigops/runtime/exchange/bybit/bybitfake"
	"github.com/sigops/sigops/runtime/exchange/connectors"
	"github.com/sigops/sigops/runtime/exchange/okx"
	"github.com/sigops/sigops/runtime/exchange/okx/okxfake"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
)

// These tests kill an executor (a child process running this test binary) while its order
// request is held in transit by a fake exchange, and let a second executor (this process)
// take the signal over, as the queue would after the first one's lease expired. A child
// process, not a goroutine: the Binance adapter remembers its own unanswered requests in
// process memory, which would hide exactly what a second executor on another machine does
// not know.

// Short request windows, so that the tests wait seconds and not the production 8-12 s: the
// call budget 1 s + recvWindow (OKX: expTime) 2.5 s + clock margin 0.25 s = 3.75 s, for
// every adapter.
const testWindow = 3750 * time.Millisecond

func windowConnectors() map[string]exchange.Connector {
	return map[string]exchange.Connector{
		binance.Name: binance.Connector{Timeout: time.Second, MaxElapsed: time.Second,
			RecvWindow: 2500 * time.Millisecond, ClockMargin: 250 * time.Millisecond},
		bybit.Name: bybit.Connector{Timeout: time.Second, RecvWindow: 2500 * time.Millisecond,
			ClockMargin: 250 * time.Millisecond},
		okx.Name: okx.Connector{Timeout: time.Second, Expiry: 2500 * time.Millisecond,
			ClockMargin: 250 * time.Millisecond},
	}
}

// liveExecutor is an executor whose bots trade through the real adapters.
func liveExecutor(rdb redis.UniversalClient, log *slog.Logger, now func() time.Time) (*executor.Executor, error) {
	keys, err := credentials.NewRing(liveKey)
	if err != nil {
		return nil, err
	}
	lv := &executor.LiveVenues{Redis: rdb, Clients: &connectors.Clients{Keys: keys, Connectors: windowConnectors()}}
	return executor.New(executor.Deps{Redis: rdb, Logger: log, Now: now,
		Venues: &executor.Paper{Redis: rdb, Live: lv}}), nil
}

// childEnv carries executor A's task (childTask) to the child process.
const childEnv = "SIGOPS_TEST_EXECUTOR_A"

type childTask struct {
	// Redis reaches the test's Redis.
	Redis    store.Options
	Envelope queue.Envelope
	NowMS    int64
}

// TestMain runs executor A when this binary is started as one (startExecutorA).
func TestMain(m *testing.M) {
	if spec := os.Getenv(childEnv); spec != "" {
		os.Exit(runExecutorA(spec))
	}
	os.Exit(m.Run())
}

// runExecutorA handles one signal. It is meant to be killed while its order request is
// held: returning at all is reported (exit 3) as a broken test setup.
func runExecutorA(spec string) int {
	var task childTask
	if err := json.Unmarshal([]byte(spec), &task); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	rdb, err := store.Connect(context.Background(), task.Redis)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ex, err := liveExecutor(rdb, slog.New(slog.NewTextHandler(os.Stderr, nil)), func() time.Time { return time.UnixMilli(task.NowMS) })
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	err = ex.Handle(context.Background(), task.Envelope)
	fmt.Fprintf(os.Stderr, "executor A finished instead of being killed mid-call: %v\n", err)
	return 3
}

type executorA struct {
	cmd    *exec.Cmd
	out    bytes.Buffer
	exited chan struct{}
}

// startExecutorA starts executor A on env in a child process.
func startExecutorA(t *testing.T, h *harness, env queue.Envelope) *executorA {
	t.Helper()
	spec, err := json.Marshal(childTask{Redis: store.Options{Addr: h.srv.Addr, ClusterAddrs: h.srv.ClusterAddrs}, Envelope: env, NowMS: h.now.UnixMilli()})
	if err != nil {
		t.Fatal(err)
	}
	a := &executorA{cmd: exec.Command(os.Args[0], "-test.run=^$"), exited: make(chan struct{})}
	a.cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
	a.cmd.Stdout, a.cmd.Stderr = &a.out, &a.out
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = a.cmd.Wait(); close(a.exited) }()
	t.Cleanup(a.kill)
	return a
}

// kill kills the process (SIGKILL: no clean-up of any kind) and waits for it.
func (a *executorA) kill() {
	_ = a.cmd.Process.Kill()
	<-a.exited
}

// held is a request a fake holds in transit.
type held interface {
	Arrived() <-chan struct{}
	Release()
	Drop()
}

// venue is one fake exchange as these tests use it.
type venue struct {
	name, url string
	creds     exchange.Credentials
	edit      func(*registry.Bot)
	// holdCreate holds the next order request.
	holdCreate func() held
	// creates is how many order requests reached the exchange.
	creates func() int
	// orders is how many orders exist with the client order ID.
	orders func(cid string) int
	// placedAt is when the order request that made the order of cid was sent (at the latest).
	placedAt func(t *testing.T, cid string) time.Time
	// holding is the exchange's view of what the account bought: base coin or position.
	holding func() decimal.Decimal
	// size is the position the executor must book for one 0.01 BTC fill.
	size string
}

func binanceSpot(t *testing.T) venue {
	f := binancefake.New()
	t.Cleanup(f.Close)
	f.SetPrice("BTCUSDT", "65000")
	const path = "/api/v3/order"
	return venue{name: binance.Name, url: f.URL(),
		creds:      exchange.Credentials{APIKey: binancefake.APIKey, APISecret: binancefake.APISecret},
		edit:       func(b *registry.Bot) { b.Market = "spot" },
		holdCreate: func() held { return f.HoldNext(http.MethodPost, path) },
		creates:    func() int { return f.Count(http.MethodPost, path) },
		orders:     f.Placed,
		placedAt: func(t *testing.T, cid string) time.Time {
			// The timestamp the adapter signed the last order request with (its send time).
			var ts time.Time
			for _, r := range f.Requests() {
				if r.Method == http.MethodPost && r.Path == path && r.Params.Get("newClientOrderId") == cid {
					ms, err := strconv.ParseInt(r.Params.Get("timestamp"), 10, 64)
					if err != nil {
						t.Fatal(err)
					}
					ts = time.UnixMilli(ms)
				}
			}
			return ts
		},
		holding: func() decimal.Decimal { free, _ := f.SpotBalance("BTC"); return free },
		size:    "0.00999", // the 0.1 % fee is taken in BTC
	}
}

func bybitLinear(t *testing.T) venue {
	f := bybitfake.New()
	t.Cleanup(f.Close)
	f.SetPrice("BTCUSDT", testkit.D("65000"))
	const path = "/v5/order/create"
	return venue{name: bybit.Name, url: f.URL(),
		creds:      exchange.Credentials{APIKey: bybitfake.APIKey, APISecret: bybitfake.APISecret},
		edit:       func(b *registry.Bot) { b.Market, b.Leverage = "futures", 5 },
		holdCreate: func() held { return f.HoldNext(path) },
		creates:    func() int { return f.Calls(path) },
		orders:     func(cid string) int { return f.OrdersCreated(bybit.LinkID(cid)) },
		placedAt: func(t *testing.T, cid string) time.Time {
			o, ok := f.Order(bybit.LinkID(cid))
			if !ok {
				t.Fatal("no order")
			}
			return o.CreatedAt // on arrival, after it was sent
		},
		holding: func() decimal.Decimal { size, _, _ := f.Position("BTCUSDT"); return size },
		size:    "0.01",
	}
}

func okxSwap(t *testing.T) venue {
	f := okxfake.New()
	t.Cleanup(f.Close)
	f.SetPrice("BTC-USDT", testkit.D("65000"))
	const path = "/api/v5/trade/order"
	return venue{name: okx.Name, url: f.URL(),
		creds:      exchange.Credentials{APIKey: okxfake.APIKey, APISecret: okxfake.APISecret, Passphrase: okxfake.Passphrase},
		edit:       func(b *registry.Bot) { b.Market, b.Leverage = "futures", 5 },
		holdCreate: func() held { return f.HoldNext(http.MethodPost, path) },
		creates:    func() int { return f.Calls(http.MethodPost + " " + path) }, // the lookups GET the same path
		orders:     func(cid string) int { return f.OrdersCreated(okx.ClOrdID(cid)) },
		placedAt: func(t *testing.T, cid string) time.Time {
			o, ok := f.Order(okx.ClOrdID(cid))
			if !ok {
				t.Fatal("no order")
			}
			return o.CreatedAt // on arrival, after it was sent
		},
		// Contracts of 0.01 BTC: one contract is the 0.01 BTC the bot bought.
		holding: func() decimal.Decimal { n, _, _ := f.Position("BTC-USDT-SWAP", "net"); return n.Mul(testkit.D("0.01")) },
		size:    "0.01",
	}
}

// newWindowFixture is the harness with its bot (fixed size 0.01 BTC) on an exchange
// connection to v, and executor B trading through the real adapter.
func newWindowFixture(t *testing.T, v venue) *harness {
	t.Helper()
	h := newHarness(t, func(b *registry.Bot) {
		b.Account = registry.Account{Kind: registry.AccountExchange, Name: "xc", ID: "xc-1"}
		b.PositionSize = "0.01"
		v.edit(b)
	})
	keys, err := credentials.NewRing(liveKey)
	if err != nil {
		t.Fatal(err)
	}
	blob, err := keys.SealCredentials(v.creds, credentials.AAD("xc-1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := credentials.NewConnections(h.rdb).Save(h.ctx, credentials.Connection{UID: "xc-1", Namespace: "ns",
		Name: "xc", Exchange: v.name, Owner: "a@x.io", Ready: true, Reason: "Validated",
		Permissions: []string{"futures", "read", "spot"}, SpotEndpoint: v.url, FuturesEndpoint: v.url,
		Sealed: blob, KeyID: keys.CurrentKeyID()}); err != nil {
		t.Fatal(err)
	}
	if h.ex, err = liveExecutor(h.rdb, h.quiet, func() time.Time { return h.now }); err != nil {
		t.Fatal(err)
	}
	return h
}

// killMidCall starts executor A on env, waits until its order request is held by the
// exchange and kills it. It returns the request and the send time A stored with it.
func killMidCall(t *testing.T, h *harness, v venue, env queue.Envelope) (held, time.Time) {
	t.Helper()
	req := v.holdCreate()
	a := startExecutorA(t, h, env)
	select {
	case <-req.Arrived():
	case <-a.exited:
		t.Fatalf("executor A exited before its order request reached the exchange:\n%s", a.out.String())
	case <-time.After(30 * time.Second):
		t.Fatal("executor A's order request never reached the exchange")
	}
	a.kill()
	sent, err := executor.SentAt(h.ctx, h.rdb, env.BotID, env.SignalID, "")
	if err != nil || sent.IsZero() {
		t.Fatalf("no send time stored with the request: %v", err)
	}
	if v.creates() != 1 {
		t.Fatalf("%d order requests, want A's one", v.creates())
	}
	return req, sent
}

// inFlight asserts that B's attempt is refused for now without sending anything. (It goes
// on after a failure, so that what a wrong placement leads to is seen too.)
func inFlight(t *testing.T, h *harness, v venue, env queue.Envelope) {
	t.Helper()
	err := h.ex.Handle(h.ctx, env)
	if !errors.Is(err, executor.ErrOrderInFlight) {
		t.Errorf("executor B inside the request window: err = %v, want ErrOrderInFlight", err)
	}
	if n := v.creates(); n != 1 {
		t.Errorf("executor B sent an order request inside the request window (%d requests)", n)
	}
	if st, err := queue.GetResult(h.ctx, h.rdb, env.SignalID); err != nil || st.Found {
		t.Errorf("a result was stored while the order was unknown: %v", err)
	}
}

// booked asserts one order, one fill booked, and the result.
func booked(t *testing.T, h *harness, v venue, env queue.Envelope, cid string) {
	t.Helper()
	st, err := queue.GetResult(h.ctx, h.rdb, env.SignalID)
	res, ok := st.Result, st.Found
	if err != nil || !ok {
		t.Fatalf("no result: %v", err)
	}
	h.ok(res)
	if n := v.orders(cid); n != 1 {
		t.Fatalf("%d orders on the exchange with client order ID %s, want 1", n, cid)
	}
	testkit.EqualD(t, "filled", res.Order.FilledAmount.Decimal, "0.01")
	testkit.EqualD(t, "exchange holding", v.holding(), v.size)
	pos := h.position("BTC/USDT")
	if pos == nil {
		t.Fatal("no position booked")
	}
	testkit.EqualD(t, "position size", pos.Size.Decimal, v.size)
	rec, err := position.ReadOrder(h.ctx, h.rdb, h.bot.ID, cid)
	if err != nil || rec == nil || rec.Status != exchange.StatusFilled {
		t.Fatalf("order record %+v, %v", rec, err)
	}
	testkit.EqualD(t, "booked fill", rec.FilledAmount.Decimal, "0.01")
	if tr := h.trades(); len(tr) != 0 {
		t.Fatalf("an entry booked trades: %+v", tr)
	}
}

// Executor A sends an order and dies before any answer; the exchange applies the request
// late, after executor B has looked for the order and not found it. B must not place it
// inside the request window; once the order shows, B books it: one order, one fill.
func TestKilledExecutorsLateOrderIsBookedNotPlacedAgain(t *testing.T) {
	for _, mk := range []func(*testing.T) venue{binanceSpot, bybitLinear, okxSwap} {
		v := mk(t)
		t.Run(v.name, func(t *testing.T) {
			h := newWindowFixture(t, v)
			env := h.envelope(`{"action":"buy","symbol":"BTCUSDT"}`)
			cid := order.ClientOrderID(env.SignalID, "")
			req, _ := killMidCall(t, h, v, env)

			inFlight(t, h, v, env)
			req.Release() // A's request lands now, inside its recv window
			if n := v.orders(cid); n != 1 {
				t.Fatalf("the late request made %d orders", n)
			}
			if err := h.ex.Handle(h.ctx, env); err != nil {
				t.Fatalf("executor B after the order landed: %v", err)
			}
			booked(t, h, v, env, cid)
			if n := v.creates(); n != 1 {
				t.Fatalf("%d order requests, want A's one", n)
			}
		})
	}
}

// Executor A's order request is lost for good: executor B places it, but only once the
// request window of A's send has passed, and the signal completes.
func TestKilledExecutorsLostOrderIsPlacedAfterTheWindow(t *testing.T) {
	for _, mk := range []func(*testing.T) venue{binanceSpot, bybitLinear, okxSwap} {
		v := mk(t)
		t.Run(v.name, func(t *testing.T) {
			h := newWindowFixture(t, v)
			env := h.envelope(`{"action":"buy","symbol":"BTCUSDT"}`)
			cid := order.ClientOrderID(env.SignalID, "")
			req, sentA := killMidCall(t, h, v, env)

			inFlight(t, h, v, env)
			req.Drop()
			// The queue redelivers; each attempt inside the window sends nothing (the last
			// one waits out the rest of the window itself, MaxInlineWait at most).
			testkit.Eventually(t, testWindow+10*time.Second, "the signal completes", func() error {
				err := h.ex.Handle(h.ctx, env)
				if err == nil {
					return nil
				}
				if !errors.Is(err, executor.ErrOrderInFlight) {
					t.Fatalf("executor B: %v", err)
				}
				if n := v.creates(); n != 1 {
					t.Fatalf("executor B sent an order request inside the request window (%d requests)", n)
				}
				return err
			})
			if n := v.creates(); n != 2 {
				t.Fatalf("%d order requests, want A's lost one and B's", n)
			}
			if at := v.placedAt(t, cid); at.Before(sentA.Add(testWindow)) {
				t.Fatalf("executor B sent at %s, %s after A's send: inside the %s window",
					at.Format(time.StampMilli), at.Sub(sentA), testWindow)
			}
			booked(t, h, v, env, cid)
		})
	}
}
