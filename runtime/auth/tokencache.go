package auth

import (
	"hash/maphash"
	"sync"
	"time"
)

// tokenCache remembers the principals of tokens whose signature and claims Parse checked,
// keyed by the token's whole text, until each token expires. It is sharded like factCache
// and bounded the same way: a full shard first drops its expired tokens, then everything
// (a dropped token is only parsed again).
type tokenCache struct {
	seed   maphash.Seed
	max    int
	shards [cacheShards]tokenShard
}

type tokenShard struct {
	mu      sync.RWMutex
	entries map[string]*Principal
}

func newTokenCache(max int) *tokenCache {
	c := &tokenCache{seed: maphash.MakeSeed(), max: max/cacheShards + 1}
	for i := range c.shards {
		c.shards[i].entries = map[string]*Principal{}
	}
	return c
}

func (c *tokenCache) shard(raw string) *tokenShard {
	return &c.shards[maphash.String(c.seed, raw)%uint64(len(c.shards))]
}

// get is a copy of the principal of raw while raw has not expired at now. The copy keeps a
// caller's change of its principal out of the cache.
func (c *tokenCache) get(raw string, now time.Time) (*Principal, bool) {
	s := c.shard(raw)
	s.mu.RLock()
	p, ok := s.entries[raw]
	s.mu.RUnlock()
	if !ok || !now.Before(p.ExpiresAt) {
		return nil, false
	}
	cp := *p
	return &cp, true
}

func (c *tokenCache) put(raw string, p *Principal, now time.Time) {
	s := c.shard(raw)
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.entries) >= c.max {
		for k, e := range s.entries {
			if !now.Before(e.ExpiresAt) {
				delete(s.entries, k)
			}
		}
		if len(s.entries) >= c.max {
			clear(s.entries)
		}
	}
	s.entries[raw] = p
}
