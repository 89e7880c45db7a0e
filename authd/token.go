package authd

import (
	"errors"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
)

// tokenResponse is the spec's OAuth token response.
type tokenResponse struct {
	AccessToken  string `json:"access_token"`
	TokenType    string `json:"token_type"`
	ExpiresIn    int    `json:"expires_in"`
	Scope        string `json:"scope"`
	RefreshToken string `json:"refresh_token,omitempty"`
}

// tokenParams are the form parameters that may not repeat.
var tokenParams = []string{"grant_type", "code", "redirect_uri", "client_id", "client_secret", "code_verifier",
	"refresh_token", "scope", "resource", "token", "token_type_hint"}

// readTokenForm parses a bounded application/x-www-form-urlencoded body; the query string
// is ignored (credentials never ride in URLs).
func readTokenForm(w http.ResponseWriter, r *http.Request) (url.Values, string) {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil || mt != "application/x-www-form-urlencoded" {
		return nil, "Content-Type must be application/x-www-form-urlencoded"
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	if err := r.ParseForm(); err != nil {
		return nil, "the body could not be parsed"
	}
	for _, p := range tokenParams {
		if len(r.PostForm[p]) > 1 {
			return nil, p + " must appear once"
		}
	}
	return r.PostForm, ""
}

// clientAuthError is an invalid_client (401) or invalid_request (400) of client authentication.
type clientAuthError struct{ code, desc string }

// authenticateClient identifies and authenticates the client of a token or revocation
// request, by the method it registered: client_secret_basic (HTTP Basic, RFC 6749 §2.3.1
// form-encoding), client_secret_post (client_id and client_secret in the body), or none
// (client_id alone; a Basic header with an empty password is accepted as identification).
// Using more than one method, or another than registered, is refused.
func (s *Server) authenticateClient(r *http.Request, form url.Values) (auth.Client, *clientAuthError) {
	basicID, basicSecret, hasBasic := r.BasicAuth()
	if hasBasic {
		var err1, err2 error
		basicID, err1 = url.QueryUnescape(basicID)
		basicSecret, err2 = url.QueryUnescape(basicSecret)
		if err1 != nil || err2 != nil {
			return auth.Client{}, &clientAuthError{"invalid_client", "malformed Basic credentials"}
		}
	}
	bodyID, bodySecret := form.Get("client_id"), form.Get("client_secret")
	if hasBasic && bodySecret != "" {
		return auth.Client{}, &clientAuthError{"invalid_request", "use one client authentication method"}
	}
	if hasBasic && bodyID != "" && bodyID != basicID {
		return auth.Client{}, &clientAuthError{"invalid_request", "client_id differs from the authenticated client"}
	}
	id := bodyID
	if hasBasic {
		id = basicID
	}
	if id == "" {
		return auth.Client{}, &clientAuthError{"invalid_client", "client authentication required"}
	}
	c, err := s.oauth.GetClient(r.Context(), id)
	if err != nil {
		return auth.Client{}, &clientAuthError{"invalid_client", "unknown client or bad credentials"}
	}
	bad := &clientAuthError{"invalid_client", "unknown client or bad credentials"}
	switch c.AuthMethod {
	case auth.AuthMethodNone:
		if basicSecret != "" || bodySecret != "" {
			return auth.Client{}, bad
		}
	case auth.AuthMethodBasic:
		if !hasBasic || !c.CheckSecret(basicSecret) {
			return auth.Client{}, bad
		}
	case auth.AuthMethodPost:
		if hasBasic || !c.CheckSecret(bodySecret) {
			return auth.Client{}, bad
		}
	default:
		return auth.Client{}, bad
	}
	return c, nil
}

func (s *Server) writeClientAuthError(w http.ResponseWriter, r *http.Request, e *clientAuthError) {
	if e.code == "invalid_client" {
		if _, _, ok := r.BasicAuth(); ok {
			w.Header().Set("WWW-Authenticate", `Basic realm="sigops", charset="UTF-8"`)
		}
	}
	writeOAuthError(w, e.code, e.desc)
}

// handleToken is POST /api/oauth/token.
func (s *Server) handleToken(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	grant, outcome := "", "ok"
	defer func() {
		s.metrics.tokens.WithLabelValues(grantLabel(grant), outcome).Inc()
		s.metrics.tokenLatency.Observe(time.Since(start).Seconds())
	}()
	fail := func(code, desc string) {
		outcome = code
		writeOAuthError(w, code, desc)
	}
	form, bad := readTokenForm(w, r)
	if bad != "" {
		fail("invalid_request", bad)
		return
	}
	grant = form.Get("grant_type")
	client, cerr := s.authenticateClient(r, form)
	if cerr != nil {
		outcome = cerr.code
		s.log().Info("token: client authentication failed", "client_id", truncate(form.Get("client_id")), "reason", cerr.desc)
		s.writeClientAuthError(w, r, cerr)
		return
	}
	switch grant {
	case auth.GrantCode:
		outcome = s.exchangeCode(w, r, client, form)
	case auth.GrantRefresh:
		outcome = s.refresh(w, r, client, form)
	case "":
		fail("invalid_request", "grant_type is required")
	default:
		fail("unsupported_grant_type", "grant_type must be authorization_code or refresh_token")
	}
}

func grantLabel(g string) string {
	if g == auth.GrantCode || g == auth.GrantRefresh {
		return g
	}
	return "other"
}

func truncate(s string) string {
	if len(s) > 64 {
		return s[:64]
	}
	return s
}

// grantError maps a grant failure to its OAuth error.
func grantError(err error) (string, string) {
	switch {
	case errors.Is(err, auth.ErrScopeWiden):
		return "invalid_scope", err.Error()
	case errors.Is(err, auth.ErrTarget):
		return "invalid_target", err.Error()
	case errors.Is(err, auth.ErrGrantUnknown), errors.Is(err, auth.ErrGrantReplay), errors.Is(err, auth.ErrGrantRevoked),
		errors.Is(err, auth.ErrGrantExpired), errors.Is(err, auth.ErrGrantClient), errors.Is(err, auth.ErrGrantRedirect),
		errors.Is(err, auth.ErrGrantPKCE):
		return "invalid_grant", err.Error()
	}
	return "server_error", "try again"
}

func (s *Server) writeGrantError(w http.ResponseWriter, client auth.Client, grant string, err error) string {
	code, desc := grantError(err)
	if e, ok := errs.As(err); ok && e.Code == errs.ServiceUnavailable {
		// The record of consents cannot be written: nothing was issued; the client retries.
		s.log().Warn("token refused for a moment", "grant", grant, "client_id", client.ID, "error", err)
		w.Header().Set("Retry-After", retryAfter(e.RetryAfter))
		writeJSON(w, http.StatusServiceUnavailable, oauthError{Error: "temporarily_unavailable", Description: e.Message})
		return "temporarily_unavailable"
	}
	if code == "server_error" {
		s.log().Error("token", "grant", grant, "client_id", client.ID, "error", err)
		w.Header().Set("Pragma", "no-cache")
		writeJSON(w, http.StatusInternalServerError, oauthError{Error: code, Description: desc})
		return code
	}
	s.log().Info("token refused", "grant", grant, "client_id", client.ID, "error", code, "reason", desc)
	if errors.Is(err, auth.ErrGrantReplay) {
		s.verifier.Purge()
	}
	writeOAuthError(w, code, desc)
	return code
}

// exchangeCode is the authorization_code grant: code (60 s, single use; a replay revokes
// what the first use issued), redirect_uri and client_id as at authorization, and the PKCE
// code_verifier.
func (s *Server) exchangeCode(w http.ResponseWriter, r *http.Request, client auth.Client, form url.Values) string {
	if !client.AllowsGrant(auth.GrantCode) {
		writeOAuthError(w, "unauthorized_client", "the client did not register authorization_code")
		return "unauthorized_client"
	}
	code, redirectURI, verifier := form.Get("code"), form.Get("redirect_uri"), form.Get("code_verifier")
	switch {
	case code == "":
		writeOAuthError(w, "invalid_request", "code is required")
		return "invalid_request"
	case redirectURI == "":
		writeOAuthError(w, "invalid_request", "redirect_uri is required")
		return "invalid_request"
	case verifier == "":
		writeOAuthError(w, "invalid_request", "code_verifier is required (PKCE)")
		return "invalid_request"
	}
	ctx := r.Context()
	g, err := s.oauth.ConsumeCode(ctx, code)
	if err == nil {
		err = s.oauth.CheckCode(g, client.ID, redirectURI, verifier)
	}
	if err == nil {
		if res := form.Get("resource"); res != "" && res != g.Resource {
			err = auth.ErrTarget
		}
	}
	if err == nil {
		// A password change after consent voids the code.
		u, uerr := s.users.Get(ctx, g.UserID)
		if uerr != nil || u.Generation != g.Gen {
			err = auth.ErrGrantRevoked
		}
	}
	if err != nil {
		return s.writeGrantError(w, client, auth.GrantCode, err)
	}
	refresh, err := s.oauth.CreateAuthorization(ctx, auth.Authorization{ID: g.AuthorizationID, UserID: g.UserID,
		ClientID: client.ID, ClientName: client.Name, Scope: g.Scope, Resource: g.Resource, Gen: g.Gen})
	if err != nil {
		return s.writeGrantError(w, client, auth.GrantCode, err)
	}
	at, err := s.issuer.IssueAccessToken(auth.AccessTokenRequest{UserID: g.UserID, Gen: g.Gen, ClientID: client.ID,
		Scope: g.Scope, AuthorizationID: g.AuthorizationID, Audience: g.Resource})
	if err != nil {
		return s.writeGrantError(w, client, auth.GrantCode, err)
	}
	if !client.AllowsGrant(auth.GrantRefresh) {
		refresh = ""
	}
	s.log().Info("token issued", "grant", auth.GrantCode, "client_id", client.ID, "user", g.UserID, "scope", g.Scope)
	writeTokenResponse(w, at, g.Scope, refresh)
	return "ok"
}

// refresh is the refresh_token grant: rotation (the presented token is spent, a new one
// returned), reuse detection (revokes the family), scope narrowing only.
func (s *Server) refresh(w http.ResponseWriter, r *http.Request, client auth.Client, form url.Values) string {
	if !client.AllowsGrant(auth.GrantRefresh) {
		writeOAuthError(w, "unauthorized_client", "the client did not register refresh_token")
		return "unauthorized_client"
	}
	tok := form.Get("refresh_token")
	if tok == "" {
		writeOAuthError(w, "invalid_request", "refresh_token is required")
		return "invalid_request"
	}
	scope, err := auth.NormalizeScope(form.Get("scope"))
	if err != nil {
		writeOAuthError(w, "invalid_scope", err.Error())
		return "invalid_scope"
	}
	a, next, err := s.oauth.Rotate(r.Context(), auth.RotateRequest{Token: tok, ClientID: client.ID, Scope: scope,
		Resource: form.Get("resource")})
	if err != nil {
		return s.writeGrantError(w, client, auth.GrantRefresh, err)
	}
	if scope == "" {
		scope = a.Scope
	}
	at, err := s.issuer.IssueAccessToken(auth.AccessTokenRequest{UserID: a.UserID, Gen: a.Gen, ClientID: client.ID,
		Scope: scope, AuthorizationID: a.ID, Audience: a.Resource})
	if err != nil {
		return s.writeGrantError(w, client, auth.GrantRefresh, err)
	}
	_ = s.oauth.TouchClient(r.Context(), client.ID)
	writeTokenResponse(w, at, scope, next)
	return "ok"
}

func writeTokenResponse(w http.ResponseWriter, at auth.IssuedToken, scope, refresh string) {
	w.Header().Set("Pragma", "no-cache")
	writeJSON(w, http.StatusOK, tokenResponse{AccessToken: at.Token, TokenType: "Bearer",
		ExpiresIn: int(auth.AccessTokenLifetime / time.Second), Scope: scope, RefreshToken: refresh})
}

// handleRevoke is RFC 7009: the client revokes one of its refresh tokens (the whole
// authorization with it) or access tokens (that token). Unknown tokens and other clients'
// tokens get 200 too, so the endpoint reveals nothing.
func (s *Server) handleRevoke(w http.ResponseWriter, r *http.Request) {
	form, bad := readTokenForm(w, r)
	if bad != "" {
		writeOAuthError(w, "invalid_request", bad)
		return
	}
	client, cerr := s.authenticateClient(r, form)
	if cerr != nil {
		s.writeClientAuthError(w, r, cerr)
		return
	}
	tok := form.Get("token")
	if tok == "" {
		writeOAuthError(w, "invalid_request", "token is required")
		return
	}
	ctx := r.Context()
	var err error
	if strings.Count(tok, ".") == 2 { // a JWT: an access token
		if p, verr := s.verifier.Verify(ctx, tok); verr == nil && p.Kind == auth.KindOAuth && p.ClientID == client.ID {
			err = s.oauth.RevokeAccessToken(ctx, p.JTI, p.ExpiresAt)
		}
	} else {
		err = s.oauth.RevokeRefreshToken(ctx, tok, client.ID)
	}
	if err != nil {
		s.log().Error("revoke", "client_id", client.ID, "error", err)
		writeJSON(w, http.StatusServiceUnavailable, oauthError{Error: "temporarily_unavailable", Description: "try again"})
		return
	}
	s.verifier.Purge()
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
}

// handleDeprecatedToken answers the former /api/oauth/mcp/token: its tokens had no jti and
// bypassed scopes, so it issues nothing and points to the standard endpoint.
func (s *Server) handleDeprecatedToken(w http.ResponseWriter, _ *http.Request) {
	writeOAuthError(w, "invalid_request",
		"/api/oauth/mcp/token is deprecated and its tokens are rejected; use /api/oauth/token (authorization code with PKCE)")
}
