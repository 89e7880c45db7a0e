package lab

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/strategy"
	"github.com/sigops/sigops/runtime/wallet"
)

// A job whose charge committed but whose queueing in Redis never happened (the process
// died between the two) is queued by the engine's relay, runs and is refunded like any
// other; the charge is made once.
func TestAChargedJobIsNeverLost(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	c := f.user(t, "pro@example.com", auth.TierPro, "10")
	r := request(strategy.EMACrossover, 4, 600, 11)
	job := Job{ID: uuid.NewString(), State: StateQueued, Request: r, Experiments: 4, CostUsd: httpapi.Num(d("2")),
		CreatedAt: now.Add(-time.Minute)}
	body, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	// The charge and the job's row, as Generate commits them, and nothing in Redis.
	if _, err := f.wallets.Apply(ctx, c.UserID, wallet.Change{Kind: wallet.Debit, Amount: d("2"), JobID: job.ID},
		&wallet.With{Record: func(ctx context.Context, tx pgx.Tx) error { return recordJob(ctx, tx, c.UserID, job, body) }}); err != nil {
		t.Fatal(err)
	}
	if jobs, queued := f.queuedKeys(t, c); jobs != 0 || queued != 0 {
		t.Fatalf("before the relay: %d jobs, %d entries", jobs, queued)
	}
	f.engine(t, "exec-1", nil, all, 2)
	j := f.waitDone(t, c, job.ID)
	if j.State != StateDone || *j.Request.Seed != 11 {
		t.Fatalf("relayed job %+v", j)
	}
	var dispatched bool
	if err := f.db.QueryRow(ctx, `SELECT dispatched FROM lab_jobs WHERE id = $1`, job.ID).Scan(&dispatched); err != nil || !dispatched {
		t.Fatalf("dispatched %v %v", dispatched, err)
	}
	want := d("8").Add(j.RefundedUsd.Decimal) // 10 - 2, plus what failed
	if b, _ := f.wallets.Balance(ctx, c.UserID); !b.Equal(want) {
		t.Fatalf("balance %v, want %v", b, want)
	}
	if jobs, _ := f.queuedKeys(t, c); jobs != 1 {
		t.Fatalf("%d job records, want 1", jobs)
	}
}

// Generate writes the job's row and marks it dispatched: a relay pass finds nothing to do
// and queues nothing twice.
func TestGenerateLeavesTheRelayNothing(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	c := f.user(t, "pro@example.com", auth.TierPro, "10")
	out, err := f.lab.Generate(ctx, c, request(strategy.RSIReversion, 2, 600, 4))
	if err != nil {
		t.Fatal(err)
	}
	var dispatched bool
	if err := f.db.QueryRow(ctx, `SELECT dispatched FROM lab_jobs WHERE id = $1`, out.Job.ID).Scan(&dispatched); err != nil || !dispatched {
		t.Fatalf("dispatched %v %v", dispatched, err)
	}
	// Even unmarked, the relay queues a job Redis holds only once.
	if _, err := f.db.Exec(ctx, `UPDATE lab_jobs SET dispatched = false, created_at = created_at - interval '1 hour'`); err != nil {
		t.Fatal(err)
	}
	e := NewEngine(EngineOptions{Redis: f.rdb, DB: f.db, Wallets: f.wallets, History: f.sim, Owned: all,
		Now: func() time.Time { return now }})
	if n, err := e.relay(ctx); err != nil || n != 0 {
		t.Fatalf("relay: %d %v", n, err)
	}
	if jobs, queued := f.queuedKeys(t, c); jobs != 1 || queued != 1 {
		t.Fatalf("%d jobs, %d entries", jobs, queued)
	}
}
