package authd

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/registry"
)

// scopeText is a scope the consent page offers, in words; Asked marks the one the
// application asked for, Checked the one chosen when the page opens.
type scopeText struct {
	Name, Text     string
	Asked, Checked bool
}

// consentPolicy is the app policy the consent form sets for a grant of scope: the bots
// chosen and the caps (apppolicy.FromForm, the fields Connected apps edits too), and
// live only with mcp:live: choosing live on this page is choosing the scope. A form without
// the policy's fields (an older page) gets the defaults for the scope. A non-empty string
// is why it is refused.
func (s *Server) consentPolicy(r *http.Request, u auth.User, granted string) (apppolicy.Policy, string) {
	p, err := apppolicy.FromForm(r.Context(), r.PostForm, registry.New(s.o.Redis), emails.Canonical(u.Email))
	if e, ok := errs.As(err); ok {
		return p, strings.ToUpper(e.Message[:1]) + e.Message[1:] + "."
	}
	if err != nil {
		return p, "Your bots could not be read."
	}
	p.Live = granted == auth.ScopeLive
	return p, ""
}

// grantable are the scopes a person may grant for a request of asked: asked and every
// scope below it (the scopes are levels, each covering the ones below).
func grantable(asked string) []string {
	var out []string
	for _, sc := range []string{auth.ScopeRead, auth.ScopePaper, auth.ScopeLive} {
		if auth.ScopeLevel(sc) <= auth.ScopeLevel(asked) {
			out = append(out, sc)
		}
	}
	return out
}

var scopeTexts = map[string]string{
	auth.ScopeRead:  "read your bots, positions, orders, analytics and account",
	auth.ScopePaper: "read everything, and trade on your paper (simulated) accounts",
	auth.ScopeLive:  "read everything, trade with real money on your exchange accounts, and charge your Strategy Lab wallet",
}

// maxStateLen bounds the opaque state a client round-trips through us.
const maxStateLen = 1024

// authorizeParams are the single-valued parameters of an authorization request (RFC 6749
// §3.1: none may repeat).
var authorizeParams = []string{"response_type", "client_id", "redirect_uri", "scope", "state",
	"code_challenge", "code_challenge_method", "resource"}

// redirectError sends the user agent back to the client with an error (RFC 6749 §4.1.2.1),
// once the redirect URI is known to be the client's.
func (s *Server) redirectError(w http.ResponseWriter, r *http.Request, redirectURI, state, code, desc string) {
	http.Redirect(w, r, withParams(redirectURI, map[string]string{
		"error": code, "error_description": desc, "state": state, "iss": s.o.BaseURL}), http.StatusSeeOther)
}

func withParams(uri string, p map[string]string) string {
	u, _ := url.Parse(uri)
	q := u.Query()
	for k, v := range p {
		if v != "" {
			q.Set(k, v)
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// handleAuthorize is GET /api/oauth/authorize. Until the client and its redirect URI are
// validated, errors are shown to the user and never redirected (an open redirector would
// otherwise send codes or users anywhere); after that, errors go back to the client.
func (s *Server) handleAuthorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	req, shown := s.authorizeClient(r.Context(), q)
	if shown != nil {
		s.errorPage(w, shown.status, shown.title, shown.msg)
		return
	}
	if back := s.checkAuthorizeParams(q, &req); back != nil {
		s.redirectError(w, r, req.redirectURI, req.state, back.code, back.desc)
		return
	}
	// Consent needs a logged-in user: without a session the login page comes back here.
	s.withSession(func(w http.ResponseWriter, r *http.Request, sc sessionCtx) { s.savePending(w, r, req, sc) })(w, r)
}

// savePending keeps the checked request for the consent page, bound to the user's session,
// and sends the browser there.
func (s *Server) savePending(w http.ResponseWriter, r *http.Request, req authorizeRequest, sc sessionCtx) {
	id, err := s.oauth.SavePending(r.Context(), auth.PendingRequest{ClientID: req.client.ID, RedirectURI: req.redirectURI,
		State: req.state, Challenge: req.challenge, Scope: req.scope, Resource: req.resource,
		UserID: sc.user.ID, SessionHash: sc.sess.Hash})
	if err != nil {
		s.log().Error("authorize: pending", "error", err)
		s.unavailablePage(w)
		return
	}
	http.Redirect(w, r, "/oauth/consent?request="+url.QueryEscape(id), http.StatusSeeOther)
}

// authorizeRequest is an authorization request (RFC 6749 §4.1.1) as it is checked: the
// client and redirect URI first, then the parameters that PKCE, scopes and resource
// indicators add.
type authorizeRequest struct {
	client             auth.Client
	redirectURI, state string
	challenge          string
	scope, resource    string
}

// oauthRefusal is an error sent back to the client's redirect URI (RFC 6749 §4.1.2.1).
type oauthRefusal struct{ code, desc string }

// authorizeClient finds the client and checks that the redirect URI is one it registered.
func (s *Server) authorizeClient(ctx context.Context, q url.Values) (authorizeRequest, *pageError) {
	if len(q["client_id"]) > 1 || len(q["redirect_uri"]) > 1 {
		return authorizeRequest{}, &pageError{http.StatusBadRequest, "Invalid request", "client_id and redirect_uri must appear once."}
	}
	client, err := s.oauth.GetClient(ctx, q.Get("client_id"))
	if errors.Is(err, auth.ErrNotFound) {
		return authorizeRequest{}, &pageError{http.StatusBadRequest, "Unknown application", "The application is not registered (unknown client_id)."}
	}
	if err != nil {
		s.log().Error("authorize: client", "error", err)
		shown := unavailable
		return authorizeRequest{}, &shown
	}
	redirectURI := q.Get("redirect_uri")
	if redirectURI == "" || !client.MatchRedirect(redirectURI, s.o.AllowLocalhostRedirects) {
		return authorizeRequest{}, &pageError{http.StatusBadRequest, "Invalid redirect", "The redirect_uri is missing or is not one this application registered."}
	}
	return authorizeRequest{client: client, redirectURI: redirectURI}, nil
}

// checkAuthorizeParams fills req from the parameters past the client and redirect URI, or
// says what to send back to the client. A state too long is not echoed.
func (s *Server) checkAuthorizeParams(q url.Values, req *authorizeRequest) *oauthRefusal {
	req.state = q.Get("state")
	for _, p := range authorizeParams {
		if len(q[p]) > 1 {
			return &oauthRefusal{"invalid_request", p + " must appear once"}
		}
	}
	if len(req.state) > maxStateLen {
		req.state = ""
		return &oauthRefusal{"invalid_request", "state is longer than 1024 bytes"}
	}
	if q.Get("response_type") != auth.ResponseTypeCode {
		return &oauthRefusal{"unsupported_response_type", "response_type must be code"}
	}
	req.challenge = q.Get("code_challenge")
	if back := checkPKCE(req.challenge, q.Get("code_challenge_method")); back != nil {
		return back
	}
	var back *oauthRefusal
	if req.scope, back = requestedScope(q.Get("scope"), req.client); back != nil {
		return back
	}
	req.resource, back = s.requestedResource(q.Get("resource"))
	return back
}

// checkPKCE requires an S256 code challenge (plain is refused).
func checkPKCE(challenge, method string) *oauthRefusal {
	switch {
	case challenge == "":
		return &oauthRefusal{"invalid_request", "PKCE is required: send code_challenge with code_challenge_method=S256"}
	case method != "S256":
		return &oauthRefusal{"invalid_request", "code_challenge_method must be S256 (plain is not supported)"}
	case len(challenge) != 43 || !auth.ValidPKCEValue(challenge):
		return &oauthRefusal{"invalid_request", "code_challenge must be the base64url SHA-256 of the verifier (43 characters)"}
	}
	return nil
}

// requestedScope is the scope asked for, or the client's registered one (read when it
// registered none).
//
// The registered scope is the default, not a ceiling. MCP hosts register with the scope of
// their first challenge (mcp:read) and step up later through a new authorization request
// for more (a 403 insufficient_scope names it); a ceiling fixed at registration would refuse
// that step-up with invalid_scope, and it protects nothing, since registration is open to
// anyone with any scope. What bounds a token is the person's consent, which offers only
// the scope asked and those below it, and a refresh, which can never widen a grant.
func requestedScope(raw string, client auth.Client) (string, *oauthRefusal) {
	scope, err := auth.NormalizeScope(raw)
	if err != nil {
		return "", &oauthRefusal{"invalid_scope", err.Error()}
	}
	if scope == "" {
		scope = client.Scope
		if scope == "" {
			scope = auth.ScopeRead
		}
	}
	return scope, nil
}

// requestedResource is the resource indicator (RFC 8707): the API (the default) or the MCP
// server.
func (s *Server) requestedResource(resource string) (string, *oauthRefusal) {
	switch resource {
	case "":
		return s.apiResource, nil
	case s.apiResource, s.mcpResource:
		return resource, nil
	}
	return "", &oauthRefusal{"invalid_target", "resource must be " + s.apiResource + " or " + s.mcpResource}
}

// pendingFor loads a pending request of the session's user (requests are stored per user,
// so another user's ID finds nothing) and checks it belongs to this session.
func (s *Server) pendingFor(r *http.Request, sc sessionCtx, id string, take bool) (auth.PendingRequest, auth.Client, bool) {
	var p auth.PendingRequest
	var err error
	if take {
		p, err = s.oauth.TakePending(r.Context(), sc.user.ID, id)
	} else {
		p, err = s.oauth.GetPending(r.Context(), sc.user.ID, id)
	}
	if err != nil || p.UserID != sc.user.ID || p.SessionHash != sc.sess.Hash {
		return auth.PendingRequest{}, auth.Client{}, false
	}
	c, err := s.oauth.GetClient(r.Context(), p.ClientID)
	if err != nil {
		return auth.PendingRequest{}, auth.Client{}, false
	}
	return p, c, true
}

// handleConsentPage shows who asks (the client's self-declared name), where the browser will
// go (the redirect host) and what for (the scopes).
func (s *Server) handleConsentPage(w http.ResponseWriter, r *http.Request, sc sessionCtx) {
	p, c, ok := s.pendingFor(r, sc, r.URL.Query().Get("request"), false)
	if !ok {
		s.errorPage(w, http.StatusBadRequest, "Request expired", "This authorization request is unknown or has expired. Start again from the application.")
		return
	}
	// The person may grant less than the application asked (RFC 6749 §3.3): each scope up
	// to the one asked is offered. The one asked is chosen, except real money: for mcp:live
	// mcp:paper is chosen and live must be picked on purpose (safe by default).
	var scopes []scopeText
	chosen := p.Scope
	if chosen == auth.ScopeLive {
		chosen = auth.ScopePaper
	}
	for _, sc := range grantable(p.Scope) {
		scopes = append(scopes, scopeText{Name: sc, Text: scopeTexts[sc], Asked: sc == p.Scope, Checked: sc == chosen})
	}
	// The app's policy is set here too: the user's bots to choose from, the caps.
	bots, err := registry.New(s.o.Redis).AllOwned(r.Context(), emails.Canonical(sc.user.Email))
	if err != nil {
		s.errorPage(w, http.StatusServiceUnavailable, "Unavailable", "Your bots could not be read. Try again in a few seconds.")
		return
	}
	sort.Slice(bots, func(i, j int) bool { return bots[i].Name < bots[j].Name })
	s.render(w, http.StatusOK, "consent", pageData{Title: "Authorize " + c.Name, User: &sc.user, CSRF: sc.sess.CSRF,
		ClientName: c.Name, RedirectHost: auth.RedirectHost(p.RedirectURI), Resource: p.Resource, Request: p.ID, Scopes: scopes,
		Bots: bots, Policy: apppolicy.DefaultPolicy()},
		originOf(p.RedirectURI))
}

// handleConsentForm answers the consent: deny sends access_denied back to the client,
// approve sends a code (60 s, single use). The request is spent either way.
func (s *Server) handleConsentForm(w http.ResponseWriter, r *http.Request, sc sessionCtx) {
	if !parseForm(w, r) || !s.checkCSRF(r, sc.sess.CSRF) {
		s.errorPage(w, http.StatusForbidden, "Request refused", "The form was not sent from this site. Start again from the application.")
		return
	}
	p, c, ok := s.pendingFor(r, sc, r.PostFormValue("request"), true)
	if !ok {
		s.errorPage(w, http.StatusBadRequest, "Request expired", "This authorization request is unknown or has expired. Start again from the application.")
		return
	}
	if r.PostFormValue("action") != "approve" {
		s.log().Info("consent denied", "user", sc.user.ID, "client", c.ID)
		s.redirectError(w, r, p.RedirectURI, p.State, "access_denied", "the user denied the request")
		return
	}
	// The scope granted is the one chosen on the page, never above the one asked; a form
	// without the choice grants what was asked. The token response names it.
	granted := p.Scope
	if v := r.PostFormValue("scope"); v != "" {
		if !slices.Contains(grantable(p.Scope), v) {
			s.errorPage(w, http.StatusBadRequest, "Request refused", "The access chosen is not one this application asked for. Start again from the application.")
			return
		}
		granted = v
	}
	policy, perr := s.consentPolicy(r, sc.user, granted)
	if perr != "" {
		s.errorPage(w, http.StatusBadRequest, "Request refused", perr+" Start again from the application.")
		return
	}
	// The policy is stored before the code exists: the app's first call is already bound.
	if err := s.policies.Set(r.Context(), sc.user.ID, c.ID, policy); err != nil {
		s.log().Error("consent: policy", "error", err)
		s.redirectError(w, r, p.RedirectURI, p.State, "temporarily_unavailable", "try again")
		return
	}
	code, err := s.oauth.CreateCode(r.Context(), auth.CodeGrant{ClientID: c.ID, UserID: sc.user.ID, Gen: sc.user.Generation,
		RedirectURI: p.RedirectURI, Challenge: p.Challenge, Scope: granted, Resource: p.Resource})
	if err != nil {
		s.log().Error("consent: code", "error", err)
		s.redirectError(w, r, p.RedirectURI, p.State, "temporarily_unavailable", "try again")
		return
	}
	s.log().Info("consent granted", "user", sc.user.ID, "client", c.ID, "scope", granted, "asked", p.Scope)
	http.Redirect(w, r, withParams(p.RedirectURI, map[string]string{"code": code, "state": p.State, "iss": s.o.BaseURL}), http.StatusSeeOther)
}
