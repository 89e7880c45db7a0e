package paper_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

func TestEnsureNeverOverwritesBalance(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	a := paper.NewAccounts(rdb)
	cfg := paper.Config{ID: "p1", Owner: "a@x.io", Currency: "USDT",
		InitialBalance: decimal.RequireFromString("10000"), FeeRate: decimal.RequireFromString("0.001")}
	st, err := a.Ensure(ctx, cfg)
	if err != nil || st.Balance.String() != "10000" {
		t.Fatalf("ensure = %+v, %v", st, err)
	}
	// A trade moved the balance; re-ensuring (any reconcile) must not reset it.
	rdb.HSet(ctx, store.PaperAccount("p1"), "balance", "9876.54321")
	cfg.InitialBalance = decimal.RequireFromString("20000")
	st, err = a.Ensure(ctx, cfg)
	if err != nil || st.Balance.String() != "9876.54321" || st.InitialBalance.String() != "20000" {
		t.Fatalf("re-ensure = %+v, %v", st, err)
	}
}

func TestRefillCooldown(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	a := paper.NewAccounts(rdb)
	_, _ = a.Ensure(ctx, paper.Config{ID: "p1", Currency: "USDT",
		InitialBalance: decimal.RequireFromString("10000"), FeeRate: decimal.Zero})
	rdb.HSet(ctx, store.PaperAccount("p1"), "balance", "12.5")

	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	st, err := a.Refill(ctx, "p1", t0)
	if err != nil || st.Balance.String() != "10000" || !st.LastRefillAt.Equal(t0) {
		t.Fatalf("first refill = %+v, %v", st, err)
	}
	rdb.HSet(ctx, store.PaperAccount("p1"), "balance", "3")
	_, err = a.Refill(ctx, "p1", t0.Add(24*time.Hour-time.Millisecond))
	var cd *paper.CooldownError
	if !errors.As(err, &cd) || !cd.NextAllowed.Equal(t0.Add(24*time.Hour)) {
		t.Fatalf("refill inside cooldown: %v", err)
	}
	if got, _ := a.Get(ctx, "p1"); got.Balance.String() != "3" {
		t.Fatalf("refused refill changed balance to %s", got.Balance)
	}
	st, err = a.Refill(ctx, "p1", t0.Add(24*time.Hour))
	if err != nil || st.Balance.String() != "10000" {
		t.Fatalf("refill at cooldown end = %+v, %v", st, err)
	}
}

// NextRefillAt agrees with Refill's own check: now when a refill is allowed, the end of the
// cooldown while it runs.
func TestNextRefillAt(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		last, now time.Time
		want      time.Time
	}{
		{"never refilled", time.Time{}, t0, t0},
		// 10:00 + 24 h = 10:00 the next day, 1 ms after now.
		{"inside the cooldown", t0, t0.Add(24*time.Hour - time.Millisecond), t0.Add(24 * time.Hour)},
		{"at its end", t0, t0.Add(24 * time.Hour), t0.Add(24 * time.Hour)},
		{"after it", t0, t0.Add(30 * time.Hour), t0.Add(30 * time.Hour)},
	} {
		if got := (paper.State{LastRefillAt: tc.last}).NextRefillAt(tc.now); !got.Equal(tc.want) {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestRefillUnknownAccount(t *testing.T) {
	_, rdb := storetest.New(t)
	if _, err := paper.NewAccounts(rdb).Refill(context.Background(), "nope", time.Now()); !errors.Is(err, paper.ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
}

// The owner index follows changes of owner, finishes one a crash left half done, and
// lists only accounts whose hash names the owner.
func TestOwnerIndex(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	a := paper.NewAccounts(rdb)
	cfg := paper.Config{ID: "p1", Namespace: "ns", Name: "main", Owner: "a@x.io", Currency: "USDT",
		InitialBalance: decimal.RequireFromString("100"), FeeRate: decimal.Zero}
	ids := func(owner string) []string {
		t.Helper()
		list, err := a.ListByOwner(ctx, owner)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, x := range list {
			out = append(out, x.ID+" "+x.Namespace+"/"+x.Name)
		}
		return out
	}
	if _, err := a.Ensure(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if got := ids("A@X.io"); len(got) != 1 || got[0] != "p1 ns/main" {
		t.Fatalf("a's accounts = %v", got)
	}
	cfg.Owner = "b@x.io"
	if _, err := a.Ensure(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if got, set := ids("b@x.io"), rdb.SMembers(ctx, store.OwnerPaperAccounts("a@x.io")).Val(); len(got) != 1 || len(set) != 0 {
		t.Fatalf("after the change: b's %v, a's set %v", got, set)
	}

	// A crash after the hash named c but before b's set lost the account: b's set still
	// lists it and the note says so. Reads leave it out; the next write finishes.
	rdb.SAdd(ctx, store.OwnerPaperAccounts("c@x.io"), "p1")
	rdb.HSet(ctx, store.PaperAccount("p1"), "owner", "c@x.io", "ownerReplaced", "b@x.io")
	if got := ids("b@x.io"); len(got) != 0 {
		t.Fatalf("b still sees %v", got)
	}
	cfg.Owner = "c@x.io"
	if _, err := a.Ensure(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if set := rdb.SMembers(ctx, store.OwnerPaperAccounts("b@x.io")).Val(); len(set) != 0 {
		t.Fatalf("b's set %v after the next write", set)
	}
	if rdb.HExists(ctx, store.PaperAccount("p1"), "ownerReplaced").Val() {
		t.Fatal("the note stays")
	}

	if err := a.Delete(ctx, "p1"); err != nil {
		t.Fatal(err)
	}
	if got := ids("c@x.io"); len(got) != 0 || rdb.Exists(ctx, store.OwnerPaperAccounts("c@x.io")).Val() != 0 {
		t.Fatalf("after delete: %v", got)
	}
}

func TestHoldings(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	a := paper.NewAccounts(rdb)
	if _, err := a.Ensure(ctx, paper.Config{ID: "p1", Owner: "a@x.io", Currency: "USDT",
		InitialBalance: decimal.RequireFromString("100000"), FeeRate: decimal.Zero}); err != nil {
		t.Fatal(err)
	}
	buy := func(bot, symbol string, kind exchange.Kind, side exchange.Side, amount, price string, lev int) {
		t.Helper()
		if _, err := paper.NewExchange(rdb, "p1", bot, nil).PlaceOrder(ctx, exchange.OrderRequest{ClientOrderID: bot + symbol + string(kind),
			Symbol: symbol, Kind: kind, Side: side, Type: exchange.Limit, Amount: decimal.RequireFromString(amount),
			Price: decimal.RequireFromString(price), Leverage: lev}); err != nil {
			t.Fatal(err)
		}
	}
	buy("bot-1", "BTC/USDT", exchange.Spot, exchange.SideBuy, "0.1", "60000", 0)
	buy("bot-2", "BTC/USDT", exchange.Spot, exchange.SideBuy, "0.25", "60000", 0)
	buy("bot-2", "ETH/USDT", exchange.Futures, exchange.SideSell, "2", "3000", 4)
	h, err := a.Holdings(ctx, "p1")
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Spot) != 1 || h.Spot["BTC"].String() != "0.35" { // 0.1 + 0.25, summed over bots
		t.Fatalf("spot = %v", h.Spot)
	}
	if len(h.Futures) != 1 || h.Futures[0].Scope != "bot-2" || h.Futures[0].Symbol != "ETH/USDT" ||
		h.Futures[0].Side != "short" || h.Futures[0].Cost.String() != "6000" || h.Futures[0].Margin.String() != "1500" {
		t.Fatalf("futures = %+v", h.Futures)
	}
}

// RefillOwned refills the owner's account only: another owner's answers ErrNotFound and
// keeps its balance.
func TestRefillOwned(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	a := paper.NewAccounts(rdb)
	if _, err := a.Ensure(ctx, paper.Config{ID: "p1", Owner: "ada@example.com", Currency: "USDT",
		InitialBalance: decimal.RequireFromString("10000"), FeeRate: decimal.Zero}); err != nil {
		t.Fatal(err)
	}
	rdb.HSet(ctx, store.PaperAccount("p1"), "balance", "12.5")
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	for _, owner := range []string{"bob@example.com", ""} {
		if _, err := a.RefillOwned(ctx, "p1", owner, now); !errors.Is(err, paper.ErrNotFound) {
			t.Fatalf("refill by %q: %v", owner, err)
		}
	}
	if got, _ := a.Get(ctx, "p1"); got.Balance.String() != "12.5" || !got.LastRefillAt.IsZero() {
		t.Fatalf("refused refill changed the account: %+v", got)
	}
	st, err := a.RefillOwned(ctx, "p1", "Ada@Example.com", now)
	if err != nil || st.Balance.String() != "10000" || !st.LastRefillAt.Equal(now) {
		t.Fatalf("owner's refill = %+v, %v", st, err)
	}
}
