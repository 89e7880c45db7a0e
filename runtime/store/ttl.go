package store

import (
	"sync/atomic"
	"time"
)

// TTL is the life of a kind of key that a process sets once at start (its history
// retention, the hot window) and that every later write reads: the writes stay one
// argument away from the key, and no write site carries the setting. Safe for concurrent
// use.
type TTL struct {
	def, floor time.Duration
	secs       atomic.Int64 // 0: def
}

// NewTTL is a life of def until Set, never set below floor.
func NewTTL(def, floor time.Duration) *TTL { return &TTL{def: def, floor: floor} }

// Set makes d (at least the floor, whole seconds) the life of every later write.
func (t *TTL) Set(d time.Duration) { t.secs.Store(int64(max(d, t.floor) / time.Second)) }

// Get is the life of a key written now.
func (t *TTL) Get() time.Duration {
	if s := t.secs.Load(); s > 0 {
		return time.Duration(s) * time.Second
	}
	return t.def
}
