package wallet

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/store"
)

// CacheTTL bounds how long a cached balance outlives the write that set it. Every change
// refreshes the cache after its commit; the TTL bounds the only way it can be wrong (a
// refresh that failed after a commit) and keeps idle users' balances out of Redis.
const CacheTTL = 10 * time.Minute

// setIfNewer keeps the highest version in the cache: two writers whose commits were
// ordered one way but whose refreshes arrive the other way leave the newer balance.
// KEYS[1] cache; ARGV: version, balance, TTL in ms.
var setIfNewer = redis.NewScript(`
local cur = redis.call('GET', KEYS[1])
if cur then
  local v = tonumber(string.match(cur, '^(%d+) '))
  if v and v >= tonumber(ARGV[1]) then return 0 end
end
redis.call('SET', KEYS[1], ARGV[1] .. ' ' .. ARGV[2], 'PX', ARGV[3])
return 1`)

func cacheArgs(s state) []any {
	return []any{strconv.FormatInt(s.version, 10), s.balance.String(), CacheTTL.Milliseconds()}
}

// refresh writes s to the cache unless it holds a newer version.
func (w *Wallets) refresh(ctx context.Context, userID string, s state) error {
	return setIfNewer.Run(ctx, w.rdb, []string{store.WalletCache(userID)}, cacheArgs(s)...).Err()
}

// stageCache queues refresh into a MULTI (EVAL: a MULTI cannot retry a missing EVALSHA).
func (w *Wallets) stageCache(ctx context.Context, p redis.Pipeliner, userID string, s state) {
	setIfNewer.Eval(ctx, p, []string{store.WalletCache(userID)}, cacheArgs(s)...)
}

// decodeCached reads a cache value "<version> <balance>"; ok is false for anything else.
func decodeCached(v string) (decimal.Decimal, bool) {
	_, bal, found := strings.Cut(v, " ")
	if !found {
		return decimal.Decimal{}, false
	}
	d, err := decimal.NewFromString(bal)
	return d, err == nil
}

// cachedBalance reads the cache, or on a miss the record, and caches what it read.
func (w *Wallets) cachedBalance(ctx context.Context, userID string) (decimal.Decimal, error) {
	v, err := w.rdb.Get(ctx, store.WalletCache(userID)).Result()
	if err != nil && !errors.Is(err, redis.Nil) {
		return decimal.Decimal{}, err
	}
	if d, ok := decodeCached(v); ok {
		return d, nil
	}
	return w.recall(ctx, userID)
}

func (w *Wallets) recall(ctx context.Context, userID string) (decimal.Decimal, error) {
	s, err := w.adopt(ctx, userID)
	if err != nil {
		return decimal.Decimal{}, err
	}
	if err := w.refresh(ctx, userID, s); err != nil {
		return decimal.Decimal{}, err
	}
	return s.balance, nil
}

// adopt reads a wallet's committed state; a wallet the record does not have but Redis
// does (made before the service had a database, and not yet copied by Backfill) is copied
// first, so that an upgrade never charges or shows a wallet from 0.
func (w *Wallets) adopt(ctx context.Context, userID string) (state, error) {
	s, found, err := w.record.read(ctx, userID)
	if err != nil || found {
		return s, err
	}
	n, err := w.Backfill(ctx, []string{userID})
	if err != nil || n == 0 {
		return s, err
	}
	s, _, err = w.record.read(ctx, userID)
	return s, err
}

// cachedBalances is Balances with a database: one pipeline for the cache, the record for
// each miss.
func (w *Wallets) cachedBalances(ctx context.Context, ids []string) ([]decimal.Decimal, error) {
	cmds := make([]*redis.StringCmd, len(ids))
	if _, err := w.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			cmds[i] = p.Get(ctx, store.WalletCache(id))
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([]decimal.Decimal, len(ids))
	for i, c := range cmds {
		d, ok := decodeCached(c.Val())
		if !ok {
			var err error
			if d, err = w.recall(ctx, ids[i]); err != nil {
				return nil, err
			}
		}
		out[i] = d
	}
	return out, nil
}

// applyRecorded is Apply with a database: the record's transaction (under WATCH of the
// caller's keys and after its Check, when it has them), then one MULTI with the cache
// refresh and the caller's Stage.
func (w *Wallets) applyRecorded(ctx context.Context, userID string, c Change, with *With) (Entry, error) {
	if _, err := w.adopt(ctx, userID); err != nil {
		return Entry{}, err
	}
	now := w.now().UTC()
	var out Entry
	committed := false
	attempt := func(tx *redis.Tx) error {
		if with.Check != nil {
			if err := with.Check(ctx, tx); err != nil {
				return err
			}
		}
		e, s, err := w.record.apply(ctx, userID, c, now, with.Record)
		if err != nil {
			return err
		}
		out, committed = e, true
		stage := func(p redis.Pipeliner) error {
			w.stageCache(ctx, p, userID, s)
			if with.Stage != nil {
				return with.Stage(ctx, p, s.balance)
			}
			return nil
		}
		if tx != nil {
			_, err = tx.TxPipelined(ctx, stage)
		} else {
			_, err = w.rdb.TxPipelined(ctx, stage)
		}
		if err != nil && !errors.Is(err, redis.TxFailedErr) {
			// The caller's part failed; the balance it paid with is still cached, if Redis
			// takes it.
			_ = w.refresh(ctx, userID, s)
		}
		return err
	}
	var err error
	if len(with.Watch) == 0 && with.Check == nil {
		err = attempt(nil)
	} else {
		err = w.transact(ctx, with.Watch[0], attempt, with.Watch[1:]...)
	}
	switch {
	case errors.Is(err, ErrSkip):
		return Entry{}, nil
	case err != nil && committed:
		return out, &StageError{Err: err}
	}
	return out, err
}

// Backfill copies into the record every wallet of ids that Redis holds and the record does
// not (wallets made before the service had a database), with its ledger; a wallet the
// record has is left alone, so running it again writes nothing. It returns how many it
// copied. Without a database it does nothing.
func (w *Wallets) Backfill(ctx context.Context, ids []string) (int, error) {
	if w.record == nil {
		return 0, nil
	}
	n := 0
	for _, id := range ids {
		s, err := w.rdb.Get(ctx, store.Wallet(id)).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return n, err
		}
		bal, err := parse(id, s)
		if err != nil {
			return n, err
		}
		msgs, err := w.rdb.XRange(ctx, store.WalletLedger(id), "-", "+").Result()
		if err != nil {
			return n, err
		}
		entries := make([]Entry, 0, len(msgs))
		for _, m := range msgs {
			e, err := decodeEntry(m)
			if err != nil {
				return n, err
			}
			entries = append(entries, e)
		}
		wrote, err := w.record.backfill(ctx, id, bal, entries)
		if err != nil {
			return n, err
		}
		if wrote {
			n++
			// A balance read before the copy cached 0 at version 0; this one is newer.
			if err := w.refresh(ctx, id, state{balance: bal, version: 1}); err != nil {
				return n, err
			}
		}
	}
	return n, nil
}
