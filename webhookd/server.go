// Package webhookd is the HTTP front door for signals, POST /api/webhooks/trade/{webhookId},
// and for the read API beside it (webhookd/readapi).
// For a signal it parses and validates the body, admits it through runtime/intake (one Redis round trip:
// route, gates, duplicates, rate limit, enqueue), and waits a bounded time for the
// executor's result. It never calls the Kubernetes API.
package webhookd

import (
	"context"
	"log/slog"
	"net/http"
	"net/netip"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/sigops/sigops/runtime/intake"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/webhookd/readapi"
)

// Defaults of Options.
const (
	// DefaultWaitBound is decision 2 in docs/decisions.md: below TradingView's 3 s timeout.
	DefaultWaitBound = 2 * time.Second
	// MaxBodyBytes is the largest body accepted.
	MaxBodyBytes = 64 << 10
)

// Waiter delivers results to the request that waits for them (runtime/queue.Waiter).
type Waiter interface {
	// Register must be called before the signal is queued, so no wake-up is lost.
	Register(signalID string) (<-chan result.Result, func())
	// Channel is the reply address written into the envelope.
	Channel() string
}

// ResultStore reads a stored result (for duplicates of a finished signal).
type ResultStore interface {
	GetResult(ctx context.Context, signalID string) (result.Stored, error)
}

// Options configure the server.
type Options struct {
	Intake  *intake.Intake
	Waiter  Waiter
	Results ResultStore
	// Symbols returns the index that resolves symbol forms against every market the service
	// trades (it changes as exchange connections are validated); the executor checks the
	// bot's own exchange again.
	Symbols func() *signal.Symbols
	// WaitBound is how long a request waits for the result (0: DefaultWaitBound).
	WaitBound time.Duration
	// TrustedProxies may mark a plain-HTTP request as HTTPS with X-Forwarded-Proto.
	TrustedProxies []netip.Prefix
	// Ready reports whether the server can take traffic (Redis reachable).
	Ready  func(context.Context) error
	Logger *slog.Logger
	// Registerer receives the metrics (nil: not registered).
	Registerer prometheus.Registerer
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Read is the read API served beside the webhook endpoint (nil: none).
	Read *readapi.API
}

// Server serves the webhook endpoint.
type Server struct {
	opts    Options
	metrics *metrics
}

// New returns a server; it registers its metrics with opts.Registerer.
func New(opts Options) (*Server, error) {
	if opts.WaitBound <= 0 {
		opts.WaitBound = DefaultWaitBound
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := newMetrics()
	if opts.Registerer != nil {
		if err := m.register(opts.Registerer); err != nil {
			return nil, err
		}
	}
	return &Server{opts: opts, metrics: m}, nil
}

// Handler is the HTTP handler: the webhook route behind the HTTPS rule, plus probes.
func (s *Server) Handler() http.Handler {
	r := chi.NewRouter()
	r.Get("/healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	r.Get("/readyz", func(w http.ResponseWriter, req *http.Request) {
		if s.opts.Ready != nil {
			if err := s.opts.Ready(req.Context()); err != nil {
				http.Error(w, "not ready", http.StatusServiceUnavailable)
				return
			}
		}
		w.WriteHeader(http.StatusOK)
	})
	r.With(s.requireHTTPS).Post(webhookRoute, s.handleWebhook)
	if s.opts.Read != nil {
		// The read API is HTTPS only too: it carries bearer tokens and session cookies.
		r.Group(func(r chi.Router) {
			r.Use(s.requireHTTPS)
			s.opts.Read.Routes(r)
		})
	}
	r.NotFound(func(w http.ResponseWriter, req *http.Request) { writeNotFound(w) })
	return r
}

const webhookRoute = "/api/webhooks/trade/{webhookId}"
