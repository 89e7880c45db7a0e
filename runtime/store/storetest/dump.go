package storetest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Dump is the contents of keys as text, one line per key (type, value, and whether it
// expires), so that a test can compare the state two ways of writing left, e.g. a
// transaction's commands and a script's Lua for the same write.
func Dump(ctx context.Context, c redis.UniversalClient, keys ...string) (string, error) {
	var b strings.Builder
	for _, k := range keys {
		typ, err := c.Type(ctx, k).Result()
		if err != nil {
			return "", err
		}
		var v any
		switch typ {
		case "none":
		case "string":
			v, err = c.Get(ctx, k).Result()
		case "hash":
			v, err = c.HGetAll(ctx, k).Result()
		case "list":
			v, err = c.LRange(ctx, k, 0, -1).Result()
		case "set":
			var m []string
			m, err = c.SMembers(ctx, k).Result()
			sort.Strings(m)
			v = m
		case "zset":
			v, err = c.ZRangeWithScores(ctx, k, 0, -1).Result()
		default:
			err = fmt.Errorf("dump %s: type %s", k, typ)
		}
		if err != nil {
			return "", err
		}
		ttl, err := c.TTL(ctx, k).Result()
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&b, "%s %s %v expires=%v\n", k, typ, v, ttl > 0)
	}
	return b.String(), nil
}

// Snapshot is every key of the database with its DUMP serialization (the value's exact
// bytes; for hashes and sets their exact contents, sorted) and whether it expires, so that a test can show an operation changed nothing by
// comparing the snapshots before and after it byte for byte.
func Snapshot(ctx context.Context, c redis.UniversalClient) (map[string]string, error) {
	keys, err := Keys(ctx, c, "*")
	if err != nil {
		return nil, err
	}
	out := make(map[string]string, len(keys))
	for _, k := range keys {
		// A hash's or set's DUMP follows its hash table's order, which a mere read may
		// change (incremental rehashing): those are compared by their exact contents in a
		// canonical order (Dump) instead.
		if typ, err := c.Type(ctx, k).Result(); err != nil {
			return nil, err
		} else if typ == "hash" || typ == "set" {
			if out[k], err = Dump(ctx, c, k); err != nil {
				return nil, err
			}
			continue
		}
		v, err := c.Dump(ctx, k).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, err
		}
		ttl, err := c.PTTL(ctx, k).Result()
		if err != nil {
			return nil, err
		}
		out[k] = fmt.Sprintf("%q expires=%v", v, ttl >= 0)
	}
	return out, nil
}

// Changed is the keys whose value or expiry differ between snapshots a and b (Snapshot), or
// that only one of them has, sorted.
func Changed(a, b map[string]string) []string {
	var out []string
	for k, v := range b {
		if a[k] != v {
			out = append(out, k)
		}
	}
	for k := range a {
		if _, ok := b[k]; !ok {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out
}
