package paper

import (
	"context"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
)

// drainBatch is how many orders one step of DrainOrders moves.
const drainBatch = 500

// DrainOrders empties accountID's orders hash of the layout before per-order keys
// (store.PaperOrders): each order moves to its own key (store.PaperOrder) with what is
// left of DefaultOrderTTL since it was created, one older than that is dropped, and the hash is
// gone once empty. An order key that exists already is kept (SET NX). Each batch is one
// MULTI on the account's slot (the keys and the HDELs together), so a fill script, which
// reads the key and then the hash, sees every order in one place or the other: the drain
// runs with the executors up. With dry it only counts, and hash may name the account's
// orders hash as the key migration finds it before its rename (otherwise it is
// store.PaperOrders(accountID)). moved counts orders given their own key (or kept there),
// dropped the expired ones.
func DrainOrders(ctx context.Context, rdb redis.UniversalClient, accountID, hash string, now time.Time, dry bool) (moved, dropped int, err error) {
	var cursor uint64
	for {
		kv, next, err := rdb.HScan(ctx, hash, cursor, "*", drainBatch).Result()
		if err != nil {
			return moved, dropped, err
		}
		m, d, err := drainStep(ctx, rdb, accountID, kv, now, dry)
		moved, dropped = moved+m, dropped+d
		if err != nil {
			return moved, dropped, err
		}
		// HSCAN of a hash being emptied may revisit or skip fields: start over until
		// a pass finds none (a dry run makes one pass).
		if cursor = next; cursor == 0 && (dry || len(kv) == 0) {
			return moved, dropped, nil
		}
	}
}

// drainStep moves the orders kv (field, value pairs of one HSCAN reply) out of the hash.
func drainStep(ctx context.Context, rdb redis.UniversalClient, accountID string, kv []string, now time.Time, dry bool) (moved, dropped int, err error) {
	type move struct {
		cid, v string
		left   time.Duration
	}
	moves := make([]move, 0, len(kv)/2)
	for i := 0; i+1 < len(kv); i += 2 {
		// An order that does not decode keeps the whole TTL: its age is unknown.
		left := DefaultOrderTTL
		if rec, err := decodeOrder(kv[i+1]); err == nil {
			left = time.UnixMilli(rec.Order.CreatedAt).Add(DefaultOrderTTL).Sub(now)
		}
		if left > 0 {
			moved++
		} else {
			dropped++
		}
		moves = append(moves, move{kv[i], kv[i+1], left})
	}
	if dry || len(moves) == 0 {
		return moved, dropped, nil
	}
	_, err = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, m := range moves {
			if m.left > 0 {
				p.SetNX(ctx, store.PaperOrder(accountID, m.cid), m.v, m.left)
			}
			p.HDel(ctx, store.PaperOrders(accountID), m.cid)
		}
		return nil
	})
	return moved, dropped, err
}
