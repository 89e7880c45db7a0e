// Package paper is the simulated exchange. This file holds paper account balances in Redis:
// the PaperAccount controller initialises and refills them; the executor trades on them.
package paper

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/owners"
	"github.com/sigops/sigops/runtime/store"
)

// RefillCooldown is the spec's minimum time between two refills.
const RefillCooldown = 24 * time.Hour

const (
	fieldBalance      = "balance"
	fieldInitial      = "initialBalance"
	fieldCurrency     = "currency"
	fieldFeeRate      = "feeRate"
	fieldOwner        = "owner"
	fieldLastRefillAt = "lastRefillAt"
	fieldNamespace    = "namespace"
	fieldName         = "name"
)

// ErrNotFound: the account has not been initialised.
var ErrNotFound = errors.New("paper account not initialised")

// CooldownError refuses a refill inside the cooldown and says when one is allowed.
type CooldownError struct{ NextAllowed time.Time }

func (e *CooldownError) Error() string {
	return "refill allowed after " + e.NextAllowed.UTC().Format(time.RFC3339)
}

// Config is a paper account as declared.
type Config struct {
	ID string
	// Namespace and Name are the PaperAccount's, shown in listings.
	Namespace, Name string
	Owner           string
	Currency        string
	InitialBalance  decimal.Decimal
	FeeRate         decimal.Decimal
}

// State is a paper account as it stands.
type State struct {
	// Namespace and Name are the PaperAccount's (empty until the controller's first write
	// that carries them).
	Namespace, Name string
	Balance         decimal.Decimal
	// Equity is the balance plus the futures margin reserved by open positions (their
	// value at entry). Spot holdings and unrealised PnL need market prices and are not in
	// it; the executor's book values them.
	Equity decimal.Decimal
	// Margin is the futures initial margin reserved by open positions.
	Margin decimal.Decimal
	// Owner is the owner's email (lower-cased by the controller).
	Owner string
	// FeeRate is the simulated fee rate, maker and taker alike.
	FeeRate        decimal.Decimal
	InitialBalance decimal.Decimal
	Currency       string
	// LastRefillAt is zero when the account was never refilled.
	LastRefillAt time.Time
}

// NextRefillAt is when a refill of the account is next allowed: now when it already is
// (never refilled, or the cooldown is over), else RefillCooldown after the last refill.
func (s State) NextRefillAt(now time.Time) time.Time {
	if next := s.LastRefillAt.Add(RefillCooldown); !s.LastRefillAt.IsZero() && next.After(now) {
		return next
	}
	return now
}

// Accounts keeps paper balances in Redis, with the index of each owner's accounts
// (store.OwnerPaperAccounts).
type Accounts struct {
	rdb    redis.UniversalClient
	owners owners.Index
}

// NewAccounts returns Accounts on rdb.
func NewAccounts(rdb redis.UniversalClient) *Accounts {
	return &Accounts{rdb: rdb, owners: owners.New(rdb, store.OwnerPaperAccounts, fieldOwner)}
}

// Ensure creates the account with its initial balance if it does not exist, and updates
// its settings and its owner's index. It never touches the balance of an existing account:
// that is live money state, changed only by trades and refills.
func (a *Accounts) Ensure(ctx context.Context, c Config) (State, error) {
	key := store.PaperAccount(c.ID)
	if err := a.owners.Before(ctx, key, c.ID, c.Owner); err != nil {
		return State{}, err
	}
	_, err := a.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		a.owners.StageNote(ctx, p, key, c.Owner)
		p.HSetNX(ctx, key, fieldBalance, c.InitialBalance.String())
		p.HSet(ctx, key, fieldInitial, c.InitialBalance.String(), fieldCurrency, c.Currency,
			fieldFeeRate, c.FeeRate.String(), fieldOwner, c.Owner, fieldNamespace, c.Namespace, fieldName, c.Name)
		return nil
	})
	if err != nil {
		return State{}, err
	}
	if err := a.owners.After(ctx, key, c.ID, c.Owner); err != nil {
		return State{}, err
	}
	// Listed for the archiver of the account's partition, which sweeps its changes.
	if err := a.rdb.SAdd(ctx, store.PaperAccountsOf(store.PartitionOf(c.ID)), c.ID).Err(); err != nil {
		return State{}, err
	}
	return a.Get(ctx, c.ID)
}

// Account is a paper account listed by ListByOwner.
type Account struct {
	ID string
	State
}

// ListByOwner lists the owner's paper accounts, by ID. An index entry whose account is
// gone or names another owner (a change of owner in progress) is left out.
func (a *Accounts) ListByOwner(ctx context.Context, owner string) ([]Account, error) {
	ids, err := a.owners.IDs(ctx, owner)
	if err != nil {
		return nil, err
	}
	slices.Sort(ids)
	reads := make([]func() (State, error), len(ids))
	if _, err := a.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			reads[i] = ReadAccountLater(ctx, p, id)
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([]Account, 0, len(ids))
	for i, id := range ids {
		st, err := reads[i]()
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if emails.Same(st.Owner, owner) {
			out = append(out, Account{ID: id, State: st})
		}
	}
	return out, nil
}

// Get reads an account.
func (a *Accounts) Get(ctx context.Context, id string) (State, error) {
	return ReadAccountLater(ctx, a.rdb, id)()
}

// ReadAccountLater queues Get's read on c (a pipeline) and returns the decoder to call once
// the pipeline has run, so that the read can share a round trip with others.
func ReadAccountLater(ctx context.Context, c redis.Cmdable, id string) func() (State, error) {
	cmd := c.HGetAll(ctx, store.PaperAccount(id))
	return func() (State, error) {
		v, err := cmd.Result()
		if err != nil {
			return State{}, err
		}
		return parseState(id, v)
	}
}

// Refill resets the balance to the initial balance if the last refill is at least
// RefillCooldown before now; otherwise it returns a *CooldownError. The check and the reset
// are one transaction, so two managers cannot both refill.
func (a *Accounts) Refill(ctx context.Context, id string, now time.Time) (State, error) {
	return a.refill(ctx, id, "", now)
}

// RefillOwned is Refill of one of owner's accounts: an account of another owner answers
// ErrNotFound, as a missing one does, from the read the refill's transaction watches.
func (a *Accounts) RefillOwned(ctx context.Context, id, owner string, now time.Time) (State, error) {
	if owner == "" {
		return State{}, ErrNotFound
	}
	return a.refill(ctx, id, owner, now)
}

// refill is Refill, of owner's account only when owner is set.
func (a *Accounts) refill(ctx context.Context, id, owner string, now time.Time) (State, error) {
	key := store.PaperAccount(id)
	var out State
	txf := func(tx *redis.Tx) error {
		v, err := tx.HGetAll(ctx, key).Result()
		if err != nil {
			return err
		}
		st, err := parseState(id, v)
		if err != nil {
			return err
		}
		if owner != "" && !emails.Same(st.Owner, owner) {
			return ErrNotFound
		}
		if !st.LastRefillAt.IsZero() {
			if next := st.LastRefillAt.Add(RefillCooldown); now.Before(next) {
				return &CooldownError{NextAllowed: next}
			}
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			refillScript.Eval(ctx, p, []string{key, store.PaperArchive(id)}, st.InitialBalance.String(),
				strconv.FormatInt(now.UnixMilli(), 10))
			return nil
		})
		st.Balance, st.Equity, st.LastRefillAt = st.InitialBalance, st.InitialBalance.Add(st.Margin), time.UnixMilli(now.UnixMilli())
		out = st
		return err
	}
	for i := 0; i < 10; i++ {
		err := a.rdb.Watch(ctx, txf, key)
		if !errors.Is(err, redis.TxFailedErr) {
			return out, err
		}
	}
	return State{}, fmt.Errorf("refill %s: too much contention", id)
}

// Delete removes an account's runtime state: its owner's index entry, then the balance and
// the paper exchange's holdings and positions on it, its archive stream, the orders hash of
// the layout before per-order keys, and (through the archive) its record in PostgreSQL.
// Each order's own key is left to expire (OrderTTL()): finding them would mean scanning the
// keyspace, and the account's ID, a Kubernetes UID, is never reused, so nothing reads
// them again.
func (a *Accounts) Delete(ctx context.Context, id string) error {
	if err := a.owners.Remove(ctx, store.PaperAccount(id), id); err != nil {
		return err
	}
	if err := a.rdb.Del(ctx, store.PaperAccount(id), store.PaperOrders(id), store.PaperPositions(id),
		store.PaperArchive(id)).Err(); err != nil {
		return err
	}
	// Its record in PostgreSQL goes too, through the archive of its partition.
	part := store.PartitionOf(id)
	if err := a.rdb.XAdd(ctx, &redis.XAddArgs{Stream: store.Archive(part),
		Values: []any{"k", store.ArchivePaperGone, "v", id}}).Err(); err != nil {
		return err
	}
	return a.rdb.SRem(ctx, store.PaperAccountsOf(part), id).Err()
}

func parseState(id string, v map[string]string) (State, error) {
	if len(v) == 0 {
		return State{}, ErrNotFound
	}
	var st State
	var err error
	if st.Balance, err = decimal.NewFromString(v[fieldBalance]); err != nil {
		return State{}, fmt.Errorf("paper account %s: corrupt balance: %w", id, err)
	}
	if st.InitialBalance, err = decimal.NewFromString(v[fieldInitial]); err != nil {
		return State{}, fmt.Errorf("paper account %s: corrupt initial balance: %w", id, err)
	}
	if st.Margin, err = decOf(v[fieldMargin]); err != nil {
		return State{}, fmt.Errorf("paper account %s: corrupt margin: %w", id, err)
	}
	st.Equity = st.Balance.Add(st.Margin)
	st.Currency = v[fieldCurrency]
	st.Namespace, st.Name = v[fieldNamespace], v[fieldName]
	st.Owner = v[fieldOwner]
	st.FeeRate = DefaultFeeRate
	if fr := v[fieldFeeRate]; fr != "" {
		if st.FeeRate, err = decimal.NewFromString(fr); err != nil {
			return State{}, fmt.Errorf("paper account %s: corrupt feeRate: %w", id, err)
		}
	}
	if ms := v[fieldLastRefillAt]; ms != "" {
		n, err := strconv.ParseInt(ms, 10, 64)
		if err != nil {
			return State{}, fmt.Errorf("paper account %s: corrupt lastRefillAt: %w", id, err)
		}
		st.LastRefillAt = time.UnixMilli(n)
	}
	return st, nil
}

// Holdings are what the paper exchange holds for an account's bots besides the quote
// balance, as its fills wrote them.
type Holdings struct {
	// Spot is the spot holding of each base asset, summed over the account's bots.
	Spot map[string]decimal.Decimal
	// Futures are the open futures positions, one per bot (Scope) and symbol, by bot then
	// symbol.
	Futures []HeldFutures
}

// HeldFutures is one bot's futures position at the paper exchange.
type HeldFutures struct {
	Scope, Symbol string
	FuturesPosition
}

// Holdings reads the account's spot holdings and futures positions (one read).
func (a *Accounts) Holdings(ctx context.Context, id string) (Holdings, error) {
	v, err := a.rdb.HGetAll(ctx, store.PaperPositions(id)).Result()
	if err != nil {
		return Holdings{}, err
	}
	out := Holdings{Spot: map[string]decimal.Decimal{}}
	for field, val := range v {
		kind, rest, _ := strings.Cut(field, "|")
		i := strings.LastIndexByte(rest, '|')
		if i < 0 {
			return Holdings{}, fmt.Errorf("paper holdings of %s: corrupt field %q", id, field)
		}
		scope, name := rest[:i], rest[i+1:]
		switch kind {
		case spotKind:
			amount, err := decimal.NewFromString(val)
			if err != nil {
				return Holdings{}, fmt.Errorf("paper holding %s of %s: corrupt: %w", name, id, err)
			}
			out.Spot[name] = out.Spot[name].Add(amount)
		case futKind:
			h := HeldFutures{Scope: scope, Symbol: name}
			if err := json.Unmarshal([]byte(val), &h.FuturesPosition); err != nil {
				return Holdings{}, fmt.Errorf("paper position %s of %s: corrupt: %w", name, id, err)
			}
			out.Futures = append(out.Futures, h)
		default:
			return Holdings{}, fmt.Errorf("paper holdings of %s: corrupt field %q", id, field)
		}
	}
	slices.SortFunc(out.Futures, func(x, y HeldFutures) int {
		return cmp.Or(strings.Compare(x.Scope, y.Scope), strings.Compare(x.Symbol, y.Symbol))
	})
	return out, nil
}
