// Package expiring holds Cache, a map whose values are kept until a deadline, bounded in
// size: what the token verifier (runtime/auth) and mcpd keep of tokens between calls.
package expiring

import (
	"hash/maphash"
	"sync"
	"time"
)

// cacheShards is how many locks a Cache spreads its keys over.
const cacheShards = 32

// Cache is a sharded map from a string key to a value kept until a deadline, bounded in
// size: a full shard first drops its expired entries, then everything (a dropped entry is
// only computed again). It is safe for concurrent use.
type Cache[V any] struct {
	seed   maphash.Seed
	max    int
	shards [cacheShards]shard[V]
}

type shard[V any] struct {
	mu      sync.RWMutex
	entries map[string]entry[V]
}

type entry[V any] struct {
	v        V
	deadline time.Time
}

// New returns a cache of about max entries in all.
func New[V any](max int) *Cache[V] {
	c := &Cache[V]{seed: maphash.MakeSeed(), max: max/cacheShards + 1}
	for i := range c.shards {
		c.shards[i].entries = map[string]entry[V]{}
	}
	return c
}

func (c *Cache[V]) shardOf(k string) *shard[V] {
	return &c.shards[maphash.String(c.seed, k)%uint64(len(c.shards))]
}

// Get is k's value while its deadline is after now.
func (c *Cache[V]) Get(k string, now time.Time) (V, bool) {
	s := c.shardOf(k)
	s.mu.RLock()
	e, ok := s.entries[k]
	s.mu.RUnlock()
	if !ok || !now.Before(e.deadline) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// Put keeps v under k until deadline.
func (c *Cache[V]) Put(k string, v V, deadline, now time.Time) {
	s := c.shardOf(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.putLocked(c.max, k, v, deadline, now)
}

// Claim puts v under k until deadline and reports true, unless k holds a value whose
// deadline is after now (false): one caller in each period wins, whatever the others do.
func (c *Cache[V]) Claim(k string, v V, deadline, now time.Time) bool {
	s := c.shardOf(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.entries[k]; ok && now.Before(e.deadline) {
		return false
	}
	s.putLocked(c.max, k, v, deadline, now)
	return true
}

func (s *shard[V]) putLocked(max int, k string, v V, deadline, now time.Time) {
	if len(s.entries) >= max {
		for key, e := range s.entries {
			if !now.Before(e.deadline) {
				delete(s.entries, key)
			}
		}
		if len(s.entries) >= max {
			clear(s.entries)
		}
	}
	s.entries[k] = entry[V]{v: v, deadline: deadline}
}

// Purge drops every entry.
func (c *Cache[V]) Purge() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		clear(s.entries)
		s.mu.Unlock()
	}
}
