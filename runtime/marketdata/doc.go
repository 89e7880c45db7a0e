// Package marketdata supplies market prices and candles: to the paper exchange (fills at the
// current price), to the stop-loss / take-profit watcher (Price polled many times a second)
// and to the candles service (runtime/candles, behind GET /api/charts/candles).
//
// Everything goes through one interface, Provider, with these implementations:
//
//   - Simulated: a deterministic simulated market (this machine and the local stack have no
//     internet). Prices are a pure function of (seed, symbol, time), so every replica and every
//     restart sees the same price at the same instant without sharing state. See simulated.go
//     for the model and its trade-offs.
//   - BinancePublic: Binance's public REST market data (spot /api/v3, USDⓈ-M futures /fapi/v1),
//     no API key.
//   - BybitPublic: Bybit's public v5 market data (/v5/market/kline and tickers, spot and
//     linear), no API key.
//   - Cached: a wrapper caching Candles for 60 s and Price for a short TTL (1 s), with
//     concurrent misses of one key deduplicated into one upstream call.
//
// # Choosing a provider by flag
//
// Daemons take a flag (by convention --market-data) and call FromFlag with its value:
//
//	simulated   (default, also the empty string) the deterministic Simulated market with its
//	            default options (seed 0, anchored at 2024-01-01T00:00:00Z, 1 s ticks), so that
//	            all replicas agree on prices.
//	binance     BinancePublic against https://api.binance.com and https://fapi.binance.com,
//	            wrapped in Cached with the default TTLs.
//
// # Symbols, timeframes and errors
//
// Symbols are canonical BASE/QUOTE ("BTC/USDT"); resolving the forms senders use is the job of
// runtime/signal. Timeframes are the spec's 1m 5m 15m 30m 1h 4h 1d 1w (Timeframes); candles are
// aligned like Binance's: to multiples of the timeframe since the Unix epoch, weekly candles
// to Monday 00:00 UTC. An unknown symbol is an *errs.Error with code INVALID_SYMBOL whose
// chain holds ErrUnknownSymbol; an unknown timeframe wraps ErrBadTimeframe (the spec has no
// code for it: the API layer answers it as a bad request). Upstream failures are
// RATE_LIMITED (with RetryAfter) or EXCHANGE_ERROR.
package marketdata
