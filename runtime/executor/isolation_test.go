package executor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/binance/binancefake"
	"github.com/sigops/sigops/runtime/exchange/connectors"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// hangingLink sits between the adapter and the fake exchange and, while hanging, holds every
// request without an answer (the network path to the exchange is black-holed). A request
// whose client gives up meanwhile never reaches the exchange.
type hangingLink struct {
	mu    sync.Mutex
	until time.Time
	srv   *httptest.Server
}

func newHangingLink(t *testing.T, target string) *hangingLink {
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	h := &hangingLink{}
	rp := httputil.NewSingleHostReverseProxy(u)
	h.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		wait := time.Until(h.until)
		h.mu.Unlock()
		if wait > 0 {
			t := time.NewTimer(wait)
			defer t.Stop()
			select {
			case <-t.C:
			case <-r.Context().Done():
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(h.srv.Close)
	return h
}

func (h *hangingLink) hangFor(d time.Duration) time.Time {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.until = time.Now().Add(d)
	return h.until
}

// With one live bot's exchange hanging for 30 s, the other bots of its queue partition keep
// filling at their normal latency; the hanging bot's signals wait behind its signal in hand
// and then run in order: its close (an unknown order outcome, retried and resolved by
// looking the order up) fills once, and its entry queued during the hang expires.
func TestHangingExchangeHoldsUpItsOwnBotOnly(t *testing.T) {
	srv, rdb := storetest.New(t)
	ctx := context.Background()
	fake := binancefake.New()
	t.Cleanup(fake.Close)
	fake.SetPrice("BTCUSDT", "65000")
	fake.SetSpotBalance("USDT", "10000")
	link := newHangingLink(t, fake.URL())
	px := &prices{m: map[string]decimal.Decimal{}}
	px.set(exchange.Spot, "BTC/USDT", "65000")
	if _, err := paper.NewAccounts(rdb).Ensure(ctx, paper.Config{ID: "acct-1", Owner: "a@x.io", Currency: "USDT",
		InitialBalance: testkit.D("10000"), FeeRate: testkit.D("0.001")}); err != nil {
		t.Fatal(err)
	}
	keys, err := credentials.NewRing(liveKey)
	if err != nil {
		t.Fatal(err)
	}
	blob, err := keys.SealCredentials(exchange.Credentials{APIKey: binancefake.APIKey, APISecret: binancefake.APISecret}, credentials.AAD("xc-1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := credentials.NewConnections(rdb).Save(ctx, credentials.Connection{UID: "xc-1", Namespace: "ns", Name: "xc",
		Exchange: "binance", Owner: "a@x.io", Ready: true, Reason: "Validated", Permissions: []string{"read", "spot"},
		SpotEndpoint: link.srv.URL, FuturesEndpoint: link.srv.URL, Sealed: blob, KeyID: keys.CurrentKeyID()}); err != nil {
		t.Fatal(err)
	}

	// One live bot and three paper bots, all in the live bot's partition.
	live := "live-bot"
	var papers []string
	for i := 0; len(papers) < 3; i++ {
		if id := fmt.Sprintf("paper-%d", i); queue.PartitionOf(id) == queue.PartitionOf(live) {
			papers = append(papers, id)
		}
	}
	reg := registry.New(rdb)
	for _, id := range append([]string{live}, papers...) {
		b := registry.Bot{ID: id, Namespace: "ns", Name: id, Owner: "a@x.io", Market: "spot", PositionSize: "0.001",
			Leverage: 1, DCA: registry.DCA{MaxLevels: 5}, Reversals: true, WebhookEnabled: true, Availability: "active",
			Account: registry.Account{Kind: registry.AccountPaper, Name: "paper", ID: "acct-1"}}
		if id == live {
			b.Account = registry.Account{Kind: registry.AccountExchange, Name: "xc", ID: "xc-1"}
			b.MaxSignalAgeMillis, b.PositionSize = 5000, "0.01"
		}
		if err := reg.Project(ctx, b, "hook-"+id); err != nil {
			t.Fatal(err)
		}
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	lv := &executor.LiveVenues{Redis: rdb, Clients: &connectors.Clients{Keys: keys, Connectors: windowConnectors()}}
	ex := executor.New(executor.Deps{Redis: rdb, Prices: px, Logger: quiet,
		Venues: &executor.Paper{Redis: rdb, Prices: px, Live: lv}})
	qc := queueClient(t, srv)
	consumer := queue.NewConsumer(qc, queue.Options{OnDeadLetter: ex.DeadLettered, Logger: quiet})
	cctx, cancel := context.WithCancel(ctx)
	stopped := make(chan struct{})
	go func() { _ = consumer.Run(cctx, ex.Handle); close(stopped) }()
	t.Cleanup(func() { cancel(); <-stopped })

	seq := 0
	send := func(bot, body string) string {
		t.Helper()
		s, err := signal.Parse([]byte(body))
		if err != nil {
			t.Fatal(err)
		}
		data, _ := json.Marshal(s)
		seq++
		env := queue.Envelope{SignalID: fmt.Sprintf("%s-%d", bot, seq), BotID: bot, Priority: queue.PriorityWebhook,
			Source: queue.SourceWebhook, Signal: data}
		if _, err := queue.Enqueue(ctx, rdb, env); err != nil {
			t.Fatal(err)
		}
		return env.SignalID
	}
	await := func(id string, within time.Duration) (res result.Result) {
		t.Helper()
		testkit.EventuallyTrue(t, within, "a result for "+id, func() bool {
			st, err := queue.GetResult(ctx, rdb, id)
			r, ok := st.Result, st.Found
			if err != nil {
				t.Fatal(err)
			}
			res = r
			return ok
		})
		return res
	}

	// Before the outage the live bot opens a position.
	if res := await(send(live, `{"action":"buy","symbol":"BTCUSDT"}`), 10*time.Second); !res.Success {
		t.Fatalf("live buy: %+v", res)
	}
	end := link.hangFor(30 * time.Second)
	closeID := send(live, `{"action":"close","symbol":"BTCUSDT"}`)
	entryID := send(live, `{"action":"buy","symbol":"BTCUSDT"}`)

	// While it hangs the paper bots of the same partition fill, each within a second.
	for round := 0; time.Until(end) > 3*time.Second; round++ {
		action := []string{"buy", "close"}[round%2]
		for _, p := range papers {
			start := time.Now()
			res := await(send(p, `{"action":"`+action+`","symbol":"BTCUSDT"}`), 2*time.Second)
			if !res.Success {
				t.Fatalf("paper %s %s during the hang: %+v", p, action, res)
			}
			if took := time.Since(start); took > time.Second {
				t.Errorf("paper %s %s took %s during the hang", p, action, took)
			}
		}
		if st, _ := queue.GetResult(ctx, rdb, closeID); st.Found {
			t.Fatal("the live close finished while its exchange hung")
		}
		time.Sleep(4 * time.Second)
	}
	if time.Now().After(end) {
		t.Fatal("the paper rounds outlasted the hang: nothing was shown")
	}

	// After it: the close fills once, then the entry queued behind it expires.
	closed := await(closeID, 90*time.Second)
	if !closed.Success {
		t.Fatalf("live close after the hang: %+v", closed)
	}
	expired := await(entryID, 10*time.Second)
	if expired.Success || expired.Code != errs.SignalExpired || expired.Timestamp < closed.Timestamp {
		t.Fatalf("live entry queued during the hang: %+v (close at %d)", expired, closed.Timestamp)
	}
	if n := fake.Placed(order.ClientOrderID(closeID, "close:BTC/USDT")); n != 1 {
		t.Errorf("the close made %d orders on the exchange, want 1", n)
	}
	if n := fake.Placed(order.ClientOrderID(entryID, "")); n != 0 {
		t.Errorf("the expired entry made %d orders on the exchange", n)
	}
	if p, err := position.NewBook(rdb).Get(ctx, live, "BTC/USDT"); err != nil || p != nil {
		t.Errorf("live position after the close = %+v, %v", p, err)
	}
	if n, _ := queue.CountDeadLetters(ctx, rdb); n != 0 {
		t.Errorf("%d dead letters: a 30 s outage is within the default retry budget", n)
	}
}

// A signal whose stored progress is corrupt fails on every attempt; its retry budget runs
// out, it gets an INTERNAL_ERROR result and a dead letter, it counts as an execution error of
// its bot, and the bot's next signal fills.
func TestCorruptProgressIsDeadLettered(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	bad := h.envelope(`{"action":"buy","symbol":"BTCUSDT"}`)
	next := h.envelope(`{"action":"buy","symbol":"BTCUSDT"}`)
	if err := h.rdb.HSet(h.ctx, store.SignalProgress(bad.BotID, bad.SignalID), "plan", "{not json").Err(); err != nil {
		t.Fatal(err)
	}
	ex := executor.New(executor.Deps{Redis: h.rdb, Prices: h.px, Logger: h.quiet})
	qc := queueClient(t, h.srv)
	consumer := queue.NewConsumer(qc, queue.Options{MaxAttempts: 3, OnDeadLetter: ex.DeadLettered, Logger: h.quiet})
	ctx, cancel := context.WithCancel(h.ctx)
	stopped := make(chan struct{})
	go func() { _ = consumer.Run(ctx, ex.Handle); close(stopped) }()
	t.Cleanup(func() { cancel(); <-stopped })
	for _, env := range []queue.Envelope{bad, next} {
		env.ReceivedAt = time.Now().UnixMilli()
		if _, err := queue.Enqueue(h.ctx, h.rdb, env); err != nil {
			t.Fatal(err)
		}
	}
	testkit.EventuallyTrue(t, 20*time.Second, "the next signal runs", func() bool {
		st, _ := queue.GetResult(h.ctx, h.rdb, next.SignalID)
		res, ok := st.Result, st.Found
		if ok && !res.Success {
			t.Fatalf("the next signal: %+v", res)
		}
		return ok
	})
	st, _ := queue.GetResult(h.ctx, h.rdb, bad.SignalID)
	res, ok := st.Result, st.Found
	if !ok || res.Success || res.Code != errs.InternalError || res.Order != nil {
		t.Fatalf("corrupt signal's result %+v", res)
	}
	dls, err := queue.ListDeadLetters(h.ctx, h.rdb, "", 10)
	if err != nil || len(dls) != 1 || dls[0].SignalID != bad.SignalID || dls[0].Attempts != 3 || dls[0].Reason != queue.ReasonBudget {
		t.Fatalf("dead letters %+v, %v", dls, err)
	}
	if v := h.rdb.HGet(h.ctx, store.SignalProgress(bad.BotID, bad.SignalID), "errorCounted").Val(); v != "1" {
		t.Errorf("the dead letter was not counted as an execution error of its bot (%q)", v)
	}
}
