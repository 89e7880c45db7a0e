package marketdata

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/shopspring/decimal"
	"golang.org/x/sync/singleflight"

	"github.com/sigops/sigops/runtime/exchange"
)

// Default Cached settings.
const (
	DefaultCandleTTL       = 60 * time.Second // the spec: candles are cached 60 seconds
	DefaultPriceTTL        = time.Second
	DefaultCacheEntries    = 10000
	DefaultCachedFetchTime = 5 * time.Second
)

// CachedOptions configures NewCached; zero values take the defaults.
type CachedOptions struct {
	// CandleTTL is how long one (kind, symbol, timeframe, limit) answer is served. Default 60 s.
	CandleTTL time.Duration
	// PriceTTL is how long one (kind, symbol) price is served. Default 1 s.
	PriceTTL time.Duration
	// MaxEntries bounds the number of cached answers of each sort. Default 10000.
	MaxEntries int
	// FetchTimeout bounds one upstream call, which runs detached from the callers' contexts
	// (it is shared by every caller waiting on that key). Default 5 s.
	FetchTimeout time.Duration
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Cached wraps a Provider: answers are served from memory until their TTL passes, and
// concurrent misses of one key make a single upstream call whose answer they all get (a
// caller whose context ends stops waiting; the call goes on for the others). Errors are not
// cached. Note that a price pinned with Simulated.SetPrice shows through Cached only after
// PriceTTL; tests that pin prices should use the Simulated directly.
type Cached struct {
	inner     Provider
	candleTTL time.Duration
	priceTTL  time.Duration
	max       int
	fetch     time.Duration
	now       func() time.Time

	mu      sync.RWMutex
	prices  map[priceKey]cachedPrice
	candles map[candlesKey]cachedCandles
	group   singleflight.Group
}

type priceKey struct {
	kind   exchange.Kind
	symbol string
}

type candlesKey struct {
	kind              exchange.Kind
	symbol, timeframe string
	limit             int
}

type cachedPrice struct {
	price   decimal.Decimal
	expires time.Time
}

type cachedCandles struct {
	candles []Candle
	expires time.Time
}

// NewCached wraps inner.
func NewCached(inner Provider, opts CachedOptions) *Cached {
	if opts.CandleTTL <= 0 {
		opts.CandleTTL = DefaultCandleTTL
	}
	if opts.PriceTTL <= 0 {
		opts.PriceTTL = DefaultPriceTTL
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = DefaultCacheEntries
	}
	if opts.FetchTimeout <= 0 {
		opts.FetchTimeout = DefaultCachedFetchTime
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Cached{
		inner: inner, candleTTL: opts.CandleTTL, priceTTL: opts.PriceTTL, max: opts.MaxEntries,
		fetch: opts.FetchTimeout, now: opts.Now,
		prices:  make(map[priceKey]cachedPrice),
		candles: make(map[candlesKey]cachedCandles),
	}
}

// Price serves the inner price for up to PriceTTL.
func (c *Cached) Price(ctx context.Context, kind exchange.Kind, symbol string) (decimal.Decimal, error) {
	k := priceKey{kind, symbol}
	c.mu.RLock()
	e, ok := c.prices[k]
	c.mu.RUnlock()
	if ok && c.now().Before(e.expires) {
		return e.price, nil
	}
	v, err := c.do(ctx, "p\x00"+string(kind)+"\x00"+symbol, func(fctx context.Context) (any, error) {
		p, err := c.inner.Price(fctx, kind, symbol)
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		if len(c.prices) >= c.max {
			evict(c.prices, c.now(), func(e cachedPrice) time.Time { return e.expires }, c.max)
		}
		c.prices[k] = cachedPrice{price: p, expires: c.now().Add(c.priceTTL)}
		c.mu.Unlock()
		return p, nil
	})
	if err != nil {
		return decimal.Decimal{}, err
	}
	return v.(decimal.Decimal), nil
}

// Candles serves the inner candles for up to CandleTTL per (kind, symbol, timeframe, limit).
// The slice returned is the caller's own.
func (c *Cached) Candles(ctx context.Context, kind exchange.Kind, symbol, timeframe string, limit int) ([]Candle, error) {
	limit = clampLimit(limit, MaxLimit)
	k := candlesKey{kind, symbol, timeframe, limit}
	c.mu.RLock()
	e, ok := c.candles[k]
	c.mu.RUnlock()
	if ok && c.now().Before(e.expires) {
		return slices.Clone(e.candles), nil
	}
	if _, err := TimeframeDuration(timeframe); err != nil {
		return nil, err // not worth a call
	}
	sfKey := "c\x00" + string(kind) + "\x00" + symbol + "\x00" + timeframe + "\x00" + strconv.Itoa(limit)
	v, err := c.do(ctx, sfKey, func(fctx context.Context) (any, error) {
		cs, err := c.inner.Candles(fctx, kind, symbol, timeframe, limit)
		if err != nil {
			return nil, err
		}
		cs = slices.Clone(cs) // the inner provider may reuse its slice
		c.mu.Lock()
		if len(c.candles) >= c.max {
			evict(c.candles, c.now(), func(e cachedCandles) time.Time { return e.expires }, c.max)
		}
		c.candles[k] = cachedCandles{candles: cs, expires: c.now().Add(c.candleTTL)}
		c.mu.Unlock()
		return cs, nil
	})
	if err != nil {
		return nil, err
	}
	return slices.Clone(v.([]Candle)), nil
}

// do runs fn once per key among concurrent callers, detached from any one caller's context.
func (c *Cached) do(ctx context.Context, key string, fn func(context.Context) (any, error)) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ch := c.group.DoChan(key, func() (any, error) {
		fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.fetch)
		defer cancel()
		return fn(fctx)
	})
	select {
	case r := <-ch:
		return r.Val, r.Err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// evict drops expired entries, then arbitrary ones, until m has room for one more.
func evict[K comparable, V any](m map[K]V, now time.Time, expires func(V) time.Time, max int) {
	for k, v := range m {
		if !now.Before(expires(v)) {
			delete(m, k)
		}
	}
	for k := range m {
		if len(m) < max {
			break
		}
		delete(m, k)
	}
}
