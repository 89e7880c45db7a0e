package authd

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/sigops/sigops/authd/dashboard"
	"github.com/sigops/sigops/runtime/auth"
)

// Cookie names. The __Host- prefix makes browsers refuse them unless Secure, Path=/ and
// host-only, so a sibling subdomain cannot plant or overwrite them.
const (
	sessionCookie   = auth.SessionCookie
	loginCSRFCookie = "__Host-sigops_login_csrf"
	csrfField       = "csrf_token"
)

type sessionKey struct{}

type sessionCtx struct {
	sess auth.Session
	user auth.User
}

// cookieSession is what a request's session cookie leads to: live is false when there is no
// live session (no cookie, an ended session, a deleted user).
type cookieSession struct {
	sessionCtx
	live bool
}

// setSessionCookie writes the session cookie: HttpOnly, Secure, SameSite=Strict, Path=/,
// with Max-Age (and Expires) at the end of the session's idle window, re-sent on every
// authenticated page so the browser's copy slides with the server's.
func (s *Server) setSessionCookie(w http.ResponseWriter, raw string, exp time.Time) {
	maxAge := int(exp.Sub(s.o.Now()).Seconds())
	if maxAge < 1 {
		maxAge = -1
	}
	http.SetCookie(w, &http.Cookie{Name: sessionCookie, Value: raw, Path: "/", MaxAge: maxAge, Expires: exp.UTC(),
		HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode})
}

func clearCookie(w http.ResponseWriter, name string) {
	http.SetCookie(w, &http.Cookie{Name: name, Value: "", Path: "/", MaxAge: -1, HttpOnly: true, Secure: true,
		SameSite: http.SameSiteStrictMode})
}

// currentSession reads the session cookie.
func (s *Server) currentSession(w http.ResponseWriter, r *http.Request) (cookieSession, error) {
	c, err := r.Cookie(sessionCookie)
	if err != nil || c.Value == "" {
		return cookieSession{}, nil
	}
	sess, err := s.sessions.Lookup(r.Context(), c.Value)
	if errors.Is(err, auth.ErrNoSession) {
		clearCookie(w, sessionCookie)
		return cookieSession{}, nil
	}
	if err != nil {
		return cookieSession{}, err
	}
	u, err := s.users.Get(r.Context(), sess.UserID)
	if errors.Is(err, auth.ErrNotFound) {
		_ = s.sessions.Destroy(r.Context(), sess)
		clearCookie(w, sessionCookie)
		return cookieSession{}, nil
	}
	if err != nil {
		return cookieSession{}, err
	}
	s.setSessionCookie(w, c.Value, sess.ExpiresAt)
	return cookieSession{sessionCtx{sess: sess, user: u}, true}, nil
}

// withSession requires a dashboard session: a GET without one goes to the login page and
// comes back; a POST without one is refused (a form cannot be replayed after login).
func (s *Server) withSession(next func(http.ResponseWriter, *http.Request, sessionCtx)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		cur, err := s.currentSession(w, r)
		if err != nil {
			s.log().Error("session lookup", "error", err)
			s.unavailablePage(w)
			return
		}
		if !cur.live {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, "/login?next="+urlQueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			s.errorPage(w, http.StatusUnauthorized, "Session expired", "Your session has ended. Log in and try again.")
			return
		}
		sc := cur.sessionCtx
		next(w, r.WithContext(context.WithValue(r.Context(), sessionKey{}, sc)), sc)
	}
}

// checkCSRF guards every state-changing form of a session: the form's token must equal the
// session's synchronizer token (constant-time), and a browser that names the request's
// origin (Origin, Sec-Fetch-Site) must name this one.
func (s *Server) checkCSRF(r *http.Request, want string) bool {
	if !s.sameOrigin(r) {
		return false
	}
	got := r.PostFormValue(csrfField)
	return got != "" && want != "" && auth.EqualSecret(got, want)
}

func (s *Server) sameOrigin(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" && o != s.o.BaseURL {
		return false
	}
	return true
}

// parseForm reads a bounded urlencoded body.
func parseForm(w http.ResponseWriter, r *http.Request) bool {
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	return r.ParseForm() == nil
}

// dashboardSession is the dashboard's view of the request's session cookie.
func (s *Server) dashboardSession(w http.ResponseWriter, r *http.Request) (dashboard.Viewer, error) {
	cur, err := s.currentSession(w, r)
	if err != nil {
		return dashboard.Viewer{}, err
	}
	if !cur.live {
		return dashboard.Viewer{}, dashboard.ErrNoSession
	}
	return dashboard.Viewer{User: cur.user, CSRF: cur.sess.CSRF}, nil
}
