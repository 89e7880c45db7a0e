// Package readapi is the read-only REST API beside the webhook endpoint: candles, bot
// analytics, bot risk metrics and the user portfolio, with the OpenAPI document of the
// public surface. It owns what every read endpoint shares: who the caller is (caller.go),
// which bots are theirs (bots.go), the per-client-IP rate limit (limit.go) and the JSON
// envelope (runtime/httpapi). Each endpoint has its own file with its handler; the figures
// come from the runtime package that computes them (the same Go API mcpd and the dashboard
// call), never from the handler. Nothing here calls the Kubernetes API.
package readapi

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/candles"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/portfolio"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/trading"
	"github.com/sigops/sigops/runtime/trustedproxy"
)

// Bots reads projected bots; *registry.Registry is one.
type Bots interface {
	Get(ctx context.Context, id string) (registry.Bot, error)
}

// Options configure the read API.
type Options struct {
	Redis redis.UniversalClient
	// Bots reads the projected bots (nil: a registry on Redis).
	Bots Bots
	// Verifier checks bearer JWTs and OAuth access tokens; its audiences must include
	// {base_url}/api.
	Verifier *auth.Verifier
	// Sessions and Users identify a dashboard session cookie's user.
	Sessions *auth.Sessions
	Users    *auth.Users
	// Trading reads a bot's risk metrics.
	Trading *trading.API
	// Candles serves GET /api/charts/candles (nil: the route is not served).
	Candles *candles.Service
	// Portfolio computes the caller's portfolio (nil: one on Redis with no market data and
	// no exchange access).
	Portfolio *portfolio.Service
	// Analytics computes a bot's analytics (nil: on Redis).
	Analytics *analytics.Analytics
	// ResourceMetadata is the URL of the API's OAuth protected resource metadata, named in
	// WWW-Authenticate so that a client learns where to get a token.
	ResourceMetadata string
	// Proxies are the trusted proxies whose X-Forwarded-For names the client.
	Proxies trustedproxy.Proxies
	// PerIP is the rate limit per client address (zero: DefaultPerIP).
	PerIP  RateLimit
	Logger *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// API serves the read endpoints.
type API struct {
	o       Options
	limiter *limiter
}

// New returns the API.
func New(o Options) *API {
	if o.Bots == nil {
		o.Bots = registry.New(o.Redis)
	}
	if o.Analytics == nil {
		o.Analytics = analytics.New(o.Redis)
	}
	if o.PerIP.Rate <= 0 {
		o.PerIP = DefaultPerIP
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Portfolio == nil {
		o.Portfolio = portfolio.New(portfolio.Options{Redis: o.Redis, Now: o.Now})
	}
	return &API{o: o, limiter: newLimiter(o.Redis, o.PerIP)}
}

// Routes registers the read endpoints on r. Every route is rate-limited per client address;
// the account routes also require a caller.
func (a *API) Routes(r chi.Router) {
	r.Group(func(r chi.Router) {
		r.Use(a.limitPerIP)
		r.Get(OpenAPIPath, a.handleOpenAPI)
		if a.o.Candles != nil {
			// Public data: a caller is needed only to name an exchange connection.
			r.Get(CandlesPath, a.handleCandles)
		}
		r.Group(func(r chi.Router) {
			r.Use(a.requireCaller)
			r.Get("/api/botsvc/bots/{botId}/risk", a.handleRisk)
			r.Get(PortfolioPath, a.handlePortfolio)
			r.Get("/api/botsvc/bots/{botId}/analytics", a.handleAnalytics)
		})
	})
}

// fail answers err: a typed error with its code, anything else as INTERNAL_ERROR with the
// detail logged and not shown.
func (a *API) fail(w http.ResponseWriter, r *http.Request, err error) {
	e, ok := errs.As(err)
	if !ok {
		a.o.Logger.Error("read API request failed", "path", r.URL.Path, "err", err)
		e = errs.New(errs.InternalError, "internal error")
	}
	httpapi.WriteError(w, e, "", a.o.Now())
}
