// Package restkit holds what the hand-written REST adapters (bybit, okx) do alike and
// must keep doing alike: the decimal strings both venues answer, the per-host caches that
// every account on a host shares (instruments, clock offsets), the bounded retry of a call,
// the pooled HTTP client and base URLs, and the typed errors of a venue out of reach or of
// a balance too small. Each piece was written twice when the OKX adapter was modelled on
// Bybit's; it lives here once so that a fix to one (a retry bound, the cache's stale
// fallback) reaches both.
//
// What differs by venue stays in the adapter: signing, which failures are transient, the
// error-code tables, request bodies and how an order is looked up.
//
// # Files
//
// num.go: Num, a decimal string; cache.go: Cache, a TTL'd cache with one fetch per key in
// flight; clock.go: Offsets, the learned clock offset per host; retry.go: Attempts, the
// bounded retry loop with backoff; http.go: the pooled client, BaseURL and Remaining;
// errors.go: Unreachable and Shortfall.
package restkit
