package keymigration

import (
	"context"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/store"
)

// PaperOrders drains every paper account's orders hash (paper.DrainOrders): its orders
// move to their own expiring keys, the expired ones are dropped (counted as kept), and the
// hash goes. Like Wallets it also runs alone on a Cluster (it scans every master) and with
// the executors up; running it again finds no hash. A dry run also counts the hashes under
// their old untagged names, which Run renames first.
func PaperOrders(ctx context.Context, c redis.UniversalClient, dry bool) (Family, error) {
	out := Family{Name: "paper orders"}
	hashes, err := scanMasters(ctx, c, "sigops:paper:*:orders", func(k string) bool {
		_, ok := paperAccountOf(k, dry)
		return ok
	})
	if err != nil {
		return out, err
	}
	now := time.Now()
	for _, k := range hashes {
		id, _ := paperAccountOf(k, dry)
		moved, dropped, err := paper.DrainOrders(ctx, c, id, k, now, dry)
		out.Moved, out.Kept = out.Moved+moved, out.Kept+dropped
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// paperAccountOf is the account ID of an orders hash's name: store.PaperOrders(id), and
// with old the untagged "sigops:paper:<id>:orders".
func paperAccountOf(key string, old bool) (string, bool) {
	rest, _ := strings.CutPrefix(key, "sigops:paper:")
	rest, _ = strings.CutSuffix(rest, ":orders")
	if id, ok := strings.CutPrefix(rest, "{"); ok {
		id, ok = strings.CutSuffix(id, "}")
		return id, ok && !strings.ContainsAny(id, "{}") && store.PaperOrders(id) == key
	}
	return rest, old && !strings.ContainsAny(rest, "{}:")
}
