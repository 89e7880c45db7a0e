package dashboard

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"strings"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
)

// CSRFField is the form field, and CSRFHeader the header (htmx and the scripts), that carry
// the session's CSRF token.
const (
	CSRFField  = "csrf_token"
	CSRFHeader = "X-CSRF-Token"
)

type viewerKey struct{}

// viewerOf is the request's viewer; the session middleware put it there.
func viewerOf(r *http.Request) Viewer {
	v, _ := r.Context().Value(viewerKey{}).(Viewer)
	return v
}

// pageSession requires a session on the pages: a GET without one goes to the login page and
// comes back after; any other method without one is refused (a form cannot be replayed
// after a login), and every state-changing request must carry the CSRF token.
func (d *Dashboard) pageSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		v, err := d.o.Session(w, r)
		switch {
		case errors.Is(err, ErrNoSession) && r.Method == http.MethodGet:
			http.Redirect(w, r, "/login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
			return
		case errors.Is(err, ErrNoSession):
			d.errorPage(w, r, http.StatusUnauthorized, "Session expired", "Your session has ended. Log in and try again.")
			return
		case err != nil:
			d.log().Error("dashboard: session lookup", "error", err)
			d.errorPage(w, r, http.StatusServiceUnavailable, "Unavailable", "The service is temporarily unavailable. Try again shortly.")
			return
		}
		if !safeMethod(r.Method) && !d.csrfOK(w, r, v.CSRF) {
			d.errorPage(w, r, http.StatusForbidden, "Request refused", "The form was not sent from this site. Reload the page and try again.")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), viewerKey{}, v)))
	})
}

// apiSession guards the internal API: a bearer token is refused with 401 whatever else the
// request holds (the API is the dashboard's own, not a public one: decision 18), and every
// request, reads included, needs the session and its CSRF token, so that another site can
// neither read nor change anything through a user's cookie.
func (d *Dashboard) apiSession(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if h := r.Header.Get("Authorization"); h != "" {
			d.apiFail(w, http.StatusUnauthorized, errs.Unauthorized,
				"the dashboard API takes a browser session only; automate trading through webhooks or the MCP server")
			return
		}
		v, err := d.o.Session(w, r)
		switch {
		case errors.Is(err, ErrNoSession):
			d.apiFail(w, http.StatusUnauthorized, errs.Unauthorized, "no dashboard session: log in at /login")
			return
		case err != nil:
			d.log().Error("dashboard API: session lookup", "error", err)
			d.apiFail(w, http.StatusServiceUnavailable, errs.InternalError, "the service is temporarily unavailable")
			return
		}
		if !d.csrfOK(w, r, v.CSRF) {
			d.apiFail(w, http.StatusForbidden, CodeCSRF, "missing or wrong CSRF token: send the page's token in the X-CSRF-Token header")
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), viewerKey{}, v)))
	})
}

// CodeCSRF is the internal API's refusal of a request without the session's CSRF token
// (ours: the spec's codes are those of the public interfaces).
const CodeCSRF errs.Code = "CSRF_TOKEN_INVALID"

// apiFail answers the internal API's failure envelope (the public API's shape).
func (d *Dashboard) apiFail(w http.ResponseWriter, status int, code errs.Code, msg string) {
	httpapi.WriteJSON(w, status, httpapi.Failure{Error: msg, Code: code, Timestamp: d.o.Now().UnixMilli()})
}

// apiError answers a typed error of the Go APIs with its code's status.
func (d *Dashboard) apiError(w http.ResponseWriter, err error) {
	var e *errs.Error
	if !errors.As(err, &e) {
		d.log().Error("dashboard API", "error", err)
		d.apiFail(w, http.StatusServiceUnavailable, errs.InternalError, "the service is temporarily unavailable")
		return
	}
	httpapi.WriteError(w, e, "", d.o.Now())
}

func safeMethod(m string) bool { return m == http.MethodGet || m == http.MethodHead }

// csrfOK checks the request's CSRF token (header, query parameter "csrf" for EventSource's
// GET, or form field) against the session's, in constant time, and that a browser naming the
// request's origin names this one.
func (d *Dashboard) csrfOK(w http.ResponseWriter, r *http.Request, want string) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" && o != d.o.BaseURL {
		return false
	}
	got := r.Header.Get(CSRFHeader)
	// The query parameter is for EventSource, which can send no header and is a GET; on any
	// other method a token in the URL (kept in logs, history and Referer) is not taken.
	if got == "" && safeMethod(r.Method) {
		got = r.URL.Query().Get("csrf")
	}
	if got == "" && !safeMethod(r.Method) {
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if strings.HasPrefix(r.Header.Get("Content-Type"), "multipart/form-data") {
			_ = r.ParseMultipartForm(64 << 10)
		} else {
			_ = r.ParseForm()
		}
		got = r.PostFormValue(CSRFField)
	}
	return got != "" && want != "" && auth.EqualSecret(got, want)
}
