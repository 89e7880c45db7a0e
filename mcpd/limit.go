package mcpd

import (
	"net/http"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/store"
)

// DefaultRateLimit is requests a minute per OAuth client of a user, or per user for bearer
// JWTs (decision "MCP server" 4).
const DefaultRateLimit = 300

// limiter counts requests in Redis (go-redis/redis_rate, GCRA on one key per subject), so
// that every replica shares the count.
type limiter struct {
	l     *redis_rate.Limiter
	limit redis_rate.Limit
}

func newLimiter(rdb redis.UniversalClient, perMinute int) *limiter {
	return &limiter{l: redis_rate.NewLimiter(rdb), limit: redis_rate.PerMinute(perMinute)}
}

// rateSubject is what a principal's requests count against: its OAuth client for this user
// (one user's agent cannot spend another user's budget of the same client), or the user's
// bearer JWTs together.
func rateSubject(p *auth.Principal) string {
	if p.Kind == auth.KindOAuth {
		return "oauth:" + p.ClientID + ":" + p.UserID
	}
	return "user:" + p.UserID
}

// limit answers 429 RATE_LIMITED with Retry-After past the limit. When Redis cannot be read
// the request is served: the limit protects capacity, and the tools fail on Redis anyway.
func (s *Server) limit(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := auth.PrincipalFrom(r.Context()); ok {
			res, err := s.limiter.l.Allow(r.Context(), store.MCPRateLimit(rateSubject(p)), s.limiter.limit)
			if err != nil {
				s.o.Logger.Warn("mcpd rate limit unavailable", "err", err)
			} else if res.Allowed == 0 {
				s.metrics.requests.WithLabelValues("rate_limited").Inc()
				httpapi.WriteError(w, &errs.Error{Code: errs.RateLimited, Message: "too many requests",
					RetryAfter: res.RetryAfter}, "", s.o.Now())
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}
