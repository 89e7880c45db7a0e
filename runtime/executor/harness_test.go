package executor_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// prices is a pinned price source (the role marketdata.Simulated.SetPrice plays).
type prices struct {
	mu sync.Mutex
	m  map[string]decimal.Decimal
}

func (p *prices) Price(_ context.Context, kind exchange.Kind, symbol string) (decimal.Decimal, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if v, ok := p.m[string(kind)+" "+symbol]; ok {
		return v, nil
	}
	return decimal.Zero, fmt.Errorf("no price for %s %s", kind, symbol)
}

func (p *prices) set(kind exchange.Kind, symbol, v string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.m[string(kind)+" "+symbol] = testkit.D(v)
}

type harness struct {
	t     testing.TB
	srv   *storetest.Server
	ctx   context.Context
	rdb   redis.UniversalClient
	reg   *registry.Registry
	px    *prices
	ex    *executor.Executor
	bot   registry.Bot
	now   time.Time
	seq   int
	quiet *slog.Logger
}

// newHarness starts Redis with a 10,000 USDT paper account (fee 0.1 %) owned by a@x.io and
// one active bot on it; edit changes the bot before it is projected.
func newHarness(t testing.TB, edit func(*registry.Bot)) *harness {
	t.Helper()
	srv, rdb := storetest.New(t)
	h := &harness{t: t, srv: srv, ctx: context.Background(), rdb: rdb, reg: registry.New(rdb),
		px:    &prices{m: map[string]decimal.Decimal{}},
		now:   time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC),
		quiet: slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if _, err := paper.NewAccounts(rdb).Ensure(h.ctx, paper.Config{ID: "acct-1", Owner: "a@x.io", Currency: "USDT",
		InitialBalance: testkit.D("10000"), FeeRate: testkit.D("0.001")}); err != nil {
		t.Fatal(err)
	}
	h.bot = registry.Bot{ID: "bot-1", Namespace: "ns", Name: "b", Owner: "a@x.io",
		Account: registry.Account{Kind: registry.AccountPaper, Name: "paper", ID: "acct-1"},
		Market:  "spot", PositionSize: "10%", Leverage: 1, DCA: registry.DCA{MaxLevels: 5},
		Reversals: true, WebhookEnabled: true, Availability: "active"}
	if edit != nil {
		edit(&h.bot)
	}
	h.project()
	h.ex = executor.New(executor.Deps{Redis: rdb, Prices: h.px, Logger: h.quiet, Now: func() time.Time { return h.now }})
	return h
}

// queueClient is a Consumer's own client of srv, as the executor daemon makes it; it is
// closed when the test ends.
func queueClient(t testing.TB, srv *storetest.Server) redis.UniversalClient {
	t.Helper()
	c, err := queue.DedicatedClient(context.Background(), store.Options{Addr: srv.Addr, ClusterAddrs: srv.ClusterAddrs})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func (h *harness) project() {
	h.t.Helper()
	if err := h.reg.Project(h.ctx, h.bot, "hook-"+h.bot.ID); err != nil {
		h.t.Fatal(err)
	}
}

// envelope makes a webhook envelope from a body, as webhookd would.
func (h *harness) envelope(body string) queue.Envelope {
	h.t.Helper()
	s, err := signal.Parse([]byte(body))
	if err != nil {
		h.t.Fatalf("parse %s: %v", body, err)
	}
	data, _ := json.Marshal(s)
	h.seq++
	// A UUID of the sequence number (SignalIDFor re-chooses its last two digits only).
	return queue.Envelope{SignalID: queue.SignalIDFor(h.bot.ID, fmt.Sprintf("00000000-0000-4000-8000-%010d00", h.seq)), BotID: h.bot.ID, Priority: queue.PriorityWebhook,
		Source: queue.SourceWebhook, Signal: data, ReceivedAt: h.now.UnixMilli()}
}

// run handles env and returns its stored result.
func (h *harness) run(env queue.Envelope) result.Result {
	h.t.Helper()
	if err := h.ex.Handle(h.ctx, env); err != nil {
		h.t.Fatalf("handle %s: %v", env.SignalID, err)
	}
	st, err := queue.GetResult(h.ctx, h.rdb, env.SignalID)
	res, ok := st.Result, st.Found
	if err != nil || !ok {
		h.t.Fatalf("no result for %s: %v", env.SignalID, err)
	}
	return res
}

func (h *harness) send(body string) result.Result {
	h.t.Helper()
	return h.run(h.envelope(body))
}

// ok asserts success.
func (h *harness) ok(res result.Result) result.Result {
	h.t.Helper()
	if !res.Success {
		h.t.Fatalf("failed: %s %s %v", res.Code, res.Error, res.Details)
	}
	return res
}

// fails asserts a failure with code.
func (h *harness) fails(res result.Result, code errs.Code) result.Result {
	h.t.Helper()
	if res.Success || res.Code != code {
		h.t.Fatalf("result = success %v code %s (%s), want %s", res.Success, res.Code, res.Error, code)
	}
	return res
}

func (h *harness) balance() decimal.Decimal {
	h.t.Helper()
	return h.balanceOf("acct-1")
}

func (h *harness) balanceOf(acct string) decimal.Decimal {
	h.t.Helper()
	st, err := paper.NewAccounts(h.rdb).Get(h.ctx, acct)
	if err != nil {
		h.t.Fatal(err)
	}
	return st.Balance
}

func (h *harness) position(symbol string) *position.Position {
	h.t.Helper()
	return h.positionOf(h.bot.ID, symbol)
}

func (h *harness) positionOf(botID, symbol string) *position.Position {
	h.t.Helper()
	p, err := position.NewBook(h.rdb).Get(h.ctx, botID, symbol)
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

func (h *harness) trades() []position.Trade {
	h.t.Helper()
	tr, err := position.NewBook(h.rdb).Trades(h.ctx, h.bot.ID)
	if err != nil {
		h.t.Fatal(err)
	}
	return tr
}

func (h *harness) exchangeOrders() int64 {
	keys, err := storetest.Keys(h.ctx, h.rdb, store.PaperOrder("acct-1", "*"))
	if err != nil {
		h.t.Fatal(err)
	}
	return int64(len(keys))
}

// runUntilKilled runs env on executor A, a consumer with its own queue client, whose hook
// (installed by install: SetAfterPlace or SetBeforeFanOut) kills it the first time it
// runs: its queue client closes (no more acks or lease renewals: the process is gone). It
// returns once A has stopped; the signal is left for another executor to reclaim.
func (h *harness) runUntilKilled(env queue.Envelope, what string, install func(*executor.Executor, func(string) error)) {
	h.t.Helper()
	clientA := queueClient(h.t, h.srv)
	ctxA, killA := context.WithCancel(h.ctx)
	defer killA()
	exA := executor.New(executor.Deps{Redis: h.rdb, Prices: h.px, Logger: h.quiet, Now: func() time.Time { return h.now }})
	hit := make(chan struct{})
	install(exA, func(string) error {
		close(hit)
		_ = clientA.Close()
		killA()
		return errors.New("killed")
	})
	consumerA := queue.NewConsumer(clientA, queue.Options{Name: "executor-a", LeaseTTL: time.Second, Logger: h.quiet})
	doneA := make(chan struct{})
	go func() { defer close(doneA); _ = consumerA.Run(ctxA, exA.Handle) }()
	if _, err := queue.Enqueue(h.ctx, h.rdb, env); err != nil {
		h.t.Fatal(err)
	}
	select {
	case <-hit:
	case <-time.After(10 * time.Second):
		h.t.Fatalf("executor A never reached %s", what)
	}
	<-doneA
}
