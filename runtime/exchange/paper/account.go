// Package paper is the simulated exchange. This file holds paper account balances in Redis:
// the PaperAccount controller initialises and refills them; the executor trades on them.
package paper

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

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
	ID             string
	Owner          string
	Currency       string
	InitialBalance decimal.Decimal
	FeeRate        decimal.Decimal
}

// State is a paper account as it stands.
type State struct {
	Balance decimal.Decimal
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

// Accounts keeps paper balances in Redis.
type Accounts struct{ rdb redis.UniversalClient }

// NewAccounts returns Accounts on rdb.
func NewAccounts(rdb redis.UniversalClient) *Accounts { return &Accounts{rdb: rdb} }

// Ensure creates the account with its initial balance if it does not exist, and updates
// its settings. It never touches the balance of an existing account: that is live money
// state, changed only by trades and refills.
func (a *Accounts) Ensure(ctx context.Context, c Config) (State, error) {
	key := store.PaperAccount(c.ID)
	_, err := a.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSetNX(ctx, key, fieldBalance, c.InitialBalance.String())
		p.HSet(ctx, key, fieldInitial, c.InitialBalance.String(), fieldCurrency, c.Currency,
			fieldFeeRate, c.FeeRate.String(), fieldOwner, c.Owner)
		return nil
	})
	if err != nil {
		return State{}, err
	}
	return a.Get(ctx, c.ID)
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
		if !st.LastRefillAt.IsZero() {
			if next := st.LastRefillAt.Add(RefillCooldown); now.Before(next) {
				return &CooldownError{NextAllowed: next}
			}
		}
		_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
			p.HSet(ctx, key, fieldBalance, st.InitialBalance.String(),
				fieldLastRefillAt, strconv.FormatInt(now.UnixMilli(), 10))
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

// Delete removes an account's runtime state: the balance and the paper exchange's orders,
// holdings and positions on it.
func (a *Accounts) Delete(ctx context.Context, id string) error {
	return a.rdb.Del(ctx, store.PaperAccount(id), store.PaperOrders(id), store.PaperPositions(id)).Err()
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
