package candles

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/store"
)

// entry is one cached series: every closed candle fetched, normalised, and their JSON.
type entry struct {
	candles  []marketdata.Candle
	fallback bool
	// err is a cached refusal (an unknown symbol), served like a series.
	err     *errs.Error
	expires time.Time

	// json is ",c1,c2,…,cn]" and offs[i] the index of the comma before candle i, so the
	// JSON array of the last k candles is "[" + json[offs[n-k]+1:].
	json []byte
	offs []int
}

func newEntry(cs []marketdata.Candle, fallback bool, expires time.Time) *entry {
	e := &entry{candles: cs, fallback: fallback, expires: expires, offs: make([]int, len(cs))}
	e.json = make([]byte, 0, 128*len(cs)+1)
	for i, c := range cs {
		e.offs[i] = len(e.json)
		e.json = append(e.json, ',')
		b, _ := c.MarshalJSON() // cannot fail
		e.json = append(e.json, b...)
	}
	if len(cs) == 0 {
		e.json = append(e.json, ',')
	}
	e.json = append(e.json, ']')
	return e
}

// appendWindow appends the JSON array of the last k candles.
func (e *entry) appendWindow(b []byte, k int) []byte {
	b = append(b, '[')
	if k == 0 {
		return append(b, ']')
	}
	return append(b, e.json[e.offs[len(e.offs)-k]+1:]...)
}

// record is an entry as stored in Redis.
type record struct {
	Expires  int64               `json:"exp"` // ms on the writer's clock
	Fallback bool                `json:"fb,omitempty"`
	Code     errs.Code           `json:"code,omitempty"`
	Message  string              `json:"msg,omitempty"`
	Candles  []marketdata.Candle `json:"c,omitempty"`
}

func (e *entry) record() record {
	r := record{Expires: e.expires.UnixMilli(), Fallback: e.fallback, Candles: e.candles}
	if e.err != nil {
		r.Code, r.Message = e.err.Code, e.err.Message
	}
	return r
}

func (r record) entry() *entry {
	if r.Code != "" {
		return &entry{err: errs.New(r.Code, "%s", r.Message), expires: time.UnixMilli(r.Expires)}
	}
	return newEntry(r.Candles, r.Fallback, time.UnixMilli(r.Expires))
}

// load finds the series of key in Redis or fetches it (see the package comment), and keeps
// it in memory until its expiry. It runs once per key at a time in a replica.
func (s *Service) load(ctx context.Context, src source, q query, key string) (*entry, error) {
	// The load serves every caller waiting on key, so no single caller's end stops it.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.o.LockTTL+2*s.o.FetchTimeout)
	defer cancel()
	e, err := s.shared(ctx, src, q, key)
	if err != nil {
		return nil, err
	}
	s.keep(key, e)
	return e, nil
}

func (s *Service) shared(ctx context.Context, src source, q query, key string) (*entry, error) {
	lock := store.CandlesLock(src.id, string(q.kind), q.symbol, q.timeframe)
	token := rand.Text()
	for {
		e, err := s.read(ctx, key)
		if err == nil && e == nil {
			var won bool
			won, err = s.o.Redis.SetNX(ctx, lock, token, s.o.LockTTL).Result()
			if err == nil && won {
				// Another replica may have stored the entry and released the lock between
				// the read above and the SET NX: read once more before fetching, so that
				// a series is still fetched once across replicas.
				if e, err = s.read(ctx, key); err == nil && e != nil {
					s.release(ctx, lock, token)
					return e, nil
				}
				return s.fetchAndStore(ctx, src, q, key, lock, token)
			}
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil, errs.Wrap(ctx.Err(), errs.ExchangeError, "candles: no answer in time")
			}
			s.o.Logger.Warn("candles cache unavailable; fetching without it", "err", err)
			return s.fetch(ctx, src, q)
		}
		if e != nil {
			return e, nil
		}
		select {
		case <-ctx.Done():
			return nil, errs.Wrap(ctx.Err(), errs.ExchangeError, "candles: no answer in time")
		case <-time.After(s.o.PollInterval):
		}
	}
}

// read is key's entry while it has not expired, nil when there is none.
func (s *Service) read(ctx context.Context, key string) (*entry, error) {
	raw, err := s.o.Redis.Get(ctx, key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var r record
	if err := json.Unmarshal(raw, &r); err != nil {
		s.o.Logger.Warn("unreadable candles entry; fetching again", "key", key, "err", err)
		return nil, nil
	}
	if !s.o.Now().Before(time.UnixMilli(r.Expires)) {
		return nil, nil
	}
	return r.entry(), nil
}

// storeScript writes an entry and releases the lock if this replica still holds it, in one
// step on the series' slot: KEYS[1] the entry, KEYS[2] the lock; ARGV the record, its
// lifetime in ms, the lock token.
var storeScript = redis.NewScript(`
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
if redis.call('GET', KEYS[2]) == ARGV[3] then redis.call('DEL', KEYS[2]) end
return 1`)

// release drops the fetch lock if this replica still holds it; a failure only delays the
// other replicas until the lock expires.
func (s *Service) release(ctx context.Context, lock, token string) {
	if err := releaseScript.Run(ctx, s.o.Redis, []string{lock}, token).Err(); err != nil {
		s.o.Logger.Warn("cannot release the candles lock", "key", lock, "err", err)
	}
}

// releaseScript drops the lock if this replica still holds it: KEYS[1] the lock, ARGV[1]
// the token.
var releaseScript = redis.NewScript(`
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0`)

// entryGrace keeps an entry in Redis a little past its expiry on the writer's clock, so
// that a replica whose clock is slightly behind still finds it; readers judge expiry by the
// stored time, never by the key's existence.
const entryGrace = 5 * time.Second

func (s *Service) fetchAndStore(ctx context.Context, src source, q query, key, lock, token string) (*entry, error) {
	e, err := s.fetch(ctx, src, q)
	if err != nil {
		s.release(ctx, lock, token)
		return nil, err
	}
	raw, err := json.Marshal(e.record())
	if err != nil {
		return nil, err
	}
	life := max(e.expires.Sub(s.o.Now()), time.Millisecond) + entryGrace
	if err := storeScript.Run(ctx, s.o.Redis, []string{key, lock}, raw, life.Milliseconds(), token).Err(); err != nil {
		s.o.Logger.Warn("cannot store candles in Redis; serving them from memory", "key", key, "err", err)
	}
	return e, nil
}

// fetch reads the series from its source, falling back to the public source when the
// exchange cannot serve it (unreachable, 5xx, rate limit, a malformed answer). An unknown
// symbol is a cached refusal, not a reason to fall back.
func (s *Service) fetch(ctx context.Context, src source, q query) (*entry, error) {
	if src.upstream != nil {
		cs, err := s.series(ctx, src.upstream, q)
		switch {
		case err == nil:
			return newEntry(cs, false, s.expiry(q.tf)), nil
		case errors.Is(err, marketdata.ErrUnknownSymbol):
			return &entry{err: errs.New(errs.InvalidSymbol, "%s is not traded on %s %s", q.symbol, src.exchange, q.kind),
				expires: s.expiry(q.tf)}, nil
		}
		s.o.Logger.Info("exchange candles unavailable; serving the public source", "exchange", src.exchange, "err", err)
	}
	cs, err := s.series(ctx, s.o.Fallback, q)
	switch {
	case err == nil:
		return newEntry(cs, true, s.expiry(q.tf)), nil
	case errors.Is(err, marketdata.ErrUnknownSymbol) && src.upstream == nil:
		return &entry{err: errs.New(errs.InvalidSymbol, "%s has no candles on the public source", q.symbol),
			expires: s.expiry(q.tf)}, nil
	case errors.Is(err, marketdata.ErrUnknownSymbol):
		return &entry{err: errs.New(errs.ExchangeError, "%s cannot be reached and the public source has no candles for %s",
			src.exchange, q.symbol), expires: s.expiry(q.tf)}, nil
	}
	return nil, errs.Wrap(err, errs.ExchangeError, "candles unavailable")
}

// series fetches and normalises one source's candles.
func (s *Service) series(ctx context.Context, p marketdata.Provider, q query) ([]marketdata.Candle, error) {
	fctx, cancel := context.WithTimeout(ctx, s.o.FetchTimeout)
	defer cancel()
	cs, err := p.Candles(fctx, q.kind, q.symbol, q.timeframe, fetchRows)
	if err != nil {
		return nil, err
	}
	return Normalise(cs, q.tf, s.o.Now(), MaxLimit)
}

// expiry is when a series fetched now stops being served: the next candle close, at most
// TTL away.
func (s *Service) expiry(tf time.Duration) time.Time {
	now := s.o.Now()
	next := time.UnixMilli(marketdata.CandleOpenMs(now.UnixMilli(), tf)).Add(tf)
	if limit := now.Add(TTL); limit.Before(next) {
		return limit
	}
	return next
}

// keep holds e in memory until its expiry; when the map is full, expired entries go, then
// arbitrary ones.
func (s *Service) keep(key string, e *entry) {
	now := s.o.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.entries) >= s.o.MaxEntries {
		for k, v := range s.entries {
			if !now.Before(v.expires) || len(s.entries) >= s.o.MaxEntries {
				delete(s.entries, k)
			}
		}
	}
	s.entries[key] = e
}
