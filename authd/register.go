package authd

import (
	"encoding/json"
	"errors"
	"net/http"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/trustedproxy"
)

type registrationResponse struct {
	ClientID                string   `json:"client_id"`
	ClientSecret            string   `json:"client_secret,omitempty"`
	ClientSecretExpiresAt   *int64   `json:"client_secret_expires_at,omitempty"`
	ClientIDIssuedAt        int64    `json:"client_id_issued_at"`
	ClientName              string   `json:"client_name"`
	RedirectURIs            []string `json:"redirect_uris"`
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	GrantTypes              []string `json:"grant_types"`
	ResponseTypes           []string `json:"response_types"`
	Scope                   string   `json:"scope,omitempty"`
}

// registrationCounters are the budgets one registration spends: its address (IPv4
// address or IPv6 /64), for IPv6 its /48 as well, and the service-wide budget.
func (s *Server) registrationCounters(r *http.Request) []auth.Counter {
	cs := []auth.Counter{{Limit: s.o.RegisterPerIP, Subject: s.clientKey(r)}}
	if a, ok := trustedproxy.Proxies(s.o.TrustedProxies).Client(r); ok && a.Is6() && !a.Is4In6() {
		p, _ := a.Prefix(48)
		cs = append(cs, auth.Counter{Limit: s.o.RegisterPerNet48, Subject: p.String()})
	}
	return append(cs, auth.Counter{Limit: s.o.RegisterGlobal, Subject: "all"})
}

// registrationRefusal words a 429 by the budget that ran out; it names no counts.
func (s *Server) registrationRefusal(l auth.Limit) string {
	if l.Kind == s.o.RegisterGlobal.Kind {
		return "the service is taking no more registrations this hour; try later"
	}
	return "too many registrations from this network; try later"
}

// handleRegister is RFC 7591 dynamic client registration, limited per client address, per
// IPv6 /48 and service-wide; a registration that never obtains a token expires after
// auth.UnusedClientTTL.
func (s *Server) handleRegister(w http.ResponseWriter, r *http.Request) {
	if !isJSON(r) {
		writeOAuthError(w, "invalid_client_metadata", "Content-Type must be application/json")
		return
	}
	reached, retry, err := s.limiter.TakeRegistration(r.Context(), s.registrationCounters(r)...)
	if err != nil {
		s.log().Error("register: limiter", "error", err)
		writeJSON(w, http.StatusServiceUnavailable, oauthError{Error: "temporarily_unavailable", Description: "try again"})
		return
	}
	if reached.Kind != "" {
		s.metrics.registrations.WithLabelValues("limited").Inc()
		s.log().Info("registration refused", "limit", reached.Kind, "client", s.clientKey(r))
		w.Header().Set("Retry-After", retryAfter(retry))
		writeJSON(w, http.StatusTooManyRequests, oauthError{Error: "rate_limited", Description: s.registrationRefusal(reached)})
		return
	}
	var m auth.ClientMetadata
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<10)).Decode(&m); err != nil {
		s.metrics.registrations.WithLabelValues("refused").Inc()
		writeOAuthError(w, "invalid_client_metadata", "the body is not a JSON client metadata object")
		return
	}
	c, secret, err := s.oauth.RegisterClient(r.Context(), m)
	var me *auth.MetadataError
	if errors.As(err, &me) {
		s.metrics.registrations.WithLabelValues("refused").Inc()
		writeOAuthError(w, me.Code, me.Description)
		return
	}
	if err != nil {
		s.log().Error("register", "error", err)
		// PostgreSQL refused the record (nothing was registered): say when to come back.
		if e, ok := errs.As(err); ok && e.RetryAfter > 0 {
			w.Header().Set("Retry-After", retryAfter(e.RetryAfter))
		}
		writeJSON(w, http.StatusServiceUnavailable, oauthError{Error: "temporarily_unavailable", Description: "try again"})
		return
	}
	resp := registrationResponse{ClientID: c.ID, ClientSecret: secret, ClientIDIssuedAt: c.CreatedAt.Unix(),
		ClientName: c.Name, RedirectURIs: c.RedirectURIs, TokenEndpointAuthMethod: c.AuthMethod, GrantTypes: c.GrantTypes,
		ResponseTypes: []string{auth.ResponseTypeCode}, Scope: c.Scope}
	kind := "public"
	if secret != "" {
		zero := int64(0)
		resp.ClientSecretExpiresAt = &zero
		kind = "confidential"
	}
	s.metrics.registrations.WithLabelValues(kind).Inc()
	s.log().Info("client registered", "client_id", c.ID, "method", c.AuthMethod, "client", s.clientKey(r))
	writeJSON(w, http.StatusCreated, resp)
}
