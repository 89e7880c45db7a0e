package authd

import (
	"context"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"golang.org/x/oauth2"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/auth"
)

// exchangeForm is a raw authorization_code request of a public client.
func exchangeForm(clientID, code, redirect, verifier string) url.Values {
	f := url.Values{"grant_type": {"authorization_code"}, "client_id": {clientID}, "code": {code}, "redirect_uri": {redirect}}
	if verifier != "" {
		f.Set("code_verifier", verifier)
	}
	return f
}

func refreshForm(clientID, refresh, scope string) url.Values {
	f := url.Values{"grant_type": {"refresh_token"}, "client_id": {clientID}, "refresh_token": {refresh}}
	if scope != "" {
		f.Set("scope", scope)
	}
	return f
}

func wantOAuthError(t *testing.T, status int, body map[string]any, hdr http.Header, wantStatus int, wantErr string) {
	t.Helper()
	if status != wantStatus || body["error"] != wantErr {
		t.Fatalf("got %d %v, want %d %s", status, body, wantStatus, wantErr)
	}
	if d, _ := body["error_description"].(string); d == "" {
		t.Errorf("no error_description in %v", body)
	}
	if hdr.Get("Cache-Control") != "no-store" || !strings.HasPrefix(hdr.Get("Content-Type"), "application/json") {
		t.Errorf("headers %v", hdr)
	}
}

// TestAttacks is the attack table: each row an attempt that must fail, checked over HTTP
// against the real handler and Redis.
func TestAttacks(t *testing.T) {
	h := newHarness(t)
	u := h.user("victim@example.com", auth.TierPro)
	keys, _ := auth.NewKeyring(testKey, nil)
	kid := keys.KID()
	claims := func(mod func(jwt.MapClaims)) jwt.MapClaims {
		now := h.clk.Now()
		c := jwt.MapClaims{"iss": h.base, "sub": u.ID, "aud": h.base + "/api", "iat": now.Unix(), "exp": now.Add(time.Hour).Unix(),
			"jti": auth.RandomToken(16), "knd": "oauth", "scope": "mcp:live", "client_id": "x", "sid": "nonexistent0000000000a", "gen": 1}
		mod(c)
		return c
	}

	t.Run("code replay fails and revokes what the first exchange issued", func(t *testing.T) {
		b := h.browser()
		b.login(u.Email, testPassword)
		cfg := h.publicClient("mcp:read")
		code, v := h.grant(b, cfg)
		tok, err := cfg.Exchange(h.ctx(), code, oauth2.VerifierOption(v))
		if err != nil {
			t.Fatal(err)
		}
		if st, _ := h.me(tok.AccessToken); st != 200 {
			t.Fatal("first token does not work")
		}
		st, body, hdr := h.tokenPost("/api/oauth/token", exchangeForm(cfg.ClientID, code, cfg.RedirectURL, v), "", "")
		wantOAuthError(t, st, body, hdr, 400, "invalid_grant")
		if st, _ := h.me(tok.AccessToken); st != 401 {
			t.Fatalf("access token of the replayed code still works: %d", st)
		}
		st, body, hdr = h.tokenPost("/api/oauth/token", refreshForm(cfg.ClientID, tok.RefreshToken, ""), "", "")
		wantOAuthError(t, st, body, hdr, 400, "invalid_grant")
	})

	t.Run("code older than 60 s", func(t *testing.T) {
		b := h.browser()
		b.login(u.Email, testPassword)
		cfg := h.publicClient("mcp:read")
		code, v := h.grant(b, cfg)
		h.clk.Advance(61 * time.Second)
		st, body, hdr := h.tokenPost("/api/oauth/token", exchangeForm(cfg.ClientID, code, cfg.RedirectURL, v), "", "")
		wantOAuthError(t, st, body, hdr, 400, "invalid_grant")
	})

	t.Run("code at 59 s still works", func(t *testing.T) {
		b := h.browser()
		b.login(u.Email, testPassword)
		cfg := h.publicClient("mcp:read")
		code, v := h.grant(b, cfg)
		h.clk.Advance(59 * time.Second)
		if st, body, _ := h.tokenPost("/api/oauth/token", exchangeForm(cfg.ClientID, code, cfg.RedirectURL, v), "", ""); st != 200 {
			t.Fatalf("%d %v", st, body)
		}
	})

	t.Run("refresh reuse revokes the whole family including the current access token", func(t *testing.T) {
		cfg, tok0, _ := h.flow(u.Email, "mcp:paper")
		st, r1, _ := h.tokenPost("/api/oauth/token", refreshForm(cfg.ClientID, tok0.RefreshToken, ""), "", "")
		if st != 200 {
			t.Fatalf("first refresh %d %v", st, r1)
		}
		at1, rt1 := r1["access_token"].(string), r1["refresh_token"].(string)
		if st, _ := h.me(at1); st != 200 {
			t.Fatal("current access token does not work before the reuse")
		}
		// A sibling authorization of the same user and client type survives.
		_, other, _ := h.flow(u.Email, "mcp:paper")

		st, body, hdr := h.tokenPost("/api/oauth/token", refreshForm(cfg.ClientID, tok0.RefreshToken, ""), "", "")
		wantOAuthError(t, st, body, hdr, 400, "invalid_grant")
		for name, at := range map[string]string{"current access token": at1, "first access token": tok0.AccessToken} {
			if st, _ := h.me(at); st != 401 {
				t.Errorf("%s after reuse: %d", name, st)
			}
		}
		st, body, hdr = h.tokenPost("/api/oauth/token", refreshForm(cfg.ClientID, rt1, ""), "", "")
		wantOAuthError(t, st, body, hdr, 400, "invalid_grant")
		if st, _ := h.me(other.AccessToken); st != 200 {
			t.Errorf("another authorization was revoked too: %d", st)
		}
	})

	t.Run("PKCE plain refused", func(t *testing.T) {
		cfg := h.publicClient("mcp:read")
		b := h.browser()
		b.login(u.Email, testPassword)
		v := oauth2.GenerateVerifier()
		resp, _ := b.get(cfg.AuthCodeURL("s", oauth2.SetAuthURLParam("code_challenge", v), oauth2.SetAuthURLParam("code_challenge_method", "plain")))
		assertRedirectError(t, resp, "invalid_request", "s")
	})

	t.Run("missing code challenge refused", func(t *testing.T) {
		cfg := h.publicClient("mcp:read")
		b := h.browser()
		b.login(u.Email, testPassword)
		resp, _ := b.get(cfg.AuthCodeURL("s"))
		assertRedirectError(t, resp, "invalid_request", "s")
		// A challenge without a method means plain (RFC 7636): refused too.
		resp, _ = b.get(cfg.AuthCodeURL("s", oauth2.SetAuthURLParam("code_challenge", strings.Repeat("A", 43))))
		assertRedirectError(t, resp, "invalid_request", "s")
	})

	t.Run("missing code verifier", func(t *testing.T) {
		b := h.browser()
		b.login(u.Email, testPassword)
		cfg := h.publicClient("mcp:read")
		code, v := h.grant(b, cfg)
		st, body, hdr := h.tokenPost("/api/oauth/token", exchangeForm(cfg.ClientID, code, cfg.RedirectURL, ""), "", "")
		wantOAuthError(t, st, body, hdr, 400, "invalid_request")
		// The code survives an attempt without verifier (nothing was checked), so the
		// legitimate client still gets its tokens.
		if st, _, _ := h.tokenPost("/api/oauth/token", exchangeForm(cfg.ClientID, code, cfg.RedirectURL, v), "", ""); st != 200 {
			t.Fatalf("legitimate exchange after a verifier-less attempt: %d", st)
		}
	})

	t.Run("wrong code verifier", func(t *testing.T) {
		b := h.browser()
		b.login(u.Email, testPassword)
		cfg := h.publicClient("mcp:read")
		code, _ := h.grant(b, cfg)
		st, body, hdr := h.tokenPost("/api/oauth/token", exchangeForm(cfg.ClientID, code, cfg.RedirectURL, oauth2.GenerateVerifier()), "", "")
		wantOAuthError(t, st, body, hdr, 400, "invalid_grant")
	})

	t.Run("redirect URI mismatch at authorize is shown, never redirected", func(t *testing.T) {
		cfg := h.publicClient("mcp:read")
		b := h.browser()
		b.login(u.Email, testPassword)
		for _, bad := range []string{"https://evil.example/callback", "http://127.0.0.1:3000/other", "http://localhost:3000/callback",
			"http://127.0.0.1:3000/callback/../x", ""} {
			c := *cfg
			c.RedirectURL = bad
			resp, body := b.get(c.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
			if resp.StatusCode != 400 || resp.Header.Get("Location") != "" || !strings.Contains(body, "redirect") {
				t.Errorf("%q: %d Location=%q", bad, resp.StatusCode, resp.Header.Get("Location"))
			}
		}
		// Unknown client: shown too.
		c := *cfg
		c.ClientID = "unknown"
		if resp, _ := b.get(c.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()))); resp.StatusCode != 400 || resp.Header.Get("Location") != "" {
			t.Errorf("unknown client: %d %q", resp.StatusCode, resp.Header.Get("Location"))
		}
	})

	t.Run("redirect URI mismatch at the token endpoint", func(t *testing.T) {
		b := h.browser()
		b.login(u.Email, testPassword)
		cfg := h.publicClient("mcp:read")
		code, v := h.grant(b, cfg)
		st, body, hdr := h.tokenPost("/api/oauth/token", exchangeForm(cfg.ClientID, code, "http://127.0.0.1:49153/callback", v), "", "")
		wantOAuthError(t, st, body, hdr, 400, "invalid_grant")
	})

	t.Run("code of one client exchanged by another", func(t *testing.T) {
		b := h.browser()
		b.login(u.Email, testPassword)
		cfg := h.publicClient("mcp:read")
		thief := h.publicClient("mcp:read")
		code, v := h.grant(b, cfg)
		st, body, hdr := h.tokenPost("/api/oauth/token", exchangeForm(thief.ClientID, code, cfg.RedirectURL, v), "", "")
		wantOAuthError(t, st, body, hdr, 400, "invalid_grant")
	})

	t.Run("non-loopback http redirect refused at registration", func(t *testing.T) {
		for _, uri := range []string{"http://app.example.com/cb", "http://localhost:8080/cb", "http://10.0.0.1/cb", "ftp://x/cb",
			"https://app.example.com/cb#frag"} {
			st, r := h.register(map[string]any{"client_name": "x", "redirect_uris": []string{uri}, "token_endpoint_auth_method": "none"})
			if st != 400 || r.Error != "invalid_redirect_uri" {
				t.Errorf("%q: %d %+v", uri, st, r)
			}
		}
		st, r := h.register(map[string]any{"redirect_uris": []string{"https://a.example/cb"}, "token_endpoint_auth_method": "magic"})
		if st != 400 || r.Error != "invalid_client_metadata" {
			t.Errorf("bad metadata: %d %+v", st, r)
		}
	})

	t.Run("scope escalation on refresh", func(t *testing.T) {
		cfg, tok, _ := h.flow(u.Email, "mcp:paper")
		st, body, hdr := h.tokenPost("/api/oauth/token", refreshForm(cfg.ClientID, tok.RefreshToken, "mcp:live"), "", "")
		wantOAuthError(t, st, body, hdr, 400, "invalid_scope")
		st, body, hdr = h.tokenPost("/api/oauth/token", refreshForm(cfg.ClientID, tok.RefreshToken, "mcp"), "", "")
		wantOAuthError(t, st, body, hdr, 400, "invalid_scope")
		// Narrowing works and the refused attempts did not spend the token.
		st, body, _ = h.tokenPost("/api/oauth/token", refreshForm(cfg.ClientID, tok.RefreshToken, "mcp:read"), "", "")
		if st != 200 || body["scope"] != "mcp:read" {
			t.Fatalf("narrowing: %d %v", st, body)
		}
		_, me := h.me(body["access_token"].(string))
		if me["token"].(map[string]any)["scope"] != "mcp:read" {
			t.Fatalf("narrowed token scope %v", me["token"])
		}
	})

	// The registered scope is a default, not a ceiling: an MCP host registers with its
	// first challenge's mcp:read and steps up by a new authorization request, which the
	// person consents to (and may narrow); only a refresh can never widen.
	t.Run("scope beyond the client's registration asks the person", func(t *testing.T) {
		_, r := h.register(map[string]any{"client_name": "ro", "redirect_uris": []string{registeredRedirect},
			"token_endpoint_auth_method": "none", "scope": "mcp:read"})
		cfg := h.config(r.ClientID, "", oauth2.AuthStyleInParams, "mcp:live")
		b := h.browser()
		b.login(u.Email, testPassword)
		resp, _ := b.get(cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/oauth/consent") {
			t.Fatalf("authorize above the registration: %d %s", resp.StatusCode, loc)
		}
		_, page := b.get(resp.Header.Get("Location"))
		if !strings.Contains(page, `value="mcp:live"`) || !strings.Contains(page, `mcp:live</code>): what it asked for`) {
			t.Fatalf("consent page:\n%s", page)
		}
		// Without a scope, the registered one is asked.
		cfg.Scopes = nil
		resp, _ = b.get(cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
		_, page = b.get(resp.Header.Get("Location"))
		if !strings.Contains(page, `value="mcp:read" checked`) || strings.Contains(page, `value="mcp:paper"`) {
			t.Fatalf("consent page without a scope:\n%s", page)
		}
	})

	t.Run("resource other than ours refused with invalid_target", func(t *testing.T) {
		cfg := h.publicClient("mcp:read")
		b := h.browser()
		b.login(u.Email, testPassword)
		resp, _ := b.get(cfg.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()),
			oauth2.SetAuthURLParam("resource", "https://evil.example/api")))
		assertRedirectError(t, resp, "invalid_target", "s")
	})

	t.Run("MCP resource token binds its audience", func(t *testing.T) {
		b := h.browser()
		b.login(u.Email, testPassword)
		cfg := h.publicClient("mcp:read")
		code, v := h.grant(b, cfg, oauth2.SetAuthURLParam("resource", "https://mcp.sigops.test/mcp"))
		tok, err := cfg.Exchange(h.ctx(), code, oauth2.VerifierOption(v))
		if err != nil {
			t.Fatal(err)
		}
		p, err := h.srv.Verifier().Verify(context.Background(), tok.AccessToken)
		if err != nil || len(p.Audience) != 1 || p.Audience[0] != "https://mcp.sigops.test/mcp" {
			t.Fatalf("audience %v %v", p, err)
		}
		// A verifier for the API alone refuses it.
		v2, _ := auth.NewVerifier(auth.VerifierOptions{Redis: h.rdb, Keys: keys, Issuer: h.base, Audiences: []string{h.base + "/api"}, Now: h.clk.Now})
		if _, err := v2.Verify(context.Background(), tok.AccessToken); err == nil {
			t.Fatal("API verifier accepted an MCP-bound token")
		}
		// /api/user/me is both resources' identity endpoint and takes it; the audit journal
		// is an API resource and does not (it did before the fix: 200 with the entries).
		if st, _ := h.me(tok.AccessToken); st != http.StatusOK {
			t.Fatalf("me with the MCP token: %d", st)
		}
		req, _ := http.NewRequest(http.MethodGet, h.base+"/api/user/audit", nil)
		req.Header.Set("Authorization", "Bearer "+tok.AccessToken)
		resp, err := h.ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Fatalf("audit with the MCP token: %d, want 401", resp.StatusCode)
		}
	})

	forged := map[string]string{
		"token with alg none": testkit.ForgeJWT(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, kid, claims(func(jwt.MapClaims) {})),
		"token signed with another key": testkit.ForgeJWT(t, jwt.SigningMethodHS256, []byte("some other key that is long enough!!"), kid,
			claims(func(jwt.MapClaims) {})),
		"token with the wrong audience": testkit.ForgeJWT(t, jwt.SigningMethodHS256, testKey, kid, claims(func(c jwt.MapClaims) {
			c["aud"] = "https://other.example/api"
		})),
		"token without jti (deprecated endpoint)": testkit.ForgeJWT(t, jwt.SigningMethodHS256, testKey, kid, claims(func(c jwt.MapClaims) {
			delete(c, "jti")
			delete(c, "knd")
			c["scope"] = "mcp"
		})),
	}
	for name, tok := range forged {
		t.Run(name, func(t *testing.T) {
			st, body := h.me(tok)
			if st != 401 || body["code"] != "UNAUTHORIZED" || body["success"] != false {
				t.Fatalf("%d %v", st, body)
			}
		})
	}

	t.Run("expired access token", func(t *testing.T) {
		_, tok, _ := h.flow(u.Email, "mcp:read")
		h.clk.Advance(61 * time.Minute)
		if st, _ := h.me(tok.AccessToken); st != 401 {
			t.Fatalf("expired token: %d", st)
		}
	})

	t.Run("revoked in connected apps", func(t *testing.T) {
		cfg, tok, b := h.flow(u.Email, "mcp:live")
		_, keep, _ := h.flow(u.Email, "mcp:live")
		_, page := b.get("/dashboard/settings/connected-apps")
		authID := regexpField(t, regexp.QuoteMeta(cfg.ClientID)+`[\s\S]*?name="authorization" value="([^"]+)"`, page)
		resp, _ := b.post("/dashboard/settings/connected-apps/revoke", url.Values{"csrf_token": {field(t, csrfRe, page)}, "authorization": {authID}})
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("revoke: %d", resp.StatusCode)
		}
		if st, _ := h.me(tok.AccessToken); st != 401 {
			t.Fatalf("revoked token: %d", st)
		}
		st, body, hdr := h.tokenPost("/api/oauth/token", refreshForm(cfg.ClientID, tok.RefreshToken, ""), "", "")
		wantOAuthError(t, st, body, hdr, 400, "invalid_grant")
		if st, _ := h.me(keep.AccessToken); st != 200 {
			t.Fatalf("other authorization: %d", st)
		}
		_, page = b.get("/dashboard/settings/connected-apps")
		if !strings.Contains(page, "revoked") {
			t.Fatal("revoked record not listed")
		}
	})

	t.Run("RFC 7009 revocation of a refresh token", func(t *testing.T) {
		cfg, tok, _ := h.flow(u.Email, "mcp:read")
		req := url.Values{"token": {tok.RefreshToken}, "client_id": {cfg.ClientID}}
		if st, _, _ := h.tokenPost("/api/oauth/revoke", req, "", ""); st != 200 {
			t.Fatalf("revoke: %d", st)
		}
		if st, _ := h.me(tok.AccessToken); st != 401 {
			t.Fatal("access token of a revoked refresh token still works")
		}
		// Unknown tokens get 200 as well (RFC 7009 §2.2).
		if st, _, _ := h.tokenPost("/api/oauth/revoke", url.Values{"token": {"junk"}, "client_id": {cfg.ClientID}}, "", ""); st != 200 {
			t.Fatalf("unknown token: %d", st)
		}
	})

	t.Run("tokens and sessions issued before a password change", func(t *testing.T) {
		v := h.user("changer@example.com", auth.TierTeam)
		_, tok, b := h.flow(v.Email, "mcp:read")
		st, login, _ := h.apiLogin(v.Email, testPassword)
		if st != 200 {
			t.Fatalf("api login %d", st)
		}
		bearer := login["token"].(string)
		for _, tk := range []string{tok.AccessToken, bearer} {
			if st, _ := h.me(tk); st != 200 {
				t.Fatal("token does not work before the change")
			}
		}
		if err := h.users.SetPassword(context.Background(), v.ID, "an entirely new password"); err != nil {
			t.Fatal(err)
		}
		h.clk.Advance(1100 * time.Millisecond) // another process changed it: the cache bound applies
		for name, tk := range map[string]string{"oauth access token": tok.AccessToken, "bearer JWT": bearer} {
			if st, _ := h.me(tk); st != 401 {
				t.Errorf("%s after password change: %d", name, st)
			}
		}
		if resp, _ := b.get("/dashboard/settings"); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("session after password change: %d", resp.StatusCode)
		}
	})

	t.Run("deprecated token endpoint", func(t *testing.T) {
		st, body, hdr := h.tokenPost("/api/oauth/mcp/token", url.Values{"grant_type": {"authorization_code"}}, "", "")
		wantOAuthError(t, st, body, hdr, 400, "invalid_request")
		if !strings.Contains(body["error_description"].(string), "/api/oauth/token") {
			t.Fatalf("description %v", body)
		}
	})

	t.Run("confidential client with a wrong secret", func(t *testing.T) {
		_, r := h.register(map[string]any{"client_name": "conf", "redirect_uris": []string{"https://app.example/cb"},
			"token_endpoint_auth_method": "client_secret_basic"})
		b := h.browser()
		b.login(u.Email, testPassword)
		cfg := h.config(r.ClientID, r.ClientSecret, oauth2.AuthStyleInHeader, "mcp:read")
		cfg.RedirectURL = "https://app.example/cb"
		code, v := h.grant(b, cfg)
		form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {cfg.RedirectURL}, "code_verifier": {v}}
		st, body, hdr := h.tokenPost("/api/oauth/token", form, r.ClientID, r.ClientSecret+"x")
		wantOAuthError(t, st, body, hdr, 401, "invalid_client")
		if !strings.HasPrefix(hdr.Get("WWW-Authenticate"), "Basic") {
			t.Errorf("no Basic challenge: %v", hdr)
		}
		// No secret at all, as a public client would: refused too.
		form.Set("client_id", r.ClientID)
		st, body, hdr = h.tokenPost("/api/oauth/token", form, "", "")
		wantOAuthError(t, st, body, hdr, 401, "invalid_client")
		// The code was not spent by the failed client authentication.
		form.Del("client_id")
		if st, body, _ := h.tokenPost("/api/oauth/token", form, r.ClientID, r.ClientSecret); st != 200 {
			t.Fatalf("right secret: %d %v", st, body)
		}
	})

	t.Run("token endpoint error shapes", func(t *testing.T) {
		cfg := h.publicClient("mcp:read")
		st, body, hdr := h.tokenPost("/api/oauth/token", url.Values{"grant_type": {"password"}, "client_id": {cfg.ClientID}}, "", "")
		wantOAuthError(t, st, body, hdr, 400, "unsupported_grant_type")
		st, body, hdr = h.tokenPost("/api/oauth/token", url.Values{"grant_type": {"authorization_code"}, "client_id": {"nobody"}}, "", "")
		wantOAuthError(t, st, body, hdr, 401, "invalid_client")
		st, body, hdr = h.tokenPost("/api/oauth/token", url.Values{"grant_type": {"refresh_token", "refresh_token"}, "client_id": {cfg.ClientID}}, "", "")
		wantOAuthError(t, st, body, hdr, 400, "invalid_request")
		st, body, hdr = h.tokenPost("/api/oauth/token", refreshForm(cfg.ClientID, "forged.refresh-token-value-0000000000000000", ""), "", "")
		wantOAuthError(t, st, body, hdr, 400, "invalid_grant")
	})
}

func assertRedirectError(t *testing.T, resp *http.Response, code, state string) {
	t.Helper()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("status %d", resp.StatusCode)
	}
	u, _ := url.Parse(resp.Header.Get("Location"))
	if u.Query().Get("error") != code || u.Query().Get("state") != state || u.Query().Get("code") != "" {
		t.Fatalf("redirect %s, want error=%s", u, code)
	}
}
