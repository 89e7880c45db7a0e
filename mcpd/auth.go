package mcpd

import (
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
		tier, err := s.o.Tier(r.Context(), p.UserID)
		if err != nil {
			s.refuse(w, err)
			return
		}
		if !tier.Capabilities.AllowMcpServer {
			s.metrics.requests.WithLabelValues("tier").Inc()
			httpapi.WriteError(w, errs.New(errs.TierNotAllowed, "the %s tier does not include the MCP server (allowMcpServer); upgrade the account's tier to use it",
				tier.Name), "", s.o.Now())
			return
		}
		next.ServeHTTP(w, r.WithContext(auth.WithPrincipal(r.Context(), p)))
	})
}

// refuse answers a failed authentication.
func (s *Server) refuse(w http.ResponseWriter, err error) {
	switch {
	case errors.Is(err, auth.ErrNoToken):
		s.metrics.requests.WithLabelValues("unauthorized").Inc()
		auth.WriteUnauthorized(w, false, s.metadataURL, s.o.Now().UnixMilli())
	case errors.Is(err, auth.ErrInvalidToken), errors.Is(err, auth.ErrNotFound):
		s.metrics.requests.WithLabelValues("unauthorized").Inc()
		auth.WriteUnauthorized(w, true, s.metadataURL, s.o.Now().UnixMilli())
	default:
		s.metrics.requests.WithLabelValues("unavailable").Inc()
		s.o.Logger.Error("mcpd: token state unavailable", "err", err)
		httpapi.WriteJSON(w, http.StatusServiceUnavailable, httpapi.Failure{Error: "service unavailable",
			Code: errs.InternalError, Timestamp: s.o.Now().UnixMilli()})
	}
}
