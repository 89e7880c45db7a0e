package readapi

import (
	"net/http"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/store"
)

// RateLimit is a GCRA limit: Rate requests per Period with bursts of Burst.
type RateLimit struct {
	Rate   int
	Period time.Duration
	Burst  int
}

// DefaultPerIP is decision 3 in docs/decisions.md: 600 requests a minute per client
// address on the API, with bursts of 100 (a dashboard page load asks for several figures
// at once).
var DefaultPerIP = RateLimit{Rate: 600, Period: time.Minute, Burst: 100}

// limiter counts requests per client address in Redis (go-redis/redis_rate, GCRA on one key
// per address), so that every replica shares the count.
type limiter struct {
	l     *redis_rate.Limiter
	limit redis_rate.Limit
}

func newLimiter(rdb redis.UniversalClient, l RateLimit) *limiter {
	return &limiter{l: redis_rate.NewLimiter(rdb), limit: redis_rate.Limit{Rate: l.Rate, Period: l.Period, Burst: l.Burst}}
}

// limitPerIP answers 429 RATE_LIMITED with Retry-After past the per-address limit. The
// address is the peer's, or the client a trusted proxy names. When Redis cannot be read
// the request is served: the limit protects the service's capacity, and refusing every
// read while Redis is down would not spare anything (the reads fail on Redis anyway).
func (a *API) limitPerIP(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ip, ok := a.o.Proxies.Client(r)
		if ok {
			res, err := a.limiter.l.Allow(r.Context(), store.APIRateLimit(ip.String()), a.limiter.limit)
			if err != nil {
				a.o.Logger.Warn("read API rate limit unavailable", "err", err)
			} else if res.Allowed == 0 {
				httpapi.WriteError(w, &errs.Error{Code: errs.RateLimited, Message: "too many requests",
					RetryAfter: res.RetryAfter}, "", a.o.Now())
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
