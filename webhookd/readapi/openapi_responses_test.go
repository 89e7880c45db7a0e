package readapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"
	"golang.org/x/oauth2"

	"github.com/sigops/sigops/authd"
	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/candles"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/egress"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/intake"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/notify"
	"github.com/sigops/sigops/runtime/notify/channels"
	"github.com/sigops/sigops/runtime/notify/manage"
	"github.com/sigops/sigops/runtime/notify/outbox"
	"github.com/sigops/sigops/runtime/notify/settings"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/webhookd"
	"github.com/sigops/sigops/webhookd/readapi"
)

// executorStandIn answers a waiting webhook request as the executor would, with the result
// next makes for its signal ID; nil leaves the request waiting (it then answers "queued").
// The queue, the intake and the HTTP path are real; only the execution is played.
type executorStandIn struct {
	mu   sync.Mutex
	next func(signalID string) *result.Result
}

func (e *executorStandIn) Register(id string) (<-chan result.Result, func()) {
	ch := make(chan result.Result, 1)
	e.mu.Lock()
	if e.next != nil {
		if r := e.next(id); r != nil {
			ch <- *r
		}
	}
	e.mu.Unlock()
	return ch, func() {}
}

func (e *executorStandIn) Channel() string { return "openapi-test-replies" }

func (e *executorStandIn) answer(fn func(signalID string) *result.Result) {
	e.mu.Lock()
	e.next = fn
	e.mu.Unlock()
}

// surface is the public REST surface on one Redis: webhookd with the webhook endpoint and
// the read API (the read API's fixture), and authd, each on its own loopback server behind
// the trusted-proxy rule, as the Ingress puts them behind one origin.
type surface struct {
	f        *fixture
	executor *executorStandIn
	authd    *authd.Server
	authURL  string
	// notify is authd's notification settings, on a database of the surface's own.
	notify *manage.Manager
	// down are webhookd and authd on a Redis that cannot be reached (that authd has no
	// PostgreSQL either: its notifications are off).
	downWeb, downAuth string
	// routers are the routers behind each server URL.
	routers map[string]chi.Routes
}

// Webhook IDs of the surface's bots.
const (
	hookActive = "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b"
	hookPaused = "7a2e3d4c-5b6f-4071-9b8c-0d1e2f3a4b5c"
	hookSlow   = "8b3f4e5d-6c70-4182-8c9d-1e2f3a4b5c6d"
)

func newSurface(t *testing.T) *surface {
	t.Helper()
	s := &surface{executor: &executorStandIn{}, routers: map[string]chi.Routes{}}
	s.f = newServedFixture(t, func(o *webhookd.Options, rdb redis.UniversalClient) {
		o.Intake, o.Waiter = intake.New(rdb), s.executor
		o.Symbols = registry.NewKnownSymbols([]string{"BTC/USDT", "ETH/USDT"}).Get
		o.Logger = slog.New(slog.DiscardHandler)
	}, func(o *readapi.Options) {
		// Each case speaks from its own address; the rate-limit case spends one.
		o.PerIP = readapi.RateLimit{Rate: 5, Period: time.Hour, Burst: 5}
		// Every optional endpoint is served, so that the routes walked are all there are.
		// No exchange has a public client here: the simulated market serves every series.
		sim := marketdata.NewSimulated(marketdata.SimulatedOptions{Now: o.Now})
		idx := signal.NewSymbols(sim.Symbols())
		o.Candles = candles.New(candles.Options{Redis: o.Redis, Now: o.Now, Logger: o.Logger, Fallback: sim,
			Symbols: func() *signal.Symbols { return idx }, Venues: map[string]candles.Venue{}})
	})
	for _, b := range []struct {
		id, hook string
		mutate   func(*registry.Bot)
	}{
		{"bot-active", hookActive, nil},
		{"bot-paused", hookPaused, func(b *registry.Bot) { b.Availability, b.PausedReason = "paused", "Manual" }},
		{"bot-slow", hookSlow, func(b *registry.Bot) { b.RateLimit = registry.Limit{PerMinute: 1, Burst: 1} }},
	} {
		bot := registry.Bot{ID: b.id, Namespace: "default", Name: b.id, Owner: "alice@example.com",
			Account: registry.Account{Kind: registry.AccountPaper, Name: "paper-a", ID: "acct-a"}, Market: "spot",
			PositionSize: "10%", Leverage: 1, Availability: "active", WebhookEnabled: true,
			RateLimit: registry.Limit{PerMinute: 600, Burst: 100}}
		if b.mutate != nil {
			b.mutate(&bot)
		}
		if err := s.f.reg.Project(t.Context(), bot, registry.HashWebhookID(b.hook)); err != nil {
			t.Fatal(err)
		}
	}

	keys, err := auth.NewKeyring(testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	authOpts := func(rdb redis.UniversalClient) authd.Options {
		return authd.Options{Redis: rdb, Keys: keys, BaseURL: testBase, MCPURL: "https://mcp.sigops.test", KDF: auth.TestKDF,
			TrustedProxies: loopback, Now: s.f.clk.Now, Logger: slog.New(slog.DiscardHandler),
			RegisterPerIP:   auth.Limit{Kind: "register-ip", Max: 2, Window: time.Hour},
			LoginPerAccount: auth.Limit{Kind: "login-account", Max: 2, Window: 15 * time.Minute}}
	}
	s.notify = &manage.Manager{Settings: &settings.Store{DB: dbtest.New(t)}, Egress: egress.New(egress.Options{LoopbackHTTP: true}),
		BotUsername: "sigops_bot"}
	served := authOpts(s.f.rdb)
	served.Notifications = s.notify
	if s.authd, err = authd.New(served); err != nil {
		t.Fatal(err)
	}
	s.authURL = s.serve(t, s.authd.Handler())

	// Nothing listens on port 1 of the loopback: every Redis call fails at once.
	down := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { _ = down.Close() })
	web, err := webhookd.New(webhookd.Options{Intake: intake.New(down), Waiter: s.executor, Symbols: registry.NewKnownSymbols([]string{"BTC/USDT"}).Get,
		TrustedProxies: loopback, Logger: slog.New(slog.DiscardHandler),
		Read: readapi.New(readapi.Options{Redis: down, Sessions: auth.NewSessions(down, nil), Users: auth.NewUsers(down, auth.UsersOptions{}),
			Proxies: loopback, Logger: slog.New(slog.DiscardHandler)})})
	if err != nil {
		t.Fatal(err)
	}
	s.downWeb = s.serve(t, web.Handler())
	downAuth, err := authd.New(authOpts(down))
	if err != nil {
		t.Fatal(err)
	}
	s.downAuth = s.serve(t, downAuth.Handler())
	return s
}

// serve starts h on a loopback server and remembers its router.
func (s *surface) serve(t *testing.T, h http.Handler) string {
	t.Helper()
	ts := httptest.NewServer(h)
	t.Cleanup(ts.Close)
	routes, ok := h.(chi.Routes)
	if !ok {
		t.Fatalf("the handler is a %T, not a chi router", h)
	}
	s.routers[ts.URL] = routes
	return ts.URL
}

// call is one request of a case and what it must get.
type call struct {
	name   string
	base   string // server URL
	method string
	path   string // with the query
	header map[string]string
	cred   cred // a caller's credentials, when the call has one
	body   string
	status int
	// validRequest: the request itself must validate too (a well-formed call).
	validRequest bool
	// check looks further at the answer.
	check func(t *testing.T, resp *http.Response, body []byte)
}

// docChecker validates calls against the document and records which operations and
// statuses were seen.
type docChecker struct {
	v       validator.Validator
	routers map[string]chi.Routes // server URL → its router
	seen    map[string]map[int]bool
	addr    int
}

func newDocChecker(t *testing.T, routers map[string]chi.Routes) *docChecker {
	t.Helper()
	doc, err := libopenapi.NewDocument(servedDocument(t))
	if err != nil {
		t.Fatal(err)
	}
	model, err := doc.BuildV3Model()
	if err != nil {
		t.Fatal(err)
	}
	return &docChecker{v: validator.NewValidatorFromV3Model(&model.Model), routers: routers, seen: map[string]map[int]bool{}}
}

func (c *docChecker) run(t *testing.T, x call) {
	t.Helper()
	c.addr++
	var body *strings.Reader
	if x.body != "" {
		body = strings.NewReader(x.body)
	} else {
		body = strings.NewReader("")
	}
	req, err := http.NewRequestWithContext(t.Context(), x.method, x.base+x.path, body)
	if err != nil {
		t.Fatal(err)
	}
	// Behind the trusted proxy over HTTPS, from an address of its own (the read API's
	// per-address limit is small).
	req.Header.Set("X-Forwarded-Proto", "https")
	req.Header.Set("X-Forwarded-For", fmt.Sprintf("198.51.%d.%d", c.addr/250, c.addr%250+1))
	if x.cred != nil {
		x.cred(req)
	}
	for k, v := range x.header {
		if v == "" {
			req.Header.Del(k)
		} else {
			req.Header.Set(k, v)
		}
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, resp)
	if resp.StatusCode != x.status {
		t.Fatalf("%s %s: status %d, want %d: %s", x.method, x.path, resp.StatusCode, x.status, got)
	}
	// The validator sees the request as sent, body included.
	vreq := validatedRequest(t, x.method, x.base+x.path, []byte(x.body))
	vreq.Header = req.Header.Clone()
	if x.validRequest {
		if ok, verrs := c.v.ValidateHttpRequestSync(vreq); !ok {
			reportInvalid(t, "request "+x.method+" "+x.path, verrs)
		}
		vreq = validatedRequest(t, x.method, x.base+x.path, []byte(x.body))
		vreq.Header = req.Header.Clone()
	}
	c.check(t, vreq, resp)
	if x.check != nil {
		x.check(t, resp, got)
	}
}

// check validates resp, the answer to req, against the document and records the operation
// and status as seen.
func (c *docChecker) check(t *testing.T, req *http.Request, resp *http.Response) {
	t.Helper()
	got := readAll(t, resp)
	resp.Request = req
	if ok, verrs := c.v.ValidateHttpResponse(req, resp); !ok {
		reportInvalid(t, fmt.Sprintf("response %d of %s %s (body %.300s)", resp.StatusCode, req.Method, req.URL.Path, got), verrs)
	}
	base := req.URL.Scheme + "://" + req.URL.Host
	routes, ok := c.routers[base]
	if !ok {
		t.Fatalf("no router serves %s", base)
	}
	pattern := routes.Find(chi.NewRouteContext(), req.Method, req.URL.Path)
	if pattern == "" {
		t.Fatalf("%s %s matches no route of its server", req.Method, req.URL.Path)
	}
	key := req.Method + " " + pattern
	if c.seen[key] == nil {
		c.seen[key] = map[int]bool{}
	}
	c.seen[key][resp.StatusCode] = true
}

// hasHeader checks a response header is set and contains want.
func hasHeader(name, want string) func(*testing.T, *http.Response, []byte) {
	return func(t *testing.T, resp *http.Response, _ []byte) {
		t.Helper()
		if v := resp.Header.Get(name); v == "" || !strings.Contains(v, want) {
			t.Errorf("%s %q, want it to contain %q", name, v, want)
		}
	}
}

func TestOpenAPIResponsesAgree(t *testing.T) {
	s := newSurface(t)
	ctx := t.Context()
	s.routers[s.f.url] = s.f.handler.(chi.Routes)
	c := newDocChecker(t, s.routers)
	web, au := s.f.url, s.authURL

	alice := s.f.user(t, "alice@example.com")
	bearer := func(tok string) map[string]string { return map[string]string{"Authorization": "Bearer " + tok} }
	aliceAPI, err := s.f.issuer.IssueAPIToken(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	aliceSession, _, err := s.f.sessions.Create(ctx, alice)
	if err != nil {
		t.Fatal(err)
	}
	cookie := map[string]string{"Cookie": auth.SessionCookie + "=" + aliceSession}
	hook := func(id string) string { return "/api/webhooks/trade/" + id }
	signal := `{"action":"long","symbol":"BINANCE:BTCUSDT","size":"10%","stopLoss":"2%","takeProfit":4,"leverage":"3","comment":"from TradingView","dca":"false","dcaLevel":1}`
	filled := func(id string) *result.Result {
		d := decimal.RequireFromString
		return &result.Result{SignalID: id, BotID: "bot-active", Success: true, Message: "Order filled", Timestamp: 1_800_000_000_000,
			Order: &result.Order{Success: true, OrderID: "o-1", Status: "filled", Symbol: "BTC/USDT", Side: "buy", Type: "market",
				Amount: httpapi.Num(d("0.01538")), FilledAmount: httpapi.Num(d("0.01538")), AvgPrice: httpapi.Num(d("65000")), Fee: httpapi.Num(d("0.9997")), Timestamp: 1_800_000_000_000}}
	}
	failed := func(err *errs.Error) func(string) *result.Result {
		return func(id string) *result.Result {
			r := result.Failure(id, "bot-active", err, 1_800_000_000_000)
			return &r
		}
	}

	t.Run("webhook", func(t *testing.T) {
		s.executor.answer(filled)
		c.run(t, call{name: "executed", base: web, method: "POST", path: hook(hookActive), body: signal, status: 200, validRequest: true,
			header: map[string]string{"Content-Type": "application/json", "Idempotency-Key": "k-1"},
			check: func(t *testing.T, _ *http.Response, b []byte) {
				if !strings.Contains(string(b), `"avgPrice":65000`) {
					t.Errorf("the order's price is not a JSON number: %s", b)
				}
			}})
		s.executor.answer(nil)
		c.run(t, call{base: web, method: "POST", path: hook(hookActive) + "?wait=false", body: `{"action":"close"}`, status: 200, validRequest: true,
			header: map[string]string{"Content-Type": "application/json"}})
		s.executor.answer(failed(errs.New(errs.InsufficientBalance, "insufficient balance").
			WithDetails(map[string]any{"required": 100, "available": 50})))
		c.run(t, call{base: web, method: "POST", path: hook(hookActive), body: `{"action":"buy","symbol":"ETHUSDT","size":"0.5"}`, status: 422})
		s.executor.answer(failed(errs.New(errs.ExchangeError, "the exchange refused the order")))
		c.run(t, call{base: web, method: "POST", path: hook(hookActive), body: `{"action":"sell","symbol":"BTC/USDT"}`, status: 502})
		s.executor.answer(failed(errs.New(errs.SignalExpired, "the signal waited too long")))
		c.run(t, call{base: web, method: "POST", path: hook(hookActive), body: `{"action":"sell","symbol":"BTC/USDT"}`, status: 422})
		s.executor.answer(nil)
		for _, x := range []struct {
			body string
			code string
		}{
			{`{"action":`, "INVALID_JSON"},
			{`{"symbol":"BTCUSDT"}`, "INVALID_JSON"},
			{`{"action":"hodl"}`, "INVALID_ACTION"},
			{`{"action":"buy"}`, "MISSING_SYMBOL"},
			{`{"action":"buy","symbol":"XRPUSDT"}`, "INVALID_SYMBOL"},
		} {
			c.run(t, call{base: web, method: "POST", path: hook(hookActive), body: x.body, status: 400,
				check: codeIs(x.code)})
		}
		c.run(t, call{base: web, method: "POST", path: hook("00000000-0000-4000-8000-000000000000"), body: signal, status: 401, check: codeIs("INVALID_WEBHOOK")})
		c.run(t, call{base: web, method: "POST", path: hook(hookPaused), body: signal, status: 403, check: codeIs("BOT_PAUSED")})
		c.run(t, call{base: web, method: "POST", path: hook(hookActive), body: signal, status: 403, check: codeIs("HTTPS_REQUIRED"),
			header: map[string]string{"X-Forwarded-Proto": ""}})
		c.run(t, call{base: web, method: "POST", path: hook("not-a-uuid"), body: signal, status: 404})
		c.run(t, call{base: web, method: "POST", path: hook(hookActive), body: `{"action":"buy","comment":"` + strings.Repeat("x", 70<<10) + `"}`, status: 413})
		c.run(t, call{base: web, method: "POST", path: hook(hookSlow) + "?wait=false", body: signal, status: 200})
		c.run(t, call{base: web, method: "POST", path: hook(hookSlow) + "?wait=false", body: signal, status: 429,
			check: hasHeader("Retry-After", "")})
		c.run(t, call{base: s.downWeb, method: "POST", path: hook(hookActive), body: signal, status: 503})
	})

	t.Run("read API", func(t *testing.T) {
		c.run(t, call{base: web, method: "GET", path: readapi.OpenAPIPath, status: 200, validRequest: true})
		for range 5 {
			c.run(t, call{base: web, method: "GET", path: readapi.OpenAPIPath, status: 200,
				header: map[string]string{"X-Forwarded-For": "192.0.2.9"}})
		}
		c.run(t, call{base: web, method: "GET", path: readapi.OpenAPIPath, status: 429,
			header: map[string]string{"X-Forwarded-For": "192.0.2.9"}, check: hasHeader("Retry-After", "")})

		risk := "/api/botsvc/bots/bot-active/risk"
		c.run(t, call{base: web, method: "GET", path: risk, status: 200, header: bearer(aliceAPI.Token), validRequest: true})
		c.run(t, call{base: web, method: "GET", path: risk, status: 200, header: cookie, validRequest: true})
		c.run(t, call{base: web, method: "GET", path: risk, status: 401, check: hasHeader("WWW-Authenticate", "Bearer realm=")})
		c.run(t, call{base: web, method: "GET", path: risk, status: 401, header: bearer("abc.def.ghi"),
			check: hasHeader("WWW-Authenticate", `error="invalid_token"`)})
		// Every scope the authorization server grants includes mcp:read, so no token it
		// issues meets the read API's insufficient_scope answer; its writer's output is
		// checked against the document directly.
		rec := httptest.NewRecorder()
		auth.WriteInsufficientScope(rec, auth.ScopeRead, testBase+"/.well-known/oauth-protected-resource/api")
		c.check(t, httptest.NewRequest("GET", web+risk, nil), rec.Result())
		c.run(t, call{base: web, method: "GET", path: risk, status: 403, header: map[string]string{"X-Forwarded-Proto": ""}})
		c.run(t, call{base: web, method: "GET", path: "/api/botsvc/bots/no-such-bot/risk", status: 404, header: bearer(aliceAPI.Token),
			check: codeIs("NOT_FOUND")})
		c.run(t, call{base: s.downWeb, method: "GET", path: risk, status: 500, header: cookie, check: codeIs("INTERNAL_ERROR")})

		// bot-active: starting equity 1,000, a win of 100 on 20 November and a loss of 50 on
		// the 21st; bot-paused has no trades and no starting equity.
		bookTrades(t, s.f.rdb, "bot-active", "1000", trade("100", nov(20, 12)), trade("-50", nov(21, 8)))
		c.run(t, call{base: web, method: "GET", path: "/api/botsvc/bots/bot-active/analytics?period=7d&includeEquity=true",
			header: bearer(aliceAPI.Token), status: 200, validRequest: true, check: func(t *testing.T, _ *http.Response, b []byte) {
				if !strings.Contains(string(b), `"equityCurve":[`) || !strings.Contains(string(b), `"totalPnL":50`) {
					t.Errorf("want the curve and a total of 100 − 50 = 50: %s", b)
				}
			}})
		c.run(t, call{base: web, method: "GET", path: "/api/botsvc/bots/bot-paused/analytics?startDate=2026-11-01&endDate=2026-11-30",
			header: cookie, status: 200, validRequest: true, check: func(t *testing.T, _ *http.Response, b []byte) {
				if !strings.Contains(string(b), `"startingEquity":null`) {
					t.Errorf("want an unknown starting equity: %s", b)
				}
			}})
		c.run(t, call{base: web, method: "GET", path: "/api/botsvc/bots/bot-active/analytics?period=week&startDate=2026-11-01",
			header: bearer(aliceAPI.Token), status: 400, check: codeIs("INVALID_PARAMETER")})
		c.run(t, call{base: web, method: "GET", path: "/api/botsvc/bots/no-such-bot/analytics", header: bearer(aliceAPI.Token),
			status: 404, check: codeIs("NOT_FOUND")})
	})

	t.Run("candles", func(t *testing.T) {
		// The candles fixture: both exchanges are a fake venue, the fallback another market.
		cf := newCandlesFixture(t)
		c.routers[cf.url] = cf.handler.(chi.Routes)
		q := func(params ...string) string { return candlesPath(params...) }
		c.run(t, call{base: cf.url, method: "GET", path: q("symbol", "BINANCE:BTCUSDT", "exchangeId", "binance", "timeframe", "1h", "limit", "3"),
			status: 200, validRequest: true, check: func(t *testing.T, _ *http.Response, b []byte) {
				if !strings.Contains(string(b), `"usingFallback":false`) || strings.Count(string(b), `"timestamp"`) != 3 {
					t.Errorf("want three candles from the exchange: %s", b)
				}
			}})
		c.run(t, call{base: cf.url, method: "GET", path: q("symbol", "ETHUSDT", "exchangeId", "bybit", "timeframe", "15m", "market", "futures"),
			status: 200, validRequest: true})
		cf.fake.SetDown(true)
		c.run(t, call{base: cf.url, method: "GET", path: q("symbol", "BTCUSDT", "exchangeId", "binance", "timeframe", "4h", "limit", "2"),
			status: 200, check: func(t *testing.T, _ *http.Response, b []byte) {
				if !strings.Contains(string(b), `"usingFallback":true`) {
					t.Errorf("want the fallback's series: %s", b)
				}
			}})
		cf.fake.SetDown(false)
		c.run(t, call{base: cf.url, method: "GET", path: q("symbol", "BTCUSDT", "exchangeId", "paper", "timeframe", "1d", "limit", "2"),
			status: 200, validRequest: true})
		c.run(t, call{base: cf.url, method: "GET", path: q("symbol", "BTCUSDT", "exchangeId", "binance", "timeframe", "2h"),
			status: 400, check: codeIs("INVALID_PARAMETER")})
		c.run(t, call{base: cf.url, method: "GET", path: q("exchangeId", "binance", "timeframe", "1h"), status: 400, check: codeIs("MISSING_SYMBOL")})
		c.run(t, call{base: cf.url, method: "GET", path: q("symbol", "NOPEUSDT", "exchangeId", "binance", "timeframe", "1h"),
			status: 400, check: codeIs("INVALID_SYMBOL")})
		c.run(t, call{base: cf.url, method: "GET", path: q("symbol", "BTCUSDT", "exchangeId", "kraken", "timeframe", "1h"),
			status: 404, check: codeIs("NOT_FOUND")})
		c.run(t, call{base: cf.url, method: "GET", path: q("symbol", "BTCUSDT", "exchangeId", "6b0e1c2d-connection", "timeframe", "1h"),
			header: bearer("abc.def.ghi"), status: 401, check: hasHeader("WWW-Authenticate", `error="invalid_token"`)})
	})

	t.Run("portfolio", func(t *testing.T) {
		pf := newPortfolioFixture(t, true)
		c.routers[pf.url] = pf.handler.(chi.Routes)
		c.run(t, call{base: pf.url, method: "GET", path: readapi.PortfolioPath, cred: pf.alice, status: 200, validRequest: true,
			check: func(t *testing.T, _ *http.Response, b []byte) {
				for _, want := range []string{`"kind":"paper"`, `"kind":"exchange"`, `"liquidationPrice":`, `"stopLoss":`} {
					if !strings.Contains(string(b), want) {
						t.Errorf("the portfolio lacks %s, so its schema is not exercised: %s", want, b)
					}
				}
			}})
		// Without the connection's keys the exchange account carries its error.
		nokeys := newPortfolioFixture(t, false)
		c.routers[nokeys.url] = nokeys.handler.(chi.Routes)
		c.run(t, call{base: nokeys.url, method: "GET", path: readapi.PortfolioPath, cred: nokeys.alice, status: 200,
			check: func(t *testing.T, _ *http.Response, b []byte) {
				if !strings.Contains(string(b), `"error":{"code"`) || !strings.Contains(string(b), `"equity":null`) {
					t.Errorf("want an account with an error and null figures: %s", b)
				}
			}})
		c.run(t, call{base: pf.url, method: "GET", path: readapi.PortfolioPath, status: 401})
		c.run(t, call{base: s.downWeb, method: "GET", path: readapi.PortfolioPath, header: cookie, status: 500, check: codeIs("INTERNAL_ERROR")})
	})

	t.Run("discovery", func(t *testing.T) {
		for _, p := range []string{"/.well-known/oauth-authorization-server", "/.well-known/oauth-protected-resource",
			"/.well-known/oauth-protected-resource/api", "/.well-known/oauth-protected-resource/mcp", "/.well-known/mcp/server-card.json"} {
			c.run(t, call{base: au, method: "GET", path: p, status: 200, validRequest: true})
		}
		c.run(t, call{base: au, method: "GET", path: "/.well-known/oauth-authorization-server", status: 403,
			header: map[string]string{"X-Forwarded-Proto": ""}, check: codeIs("HTTPS_REQUIRED")})
	})

	json := map[string]string{"Content-Type": "application/json"}
	formHeader := map[string]string{"Content-Type": "application/x-www-form-urlencoded"}
	var publicClient string
	t.Run("OAuth", func(t *testing.T) {
		c.run(t, call{base: au, method: "POST", path: "/api/oauth/register", header: json, status: 201, validRequest: true,
			body:  `{"client_name":"Agent","redirect_uris":["http://127.0.0.1/callback"],"token_endpoint_auth_method":"none","scope":"mcp:paper"}`,
			check: func(t *testing.T, _ *http.Response, b []byte) { publicClient = jsonField(t, b, "client_id") }})
		c.run(t, call{base: au, method: "POST", path: "/api/oauth/register", header: json, status: 201, validRequest: true,
			body: `{"client_name":"Server app","redirect_uris":["https://app.example/cb"]}`})
		c.run(t, call{base: au, method: "POST", path: "/api/oauth/register", header: json, status: 400,
			body: `{"redirect_uris":["http://app.example/cb"]}`, check: oauthErrorIs("invalid_redirect_uri")})
		c.run(t, call{base: au, method: "POST", path: "/api/oauth/register", header: formHeader, status: 400,
			body: `redirect_uris=x`, check: oauthErrorIs("invalid_client_metadata")})
		for i := range 3 { // the third from one address is over its limit of two
			status := 201
			if i == 2 {
				status = 429
			}
			c.run(t, call{base: au, method: "POST", path: "/api/oauth/register", status: status,
				header: map[string]string{"Content-Type": "application/json", "X-Forwarded-For": "192.0.2.44"},
				body:   `{"redirect_uris":["https://app.example/cb"],"token_endpoint_auth_method":"none"}`})
		}
		c.run(t, call{base: s.downAuth, method: "POST", path: "/api/oauth/register", header: json, status: 503,
			body: `{"redirect_uris":["https://app.example/cb"]}`})

		verifier := auth.RandomToken(32)
		code, err := s.f.oauth.CreateCode(ctx, auth.CodeGrant{ClientID: publicClient, UserID: alice.ID, Gen: alice.Generation,
			RedirectURI: "http://127.0.0.1/callback", Challenge: oauth2.S256ChallengeFromVerifier(verifier), Scope: auth.ScopePaper, Resource: testAPI})
		if err != nil {
			t.Fatal(err)
		}
		exchangeCode := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {"http://127.0.0.1/callback"},
			"client_id": {publicClient}, "code_verifier": {verifier}}.Encode()
		var refresh, access string
		c.run(t, call{base: au, method: "POST", path: "/api/oauth/token", header: formHeader, body: exchangeCode, status: 200, validRequest: true,
			check: func(t *testing.T, _ *http.Response, b []byte) {
				refresh, access = jsonField(t, b, "refresh_token"), jsonField(t, b, "access_token")
			}})
		c.run(t, call{base: au, method: "POST", path: "/api/oauth/token", header: formHeader, body: exchangeCode, status: 400,
			check: oauthErrorIs("invalid_grant")})
		// The replay above revoked what the code issued; a second code starts a live family.
		code, err = s.f.oauth.CreateCode(ctx, auth.CodeGrant{ClientID: publicClient, UserID: alice.ID, Gen: alice.Generation,
			RedirectURI: "http://127.0.0.1/callback", Challenge: oauth2.S256ChallengeFromVerifier(verifier), Scope: auth.ScopePaper, Resource: testAPI})
		if err != nil {
			t.Fatal(err)
		}
		exchangeCode = url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {"http://127.0.0.1/callback"},
			"client_id": {publicClient}, "code_verifier": {verifier}}.Encode()
		c.run(t, call{base: au, method: "POST", path: "/api/oauth/token", header: formHeader, body: exchangeCode, status: 200,
			check: func(t *testing.T, _ *http.Response, b []byte) {
				refresh, access = jsonField(t, b, "refresh_token"), jsonField(t, b, "access_token")
			}})
		c.run(t, call{base: au, method: "POST", path: "/api/oauth/token", header: formHeader, status: 200, validRequest: true,
			body:  url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {publicClient}, "scope": {"mcp:read"}}.Encode(),
			check: func(t *testing.T, _ *http.Response, b []byte) { refresh = jsonField(t, b, "refresh_token") }})
		c.run(t, call{base: au, method: "POST", path: "/api/oauth/token", header: formHeader, status: 400,
			body: url.Values{"grant_type": {"password"}, "client_id": {publicClient}}.Encode(), check: oauthErrorIs("unsupported_grant_type")})
		c.run(t, call{base: au, method: "POST", path: "/api/oauth/token", header: json, status: 400, body: `{}`,
			check: oauthErrorIs("invalid_request")})
		c.run(t, call{base: au, method: "POST", path: "/api/oauth/token", header: formHeader, status: 401,
			body:  url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}, "client_id": {"nobody"}}.Encode(),
			check: oauthErrorIs("invalid_client")})
		c.run(t, call{base: au, method: "POST", path: "/api/oauth/token", status: 401,
			header: map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Authorization": "Basic bm9ib2R5Onh5eg=="},
			body:   url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}.Encode(),
			check:  hasHeader("WWW-Authenticate", "Basic")})

		t.Run("me with the OAuth token", func(t *testing.T) {
			c.run(t, call{base: au, method: "GET", path: "/api/user/me", header: bearer(access), status: 200, validRequest: true,
				check: func(t *testing.T, _ *http.Response, b []byte) {
					if !strings.Contains(string(b), `"token":{"clientId"`) {
						t.Errorf("an OAuth caller's status has no token block: %s", b)
					}
				}})
			c.run(t, call{base: au, method: "POST", path: "/api/auth/logout", header: bearer(access), status: 400})
		})

		c.run(t, call{base: au, method: "POST", path: "/api/oauth/revoke", header: formHeader, status: 200, validRequest: true,
			body: url.Values{"token": {refresh}, "client_id": {publicClient}}.Encode()})
		c.run(t, call{base: au, method: "POST", path: "/api/oauth/revoke", header: formHeader, status: 400,
			body: url.Values{"client_id": {publicClient}}.Encode(), check: oauthErrorIs("invalid_request")})
		c.run(t, call{base: au, method: "POST", path: "/api/oauth/revoke", header: formHeader, status: 401,
			body: url.Values{"token": {"x"}, "client_id": {"nobody"}}.Encode(), check: oauthErrorIs("invalid_client")})
		c.run(t, call{base: au, method: "POST", path: "/api/oauth/mcp/token", header: formHeader, status: 400,
			body: "grant_type=client_credentials", check: oauthErrorIs("invalid_request")})

		authorize := func(q url.Values) string { return "/api/oauth/authorize?" + q.Encode() }
		good := url.Values{"response_type": {"code"}, "client_id": {publicClient}, "redirect_uri": {"http://127.0.0.1/callback"},
			"code_challenge": {oauth2.S256ChallengeFromVerifier(verifier)}, "code_challenge_method": {"S256"}, "scope": {"mcp:read"}, "state": {"s1"}}
		c.run(t, call{base: au, method: "GET", path: authorize(good), status: 303, validRequest: true, check: hasHeader("Location", "/login?next=")})
		c.run(t, call{base: au, method: "GET", path: authorize(good), status: 303, validRequest: true, header: cookie,
			check: hasHeader("Location", "/oauth/consent?request=")})
		bad := url.Values{"response_type": {"token"}, "client_id": {publicClient}, "redirect_uri": {"http://127.0.0.1/callback"}}
		c.run(t, call{base: au, method: "GET", path: authorize(bad), status: 303, check: hasHeader("Location", "error=unsupported_response_type")})
		c.run(t, call{base: au, method: "GET", path: authorize(url.Values{"client_id": {"nobody"}}), status: 400})
		c.run(t, call{base: s.downAuth, method: "GET", path: authorize(good), status: 503})
	})

	t.Run("accounts", func(t *testing.T) {
		login := `{"email":"alice@example.com","password":"correct horse battery"}`
		var tok string
		c.run(t, call{base: au, method: "POST", path: "/api/auth/login", header: json, body: login, status: 200, validRequest: true,
			check: func(t *testing.T, _ *http.Response, b []byte) { tok = jsonField(t, b, "token") }})
		c.run(t, call{base: au, method: "POST", path: "/api/auth/login", header: json, body: `{"email":"alice@example.com"}`, status: 400,
			check: codeIs("INVALID_JSON")})
		for i := range 3 { // two failures use up the account's attempts
			status, code := 401, "UNAUTHORIZED"
			if i == 2 {
				status, code = 429, "RATE_LIMITED"
			}
			c.run(t, call{base: au, method: "POST", path: "/api/auth/login", header: json, status: status, check: codeIs(code),
				body: `{"email":"mallory@example.com","password":"guess"}`})
		}
		c.run(t, call{base: s.downAuth, method: "POST", path: "/api/auth/login", header: json, body: login, status: 503,
			check: codeIs("INTERNAL_ERROR")})

		c.run(t, call{base: au, method: "GET", path: "/api/user/me", header: bearer(tok), status: 200, validRequest: true})
		c.run(t, call{base: au, method: "GET", path: "/api/user/me", header: cookie, status: 200, validRequest: true})
		c.run(t, call{base: au, method: "GET", path: "/api/user/me", status: 401, check: hasHeader("WWW-Authenticate", "Bearer")})
		c.run(t, call{base: s.downAuth, method: "GET", path: "/api/user/me", header: cookie, status: 503})

		// The audit journal: one entry of alice's, read with her token and her cookie.
		if err := audit.New(s.f.rdb, audit.Options{}).Record(ctx, audit.Entry{UserID: alice.ID, ClientID: "c-1", ClientName: "Desk agent",
			Channel: audit.ChannelMCP, Tool: "pause_bot", Arguments: []byte(`{"botId":"bot-active"}`), Outcome: audit.Outcome{OK: true}}); err != nil {
			t.Fatal(err)
		}
		c.run(t, call{base: au, method: "GET", path: "/api/user/audit?limit=10", header: bearer(tok), status: 200, validRequest: true,
			check: func(t *testing.T, _ *http.Response, b []byte) {
				if !strings.Contains(string(b), `"tool":"pause_bot"`) {
					t.Errorf("the entry is missing: %s", b)
				}
			}})
		c.run(t, call{base: au, method: "GET", path: "/api/user/audit", header: cookie, status: 200, validRequest: true})
		c.run(t, call{base: au, method: "GET", path: "/api/user/audit?limit=0", header: bearer(tok), status: 400, check: codeIs("INVALID_PARAMETER")})
		c.run(t, call{base: au, method: "GET", path: "/api/user/audit", status: 401, check: hasHeader("WWW-Authenticate", "Bearer")})
		c.run(t, call{base: s.downAuth, method: "GET", path: "/api/user/audit", header: cookie, status: 503})
		c.run(t, call{base: au, method: "POST", path: "/api/auth/logout", header: bearer(tok), status: 204, validRequest: true})
		c.run(t, call{base: au, method: "POST", path: "/api/auth/logout", header: bearer(tok), status: 401,
			check: hasHeader("WWW-Authenticate", `error="invalid_token"`)})
	})

	t.Run("notifications", func(t *testing.T) {
		notificationSettingsCalls(t, c, s, alice)
		notificationWebhookCalls(t, c, s, alice)
	})

	// Every documented operation was answered at least once and validated.
	var unseen []string
	for r := range loadDocJSON(t).documentedRoutes() {
		if len(c.seen[r]) == 0 {
			unseen = append(unseen, r)
		}
	}
	sort.Strings(unseen)
	for _, r := range unseen {
		t.Errorf("no response of %s was validated: add a call for it", r)
	}
}

// notificationSettingsCalls exercises authd's notification settings as alice: the whole
// settings, the Telegram link, the preferences, and who may not call them.
func notificationSettingsCalls(t *testing.T, c *docChecker, s *surface, alice auth.User) {
	au, n := s.authURL, "/api/user/notifications"
	api, apiJSON := notifyHeaders(t, s, alice)
	c.run(t, call{base: au, method: "GET", path: n + "/", header: api, status: 200, validRequest: true,
		check: bodyHas(`"telegramLinked":false`, `"webhooks":[]`, `"events":["fill","order_refused",`)})
	c.run(t, call{base: au, method: "GET", path: n + "/", cred: s.f.session(t, alice), status: 200, validRequest: true})
	c.run(t, call{base: au, method: "GET", path: n + "/", status: 401, check: hasHeader("WWW-Authenticate", "Bearer")})
	app, _ := s.f.oauthToken(t, alice, auth.ScopeLive, testAPI)
	c.run(t, call{base: au, method: "GET", path: n + "/", cred: app, status: 403, check: codeIs("INSUFFICIENT_SCOPE")})
	c.run(t, call{base: au, method: "PUT", path: n + "/preferences", cred: app, header: map[string]string{"Content-Type": "application/json"},
		body: `{}`, status: 403, check: codeIs("INSUFFICIENT_SCOPE")})
	c.run(t, call{base: au, method: "GET", path: n + "/", header: map[string]string{"X-Forwarded-Proto": ""}, status: 403,
		check: codeIs("HTTPS_REQUIRED")})
	c.run(t, call{base: s.downAuth, method: "GET", path: n + "/webhooks", header: api, status: 503, check: codeIs("SERVICE_UNAVAILABLE")})

	c.run(t, call{base: au, method: "POST", path: n + "/telegram/link", header: api, status: 201, validRequest: true,
		check: bodyHas(`"deepLink":"https://t.me/sigops_bot?start=`, `"command":"/start `)})
	c.run(t, call{base: au, method: "DELETE", path: n + "/telegram", header: api, status: 200, validRequest: true,
		check: bodyHas(`{"telegramLinked":false}`)})

	c.run(t, call{base: au, method: "GET", path: n + "/preferences", header: api, status: 200, validRequest: true, check: bodyHas(`{}`)})
	prefs := `{"events":{"fill":true,"daily_summary":true},"bots":{"bot-active":{"fill":false}},"quiet":{"from":1320,"to":420},` +
		`"summaryHour":8,"zone":"Europe/Berlin"}`
	c.run(t, call{base: au, method: "PUT", path: n + "/preferences", header: apiJSON, body: prefs, status: 200, validRequest: true,
		check: bodyHas(`"quiet":{"from":1320,"to":420}`, `"summaryHour":8`)})
	c.run(t, call{base: au, method: "GET", path: n + "/preferences", header: api, status: 200, check: bodyHas(`"zone":"Europe/Berlin"`)})
	c.run(t, call{base: au, method: "GET", path: n + "/", header: api, status: 200, check: bodyHas(`"preferences":{"events":{`)})
	for _, bad := range []string{`{"events":{"teleport":true}}`, `{"quiet":{"from":0,"to":1440}}`, `{"summaryHour":24}`,
		`{"zone":"Mars/Olympus"}`} {
		c.run(t, call{base: au, method: "PUT", path: n + "/preferences", header: apiJSON, body: bad, status: 400,
			check: codeIs("INVALID_PARAMETER")})
	}
	c.run(t, call{base: au, method: "PUT", path: n + "/preferences", header: apiJSON, body: `{"sound":true}`, status: 400,
		check: codeIs("INVALID_JSON")})
	c.run(t, call{base: au, method: "PUT", path: n + "/preferences", header: api, body: prefs, status: 400, check: codeIs("INVALID_JSON")})
}

// notificationWebhookCalls exercises alice's webhook destinations: creation up to the
// limit, a test delivery to a loopback receiver, one that cannot be reached, the delivery
// log the real deliverer writes, a destination disabled and enabled again, and removal.
func notificationWebhookCalls(t *testing.T, c *docChecker, s *surface, alice auth.User) {
	au, n := s.authURL, "/api/user/notifications/webhooks"
	unknown := n + "/wh_0000000000000000"
	api, apiJSON := notifyHeaders(t, s, alice)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(recv.Close)
	create := func(dest, format string, status int, check func(*testing.T, *http.Response, []byte)) {
		c.run(t, call{base: au, method: "POST", path: n, header: apiJSON, status: status, validRequest: status == 201, check: check,
			body: `{"url":"` + dest + `","format":"` + format + `","events":["fill","order_refused"]}`})
	}
	var live, public string
	create(recv.URL+"/in", "json", 201, func(t *testing.T, _ *http.Response, b []byte) { live = webhookID(t, b) })
	for i := range 4 { // a public address literal passes the egress rules without a lookup
		create(fmt.Sprintf("https://93.184.216.34/secret-%d", i), "slack", 201,
			func(t *testing.T, _ *http.Response, b []byte) { public = webhookID(t, b) })
	}
	create("https://93.184.216.34/sixth", "discord", 403, codeIs("POLICY_LIMIT"))
	create("https://10.0.0.1/private", "json", 400, codeIs("INVALID_PARAMETER"))
	create("https://93.184.216.34/x", "xml", 400, codeIs("INVALID_PARAMETER"))
	c.run(t, call{base: au, method: "DELETE", path: n + "/" + public, header: api, status: 204, validRequest: true})
	c.run(t, call{base: au, method: "DELETE", path: n + "/" + public, header: api, status: 404, check: codeIs("NOT_FOUND")})
	var dead string // nothing listens on port 1 of the loopback
	create("http://127.0.0.1:1/gone", "discord", 201, func(t *testing.T, _ *http.Response, b []byte) { dead = webhookID(t, b) })

	c.run(t, call{base: au, method: "POST", path: n + "/" + live + "/test", header: api, status: 200, validRequest: true,
		check: bodyHas(`{"delivered":true,"status":204}`)})
	c.run(t, call{base: au, method: "POST", path: n + "/" + dead + "/test", header: api, status: 400, check: codeIs("INVALID_PARAMETER")})
	c.run(t, call{base: au, method: "POST", path: unknown + "/test", header: api, status: 404, check: codeIs("NOT_FOUND")})

	deliverNotifications(t, s, alice, live, dead)
	c.run(t, call{base: au, method: "GET", path: n + "/" + live + "/deliveries", header: api, status: 200, validRequest: true,
		check: bodyHas(`"state":"pending"`, `"state":"sent"`, `"status":"HTTP 204"`, `"sentAt":`)})
	c.run(t, call{base: au, method: "GET", path: unknown + "/deliveries", header: api, status: 404, check: codeIs("NOT_FOUND")})
	c.run(t, call{base: au, method: "GET", path: n, header: api, status: 200, validRequest: true,
		check: bodyHas(`"host":"93.184.216.34"`, `"failingSince":`, `"disabledAt":`)})
	c.run(t, call{base: au, method: "POST", path: n + "/" + dead + "/enable", header: api, status: 200, validRequest: true,
		check: bodyHas(`{"enabled":true}`)})
	c.run(t, call{base: au, method: "POST", path: unknown + "/enable", header: api, status: 404, check: codeIs("NOT_FOUND")})
	c.run(t, call{base: au, method: "GET", path: "/api/user/notifications/", header: api, status: 200,
		check: func(t *testing.T, _ *http.Response, b []byte) {
			for _, shown := range []string{"secret-", "whsec_", `"disabledAt"`} {
				if strings.Contains(string(b), shown) {
					t.Errorf("%s is shown (a URL's path, a secret, or the destination still disabled): %s", shown, b)
				}
			}
		}})
}

// deliverNotifications has the deliverer send alice's destinations live and dead an event of
// each kind they take, leaves one more pending for live, and disables dead, which failed.
func deliverNotifications(t *testing.T, s *surface, alice auth.User, live, dead string) {
	t.Helper()
	ctx, db := t.Context(), s.notify.Settings.DB
	queue := func(id string, kinds ...notify.Kind) {
		var rows []outbox.Row
		for _, k := range kinds {
			for _, hook := range []string{live, dead} {
				rows = append(rows, outbox.Row{Channel: outbox.WebhookChannel(hook), User: alice.ID,
					Event: notify.Event{ID: id + string(k), Kind: k, At: time.Now(), BotID: "bot-active", Bot: "bot-active"}})
			}
		}
		if err := outbox.Queue(ctx, db, rows, nil, time.Now()); err != nil {
			t.Fatal(err)
		}
	}
	queue("e1-", notify.Fill, notify.OrderRefused)
	d := &outbox.Deliverer{DB: db, Sender: &channels.Channels{Settings: s.notify.Settings, Egress: s.notify.Egress}}
	if out, err := d.Step(ctx, time.Now()); err != nil || out.Sent != 2 || out.Failed != 2 {
		t.Fatalf("delivery step: %+v %v", out, err)
	}
	queue("e2-", notify.Fill)
	if _, err := s.notify.Settings.DeliveryFailed(ctx, dead, time.Now(), 0); err != nil {
		t.Fatal(err)
	}
}

// notifyHeaders are a bearer JWT of u, without and with a JSON body's Content-Type.
func notifyHeaders(t *testing.T, s *surface, u auth.User) (api, apiJSON map[string]string) {
	t.Helper()
	tok, err := s.f.issuer.IssueAPIToken(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	api = map[string]string{"Authorization": "Bearer " + tok.Token}
	return api, map[string]string{"Authorization": api["Authorization"], "Content-Type": "application/json"}
}

// webhookID is the id of a created destination.
func webhookID(t *testing.T, b []byte) string {
	t.Helper()
	var created struct {
		Webhook struct {
			ID string `json:"id"`
		} `json:"webhook"`
	}
	if err := json.Unmarshal(b, &created); err != nil || created.Webhook.ID == "" {
		t.Fatalf("no destination id in %s (%v)", b, err)
	}
	return created.Webhook.ID
}

// bodyHas checks the body contains each of want.
func bodyHas(want ...string) func(*testing.T, *http.Response, []byte) {
	return func(t *testing.T, _ *http.Response, b []byte) {
		t.Helper()
		for _, w := range want {
			if !strings.Contains(string(b), w) {
				t.Errorf("the body lacks %s: %s", w, b)
			}
		}
	}
}

// codeIs checks the failure body's code.
func codeIs(code string) func(*testing.T, *http.Response, []byte) {
	return func(t *testing.T, _ *http.Response, b []byte) {
		t.Helper()
		if got := jsonField(t, b, "code"); got != code {
			t.Errorf("code %q, want %s: %s", got, code, b)
		}
	}
}

// oauthErrorIs checks an RFC 6749 error body.
func oauthErrorIs(code string) func(*testing.T, *http.Response, []byte) {
	return func(t *testing.T, _ *http.Response, b []byte) {
		t.Helper()
		if got := jsonField(t, b, "error"); got != code {
			t.Errorf("error %q, want %s: %s", got, code, b)
		}
	}
}
