package wallet

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// A lost Redis loses no money: after FLUSHALL the balance and every ledger entry read the
// same, from PostgreSQL, and the wallet takes charges again.
func TestTheRecordSurvivesALostRedis(t *testing.T) {
	w, rdb, clk := newWallets(t, true)
	ctx := t.Context()
	const u = "user-flush"
	if _, err := w.Open(ctx, u, d("25")); err != nil {
		t.Fatal(err)
	}
	clk.Advance(1e9)
	if _, err := w.Apply(ctx, u, Change{Kind: Debit, Amount: d("7.33"), JobID: "j1"}, nil); err != nil {
		t.Fatal(err)
	}
	before, _, err := w.Ledger(ctx, u, "", 10)
	if err != nil || len(before) != 2 {
		t.Fatalf("ledger %v %v", before, err)
	}
	if err := storetest.FlushAll(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	if b, err := w.Balance(ctx, u); err != nil || !b.Equal(d("17.67")) { // 25 - 7.33
		t.Fatalf("balance after FLUSHALL: %v %v", b, err)
	}
	after, _, err := w.Ledger(ctx, u, "", 10)
	if err != nil || len(after) != len(before) {
		t.Fatalf("ledger after FLUSHALL: %v %v", after, err)
	}
	for i := range before {
		if after[i].ID != before[i].ID || !after[i].Balance.Equal(before[i].Balance.Decimal) || !after[i].Time.Equal(before[i].Time) {
			t.Errorf("entry %d: %+v, was %+v", i, after[i], before[i])
		}
	}
	if e, err := w.Apply(ctx, u, Change{Kind: Debit, Amount: d("17.67"), JobID: "j2"}, nil); err != nil || !e.Balance.IsZero() {
		t.Fatalf("charge after FLUSHALL: %+v %v", e, err)
	}
}

// A retried charge (same job) is made once: the second Apply returns the first's entry
// and the caller's rows are not written again.
func TestAChargeIsMadeOncePerJob(t *testing.T) {
	w, _, _ := newWallets(t, true)
	ctx := t.Context()
	const u = "user-once"
	if _, err := w.Open(ctx, u, d("10")); err != nil {
		t.Fatal(err)
	}
	rows := 0
	with := &With{Record: func(context.Context, pgx.Tx) error { rows++; return nil }}
	first, err := w.Apply(ctx, u, Change{Kind: Debit, Amount: d("3"), JobID: "j"}, with)
	if err != nil {
		t.Fatal(err)
	}
	second, err := w.Apply(ctx, u, Change{Kind: Debit, Amount: d("3"), JobID: "j"}, with)
	if err != nil || second.ID != first.ID || !second.Balance.Equal(d("7")) {
		t.Fatalf("retry: %+v %v (first %+v)", second, err, first)
	}
	if b, _ := w.Balance(ctx, u); !b.Equal(d("7")) || rows != 1 {
		t.Fatalf("balance %v, caller's rows written %d times", b, rows)
	}
}

// PostgreSQL down: a cached balance still reads, and a charge answers SERVICE_UNAVAILABLE
// and changes nothing.
func TestPostgreSQLDownRefusesChargesOnly(t *testing.T) {
	_, rdb := storetest.New(t)
	url := dbtest.NewURL(t)
	up := New(rdb, Options{DB: dbtest.Pool(t, url)})
	ctx := t.Context()
	const u = "user-down"
	if _, err := up.Open(ctx, u, d("5")); err != nil {
		t.Fatal(err)
	}
	downPool := dbtest.Pool(t, url)
	downPool.Close() // every query on it fails, as on a server that is gone
	down := New(rdb, Options{DB: downPool})
	if b, err := down.Balance(ctx, u); err != nil || !b.Equal(d("5")) {
		t.Fatalf("cached balance: %v %v", b, err)
	}
	_, err := down.Apply(ctx, u, Change{Kind: Debit, Amount: d("1"), JobID: "j"}, nil)
	if e, ok := errs.As(err); !ok || e.Code != errs.ServiceUnavailable || e.RetryAfter == 0 {
		t.Fatalf("charge with PostgreSQL down: %v", err)
	}
	if b, err := up.Balance(ctx, u); err != nil || !b.Equal(d("5")) {
		t.Fatalf("balance after a refused charge: %v %v", b, err)
	}
}

// The caller's Redis part failing after the commit is a StageError: the money moved, and
// the cache still shows the new balance.
func TestAFailedStageAfterTheCommit(t *testing.T) {
	w, rdb, _ := newWallets(t, true)
	ctx := t.Context()
	const u = "user-stage"
	if _, err := w.Open(ctx, u, d("5")); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("redis part failed")
	_, err := w.Apply(ctx, u, Change{Kind: Debit, Amount: d("2"), JobID: "j"}, &With{
		Stage: func(context.Context, redis.Pipeliner, decimal.Decimal) error { return boom }})
	var se *StageError
	if !errors.As(err, &se) || !errors.Is(err, boom) {
		t.Fatalf("got %v, want a StageError", err)
	}
	if v, _ := rdb.Get(ctx, store.WalletCache(u)).Result(); v != "2 3" {
		t.Fatalf("cache %q, want version 2 at 3", v)
	}
}

// A wallet made before the service had a database is copied to the record, with its
// ledger, the first time it is read (or by Backfill), and charged from its balance.
func TestRedisWalletsMoveToTheRecord(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := t.Context()
	old := New(rdb, Options{})
	if _, err := old.Open(ctx, "a", d("10")); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Credit(ctx, "a", d("2.5")); err != nil {
		t.Fatal(err)
	}
	if _, err := old.Open(ctx, "b", d("4")); err != nil {
		t.Fatal(err)
	}
	w := New(rdb, Options{DB: dbtest.New(t)})
	if b, err := w.Balance(ctx, "a"); err != nil || !b.Equal(d("12.5")) {
		t.Fatalf("balance of a moved wallet: %v %v", b, err)
	}
	entries, _, err := w.Ledger(ctx, "a", "", 10)
	if err != nil || len(entries) != 2 || entries[0].Kind != TopUp || entries[1].Kind != Opening {
		t.Fatalf("moved ledger: %+v %v", entries, err)
	}
	if n, err := w.Backfill(ctx, []string{"a", "b", "c"}); err != nil || n != 1 { // b only; c has no wallet
		t.Fatalf("backfill: %d %v", n, err)
	}
	if n, err := w.Backfill(ctx, []string{"a", "b"}); err != nil || n != 0 {
		t.Fatalf("second backfill: %d %v", n, err)
	}
	if e, err := w.Apply(ctx, "b", Change{Kind: Debit, Amount: d("4"), JobID: "j"}, nil); err != nil || !e.Balance.IsZero() {
		t.Fatalf("charge of a moved wallet: %+v %v", e, err)
	}
}
