package keymigration

import (
	"context"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
)

// BookOrderNames gives each order record stored under its bot's name
// (store.LegacyBookOrder, "sigops:book:{N}:<bot>:order:<cid>") the name without the bot
// (store.BookOrder), on every master: RENAMENX within the slot, so a TTL stays and a record
// the new version wrote is never overwritten (the old one is then kept, and expires). It
// runs on a Cluster too. Kept counts the records left under their old names.
func BookOrderNames(ctx context.Context, c redis.UniversalClient, dry bool) (Family, error) {
	out := Family{Name: "order record names"}
	keys, err := scanMasters(ctx, c, "sigops:book:{*}:*:order:*", func(k string) bool {
		_, ok := bookOrderName(k)
		return ok
	})
	if err != nil {
		return out, err
	}
	for _, k := range keys {
		to, _ := bookOrderName(k)
		if dry {
			if c.Exists(ctx, to).Val() == 0 {
				out.Moved++
			} else {
				out.Kept++
			}
			continue
		}
		moved, err := c.RenameNX(ctx, k, to).Result()
		if err != nil {
			return out, err
		}
		if moved {
			out.Moved++
		} else {
			out.Kept++
		}
	}
	return out, nil
}

// bookOrderName is the new name of an order record stored under its bot's name, false for
// any other key.
func bookOrderName(key string) (string, bool) {
	rest, ok := strings.CutPrefix(key, "sigops:book:{")
	if !ok {
		return "", false
	}
	_, rest, ok = strings.Cut(rest, "}:")
	if !ok {
		return "", false
	}
	bot, cid, ok := strings.Cut(rest, ":order:")
	if !ok || bot == "" || cid == "" || store.LegacyBookOrder(bot, cid) != key {
		return "", false
	}
	return store.BookOrder(bot, cid), true
}
