package dashboard

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
)

//go:embed templates/*.html
var templateFS embed.FS

// pages holds one template set per page: the layout, the shared partials and the page's own
// file, which defines "content" and any fragment htmx re-renders alone.
type pages struct {
	t map[string]*template.Template
}

func loadPages() (*pages, error) {
	base, err := template.New("").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/partials.html")
	if err != nil {
		return nil, err
	}
	files, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	p := &pages{t: map[string]*template.Template{}}
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".html")
		if name == "layout" || name == "partials" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFS, f)
		if err != nil {
			return nil, fmt.Errorf("template %s: %w", name, err)
		}
		p.t[name] = t
	}
	return p, nil
}

// Page is what every page template sees: the layout's fields and the page's own Data.
type Page struct {
	Title string
	// Nav is the menu entry to highlight (overview, bots, trade, accounts, connections, lab,
	// settings).
	Nav    string
	Viewer Viewer
	// Flash is a one-line outcome shown above the content (after a redirect: ?done=...).
	Flash string
	// Error is a refusal in words, shown above the content.
	Error string
	Data  any
	// PendingApprovals is how many of the viewer's orders wait for their approval (the
	// header's badge), read by render.
	PendingApprovals int64
}

// render writes page name (its "layout", or, for an htmx request naming a fragment, that
// fragment alone) with status.
func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, status int, name string, p Page) {
	d.withPending(r, &p)
	d.renderTemplate(w, status, name, "layout", p)
}

// fragment writes one named template of page name (htmx swaps, live refreshes).
func (d *Dashboard) fragment(w http.ResponseWriter, status int, name, fragment string, p Page) {
	d.renderTemplate(w, status, name, fragment, p)
}

func (d *Dashboard) renderTemplate(w http.ResponseWriter, status int, name, tmpl string, p Page) {
	t, ok := d.pages.t[name]
	if !ok {
		d.log().Error("dashboard: no such page", "page", name)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	buf := pageBuffers.Get().(*bytes.Buffer)
	defer putPageBuffer(buf)
	buf.Reset()
	if err := t.ExecuteTemplate(buf, tmpl, p); err != nil {
		d.log().Error("dashboard: render", "page", name, "template", tmpl, "error", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Security-Policy", PageCSP)
	h.Set("Vary", "HX-Request")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// pageBuffers are the buffers pages are rendered into, reused: a page (the overview is
// about 100 KB) grown from an empty buffer allocated about twice its size on every render.
var pageBuffers = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// maxPooledPage is the largest buffer kept for reuse; a larger one, from a rare page, is
// left to the garbage collector rather than held.
const maxPooledPage = 1 << 20

func putPageBuffer(buf *bytes.Buffer) {
	if buf.Cap() <= maxPooledPage {
		pageBuffers.Put(buf)
	}
}

// PageCSP is every dashboard page's Content-Security-Policy: scripts and styles only from
// this origin's /static files (no inline script, style or style attribute, no eval), data
// only from this origin, no framing, forms only to this origin. The one inline style allowed
// is by its hash: the <style> lightweight-charts adds for its TradingView attribution logo
// (the library's fixed text, so a new vendored version with another text fails the browser
// test's console check rather than losing the logo's placement silently).
const PageCSP = "default-src 'none'; script-src 'self'; style-src 'self' '" + chartLogoStyleHash + "'; img-src 'self' data:; font-src 'self'; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// chartLogoStyleHash is the CSP hash of the attribution logo's <style> text in
// lightweight-charts 5.2.1 (static/vendor/VERSIONS).
const chartLogoStyleHash = "sha256-3pRED1tOXas1FXFoPb9TGCjmYe9XQsmO9OV23khV2nY="

// isHTMX reports whether the request came from htmx (it swaps a fragment, not the page).
func isHTMX(r *http.Request) bool { return r.Header.Get("HX-Request") == "true" }

// errorPage shows a refusal or failure on its own page (or, to htmx, as the error fragment).
func (d *Dashboard) errorPage(w http.ResponseWriter, r *http.Request, status int, title, msg string) {
	v, _ := r.Context().Value(viewerKey{}).(Viewer)
	p := Page{Title: title, Error: msg, Viewer: v}
	if isHTMX(r) {
		d.fragment(w, status, "error", "flash", p)
		return
	}
	d.render(w, r, status, "error", p)
}

// failPage shows err, a refusal of the Go APIs (*errs.Error: its status and the code in
// words) or an unexpected failure (logged; 503 in words).
func (d *Dashboard) failPage(w http.ResponseWriter, r *http.Request, err error) {
	var e *errs.Error
	if !errors.As(err, &e) {
		d.log().Error("dashboard", "path", r.URL.Path, "error", err)
		d.errorPage(w, r, http.StatusServiceUnavailable, "Unavailable", "The service is temporarily unavailable. Try again shortly.")
		return
	}
	d.errorPage(w, r, e.Code.HTTPStatus(), "Request refused", ErrorInWords(e))
}

// redirect ends a successful form post: 303 to the page (with a flash), or for htmx an
// HX-Location so it navigates the same way.
func redirect(w http.ResponseWriter, r *http.Request, to string) {
	if isHTMX(r) {
		w.Header().Set("HX-Redirect", to)
		w.WriteHeader(http.StatusNoContent)
		return
	}
	http.Redirect(w, r, to, http.StatusSeeOther)
}

// funcs are the templates' formatting helpers. Money and quantities stay decimals to the
// last digit; only the display rounds where a function says so.
var funcs = template.FuncMap{
	"dec":     func(v any) (string, error) { d, err := decOf(v); return d.String(), err },
	"fixed":   func(places int32, v any) (string, error) { d, err := decOf(v); return d.StringFixed(places), err },
	"signed":  func(places int32, v any) (string, error) { d, err := decOf(v); return signed(places, d), err },
	"pnl":     func(v any) (string, error) { d, err := decOf(v); return pnlClass(d), err },
	"time":    fmtTime,
	"ms":      func(ms int64) string { return fmtTime(time.UnixMilli(ms)) },
	"ago":     ago,
	"upper":   strings.ToUpper,
	"percent": func(v any) (string, error) { d, err := decOf(v); return d.StringFixed(2) + " %", err },
}

// decOf is the decimal a template passes: a decimal, or an httpapi.Number (the figures the
// APIs return as JSON numbers), either by value or by pointer (nil: 0).
func decOf(v any) (decimal.Decimal, error) {
	switch d := v.(type) {
	case decimal.Decimal:
		return d, nil
	case httpapi.Number:
		return d.Decimal, nil
	case *decimal.Decimal:
		if d != nil {
			return *d, nil
		}
	case *httpapi.Number:
		if d != nil {
			return d.Decimal, nil
		}
	default:
		return decimal.Zero, fmt.Errorf("not a decimal: %T", v)
	}
	return decimal.Zero, nil
}

// signed shows a PnL with its sign, fixed to places.
func signed(places int32, v decimal.Decimal) string {
	s := v.StringFixed(places)
	if v.IsPositive() {
		return "+" + s
	}
	return s
}

// pnlClass is the CSS class of a signed figure: "up", "down" or "".
func pnlClass(v decimal.Decimal) string {
	switch v.Sign() {
	case 1:
		return "up"
	case -1:
		return "down"
	}
	return ""
}

func fmtTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

func ago(t time.Time) string {
	d := time.Since(t)
	switch {
	case t.IsZero():
		return "never"
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min ago", int(d/time.Minute))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h ago", int(d/time.Hour))
	}
	return fmt.Sprintf("%d days ago", int(d/(24*time.Hour)))
}
