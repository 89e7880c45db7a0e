package lab

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/store"
)

// With a database a job is charged in PostgreSQL: the wallet's transaction writes the
// job's row in lab_jobs beside the debit, so a charge never exists without its job. The
// job's working state (its record, the user's index, the dispatch entry) is written to
// Redis after the commit; lab_jobs is the outbox that finishes that write when it failed:
// the engine's relay dispatches every job still marked undispatched a while after its
// charge. Dispatching is one script that writes nothing when the job's record exists, so
// Generate and the relay (or two relays) can race on a job and queue it once.

// relayAfter is how old an undispatched job must be before the relay dispatches it: long
// enough that Generate, which dispatches right after its commit, has done it or failed.
const relayAfter = 30 * time.Second

// relayEvery is how often the engine's relay looks for undispatched jobs.
const relayEvery = 15 * time.Second

// relayBatch bounds the jobs one relay pass dispatches.
const relayBatch = 100

// dispatchJob queues a job unless its record exists: the record, the user's index and the
// dispatch entry. KEYS: job, user's jobs, dispatch stream. ARGV: created (ms), job ID,
// user ID, then the record's field/value pairs.
var dispatchJob = redis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], unpack(ARGV, 4))
redis.call('ZADD', KEYS[2], ARGV[1], ARGV[2])
redis.call('XADD', KEYS[3], '*', '` + dispatchJF + `', ARGV[2], '` + dispatchUF + `', ARGV[3])
return 1`)

// dispatchArgs are dispatchJob's keys and arguments for a job just charged.
func dispatchArgs(userID string, job Job, reqJSON []byte) ([]string, []any) {
	keys := []string{store.LabJob(userID, job.ID), store.LabUserJobs(userID), store.LabDispatch(store.PartitionOf(userID))}
	created := strconv.FormatInt(job.CreatedAt.UnixMilli(), 10)
	return keys, []any{created, job.ID, userID,
		fUser, userID, fRequest, string(reqJSON), fState, StateQueued, fCost, job.CostUsd.String(),
		fRefunded, "0", fExpCount, job.Request.Experiments, fCreated, created}
}

// recordJob is the job's row, written in the debit's transaction.
func recordJob(ctx context.Context, tx pgx.Tx, userID string, job Job, reqJSON []byte) error {
	_, err := tx.Exec(ctx, `INSERT INTO lab_jobs (user_id, id, request, cost, created_at) VALUES ($1, $2, $3, $4, $5)`,
		userID, job.ID, reqJSON, job.CostUsd, job.CreatedAt)
	return err
}

// markDispatched records that a job's Redis part is written.
func markDispatched(ctx context.Context, db *pgxpool.Pool, userID, jobID string) error {
	_, err := db.Exec(ctx, `UPDATE lab_jobs SET dispatched = true WHERE user_id = $1 AND id = $2`, userID, jobID)
	return err
}

// relay dispatches the jobs charged more than relayAfter ago whose Redis part was never
// written, and returns how many it dispatched (a job whose record was there is only
// marked).
func (e *Engine) relay(ctx context.Context) (int, error) {
	rows, err := e.o.DB.Query(ctx, `SELECT user_id, id, request, cost, created_at FROM lab_jobs
		WHERE NOT dispatched AND created_at < $1 ORDER BY created_at LIMIT $2`, e.o.Now().Add(-relayAfter), relayBatch)
	if err != nil {
		return 0, err
	}
	type pending struct {
		user string
		job  Job
		req  []byte
	}
	jobs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (pending, error) {
		var p pending
		var cost decimal.Decimal
		err := row.Scan(&p.user, &p.job.ID, &p.req, &cost, &p.job.CreatedAt)
		p.job.CostUsd = httpapi.Num(cost)
		return p, err
	})
	if err != nil {
		return 0, err
	}
	n := 0
	for _, p := range jobs {
		if err := json.Unmarshal(p.req, &p.job.Request); err != nil {
			return n, err
		}
		keys, args := dispatchArgs(p.user, p.job, p.req)
		queued, err := dispatchJob.Run(ctx, e.o.Redis, keys, args...).Int()
		if err != nil {
			return n, err
		}
		if err := markDispatched(ctx, e.o.DB, p.user, p.job.ID); err != nil {
			return n, err
		}
		if queued == 1 {
			n++
			e.log.Warn("lab job dispatched by the relay: its charge committed but its queueing did not", "job", p.job.ID)
		}
	}
	return n, nil
}
