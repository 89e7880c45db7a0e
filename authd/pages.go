package authd

import (
	"bytes"
	"embed"
	"html/template"
	"net/http"
	"net/url"
	"strings"

	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/registry"
)

//go:embed templates/*.html
var templateFS embed.FS

type pages struct {
	t map[string]*template.Template
}

func loadPages() (*pages, error) {
	p := &pages{t: map[string]*template.Template{}}
	for _, name := range []string{"login", "logout", "consent", "error"} {
		t, err := template.ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, err
		}
		p.t[name] = t
	}
	return p, nil
}

// pageData is what every page template sees.
type pageData struct {
	Title string
	User  *auth.User
	CSRF  string
	Error string
	// Page-specific fields.
	Next, Email                                 string
	ClientName, RedirectHost, Resource, Request string
	Scopes                                      []scopeText
	// Bots are the user's bots the consent page offers for the app's policy; Policy the
	// limits it starts from (the defaults).
	Bots   []registry.Bot
	Policy apppolicy.Policy
	// Notice is a non-error note (the login page after a password change).
	Notice string
}

// render writes a page. Pages run no script and take their styles from the dashboard's
// stylesheet only; the CSP forbids any script and inline style, forbids framing, and lets
// forms post only to this origin (plus, on the consent page, the client's redirect origin
// that the post redirects to).
func (s *Server) render(w http.ResponseWriter, status int, name string, d pageData, formTarget string) {
	var buf bytes.Buffer
	if err := s.pages.t[name].ExecuteTemplate(&buf, name+".html", d); err != nil {
		s.log().Error("render page", "page", name, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	formAction := "'self'"
	if formTarget != "" {
		formAction += " " + formTarget
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", "default-src 'none'; style-src 'self'; img-src 'self'; form-action "+
		formAction+"; frame-ancestors 'none'; base-uri 'none'")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

func (s *Server) errorPage(w http.ResponseWriter, status int, title, msg string) {
	s.render(w, status, "error", pageData{Title: title, Error: msg}, "")
}

// pageError is an error shown to the user on a page, never redirected.
type pageError struct {
	status     int
	title, msg string
}

// unavailable is the page of a request that failed on Redis or another dependency: the
// user may try again.
var unavailable = pageError{http.StatusServiceUnavailable, "Unavailable", "The service is temporarily unavailable. Try again shortly."}

func (s *Server) unavailablePage(w http.ResponseWriter) {
	s.errorPage(w, unavailable.status, unavailable.title, unavailable.msg)
}

// safeNext keeps a post-login destination on this origin: an absolute path, no scheme or
// host, no "//" or "\" tricks. Anything else becomes the dashboard.
func safeNext(next string) string {
	if next == "" || len(next) > 4096 || !strings.HasPrefix(next, "/") || strings.HasPrefix(next, "//") ||
		strings.ContainsAny(next, "\\\r\n\t") {
		return "/dashboard"
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "/dashboard"
	}
	return next
}

// originOf is the scheme://host of a URL, for the consent page's form-action.
func originOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Scheme + "://" + u.Host
}
