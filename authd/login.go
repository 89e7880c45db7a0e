package authd

import (
	"context"
	"encoding/json"
	"errors"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
)

// attemptLogin checks a password behind the brute-force gate (auth.LoginGate): the attempt
// is counted per submitted email (existing or not) and per client address before anything
// is checked, in one Redis script that refuses when either limit is used up; only one check
// per account runs at a time, a concurrent one being refused at once; and the hashing queue
// is bounded (auth.ErrHashBusy). Every refusal is a RATE_LIMITED *errs.Error (429 with
// Retry-After). A success clears the account's count; an attempt that checked no password
// gives its counts back.
func (s *Server) attemptLogin(ctx context.Context, r *http.Request, email, password string) (auth.User, error) {
	t, err := s.gate.Begin(ctx, email, s.clientKey(r))
	if err != nil {
		return auth.User{}, err
	}
	u, err := s.users.Authenticate(ctx, email, password)
	var endErr error
	switch {
	case err == nil:
		endErr = s.gate.Succeeded(ctx, t)
	case errors.Is(err, auth.ErrInvalidCredentials):
		endErr = s.gate.Failed(ctx, t)
	default:
		endErr = s.gate.Void(ctx, t)
	}
	if endErr != nil {
		// The attempt stays counted and the account's lock lapses after auth.LoginLockTTL:
		// erring on the refusing side.
		s.log().Error("login: end attempt", "error", endErr)
	}
	return u, err
}

// loginRefusal is the RATE_LIMITED refusal in err (the gate's or the hashing queue's) with
// its metrics outcome: locked (a limit is used up), busy (a check of the same account is
// running) or overloaded (the hashing queue is full).
func loginRefusal(err error) (*errs.Error, string, bool) {
	e, ok := errs.As(err)
	if !ok || e.Code != errs.RateLimited {
		return nil, "", false
	}
	switch {
	case errors.Is(err, auth.ErrHashBusy):
		return e, "overloaded", true
	case errors.Is(err, auth.ErrLoginBusy):
		return e, "busy", true
	}
	return e, "locked", true
}

// retryAfter is a Retry-After value in whole seconds, rounded up, at least 1.
func retryAfter(d time.Duration) string {
	return strconv.Itoa(max(int((d+time.Second-1)/time.Second), 1))
}

func (s *Server) loginCSRF(w http.ResponseWriter, r *http.Request) string {
	if c, err := r.Cookie(loginCSRFCookie); err == nil && len(c.Value) >= 32 && len(c.Value) <= 64 {
		return c.Value
	}
	tok := auth.RandomToken(32)
	http.SetCookie(w, &http.Cookie{Name: loginCSRFCookie, Value: tok, Path: "/", MaxAge: 3600, HttpOnly: true,
		Secure: true, SameSite: http.SameSiteStrictMode})
	return tok
}

// handleLoginPage shows the login form (or goes on if a session exists).
func (s *Server) handleLoginPage(w http.ResponseWriter, r *http.Request) {
	next := safeNext(r.URL.Query().Get("next"))
	if cur, err := s.currentSession(w, r); err == nil && cur.live {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	d := pageData{Title: "Log in", CSRF: s.loginCSRF(w, r), Next: next}
	if r.URL.Query().Get("done") == "password" {
		d.Notice = "Your password was changed. Every session and API token of your account has ended: log in with the new password."
	}
	s.render(w, http.StatusOK, "login", d, "")
}

// handleLoginForm checks the form (double-submit CSRF: the form's token must equal the
// login CSRF cookie, which a cross-site page can neither read nor set), then the password,
// and starts a new session.
func (s *Server) handleLoginForm(w http.ResponseWriter, r *http.Request) {
	if !parseForm(w, r) {
		s.errorPage(w, http.StatusBadRequest, "Bad request", "The form could not be read.")
		return
	}
	c, err := r.Cookie(loginCSRFCookie)
	got := r.PostFormValue(csrfField)
	if err != nil || got == "" || !auth.EqualSecret(got, c.Value) || !s.sameOrigin(r) {
		s.metrics.logins.WithLabelValues("form", "csrf").Inc()
		s.errorPage(w, http.StatusForbidden, "Request refused", "The form was not sent from this site or has expired. Reload the login page and try again.")
		return
	}
	email, next := r.PostFormValue("email"), safeNext(r.PostFormValue("next"))
	u, err := s.attemptLogin(r.Context(), r, email, r.PostFormValue("password"))
	data := pageData{Title: "Log in", CSRF: c.Value, Next: next, Email: email}
	if e, outcome, ok := loginRefusal(err); ok {
		s.metrics.logins.WithLabelValues("form", outcome).Inc()
		s.log().Info("login refused", "channel", "form", "outcome", outcome, "reason", errors.Unwrap(e), "client", s.clientKey(r))
		w.Header().Set("Retry-After", retryAfter(e.RetryAfter))
		data.Error = e.Message
		s.render(w, http.StatusTooManyRequests, "login", data, "")
		return
	}
	switch {
	case errors.Is(err, auth.ErrInvalidCredentials):
		s.metrics.logins.WithLabelValues("form", "failure").Inc()
		s.log().Info("login failed", "channel", "form", "client", s.clientKey(r))
		data.Error = "Invalid email or password."
		s.render(w, http.StatusUnauthorized, "login", data, "")
		return
	case err != nil:
		s.metrics.logins.WithLabelValues("form", "error").Inc()
		s.log().Error("login", "error", err)
		s.unavailablePage(w)
		return
	}
	raw, sess, err := s.sessions.Create(r.Context(), u)
	if err != nil {
		s.log().Error("create session", "error", err)
		s.unavailablePage(w)
		return
	}
	s.metrics.logins.WithLabelValues("form", "success").Inc()
	s.log().Info("login", "channel", "form", "user", u.ID, "client", s.clientKey(r))
	s.setSessionCookie(w, raw, sess.ExpiresAt)
	clearCookie(w, loginCSRFCookie)
	http.Redirect(w, r, next, http.StatusSeeOther)
}

func (s *Server) handleLogoutPage(w http.ResponseWriter, r *http.Request, sc sessionCtx) {
	s.render(w, http.StatusOK, "logout", pageData{Title: "Log out", User: &sc.user, CSRF: sc.sess.CSRF}, "")
}

// handleLogoutForm destroys the session (CSRF-checked, so a third-party page cannot log the
// user out either).
func (s *Server) handleLogoutForm(w http.ResponseWriter, r *http.Request, sc sessionCtx) {
	if !parseForm(w, r) || !s.checkCSRF(r, sc.sess.CSRF) {
		s.errorPage(w, http.StatusForbidden, "Request refused", "The form was not sent from this site. Reload the page and try again.")
		return
	}
	if err := s.sessions.Destroy(r.Context(), sc.sess); err != nil {
		s.log().Error("destroy session", "error", err)
	}
	clearCookie(w, sessionCookie)
	http.Redirect(w, r, "/login", http.StatusSeeOther)
}

type loginRequest struct {
	Email    string `json:"email"`
	Password string `json:"password"`
}

type loginResponse struct {
	Token     string `json:"token"`
	TokenType string `json:"tokenType"`
	ExpiresAt string `json:"expiresAt"`
}

func isJSON(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && mt == "application/json"
}

// handleAPILogin is POST /api/auth/login: {email, password} → {token, expiresAt}, a bearer
// JWT with full API access, behind the same brute-force limits as the form.
func (s *Server) handleAPILogin(w http.ResponseWriter, r *http.Request) {
	now := s.o.Now().UnixMilli()
	if !isJSON(r) {
		writeJSON(w, http.StatusBadRequest, failureBody{Error: "Content-Type must be application/json", Code: "INVALID_JSON", Timestamp: now})
		return
	}
	var req loginRequest
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 16<<10)).Decode(&req); err != nil || req.Email == "" || req.Password == "" {
		writeJSON(w, http.StatusBadRequest, failureBody{Error: "body must be {\"email\", \"password\"}", Code: "INVALID_JSON", Timestamp: now})
		return
	}
	u, err := s.attemptLogin(r.Context(), r, req.Email, req.Password)
	if e, outcome, ok := loginRefusal(err); ok {
		s.metrics.logins.WithLabelValues("api", outcome).Inc()
		s.log().Info("login refused", "channel", "api", "outcome", outcome, "reason", errors.Unwrap(e), "client", s.clientKey(r))
		w.Header().Set("Retry-After", retryAfter(e.RetryAfter))
		writeJSON(w, http.StatusTooManyRequests, failureBody{Error: e.Message, Code: string(e.Code), Timestamp: now})
		return
	}
	switch {
	case errors.Is(err, auth.ErrInvalidCredentials):
		s.metrics.logins.WithLabelValues("api", "failure").Inc()
		s.log().Info("login failed", "channel", "api", "client", s.clientKey(r))
		writeJSON(w, http.StatusUnauthorized, failureBody{Error: "invalid email or password", Code: "UNAUTHORIZED", Timestamp: now})
		return
	case err != nil:
		s.metrics.logins.WithLabelValues("api", "error").Inc()
		s.log().Error("api login", "error", err)
		writeJSON(w, http.StatusServiceUnavailable, failureBody{Error: "service unavailable", Code: "INTERNAL_ERROR", Timestamp: now})
		return
	}
	tok, err := s.issuer.IssueAPIToken(r.Context(), u)
	if err != nil {
		s.log().Error("issue API token", "error", err)
		writeJSON(w, http.StatusServiceUnavailable, failureBody{Error: "service unavailable", Code: "INTERNAL_ERROR", Timestamp: now})
		return
	}
	s.metrics.logins.WithLabelValues("api", "success").Inc()
	s.log().Info("login", "channel", "api", "user", u.ID, "client", s.clientKey(r))
	writeJSON(w, http.StatusOK, loginResponse{Token: tok.Token, TokenType: "Bearer", ExpiresAt: tok.ExpiresAt.UTC().Format(time.RFC3339)})
}

// handleAPILogout revokes the presented bearer JWT at once. OAuth tokens are revoked through
// /api/oauth/revoke.
func (s *Server) handleAPILogout(w http.ResponseWriter, r *http.Request) {
	p, err := s.verifier.VerifyRequest(r)
	if err != nil {
		s.writeVerifyError(w, err)
		return
	}
	if p.Kind != auth.KindAPI {
		writeJSON(w, http.StatusBadRequest, failureBody{Error: "OAuth tokens are revoked at /api/oauth/revoke", Timestamp: s.o.Now().UnixMilli()})
		return
	}
	if err := s.issuer.RevokeAPIToken(r.Context(), p.JTI); err != nil {
		s.log().Error("revoke API token", "error", err)
		writeJSON(w, http.StatusServiceUnavailable, failureBody{Error: "service unavailable", Code: "INTERNAL_ERROR", Timestamp: s.o.Now().UnixMilli()})
		return
	}
	s.verifier.Purge()
	w.WriteHeader(http.StatusNoContent)
}

func (s *Server) writeVerifyError(w http.ResponseWriter, err error) {
	if errors.Is(err, auth.ErrUnavailable) {
		writeJSON(w, http.StatusServiceUnavailable, failureBody{Error: "service unavailable", Code: "INTERNAL_ERROR", Timestamp: s.o.Now().UnixMilli()})
		return
	}
	auth.WriteUnauthorized(w, !errors.Is(err, auth.ErrNoToken), s.o.BaseURL+"/.well-known/oauth-protected-resource", s.o.Now().UnixMilli())
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
