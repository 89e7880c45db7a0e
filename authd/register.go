package authd

import (
	"encoding/json"
	"errors"
	"net/http"
	"strconv"

	"github.com/sigops/sigops/runtime/auth"
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

// handleRegister is RFC 7591 dynamic client registration, limited per client address.
func (s *Server) handleRegister(w http.ResponseWriter, r *http.Request) {
	if !isJSON(r) {
		writeOAuthError(w, "invalid_client_metadata", "Content-Type must be application/json")
		return
	}
	blocked, retry, err := s.limiter.Hit(r.Context(), s.o.RegisterPerIP, s.clientKey(r))
	if err != nil {
		s.log().Error("register: limiter", "error", err)
		writeJSON(w, http.StatusServiceUnavailable, oauthError{Error: "temporarily_unavailable", Description: "try again"})
		return
	}
	if blocked {
		s.metrics.registrations.WithLabelValues("limited").Inc()
		w.Header().Set("Retry-After", strconv.Itoa(int(retry.Seconds())+1))
		writeJSON(w, http.StatusTooManyRequests, oauthError{Error: "rate_limited", Description: "too many registrations from this address; try later"})
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
