package store

// Keys of the read API (webhookd/readapi).
//
//	rate:sigops:ratelimit:api:<ip>   string  GCRA state of one client address (go-redis/redis_rate
//	                                         adds its "rate:" prefix); its own slot

// APIRateLimit is the read API's rate limit key of one client address, as given to
// go-redis/redis_rate, which stores it under "rate:" + the key.
func APIRateLimit(ip string) string { return prefix + "ratelimit:api:" + ip }
