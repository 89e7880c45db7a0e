package store

import (
	"bufio"
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/errs"
)

// DefaultHeadroom is the share of maxmemory kept free for work already accepted: new work
// is refused once less than this is left, so that a signal already accepted always has
// room for its booking and result (docs/decisions.md, "Redis memory: refusing before
// full").
const DefaultHeadroom = 0.10

// DefaultMemoryRefresh is how old the memory reading a refusal is decided on may be.
const DefaultMemoryRefresh = 250 * time.Millisecond

// MemoryRetryAfter is what a refusal for memory asks the sender to wait.
const MemoryRetryAfter = 5 * time.Second

// MemoryOptions configure a MemoryGuard.
type MemoryOptions struct {
	// Headroom is the share of maxmemory kept free (0: DefaultHeadroom).
	Headroom float64
	// Refresh bounds the reading's age (0: DefaultMemoryRefresh).
	Refresh time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// MemoryGuard tells whether Redis is above its watermark: maxmemory less the headroom, on
// any master (a Cluster refuses when one of its nodes is full, since a signal's keys may
// live there). It reads INFO memory at most once per Refresh and shares the reading among
// callers, so the check costs a request nothing most of the time; a maxmemory changed at
// runtime is followed from the next reading. maxmemory 0 (no limit) is never full.
type MemoryGuard struct {
	rdb      redis.UniversalClient
	headroom float64
	refresh  time.Duration
	now      func() time.Time

	mu   sync.Mutex
	read time.Time
	last MemoryReading
}

// MemoryReading is the fullest master's memory as last read.
type MemoryReading struct {
	Used, Max int64
	// Full: Used is at or above the watermark.
	Full bool
}

// NewMemoryGuard returns a guard over rdb.
func NewMemoryGuard(rdb redis.UniversalClient, o MemoryOptions) *MemoryGuard {
	if o.Headroom <= 0 || o.Headroom >= 1 {
		o.Headroom = DefaultHeadroom
	}
	if o.Refresh <= 0 {
		o.Refresh = DefaultMemoryRefresh
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &MemoryGuard{rdb: rdb, headroom: o.Headroom, refresh: o.Refresh, now: o.Now}
}

// Full reports whether Redis is above the watermark, as of a reading at most Refresh old. A
// reading that fails leaves the last one standing (none: not full): the write that follows
// meets the same failure and answers it.
func (g *MemoryGuard) Full(ctx context.Context) bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	if now.Sub(g.read) < g.refresh {
		return g.last.Full
	}
	r, err := g.measure(ctx)
	if err == nil {
		g.last = r
	}
	g.read = now
	return g.last.Full
}

// Admit is nil while Redis has room, and the refusal of something new (a signal, a manual
// order) while it is above the watermark: SERVICE_UNAVAILABLE (503) with Retry-After,
// before anything is written, so that what was accepted keeps the headroom. A nil guard
// admits everything.
func (g *MemoryGuard) Admit(ctx context.Context) error {
	if !g.Full(ctx) {
		return nil
	}
	e := errs.New(errs.ServiceUnavailable, "the service is not accepting signals for a moment (storage nearly full); nothing was accepted: retry later")
	e.RetryAfter = MemoryRetryAfter
	return e
}

// Reading is the last reading.
func (g *MemoryGuard) Reading() MemoryReading {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.last
}

// measure reads every master and keeps the fullest (the highest share of its maxmemory).
func (g *MemoryGuard) measure(ctx context.Context) (MemoryReading, error) {
	var (
		mu    sync.Mutex
		worst MemoryReading
		share float64
	)
	each := func(ctx context.Context, c *redis.Client) error {
		info, err := c.Info(ctx, "memory").Result()
		if err != nil {
			return err
		}
		used, max := parseMemory(info)
		r := MemoryReading{Used: used, Max: max}
		if max > 0 {
			r.Full = float64(used) >= float64(max)*(1-g.headroom)
		}
		mu.Lock()
		defer mu.Unlock()
		if s := r.share(); s >= share {
			worst, share = r, s
		}
		return nil
	}
	// The reads run before worst is returned: Go leaves the order of a return's plain
	// operands against its calls unspecified, so they are not written in one statement.
	var err error
	switch c := g.rdb.(type) {
	case *redis.ClusterClient:
		err = c.ForEachMaster(ctx, each)
	case *redis.Client:
		err = each(ctx, c)
	}
	return worst, err // another client kind: not guarded (nothing read)
}

func (r MemoryReading) share() float64 {
	if r.Max <= 0 {
		return 0
	}
	return float64(r.Used) / float64(r.Max)
}

// parseMemory reads used_memory and maxmemory from INFO memory.
func parseMemory(info string) (used, max int64) {
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":")
		if !ok {
			continue
		}
		switch k {
		case "used_memory":
			used, _ = strconv.ParseInt(v, 10, 64)
		case "maxmemory":
			max, _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return used, max
}
