package wallet

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
)

// record is PostgreSQL's wallets and ledger: the wallet's record when the service has a
// database. Every change is one transaction holding the wallet's row lock: the balance,
// its version, the ledger entry and the caller's rows (a debit's job) commit together or
// not at all, and the arithmetic is NUMERIC's, exact to the last digit.
type record struct {
	db *pgxpool.Pool
}

// unavailable is a PostgreSQL failure as a caller sees it: the wallet cannot be read or
// charged for a moment, and nothing was changed.
func unavailable(err error) error {
	return errs.RecordUnavailable(err, "the Strategy Lab wallet cannot be reached for a moment; nothing was charged: try again")
}

// state is a wallet's balance and version as committed.
type state struct {
	balance decimal.Decimal
	version int64
}

// read is a wallet's committed state; a wallet the record does not have (found false) is
// 0 at version 0.
func (r record) read(ctx context.Context, userID string) (s state, found bool, err error) {
	err = r.db.QueryRow(ctx, `SELECT balance, version FROM wallets WHERE user_id = $1`, userID).Scan(&s.balance, &s.version)
	if errors.Is(err, pgx.ErrNoRows) {
		return state{balance: decimal.Zero}, false, nil
	}
	if err != nil {
		return state{}, false, unavailable(err)
	}
	return s, true, nil
}

// open inserts a wallet with its opening entry unless it exists.
func (r record) open(ctx context.Context, userID string, amount decimal.Decimal, at time.Time) (bool, state, error) {
	created := false
	var s state
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO wallets (user_id, balance, version) VALUES ($1, $2, 1) ON CONFLICT DO NOTHING`,
			userID, amount)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		created, s = true, state{balance: amount, version: 1}
		if amount.IsZero() {
			return nil
		}
		_, err = tx.Exec(ctx, insertEntry, userID, string(Opening), amount, amount, "", at)
		return err
	})
	if err != nil {
		return false, state{}, unavailable(err)
	}
	return created, s, nil
}

const insertEntry = `INSERT INTO wallet_ledger (user_id, kind, amount, balance, job_id, at) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id`

// apply makes c under the wallet's row lock, then runs rows (the caller's writes) in the
// same transaction. A change with a job ID that the ledger already holds (a retry of a
// transaction that committed) changes nothing, runs no rows and returns that entry.
func (r record) apply(ctx context.Context, userID string, c Change, at time.Time,
	rows func(context.Context, pgx.Tx) error) (e Entry, s state, err error) {
	delta := c.Amount
	if c.Kind == Debit {
		delta = delta.Neg()
	}
	err = pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO wallets (user_id, balance) VALUES ($1, 0) ON CONFLICT DO NOTHING`, userID); err != nil {
			return err
		}
		if err := tx.QueryRow(ctx, `SELECT balance, version FROM wallets WHERE user_id = $1 FOR UPDATE`, userID).
			Scan(&s.balance, &s.version); err != nil {
			return err
		}
		if c.JobID != "" {
			var id int64
			err := tx.QueryRow(ctx, `SELECT id, amount, balance, at FROM wallet_ledger WHERE user_id = $1 AND job_id = $2 AND kind = $3`,
				userID, c.JobID, string(c.Kind)).Scan(&id, &e.Amount, &e.Balance, &e.Time)
			if err == nil {
				e.ID, e.Kind, e.JobID, e.Time = strconv.FormatInt(id, 10), c.Kind, c.JobID, e.Time.UTC()
				return nil
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
		next := s.balance.Add(delta)
		if next.IsNegative() {
			return overdraft(s.balance, c.Amount)
		}
		e = Entry{Kind: c.Kind, Amount: httpapi.Num(delta), Balance: httpapi.Num(next), JobID: c.JobID, Time: at}
		if !delta.IsZero() {
			var id int64
			if err := tx.QueryRow(ctx, insertEntry, userID, string(c.Kind), delta, next, c.JobID, at).Scan(&id); err != nil {
				return err
			}
			e.ID = strconv.FormatInt(id, 10)
			if err := tx.QueryRow(ctx, `UPDATE wallets SET balance = $2, version = version + 1 WHERE user_id = $1 RETURNING version`,
				userID, next).Scan(&s.version); err != nil {
				return err
			}
			s.balance = next
		}
		if rows != nil {
			return rows(ctx, tx)
		}
		return nil
	})
	if _, refused := errs.As(err); err != nil && !refused {
		err = unavailable(err)
	}
	return e, s, err
}

// ledger is one page of entries, newest first, with IDs below cursor (empty: from the
// newest).
func (r record) ledger(ctx context.Context, userID, cursor string, limit int) ([]Entry, error) {
	before := int64(1<<63 - 1)
	if cursor != "" {
		n, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil || n <= 0 {
			return nil, errs.New(errs.InvalidParameter, "cursor %q is not a ledger cursor", cursor)
		}
		before = n
	}
	rows, err := r.db.Query(ctx, `SELECT id, kind, amount, balance, job_id, at FROM wallet_ledger
		WHERE user_id = $1 AND id < $2 ORDER BY id DESC LIMIT $3`, userID, before, limit)
	if err != nil {
		return nil, unavailable(err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Entry, error) {
		var e Entry
		var id int64
		var kind string
		err := row.Scan(&id, &kind, &e.Amount, &e.Balance, &e.JobID, &e.Time)
		e.ID, e.Kind, e.Time = strconv.FormatInt(id, 10), Kind(kind), e.Time.UTC()
		return e, err
	})
	if err != nil {
		return nil, unavailable(err)
	}
	return out, nil
}

// backfill writes a wallet that exists in Redis only (made before PostgreSQL held
// wallets): its balance and its ledger, oldest first, in one transaction, unless the record
// has the wallet already. It reports whether it wrote.
func (r record) backfill(ctx context.Context, userID string, balance decimal.Decimal, oldestFirst []Entry) (bool, error) {
	wrote := false
	err := pgx.BeginFunc(ctx, r.db, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `INSERT INTO wallets (user_id, balance, version) VALUES ($1, $2, 1) ON CONFLICT DO NOTHING`,
			userID, balance)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		wrote = true
		for _, e := range oldestFirst {
			if _, err := tx.Exec(ctx, `INSERT INTO wallet_ledger (user_id, kind, amount, balance, job_id, at)
				VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING`,
				userID, string(e.Kind), e.Amount, e.Balance, e.JobID, e.Time); err != nil {
				return err
			}
		}
		return nil
	})
	return wrote, err
}
