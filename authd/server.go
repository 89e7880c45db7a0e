// Package authd serves accounts, dashboard sessions, bearer JWTs and the OAuth 2.1
// authorization server of sigops: discovery documents, client registration, authorize and
// consent, the token and revocation endpoints, the login/logout pages, /api/user/me, and
// mounts the dashboard (package authd/dashboard, which serves the settings pages). The
// storage and token logic live in runtime/auth; this package is HTTP.
package authd

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/authd/dashboard"
	"github.com/sigops/sigops/internal/userapi"
	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/events"
	"github.com/sigops/sigops/runtime/notify/manage"
)

// Options configure the server.
type Options struct {
	Redis redis.UniversalClient
	// DB, when set, is PostgreSQL, the record of accounts, wallets, OAuth registrations and
	// consents (auth.UsersOptions.DB, auth.OAuthOptions.DB).
	DB   *pgxpool.Pool
	Keys *auth.Keyring
	// BaseURL is {base_url}, the issuer: scheme and host, no path (https://sigops.example).
	BaseURL string
	// MCPURL is {mcp_url}, the origin of the hosted MCP server (empty: BaseURL).
	MCPURL string
	// KDF is the password hashing cost (zero: auth.DefaultKDF).
	KDF auth.KDFParams
	// AllowLocalhostRedirects treats http://localhost redirect URIs as loopback.
	AllowLocalhostRedirects bool
	// TrustedProxies may mark a plain-HTTP request as HTTPS (X-Forwarded-Proto) and name the
	// client address (X-Forwarded-For).
	TrustedProxies []netip.Prefix
	// Limits of the brute-force and registration counters (zero: runtime/auth defaults).
	LoginPerAccount, LoginPerIP                     auth.Limit
	RegisterPerIP, RegisterPerNet48, RegisterGlobal auth.Limit
	// HashConcurrency and HashQueue bound the argon2id work of this replica: computations
	// at once, and computations waiting for a slot before a login is refused with 429
	// (zero: auth.DefaultHashConcurrency, auth.DefaultHashQueue; a negative queue: none wait).
	HashConcurrency, HashQueue int
	// Audit is the journal GET /api/user/audit reads (nil: one on Redis with the default
	// retention).
	Audit *audit.Journal
	// APIs are the Go APIs the dashboard pages call, the same as mcpd's (nil:
	// userapi.OnRedis: simulated market data, no exchange access, no bot management).
	APIs *userapi.APIs
	// Hub delivers the dashboard's live events (nil: one on Redis; Run runs it).
	Hub *events.Hub
	// Notifications, when set, serve /api/user/notifications/* and the dashboard's
	// Notifications tab (they need PostgreSQL).
	Notifications *manage.Manager
	// Version is the server card's version.
	Version string
	// Ready reports whether the server can take traffic (Redis reachable).
	Ready      func(context.Context) error
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// Now is the clock (nil: time.Now); tests move it to expire codes and tokens.
	Now func() time.Time
}

// Server is authd's HTTP server.
type Server struct {
	o        Options
	users    *auth.Users
	sessions *auth.Sessions
	oauth    *auth.OAuth
	// policies are the connected apps' policies and the kill switches (the consent page
	// writes an app's first policy; the dashboard the rest).
	policies *apppolicy.Policies
	issuer   *auth.Issuer
	verifier *auth.Verifier
	limiter  *auth.Limiter
	audit    *audit.Journal
	gate     *auth.LoginGate
	metrics  *metrics
	pages    *pages
	dash     *dashboard.Dashboard

	apiResource, mcpResource string
}

// New returns a server; it registers its metrics with o.Registerer.
func New(o Options) (*Server, error) {
	if o.Redis == nil || o.Keys == nil {
		return nil, errors.New("authd needs Redis and signing keys")
	}
	base, err := cleanOrigin(o.BaseURL)
	if err != nil {
		return nil, errors.New("base URL: " + err.Error())
	}
	o.BaseURL = base
	if o.MCPURL == "" {
		o.MCPURL = base
	}
	if o.MCPURL, err = cleanOrigin(o.MCPURL); err != nil {
		return nil, errors.New("MCP URL: " + err.Error())
	}
	o = o.withDefaults()
	s := &Server{o: o, apiResource: o.BaseURL + "/api", mcpResource: o.MCPURL + "/mcp"}
	s.users = auth.NewUsers(o.Redis, auth.UsersOptions{KDF: o.KDF, HashConcurrency: o.HashConcurrency,
		HashQueue: o.HashQueue, Now: o.Now, DB: o.DB})
	s.policies = apppolicy.New(o.Redis, apppolicy.Options{Now: o.Now, DB: o.DB})
	s.sessions = auth.NewSessions(o.Redis, o.Now)
	s.oauth = auth.NewOAuth(o.Redis, auth.OAuthOptions{AllowLocalhostRedirects: o.AllowLocalhostRedirects, Now: o.Now, DB: o.DB})
	s.issuer = auth.NewIssuer(auth.IssuerOptions{Redis: o.Redis, Keys: o.Keys, Issuer: o.BaseURL, APIAudience: s.apiResource, Now: o.Now})
	// /api/user/me is the identity endpoint of both resources (the API and the MCP server
	// relay it), so authd accepts tokens bound to either.
	s.verifier, err = auth.NewVerifier(auth.VerifierOptions{Redis: o.Redis, Keys: o.Keys, Issuer: o.BaseURL,
		Audiences: []string{s.apiResource, s.mcpResource}, Now: o.Now})
	if err != nil {
		return nil, err
	}
	if n := o.Notifications; n != nil && n.Linked == nil {
		n.Linked = s.users.SetTelegramLinked
	}
	s.limiter = auth.NewLimiter(o.Redis)
	s.audit = o.Audit
	if s.audit == nil {
		s.audit = audit.New(o.Redis, audit.Options{Now: o.Now})
	}
	s.gate = auth.NewLoginGate(o.Redis, o.LoginPerAccount, o.LoginPerIP)
	s.metrics = newMetrics(s.users.Verifications)
	if o.Registerer != nil {
		if err := s.metrics.register(o.Registerer); err != nil {
			return nil, err
		}
	}
	if s.pages, err = loadPages(); err != nil {
		return nil, err
	}
	if o.APIs == nil {
		o.APIs = userapi.OnRedis(o.Redis)
		s.o.APIs = o.APIs
	}
	s.dash, err = dashboard.New(dashboard.Options{Redis: o.Redis, APIs: o.APIs, Hub: o.Hub, Session: s.dashboardSession,
		BaseURL: o.BaseURL, Issuer: s.issuer, OAuth: s.oauth, Policies: s.policies, Purge: s.verifier.Purge,
		ChangePassword: s.changePassword, Notifications: o.Notifications, Logger: o.Logger, Now: o.Now})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// withDefaults fills the options left out: the logger, the clock, the login and
// registration limits and the version.
func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.LoginPerAccount.Max == 0 {
		o.LoginPerAccount = auth.LoginPerAccount
	}
	if o.LoginPerIP.Max == 0 {
		o.LoginPerIP = auth.LoginPerIP
	}
	if o.RegisterPerIP.Max == 0 {
		o.RegisterPerIP = auth.RegisterPerIP
	}
	if o.RegisterPerNet48.Max == 0 {
		o.RegisterPerNet48 = auth.RegisterPerNet48
	}
	if o.RegisterGlobal.Max == 0 {
		o.RegisterGlobal = auth.RegisterGlobal
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	return o
}

// cleanOrigin accepts scheme://host[:port] with no path, query or fragment.
func cleanOrigin(raw string) (string, error) {
	raw = strings.TrimRight(strings.TrimSpace(raw), "/")
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.Path != "" || u.RawQuery != "" || u.Fragment != "" || u.User != nil {
		return "", errors.New("want scheme://host[:port] without a path")
	}
	return u.Scheme + "://" + u.Host, nil
}

// Run delivers the dashboard's live events until ctx ends (one Redis subscription for the
// replica); without it the pages show changes only when reloaded.
func (s *Server) Run(ctx context.Context) error { return s.dash.Hub().Run(ctx) }

// Verifier is the server's token verifier (its cache is purged on every revocation made here).
func (s *Server) Verifier() *auth.Verifier { return s.verifier }

// Handler is the HTTP handler: every route of authd behind the HTTPS rule, plus probes.
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	r.Get("/readyz", func(w http.ResponseWriter, req *http.Request) {
		if s.o.Ready != nil {
			if err := s.o.Ready(req.Context()); err != nil {
				http.Error(w, "not ready", http.StatusServiceUnavailable)
				return
			}
		}
		w.WriteHeader(http.StatusOK)
	})
	r.Group(func(r chi.Router) {
		r.Use(s.requireHTTPS, securityHeaders)

		// Discovery and the machine endpoints of the authorization server (CORS-open: no
		// cookies are read there).
		r.Group(func(r chi.Router) {
			r.Use(openCORS)
			r.Get("/.well-known/oauth-authorization-server", s.handleASMetadata)
			r.Get("/.well-known/oauth-protected-resource", s.handlePRMetadata(s.apiResource))
			r.Get("/.well-known/oauth-protected-resource/api", s.handlePRMetadata(s.apiResource))
			r.Get("/.well-known/oauth-protected-resource/mcp", s.handlePRMetadata(s.mcpResource))
			r.Get("/.well-known/mcp/server-card.json", s.handleServerCard)
			r.Post("/api/oauth/register", s.handleRegister)
			r.Post("/api/oauth/token", s.handleToken)
			r.Post("/api/oauth/revoke", s.handleRevoke)
			r.Post("/api/oauth/mcp/token", s.handleDeprecatedToken)
			r.Options("/*", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
		})

		r.Get("/api/oauth/authorize", s.handleAuthorize)
		r.Post("/api/auth/login", s.handleAPILogin)
		r.Post("/api/auth/logout", s.handleAPILogout)
		r.Get("/api/user/me", s.handleMe)
		r.Get("/api/user/audit", s.handleAudit)
		s.notifyRoutes(r)

		r.Get("/login", s.handleLoginPage)
		r.Post("/login", s.handleLoginForm)
		r.Get("/logout", s.withSession(s.handleLogoutPage))
		r.Post("/logout", s.withSession(s.handleLogoutForm))
		r.Get("/oauth/consent", s.withSession(s.handleConsentPage))
		r.Post("/oauth/consent", s.withSession(s.handleConsentForm))
		s.dash.Mount(r)
	})
	r.NotFound(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusNotFound, failureBody{Error: "not found", Timestamp: time.Now().UnixMilli()})
	})
	return r
}

func (s *Server) log() *slog.Logger { return s.o.Logger }
