package paper_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// readAhead reads account acct ahead, as the executor's first pipeline does, for fills of
// scope on symbols with client order IDs cids.
func readAhead(t *testing.T, rdb redis.UniversalClient, scope string, symbols, cids []string) *paper.Ahead {
	t.Helper()
	ctx := context.Background()
	p := rdb.Pipeline()
	read := paper.ReadAheadLater(ctx, p, "acct", scope, symbols, cids)
	if _, err := p.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		t.Fatal(err)
	}
	_, a, err := read()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// scripts counts the fill scripts a client sends (EVALSHA and EVAL) and any other round
// trip.
type scripts struct {
	storetest.Trips
}

func (s *scripts) count() (evals, others int) {
	for _, tr := range s.Take() {
		if tr == "evalsha" || tr == "eval" {
			evals++
		} else {
			others++
		}
	}
	return evals, others
}

// Several bots of one shared paper account fill at the same time, each from values read
// ahead before any of them filled: every one but the first finds them changed, and its
// script answers the current ones. No fill is lost or doubled, and the account ends at
// exactly the sum of the fills.
func TestSharedAccountFillsConcurrently(t *testing.T) {
	ctx, rdb, px, _ := setup(t)
	px.set(exchange.Spot, "SOL/USDT", "150")
	px.set(exchange.Futures, "ETH/USDT", "3000")
	counter := &scripts{}
	rdb.AddHook(counter)
	const bots, spotFills, futFills = 4, 3, 2
	xs := make([]*paper.Exchange, bots)
	for b := range xs {
		scope := fmt.Sprintf("bot-%d", b)
		xs[b] = paper.NewExchange(rdb, "acct", scope, px,
			paper.WithAhead(readAhead(t, rdb, scope, []string{"SOL/USDT", "ETH/USDT"}, nil)))
	}
	counter.Take()
	var wg sync.WaitGroup
	for b, x := range xs {
		for i := 0; i < spotFills+futFills; i++ {
			// Each order is sent twice at once (a leg and its retry): it fills once.
			for dup := 0; dup < 2; dup++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					req := exchange.OrderRequest{ClientOrderID: fmt.Sprintf("b%d-%d", b, i), Symbol: "SOL/USDT",
						Kind: exchange.Spot, Side: exchange.SideBuy, Type: exchange.Market, Amount: testkit.D("1.001")}
					if i >= spotFills {
						req.Symbol, req.Kind, req.Amount, req.Leverage = "ETH/USDT", exchange.Futures, testkit.D("0.1"), 5
					}
					if _, err := x.PlaceOrder(ctx, req); err != nil {
						t.Error(err)
					}
				}()
			}
		}
	}
	wg.Wait()
	evals, _ := counter.count()
	fills := bots * (spotFills + futFills)
	if evals < fills+bots-1 {
		t.Errorf("%d fill scripts for %d fills: the read-ahead values never went stale, the test proves nothing", evals, fills)
	}
	// Per bot: 3 spot buys of 1.001 SOL at 150: notional 150.15, fee 0.15015 → 150.30015
	// each, 450.90045; 2 futures longs of 0.1 ETH at 3000, leverage 5: notional 300, margin
	// 60, fee 0.3 → 60.3 each, 120.6. Per bot 571.50045; 4 bots 2286.0018.
	// Balance 10000 − 2286.0018 = 7713.9982; margin 4 × 2 × 60 = 480.
	st, err := paper.NewAccounts(rdb).Get(ctx, "acct")
	if err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "balance", st.Balance, "7713.9982")
	testkit.EqualD(t, "margin", st.Margin, "480")
	h, err := paper.NewAccounts(rdb).Holdings(ctx, "acct")
	if err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "SOL held", h.Spot["SOL"], "12.012") // 4 × 3 × 1.001
	if len(h.Futures) != bots {
		t.Fatalf("futures positions = %+v", h.Futures)
	}
	for _, f := range h.Futures {
		// 2 × 0.1 ETH: size 0.2, cost 600, margin 120.
		testkit.EqualD(t, f.Scope+" size", f.Size.Decimal, "0.2")
		testkit.EqualD(t, f.Scope+" cost", f.Cost.Decimal, "600")
		testkit.EqualD(t, f.Scope+" margin", f.Margin.Decimal, "120")
	}
	keys, err := storetest.Keys(ctx, rdb, store.PaperOrder("acct", "*"))
	if err != nil || len(keys) != fills {
		t.Fatalf("%d orders stored (%v), want %d", len(keys), err, fills)
	}
}

// A fill covered by its read ahead costs one script; a redelivered leg whose order was
// read ahead costs nothing; one the read ahead did not cover costs a read first.
func TestReadAheadRoundTrips(t *testing.T) {
	_, rdb, px, _ := setup(t)
	px.set(exchange.Spot, "BTC/USDT", "65000")
	counter := &scripts{}
	rdb.AddHook(counter)
	buy := exchange.OrderRequest{ClientOrderID: "warm", Symbol: "BTC/USDT", Kind: exchange.Spot,
		Side: exchange.SideBuy, Type: exchange.Market, Amount: testkit.D("0.01")}
	// Another bot's fill loads the script into Redis (EVALSHA answers NOSCRIPT once).
	place(t, paper.NewExchange(rdb, "acct", "bot-2", px), buy)
	buy.ClientOrderID = "sg-a"
	x := paper.NewExchange(rdb, "acct", "bot-1", px, paper.WithAhead(readAhead(t, rdb, "bot-1", []string{"BTC/USDT"}, []string{"sg-a"})))
	counter.Take()
	first := place(t, x, buy)
	if evals, others := counter.count(); evals != 1 || others != 0 {
		t.Fatalf("fill read ahead: %d scripts and %d other round trips, want 1 and 0", evals, others)
	}
	// The retry of the leg reads ahead again and finds its order there.
	x = paper.NewExchange(rdb, "acct", "bot-1", px, paper.WithAhead(readAhead(t, rdb, "bot-1", []string{"BTC/USDT"}, []string{"sg-a"})))
	counter.Take()
	if again := place(t, x, buy); !sameOrder(again, first) {
		t.Fatalf("retried leg = %+v, want %+v", again, first)
	}
	if evals, others := counter.count(); evals+others != 0 {
		t.Fatalf("retried leg found read ahead: %d round trips, want 0", evals+others)
	}
	// No read ahead: the script reads, then writes.
	x = paper.NewExchange(rdb, "acct", "bot-1", px)
	buy.ClientOrderID = "sg-b"
	place(t, x, buy)
	if evals, others := counter.count(); evals != 2 || others != 0 {
		t.Fatalf("fill without a read ahead: %d scripts and %d other round trips, want 2 and 0", evals, others)
	}
	// 3 × (0.01 × 65000 = 650 + 0.65 fee) = 1951.95 → 8048.05.
	testkit.EqualD(t, "balance", balance(t, x), "8048.05")
}

// A refusal is never answered from values read ahead: the bot's holding bought after the
// read ahead (by another attempt) is sold, not refused as missing.
func TestStaleReadAheadDoesNotRefuse(t *testing.T) {
	ctx, rdb, px, _ := setup(t)
	px.set(exchange.Spot, "SOL/USDT", "150")
	stale := readAhead(t, rdb, "bot-1", []string{"SOL/USDT"}, nil)
	place(t, paper.NewExchange(rdb, "acct", "bot-1", px), exchange.OrderRequest{ClientOrderID: "buy", Symbol: "SOL/USDT",
		Kind: exchange.Spot, Side: exchange.SideBuy, Type: exchange.Market, Amount: testkit.D("1")})
	x := paper.NewExchange(rdb, "acct", "bot-1", px, paper.WithAhead(stale))
	place(t, x, exchange.OrderRequest{ClientOrderID: "sell", Symbol: "SOL/USDT",
		Kind: exchange.Spot, Side: exchange.SideSell, Type: exchange.Market, Amount: testkit.D("1")})
	// Buy 1 × 150 + 0.15 fee → 9849.85; sell 150 − 0.15 → 9999.7.
	testkit.EqualD(t, "balance", balance(t, x), "9999.7")
	// A refusal on current values stands: nothing left to sell.
	_, err := x.PlaceOrder(ctx, exchange.OrderRequest{ClientOrderID: "sell-2", Symbol: "SOL/USDT",
		Kind: exchange.Spot, Side: exchange.SideSell, Type: exchange.Market, Amount: testkit.D("1")})
	if errs.CodeOf(err) != errs.InsufficientBalance {
		t.Fatalf("selling nothing: %v", err)
	}
}

// The order a concurrent attempt stored after the read ahead is answered by the script:
// the money moves once.
func TestStaleReadAheadFindsTheStoredOrder(t *testing.T) {
	_, rdb, px, _ := setup(t)
	px.set(exchange.Spot, "SOL/USDT", "150")
	req := exchange.OrderRequest{ClientOrderID: "sg-1", Symbol: "SOL/USDT", Kind: exchange.Spot,
		Side: exchange.SideBuy, Type: exchange.Market, Amount: testkit.D("1")}
	stale := readAhead(t, rdb, "bot-1", []string{"SOL/USDT"}, []string{"sg-1"})
	first := place(t, paper.NewExchange(rdb, "acct", "bot-1", px), req)
	px.set(exchange.Spot, "SOL/USDT", "160")
	x := paper.NewExchange(rdb, "acct", "bot-1", px, paper.WithAhead(stale))
	if again := place(t, x, req); !sameOrder(again, first) {
		t.Fatalf("second attempt = %+v, want the first %+v", again, first)
	}
	testkit.EqualD(t, "balance", balance(t, x), "9849.85") // 10000 − 150 − 0.15, once
}

// An order lives OrderTTL under its own key; one stored in the orders hash of the layout
// before is still found, by GetOrder, by a placement and by a read ahead.
func TestOrderKeysExpireAndOldOrdersAreFound(t *testing.T) {
	ctx, rdb, px, x := setup(t)
	px.set(exchange.Spot, "SOL/USDT", "150")
	req := exchange.OrderRequest{ClientOrderID: "old", Symbol: "SOL/USDT", Kind: exchange.Spot,
		Side: exchange.SideBuy, Type: exchange.Market, Amount: testkit.D("1")}
	first := place(t, x, req)
	key := store.PaperOrder("acct", "old")
	ttl, err := rdb.TTL(ctx, key).Result()
	if err != nil || ttl <= paper.OrderTTL()-time.Minute || ttl > paper.OrderTTL() {
		t.Fatalf("order TTL = %v, %v; want %v", ttl, err, paper.OrderTTL())
	}
	// Move the order into the old hash, as an earlier version stored it.
	v, err := rdb.Get(ctx, key).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := rdb.Del(ctx, key).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rdb.HSet(ctx, store.PaperOrders("acct"), "old", v).Err(); err != nil {
		t.Fatal(err)
	}
	fresh := paper.NewExchange(rdb, "acct", "bot-1", px)
	if got, err := fresh.GetOrder(ctx, exchange.Spot, "SOL/USDT", "old"); err != nil || !sameOrder(got, first) {
		t.Fatalf("GetOrder of an old order = %+v, %v", got, err)
	}
	if again := place(t, paper.NewExchange(rdb, "acct", "bot-1", px), req); !sameOrder(again, first) {
		t.Fatalf("placing an old order again = %+v", again)
	}
	ahead := paper.NewExchange(rdb, "acct", "bot-1", px, paper.WithAhead(readAhead(t, rdb, "bot-1", nil, []string{"old"})))
	if again := place(t, ahead, req); !sameOrder(again, first) {
		t.Fatalf("placing an old order read ahead again = %+v", again)
	}
	testkit.EqualD(t, "balance", balance(t, x), "9849.85") // 10000 − 150 − 0.15, once
	if n, _ := rdb.Exists(ctx, key).Result(); n != 0 {
		t.Fatal("an old order found was written again under its own key")
	}
}

// At the bound of retries (every script finds the account changed) the placement is
// refused as busy and writes nothing.
func TestBusyAccountAtTheBound(t *testing.T) {
	ctx := context.Background()
	srv, rdb := storetest.New(t)
	ensureAccount(t, rdb, "10000")
	px := prices{}
	px.set(exchange.Spot, "SOL/USDT", "150")
	side := srv.Client()
	t.Cleanup(func() { side.Close() })
	meddler := &meddle{side: side}
	rdb.AddHook(meddler)
	x := paper.NewExchange(rdb, "acct", "bot-1", px)
	_, err := x.PlaceOrder(ctx, exchange.OrderRequest{ClientOrderID: "c", Symbol: "SOL/USDT", Kind: exchange.Spot,
		Side: exchange.SideBuy, Type: exchange.Market, Amount: testkit.D("1")})
	if errs.CodeOf(err) != errs.ExchangeError || !strings.Contains(err.Error(), "busy") {
		t.Fatalf("placement on an account changed before every script: %v", err)
	}
	if n := meddler.n.Load(); n < 50 {
		t.Fatalf("%d scripts before giving up, want the bound (50)", n)
	}
	if n, _ := rdb.Exists(ctx, store.PaperOrder("acct", "c")).Result(); n != 0 {
		t.Fatal("a busy placement stored its order")
	}
	h, _ := paper.NewAccounts(rdb).Holdings(ctx, "acct")
	if len(h.Spot) != 0 {
		t.Fatalf("a busy placement moved holdings: %v", h.Spot)
	}
}

// meddle changes the account's balance (through side) before every fill script.
type meddle struct {
	side redis.UniversalClient
	n    atomic.Int64
}

func (m *meddle) DialHook(next redis.DialHook) redis.DialHook { return next }

func (m *meddle) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if name := cmd.Name(); name == "evalsha" || name == "eval" {
			n := m.n.Add(1)
			if err := m.side.HSet(ctx, store.PaperAccount("acct"), "balance", fmt.Sprint(20000+n)).Err(); err != nil {
				return err
			}
		}
		return next(ctx, cmd)
	}
}

func (m *meddle) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return next
}
