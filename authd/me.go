package authd

import (
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/sigops/sigops/runtime/auth"
)

// tokenInfo is the token block of the Authentication status: OAuth bearers only.
type tokenInfo struct {
	ClientID   string `json:"clientId"`
	ClientName string `json:"clientName"`
	Scope      string `json:"scope"`
	ExpiresAt  string `json:"expiresAt"`
}

type tierInfo struct {
	Name         string            `json:"name"`
	Slug         string            `json:"slug"`
	Capabilities auth.Capabilities `json:"capabilities"`
}

// authStatus is the spec's Authentication status (the check_auth output).
type authStatus struct {
	ID                    string      `json:"id"`
	Name                  string      `json:"name"`
	Email                 string      `json:"email"`
	TelegramLinked        bool        `json:"telegramLinked"`
	Tier                  tierInfo    `json:"tier"`
	StrategyLabBalanceUsd json.Number `json:"strategyLabBalanceUsd"`
	Token                 *tokenInfo  `json:"token,omitempty"`
}

// AuthStatus builds the Authentication status of u; token is nil except for OAuth bearers.
func AuthStatus(u auth.User, token *tokenInfo) any {
	return authStatus{ID: u.ID, Name: u.Name, Email: u.Email, TelegramLinked: u.TelegramLinked,
		Tier:                  tierInfo{Name: u.Tier.Name, Slug: u.Tier.Slug, Capabilities: u.Tier.Capabilities},
		StrategyLabBalanceUsd: json.Number(u.StrategyLabBalanceUsd.StringFixed(2)), Token: token}
}

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
		u, err := s.users.Get(ctx, p.UserID)
		if err != nil {
			s.meUnavailable(w, err)
			return
		}
		var tok *tokenInfo
		if p.Kind == auth.KindOAuth {
			name := ""
			if c, err := s.oauth.GetClient(ctx, p.ClientID); err == nil {
				name = c.Name
			} else if a, err := s.oauth.GetAuthorization(ctx, p.AuthorizationID); err == nil {
				name = a.ClientName
			}
			tok = &tokenInfo{ClientID: p.ClientID, ClientName: name, Scope: p.Scope, ExpiresAt: p.ExpiresAt.UTC().Format(time.RFC3339)}
		}
		s.metrics.me.WithLabelValues(p.Kind, "ok").Inc()
		writeJSON(w, http.StatusOK, AuthStatus(u, tok))
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
	writeJSON(w, http.StatusOK, AuthStatus(cur.user, nil))
}

func (s *Server) meUnavailable(w http.ResponseWriter, err error) {
	if errors.Is(err, auth.ErrNotFound) {
		auth.WriteUnauthorized(w, true, s.o.BaseURL+"/.well-known/oauth-protected-resource", s.o.Now().UnixMilli())
		return
	}
	s.log().Error("user/me", "error", err)
	writeJSON(w, http.StatusServiceUnavailable, failureBody{Error: "service unavailable", Code: "INTERNAL_ERROR", Timestamp: s.o.Now().UnixMilli()})
}
