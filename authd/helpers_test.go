package authd

import (
	"bytes"
	"context"
	"encoding/json"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/oauth2"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/store/storetest"
)

var testKey = []byte("authd-test-signing-key-0123456789abcdef")

type swap struct{ h http.Handler }

func (s *swap) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.h.ServeHTTP(w, r) }

// harness is authd behind a real TLS listener on loopback, on its own redis-server.
type harness struct {
	t     *testing.T
	ts    *httptest.Server
	srv   *Server
	rdb   redis.UniversalClient
	clk   *testkit.Clock
	users *auth.Users
	base  string
	logs  *testkit.LogBuffer
}

func newHarness(t *testing.T, mod ...func(*Options)) *harness {
	t.Helper()
	_, rdb := storetest.New(t)
	sw := &swap{h: http.NotFoundHandler()}
	ts := httptest.NewUnstartedServer(sw)
	ts.StartTLS()
	t.Cleanup(ts.Close)
	keys, err := auth.NewKeyring(testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	clk := testkit.NewClock(time.Now().Truncate(time.Second))
	logs := &testkit.LogBuffer{}
	o := Options{Redis: rdb, Keys: keys, BaseURL: ts.URL, MCPURL: "https://mcp.sigops.test", KDF: auth.TestKDF, Now: clk.Now,
		RegisterPerIP: auth.Limit{Kind: "register-ip", Max: 10000, Window: time.Hour},
		Logger:        slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	for _, m := range mod {
		m(&o)
	}
	srv, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	sw.h = srv.Handler()
	return &harness{t: t, ts: ts, srv: srv, rdb: rdb, clk: clk, base: ts.URL, logs: logs,
		users: auth.NewUsers(rdb, auth.UsersOptions{KDF: auth.TestKDF, Now: clk.Now})}
}

const testPassword = "correct horse battery staple"

func (h *harness) user(email, tier string) auth.User {
	h.t.Helper()
	u, err := h.users.Create(context.Background(), auth.NewUser{Email: email, Name: "Test " + email, Password: testPassword, Tier: tier})
	if err != nil {
		h.t.Fatal(err)
	}
	return u
}

// browser is a user agent with a cookie jar that does not follow redirects by itself.
type browser struct {
	h *harness
	c *http.Client
}

func (h *harness) browser() *browser {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Transport: h.ts.Client().Transport, Jar: jar}
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	return &browser{h: h, c: c}
}

func (b *browser) do(req *http.Request) (*http.Response, string) {
	b.h.t.Helper()
	resp, err := b.c.Do(req)
	if err != nil {
		b.h.t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(body)
}

func (b *browser) get(u string) (*http.Response, string) {
	if strings.HasPrefix(u, "/") {
		u = b.h.base + u
	}
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	return b.do(req)
}

func (b *browser) post(path string, form url.Values) (*http.Response, string) {
	req, _ := http.NewRequest(http.MethodPost, b.h.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	return b.do(req)
}

var csrfRe = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
var requestRe = regexp.MustCompile(`name="request" value="([^"]+)"`)

func field(t *testing.T, re *regexp.Regexp, body string) string {
	t.Helper()
	m := re.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no %s in page:\n%s", re, body)
	}
	return m[1]
}

// login logs the browser in through the form.
func (b *browser) login(email, password string) *http.Response {
	b.h.t.Helper()
	_, page := b.get("/login")
	resp, _ := b.post("/login", url.Values{"csrf_token": {field(b.h.t, csrfRe, page)}, "email": {email}, "password": {password}})
	return resp
}

// authorize follows an authorization URL as a logged-in user and answers the consent with
// action; it returns the final redirect to the client.
func (b *browser) authorize(authURL, action string) *url.URL {
	t := b.h.t
	t.Helper()
	resp, body := b.get(authURL)
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/oauth/consent") {
		t.Fatalf("authorize: %d %s %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	_, page := b.get(resp.Header.Get("Location"))
	resp, _ = b.post("/oauth/consent", url.Values{"csrf_token": {field(t, csrfRe, page)},
		"request": {field(t, requestRe, page)}, "action": {action}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("consent answered %d", resp.StatusCode)
	}
	u, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		t.Fatal(err)
	}
	return u
}

type registered struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
	Error        string `json:"error"`
}

func (h *harness) register(meta map[string]any) (int, registered) {
	h.t.Helper()
	body, _ := json.Marshal(meta)
	resp, err := h.ts.Client().Post(h.base+"/api/oauth/register", "application/json", bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var r registered
	_ = json.NewDecoder(resp.Body).Decode(&r)
	return resp.StatusCode, r
}

const registeredRedirect = "http://127.0.0.1:3000/callback"

// publicClient registers a public client and returns its oauth2 config, redirecting to a
// loopback port other than the registered one (RFC 8252 §7.3).
func (h *harness) publicClient(scope string) *oauth2.Config {
	h.t.Helper()
	code, r := h.register(map[string]any{"client_name": "Test Agent", "redirect_uris": []string{registeredRedirect},
		"token_endpoint_auth_method": "none"})
	if code != http.StatusCreated {
		h.t.Fatalf("register: %d %+v", code, r)
	}
	return h.config(r.ClientID, "", oauth2.AuthStyleInParams, scope)
}

func (h *harness) config(id, secret string, style oauth2.AuthStyle, scope string) *oauth2.Config {
	return &oauth2.Config{ClientID: id, ClientSecret: secret, RedirectURL: "http://127.0.0.1:49152/callback",
		Scopes: strings.Fields(scope), Endpoint: oauth2.Endpoint{AuthURL: h.base + "/api/oauth/authorize",
			TokenURL: h.base + "/api/oauth/token", AuthStyle: style}}
}

func (h *harness) ctx() context.Context {
	return context.WithValue(context.Background(), oauth2.HTTPClient, h.ts.Client())
}

// grant runs authorize + consent for cfg as a logged-in browser and returns the code and verifier.
func (h *harness) grant(b *browser, cfg *oauth2.Config, opts ...oauth2.AuthCodeOption) (string, string) {
	h.t.Helper()
	v := oauth2.GenerateVerifier()
	u := b.authorize(cfg.AuthCodeURL("st-123", append([]oauth2.AuthCodeOption{oauth2.S256ChallengeOption(v)}, opts...)...), "approve")
	if u.Query().Get("state") != "st-123" || u.Query().Get("code") == "" {
		h.t.Fatalf("redirect %s", u)
	}
	return u.Query().Get("code"), v
}

// flow logs a new browser in as email and returns tokens for a fresh public client.
func (h *harness) flow(email, scope string) (*oauth2.Config, *oauth2.Token, *browser) {
	h.t.Helper()
	b := h.browser()
	b.login(email, testPassword)
	cfg := h.publicClient(scope)
	code, v := h.grant(b, cfg)
	tok, err := cfg.Exchange(h.ctx(), code, oauth2.VerifierOption(v))
	if err != nil {
		h.t.Fatal(err)
	}
	return cfg, tok, b
}

// me calls GET /api/user/me with a bearer token ("" for none).
func (h *harness) me(token string) (int, map[string]any) {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, h.base+"/api/user/me", nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := h.ts.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// tokenPost posts a raw form to the token endpoint.
func (h *harness) tokenPost(path string, form url.Values, basicID, basicSecret string) (int, map[string]any, http.Header) {
	h.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, h.base+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if basicID != "" {
		req.SetBasicAuth(url.QueryEscape(basicID), url.QueryEscape(basicSecret))
	}
	resp, err := h.ts.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m, resp.Header
}

// apiLogin calls POST /api/auth/login.
func (h *harness) apiLogin(email, password string) (int, map[string]any, http.Header) {
	h.t.Helper()
	body, _ := json.Marshal(map[string]string{"email": email, "password": password})
	resp, err := h.ts.Client().Post(h.base+"/api/auth/login", "application/json", bytes.NewReader(body))
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m, resp.Header
}

func mustRegexp(p string) *regexp.Regexp { return regexp.MustCompile(p) }

func htmlUnescape(s string) string { return html.UnescapeString(s) }
