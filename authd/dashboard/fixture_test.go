package dashboard_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/sigops/sigops/authd"
	"github.com/sigops/sigops/controllers"
	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/internal/userapi"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/test/testenv"
)

// The suite runs authd (with the dashboard) on the real control plane, controllers and
// Redis of test/testenv: a bot made through the dashboard is reconciled and projected as in
// production, and every request goes through a real login session.
var (
	env    *testenv.Env
	k8s    client.Client
	serial atomic.Int64
)

func TestMain(m *testing.M) { os.Exit(runSuite(m)) }

func runSuite(m *testing.M) int {
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	done, err := env.StartControllers(ctx, controllers.Options{
		Redis: env.RDB, BaseURL: "https://sigops.test", TombstoneTTL: time.Hour, MaxConcurrentReconciles: 2,
		PaperSyncPeriod: time.Second, CredentialsRetryPeriod: time.Second,
		MasterKeys: stubMasterKeys, Connectors: stubExchanges, // connections_stub_test.go
	})
	if err != nil {
		cancel()
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { cancel(); <-done }()
	if k8s, err = env.Client(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return m.Run()
}

const testPassword = "correct horse battery staple"

// fixture is authd with the dashboard behind a TLS listener on loopback, its APIs on the
// suite's Redis with a fleet on the suite's API server, and its live-event hub running.
type fixture struct {
	t     *testing.T
	ts    *httptest.Server
	srv   *authd.Server
	apis  *userapi.APIs
	users *auth.Users
	base  string
	logs  *testkit.LogBuffer
}

type swap struct{ h http.Handler }

func (s *swap) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.h.ServeHTTP(w, r) }

func newFixture(t *testing.T, mod ...func(*authd.Options)) *fixture {
	t.Helper()
	sw := &swap{h: http.NotFoundHandler()}
	ts := httptest.NewUnstartedServer(sw)
	ts.StartTLS()
	t.Cleanup(ts.Close)
	keys, err := auth.NewKeyring([]byte("dashboard-test-signing-key-0123456789"), nil)
	if err != nil {
		t.Fatal(err)
	}
	apis := userapi.OnRedis(env.RDB)
	apis.Fleet = fleet.New(fleet.Options{Client: k8s, Redis: env.RDB})
	logs := &testkit.LogBuffer{}
	o := authd.Options{Redis: env.RDB, Keys: keys, BaseURL: ts.URL, KDF: auth.TestKDF, APIs: apis,
		// Every test user logs in from loopback.
		LoginPerIP: auth.Limit{Kind: "login-ip", Max: 100000, Window: time.Hour},
		Logger:     slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	for _, m := range mod {
		m(&o)
	}
	srv, err := authd.New(o)
	if err != nil {
		t.Fatal(err)
	}
	sw.h = srv.Handler()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go func() { _ = srv.Run(ctx) }()
	return &fixture{t: t, ts: ts, srv: srv, apis: apis, base: ts.URL, logs: logs,
		users: auth.NewUsers(env.RDB, auth.UsersOptions{KDF: auth.TestKDF})}
}

// withoutFleet is a newFixture option: a server without bot management (no Kubernetes
// access, --bot-actions=false).
func withoutFleet(o *authd.Options) {
	apis := *o.APIs
	apis.Fleet = nil
	o.APIs = &apis
}

// user creates an account of its own for one test (tier: free, pro, team, ...).
func (f *fixture) user(tier string) auth.User {
	f.t.Helper()
	n := serial.Add(1)
	email := fmt.Sprintf("trader%d-%d@example.io", time.Now().UnixNano()%1e9, n)
	u, err := f.users.Create(context.Background(), auth.NewUser{Email: email, Name: "Trader " + email, Password: testPassword, Tier: tier})
	if err != nil {
		f.t.Fatal(err)
	}
	return u
}

// browser is a user agent with a cookie jar that does not follow redirects, and the CSRF
// token of its session once logged in.
type browser struct {
	f    *fixture
	c    *http.Client
	csrf string
}

func (f *fixture) browser() *browser {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Transport: f.ts.Client().Transport, Jar: jar}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &browser{f: f, c: c}
}

// loggedIn is a browser logged in as u through the login form.
func (f *fixture) loggedIn(u auth.User) *browser {
	f.t.Helper()
	b := f.browser()
	_, page := b.get("/login")
	resp, _ := b.post("/login", url.Values{"csrf_token": {match(f.t, csrfRe, page)}, "email": {u.Email}, "password": {testPassword}})
	if resp.StatusCode != http.StatusSeeOther {
		f.t.Fatalf("login: status %d", resp.StatusCode)
	}
	_, page = b.get("/dashboard")
	b.csrf = match(f.t, metaCSRFRe, page)
	return b
}

var (
	csrfRe     = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
	metaCSRFRe = regexp.MustCompile(`<meta name="csrf-token" content="([^"]+)">`)
)

func match(t *testing.T, re *regexp.Regexp, body string) string {
	t.Helper()
	m := re.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no %s in page:\n%s", re, body)
	}
	return m[1]
}

func (b *browser) do(req *http.Request) (*http.Response, string) {
	b.f.t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		b.f.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

func (b *browser) url(path string) string {
	if strings.HasPrefix(path, "/") {
		return b.f.base + path
	}
	return path
}

// get fetches a page or internal API path (the API's CSRF header included once logged in).
func (b *browser) get(path string) (*http.Response, string) {
	req, _ := http.NewRequest(http.MethodGet, b.url(path), nil)
	if b.csrf != "" && strings.HasPrefix(path, "/api/dashboard") {
		req.Header.Set("X-CSRF-Token", b.csrf)
	}
	return b.do(req)
}

// post sends a form as is (add csrf_token yourself, or use submit).
func (b *browser) post(path string, form url.Values) (*http.Response, string) {
	req, _ := http.NewRequest(http.MethodPost, b.url(path), strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

// submit posts a form with the session's CSRF token, as the page's form would.
func (b *browser) submit(path string, form url.Values) (*http.Response, string) {
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf_token", b.csrf)
	return b.post(path, form)
}
