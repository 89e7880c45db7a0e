// Package candles is the candles service behind GET /api/charts/candles, which webhookd's
// read API serves and mcpd and the dashboard call: it resolves the request (symbol
// spelling, exchange, timeframe, limit), reads the series from the exchange's public
// market data, falls back to the configured public source when the exchange cannot be
// reached, and caches the answer in Redis for every replica.
//
// # What a series is
//
// Closed candles only, oldest first, one per interval: the still-open candle is left out,
// so a cached answer never changes under a client. An interval the source reports no
// candle for (no trade) is filled with a candle at the previous close and volume 0, as
// exchanges do themselves; a candle the source repeats is kept once (the last copy). The
// series ends with the last closed candle the source reported.
//
// # Cache
//
// A series is cached per (source, market kind, symbol, timeframe): the source is an
// exchange with its endpoint (mainnet, testnet or a connection's own base URL), or the
// public fallback. The service always fetches MaxLimit+1 rows (the open candle among them)
// and slices the limit asked for, so every limit of a series shares one fetch. An entry
// lives until the next candle closes, at most TTL (60 s), so a new closed candle shows at
// once. Within a replica the answer stays in memory until that expiry (no Redis round trip
// on a hot key); across replicas the Redis entry serves. One upstream fetch per series and
// expiry, however many replicas and requests ask: concurrent misses in a replica share one
// load (singleflight); replicas race for a lock (SET NX PX LockTTL) beside the entry; the
// winner fetches, writes the entry and drops the lock in one script; the others poll the
// entry every PollInterval and take the lock themselves only once it has expired (the
// winner died): a request waits at most LockTTL plus one fetch for a dead winner. When
// Redis cannot be read the replica fetches on its own and keeps the answer in memory:
// candles are public data, and serving them beats refusing.
package candles

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/store"
)

// Limits of a request.
const (
	// MaxLimit is the most candles one answer holds; every series is fetched at this
	// length (plus the open candle), well inside Binance's and Bybit's 1000 per request.
	MaxLimit = 500
	// TTL is the longest a series is cached (the interface's 60 s).
	TTL = 60 * time.Second
)

// fetchRows is the upstream request's length: MaxLimit closed candles and the open one.
const fetchRows = MaxLimit + 1

// Defaults of Options.
const (
	DefaultFetchTimeout = 2 * time.Second // one upstream call: the spec's exchange bound
	DefaultLockTTL      = 6 * time.Second // an upstream call, the fallback's and the write
	DefaultPollInterval = 20 * time.Millisecond
	DefaultMaxEntries   = 4096
)

// defaultLimits is the number of candles of a timeframe when the request gives none: a
// chart's usual span (6 hours of 1m … 5 years of 1w).
var defaultLimits = map[string]int{
	"1m": 360, "5m": 288, "15m": 192, "30m": 336, "1h": 168, "4h": 180, "1d": 365, "1w": 260,
}

// DefaultLimit is the number of candles of timeframe when a request gives no limit (0 for
// an unknown timeframe).
func DefaultLimit(timeframe string) int { return defaultLimits[timeframe] }

// Exchange names accepted as exchangeId besides a connection's UID.
const (
	Binance = "binance"
	Bybit   = "bybit"
	OKX     = "okx"
	// Paper is paper trading, which has no exchange: the public fallback serves it.
	Paper = "paper"
)

// IsExchangeName reports whether exchangeID names an exchange (or paper) rather than a
// connection: such requests need no caller.
func IsExchangeName(exchangeID string) bool {
	switch strings.ToLower(strings.TrimSpace(exchangeID)) {
	case Binance, Bybit, OKX, Paper:
		return true
	}
	return false
}

// Venue is an exchange's public market-data hosts.
type Venue struct {
	Spot, Futures               string
	TestnetSpot, TestnetFutures string
}

// DefaultVenues are Binance's, Bybit's and OKX's real hosts (OKX's demo trading is its
// production host with a header, and its market data is the same).
func DefaultVenues() map[string]Venue {
	return map[string]Venue{
		Binance: {Spot: marketdata.BinanceSpotURL, Futures: marketdata.BinanceFuturesURL,
			TestnetSpot: marketdata.BinanceSpotTestnetURL, TestnetFutures: marketdata.BinanceFuturesTestnetURL},
		Bybit: {Spot: marketdata.BybitURL, Futures: marketdata.BybitURL,
			TestnetSpot: marketdata.BybitTestnetURL, TestnetFutures: marketdata.BybitTestnetURL},
		OKX: {Spot: marketdata.OKXURL, Futures: marketdata.OKXURL, TestnetSpot: marketdata.OKXURL, TestnetFutures: marketdata.OKXURL},
	}
}

// Connections reads exchange connection projections; *credentials.Connections is one.
type Connections interface {
	Get(ctx context.Context, uid string) (credentials.Connection, error)
}

// Options configure a Service.
type Options struct {
	Redis redis.UniversalClient
	// Symbols is the index symbols are resolved against (webhookd's known symbols).
	Symbols func() *signal.Symbols
	// Fallback is the public source: it serves paper trading and any exchange that cannot
	// be reached (webhookd's --market-data provider).
	Fallback marketdata.Provider
	// Connections reads exchange connections (nil: credentials on Redis).
	Connections Connections
	// Venues are the exchanges' hosts (nil: DefaultVenues).
	Venues map[string]Venue
	// HTTPClient sends upstream requests (nil: a pooled client of the service's own).
	HTTPClient *http.Client
	// FetchTimeout bounds one upstream call (0: DefaultFetchTimeout).
	FetchTimeout time.Duration
	// LockTTL is the fetch lock's lifetime (0: DefaultLockTTL); it must exceed two
	// FetchTimeouts (the exchange, then the fallback).
	LockTTL time.Duration
	// PollInterval is how often a replica waiting on another's fetch reads the entry (0:
	// DefaultPollInterval).
	PollInterval time.Duration
	// MaxEntries bounds the series held in memory (0: DefaultMaxEntries).
	MaxEntries int
	Logger     *slog.Logger
	// Now is the clock (nil: time.Now). Entries carry their expiry on this clock.
	Now func() time.Time
}

// Service answers candle requests. It is safe for concurrent use.
type Service struct {
	o     Options
	group singleflight.Group

	mu      sync.RWMutex
	entries map[string]*entry

	providers sync.Map // providerKey → marketdata.Provider
}

// New returns the service.
func New(o Options) *Service {
	if o.Connections == nil {
		o.Connections = credentials.NewConnections(o.Redis)
	}
	if o.Venues == nil {
		o.Venues = DefaultVenues()
	}
	if o.HTTPClient == nil {
		o.HTTPClient = &http.Client{Transport: &http.Transport{Proxy: http.ProxyFromEnvironment,
			MaxIdleConnsPerHost: 8, IdleConnTimeout: 90 * time.Second, ForceAttemptHTTP2: true}}
	}
	if o.FetchTimeout <= 0 {
		o.FetchTimeout = DefaultFetchTimeout
	}
	if o.LockTTL <= 0 {
		o.LockTTL = DefaultLockTTL
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = DefaultMaxEntries
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Service{o: o, entries: make(map[string]*entry)}
}

// Request is one candles request, as the caller spelt it.
type Request struct {
	// Symbol in any spelling signal.Symbols.Resolve accepts (BTCUSDT, btc/usdt,
	// BINANCE:BTCUSDT.P, BTC/USDT:USDT ...). Required.
	Symbol string
	// ExchangeID is "binance", "bybit", "paper", or the UID of one of Owner's exchange
	// connections. Required.
	ExchangeID string
	// Timeframe is one of 1m 5m 15m 30m 1h 4h 1d 1w. Required.
	Timeframe string
	// Limit is the number of candles, 1 to MaxLimit; 0 means DefaultLimit(Timeframe).
	Limit int
	// Market is "spot" (also "") or "futures".
	Market string
	// Owner is the caller's e-mail, "" for an anonymous caller (who can name exchanges,
	// not connections).
	Owner string
}

// Result is a series: Candles oldest first, closed candles only. Candles is shared with
// the cache, so a hot series costs no copy (candles are many pointers for the garbage
// collector to scan): read its elements, never assign them; its capacity ends at its
// length, so append copies.
type Result struct {
	Symbol        string              `json:"symbol"`
	Timeframe     string              `json:"timeframe"`
	Candles       []marketdata.Candle `json:"candles"`
	UsingFallback bool                `json:"usingFallback"`

	// enc is the entry's encoded candles, from which MarshalJSON slices the same window.
	enc *entry
}

// MarshalJSON writes the result with its candles encoded once per cache entry rather than
// once per request (candles are JSON numbers, exact: marketdata.Candle.MarshalJSON).
func (r Result) MarshalJSON() ([]byte, error) {
	if r.enc == nil { // a Result built by hand
		type plain Result
		return json.Marshal(plain(r))
	}
	b := make([]byte, 0, 96+len(r.enc.json))
	b = append(b, `{"symbol":`...)
	b = strconv.AppendQuote(b, r.Symbol)
	b = append(b, `,"timeframe":`...)
	b = strconv.AppendQuote(b, r.Timeframe)
	b = append(b, `,"candles":`...)
	b = r.enc.appendWindow(b, len(r.Candles))
	b = append(b, `,"usingFallback":`...)
	b = strconv.AppendBool(b, r.UsingFallback)
	return append(b, '}'), nil
}

var errExchangeNotFound = errs.New(errs.NotFound, "exchange not found")

// ParseLimit reads a limit query parameter: "" is 0 (the timeframe's default); anything
// but an integer from 1 to MaxLimit is INVALID_PARAMETER naming the bounds.
func ParseLimit(raw string) (int, error) {
	if raw == "" {
		return 0, nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < 1 || n > MaxLimit {
		return 0, limitError()
	}
	return n, nil
}

func limitError() error {
	return errs.New(errs.InvalidParameter, "limit must be an integer from 1 to %d", MaxLimit)
}

// Get answers r. Errors: MISSING_SYMBOL, INVALID_SYMBOL, INVALID_PARAMETER (timeframe,
// limit, market, exchangeId missing), NOT_FOUND "exchange not found" (an unknown exchange,
// or a connection that does not exist or is not Owner's: the same answer), EXCHANGE_ERROR
// when neither the exchange nor the fallback can serve.
func (s *Service) Get(ctx context.Context, r Request) (Result, error) {
	q, err := s.parse(r)
	if err != nil {
		return Result{}, err
	}
	src, err := s.source(ctx, r.ExchangeID, r.Owner)
	if err != nil {
		return Result{}, err
	}
	key := store.CandlesEntry(src.id, string(q.kind), q.symbol, q.timeframe)
	now := s.o.Now()
	s.mu.RLock()
	e := s.entries[key]
	s.mu.RUnlock()
	if e == nil || !now.Before(e.expires) {
		ch := s.group.DoChan(key, func() (any, error) { return s.load(ctx, src, q, key) })
		select {
		case res := <-ch:
			if res.Err != nil {
				return Result{}, res.Err
			}
			e = res.Val.(*entry)
		case <-ctx.Done():
			return Result{}, ctx.Err()
		}
	}
	if e.err != nil {
		return Result{}, e.err
	}
	n := min(q.limit, len(e.candles))
	all := e.candles
	return Result{Symbol: q.symbol, Timeframe: q.timeframe, Candles: all[len(all)-n : len(all) : len(all)],
		UsingFallback: e.fallback, enc: e}, nil
}

// query is a validated request.
type query struct {
	symbol, timeframe string
	tf                time.Duration
	kind              exchange.Kind
	limit             int
}

func (s *Service) parse(r Request) (query, error) {
	if strings.TrimSpace(r.Symbol) == "" {
		return query{}, errs.New(errs.MissingSymbol, "symbol is required")
	}
	var q query
	var err error
	if q.tf, err = marketdata.TimeframeDuration(r.Timeframe); err != nil {
		return query{}, errs.New(errs.InvalidParameter, "timeframe must be one of %s",
			strings.Join(marketdata.Timeframes(), ", "))
	}
	q.timeframe = r.Timeframe
	switch q.limit = r.Limit; {
	case q.limit == 0:
		q.limit = DefaultLimit(r.Timeframe)
	case q.limit < 0 || q.limit > MaxLimit:
		return query{}, limitError()
	}
	if q.kind, err = ParseMarket(r.Market); err != nil {
		return query{}, err
	}
	if strings.TrimSpace(r.ExchangeID) == "" {
		return query{}, errs.New(errs.InvalidParameter, "exchangeId is required: binance, bybit, okx, paper or an exchange connection's ID")
	}
	if q.symbol, err = s.Resolve(r.Symbol); err != nil {
		return query{}, err
	}
	return q, nil
}

// ParseMarket reads a market parameter: "spot" (also "") or "futures"; anything else is
// INVALID_PARAMETER.
func ParseMarket(market string) (exchange.Kind, error) {
	switch market {
	case "", string(exchange.Spot):
		return exchange.Spot, nil
	case string(exchange.Futures):
		return exchange.Futures, nil
	}
	return "", errs.New(errs.InvalidParameter, "market must be spot or futures")
}

// Resolve is the canonical BASE/QUOTE of raw in any spelling signal.Symbols.Resolve
// accepts, against the known symbols; MISSING_SYMBOL when empty, INVALID_SYMBOL when
// unknown.
func (s *Service) Resolve(raw string) (string, error) {
	if strings.TrimSpace(raw) == "" {
		return "", errs.New(errs.MissingSymbol, "symbol is required")
	}
	idx := s.index()
	if idx == nil {
		return "", errs.New(errs.InvalidSymbol, "no symbols are known")
	}
	return idx.Resolve(raw)
}

// Symbols are the known symbols (BASE/QUOTE), sorted: the ones Resolve accepts.
func (s *Service) Symbols() []string {
	if idx := s.index(); idx != nil {
		return idx.List()
	}
	return nil
}

func (s *Service) index() *signal.Symbols {
	if s.o.Symbols == nil {
		return nil
	}
	return s.o.Symbols()
}

// source is where a series comes from.
type source struct {
	// id names the source in cache keys: "fallback", or the exchange and a hash of its
	// endpoint URLs.
	id       string
	exchange string
	// upstream is nil for the fallback itself.
	upstream marketdata.Provider
}

const fallbackID = "fallback"

// maxConnectionID bounds what is looked up as a connection UID (a Kubernetes UID is 36).
const maxConnectionID = 64

func (s *Service) source(ctx context.Context, exchangeID, owner string) (source, error) {
	name := strings.ToLower(strings.TrimSpace(exchangeID))
	switch name {
	case Paper:
		return source{id: fallbackID, exchange: Paper}, nil
	case Binance, Bybit, OKX:
		return s.venue(name, exchange.Endpoints{}), nil
	}
	if owner == "" || len(exchangeID) > maxConnectionID {
		return source{}, errExchangeNotFound
	}
	c, err := s.o.Connections.Get(ctx, exchangeID)
	if errors.Is(err, credentials.ErrNotFound) {
		return source{}, errExchangeNotFound
	}
	if err != nil {
		return source{}, fmt.Errorf("candles: read exchange connection: %w", err)
	}
	if !emails.Same(c.Owner, owner) {
		return source{}, errExchangeNotFound
	}
	return s.venue(strings.ToLower(c.Exchange), c.Endpoints()), nil
}

// venue is the public market data of exchange name at ep; an exchange this service has no
// client for is served by the fallback (a source of its own, so its entries are marked).
func (s *Service) venue(name string, ep exchange.Endpoints) source {
	v, ok := s.o.Venues[name]
	if !ok {
		return source{id: fallbackID, exchange: name}
	}
	spot, fut := v.Spot, v.Futures
	if ep.Testnet {
		spot, fut = v.TestnetSpot, v.TestnetFutures
	}
	if ep.Spot != "" {
		spot = ep.Spot
		if name == Bybit || name == OKX { // one host serves both markets
			fut = ep.Spot
		}
	}
	if ep.Futures != "" {
		fut = ep.Futures
	}
	h := sha256.Sum256([]byte(name + "\n" + spot + "\n" + fut))
	id := name + ":" + hex.EncodeToString(h[:6])
	if p, ok := s.providers.Load(id); ok {
		return source{id: id, exchange: name, upstream: p.(marketdata.Provider)}
	}
	var p marketdata.Provider
	switch name {
	case Binance:
		b := marketdata.NewBinancePublic(spot, fut, s.o.HTTPClient)
		b.Timeout = s.o.FetchTimeout
		p = b
	case OKX:
		o := marketdata.NewOKXPublic(spot, fut, s.o.HTTPClient)
		o.Timeout = s.o.FetchTimeout
		p = o
	default:
		b := marketdata.NewBybitPublic(spot, fut, s.o.HTTPClient)
		b.Timeout = s.o.FetchTimeout
		p = b
	}
	actual, _ := s.providers.LoadOrStore(id, p)
	return source{id: id, exchange: name, upstream: actual.(marketdata.Provider)}
}
