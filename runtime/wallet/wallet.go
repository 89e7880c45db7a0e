// Package wallet owns a user's Strategy Lab wallet: the balance in USD and the ledger of
// every movement (top-up, debit, refund, opening balance).
//
// With a database (Options.DB), PostgreSQL is the wallet's record (record.go): every change
// is one transaction under the wallet's row lock, in which the caller's rows (a debit's
// job) commit too, and Redis holds a versioned cache of the balance (store.WalletCache) so
// that reading a balance costs no database round trip and keeps working while PostgreSQL
// is down. The caller's Redis writes (the job record, its dispatch entry) follow the commit
// with the cache; a failure there is a StageError, and the caller's outbox (the Strategy
// Lab's lab_jobs) or its retry finishes them.
//
// Without a database the wallet lives in Redis only, in the slot of the user's queue
// partition (store.Wallet, store.WalletLedger): every change is an optimistic transaction
// (WATCH the balance, MULTI: the new balance, its ledger entry and the caller's writes,
// whose keys must carry the same partition tag, runtime/store keys_lab.go). Either way the
// arithmetic is Go's or NUMERIC's decimals, never Lua or floating-point numbers.
package wallet

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/store"
)

// Kind is what moved money in or out of a wallet.
type Kind string

// Ledger entry kinds.
const (
	// Opening is the balance an account was created (or migrated) with.
	Opening Kind = "opening"
	// TopUp is an administrator's credit (authd users credit-wallet).
	TopUp Kind = "top_up"
	// Debit is a charge (a Strategy Lab job when it is queued).
	Debit Kind = "debit"
	// Refund gives back a charge's unused part (a job's failed experiments).
	Refund Kind = "refund"
)

// Entry is one ledger entry.
type Entry struct {
	// ID is the entry's stream ID, also the cursor of Ledger's next page.
	ID   string `json:"id"`
	Kind Kind   `json:"kind"`
	// Amount is the change: positive for an opening balance, a top-up or a refund, negative
	// for a debit.
	Amount httpapi.Number `json:"amount"`
	// Balance is the balance after this entry.
	Balance httpapi.Number `json:"balance"`
	// JobID is the Strategy Lab job a debit or refund belongs to; empty otherwise.
	JobID string    `json:"jobId,omitempty"`
	Time  time.Time `json:"time"`
}

// Ledger stream fields.
const (
	fKind    = "kind"
	fAmount  = "amount"
	fBalance = "balance"
	fJob     = "job"
	fAt      = "at"
)

// ErrUserRequired: an empty user ID.
var ErrUserRequired = errors.New("wallet: user ID required")

// ErrContention: the balance changed under every attempt of a transaction.
var ErrContention = errors.New("wallet: too much contention, try again")

// maxAttempts bounds the retries of an optimistic transaction whose balance moved meanwhile.
const maxAttempts = 32

// Wallets reads and changes wallets.
type Wallets struct {
	rdb redis.UniversalClient
	now func() time.Time
	// record is PostgreSQL's wallets (nil without a database: Redis is the store).
	record *record
}

// Options configure Wallets.
type Options struct {
	// Now is the clock of ledger entries (nil: time.Now).
	Now func() time.Time
	// DB, when set, is PostgreSQL, the wallets' record; Redis then caches balances.
	DB *pgxpool.Pool
}

// New returns the wallets: in PostgreSQL with o.DB, in rdb otherwise.
func New(rdb redis.UniversalClient, o Options) *Wallets {
	if o.Now == nil {
		o.Now = time.Now
	}
	w := &Wallets{rdb: rdb, now: o.Now}
	if o.DB != nil {
		w.record = &record{db: o.DB}
	}
	return w
}

// Recorded reports whether PostgreSQL is the wallets' record.
func (w *Wallets) Recorded() bool { return w.record != nil }

// DB is the wallets' record (nil: Redis alone), for what must share it: the Strategy Lab's
// job outbox is written in the transaction of the charge that paid for the job.
func (w *Wallets) DB() *pgxpool.Pool {
	if w.record == nil {
		return nil
	}
	return w.record.db
}

// Balance is a user's balance; a wallet never written is 0.
func (w *Wallets) Balance(ctx context.Context, userID string) (decimal.Decimal, error) {
	if userID == "" {
		return decimal.Decimal{}, ErrUserRequired
	}
	if w.record != nil {
		return w.cachedBalance(ctx, userID)
	}
	s, err := w.rdb.Get(ctx, store.Wallet(userID)).Result()
	if errors.Is(err, redis.Nil) {
		return decimal.Zero, nil
	}
	if err != nil {
		return decimal.Decimal{}, err
	}
	return parse(userID, s)
}

// Balances reads several users' balances in one pipeline (a Cluster client splits it by
// slot), in the order of ids.
func (w *Wallets) Balances(ctx context.Context, ids []string) ([]decimal.Decimal, error) {
	if w.record != nil {
		return w.cachedBalances(ctx, ids)
	}
	cmds := make([]*redis.StringCmd, len(ids))
	if _, err := w.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.Get(ctx, store.Wallet(id))
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([]decimal.Decimal, len(ids))
	for i, c := range cmds {
		s, err := c.Result()
		if errors.Is(err, redis.Nil) {
			out[i] = decimal.Zero
			continue
		}
		if err != nil {
			return nil, err
		}
		if out[i], err = parse(ids[i], s); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func parse(userID, s string) (decimal.Decimal, error) {
	d, err := decimal.NewFromString(s)
	if err != nil {
		return decimal.Decimal{}, fmt.Errorf("wallet of user %s is corrupt: %q", userID, s)
	}
	return d, nil
}

// Open sets a new account's opening balance, with an Opening ledger entry, unless the
// wallet exists already (SET NX): creating an account, or migrating one, twice changes
// nothing. A zero amount writes the balance and no entry.
func (w *Wallets) Open(ctx context.Context, userID string, amount decimal.Decimal) (created bool, err error) {
	if userID == "" {
		return false, ErrUserRequired
	}
	if amount.IsNegative() {
		return false, errors.New("wallet: an opening balance cannot be negative")
	}
	if w.record != nil {
		created, s, err := w.record.open(ctx, userID, amount, w.now().UTC())
		if err != nil || !created {
			return created, err
		}
		// The cache is a convenience: a failure here leaves a miss, which reads the record.
		_ = w.refresh(ctx, userID, s)
		return true, nil
	}
	key := store.Wallet(userID)
	err = w.transact(ctx, key, func(tx *redis.Tx) error {
		n, err := tx.Exists(ctx, key).Result()
		if err != nil || n > 0 {
			return err
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.Set(ctx, key, amount.String(), 0)
			if !amount.IsZero() {
				w.stageEntry(ctx, p, userID, Opening, amount, amount, "", w.now())
			}
			return nil
		})
		created = err == nil
		return err
	})
	return created, err
}

// Credit adds a positive amount (an administrator's top-up) and returns the balance.
func (w *Wallets) Credit(ctx context.Context, userID string, amount decimal.Decimal) (decimal.Decimal, error) {
	if !amount.IsPositive() {
		return decimal.Decimal{}, errors.New("wallet: a credit must be positive")
	}
	e, err := w.Apply(ctx, userID, Change{Kind: TopUp, Amount: amount}, nil)
	if errors.As(err, new(*StageError)) {
		return e.Balance.Decimal, nil // committed; only the cache missed it, and its TTL bounds that
	}
	return e.Balance.Decimal, err
}

// Change is one movement: Amount is positive; Kind says its direction (Debit takes it away,
// every other kind adds it).
type Change struct {
	Kind   Kind
	Amount decimal.Decimal
	JobID  string
}

// With is a caller's part of Apply's transaction. Its keys must be in the wallet's slot
// (the user's partition tag).
type With struct {
	// Watch are further keys watched with the balance (with a database: watched around the
	// record's transaction, which a retry must find already made, so a change with Watch or
	// Check carries a JobID).
	Watch []string
	// Check runs after WATCH, before the balance is read: it reads what it needs through
	// tx and returns an error to abort (nothing is written), or ErrSkip to write nothing
	// and report success.
	Check func(ctx context.Context, tx *redis.Tx) error
	// Record writes the caller's rows in the record's transaction (with a database only).
	Record func(ctx context.Context, tx pgx.Tx) error
	// Stage queues the caller's writes into the MULTI, after the balance and the ledger
	// entry; balance is the balance after the change. With a database the MULTI follows
	// the record's commit.
	Stage func(ctx context.Context, p redis.Pipeliner, balance decimal.Decimal) error
}

// StageError is Apply's answer when the record committed the change but the Redis part
// after it (the balance cache, the caller's Stage) failed: the money moved, and the
// caller finishes its Redis writes another way (an outbox, a retry that finds the change
// made).
type StageError struct {
	Err error
}

func (e *StageError) Error() string {
	return "wallet: the change is committed; its Redis part failed: " + e.Err.Error()
}

func (e *StageError) Unwrap() error { return e.Err }

// overdraft is the refusal of a debit above the balance.
func overdraft(balance, required decimal.Decimal) error {
	return errs.New(errs.InsufficientBalance, "the Strategy Lab wallet holds %s USD; %s USD is required",
		balance.StringFixed(2), required.StringFixed(2)).WithDetails(map[string]any{
		"required": required.StringFixed(2), "balance": balance.StringFixed(2)})
}

// ErrSkip, returned by With.Check, ends Apply without writing and without an error.
var ErrSkip = errors.New("wallet: nothing to do")

// Apply makes one change with its ledger entry, and the caller's writes, in one optimistic
// transaction, retried while the watched keys move. A debit larger than the balance is
// refused with INSUFFICIENT_BALANCE (details: required, balance) and nothing is written.
// A zero Amount writes no balance and no entry, only the caller's part. The returned
// entry has no ID (the stream assigns it at EXEC); after ErrSkip it is the zero Entry.
func (w *Wallets) Apply(ctx context.Context, userID string, c Change, with *With) (Entry, error) {
	if userID == "" {
		return Entry{}, ErrUserRequired
	}
	if c.Amount.IsNegative() {
		return Entry{}, errors.New("wallet: a change's amount is positive; its kind gives the direction")
	}
	if with == nil {
		with = &With{}
	}
	if w.record != nil {
		return w.applyRecorded(ctx, userID, c, with)
	}
	key := store.Wallet(userID)
	delta := c.Amount
	if c.Kind == Debit {
		delta = delta.Neg()
	}
	var out Entry
	err := w.transact(ctx, key, func(tx *redis.Tx) error {
		if with.Check != nil {
			if err := with.Check(ctx, tx); err != nil {
				return err
			}
		}
		s, err := tx.Get(ctx, key).Result()
		if errors.Is(err, redis.Nil) {
			s, err = "0", nil
		}
		if err != nil {
			return err
		}
		cur, err := parse(userID, s)
		if err != nil {
			return err
		}
		next := cur.Add(delta)
		if next.IsNegative() {
			return overdraft(cur, c.Amount)
		}
		now := w.now().UTC()
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			if !delta.IsZero() {
				p.Set(ctx, key, next.String(), 0)
				w.stageEntry(ctx, p, userID, c.Kind, delta, next, c.JobID, now)
			}
			if with.Stage != nil {
				return with.Stage(ctx, p, next)
			}
			return nil
		})
		if err == nil {
			out = Entry{Kind: c.Kind, Amount: httpapi.Num(delta), Balance: httpapi.Num(next), JobID: c.JobID, Time: now}
		}
		return err
	}, with.Watch...)
	if errors.Is(err, ErrSkip) {
		return Entry{}, nil
	}
	return out, err
}

func (w *Wallets) stageEntry(ctx context.Context, p redis.Pipeliner, userID string, k Kind, amount, balance decimal.Decimal, job string, at time.Time) {
	p.XAdd(ctx, &redis.XAddArgs{Stream: store.WalletLedger(userID), Values: []any{
		fKind, string(k), fAmount, amount.String(), fBalance, balance.String(), fJob, job,
		fAt, strconv.FormatInt(at.UnixMilli(), 10)}})
}

// transact runs fn under WATCH of key and more, again while a watched key moved.
func (w *Wallets) transact(ctx context.Context, key string, fn func(*redis.Tx) error, more ...string) error {
	keys := append([]string{key}, more...)
	for range maxAttempts {
		err := w.rdb.Watch(ctx, fn, keys...)
		if !errors.Is(err, redis.TxFailedErr) {
			return err
		}
	}
	return ErrContention
}

// MaxLedgerPage bounds one page of Ledger.
const MaxLedgerPage = 200

// Ledger lists a user's entries newest first, up to limit (1 to MaxLedgerPage; 0: 50),
// after cursor (an entry ID from the previous page; empty: from the newest). next is the
// cursor of the following page, empty at the end.
func (w *Wallets) Ledger(ctx context.Context, userID, cursor string, limit int) (entries []Entry, next string, err error) {
	if userID == "" {
		return nil, "", ErrUserRequired
	}
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, MaxLedgerPage)
	if w.record != nil {
		entries, err := w.record.ledger(ctx, userID, cursor, limit+1)
		if err != nil {
			return nil, "", err
		}
		if len(entries) > limit {
			entries = entries[:limit]
			next = entries[limit-1].ID
		}
		return entries, next, nil
	}
	start := "+"
	if cursor != "" {
		start = "(" + cursor
	}
	msgs, err := w.rdb.XRevRangeN(ctx, store.WalletLedger(userID), start, "-", int64(limit+1)).Result()
	if err != nil {
		if cursor != "" && isBadID(err) {
			return nil, "", errs.New(errs.InvalidParameter, "cursor %q is not a ledger cursor", cursor)
		}
		return nil, "", err
	}
	if len(msgs) > limit {
		msgs = msgs[:limit]
		next = msgs[limit-1].ID
	}
	entries = make([]Entry, 0, len(msgs))
	for _, m := range msgs {
		e, err := decodeEntry(m)
		if err != nil {
			return nil, "", fmt.Errorf("ledger of user %s, entry %s: %w", userID, m.ID, err)
		}
		entries = append(entries, e)
	}
	return entries, next, nil
}

func isBadID(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}

func decodeEntry(m redis.XMessage) (Entry, error) {
	str := func(k string) string { s, _ := m.Values[k].(string); return s }
	amount, err := decimal.NewFromString(str(fAmount))
	if err != nil {
		return Entry{}, err
	}
	bal, err := decimal.NewFromString(str(fBalance))
	if err != nil {
		return Entry{}, err
	}
	ms, err := strconv.ParseInt(str(fAt), 10, 64)
	if err != nil {
		return Entry{}, err
	}
	return Entry{ID: m.ID, Kind: Kind(str(fKind)), Amount: httpapi.Num(amount), Balance: httpapi.Num(bal), JobID: str(fJob),
		Time: time.UnixMilli(ms).UTC()}, nil
}
