package mcpd

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
)

// authenticate admits a request with a live bearer token: a user's full-access bearer JWT,
// or an OAuth access token whose audience is this MCP resource (a token for the API is not
// one for MCP, RFC 8707). The shared verifier applies revocation and password changes.
// Refusals: 401 with the RFC 6750/9728 challenge naming the metadata document (no token, or
// one that is invalid, expired, revoked, from before a password change, from the deprecated
// token endpoint, or of an account that is gone); 403 TIER_NOT_ALLOWED when the account's
// tier lacks allowMcpServer; 503 when Redis cannot be read (never admitted on a guess).
func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, err := s.o.Verifier.VerifyRequest(r)
		if err == nil && p.Kind == auth.KindOAuth && !slices.Contains(p.Audience, s.resource) {
			err = auth.ErrInvalidToken
		}
		if err != nil {
			s.refuse(w, err)
			return
		}
		id, err := s.identity(r.Context(), p.UserID)
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
		ctx := context.WithValue(auth.WithPrincipal(r.Context(), p), identityKey{}, requestIdentity{userID: p.UserID, Identity: id})
		next.ServeHTTP(w, r.WithContext(ctx))
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

// identity reads the tier and email of userID in one round trip; Options.Tier, when set,
// decides the tier.
func (s *Server) identity(ctx context.Context, userID string) (auth.Identity, error) {
	id, err := s.o.Users.IdentityOf(ctx, userID)
	if err != nil || s.o.Tier == nil {
		return id, err
	}
	id.Tier, err = s.o.Tier(ctx, userID)
	return id, err
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
