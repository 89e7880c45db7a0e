package restkit

import (
	"context"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Cache holds a value per key (an adapter's instruments per host and product type) for a
// TTL. Both adapters cache public data shared by every account on a host, since accounts
// are opened per signal; both need the same three rules, which is why they live here once:
// concurrent misses of one key make one upstream call; the shared fetch outlives one
// caller's cancellation but not the budget; and when a refresh fails or the caller gives
// up, an older value, if any, is used. The zero value is ready to use.
type Cache[V any] struct {
	entries sync.Map // key → *cached[V]
	flight  singleflight.Group
}

type cached[V any] struct {
	at time.Time // when its fetch started
	v  V
}

// CallerGone is Get's error when the caller's context ended before the shared fetch
// answered and no older value was at hand. Err is the context's error; the adapter types it
// as a request that got no answer.
type CallerGone struct{ Err error }

func (e *CallerGone) Error() string { return e.Err.Error() }
func (e *CallerGone) Unwrap() error { return e.Err }

// Get is key's value if fetched less than ttl ago, else fetch's, run once for all the
// callers that miss key together, under a context that ignores ctx's cancellation and ends
// after budget. When fetch fails, or ctx ends first, an older value is returned if there is
// one; otherwise fetch's error, or a *CallerGone.
func (c *Cache[V]) Get(ctx context.Context, key string, ttl, budget time.Duration, fetch func(context.Context) (V, error)) (V, error) {
	var zero V
	var stale *cached[V]
	if v, ok := c.entries.Load(key); ok {
		stale = v.(*cached[V])
		if time.Since(stale.at) < ttl {
			return stale.v, nil
		}
	}
	ch := c.flight.DoChan(key, func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), budget)
		defer cancel()
		e := &cached[V]{at: time.Now()}
		v, err := fetch(fctx)
		if err != nil {
			return nil, err
		}
		e.v = v
		c.entries.Store(key, e)
		return e, nil
	})
	select {
	case r := <-ch:
		if r.Err != nil {
			if stale != nil {
				return stale.v, nil
			}
			return zero, r.Err
		}
		return r.Val.(*cached[V]).v, nil
	case <-ctx.Done():
		if stale != nil {
			return stale.v, nil
		}
		return zero, &CallerGone{Err: ctx.Err()}
	}
}

// Reset forgets every value (tests start each fake cold).
func (c *Cache[V]) Reset() {
	c.entries.Range(func(k, _ any) bool { c.entries.Delete(k); return true })
}
