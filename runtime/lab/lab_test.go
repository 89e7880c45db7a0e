package lab

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/strategy"
	"github.com/sigops/sigops/runtime/wallet"
)

// queuedKeys counts what a job leaves queued: the user's jobs and the partition's entries.
func (f *fixture) queuedKeys(t *testing.T, c Caller) (jobs, entries int64) {
	t.Helper()
	ctx := context.Background()
	jobs = f.rdb.ZCard(ctx, store.LabUserJobs(c.UserID)).Val()
	entries = f.rdb.XLen(ctx, store.LabDispatch(store.PartitionOf(c.UserID))).Val()
	return jobs, entries
}

func TestEstimateWithoutAcknowledgementChargesAndQueuesNothing(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	c := f.user(t, "pro@example.com", auth.TierPro, "14.99")
	r := request(strategy.EMACrossover, 12, 600, 7)
	r.AcknowledgeCost = false
	out, err := f.lab.Generate(ctx, c, r)
	if err != nil {
		t.Fatal(err)
	}
	e := out.Estimate
	// 12 × 0.50 = 6.00 against 14.99
	if out.Job != nil || e == nil || e.Experiments != 12 || !e.TotalCostUsd.Equal(d("6")) || !e.UnitCostUsd.Equal(d("0.5")) ||
		!e.BalanceUsd.Equal(d("14.99")) || !e.Sufficient || !e.Proceed.AcknowledgeCost || *e.Proceed.Seed != 7 {
		t.Fatalf("estimate %+v", out)
	}
	if b, _ := f.wallets.Balance(ctx, c.UserID); !b.Equal(d("14.99")) {
		t.Fatalf("charged: %v", b)
	}
	if jobs, entries := f.queuedKeys(t, c); jobs != 0 || entries != 0 {
		t.Fatalf("queued: %d jobs, %d entries", jobs, entries)
	}
	// Without a seed one is chosen, and the estimate's proceed request carries it.
	r.Seed = nil
	out, err = f.lab.Generate(ctx, c, r)
	if err != nil || out.Estimate.Proceed.Seed == nil {
		t.Fatalf("no seed chosen: %+v %v", out.Estimate, err)
	}
	// 30 × 0.50 = 15.00 > 14.99: not sufficient, still nothing queued.
	r.Experiments = 30
	out, _ = f.lab.Generate(ctx, c, r)
	if jobs, entries := f.queuedKeys(t, c); jobs != 0 || entries != 0 || out.Estimate.Sufficient || !out.Estimate.TotalCostUsd.Equal(d("15")) {
		t.Fatalf("30 experiments: %+v", out.Estimate)
	}
}

func TestAcknowledgedJobDebitsUnitsTimesHalfADollar(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	c := f.user(t, "pro@example.com", auth.TierPro, "20")
	out, err := f.lab.Generate(ctx, c, request(strategy.EMACrossover, 7, 600, 1))
	if err != nil || out.Job == nil || out.Estimate != nil {
		t.Fatalf("%+v %v", out, err)
	}
	// 7 × 0.50 = 3.50; 20.00 - 3.50 = 16.50
	if b, _ := f.wallets.Balance(ctx, c.UserID); !b.Equal(d("16.5")) {
		t.Fatalf("balance %v", b)
	}
	if !out.Job.CostUsd.Equal(d("3.5")) || out.Job.State != StateQueued || out.Job.Experiments != 7 {
		t.Fatalf("job %+v", out.Job)
	}
	entries, _, _ := f.wallets.Ledger(ctx, c.UserID, "", 10)
	if len(entries) != 2 || entries[0].Kind != wallet.Debit || !entries[0].Amount.Equal(d("-3.5")) ||
		!entries[0].Balance.Equal(d("16.5")) || entries[0].JobID != out.Job.ID {
		t.Fatalf("ledger %+v", entries)
	}
	if jobs, queued := f.queuedKeys(t, c); jobs != 1 || queued != 1 {
		t.Fatalf("queued: %d jobs, %d entries", jobs, queued)
	}
	got, err := f.lab.Job(ctx, c.UserID, out.Job.ID)
	if err != nil || got.State != StateQueued || !got.CostUsd.Equal(d("3.5")) || *got.Request.Seed != 1 {
		t.Fatalf("job read back: %+v %v", got, err)
	}
	// Another user's job answers as a missing one.
	other := f.user(t, "other@example.com", auth.TierPro, "0")
	if _, err := f.lab.Job(ctx, other.UserID, out.Job.ID); errs.CodeOf(err) != errs.NotFound {
		t.Fatalf("another user's job: %v", err)
	}
	if _, err := f.lab.Job(ctx, c.UserID, "no-such-job"); errs.CodeOf(err) != errs.NotFound {
		t.Fatalf("missing job: %v", err)
	}
}

func TestDashboardNeedsNoAcknowledgementButPays(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	c := f.user(t, "team@example.com", auth.TierTeam, "5")
	c.Dashboard = true
	r := request(strategy.RSIReversion, 4, 600, 3)
	r.AcknowledgeCost = false
	out, err := f.lab.Generate(ctx, c, r)
	if err != nil || out.Job == nil {
		t.Fatalf("%+v %v", out, err)
	}
	if b, _ := f.wallets.Balance(ctx, c.UserID); !b.Equal(d("3")) { // 5.00 - 4 × 0.50
		t.Fatalf("balance %v", b)
	}
}

func TestExperimentBounds(t *testing.T) {
	f := newFixture(t)
	c := f.user(t, "pro@example.com", auth.TierPro, "100")
	for _, n := range []int{0, 31, -1} {
		_, err := f.lab.Generate(t.Context(), c, request(strategy.EMACrossover, n, 600, 1))
		if e, ok := errs.As(err); !ok || e.Code != errs.InvalidParameter || e.Details["parameter"] != "experiments" {
			t.Errorf("%d experiments: %v", n, err)
		}
	}
	if _, err := f.lab.Generate(t.Context(), c, request(strategy.EMACrossover, 30, 600, 1)); err != nil {
		t.Fatalf("30 experiments: %v", err)
	}
	if b, _ := f.wallets.Balance(t.Context(), c.UserID); !b.Equal(d("85")) { // 100 - 30 × 0.50
		t.Fatalf("balance %v", b)
	}
	r := request(strategy.EMACrossover, 1, 600, 1)
	r.From = now.Add(-(MaxJobCandles + 1) * time.Minute)
	if _, err := f.lab.Generate(t.Context(), c, r); errs.CodeOf(err) != errs.InvalidParameter {
		t.Fatalf("200,001 candles: %v", err)
	}
}

func TestInsufficientBalanceQueuesAndChargesNothing(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	c := f.user(t, "pro@example.com", auth.TierPro, "2.49")
	_, err := f.lab.Generate(ctx, c, request(strategy.EMACrossover, 5, 600, 1)) // 2.50 needed
	e, ok := errs.As(err)
	if !ok || e.Code != errs.InsufficientBalance || e.Code.Numeric() != 3001 || e.Details["required"] != "2.50" || e.Details["balance"] != "2.49" {
		t.Fatalf("%v", err)
	}
	if b, _ := f.wallets.Balance(ctx, c.UserID); !b.Equal(d("2.49")) {
		t.Fatalf("charged: %v", b)
	}
	if jobs, entries := f.queuedKeys(t, c); jobs != 0 || entries != 0 {
		t.Fatalf("queued: %d jobs, %d entries", jobs, entries)
	}
	if entries, _, _ := f.wallets.Ledger(ctx, c.UserID, "", 10); len(entries) != 1 { // the opening only
		t.Fatalf("ledger %+v", entries)
	}
}

func TestTierWithoutAIBuilderRefused(t *testing.T) {
	f := newFixture(t)
	c := f.user(t, "free@example.com", auth.TierFree, "100")
	_, err := f.lab.Generate(t.Context(), c, request(strategy.EMACrossover, 1, 600, 1))
	if e, ok := errs.As(err); !ok || e.Code != errs.TierNotAllowed || e.Code.HTTPStatus() != 403 || e.Details["capability"] != "allowAIBuilder" {
		t.Fatalf("%v", err)
	}
	if b, _ := f.wallets.Balance(t.Context(), c.UserID); !b.Equal(d("100")) {
		t.Fatalf("charged: %v", b)
	}
}

// A job runs to the end: ranked experiments, the best as a bot spec, no refund when every
// experiment ran.
func TestJobRunsAndRanks(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	c := f.user(t, "pro@example.com", auth.TierPro, "10")
	f.engine(t, "exec-1", nil, all, 2)
	out, err := f.lab.Generate(ctx, c, request(strategy.EMACrossover, 6, 3000, 42))
	if err != nil {
		t.Fatal(err)
	}
	j := f.waitDone(t, c, out.Job.ID)
	r := j.Result
	if j.State != StateDone || r == nil || len(r.Experiments) != 6 || r.Failed != 0 || r.Candles != 3000 || r.Best == nil ||
		!j.RefundedUsd.IsZero() || j.Completed != 6 || j.FinishedAt == nil {
		t.Fatalf("job %+v", j)
	}
	for i, x := range r.Experiments {
		if x.Rank != i+1 || x.Metrics == nil || x.Error != nil {
			t.Errorf("experiment %+v", x)
		}
		if i > 0 {
			p := r.Experiments[i-1]
			if p.Eligible == x.Eligible && p.Metrics.SharpeRatio < x.Metrics.SharpeRatio {
				t.Errorf("rank %d (Sharpe %v) above rank %d (Sharpe %v)", p.Rank, p.Metrics.SharpeRatio, x.Rank, x.Metrics.SharpeRatio)
			}
			if !p.Eligible && x.Eligible {
				t.Errorf("an experiment under minTrades ranks above one over it")
			}
		}
	}
	// Index 0 is the family's defaults.
	for _, x := range r.Experiments {
		if x.Index == 0 && x.Params != strategy.EMACrossover.Defaults() {
			t.Errorf("experiment 0: %+v", x.Params)
		}
	}
	best := r.Experiments[0]
	if r.Best.Index != best.Index || !strings.Contains(r.Best.YAML, "family: emaCrossover") ||
		!strings.Contains(r.Best.YAML, "symbol: BTC/USDT") || !strings.Contains(r.Best.YAML, "fastPeriod: ") {
		t.Fatalf("best %+v", r.Best)
	}
	var spec struct {
		Symbol, Market string
		Strategy       struct {
			Family, Timeframe string
			EMACrossover      struct{ FastPeriod, SlowPeriod int } `json:"emaCrossover"`
		}
	}
	if err := json.Unmarshal([]byte(r.Best.JSON), &spec); err != nil || spec.Market != "spot" || spec.Strategy.Timeframe != "1m" ||
		spec.Strategy.EMACrossover.FastPeriod != best.Params.FastPeriod || spec.Strategy.EMACrossover.SlowPeriod != best.Params.SlowPeriod {
		t.Fatalf("best JSON %s: %+v %v", r.Best.JSON, spec, err)
	}
	if b, _ := f.wallets.Balance(ctx, c.UserID); !b.Equal(d("7")) { // 10 - 6 × 0.50, nothing refunded
		t.Fatalf("balance %v", b)
	}
	if n := f.rdb.XLen(ctx, store.LabDispatch(store.PartitionOf(c.UserID))).Val(); n != 0 {
		t.Fatalf("dispatch entry left: %d", n)
	}
	jobs, next, err := f.lab.Jobs(ctx, c.UserID, "", 10)
	if err != nil || len(jobs) != 1 || next != "" || jobs[0].ID != out.Job.ID || jobs[0].Result != nil || jobs[0].State != StateDone {
		t.Fatalf("jobs %+v %q %v", jobs, next, err)
	}
}

// Experiments whose parameters need more candles than the period has fail and are refunded
// once: the job's finish runs again (a re-delivered entry) without a second refund.
func TestFailedExperimentsRefundedOnce(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	c := f.user(t, "pro@example.com", auth.TierPro, "10")
	const n, minutes, seed = 12, 60, 5
	// Donchian periods are drawn from 5 to 200: with 60 candles, a set needs Warmup()+1 <= 60.
	wantFailed := 0
	for _, p := range ParameterSets(strategy.DonchianBreakout, n, seed) {
		st, err := strategy.New(strategy.Spec{Family: strategy.DonchianBreakout, Timeframe: "1m", Symbol: "BTC/USDT", Params: p})
		if err != nil {
			t.Fatal(err)
		}
		if st.Warmup()+1 > minutes {
			wantFailed++
		}
	}
	if wantFailed == 0 || wantFailed == n {
		t.Fatalf("the seed gives %d failing sets of %d; pick another", wantFailed, n)
	}
	e, _ := f.engine(t, "exec-1", nil, all, 2)
	out, err := f.lab.Generate(ctx, c, request(strategy.DonchianBreakout, n, minutes, seed))
	if err != nil {
		t.Fatal(err)
	}
	j := f.waitDone(t, c, out.Job.ID)
	refund := UnitCostUsd.Mul(d(itoa(wantFailed)))
	if j.State != StateDone || j.Result.Failed != wantFailed || !j.RefundedUsd.Equal(refund) {
		t.Fatalf("job %+v, want %d failed", j, wantFailed)
	}
	for _, x := range j.Result.Experiments[n-wantFailed:] {
		if x.Error == nil || x.Error.Code != InsufficientCandles {
			t.Errorf("a failed experiment ranks above a run one, or the wrong code: %+v", x)
		}
	}
	// 10 - 12 × 0.50 + failed × 0.50
	want := d("4").Add(refund)
	if b, _ := f.wallets.Balance(ctx, c.UserID); !b.Equal(want) {
		t.Fatalf("balance %v, want %v", b, want)
	}
	if err := e.finish(ctx, c.UserID, j); err != nil { // again, as a re-delivered entry would
		t.Fatal(err)
	}
	if b, _ := f.wallets.Balance(ctx, c.UserID); !b.Equal(want) {
		t.Fatalf("balance after a second finish %v, want %v", b, want)
	}
	entries, _, _ := f.wallets.Ledger(ctx, c.UserID, "", 10)
	if len(entries) != 3 || entries[0].Kind != wallet.Refund || !entries[0].Amount.Equal(refund) || entries[0].JobID != j.ID {
		t.Fatalf("ledger %+v", entries)
	}
}

// Candles that cannot be had fail the whole job, refunded in full.
func TestHistoryFailureRefundsTheJob(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	c := f.user(t, "pro@example.com", auth.TierPro, "3")
	f.engine(t, "exec-1", failingHistory{History: f.sim, symbol: "ETH/USDT"}, all, 2)
	r := request(strategy.BollingerReversion, 4, 600, 9)
	r.Symbol = "ETH/USDT"
	out, err := f.lab.Generate(ctx, c, r)
	if err != nil {
		t.Fatal(err)
	}
	j := f.waitDone(t, c, out.Job.ID)
	if j.State != StateFailed || j.Result.Failed != 4 || j.Result.Best != nil || !j.RefundedUsd.Equal(d("2")) {
		t.Fatalf("job %+v", j)
	}
	if b, _ := f.wallets.Balance(ctx, c.UserID); !b.Equal(d("3")) { // 3 - 2 + 2
		t.Fatalf("balance %v", b)
	}
}

// The same seed gives the same ranked result, byte for byte.
func TestSameSeedSameResult(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	c := f.user(t, "pro@example.com", auth.TierPro, "20")
	f.engine(t, "exec-1", nil, all, 2)
	var bodies [][]byte
	for range 2 {
		out, err := f.lab.Generate(ctx, c, request(strategy.RSIReversion, 8, 2000, 1234))
		if err != nil {
			t.Fatal(err)
		}
		f.waitDone(t, c, out.Job.ID)
		body := f.rdb.HGet(ctx, store.LabJob(c.UserID, out.Job.ID), fResult).Val()
		bodies = append(bodies, []byte(body))
	}
	if len(bodies[0]) == 0 || !bytes.Equal(bodies[0], bodies[1]) {
		t.Fatalf("results differ:\n%s\n%s", bodies[0], bodies[1])
	}
	a, b := ParameterSets(strategy.BollingerReversion, 30, 99), ParameterSets(strategy.BollingerReversion, 30, 99)
	if len(a) != 30 || a[7] != b[7] || a[29] != b[29] || a[1] == ParameterSets(strategy.BollingerReversion, 30, 100)[1] {
		t.Fatalf("parameter sets: %v", a[:3])
	}
	for _, p := range a { // on the Step grid exactly: 0.1 steps read back as their decimal
		if s := d(ftoa(p.StdDev)); !s.Mul(d("10")).IsInteger() {
			t.Errorf("stdDev %v off the grid", p.StdDev)
		}
	}
}

// Two executors, each holding its share of the partitions through a real queue consumer,
// run the jobs of the partitions they hold at the same time.
func TestConcurrentJobsOnTwoEngines(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	consumers := make([]*queue.Consumer, 2)
	for i := range consumers {
		consumers[i] = queue.NewConsumer(f.rdb, queue.Options{Name: "exec-" + itoa(i), LeaseTTL: time.Second})
		cctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = consumers[i].Run(cctx, func(context.Context, queue.Envelope) error { return nil })
		}()
		t.Cleanup(func() { cancel(); <-done })
	}
	testkit.EventuallyTrue(t, 20*time.Second, "the consumers split the partitions", func() bool {
		a, b := consumers[0].Owned(), consumers[1].Owned()
		return len(a) == store.Partitions/2 && len(b) == store.Partitions/2
	})
	// One user on a partition of each executor.
	var users []Caller
	for i := 0; len(users) < 2 && i < 200; i++ {
		c := f.user(t, "u"+itoa(i)+"@example.com", auth.TierPro, "10")
		p := store.PartitionOf(c.UserID)
		owner := 0
		if !contains(consumers[0].Owned(), p) {
			owner = 1
		}
		if len(users) == owner {
			users = append(users, c)
		}
	}
	if len(users) != 2 {
		t.Fatal("no users on both executors' partitions")
	}
	var runs [2]atomic.Int64
	for i := range consumers {
		e, _ := f.engine(t, consumers[i].Name(), nil, consumers[i].Owned, 1)
		e.afterExperiment = func(string, int) { runs[i].Add(1) }
	}
	var jobs [2]string
	for i, c := range users {
		out, err := f.lab.Generate(ctx, c, request(strategy.EMACrossover, 5, 2000, int64(i)))
		if err != nil {
			t.Fatal(err)
		}
		jobs[i] = out.Job.ID
	}
	var wg sync.WaitGroup
	for i, c := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if j := f.waitDone(t, c, jobs[i]); j.State != StateDone || len(j.Result.Experiments) != 5 {
				t.Errorf("job %d: %+v", i, j)
			}
		}()
	}
	wg.Wait()
	if runs[0].Load() != 5 || runs[1].Load() != 5 {
		t.Fatalf("experiments per executor: %d and %d, want 5 each (each runs its own partition's job)", runs[0].Load(), runs[1].Load())
	}
}

// An executor dies after k experiments of a job: the next owner of the partition finishes
// it, running only the missing experiments, and the job is charged once.
func TestJobResumedByTheNextOwner(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	c := f.user(t, "pro@example.com", auth.TierPro, "10")
	const n, k = 10, 4
	var owner atomic.Int32 // which engine holds the partitions
	ownedBy := func(i int32) func() []int {
		return func() []int {
			if owner.Load() == i {
				return all()
			}
			return nil
		}
	}
	var runs [2]atomic.Int64
	// The executor dies right after its k-th experiment: its context ends inside the hook,
	// before its worker can start the next one, however the goroutines are scheduled.
	dies, die := context.WithCancel(context.Background())
	first, stopFirst := f.engineIn(t, dies, "exec-a", nil, ownedBy(0), 1)
	killed := make(chan struct{})
	first.afterExperiment = func(string, int) {
		if runs[0].Add(1) == k {
			die()
			close(killed)
		}
	}
	out, err := f.lab.Generate(ctx, c, request(strategy.EMACrossover, n, 2000, 77))
	if err != nil {
		t.Fatal(err)
	}
	<-killed
	stopFirst() // the executor dies: its partition's entry stays pending for it
	ranByFirst := runs[0].Load()
	j, _ := f.lab.Job(ctx, c.UserID, out.Job.ID)
	if j.State != StateRunning || j.Completed != int(ranByFirst) {
		t.Fatalf("after the first executor: %+v (it ran %d)", j, ranByFirst)
	}
	owner.Store(1)
	second, _ := f.engine(t, "exec-b", nil, ownedBy(1), 1)
	second.afterExperiment = func(string, int) { runs[1].Add(1) }
	j = f.waitDone(t, c, out.Job.ID)
	if j.State != StateDone || len(j.Result.Experiments) != n {
		t.Fatalf("job %+v", j)
	}
	// With one worker the first executor had no experiment in flight when it stopped.
	if runs[0].Load()+runs[1].Load() != n {
		t.Fatalf("experiments run: %d + %d, want %d in all", runs[0].Load(), runs[1].Load(), n)
	}
	entries, _, _ := f.wallets.Ledger(ctx, c.UserID, "", 10)
	debits := 0
	for _, e := range entries {
		if e.Kind == wallet.Debit {
			debits++
		}
	}
	if debits != 1 || len(entries) != 2 {
		t.Fatalf("ledger %+v", entries)
	}
	if b, _ := f.wallets.Balance(ctx, c.UserID); !b.Equal(d("5")) { // 10 - 10 × 0.50
		t.Fatalf("balance %v", b)
	}
}
