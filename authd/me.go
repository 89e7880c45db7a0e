package authd

import (
	"errors"
	"net/http"

	"github.com/sigops/sigops/runtime/auth"
)

// handleMe is GET /api/user/me for a bearer JWT, an OAuth access token or a session cookie.
// A request with an Authorization header is judged by it alone (no fallback to the cookie).
func (s *Server) handleMe(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if _, ok := r.Header["Authorization"]; ok {
		p, err := s.verifier.VerifyRequest(r)
		if err != nil {
			s.metrics.me.WithLabelValues("bearer", "refused").Inc()
			s.writeVerifyError(w, err)
			return
		}
		st, err := auth.StatusOf(ctx, s.users, s.oauth, p)
		if err != nil {
			s.meUnavailable(w, err)
			return
		}
		s.metrics.me.WithLabelValues(p.Kind, "ok").Inc()
		writeJSON(w, http.StatusOK, st)
		return
	}
	cur, err := s.currentSession(w, r)
	if err != nil {
		s.meUnavailable(w, err)
		return
	}
	if !cur.live {
		s.metrics.me.WithLabelValues("none", "refused").Inc()
		auth.WriteUnauthorized(w, false, s.o.BaseURL+"/.well-known/oauth-protected-resource", s.o.Now().UnixMilli())
		return
	}
	s.metrics.me.WithLabelValues("session", "ok").Inc()
	writeJSON(w, http.StatusOK, auth.NewStatus(cur.user, nil))
}

func (s *Server) meUnavailable(w http.ResponseWriter, err error) {
	if errors.Is(err, auth.ErrNotFound) {
		auth.WriteUnauthorized(w, true, s.o.BaseURL+"/.well-known/oauth-protected-resource", s.o.Now().UnixMilli())
		return
	}
	s.log().Error("user/me", "error", err)
	writeJSON(w, http.StatusServiceUnavailable, failureBody{Error: "service unavailable", Code: "INTERNAL_ERROR", Timestamp: s.o.Now().UnixMilli()})
}
