package testkit

import (
	"sync"
	"time"
)

// Clock is a time source the test moves: code under test takes a func() time.Time and gets
// Clock.Now, so cooldowns, windows and day boundaries are crossed without sleeping.
type Clock struct {
	mu sync.Mutex
	t  time.Time
	// follow makes Now advance with the wall clock from t (plus the offsets Advance adds),
	// for code that also waits on real timers.
	follow bool
	set    time.Time
}

// NewClock is a clock standing still at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// WallClock is time.Now shifted by whatever Advance adds: for tests against a real API
// server or Redis, whose own clocks keep running.
func WallClock() *Clock { now := time.Now(); return &Clock{t: now, set: now, follow: true} }

// Now is the clock's current time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.follow {
		return c.t.Add(time.Since(c.set))
	}
	return c.t
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	if c.follow {
		c.set = time.Now()
	}
	c.mu.Unlock()
}
