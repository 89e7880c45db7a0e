package keymigration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/wallet"
)

// legacyWalletField is the user hash's field that held the Strategy Lab balance before
// runtime/wallet owned it.
const legacyWalletField = "wallet"

// Wallets moves each account's Strategy Lab balance out of its user hash (field "wallet")
// into its wallet key (runtime/wallet), with an opening entry in the ledger, then deletes
// the field. A wallet that exists already (the new version wrote it) is kept and only the
// stale field is deleted (counted as kept). Running it again finds no field and does
// nothing. The two keys are in different slots, so each account is two steps: the opening
// (SET NX with its ledger entry, one transaction) before the HDEL, so a crash between them
// leaves the field for the next run, whose opening is then a no-op.
//
// Unlike Run it works on a Redis Cluster too (it scans every master): an installation
// already on a Cluster has its user hashes under their tagged names. A dry run also counts
// user hashes under their old untagged names, which Run renames first.
func Wallets(ctx context.Context, c redis.UniversalClient, dry bool) (Family, error) {
	out := Family{Name: "strategy lab wallets"}
	users, err := scanMasters(ctx, c, "sigops:user:*", func(k string) bool {
		_, ok := userOfHash(k, dry)
		return ok
	})
	if err != nil {
		return out, err
	}
	w := wallet.New(c, wallet.Options{})
	for _, key := range users {
		v, err := c.HGet(ctx, key, legacyWalletField).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return out, err
		}
		amount, err := decimal.NewFromString(v)
		if err != nil || amount.IsNegative() {
			return out, fmt.Errorf("%s: wallet field %q is not a balance", key, v)
		}
		id := userID(key)
		if dry {
			if n, err := c.Exists(ctx, store.Wallet(id)).Result(); err != nil {
				return out, err
			} else if n == 0 {
				out.Moved++
			} else {
				out.Kept++
			}
			continue
		}
		created, err := w.Open(ctx, id, amount)
		if err != nil {
			return out, fmt.Errorf("opening the wallet of user %s: %w", id, err)
		}
		if err := c.HDel(ctx, key, legacyWalletField).Err(); err != nil {
			return out, err
		}
		if created {
			out.Moved++
		} else {
			out.Kept++
		}
	}
	return out, nil
}

// userOfHash reports whether key is a user hash ("sigops:user:{id}", and with old the
// untagged "sigops:user:id"), not the email index or a user's session or authorization set.
func userOfHash(key string, old bool) (string, bool) {
	rest, _ := strings.CutPrefix(key, "sigops:user:")
	switch {
	case strings.HasPrefix(rest, "email:"):
		return "", false
	case strings.HasPrefix(rest, "{") && strings.HasSuffix(rest, "}") && !strings.Contains(rest, "}:"):
		return key, true
	case old && !strings.ContainsAny(rest, "{}:"):
		return key, true
	}
	return "", false
}

// userID is the user ID of a user hash's name, tagged or not.
func userID(key string) string {
	rest, _ := strings.CutPrefix(key, "sigops:user:")
	return strings.TrimSuffix(strings.TrimPrefix(rest, "{"), "}")
}

// scanMasters lists the keys matching pattern that keep accepts, on the single server or
// on every master of a Cluster.
func scanMasters(ctx context.Context, c redis.UniversalClient, pattern string, keep func(string) bool) ([]string, error) {
	var out []string
	var mu sync.Mutex
	err := eachMaster(ctx, c, func(ctx context.Context, node *redis.Client) error {
		keys, err := (&migration{rdb: node}).scan(ctx, pattern)
		mu.Lock()
		defer mu.Unlock()
		for _, k := range keys {
			if keep(k) {
				out = append(out, k)
			}
		}
		return err
	})
	return out, err
}

// eachMaster runs fn on the single server, or on every master of a Cluster.
func eachMaster(ctx context.Context, c redis.UniversalClient, fn func(context.Context, *redis.Client) error) error {
	switch rdb := c.(type) {
	case *redis.ClusterClient:
		return rdb.ForEachMaster(ctx, fn)
	case *redis.Client:
		return fn(ctx, rdb)
	}
	return fmt.Errorf("keymigration: unsupported client %T", c)
}
