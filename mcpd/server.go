// Package mcpd is the hosted MCP server: {mcp_url}/mcp over streamable HTTP (mcp-go), with
// its sessions in Redis so that any replica answers any request (session.go). It owns what every tool shares:
// who the caller is (auth.go: bearer JWTs and OAuth access tokens for the MCP resource, the
// tier's allowMcpServer), the tool registry with each tool's required scope and the scope
// check before mcp-go sees a call (registry.go, scope.go), the rate limit per OAuth client
// or user (limit.go) and the protected resource metadata (metadata.go). Tools call the
// runtime packages' Go APIs; none reads Redis keys itself.
package mcpd

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/mark3labs/mcp-go/server"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/approval"
	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/candles"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/expiring"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/intake"
	"github.com/sigops/sigops/runtime/lab"
	"github.com/sigops/sigops/runtime/portfolio"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/trading"
	"github.com/sigops/sigops/runtime/trustedproxy"
)

// Path is the MCP endpoint on {mcp_url}.
const Path = "/mcp"

// Paths of the protected resource metadata (RFC 9728) on the MCP origin: the one the 401
// challenge names, and the one RFC 9728 §3.1 derives from the resource's path.
const (
	MetadataPath         = "/.well-known/oauth-protected-resource"
	MetadataResourcePath = MetadataPath + Path
)

// Options configure the server.
type Options struct {
	Redis redis.UniversalClient
	// BaseURL is {base_url}: authd, the authorization server and the tokens' issuer.
	BaseURL string
	// MCPURL is {mcp_url}, the origin of this server (empty: BaseURL).
	MCPURL string
	// Verifier checks tokens; its audiences must include {mcp_url}/mcp (OAuth) and
	// {base_url}/api (bearer JWTs).
	Verifier *auth.Verifier
	Users    *auth.Users
	OAuth    *auth.OAuth
	// Tier reads a user's tier for the allowMcpServer check (nil: the tier read with the
	// token's live state and the email, once per request, auth.Verifier.Stage).
	Tier func(ctx context.Context, userID string) (auth.Tier, error)
	// RateLimit is the number of requests a minute per OAuth client of a user, or per user
	// for bearer JWTs (0: DefaultRateLimit).
	RateLimit int
	// TrustedProxies may mark a request as HTTPS (X-Forwarded-Proto).
	TrustedProxies trustedproxy.Proxies
	// Bots reads the projected bots (nil: a registry on Redis).
	Bots *registry.Registry
	// Trading reads bots' risk metrics, positions and orders (nil: on Redis, without market
	// data, which the risk metrics do not need).
	Trading *trading.API
	// Portfolio computes the caller's portfolio (nil: on Redis, with no market data and no
	// exchange access).
	Portfolio *portfolio.Service
	// Candles serves get_candles (nil: the tool is not registered).
	Candles *candles.Service
	// Exchanges connects the caller's exchange connections for get_symbol_info (the
	// Clients the portfolio uses; nil: such calls answer EXCHANGE_DISCONNECTED "credentials
	// unavailable", as the portfolio does without a master key).
	Exchanges portfolio.Clients
	// Analytics computes bots' analytics (nil: on Redis).
	Analytics *analytics.Analytics
	// SessionIdle is how long an MCP session lives without a request (0:
	// DefaultSessionIdle).
	SessionIdle time.Duration
	// Fleet changes bots through the Kubernetes API (create_bot, update_bot, delete_bot,
	// pause_bot, resume_bot, regenerate_webhook) and reads their webhook URLs
	// (get_webhook_url); nil: those tools are not registered.
	Fleet *fleet.Fleet
	// Intake admits send_signal's signals, as webhookd's (nil: one on Redis).
	Intake *intake.Intake
	// Symbols resolves send_signal's symbols, as webhookd's index does (nil: the paper
	// catalogue only).
	Symbols func() *signal.Symbols
	// Waiter delivers results to send_signal calls with wait true (nil: they answer queued
	// at once).
	Waiter *queue.Waiter
	// Audit records the calls of tools that change something (nil: a journal on Redis).
	Audit *audit.Journal
	// ResultWait bounds how long a trading tool waits for its signal's result before it
	// answers "queued" (0: DefaultResultWait; negative: it does not wait).
	ResultWait time.Duration
	// PaperAccounts reads and refills paper accounts (nil: on Redis).
	PaperAccounts *paper.Accounts
	// Lab serves generate_strategy, get_strategy_job and list_strategy_jobs (nil: the
	// Strategy Lab tools are not registered).
	Lab *lab.Lab
	// Previews size a call's order as the executor would, with nothing written: dry runs and
	// connected apps' live entries (their notional caps). nil: dry runs and apps' live
	// entries answer INTERNAL_ERROR; mcpd's main sets one on the executor's venues.
	Previews Previewer
	// Approvals holds connected apps' live entries their policy asks the user to approve
	// (nil: on Redis, with AppPolicies).
	Approvals *approval.Store
	// AppPolicies admits connected apps' calls: the users' kill switches and the apps'
	// policies (nil: on Redis).
	AppPolicies *apppolicy.Policies
	// Tools are registered after the built-in ones (tests add tools with other scopes).
	Tools []Tool
	Ready func(ctx context.Context) error
	// Registerer receives the metrics (nil: not registered).
	Registerer prometheus.Registerer
	Logger     *slog.Logger
	// Version is the serverInfo version.
	Version string
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Server is the hosted MCP server.
type Server struct {
	o           Options
	resource    string // {mcp_url}/mcp
	apiAudience string // {base_url}/api
	metadataURL string
	tools       *Registry
	mcp         *server.MCPServer
	http        *server.StreamableHTTPServer
	limiter     *limiter
	sessions    *sessions
	// status keeps each token's Authentication status (check_auth) for statusTTL.
	status  *expiring.Cache[auth.Status]
	metrics *metrics
	// conns reads the caller's exchange connections.
	conns *credentials.Connections
}

// New returns the server.
func New(o Options) (*Server, error) {
	if o.Redis == nil || o.Verifier == nil || o.Users == nil || o.OAuth == nil || o.BaseURL == "" {
		return nil, errors.New("mcpd needs Redis, a verifier, the user and OAuth stores and the base URL")
	}
	o = o.withDefaults()
	s := &Server{o: o, resource: o.MCPURL + Path, apiAudience: o.BaseURL + "/api",
		metadataURL: o.MCPURL + MetadataPath, tools: NewRegistry(),
		limiter: newLimiter(o.RateLimit), sessions: &sessions{rdb: o.Redis, idle: o.SessionIdle, logger: o.Logger}, status: expiring.New[auth.Status](statusCacheMax), metrics: newMetrics(),
		conns: credentials.NewConnections(o.Redis)}
	if o.Registerer != nil {
		if err := s.metrics.register(o.Registerer); err != nil {
			return nil, err
		}
	}
	s.mcp = server.NewMCPServer("sigops", o.Version, server.WithToolCapabilities(false), server.WithRecovery())
	for _, t := range slices.Concat(s.sessionTools(), s.botTools(), s.fleetTools(), s.webhookTools(), s.sendTools(),
		s.signalTools(), s.tradingTools(), s.orderTools(), s.positionTools(), s.portfolioTools(), s.accountTools(),
		s.refillTools(), s.marketTools(), s.generateTools(), s.labTools(), o.Tools) {
		if err := s.tools.Add(t); err != nil {
			return nil, err
		}
		t, _ = s.tools.Get(t.Def.Name)
		s.mcp.AddTool(t.Def, s.guarded(t))
	}
	// Sessions live in Redis, bound to the user who started them, so any replica serves
	// any request (decision "MCP server" 1). DNS rebinding protection is off: the server
	// is hosted behind TLS and every request carries a bearer token a browser cannot add.
	s.http = server.NewStreamableHTTPServer(s.mcp,
		server.WithSessionIdManagerResolver(s.sessions),
		server.WithDisableStreaming(true), server.WithDisableLocalhostProtection(true))
	return s, nil
}

// withDefaults fills the options left out: the Go APIs on Redis, the clock, the limits.
func (o Options) withDefaults() Options {
	o.BaseURL = strings.TrimRight(o.BaseURL, "/")
	o.MCPURL = strings.TrimRight(o.MCPURL, "/")
	if o.MCPURL == "" {
		o.MCPURL = o.BaseURL
	}
	if o.RateLimit <= 0 {
		o.RateLimit = DefaultRateLimit
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Bots == nil {
		o.Bots = registry.New(o.Redis)
	}
	if o.Trading == nil {
		o.Trading = trading.New(o.Redis, nil, nil)
	}
	if o.Portfolio == nil {
		o.Portfolio = portfolio.New(portfolio.Options{Redis: o.Redis, Now: o.Now})
	}
	if o.Analytics == nil {
		o.Analytics = analytics.New(o.Redis)
	}
	if o.SessionIdle <= 0 {
		o.SessionIdle = DefaultSessionIdle
	}
	if o.Audit == nil {
		o.Audit = audit.New(o.Redis, audit.Options{Now: o.Now})
	}
	if o.ResultWait == 0 {
		o.ResultWait = DefaultResultWait
	}
	if o.PaperAccounts == nil {
		o.PaperAccounts = paper.NewAccounts(o.Redis)
	}
	if o.AppPolicies == nil {
		o.AppPolicies = apppolicy.NewPolicies(o.Redis, o.Now)
	}
	if o.Approvals == nil {
		o.Approvals = approval.New(o.Redis, o.AppPolicies, o.Now)
	}
	if o.Intake == nil {
		o.Intake = intake.New(o.Redis)
	}
	if o.Symbols == nil {
		paperSymbols := signal.NewSymbols(paper.Symbols())
		o.Symbols = func() *signal.Symbols { return paperSymbols }
	}
	if o.Version == "" {
		o.Version = "dev"
	}
	return o
}

// Handler serves the MCP endpoint and the metadata documents, HTTPS only.
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	r.Use(s.requireHTTPS)
	r.Get(MetadataPath, s.handleMetadata)
	r.Get(MetadataResourcePath, s.handleMetadata)
	r.Group(func(r chi.Router) {
		r.Use(s.authenticate, s.checkScope)
		r.Handle(Path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.metrics.requests.WithLabelValues("served").Inc()
			if r.Method == http.MethodDelete && s.endSession(w, r) {
				return
			}
			s.http.ServeHTTP(w, r)
		}))
	})
	return r
}

// Probes serves /healthz (the process runs) and /readyz (Redis answers) for the ops port.
func (s *Server) Probes() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" && s.o.Ready != nil {
			if err := s.o.Ready(r.Context()); err != nil {
				http.Error(w, "not ready: "+err.Error(), http.StatusServiceUnavailable)
				return
			}
		}
		_, _ = w.Write([]byte("ok"))
	})
}

// requireHTTPS serves a request only when it arrived over TLS or from a trusted proxy that
// says the client used HTTPS: bearer tokens never travel in clear.
func (s *Server) requireHTTPS(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.o.TrustedProxies.OverHTTPS(r) {
			next.ServeHTTP(w, r)
			return
		}
		httpapi.WriteJSON(w, http.StatusForbidden, httpapi.Failure{Error: "HTTPS is required; plain HTTP is not supported",
			Code: "HTTPS_REQUIRED", Timestamp: s.o.Now().UnixMilli()})
	})
}
