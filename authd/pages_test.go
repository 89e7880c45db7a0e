package authd

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/registry"
)

func TestSessionCookieAttributes(t *testing.T) {
	h := newHarness(t)
	h.user("cookie@example.com", auth.TierFree)
	b := h.browser()
	resp := b.login("cookie@example.com", testPassword)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/dashboard" {
		t.Fatalf("login %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	var c *http.Cookie
	for _, k := range resp.Cookies() {
		if k.Name == sessionCookie {
			c = k
		}
	}
	if c == nil {
		t.Fatal("no session cookie")
	}
	week := int((7 * 24 * time.Hour).Seconds())
	if !c.HttpOnly || !c.Secure || c.SameSite != http.SameSiteStrictMode || c.Path != "/" || c.Domain != "" {
		t.Fatalf("cookie attributes %+v", c)
	}
	if c.MaxAge < week-5 || c.MaxAge > week {
		t.Fatalf("Max-Age %d, want 7 days", c.MaxAge)
	}
	if d := time.Until(c.Expires); d < 7*24*time.Hour-time.Minute || d > 7*24*time.Hour+time.Minute {
		t.Fatalf("Expires %v", c.Expires)
	}
	if len(c.Value) < 43 {
		t.Fatalf("cookie value too short: %d", len(c.Value))
	}
	raw := resp.Header.Values("Set-Cookie")
	joined := strings.Join(raw, "\n")
	for _, attr := range []string{"HttpOnly", "Secure", "SameSite=Strict", "Path=/", "Max-Age="} {
		if !strings.Contains(joined, attr) {
			t.Errorf("Set-Cookie lacks %s: %s", attr, joined)
		}
	}
	// Activity slides it: three days later a page re-sends a full 7-day cookie.
	h.clk.Advance(72 * time.Hour)
	resp, _ = b.get("/dashboard/settings")
	if resp.StatusCode != 200 {
		t.Fatalf("settings %d", resp.StatusCode)
	}
	var slid *http.Cookie
	for _, k := range resp.Cookies() {
		if k.Name == sessionCookie {
			slid = k
		}
	}
	if slid == nil || slid.MaxAge < week-5 {
		t.Fatalf("cookie not refreshed on activity: %+v", slid)
	}
	// Pages are not cacheable, not frameable, and run no script.
	if resp.Header.Get("Cache-Control") != "no-store" || resp.Header.Get("X-Frame-Options") != "DENY" ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "default-src 'none'") ||
		!strings.Contains(resp.Header.Get("Content-Security-Policy"), "frame-ancestors 'none'") {
		t.Fatalf("page headers %v", resp.Header)
	}

	// /api/user/me with the cookie: no token block.
	req, _ := http.NewRequest(http.MethodGet, h.base+"/api/user/me", nil)
	resp, body := b.do(req)
	var me map[string]any
	_ = json.Unmarshal([]byte(body), &me)
	if resp.StatusCode != 200 || me["email"] != "cookie@example.com" || me["token"] != nil {
		t.Fatalf("me with cookie: %d %v", resp.StatusCode, me)
	}
	if me["strategyLabBalanceUsd"] != 0.0 || me["tier"].(map[string]any)["capabilities"].(map[string]any)["allowLiveTrading"] != false {
		t.Fatalf("me %v", me)
	}

	// Logout (CSRF-checked) destroys the session server-side.
	_, page := b.get("/logout")
	cookieValue := c.Value
	resp, _ = b.post("/logout", url.Values{"csrf_token": {field(t, csrfRe, page)}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout %d", resp.StatusCode)
	}
	replay := h.ts.Client()
	req, _ = http.NewRequest(http.MethodGet, h.base+"/api/user/me", nil)
	req.AddCookie(&http.Cookie{Name: sessionCookie, Value: cookieValue})
	r2, err := replay.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	r2.Body.Close()
	if r2.StatusCode != 401 {
		t.Fatalf("cookie after logout: %d", r2.StatusCode)
	}
}

func TestBruteForceLimits(t *testing.T) {
	h := newHarness(t)
	h.user("target@example.com", auth.TierPro)
	b := h.browser()
	for i := 0; i < 5; i++ {
		if resp := b.login("target@example.com", "wrong password "+string(rune('a'+i))); resp.StatusCode != 401 {
			t.Fatalf("attempt %d: %d", i, resp.StatusCode)
		}
	}
	// Locked: even the right password is refused, before it is checked.
	_, page := b.get("/login")
	resp, body := b.post("/login", url.Values{"csrf_token": {field(t, csrfRe, page)}, "email": {"target@example.com"}, "password": {testPassword}})
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(body, "Too many failed sign-in attempts") {
		t.Fatalf("locked account: %d %s", resp.StatusCode, body)
	}
	lockedPage := body
	// The API login shares the counter.
	st, m, hdr := h.apiLogin("target@example.com", testPassword)
	if st != 429 || m["code"] != "RATE_LIMITED" || hdr.Get("Retry-After") == "" {
		t.Fatalf("api login on a locked account: %d %v", st, m)
	}
	lockedAPI := m["error"]
	// An account that does not exist locks the same way and says the same thing.
	for i := 0; i < 5; i++ {
		h.apiLogin("ghost@example.com", "whatever password")
	}
	st, m, _ = h.apiLogin("ghost@example.com", "whatever password")
	if st != 429 || m["error"] != lockedAPI {
		t.Fatalf("unknown account: %d %v (known said %v)", st, m, lockedAPI)
	}
	_, page = b.get("/login")
	_, body = b.post("/login", url.Values{"csrf_token": {field(t, csrfRe, page)}, "email": {"ghost@example.com"}, "password": {"x"}})
	if !strings.Contains(body, "Too many failed sign-in attempts") || !strings.Contains(lockedPage, "Too many failed sign-in attempts") {
		t.Fatal("lockout messages differ between existing and unknown accounts")
	}
	// Wrong-password messages are the same for existing and unknown accounts too.
	st1, m1, _ := h.apiLogin("nobody-1@example.com", "x")
	h.user("somebody@example.com", auth.TierFree)
	st2, m2, _ := h.apiLogin("somebody@example.com", "x")
	if st1 != 401 || st2 != 401 || m1["error"] != m2["error"] {
		t.Fatalf("messages differ: %v / %v", m1, m2)
	}
}

func TestBruteForcePerIP(t *testing.T) {
	h := newHarness(t)
	h.user("ok@example.com", auth.TierFree)
	// 20 failures spread over many accounts from one address lock that address.
	for i := 0; i < 20; i++ {
		if st, _, _ := h.apiLogin("spray"+string(rune('a'+i))+"@example.com", "guess"); st != 401 {
			t.Fatalf("attempt %d: %d", i, st)
		}
	}
	if st, _, _ := h.apiLogin("ok@example.com", testPassword); st != 429 {
		t.Fatalf("address not locked: %d", st)
	}
}

func TestCSRFRefusals(t *testing.T) {
	h := newHarness(t)
	h.user("csrf@example.com", auth.TierTeam)

	// Login form without the double-submit token, or with a mismatched one.
	b := h.browser()
	b.get("/login")
	for _, tok := range []string{"", "forged-token-value-forged-token-value-0000"} {
		resp, _ := b.post("/login", url.Values{"csrf_token": {tok}, "email": {"csrf@example.com"}, "password": {testPassword}})
		if resp.StatusCode != 403 {
			t.Fatalf("login with csrf %q: %d", tok, resp.StatusCode)
		}
	}
	// Cross-site login attempt with a valid pair but a foreign Origin.
	_, page := b.get("/login")
	req, _ := http.NewRequest(http.MethodPost, h.base+"/login", strings.NewReader(url.Values{"csrf_token": {field(t, csrfRe, page)},
		"email": {"csrf@example.com"}, "password": {testPassword}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", "https://evil.example")
	if resp, _ := b.do(req); resp.StatusCode != 403 {
		t.Fatalf("foreign origin: %d", resp.StatusCode)
	}

	b.login("csrf@example.com", testPassword)
	cfg := h.publicClient("mcp:live")
	resp, _ := b.get(cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	_, page = b.get(resp.Header.Get("Location"))
	request := field(t, requestRe, page)
	for _, form := range []url.Values{
		{"request": {request}, "action": {"approve"}},
		{"request": {request}, "action": {"approve"}, "csrf_token": {"wrong"}},
	} {
		if resp, _ := b.post("/oauth/consent", form); resp.StatusCode != 403 || resp.Header.Get("Location") != "" {
			t.Fatalf("consent without CSRF: %d %s", resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	// Another session's token does not work either.
	b2 := h.browser()
	b2.login("csrf@example.com", testPassword)
	_, settings2 := b2.get("/dashboard/settings")
	if resp, _ := b.post("/oauth/consent", url.Values{"request": {request}, "action": {"approve"},
		"csrf_token": {field(t, csrfRe, settings2)}}); resp.StatusCode != 403 {
		t.Fatalf("consent with another session's token: %d", resp.StatusCode)
	}
	// Nor can the other session answer this session's request with its own token.
	if resp, _ := b2.post("/oauth/consent", url.Values{"request": {request}, "action": {"approve"},
		"csrf_token": {field(t, csrfRe, settings2)}}); resp.StatusCode != 400 {
		t.Fatalf("consent of another session's request: %d", resp.StatusCode)
	}
	for _, path := range []string{"/logout", "/dashboard/settings/token", "/dashboard/settings/connected-apps/revoke"} {
		if resp, _ := b.post(path, url.Values{"csrf_token": {"nope"}}); resp.StatusCode != 403 {
			t.Errorf("%s without CSRF: %d", path, resp.StatusCode)
		}
	}
	// The session still works: nothing was done.
	if resp, _ := b.get("/dashboard/settings"); resp.StatusCode != 200 {
		t.Fatalf("session lost: %d", resp.StatusCode)
	}
}

// The person may grant less than asked: the token and the token response carry what was
// granted (RFC 6749 §3.3); more than asked is refused.
func TestConsentGrantsLessThanAsked(t *testing.T) {
	h := newHarness(t)
	h.user("less@example.com", auth.TierPro)
	b := h.browser()
	b.login("less@example.com", testPassword)
	cfg := h.publicClient("mcp:live")
	consent := func(choice string) (*http.Response, string) {
		t.Helper()
		resp, body := b.get(cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("authorize: %d %s", resp.StatusCode, body)
		}
		_, page := b.get(resp.Header.Get("Location"))
		for _, sc := range []string{"mcp:read", "mcp:paper", "mcp:live"} {
			if !strings.Contains(page, `value="`+sc+`"`) {
				t.Fatalf("consent page offers no %s: %s", sc, page)
			}
		}
		// Real money is chosen on purpose: for mcp:live, mcp:paper is preselected.
		if !strings.Contains(page, `value="mcp:paper" checked`) || strings.Contains(page, `value="mcp:live" checked`) ||
			!strings.Contains(page, `name="orders_per_hour" min="1" max="10000" value="60"`) ||
			!strings.Contains(page, `name="order_notional" value="100"`) || !strings.Contains(page, `name="day_notional" value="500"`) ||
			!strings.Contains(page, `name="approval" value="all" checked`) ||
			!strings.Contains(page, "Your approval: asked for every live entry before it is placed") {
			t.Fatalf("consent page's defaults: %s", page)
		}
		return b.post("/oauth/consent", url.Values{"csrf_token": {field(t, csrfRe, page)}, "request": {field(t, requestRe, page)},
			"action": {"approve"}, "scope": {choice}})
	}
	if resp, _ := consent("admin"); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a scope not offered: %d", resp.StatusCode)
	}
	v := oauth2.GenerateVerifier()
	resp, _ := b.get(cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(v)))
	_, page := b.get(resp.Header.Get("Location"))
	resp, body := b.post("/oauth/consent", url.Values{"csrf_token": {field(t, csrfRe, page)}, "request": {field(t, requestRe, page)},
		"action": {"approve"}, "scope": {"mcp:read"}})
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || loc.Query().Get("code") == "" {
		t.Fatalf("consent: %d %s %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	tok, err := cfg.Exchange(h.ctx(), loc.Query().Get("code"), oauth2.VerifierOption(v))
	if err != nil {
		t.Fatal(err)
	}
	if sc, _ := tok.Extra("scope").(string); sc != "mcp:read" {
		t.Fatalf("token response scope %q, want mcp:read", sc)
	}
	p, err := h.srv.Verifier().Verify(t.Context(), tok.AccessToken)
	if err != nil || p.Scope != "mcp:read" {
		t.Fatalf("token scope %+v %v", p, err)
	}
}

func TestConsentDenyAndOpenRedirect(t *testing.T) {
	h := newHarness(t)
	h.user("deny@example.com", auth.TierFree)
	b := h.browser()
	b.login("deny@example.com", testPassword)
	cfg := h.publicClient("mcp:read")
	u := b.authorize(cfg.AuthCodeURL("keep-me", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())), "deny")
	if u.Query().Get("error") != "access_denied" || u.Query().Get("state") != "keep-me" || u.Query().Get("code") != "" {
		t.Fatalf("deny redirect %s", u)
	}
	for _, next := range []string{"//evil.example/x", "https://evil.example/", "/\\evil.example", "javascript:alert(1)"} {
		if got := safeNext(next); got != "/dashboard" {
			t.Errorf("safeNext(%q) = %q", next, got)
		}
	}
	if safeNext("/api/oauth/authorize?x=1") != "/api/oauth/authorize?x=1" {
		t.Error("local next refused")
	}
}

func TestDashboardTokenAndAPILogin(t *testing.T) {
	h := newHarness(t)
	h.user("cli@example.com", auth.TierTeam)
	b := h.browser()
	b.login("cli@example.com", testPassword)
	_, page := b.get("/dashboard/settings")
	resp, page := b.post("/dashboard/settings/token", url.Values{"csrf_token": {field(t, csrfRe, page)}})
	if resp.StatusCode != 200 {
		t.Fatalf("issue: %d", resp.StatusCode)
	}
	tok := regexpField(t, `id="api-token" type="text" readonly value="([^"]+)"`, page)
	st, me := h.me(tok)
	if st != 200 || me["email"] != "cli@example.com" || me["token"] != nil {
		t.Fatalf("dashboard token: %d %v", st, me)
	}
	// POST /api/auth/login gives the same kind of token; logout kills it at once.
	st, login, _ := h.apiLogin("CLI@example.com", testPassword)
	if st != 200 || login["token"] == "" {
		t.Fatalf("api login: %d %v", st, login)
	}
	exp, err := time.Parse(time.RFC3339, login["expiresAt"].(string))
	if err != nil || exp.Sub(h.clk.Now()) < 7*24*time.Hour-time.Minute {
		t.Fatalf("expiresAt %v %v", login["expiresAt"], err)
	}
	bearer := login["token"].(string)
	if st, _ := h.me(bearer); st != 200 {
		t.Fatal("api token refused")
	}
	req, _ := http.NewRequest(http.MethodPost, h.base+"/api/auth/logout", nil)
	req.Header.Set("Authorization", "Bearer "+bearer)
	r, err := h.ts.Client().Do(req)
	if err != nil || r.StatusCode != 204 {
		t.Fatalf("logout: %v %v", r, err)
	}
	r.Body.Close()
	if st, _ := h.me(bearer); st != 401 {
		t.Fatal("token alive after logout")
	}
	if st, _ := h.me(tok); st != 200 {
		t.Fatal("logout of one token killed another")
	}
	// No credentials: 401 with the RFC 9728 pointer.
	req, _ = http.NewRequest(http.MethodGet, h.base+"/api/user/me", nil)
	r, _ = h.ts.Client().Do(req)
	r.Body.Close()
	if r.StatusCode != 401 || !strings.Contains(r.Header.Get("WWW-Authenticate"), "resource_metadata=") {
		t.Fatalf("anonymous me: %d %v", r.StatusCode, r.Header)
	}
}

func TestDiscoveryDocuments(t *testing.T) {
	h := newHarness(t)
	get := func(path string) map[string]any {
		resp, err := h.ts.Client().Get(h.base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Access-Control-Allow-Origin") != "*" {
			t.Fatalf("%s: %d %v", path, resp.StatusCode, resp.Header)
		}
		var m map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	as := get("/.well-known/oauth-authorization-server")
	want := map[string]any{"issuer": h.base, "authorization_endpoint": h.base + "/api/oauth/authorize",
		"token_endpoint": h.base + "/api/oauth/token", "registration_endpoint": h.base + "/api/oauth/register",
		"revocation_endpoint": h.base + "/api/oauth/revoke"}
	for k, v := range want {
		if as[k] != v {
			t.Errorf("AS %s = %v", k, as[k])
		}
	}
	list := func(m map[string]any, k string) string {
		var out []string
		for _, x := range m[k].([]any) {
			out = append(out, x.(string))
		}
		return strings.Join(out, " ")
	}
	for k, v := range map[string]string{"response_types_supported": "code", "grant_types_supported": "authorization_code refresh_token",
		"code_challenge_methods_supported": "S256", "token_endpoint_auth_methods_supported": "none client_secret_basic client_secret_post",
		"scopes_supported": "mcp:read mcp:paper mcp:live"} {
		if got := list(as, k); got != v {
			t.Errorf("AS %s = %q", k, got)
		}
	}
	pr := get("/.well-known/oauth-protected-resource")
	if pr["resource"] != h.base+"/api" || list(pr, "authorization_servers") != h.base || list(pr, "bearer_methods_supported") != "header" ||
		pr["mcp_resource"] != "https://mcp.sigops.test/mcp" || list(pr, "scopes_supported") != "mcp:read mcp:paper mcp:live" {
		t.Errorf("PRM %v", pr)
	}
	card := get("/.well-known/mcp/server-card.json")
	si := card["serverInfo"].(map[string]any)
	tr := card["transport"].(map[string]any)
	au := card["authentication"].(map[string]any)
	if si["name"] != "sigops" || si["version"] == "" || tr["type"] != "streamable-http" || tr["endpoint"] != "https://mcp.sigops.test/mcp" ||
		au["required"] != true || au["resource"] != "https://mcp.sigops.test/mcp" ||
		au["resource_metadata"] != "https://mcp.sigops.test/.well-known/oauth-protected-resource" {
		t.Errorf("server card %v", card)
	}
	// The stdio client: the command a desktop agent starts, pointed at this base URL.
	pkgs := card["packages"].([]any)
	pkg := pkgs[0].(map[string]any)
	if len(pkgs) != 1 || pkg["command"] != "sigops-mcp" || pkg["identifier"] != "github.com/sigops/sigops/cmd/sigops-mcp" ||
		pkg["transport"].(map[string]any)["type"] != "stdio" || fmt.Sprint(pkg["args"]) != "[--base-url "+h.base+"]" {
		t.Errorf("server card packages %v", pkgs)
	}
	var keys []string
	for k := range card {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if got := strings.Join(keys, " "); got != "$schema authentication capabilities description packages protocolVersion serverInfo tools transport version" {
		t.Errorf("server card entries: %s", got)
	}
}

func TestHTTPSRequiredAndTrustedProxy(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")} })
	plain := httptest.NewRequest(http.MethodGet, "/.well-known/oauth-authorization-server", nil)
	plain.RemoteAddr = "192.0.2.1:5555"
	w := httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(w, plain)
	if w.Code != 403 {
		t.Fatalf("plain HTTP: %d", w.Code)
	}
	// An untrusted peer cannot claim HTTPS.
	plain.Header.Set("X-Forwarded-Proto", "https")
	w = httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(w, plain)
	if w.Code != 403 {
		t.Fatalf("untrusted X-Forwarded-Proto: %d", w.Code)
	}
	viaProxy := httptest.NewRequest(http.MethodGet, "/.well-known/oauth-authorization-server", nil)
	viaProxy.RemoteAddr = "10.1.2.3:5555"
	viaProxy.Header.Set("X-Forwarded-Proto", "https")
	viaProxy.Header.Set("X-Forwarded-For", "203.0.113.9, 10.9.9.9")
	w = httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(w, viaProxy)
	if w.Code != 200 {
		t.Fatalf("trusted proxy: %d", w.Code)
	}
	if got := h.srv.clientKey(viaProxy); got != "203.0.113.9" {
		t.Fatalf("client key %q", got)
	}
	// A client's own "https" over plain HTTP through a proxy that appends is plain HTTP,
	// whether the proxy extends the client's line or adds its own.
	for _, protos := range [][]string{{"https, http"}, {"https", "http"}} {
		forged := httptest.NewRequest(http.MethodGet, "/.well-known/oauth-authorization-server", nil)
		forged.RemoteAddr = "10.1.2.3:5555"
		for _, p := range protos {
			forged.Header.Add("X-Forwarded-Proto", p)
		}
		w = httptest.NewRecorder()
		h.srv.Handler().ServeHTTP(w, forged)
		if w.Code != 403 {
			t.Fatalf("client-sent X-Forwarded-Proto %q through an appending proxy: %d", protos, w.Code)
		}
	}
	// A client's own X-Forwarded-For line does not name the client: the proxy's line does.
	forgedFor := httptest.NewRequest(http.MethodGet, "/", nil)
	forgedFor.RemoteAddr = "10.1.2.3:5555"
	forgedFor.Header.Add("X-Forwarded-For", "6.6.6.6")
	forgedFor.Header.Add("X-Forwarded-For", "203.0.113.9")
	if got := h.srv.clientKey(forgedFor); got != "203.0.113.9" {
		t.Fatalf("client key with a client-sent X-Forwarded-For line %q", got)
	}
	v6 := httptest.NewRequest(http.MethodGet, "/", nil)
	v6.RemoteAddr = "[2001:db8:1:2:3:4:5:6]:443"
	if got := h.srv.clientKey(v6); got != "2001:db8:1:2::/64" {
		t.Fatalf("IPv6 client key %q", got)
	}
	// Probes answer on plain HTTP.
	w = httptest.NewRecorder()
	h.srv.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	if w.Code != 200 {
		t.Fatalf("healthz %d", w.Code)
	}
}

func TestRegistrationRateLimit(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.RegisterPerIP = auth.Limit{Kind: "register-ip", Max: 3, Window: time.Hour} })
	meta := map[string]any{"client_name": "spam", "redirect_uris": []string{"https://a.example/cb"}, "token_endpoint_auth_method": "none"}
	for i := 0; i < 3; i++ {
		if st, _ := h.register(meta); st != 201 {
			t.Fatalf("registration %d: %d", i, st)
		}
	}
	if st, r := h.register(meta); st != 429 || r.Error == "" {
		t.Fatalf("over the limit: %d %+v", st, r)
	}
}

// The consent page sets the app's policy: live only when mcp:live is chosen, the bots
// chosen (the user's own only), the hourly cap.
func TestConsentSetsTheAppPolicy(t *testing.T) {
	h := newHarness(t)
	u := h.user("policy@example.com", auth.TierPro)
	reg := registry.New(h.rdb)
	for _, b := range []registry.Bot{{ID: "pb-1", Name: "swing", Owner: "policy@example.com"},
		{ID: "pb-other", Name: "theirs", Owner: "someone@example.com"}} {
		b.Namespace, b.Account = "ns", registry.Account{Kind: registry.AccountPaper, Name: "paper"}
		if err := reg.Project(t.Context(), b, "hash-"+b.ID); err != nil {
			t.Fatal(err)
		}
	}
	b := h.browser()
	b.login(u.Email, testPassword)
	cfg := h.publicClient("mcp:live")
	consent := func(form url.Values) *http.Response {
		t.Helper()
		resp, _ := b.get(cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
		_, page := b.get(resp.Header.Get("Location"))
		if !strings.Contains(page, `name="bot" value="pb-1"`) || strings.Contains(page, "pb-other") {
			t.Fatalf("consent page's bots:\n%s", page)
		}
		form.Set("csrf_token", field(t, csrfRe, page))
		form.Set("request", field(t, requestRe, page))
		form.Set("action", "approve")
		resp, _ = b.post("/oauth/consent", form)
		return resp
	}
	if resp := consent(url.Values{"scope": {"mcp:live"}, "bots_mode": {"chosen"}, "bot": {"pb-other"}}); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("another's bot chosen: %d", resp.StatusCode)
	}
	if resp := consent(url.Values{"scope": {"mcp:live"}, "orders_per_hour": {"0"}}); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("0 orders an hour: %d", resp.StatusCode)
	}
	ps := apppolicy.NewPolicies(h.rdb, nil)
	if resp := consent(url.Values{"scope": {"mcp:live"}, "order_notional": {"one hundred"}}); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("an order cap in words: %d", resp.StatusCode)
	}
	if resp := consent(url.Values{"scope": {"mcp:live"}, "bots_mode": {"chosen"}, "bot": {"pb-1"}, "orders_per_hour": {"7"},
		"order_notional": {"25.75"}, "day_notional": {"80"}, "approval": {"none"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("consent: %d", resp.StatusCode)
	}
	p, err := ps.Get(t.Context(), u.ID, cfg.ClientID)
	if err != nil || !p.Live || p.OrdersPerHour != 7 || len(p.Bots) != 1 || p.Bots[0] != "pb-1" ||
		p.OrderNotional.String() != "25.75" || p.DayNotional.String() != "80" || p.Approve {
		t.Fatalf("policy %+v %v", p, err)
	}
	// Granting mcp:paper keeps the app off real money, whatever it asked.
	if resp := consent(url.Values{"scope": {"mcp:paper"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("consent: %d", resp.StatusCode)
	}
	if p, _ := ps.Get(t.Context(), u.ID, cfg.ClientID); p.Live || len(p.Bots) != 0 || p.OrdersPerHour != apppolicy.DefaultOrdersPerHour {
		t.Fatalf("policy after a paper grant %+v", p)
	}
}
