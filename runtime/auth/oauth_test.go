package auth

import (
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/store"
)

// authorize creates an authorization of u for client "c1" as a code exchange would, and
// returns its ID, refresh token and an access token.
func (f *fixture) authorize(t *testing.T, u User, scope string) (string, string, string) {
	t.Helper()
	id := RandomToken(16)
	refresh, err := f.oauth.CreateAuthorization(t.Context(), Authorization{ID: id, UserID: u.ID, ClientID: "c1",
		ClientName: "Test client", Scope: scope, Resource: testMCP, Gen: u.Generation})
	if err != nil {
		t.Fatal(err)
	}
	at, err := f.issuer.IssueAccessToken(AccessTokenRequest{UserID: u.ID, Gen: u.Generation, ClientID: "c1", Scope: scope,
		AuthorizationID: id, Audience: testMCP})
	if err != nil {
		t.Fatal(err)
	}
	return id, refresh, at.Token
}

func TestValidateRedirectURI(t *testing.T) {
	for _, c := range []struct {
		uri       string
		localhost bool
		ok        bool
	}{
		{"https://app.example.com/callback", false, true},
		{"https://app.example.com:8443/cb?x=1", false, true},
		{"http://127.0.0.1:3000/callback", false, true},
		{"http://127.0.0.1/callback", false, true},
		{"http://[::1]:3000/callback", false, true},
		{"http://localhost:3000/callback", false, false},
		{"http://localhost:3000/callback", true, true},
		{"http://app.example.com/callback", false, false}, // non-loopback http
		{"http://127.0.0.2/callback", false, false},
		{"http://127.0.0.1.evil.com/callback", false, false},
		{"https://app.example.com/cb#frag", false, false},
		{"https://user:pw@app.example.com/cb", false, false},
		{"javascript:alert(1)", false, false},
		{"com.example.app:/callback", false, false},
		{"/relative", false, false},
		{"https:///nohost", false, false},
		{"https://a;script-src*/cb", false, false},
		{"https://a'b.example/cb", false, false},
		{"https://[2001:db8::1]/cb", false, true},
		{"", false, false},
		{"https://app.example.com/" + strings.Repeat("a", 2100), false, false},
	} {
		err := ValidateRedirectURI(c.uri, c.localhost)
		if (err == nil) != c.ok {
			t.Errorf("ValidateRedirectURI(%q, localhost=%v) = %v", c.uri, c.localhost, err)
		}
		var me *MetadataError
		if err != nil && (!errors.As(err, &me) || me.Code != "invalid_redirect_uri") {
			t.Errorf("%q: error %v is not invalid_redirect_uri", c.uri, err)
		}
	}
}

func TestMatchRedirect(t *testing.T) {
	c := Client{RedirectURIs: []string{"https://app.example.com/cb", "http://127.0.0.1:3000/callback", "http://[::1]/cb?x=1"}}
	for _, r := range []struct {
		uri string
		ok  bool
	}{
		{"https://app.example.com/cb", true},
		{"https://app.example.com/cb/", false},
		{"https://app.example.com/cb?x=1", false},
		{"https://app.example.com:444/cb", false}, // ports only float on loopback
		{"https://APP.example.com/cb", false},
		{"http://127.0.0.1:3000/callback", true},
		{"http://127.0.0.1:51234/callback", true}, // RFC 8252 §7.3: any port
		{"http://127.0.0.1/callback", true},
		{"http://127.0.0.1:51234/other", false},
		{"http://127.0.0.1:51234/callback?x=1", false},
		{"http://[::1]:6000/cb?x=1", true},
		{"http://[::1]:6000/cb", false},
		{"http://localhost:3000/callback", false},
		{"http://127.0.0.1:3000/callback#f", false},
		{"https://127.0.0.1:3000/callback", false},
		{"", false},
	} {
		if got := c.MatchRedirect(r.uri, false); got != r.ok {
			t.Errorf("MatchRedirect(%q) = %v", r.uri, got)
		}
	}
}

func TestRegisterClient(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	pub, secret, err := f.oauth.RegisterClient(ctx, ClientMetadata{ClientName: "Pub", RedirectURIs: []string{"http://127.0.0.1/cb"},
		TokenEndpointAuthMethod: AuthMethodNone})
	if err != nil || secret != "" || !pub.Public() || !pub.AllowsGrant(GrantRefresh) {
		t.Fatalf("public: %+v %q %v", pub, secret, err)
	}
	conf, secret, err := f.oauth.RegisterClient(ctx, ClientMetadata{ClientName: "Conf", RedirectURIs: []string{"https://a.example/cb"},
		TokenEndpointAuthMethod: AuthMethodPost, Scope: "mcp:paper"})
	if err != nil || len(secret) < 43 || conf.Public() {
		t.Fatalf("confidential: %+v %v", conf, err)
	}
	got, err := f.oauth.GetClient(ctx, conf.ID)
	if err != nil || !got.CheckSecret(secret) || got.CheckSecret(secret+"x") || got.CheckSecret("") || got.Scope != "mcp:paper" {
		t.Fatalf("stored client %+v %v", got, err)
	}
	stored, _ := f.rdb.HGetAll(ctx, store.OAuthClient(conf.ID)).Result()
	for k, v := range stored {
		if strings.Contains(v, secret) {
			t.Fatalf("secret stored in clear in %s", k)
		}
	}
	for _, bad := range []ClientMetadata{
		{RedirectURIs: nil},
		{RedirectURIs: []string{"http://evil.example/cb"}},
		{RedirectURIs: []string{"https://a.example/cb"}, TokenEndpointAuthMethod: "private_key_jwt"},
		{RedirectURIs: []string{"https://a.example/cb"}, GrantTypes: []string{"implicit"}},
		{RedirectURIs: []string{"https://a.example/cb"}, GrantTypes: []string{"refresh_token"}},
		{RedirectURIs: []string{"https://a.example/cb"}, ResponseTypes: []string{"token"}},
		{RedirectURIs: []string{"https://a.example/cb"}, Scope: "admin"},
		{RedirectURIs: []string{"https://a.example/cb"}, ClientName: "bad\x00name"},
		{RedirectURIs: []string{"https://a.example/cb"}, ClientName: strings.Repeat("n", 101)},
	} {
		if _, _, err := f.oauth.RegisterClient(ctx, bad); err == nil {
			t.Errorf("RegisterClient(%+v) accepted", bad)
		}
	}
}

func s256(v string) string {
	sum := sha256.Sum256([]byte(v))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

func TestCodeSingleUseAndReplayRevokes(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	u := f.user(t, "gus@example.com", TierPro)
	verifier := strings.Repeat("v", 50)
	code, err := f.oauth.CreateCode(ctx, CodeGrant{ClientID: "c1", UserID: u.ID, Gen: 1, RedirectURI: "http://127.0.0.1:9/cb",
		Challenge: s256(verifier), Scope: "mcp:read", Resource: testMCP})
	if err != nil {
		t.Fatal(err)
	}
	g, err := f.oauth.ConsumeCode(ctx, code)
	if err != nil || g.AuthorizationID == "" {
		t.Fatalf("consume: %v", err)
	}
	if err := f.oauth.CheckCode(g, "c1", "http://127.0.0.1:9/cb", verifier); err != nil {
		t.Fatal(err)
	}
	if _, err := f.oauth.CreateAuthorization(ctx, Authorization{ID: g.AuthorizationID, UserID: u.ID, ClientID: "c1",
		Scope: g.Scope, Resource: g.Resource, Gen: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := f.oauth.ConsumeCode(ctx, code); !errors.Is(err, ErrGrantReplay) {
		t.Fatalf("replay: %v", err)
	}
	a, _ := f.oauth.GetAuthorization(ctx, g.AuthorizationID)
	if a.RevokedAt.IsZero() || a.RevokedReason != "code_replay" {
		t.Fatalf("replay did not revoke: %+v", a)
	}
	if _, err := f.oauth.ConsumeCode(ctx, "never-issued"); !errors.Is(err, ErrGrantUnknown) {
		t.Fatalf("unknown: %v", err)
	}
	// The exchange rules.
	base := CodeGrant{ClientID: "c1", RedirectURI: "http://127.0.0.1:9/cb", Challenge: s256(verifier), ExpiresAt: f.clk.Now().Add(time.Minute)}
	for name, c := range map[string]struct {
		g                     CodeGrant
		client, redirect, ver string
		want                  error
	}{
		"expired":        {CodeGrant{ClientID: "c1", RedirectURI: base.RedirectURI, Challenge: base.Challenge, ExpiresAt: f.clk.Now()}, "c1", base.RedirectURI, verifier, ErrGrantExpired},
		"other client":   {base, "c2", base.RedirectURI, verifier, ErrGrantClient},
		"other redirect": {base, "c1", "http://127.0.0.1:10/cb", verifier, ErrGrantRedirect},
		"wrong verifier": {base, "c1", base.RedirectURI, strings.Repeat("w", 50), ErrGrantPKCE},
		"plain verifier": {CodeGrant{ClientID: "c1", RedirectURI: base.RedirectURI, Challenge: verifier, ExpiresAt: base.ExpiresAt}, "c1", base.RedirectURI, verifier, ErrGrantPKCE},
		"short verifier": {base, "c1", base.RedirectURI, "abc", ErrGrantPKCE},
	} {
		if err := f.oauth.CheckCode(c.g, c.client, c.redirect, c.ver); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
}

func TestRotateAndReuse(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	u := f.user(t, "hal@example.com", TierPro)
	id, r0, _ := f.authorize(t, u, "mcp:paper")
	if _, _, err := f.oauth.Rotate(ctx, RotateRequest{Token: r0, ClientID: "c1", Scope: "mcp:live"}); !errors.Is(err, ErrScopeWiden) {
		t.Fatalf("widen: %v", err)
	}
	if _, _, err := f.oauth.Rotate(ctx, RotateRequest{Token: r0, ClientID: "c2"}); !errors.Is(err, ErrGrantClient) {
		t.Fatalf("other client: %v", err)
	}
	if _, _, err := f.oauth.Rotate(ctx, RotateRequest{Token: r0, ClientID: "c1", Resource: "https://evil/api"}); !errors.Is(err, ErrTarget) {
		t.Fatalf("other resource: %v", err)
	}
	// None of those spent it.
	f.clk.Advance(29 * 24 * time.Hour)
	a, r1, err := f.oauth.Rotate(ctx, RotateRequest{Token: r0, ClientID: "c1", Scope: "mcp:read"})
	if err != nil || a.Scope != "mcp:paper" || a.UserID != u.ID || r1 == r0 {
		t.Fatalf("rotate: %+v %v", a, err)
	}
	// Sliding: another 29 days later the family still lives.
	f.clk.Advance(29 * 24 * time.Hour)
	_, r2, err := f.oauth.Rotate(ctx, RotateRequest{Token: r1, ClientID: "c1"})
	if err != nil {
		t.Fatalf("slide: %v", err)
	}
	_, sibling, _ := f.authorize(t, u, "mcp:paper") // another authorization of the same user
	// Reuse of r1 (already spent) revokes the family, r2 included.
	if _, _, err := f.oauth.Rotate(ctx, RotateRequest{Token: r1, ClientID: "c1"}); !errors.Is(err, ErrGrantReplay) {
		t.Fatalf("reuse: %v", err)
	}
	if _, _, err := f.oauth.Rotate(ctx, RotateRequest{Token: r2, ClientID: "c1"}); !errors.Is(err, ErrGrantRevoked) {
		t.Fatalf("current token after reuse: %v", err)
	}
	got, _ := f.oauth.GetAuthorization(ctx, id)
	if got.RevokedReason != "refresh_reuse" {
		t.Fatalf("authorization %+v", got)
	}
	if _, _, err := f.oauth.Rotate(ctx, RotateRequest{Token: sibling, ClientID: "c1"}); err != nil {
		t.Fatalf("the user's other authorization suffered: %v", err)
	}
	// Expiry: unused for 30 days.
	_, r3, _ := f.authorize(t, u, "mcp:read")
	f.clk.Advance(30*24*time.Hour + time.Second)
	if _, _, err := f.oauth.Rotate(ctx, RotateRequest{Token: r3, ClientID: "c1"}); !errors.Is(err, ErrGrantExpired) {
		t.Fatalf("expired family: %v", err)
	}
	for _, junk := range []string{"", "x", "a.b", strings.Repeat("z", 300)} {
		if _, _, err := f.oauth.Rotate(ctx, RotateRequest{Token: junk, ClientID: "c1"}); !errors.Is(err, ErrGrantUnknown) {
			t.Errorf("junk %q: %v", junk, err)
		}
	}
}

func TestListAndRevokeAuthorizations(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	u := f.user(t, "ivy@example.com", TierPro)
	other := f.user(t, "jon@example.com", TierPro)
	a1, _, _ := f.authorize(t, u, "mcp:read")
	f.clk.Advance(time.Minute)
	a2, _, _ := f.authorize(t, u, "mcp:live")
	if err := f.oauth.RevokeAuthorization(ctx, other.ID, a1); !errors.Is(err, ErrNotFound) {
		t.Fatalf("revoke of another user's authorization: %v", err)
	}
	if err := f.oauth.RevokeAuthorization(ctx, u.ID, a1); err != nil {
		t.Fatal(err)
	}
	list, err := f.oauth.ListAuthorizations(ctx, u.ID)
	if err != nil || len(list) != 2 || list[0].ID != a2 || list[1].ID != a1 {
		t.Fatalf("list %+v %v", list, err)
	}
	if list[1].RevokedAt.IsZero() || list[1].Active(f.clk.Now()) || !list[0].Active(f.clk.Now()) {
		t.Fatalf("states %+v", list)
	}
	if list[0].ClientName != "Test client" || list[0].Scope != "mcp:live" || list[0].CreatedAt.IsZero() {
		t.Fatalf("record %+v", list[0])
	}
}
