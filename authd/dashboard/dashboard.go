// Package dashboard serves the browser dashboard of sigops on {base_url}: the pages
// (Overview, Bots, Bot detail, Manual trading, Paper accounts, Exchange connections,
// Strategy Lab, Approvals, Settings), their forms, and the internal API under /api/dashboard that the
// pages' scripts call (chart data and the live-update stream).
//
// authd mounts it and owns the session: every route needs a dashboard session cookie, every
// state-changing request the session's CSRF token, and the internal API refuses bearer
// tokens (automation goes through webhooks and the MCP server). Pages are server-rendered
// html/template with htmx as progressive enhancement: every form is a plain POST that also
// works without script. The figures come from the same Go APIs mcpd's tools call
// (internal/userapi); nothing is computed here twice.
package dashboard

import (
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/userapi"
	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/approval"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/events"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/notify/manage"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
)

// ErrNoSession is Options.Session's answer for a request without a live session.
var ErrNoSession = errors.New("dashboard: no session")

// Viewer is the user a request is served for, and their session's CSRF token.
type Viewer struct {
	User auth.User
	CSRF string
}

// Options wire the dashboard.
type Options struct {
	Redis redis.UniversalClient
	// APIs are the Go APIs the pages call (the same as mcpd's). APIs.Fleet nil: the bot
	// create/edit/delete pages answer that bot management is not configured.
	APIs *userapi.APIs
	// Hub delivers live events (nil: one on Redis, run by Run).
	Hub *events.Hub
	// Session resolves the request's session cookie: ErrNoSession when there is none, another
	// error when it cannot be read.
	Session func(w http.ResponseWriter, r *http.Request) (Viewer, error)
	// BaseURL is {base_url} (same-origin checks, webhook URLs, the TradingView message).
	BaseURL string
	// Issuer issues the bearer token of Settings; OAuth lists and revokes Connected Apps;
	// Purge drops the token verifier's cache after a revocation.
	Issuer *auth.Issuer
	OAuth  *auth.OAuth
	// Policies are the connected apps' policies and the kill switch (nil: on Redis alone).
	Policies *apppolicy.Policies
	Purge    func()
	Logger   *slog.Logger
	Now      func() time.Time

	// ChangePassword checks user u's current password behind the login brute-force limits
	// (the login gate's refusal is RATE_LIMITED, a wrong password ErrWrongPassword) and sets
	// next, which ends every session and token of u (auth.Users.SetPassword). nil: the
	// Settings page offers no password change.
	ChangePassword func(r *http.Request, u auth.User, current, next string) error
	// Notifications carry out the Notifications tab (nil: the tab says they need
	// PostgreSQL).
	Notifications *manage.Manager
}

// Dashboard is the handler set.
type Dashboard struct {
	o         Options
	pages     *pages
	static    *staticFiles
	bots      *registry.Registry
	book      *position.Book
	analytics *analytics.Analytics
	accounts  *paper.Accounts
	approvals *approval.Store
}

// New returns a dashboard.
func New(o Options) (*Dashboard, error) {
	if o.Redis == nil || o.APIs == nil || o.Session == nil {
		return nil, errors.New("dashboard needs Redis, the user APIs and a session resolver")
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Policies == nil {
		o.Policies = apppolicy.NewPolicies(o.Redis, o.Now)
	}
	if o.Hub == nil {
		o.Hub = events.NewHub(o.Redis, o.Logger)
	}
	d := &Dashboard{o: o, bots: registry.New(o.Redis), book: position.NewBook(o.Redis),
		analytics: o.APIs.Analytics, accounts: paper.NewAccounts(o.Redis),
		approvals: approval.New(o.Redis, o.Policies, o.Now)}
	if d.analytics == nil {
		d.analytics = analytics.New(o.Redis)
	}
	var err error
	if d.pages, err = loadPages(); err != nil {
		return nil, err
	}
	if d.static, err = loadStatic(); err != nil {
		return nil, err
	}
	return d, nil
}

// Hub is the live-event hub; authd runs it (Hub().Run) for as long as it serves.
func (d *Dashboard) Hub() *events.Hub { return d.o.Hub }

// Mount adds the dashboard's routes to r: /static/*, /dashboard/* and /api/dashboard/*.
func (d *Dashboard) Mount(r chi.Router) {
	r.Get("/static/*", d.serveStatic)
	r.Route("/dashboard", func(r chi.Router) {
		r.Use(d.pageSession)
		d.overviewRoutes(r)
		d.botRoutes(r)
		d.botDetailRoutes(r)
		d.tradeRoutes(r)
		d.accountRoutes(r)
		d.connectionRoutes(r)
		d.labRoutes(r)
		d.settingsRoutes(r)
		d.approvalRoutes(r)
	})
	r.Route("/api/dashboard", func(r chi.Router) {
		r.Use(d.apiSession)
		r.Get("/events", d.handleEvents)
		d.chartRoutes(r)
		d.labAPIRoutes(r)
	})
}

func (d *Dashboard) log() *slog.Logger { return d.o.Logger }
