package wallet

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

var d = decimal.RequireFromString

// inBothStores runs a test on a wallet kept in Redis alone and on one whose record is
// PostgreSQL: both must behave alike.
func inBothStores(t *testing.T, test func(t *testing.T, w *Wallets, rdb redis.UniversalClient, clk *testkit.Clock)) {
	for _, recorded := range []bool{false, true} {
		name := "redis"
		if recorded {
			name = "postgresql"
		}
		t.Run(name, func(t *testing.T) {
			w, rdb, clk := newWallets(t, recorded)
			test(t, w, rdb, clk)
		})
	}
}

func newWallets(t *testing.T, recorded bool) (*Wallets, redis.UniversalClient, *testkit.Clock) {
	t.Helper()
	_, rdb := storetest.New(t)
	clk := testkit.NewClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	o := Options{Now: clk.Now}
	if recorded {
		o.DB = dbtest.New(t)
	}
	return New(rdb, o), rdb, clk
}

func TestOpenCreditDebitRefundAndLedger(t *testing.T) {
	inBothStores(t, testOpenCreditDebitRefundAndLedger)
}

func testOpenCreditDebitRefundAndLedger(t *testing.T, w *Wallets, _ redis.UniversalClient, clk *testkit.Clock) {
	ctx := t.Context()
	const u = "user-1"
	if b, err := w.Balance(ctx, u); err != nil || !b.IsZero() {
		t.Fatalf("a wallet never written: %v %v", b, err)
	}
	if ok, err := w.Open(ctx, u, d("10")); err != nil || !ok {
		t.Fatalf("open: %v %v", ok, err)
	}
	if ok, err := w.Open(ctx, u, d("99")); err != nil || ok { // a second opening changes nothing
		t.Fatalf("second open: %v %v", ok, err)
	}
	clk.Advance(time.Second)
	if b, err := w.Credit(ctx, u, d("0.10")); err != nil || !b.Equal(d("10.1")) {
		t.Fatalf("credit: %v %v", b, err)
	}
	clk.Advance(time.Second)
	// 10.10 - 7.50 = 2.60
	e, err := w.Apply(ctx, u, Change{Kind: Debit, Amount: d("7.50"), JobID: "job-1"}, nil)
	if err != nil || !e.Balance.Equal(d("2.6")) || !e.Amount.Equal(d("-7.5")) {
		t.Fatalf("debit: %+v %v", e, err)
	}
	// 2.60 - 3.00 < 0: refused with the details, nothing written.
	_, err = w.Apply(ctx, u, Change{Kind: Debit, Amount: d("3"), JobID: "job-2"}, nil)
	if e, ok := errs.As(err); !ok || e.Code != errs.InsufficientBalance || e.Details["required"] != "3.00" || e.Details["balance"] != "2.60" {
		t.Fatalf("overdraft: %v", err)
	}
	clk.Advance(time.Second)
	// 2.60 + 1.00 = 3.60
	if e, err := w.Apply(ctx, u, Change{Kind: Refund, Amount: d("1.00"), JobID: "job-1"}, nil); err != nil || !e.Balance.Equal(d("3.6")) {
		t.Fatalf("refund: %+v %v", e, err)
	}
	if _, err := w.Credit(ctx, u, d("-1")); err == nil {
		t.Fatal("a negative credit was accepted")
	}
	if b, _ := w.Balance(ctx, u); !b.Equal(d("3.6")) {
		t.Fatalf("balance %v", b)
	}

	all, next, err := w.Ledger(ctx, u, "", 0)
	if err != nil || next != "" || len(all) != 4 {
		t.Fatalf("ledger: %d entries, next %q, %v", len(all), next, err)
	}
	want := []struct {
		kind            Kind
		amount, balance string
		job             string
		at              int
	}{ // newest first
		{Refund, "1", "3.6", "job-1", 3},
		{Debit, "-7.5", "2.6", "job-1", 2},
		{TopUp, "0.1", "10.1", "", 1},
		{Opening, "10", "10", "", 0},
	}
	start := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for i, w := range want {
		e := all[i]
		if e.Kind != w.kind || !e.Amount.Equal(d(w.amount)) || !e.Balance.Equal(d(w.balance)) || e.JobID != w.job ||
			!e.Time.Equal(start.Add(time.Duration(w.at)*time.Second)) {
			t.Errorf("entry %d: %+v, want %+v", i, e, w)
		}
	}
	// Pages of two follow each other without a gap or a repeat.
	p1, c1, err := w.Ledger(ctx, u, "", 2)
	if err != nil || len(p1) != 2 || c1 != all[1].ID {
		t.Fatalf("page 1: %v %q %v", p1, c1, err)
	}
	p2, c2, err := w.Ledger(ctx, u, c1, 2)
	if err != nil || len(p2) != 2 || p2[0].ID != all[2].ID || p2[1].ID != all[3].ID || c2 != "" {
		t.Fatalf("page 2: %v %q %v", p2, c2, err)
	}
	if _, _, err := w.Ledger(ctx, u, "not-an-id", 2); errs.CodeOf(err) != errs.InvalidParameter {
		t.Fatalf("bad cursor: %v", err)
	}
}

// Concurrent debits never overdraw: 20 debits of 1.00 on 10.00 leave exactly 0 with ten
// refused, and the ledger holds the ten that went through.
func TestConcurrentDebitsNeverOverdraw(t *testing.T) {
	inBothStores(t, testConcurrentDebitsNeverOverdraw)
}

func testConcurrentDebitsNeverOverdraw(t *testing.T, w *Wallets, _ redis.UniversalClient, _ *testkit.Clock) {
	ctx := t.Context()
	const u = "user-2"
	if _, err := w.Open(ctx, u, d("10")); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	ok, refused := 0, 0
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := w.Apply(ctx, u, Change{Kind: Debit, Amount: d("1.00")}, nil)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				ok++
			case errs.CodeOf(err) == errs.InsufficientBalance:
				refused++
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	b, _ := w.Balance(ctx, u)
	entries, _, _ := w.Ledger(ctx, u, "", 100)
	if ok != 10 || refused != 10 || !b.IsZero() || len(entries) != 11 {
		t.Fatalf("ok %d refused %d balance %v entries %d", ok, refused, b, len(entries))
	}
}

// The caller's part of the transaction: a Check that aborts writes nothing; ErrSkip writes
// nothing and is no error; Stage's writes land with the balance.
func TestApplyWithCallerWrites(t *testing.T) {
	inBothStores(t, testApplyWithCallerWrites)
}

func testApplyWithCallerWrites(t *testing.T, w *Wallets, rdb redis.UniversalClient, _ *testkit.Clock) {
	ctx := t.Context()
	const u = "user-3"
	if _, err := w.Open(ctx, u, d("5")); err != nil {
		t.Fatal(err)
	}
	marker := store.LabJob(u, "j1") // a key in the wallet's slot
	abort := errors.New("abort")
	_, err := w.Apply(ctx, u, Change{Kind: Debit, Amount: d("1")}, &With{Watch: []string{marker},
		Check: func(context.Context, *redis.Tx) error { return abort }})
	if !errors.Is(err, abort) {
		t.Fatal(err)
	}
	_, err = w.Apply(ctx, u, Change{Kind: Debit, Amount: d("1")}, &With{Watch: []string{marker},
		Check: func(context.Context, *redis.Tx) error { return ErrSkip }})
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.Apply(ctx, u, Change{Kind: Debit, Amount: d("1")}, &With{Watch: []string{marker},
		Stage: func(ctx context.Context, p redis.Pipeliner, bal decimal.Decimal) error {
			return p.HSet(ctx, marker, "balanceAfter", bal.String()).Err()
		}})
	if err != nil {
		t.Fatal(err)
	}
	b, _ := w.Balance(ctx, u)
	got, _ := rdb.HGet(ctx, marker, "balanceAfter").Result()
	if !b.Equal(d("4")) || got != "4" { // 5 - 1, once
		t.Fatalf("balance %v, staged %q", b, got)
	}
}
