package auth

import (
	"hash/maphash"
	"sync"
	"time"
)

// cacheShards is how many locks a deadlineCache spreads its keys over.
const cacheShards = 32

// deadlineCache is a sharded map from a string key to a value kept until a deadline,
// bounded in size: a full shard first drops its expired entries, then everything (a dropped
// entry is only computed again). The verifier keeps three: the Redis facts of a token (by
// jti, for CacheTTL), the principals of verified tokens (by their whole text, until they
// expire) and the last writes of sliding stamps (claim).
type deadlineCache[V any] struct {
	seed   maphash.Seed
	max    int
	shards [cacheShards]deadlineShard[V]
}

type deadlineShard[V any] struct {
	mu      sync.RWMutex
	entries map[string]deadlineEntry[V]
}

type deadlineEntry[V any] struct {
	v        V
	deadline time.Time
}

// newDeadlineCache returns a cache of about max entries in all.
func newDeadlineCache[V any](max int) *deadlineCache[V] {
	c := &deadlineCache[V]{seed: maphash.MakeSeed(), max: max/cacheShards + 1}
	for i := range c.shards {
		c.shards[i].entries = map[string]deadlineEntry[V]{}
	}
	return c
}

func (c *deadlineCache[V]) shard(k string) *deadlineShard[V] {
	return &c.shards[maphash.String(c.seed, k)%uint64(len(c.shards))]
}

// get is k's value while its deadline is after now.
func (c *deadlineCache[V]) get(k string, now time.Time) (V, bool) {
	s := c.shard(k)
	s.mu.RLock()
	e, ok := s.entries[k]
	s.mu.RUnlock()
	if !ok || !now.Before(e.deadline) {
		var zero V
		return zero, false
	}
	return e.v, true
}

// put keeps v under k until deadline.
func (c *deadlineCache[V]) put(k string, v V, deadline, now time.Time) {
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.putLocked(c.max, k, v, deadline, now)
}

// claim puts v under k until deadline and reports true, unless k holds a value whose
// deadline is after now (false): one caller in each period wins, whatever the others do.
func (c *deadlineCache[V]) claim(k string, v V, deadline, now time.Time) bool {
	s := c.shard(k)
	s.mu.Lock()
	defer s.mu.Unlock()
	if e, ok := s.entries[k]; ok && now.Before(e.deadline) {
		return false
	}
	s.putLocked(c.max, k, v, deadline, now)
	return true
}

func (s *deadlineShard[V]) putLocked(max int, k string, v V, deadline, now time.Time) {
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
	s.entries[k] = deadlineEntry[V]{v: v, deadline: deadline}
}

// purge drops every entry.
func (c *deadlineCache[V]) purge() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		clear(s.entries)
		s.mu.Unlock()
	}
}
