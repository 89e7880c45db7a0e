package store

// Keys of the read API (webhookd/readapi).
//
//	rate:sigops:ratelimit:api:<ip>   string  GCRA state of one client address (go-redis/redis_rate
//	                                         adds its "rate:" prefix); its own slot

// APIRateLimit is the read API's rate limit key of one client address, as given to
// go-redis/redis_rate, which stores it under "rate:" + the key.
func APIRateLimit(ip string) string { return prefix + "ratelimit:api:" + ip }

// Candles (runtime/candles):
//
//	sigops:candles:{<source>|<kind>|<symbol>|<tf>}        string  one source's closed candles of a
//	                                                               symbol and timeframe, JSON, with its
//	                                                               expiry; {tag}: one slot per series
//	sigops:candles:{<source>|<kind>|<symbol>|<tf>}:lock   string  the replica fetching that series
//	                                                               (SET NX PX), beside its entry
//
// The entry and its lock share a hash tag so that the script writing an entry and releasing
// the lock touches one slot; every series has its own slot, spreading them over a Cluster.

// CandlesEntry is the cached series of source (an exchange and its endpoint, or the public
// fallback), market kind, canonical symbol and timeframe.
func CandlesEntry(source, kind, symbol, timeframe string) string {
	return prefix + "candles:{" + source + "|" + kind + "|" + symbol + "|" + timeframe + "}"
}

// CandlesLock is the fetch lock of CandlesEntry's series, in its slot.
func CandlesLock(source, kind, symbol, timeframe string) string {
	return CandlesEntry(source, kind, symbol, timeframe) + ":lock"
}

// Keys of the hosted MCP server (mcpd).
//
//	sigops:ratelimit:mcp:<subject>   string  GCRA state (theoretical arrival time, µs) of one
//	                                         OAuth client of a user, or of a user's bearer
//	                                         JWTs (mcpd/limit.go); its own slot
//	sigops:mcp:session:<id>          string  the user ID a streamable HTTP session belongs
//	                                         to; idle expiry; its own slot

// MCPSession binds an MCP session ID to the user whose token started it.
func MCPSession(id string) string { return prefix + "mcp:session:" + id }

// MCPRateLimit is mcpd's rate limit key of subject (its GCRA script's, mcpd/limit.go).
func MCPRateLimit(subject string) string { return prefix + "ratelimit:mcp:" + subject }
