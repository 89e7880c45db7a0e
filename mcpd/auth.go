package mcpd

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/mark3labs/mcp-go/server"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
)

// authenticate admits a request with a live bearer token: a user's full-access bearer JWT,
// or an OAuth access token whose audience is this MCP resource (a token for the API is not
// one for MCP, RFC 8707). Refusals: 401 with the RFC 6750/9728 challenge naming the
// metadata document (no token, or one that is invalid, expired, revoked, from before a
// password change, from the deprecated token endpoint, or of an account that is gone); 403
// TIER_NOT_ALLOWED when the account's tier lacks allowMcpServer; 429 RATE_LIMITED past the
// rate limit; 503 when Redis cannot be read (never admitted on a guess).
//
// Everything a request needs from Redis before its tool runs is one round trip: the
// token's live state with the account's tier and email (never cached, so a revocation on
// any replica refuses the next call), the rate limit, and the session the request names
// (which the session manager then takes from the request instead of reading it again).
// A token's signature is checked once per token (auth.Verifier.Parse).
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, ok := auth.BearerToken(r)
		if !ok {
			s.refuse(w, auth.ErrNoToken)
			return
		}
		p, err := s.o.Verifier.Parse(raw)
		if err == nil && p.Kind == auth.KindOAuth && !slices.Contains(p.Audience, s.resource) {
			err = auth.ErrInvalidToken
		}
		if err != nil {
			s.refuse(w, err)
			return
		}
		ctx := r.Context()
		pipe := s.o.Redis.Pipeline()
		live := s.o.Verifier.Stage(ctx, pipe, p)
		wait := s.limiter.stage(ctx, pipe, s.o.Redis, p)
		session := s.sessions.prefetch(ctx, pipe, r.Header.Get(server.HeaderKeySessionID))
		_, _ = pipe.Exec(ctx) // each read's error is its own
		id, err := live.Identity()
		if err == nil && s.o.Tier != nil {
			id.Tier, err = s.o.Tier(ctx, p.UserID)
		}
		if err != nil {
			s.refuse(w, err)
			return
		}
		if tier := id.Tier; !tier.Capabilities.AllowMcpServer {
			s.metrics.requests.WithLabelValues("tier").Inc()
			httpapi.WriteError(w, errs.New(errs.TierNotAllowed, "the %s tier does not include the MCP server (allowMcpServer); upgrade the account's tier to use it",
				tier.Name), "", s.o.Now())
			return
		}
		if d, err := wait(); err != nil {
			s.o.Logger.Warn("mcpd rate limit unavailable", "err", err)
		} else if d > 0 {
			s.metrics.requests.WithLabelValues("rate_limited").Inc()
			httpapi.WriteError(w, &errs.Error{Code: errs.RateLimited, Message: "too many requests", RetryAfter: d}, "", s.o.Now())
			return
		}
		ctx = context.WithValue(auth.WithPrincipal(ctx, p), identityKey{}, requestIdentity{userID: p.UserID, Identity: id})
		next.ServeHTTP(w, r.WithContext(session(ctx)))
	})
}

// identityKey carries the caller's requestIdentity in a request's context.
type identityKey struct{}

// requestIdentity is the tier and email read once per request by authenticate, so that the
// scope check and the tool do not read the account again.
type requestIdentity struct {
	userID string
	auth.Identity
}

// refuse answers a failed authentication.
func (s *Server) refuse(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, auth.ErrNoToken):
		s.metrics.requests.WithLabelValues("unauthorized").Inc()
		auth.WriteUnauthorizedScope(w, false, s.metadataURL, auth.ScopeRead, s.o.Now().UnixMilli())
	case errors.Is(err, auth.ErrInvalidToken), errors.Is(err, auth.ErrNotFound):
		s.metrics.requests.WithLabelValues("unauthorized").Inc()
		auth.WriteUnauthorizedScope(w, true, s.metadataURL, auth.ScopeRead, s.o.Now().UnixMilli())
	default:
		s.metrics.requests.WithLabelValues("unavailable").Inc()
		s.o.Logger.Error("mcpd: token state unavailable", "err", err)
		httpapi.WriteJSON(w, http.StatusServiceUnavailable, httpapi.Failure{Error: "service unavailable",
			Code: errs.InternalError, Timestamp: s.o.Now().UnixMilli()})
	}
}
