package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/redis/go-redis/v9"
)

// Server-wide commands (FLUSHALL, KEYS, CONFIG SET) act on one node only. These helpers run
// them on every master behind a client, so that a test inspecting or resetting the whole
// Redis works on one server and on a cluster alike.

// ForEachNode runs fn on every master behind c: c itself when it is one server's client.
func ForEachNode(ctx context.Context, c redis.UniversalClient, fn func(context.Context, *redis.Client) error) error {
	switch c := c.(type) {
	case *redis.Client:
		return fn(ctx, c)
	case *redis.ClusterClient:
		return c.ForEachMaster(ctx, fn)
	}
	return fmt.Errorf("storetest: unsupported client %T", c)
}

// FlushAll deletes every key of every node.
func FlushAll(ctx context.Context, c redis.UniversalClient) error {
	return ForEachNode(ctx, c, func(ctx context.Context, n *redis.Client) error { return n.FlushAll(ctx).Err() })
}

// Keys lists the keys matching pattern on every node, sorted.
func Keys(ctx context.Context, c redis.UniversalClient, pattern string) ([]string, error) {
	var mu sync.Mutex
	var out []string
	err := ForEachNode(ctx, c, func(ctx context.Context, n *redis.Client) error {
		keys, err := n.Keys(ctx, pattern).Result()
		mu.Lock()
		out = append(out, keys...)
		mu.Unlock()
		return err
	})
	slices.Sort(out)
	return out, err
}

// ConfigSet sets a configuration parameter on every node.
func ConfigSet(ctx context.Context, c redis.UniversalClient, parameter, value string) error {
	return ForEachNode(ctx, c, func(ctx context.Context, n *redis.Client) error {
		return n.ConfigSet(ctx, parameter, value).Err()
	})
}
