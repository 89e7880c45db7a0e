package authd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sigops/sigops/runtime/auth"
)

var errLocked = errors.New("locked")

// lockedMessage is the same whether or not the account exists.
func lockedMessage(retry time.Duration) string {
	mins := int((retry + time.Minute - 1) / time.Minute)
	if mins < 1 {
		mins = 1
	}
	unit := "minutes"
	if mins == 1 {
		unit = "minute"
	}
	return fmt.Sprintf("Too many failed sign-in attempts. Try again in %d %s.", mins, unit)
}

// attemptLogin checks a password behind the brute-force limits: LoginPerAccount failures
// per submitted email (existing or not, so the lockout says nothing about existence) and
// LoginPerIP failures per client address, each over a window that starts at the first
// failure. While either is reached every attempt is refused before the password is
// checked; a success clears the account's count.
func (s *Server) attemptLogin(ctx context.Context, r *http.Request, email, password string) (auth.User, time.Duration, error) {
	acct := auth.HashSecret(strings.ToLower(strings.TrimSpace(email)))
	ip := s.clientKey(r)
	for _, c := range []struct {
		lim     auth.Limit
		subject string
	}{{s.o.LoginPerAccount, acct}, {s.o.LoginPerIP, ip}} {
		blocked, retry, err := s.limiter.Blocked(ctx, c.lim, c.subject)
		if err != nil {
			return auth.User{}, 0, err
		}
		if blocked {
			return auth.User{}, retry, errLocked
		}
	}
	u, err := s.users.Authenticate(ctx, email, password)
	if errors.Is(err, auth.ErrInvalidCredentials) {
		_, _, err1 := s.limiter.Hit(ctx, s.o.LoginPerAccount, acct)
		_, _, err2 := s.limiter.Hit(ctx, s.o.LoginPerIP, ip)
		if err := errors.Join(err1, err2); err != nil {
			return auth.User{}, 0, err
		}
		return auth.User{}, 0, auth.ErrInvalidCredentials
	}
	if err != nil {
		return auth.User{}, 0, err
	}
	_ = s.limiter.Reset(ctx, s.o.LoginPerAccount, acct)
	return u, 0, nil
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
	if _, ok, err := s.currentSession(w, r); err == nil && ok {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return
	}
	s.render(w, http.StatusOK, "login", pageData{Title: "Log in", CSRF: s.loginCSRF(w, r), Next: next}, "")
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
	u, retry, err := s.attemptLogin(r.Context(), r, email, r.PostFormValue("password"))
	data := pageData{Title: "Log in", CSRF: c.Value, Next: next, Email: email}
	switch {
	case errors.Is(err, errLocked):
		s.metrics.logins.WithLabelValues("form", "locked").Inc()
		w.Header().Set("Retry-After", strconv.Itoa(int(retry.Seconds())+1))
		data.Error = lockedMessage(retry)
		s.render(w, http.StatusTooManyRequests, "login", data, "")
		return
	case errors.Is(err, auth.ErrInvalidCredentials):
		s.metrics.logins.WithLabelValues("form", "failure").Inc()
		s.log().Info("login failed", "channel", "form", "client", s.clientKey(r))
		data.Error = "Invalid email or password."
		s.render(w, http.StatusUnauthorized, "login", data, "")
		return
	case err != nil:
		s.metrics.logins.WithLabelValues("form", "error").Inc()
		s.log().Error("login", "error", err)
		s.errorPage(w, http.StatusServiceUnavailable, "Unavailable", "The service is temporarily unavailable. Try again shortly.")
		return
	}
	raw, sess, err := s.sessions.Create(r.Context(), u)
	if err != nil {
		s.log().Error("create session", "error", err)
		s.errorPage(w, http.StatusServiceUnavailable, "Unavailable", "The service is temporarily unavailable. Try again shortly.")
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
	u, retry, err := s.attemptLogin(r.Context(), r, req.Email, req.Password)
	switch {
	case errors.Is(err, errLocked):
		s.metrics.logins.WithLabelValues("api", "locked").Inc()
		w.Header().Set("Retry-After", strconv.Itoa(int(retry.Seconds())+1))
		writeJSON(w, http.StatusTooManyRequests, failureBody{Error: lockedMessage(retry), Code: "RATE_LIMITED", Timestamp: now})
		return
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
