package authd

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"golang.org/x/oauth2"

	"github.com/sigops/sigops/runtime/auth"
)

// TestEndToEndOAuthWithGoClient drives the whole flow with golang.org/x/oauth2 as the client:
// discovery, registration, PKCE S256, login and consent by HTTP forms, code exchange,
// /api/user/me with the access token, refresh and rotation.
func TestEndToEndOAuthWithGoClient(t *testing.T) {
	h := newHarness(t)
	u := h.user("trader@example.com", auth.TierPro)

	// Discovery tells the client where everything is.
	resp, err := h.ts.Client().Get(h.base + "/.well-known/oauth-authorization-server")
	if err != nil {
		t.Fatal(err)
	}
	var as map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&as)
	resp.Body.Close()
	if as["issuer"] != h.base || as["token_endpoint"] != h.base+"/api/oauth/token" || as["registration_endpoint"] != h.base+"/api/oauth/register" {
		t.Fatalf("metadata %v", as)
	}

	// Registration (public client, loopback redirect on port 3000).
	cfg := h.publicClient("mcp:paper")
	cfg.Endpoint.AuthURL, cfg.Endpoint.TokenURL = as["authorization_endpoint"].(string), as["token_endpoint"].(string)

	// The user is not logged in: authorize sends them to the login form and back.
	b := h.browser()
	verifier := oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL("opaque-state", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", h.base+"/api"))
	resp, _ = b.get(authURL)
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/login?next=") {
		t.Fatalf("unauthenticated authorize: %d %s", resp.StatusCode, loc)
	}
	_, page := b.get(loc)
	next := regexpField(t, `name="next" value="([^"]+)"`, page)
	resp, _ = b.post("/login", url.Values{"csrf_token": {field(t, csrfRe, page)}, "next": {htmlUnescape(next)},
		"email": {"Trader@Example.com"}, "password": {testPassword}})
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/api/oauth/authorize?") {
		t.Fatalf("login: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	// Back at authorize, then the consent page shows client, redirect host and scope.
	resp, _ = b.get(resp.Header.Get("Location"))
	_, page = b.get(resp.Header.Get("Location"))
	for _, want := range []string{"Test Agent", "127.0.0.1:49152", "mcp:paper", "trader@example.com"} {
		if !strings.Contains(page, want) {
			t.Errorf("consent page lacks %q", want)
		}
	}
	resp, _ = b.post("/oauth/consent", url.Values{"csrf_token": {field(t, csrfRe, page)}, "request": {field(t, requestRe, page)},
		"action": {"approve"}})
	back, _ := url.Parse(resp.Header.Get("Location"))
	if back.Host != "127.0.0.1:49152" || back.Path != "/callback" || back.Query().Get("state") != "opaque-state" ||
		back.Query().Get("iss") != h.base {
		t.Fatalf("redirect back: %s", back)
	}

	// Code exchange with the verifier.
	tok, err := cfg.Exchange(h.ctx(), back.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	if tok.TokenType != "Bearer" || tok.RefreshToken == "" || tok.Extra("expires_in").(float64) != 3600 || tok.Extra("scope") != "mcp:paper" {
		t.Fatalf("token %+v", tok)
	}

	// /api/user/me with the access token: the Authentication status with its token block.
	code, me := h.me(tok.AccessToken)
	if code != 200 {
		t.Fatalf("me: %d %v", code, me)
	}
	if me["id"] != u.ID || me["email"] != "trader@example.com" || me["telegramLinked"] != false {
		t.Fatalf("me %v", me)
	}
	tier := me["tier"].(map[string]any)
	caps := tier["capabilities"].(map[string]any)
	if tier["slug"] != "pro" || caps["allowLiveTrading"] != true || caps["allowNewsTrading"] != false || caps["allowMcpServer"] != true {
		t.Fatalf("tier %v", tier)
	}
	tb, ok := me["token"].(map[string]any)
	if !ok || tb["clientId"] != cfg.ClientID || tb["clientName"] != "Test Agent" || tb["scope"] != "mcp:paper" || tb["expiresAt"] == "" {
		t.Fatalf("token block %v", me["token"])
	}
	if _, err := time.Parse(time.RFC3339, tb["expiresAt"].(string)); err != nil {
		t.Fatal(err)
	}

	// Refresh through the library (the access token is treated as expired): rotation.
	stale := *tok
	stale.Expiry = time.Now().Add(-time.Minute)
	tok2, err := cfg.TokenSource(h.ctx(), &stale).Token()
	if err != nil {
		t.Fatal(err)
	}
	if tok2.AccessToken == tok.AccessToken || tok2.RefreshToken == "" || tok2.RefreshToken == tok.RefreshToken {
		t.Fatal("refresh did not rotate")
	}
	if code, _ := h.me(tok2.AccessToken); code != 200 {
		t.Fatalf("me with the refreshed token: %d", code)
	}
	// The old refresh token is spent.
	if _, err := cfg.TokenSource(h.ctx(), &stale).Token(); err == nil {
		t.Fatal("rotated refresh token worked twice")
	}

	// Connected apps lists it (now revoked as theft), with client name and ID.
	_, apps := b.get("/dashboard/settings/connected-apps")
	if !strings.Contains(apps, "Test Agent") || !strings.Contains(apps, cfg.ClientID) || !strings.Contains(apps, "revoked") {
		t.Fatalf("connected apps:\n%s", apps)
	}

	// Nothing secret reached the logs.
	logs := h.logs.String()
	for name, secret := range map[string]string{"password": testPassword, "access token": tok.AccessToken,
		"refresh token": tok.RefreshToken, "code": back.Query().Get("code"), "verifier": verifier} {
		if strings.Contains(logs, secret) {
			t.Errorf("logs contain the %s", name)
		}
	}
}

// TestConfidentialClients: client_secret_basic and client_secret_post, as registered.
func TestConfidentialClients(t *testing.T) {
	h := newHarness(t)
	h.user("conf@example.com", auth.TierTeam)
	b := h.browser()
	b.login("conf@example.com", testPassword)
	for _, c := range []struct {
		method string
		style  oauth2.AuthStyle
	}{{"client_secret_basic", oauth2.AuthStyleInHeader}, {"client_secret_post", oauth2.AuthStyleInParams}} {
		status, r := h.register(map[string]any{"client_name": "Server app", "redirect_uris": []string{"https://app.example/cb"},
			"token_endpoint_auth_method": c.method, "scope": "mcp:read mcp:live"})
		if status != http.StatusCreated || r.ClientSecret == "" {
			t.Fatalf("%s: register %d %+v", c.method, status, r)
		}
		cfg := h.config(r.ClientID, r.ClientSecret, c.style, "mcp:live")
		cfg.RedirectURL = "https://app.example/cb"
		code, v := h.grant(b, cfg)
		tok, err := cfg.Exchange(h.ctx(), code, oauth2.VerifierOption(v))
		if err != nil {
			t.Fatalf("%s: %v", c.method, err)
		}
		if st, _ := h.me(tok.AccessToken); st != 200 {
			t.Fatalf("%s: me %d", c.method, st)
		}
		// The other method is refused even with the right secret.
		other := oauth2.AuthStyleInParams
		if c.style == oauth2.AuthStyleInParams {
			other = oauth2.AuthStyleInHeader
		}
		cfg2 := *cfg
		cfg2.Endpoint.AuthStyle = other
		stale := *tok
		stale.Expiry = time.Now().Add(-time.Minute)
		if _, err := cfg2.TokenSource(h.ctx(), &stale).Token(); err == nil || !strings.Contains(err.Error(), "invalid_client") {
			t.Fatalf("%s: other auth method: %v", c.method, err)
		}
	}
}

func regexpField(t *testing.T, pattern, body string) string {
	t.Helper()
	return field(t, mustRegexp(pattern), body)
}
