// Package lab is the Strategy Lab: generate_strategy's Go API (Lab), which charges the
// user's wallet and queues a job of backtest experiments, and the job engine (Engine) that
// runs them in the executors.
//
// A job is N experiments (1 to MaxExperiments), each a backtest (runtime/backtest) of one
// parameter set of a strategy family drawn by a seeded search (ParameterSets), ranked by
// the objective (Rank). It costs UnitCostUsd per experiment from the Strategy Lab wallet
// (runtime/wallet); experiments that fail to run are refunded when the job finishes.
//
// Every key of a job is in the slot of its user's queue partition (runtime/store
// keys_lab.go), so queueing a job (the debit and its ledger entry, the job record, the
// user's index, the dispatch entry) is one WATCH/MULTI, and so is finishing it (ranked
// result, state, refund and its ledger entry, guarded by the state so it runs once). The
// dispatch stream of partition N is served by the executor holding queue partition N:
// when it dies, the next owner claims the job's pending entry and runs only the
// experiments whose outcome is not yet stored (HSETNX per experiment).
package lab

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/wallet"
)

// Accounts reads an account (auth.Users): the tier decides whether the Lab may be used.
type Accounts interface {
	Get(ctx context.Context, id string) (auth.User, error)
}

// Options configure a Lab.
type Options struct {
	Redis redis.UniversalClient
	// DB, when set, is PostgreSQL: the wallet's record and the jobs' outbox (outbox.go).
	// With Wallets given, their database is the Lab's, and DB is not read.
	DB *pgxpool.Pool
	// Wallets default to the wallets of Redis and DB.
	Wallets *wallet.Wallets
	Users   Accounts
	// Market finds a symbol's market rules (tick, step, minimums) for the backtests.
	// Default: the paper exchange's catalogue (paper.Market), whose rules a backtest follows.
	Market func(exchange.Kind, string) (exchange.MarketInfo, bool)
	// Metrics counts queued jobs (nil: counted nowhere).
	Metrics *Metrics
	Now     func() time.Time
}

// Lab is generate_strategy's Go API, for mcpd and the dashboard.
type Lab struct {
	o Options
}

// fillShared sets the defaults the Lab's and the Engine's options share. The outbox is
// written in the charge's transaction, so the Lab's database is always its wallets': given
// wallets bring theirs, and wallets built here take db.
func fillShared(rdb redis.UniversalClient, db **pgxpool.Pool, market *func(exchange.Kind, string) (exchange.MarketInfo, bool),
	now *func() time.Time, wallets **wallet.Wallets, metrics **Metrics) {
	if *market == nil {
		*market = paper.Market
	}
	if *now == nil {
		*now = time.Now
	}
	if *wallets == nil {
		*wallets = wallet.New(rdb, wallet.Options{Now: *now, DB: *db})
	}
	*db = (*wallets).DB()
	if *metrics == nil {
		*metrics = NewMetrics()
	}
}

// New returns a Lab.
func New(o Options) *Lab {
	fillShared(o.Redis, &o.DB, &o.Market, &o.Now, &o.Wallets, &o.Metrics)
	return &Lab{o: o}
}

// Caller is who calls: the user, and whether the call comes from the dashboard, whose own
// confirmation replaces AcknowledgeCost (the cost is charged all the same).
type Caller struct {
	UserID    string
	Email     string
	Dashboard bool
}

// Estimate is what a job would cost, answered instead of queueing one when the cost is not
// acknowledged.
type Estimate struct {
	Experiments  int            `json:"experiments"`
	UnitCostUsd  httpapi.Number `json:"unitCostUsd"`
	TotalCostUsd httpapi.Number `json:"totalCostUsd"`
	BalanceUsd   httpapi.Number `json:"balanceUsd"`
	Sufficient   bool           `json:"sufficient"`
	// Proceed is the request to send to run the job: this one, with acknowledgeCost true
	// and the seed chosen for it.
	Proceed Request `json:"proceed"`
	Message string  `json:"message"`
}

// Outcome of Generate: an Estimate, or the queued Job.
type Outcome struct {
	Estimate *Estimate `json:"estimate,omitempty"`
	Job      *Job      `json:"job,omitempty"`
}

// Job states.
const (
	StateQueued  = "queued"
	StateRunning = "running"
	StateDone    = "done"
	// StateFailed: every experiment failed (all refunded).
	StateFailed = "failed"
)

// Job is one job as its owner sees it.
type Job struct {
	ID          string         `json:"id"`
	State       string         `json:"state"`
	Request     Request        `json:"request"`
	Experiments int            `json:"experiments"`
	Completed   int            `json:"completed"`
	CostUsd     httpapi.Number `json:"costUsd"`
	RefundedUsd httpapi.Number `json:"refundedUsd"`
	CreatedAt   time.Time      `json:"createdAt"`
	FinishedAt  *time.Time     `json:"finishedAt,omitempty"`
	// Result is the ranked result once the job is done (or failed).
	Result *Result `json:"result,omitempty"`
}

// Job record fields (store.LabJob).
const (
	fUser      = "user"
	fRequest   = "request"
	fState     = "state"
	fCost      = "cost"
	fRefunded  = "refunded"
	fCreated   = "createdAt"
	fFinished  = "finishedAt"
	fResult    = "result"
	fExpCount  = "experiments"
	dispatchJF = "job"
	dispatchUF = "user"
)

// Cost is what Generate charges for r: its experiments (the default when r names none) ×
// UnitCostUsd. A request Generate would refuse is refused alike.
func (l *Lab) Cost(r Request) (decimal.Decimal, error) {
	n, err := r.normalize(l.o.Market)
	if err != nil {
		return decimal.Zero, err
	}
	return costOf(n), nil
}

func costOf(r Request) decimal.Decimal {
	return UnitCostUsd.Mul(decimal.NewFromInt(int64(r.Experiments)))
}

// Generate is generate_strategy. It needs the allowAIBuilder capability
// (TIER_NOT_ALLOWED otherwise). Without AcknowledgeCost, unless the caller is the
// dashboard, it answers an Estimate and queues nothing. Otherwise it debits
// experiments × UnitCostUsd and queues the job in one transaction; a balance below that is
// INSUFFICIENT_BALANCE (details: required, balance) and nothing is queued.
func (l *Lab) Generate(ctx context.Context, c Caller, r Request) (Outcome, error) {
	u, err := l.o.Users.Get(ctx, c.UserID)
	if errors.Is(err, auth.ErrNotFound) {
		return Outcome{}, errs.New(errs.Unauthorized, "no such account")
	}
	if err != nil {
		return Outcome{}, err
	}
	if !u.Tier.Capabilities.AllowAIBuilder {
		return Outcome{}, errs.New(errs.TierNotAllowed, "the %s tier does not include the Strategy Lab (allowAIBuilder); pro and team do",
			u.Tier.Name).WithDetails(map[string]any{"capability": "allowAIBuilder", "tier": u.Tier.Slug})
	}
	r, err = r.normalize(l.o.Market)
	if err != nil {
		return Outcome{}, err
	}
	if r.Seed == nil {
		s := randomSeed()
		r.Seed = &s
	}
	cost := costOf(r)
	if !r.AcknowledgeCost && !c.Dashboard {
		bal, err := l.o.Wallets.Balance(ctx, c.UserID)
		if err != nil {
			return Outcome{}, err
		}
		proceed := r
		proceed.AcknowledgeCost = true
		return Outcome{Estimate: &Estimate{Experiments: r.Experiments, UnitCostUsd: httpapi.Num(UnitCostUsd), TotalCostUsd: httpapi.Num(cost),
			BalanceUsd: httpapi.Num(bal), Sufficient: bal.GreaterThanOrEqual(cost), Proceed: proceed,
			Message: "nothing was charged or queued: send the request again with acknowledgeCost true to run it"}}, nil
	}
	job := Job{ID: uuid.NewString(), State: StateQueued, Request: r, Experiments: r.Experiments, CostUsd: httpapi.Num(cost),
		RefundedUsd: httpapi.Num(decimal.Zero), CreatedAt: l.o.Now().UTC().Truncate(time.Millisecond)}
	reqJSON, err := json.Marshal(r)
	if err != nil {
		return Outcome{}, err
	}
	keys, args := dispatchArgs(c.UserID, job, reqJSON)
	with := &wallet.With{Stage: func(ctx context.Context, pipe redis.Pipeliner, _ decimal.Decimal) error {
		dispatchJob.Eval(ctx, pipe, keys, args...)
		return nil
	}}
	if l.o.DB != nil {
		with.Record = func(ctx context.Context, tx pgx.Tx) error { return recordJob(ctx, tx, c.UserID, job, reqJSON) }
	}
	_, err = l.o.Wallets.Apply(ctx, c.UserID, wallet.Change{Kind: wallet.Debit, Amount: cost, JobID: job.ID}, with)
	switch {
	case errors.As(err, new(*wallet.StageError)):
		// Charged and recorded: the engine's relay queues the job (outbox.go).
	case err != nil:
		return Outcome{}, err
	case l.o.DB != nil:
		// Queued; a failure to say so here leaves the relay to find the job's record there.
		_ = markDispatched(ctx, l.o.DB, c.UserID, job.ID)
	}
	l.o.Metrics.jobs.WithLabelValues(jobQueued).Inc()
	return Outcome{Job: &job}, nil
}

func randomSeed() int64 {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return int64(binary.BigEndian.Uint64(b[:]) >> 1)
}

// Job reads one of the user's jobs; another user's job is NOT_FOUND, as a missing one.
func (l *Lab) Job(ctx context.Context, userID, jobID string) (Job, error) {
	return readJob(ctx, l.o.Redis, userID, jobID)
}

func notFound(jobID string) error {
	return errs.New(errs.NotFound, "no job %q", clip(jobID))
}

func readJob(ctx context.Context, rdb redis.UniversalClient, userID, jobID string) (Job, error) {
	if userID == "" || jobID == "" {
		return Job{}, notFound(jobID)
	}
	var rec *redis.MapStringStringCmd
	var done *redis.IntCmd
	if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		rec = p.HGetAll(ctx, store.LabJob(userID, jobID))
		done = p.HLen(ctx, store.LabExperiments(userID, jobID))
		return nil
	}); err != nil {
		return Job{}, err
	}
	m := rec.Val()
	if len(m) == 0 || m[fUser] != userID {
		return Job{}, notFound(jobID)
	}
	j, err := decodeJob(jobID, m)
	if err != nil {
		return Job{}, err
	}
	j.Completed = int(done.Val())
	return j, nil
}

func decodeJob(id string, m map[string]string) (Job, error) {
	j := Job{ID: id, State: m[fState]}
	if err := json.Unmarshal([]byte(m[fRequest]), &j.Request); err != nil {
		return Job{}, errors.New("lab: job " + id + ": corrupt request")
	}
	j.Experiments = j.Request.Experiments
	var err error
	if j.CostUsd.Decimal, err = decimal.NewFromString(m[fCost]); err != nil {
		return Job{}, errors.New("lab: job " + id + ": corrupt cost")
	}
	if j.RefundedUsd.Decimal, err = decimal.NewFromString(m[fRefunded]); err != nil {
		return Job{}, errors.New("lab: job " + id + ": corrupt refund")
	}
	ms, _ := strconv.ParseInt(m[fCreated], 10, 64)
	j.CreatedAt = time.UnixMilli(ms).UTC()
	if s := m[fFinished]; s != "" {
		ms, _ := strconv.ParseInt(s, 10, 64)
		t := time.UnixMilli(ms).UTC()
		j.FinishedAt = &t
	}
	if s := m[fResult]; s != "" {
		j.Result = &Result{}
		if err := json.Unmarshal([]byte(s), j.Result); err != nil {
			return Job{}, errors.New("lab: job " + id + ": corrupt result")
		}
	}
	return j, nil
}

// MaxJobsPage bounds one page of Jobs.
const MaxJobsPage = 100

// Jobs lists the user's jobs newest first, up to limit (1 to MaxJobsPage; 0: 20), after
// cursor (the last job ID of the previous page; empty: from the newest). next is the
// following page's cursor, empty at the end. Results are left out (Job has them).
func (l *Lab) Jobs(ctx context.Context, userID, cursor string, limit int) (jobs []Job, next string, err error) {
	if limit <= 0 {
		limit = 20
	}
	limit = min(limit, MaxJobsPage)
	key := store.LabUserJobs(userID)
	start := int64(0)
	if cursor != "" {
		rank, err := l.o.Redis.ZRevRank(ctx, key, cursor).Result()
		if errors.Is(err, redis.Nil) {
			return nil, "", errs.New(errs.InvalidParameter, "cursor %q is not a job of this user", clip(cursor))
		}
		if err != nil {
			return nil, "", err
		}
		start = rank + 1
	}
	ids, err := l.o.Redis.ZRevRange(ctx, key, start, start+int64(limit)).Result()
	if err != nil {
		return nil, "", err
	}
	if len(ids) > limit {
		ids = ids[:limit]
		next = ids[limit-1]
	}
	for _, id := range ids {
		j, err := readJob(ctx, l.o.Redis, userID, id)
		if err != nil {
			return nil, "", err
		}
		j.Result = nil
		jobs = append(jobs, j)
	}
	return jobs, next, nil
}

// Balance is the user's Strategy Lab balance.
func (l *Lab) Balance(ctx context.Context, userID string) (decimal.Decimal, error) {
	return l.o.Wallets.Balance(ctx, userID)
}

// Ledger is the user's wallet ledger, newest first (wallet.Wallets.Ledger).
func (l *Lab) Ledger(ctx context.Context, userID, cursor string, limit int) ([]wallet.Entry, string, error) {
	return l.o.Wallets.Ledger(ctx, userID, cursor, limit)
}
