package marketdata

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
)

// countingProvider counts calls and can block them until released.
type countingProvider struct {
	prices, candles atomic.Int64
	gate            chan struct{} // when non-nil, calls wait for it to close
	err             error
	price           atomic.Pointer[decimal.Decimal]
}

func (p *countingProvider) wait(ctx context.Context) error {
	if p.gate == nil {
		return nil
	}
	select {
	case <-p.gate:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (p *countingProvider) Price(ctx context.Context, kind exchange.Kind, symbol string) (decimal.Decimal, error) {
	p.prices.Add(1)
	if err := p.wait(ctx); err != nil {
		return decimal.Decimal{}, err
	}
	if p.err != nil {
		return decimal.Decimal{}, p.err
	}
	if v := p.price.Load(); v != nil {
		return *v, nil
	}
	return testkit.D("100.5"), nil
}

func (p *countingProvider) Candles(ctx context.Context, kind exchange.Kind, symbol, timeframe string, limit int) ([]Candle, error) {
	n := p.candles.Add(1)
	if err := p.wait(ctx); err != nil {
		return nil, err
	}
	if p.err != nil {
		return nil, p.err
	}
	out := make([]Candle, limit)
	for i := range out {
		out[i] = Candle{Timestamp: int64(i) * 60000, Time: int64(i) * 60, Open: decimal.NewFromInt(n),
			High: decimal.NewFromInt(n), Low: decimal.NewFromInt(n), Close: decimal.NewFromInt(n)}
	}
	return out, nil
}

func TestCachedPrice(t *testing.T) {
	inner := &countingProvider{}
	c := testkit.NewClock(testNow)
	cp := NewCached(inner, CachedOptions{Now: c.Now})
	for range 5 {
		if p := mustPrice(t, cp, exchange.Spot, "BTC/USDT"); !p.Equal(testkit.D("100.5")) {
			t.Fatal(p)
		}
	}
	if n := inner.prices.Load(); n != 1 {
		t.Fatalf("%d inner calls within the TTL", n)
	}
	// Keys are per kind and symbol.
	mustPrice(t, cp, exchange.Futures, "BTC/USDT")
	mustPrice(t, cp, exchange.Spot, "ETH/USDT")
	if n := inner.prices.Load(); n != 3 {
		t.Fatalf("%d inner calls for 3 keys", n)
	}
	// The default price TTL is 1 s.
	v := testkit.D("101")
	inner.price.Store(&v)
	c.Advance(999 * time.Millisecond)
	if p := mustPrice(t, cp, exchange.Spot, "BTC/USDT"); !p.Equal(testkit.D("100.5")) {
		t.Errorf("before the TTL: %s", p)
	}
	c.Advance(time.Millisecond)
	if p := mustPrice(t, cp, exchange.Spot, "BTC/USDT"); !p.Equal(testkit.D("101")) {
		t.Errorf("after the TTL: %s", p)
	}
	if n := inner.prices.Load(); n != 4 {
		t.Fatalf("%d inner calls", n)
	}
}

func TestCachedCandles(t *testing.T) {
	inner := &countingProvider{}
	c := testkit.NewClock(testNow)
	cp := NewCached(inner, CachedOptions{Now: c.Now})
	a := mustCandles(t, cp, exchange.Spot, "BTC/USDT", "1m", 10)
	c.Advance(59 * time.Second)
	b := mustCandles(t, cp, exchange.Spot, "BTC/USDT", "1m", 10)
	if inner.candles.Load() != 1 || !sameCandles(a, b) {
		t.Fatalf("hit within 60 s: %d calls", inner.candles.Load())
	}
	// The caller owns the slice: changing it leaves the cache alone.
	b[0].Close = testkit.D("999")
	if x := mustCandles(t, cp, exchange.Spot, "BTC/USDT", "1m", 10); !x[0].Close.Equal(testkit.D("1")) {
		t.Errorf("cache changed through a returned slice: %s", x[0].Close)
	}
	// A different limit, timeframe, symbol or kind is a different key.
	mustCandles(t, cp, exchange.Spot, "BTC/USDT", "1m", 11)
	mustCandles(t, cp, exchange.Spot, "BTC/USDT", "5m", 10)
	mustCandles(t, cp, exchange.Spot, "ETH/USDT", "1m", 10)
	mustCandles(t, cp, exchange.Futures, "BTC/USDT", "1m", 10)
	if n := inner.candles.Load(); n != 5 {
		t.Fatalf("%d inner calls for 5 keys", n)
	}
	// limit 0 and DefaultLimit are the same request.
	mustCandles(t, cp, exchange.Spot, "BTC/USDT", "1h", 0)
	mustCandles(t, cp, exchange.Spot, "BTC/USDT", "1h", DefaultLimit)
	if n := inner.candles.Load(); n != 6 {
		t.Fatalf("%d inner calls after limit 0 and %d", n, DefaultLimit)
	}
	// 60 s after the first fetch the entry expires.
	c.Advance(time.Second)
	if x := mustCandles(t, cp, exchange.Spot, "BTC/USDT", "1m", 10); !x[0].Close.Equal(testkit.D("7")) {
		t.Errorf("after 60 s: close %s, want a fresh (7th) fetch", x[0].Close)
	}
	// A bad timeframe never reaches the inner provider.
	if _, err := cp.Candles(ctx, exchange.Spot, "BTC/USDT", "3m", 10); !errors.Is(err, ErrBadTimeframe) {
		t.Errorf("bad timeframe: %v", err)
	}
	if n := inner.candles.Load(); n != 7 {
		t.Errorf("%d inner calls", n)
	}
}

func TestCachedDoesNotCacheErrors(t *testing.T) {
	inner := &countingProvider{err: errs.New(errs.RateLimited, "slow down")}
	cp := NewCached(inner, CachedOptions{})
	for range 3 {
		if _, err := cp.Price(ctx, exchange.Spot, "BTC/USDT"); errs.CodeOf(err) != errs.RateLimited {
			t.Fatalf("error lost: %v", err)
		}
		if _, err := cp.Candles(ctx, exchange.Spot, "BTC/USDT", "1m", 5); errs.CodeOf(err) != errs.RateLimited {
			t.Fatalf("error lost: %v", err)
		}
	}
	if inner.prices.Load() != 3 || inner.candles.Load() != 3 {
		t.Errorf("errors were cached: %d/%d calls", inner.prices.Load(), inner.candles.Load())
	}
}

func TestCachedDeduplicatesConcurrentMisses(t *testing.T) {
	inner := &countingProvider{gate: make(chan struct{})}
	cp := NewCached(inner, CachedOptions{})
	var wg sync.WaitGroup
	errc := make(chan error, 40)
	for range 20 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			if _, err := cp.Price(ctx, exchange.Spot, "BTC/USDT"); err != nil {
				errc <- err
			}
		}()
		go func() {
			defer wg.Done()
			if cs, err := cp.Candles(ctx, exchange.Spot, "BTC/USDT", "1h", 24); err != nil || len(cs) != 24 {
				errc <- errors.Join(err, errors.New("short answer"))
			}
		}()
	}
	// Let the callers pile up on the blocked first call, then release it. A caller that
	// arrives after the release finds the answer in the cache, so the count is exact.
	testkit.EventuallyTrue(t, 5*time.Second, "the first price and candle calls started", func() bool {
		return inner.prices.Load() >= 1 && inner.candles.Load() >= 1
	})
	time.Sleep(20 * time.Millisecond)
	close(inner.gate)
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Error(err)
	}
	if p, c := inner.prices.Load(), inner.candles.Load(); p != 1 || c != 1 {
		t.Errorf("20 concurrent misses made %d price and %d candle calls", p, c)
	}
}

// A waiter whose context ends gives up; the shared call goes on and fills the cache.
func TestCachedWaiterCancellation(t *testing.T) {
	inner := &countingProvider{gate: make(chan struct{})}
	cp := NewCached(inner, CachedOptions{})
	cctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := cp.Price(cctx, exchange.Spot, "BTC/USDT")
		done <- err
	}()
	testkit.EventuallyTrue(t, 5*time.Second, "the shared price call started", func() bool { return inner.prices.Load() == 1 })
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	close(inner.gate)
	testkit.EventuallyTrue(t, 5*time.Second, "the shared call filled the cache", func() bool {
		cp.mu.RLock()
		defer cp.mu.RUnlock()
		return len(cp.prices) == 1
	})
	mustPrice(t, cp, exchange.Spot, "BTC/USDT")
	if n := inner.prices.Load(); n != 1 {
		t.Errorf("%d inner calls", n)
	}
}

func TestCachedEviction(t *testing.T) {
	inner := &countingProvider{}
	c := testkit.NewClock(testNow)
	cp := NewCached(inner, CachedOptions{Now: c.Now, MaxEntries: 3})
	for _, sym := range []string{"A/USDT", "B/USDT", "C/USDT", "D/USDT", "E/USDT"} {
		mustPrice(t, cp, exchange.Spot, sym)
		mustCandles(t, cp, exchange.Spot, sym, "1m", 2)
	}
	if len(cp.prices) > 3 || len(cp.candles) > 3 {
		t.Errorf("cache grew to %d prices, %d candle sets", len(cp.prices), len(cp.candles))
	}
}

func TestCachedOverSimulatedAndBinance(t *testing.T) {
	c := testkit.NewClock(testNow)
	sim := newSim(0, c)
	cp := NewCached(sim, CachedOptions{Now: c.Now})
	if a, b := mustPrice(t, cp, exchange.Spot, "BTC/USDT"), mustPrice(t, sim, exchange.Spot, "BTC/USDT"); !a.Equal(b) {
		t.Errorf("%s vs %s", a, b)
	}
	if _, err := cp.Price(ctx, exchange.Spot, "NOPE/USDT"); !errors.Is(err, ErrUnknownSymbol) {
		t.Errorf("unknown symbol through the cache: %v", err)
	}
	b, spot, _ := newBinanceFakes(t)
	cb := NewCached(b, CachedOptions{Now: c.Now})
	for range 3 {
		mustCandles(t, cb, exchange.Spot, "BTC/USDT", "4h", 3)
		mustPrice(t, cb, exchange.Spot, "BTC/USDT")
	}
	if n := len(spot.reqs()); n != 2 {
		t.Errorf("%d requests to Binance", n)
	}
}
