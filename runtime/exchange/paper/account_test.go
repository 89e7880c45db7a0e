package paper_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/shopspring/decimal"

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

func TestRefillUnknownAccount(t *testing.T) {
	_, rdb := storetest.New(t)
	if _, err := paper.NewAccounts(rdb).Refill(context.Background(), "nope", time.Now()); !errors.Is(err, paper.ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
}
