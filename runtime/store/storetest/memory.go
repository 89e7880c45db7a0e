package storetest

import (
	"context"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// A test that measures what state costs in Redis groups keys by family (the key with its
// IDs replaced) and reads MEMORY USAGE of each; one that moves its own clock across days
// moves the keys' TTLs with it (AdvanceTTLs), since Redis expires keys on its own clock.

var (
	familyTag = regexp.MustCompile(`\{[^}]*\}`)
	// An ID segment is a word, a dash and a run of letters and digits ("bot-1", "sig-12",
	// "acct-1", "sg-3fa9…"), or a long hex run (hashes, UUIDs).
	familyID = regexp.MustCompile(`(^|:)([a-z]+-[0-9a-z-]*[0-9][0-9a-z-]*|[0-9a-f]{16,}|[0-9a-f-]{36})($|:)`)
)

// Family is key with its hash tag written {…} and each ID segment <id>.
func Family(key string) string {
	f := familyTag.ReplaceAllString(key, "{…}")
	for {
		g := familyID.ReplaceAllString(f, "$1<id>$3")
		if g == f {
			return f
		}
		f = g
	}
}

// FamilyUsage is the memory of one key family.
type FamilyUsage struct {
	Keys  int
	Bytes int64
	// MaxTTL is the longest time to live of its keys (-1: one of them has none).
	MaxTTL time.Duration
}

// Usage is the MEMORY USAGE (every element counted) of every key of every node, summed by
// Family.
func Usage(ctx context.Context, c redis.UniversalClient) (map[string]FamilyUsage, error) {
	var mu sync.Mutex
	out := map[string]FamilyUsage{}
	err := ForEachNode(ctx, c, func(ctx context.Context, n *redis.Client) error {
		keys, err := n.Keys(ctx, "*").Result()
		if err != nil {
			return err
		}
		mem := make([]*redis.IntCmd, len(keys))
		ttl := make([]*redis.DurationCmd, len(keys))
		if _, err := n.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range keys {
				mem[i] = p.MemoryUsage(ctx, k, 0)
				ttl[i] = p.PTTL(ctx, k)
			}
			return nil
		}); err != nil && err != redis.Nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for i, k := range keys {
			f := out[Family(k)]
			f.Keys++
			f.Bytes += mem[i].Val()
			switch d := ttl[i].Val(); {
			case d < 0 || f.MaxTTL < 0:
				f.MaxTTL = -1
			case d > f.MaxTTL:
				f.MaxTTL = d
			}
			out[Family(k)] = f
		}
		return nil
	})
	return out, err
}

// UsedMemory is the sum of every node's INFO used_memory.
func UsedMemory(ctx context.Context, c redis.UniversalClient) (int64, error) {
	var mu sync.Mutex
	var total int64
	err := ForEachNode(ctx, c, func(ctx context.Context, n *redis.Client) error {
		info, err := n.Info(ctx, "memory").Result()
		if err != nil {
			return err
		}
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "used_memory:"); ok {
				x, err := strconv.ParseInt(v, 10, 64)
				if err != nil {
					return err
				}
				mu.Lock()
				total += x
				mu.Unlock()
			}
		}
		return nil
	})
	return total, err
}

// AdvanceTTLs moves every key's expiry d closer on every node, deleting the keys whose
// time to live it ends: Redis's side of a test clock moved by d.
func AdvanceTTLs(ctx context.Context, c redis.UniversalClient, d time.Duration) error {
	return ForEachNode(ctx, c, func(ctx context.Context, n *redis.Client) error {
		keys, err := n.Keys(ctx, "*").Result()
		if err != nil {
			return err
		}
		ttl := make([]*redis.DurationCmd, len(keys))
		if _, err := n.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range keys {
				ttl[i] = p.PTTL(ctx, k)
			}
			return nil
		}); err != nil {
			return err
		}
		_, err = n.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range keys {
				switch left := ttl[i].Val(); {
				case left < 0:
				case left <= d:
					p.Del(ctx, k)
				default:
					p.PExpire(ctx, k, left-d)
				}
			}
			return nil
		})
		return err
	})
}

// Families lists the families of u, largest first.
func Families(u map[string]FamilyUsage) []string {
	out := make([]string, 0, len(u))
	for f := range u {
		out = append(out, f)
	}
	sort.Slice(out, func(i, j int) bool {
		if u[out[i]].Bytes != u[out[j]].Bytes {
			return u[out[i]].Bytes > u[out[j]].Bytes
		}
		return out[i] < out[j]
	})
	return out
}
