package auth

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/store"
)

func (f *fixture) claims(u User) Claims {
	now := f.clk.Now()
	return Claims{RegisteredClaims: jwt.RegisteredClaims{Issuer: testIssuer, Subject: u.ID, Audience: jwt.ClaimStrings{testAPI},
		IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour)), ID: RandomToken(16)},
		Kind: KindAPI, Gen: u.Generation}
}

func TestVerifierAcceptsIssuedTokens(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	u := f.user(t, "kim@example.com", TierPro)
	api, err := f.issuer.IssueAPIToken(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	p, err := f.verifier.Verify(ctx, api.Token)
	if err != nil || p.UserID != u.ID || p.Kind != KindAPI || !p.Allows(ScopeLive) {
		t.Fatalf("api token: %+v %v", p, err)
	}
	_, _, at := f.authorize(t, u, ScopePaper)
	p, err = f.verifier.Verify(ctx, at)
	if err != nil || p.Kind != KindOAuth || p.ClientID != "c1" || !p.Allows(ScopePaper) || p.Allows(ScopeLive) {
		t.Fatalf("oauth token: %+v %v", p, err)
	}
}

// TestVerifierAttacks is the verifier's attack table: every row must be refused.
func TestVerifierAttacks(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	u := f.user(t, "lee@example.com", TierPro)
	other, _ := NewKeyring([]byte("another key that is long enough to sign with!"), nil)
	base := f.claims(u)
	// a live bearer record for base's jti, so only the attack differs
	live := func(c Claims) Claims { f.rdb.Set(ctx, store.Bearer(c.ID), u.ID, time.Hour); return c }
	mod := func(fn func(*Claims)) Claims { c := base; c.ID = RandomToken(16); fn(&c); return live(c) }

	rows := map[string]string{
		"alg none": func() string {
			c := live(mod(func(*Claims) {}))
			return testkit.ForgeJWT(t, jwt.SigningMethodNone, jwt.UnsafeAllowNoneSignatureType, f.keys.KID(), c)
		}(),
		"HS512 with the right key": testkit.ForgeJWT(t, jwt.SigningMethodHS512, testKey, f.keys.KID(), mod(func(*Claims) {})),
		"RS256 header on an HMAC signature (key confusion)": func() string {
			s := testkit.ForgeJWT(t, jwt.SigningMethodHS256, testKey, f.keys.KID(), mod(func(*Claims) {}))
			parts := strings.Split(s, ".")
			parts[0] = "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCJ9" // {"alg":"RS256","typ":"JWT"}
			return strings.Join(parts, ".")
		}(),
		"signed with another key (its kid)": testkit.ForgeJWT(t, jwt.SigningMethodHS256, other.current.secret, other.KID(), mod(func(*Claims) {})),
		"signed with another key (our kid)": testkit.ForgeJWT(t, jwt.SigningMethodHS256, other.current.secret, f.keys.KID(), mod(func(*Claims) {})),
		"no kid":                            testkit.ForgeJWT(t, jwt.SigningMethodHS256, testKey, "", mod(func(*Claims) {})),
		"expired": testkit.ForgeJWT(t, jwt.SigningMethodHS256, testKey, f.keys.KID(), mod(func(c *Claims) {
			c.IssuedAt = jwt.NewNumericDate(f.clk.Now().Add(-2 * time.Hour))
			c.ExpiresAt = jwt.NewNumericDate(f.clk.Now().Add(-time.Hour))
		})),
		"no exp": testkit.ForgeJWT(t, jwt.SigningMethodHS256, testKey, f.keys.KID(), mod(func(c *Claims) { c.ExpiresAt = nil })),
		"issued in the future": testkit.ForgeJWT(t, jwt.SigningMethodHS256, testKey, f.keys.KID(), mod(func(c *Claims) {
			c.IssuedAt = jwt.NewNumericDate(f.clk.Now().Add(time.Hour))
		})),
		"wrong audience":               testkit.ForgeJWT(t, jwt.SigningMethodHS256, testKey, f.keys.KID(), mod(func(c *Claims) { c.Audience = jwt.ClaimStrings{"https://evil/api"} })),
		"no audience":                  testkit.ForgeJWT(t, jwt.SigningMethodHS256, testKey, f.keys.KID(), mod(func(c *Claims) { c.Audience = nil })),
		"wrong issuer":                 testkit.ForgeJWT(t, jwt.SigningMethodHS256, testKey, f.keys.KID(), mod(func(c *Claims) { c.Issuer = "https://evil" })),
		"no jti (deprecated endpoint)": testkit.ForgeJWT(t, jwt.SigningMethodHS256, testKey, f.keys.KID(), mod(func(c *Claims) { c.ID = "" })),
		"legacy token without jti or kind": testkit.ForgeJWT(t, jwt.SigningMethodHS256, testKey, f.keys.KID(), jwt.MapClaims{
			"iss": testIssuer, "sub": u.ID, "aud": testMCP, "iat": f.clk.Now().Unix(), "exp": f.clk.Now().Add(time.Hour).Unix(), "scope": "mcp"}),
		"unknown kind":                      testkit.ForgeJWT(t, jwt.SigningMethodHS256, testKey, f.keys.KID(), mod(func(c *Claims) { c.Kind = "admin" })),
		"api token claiming a scope":        testkit.ForgeJWT(t, jwt.SigningMethodHS256, testKey, f.keys.KID(), mod(func(c *Claims) { c.Scope = "mcp:live" })),
		"oauth token without authorization": testkit.ForgeJWT(t, jwt.SigningMethodHS256, testKey, f.keys.KID(), mod(func(c *Claims) { c.Kind = KindOAuth; c.Scope = "mcp:live"; c.ClientID = "c1" })),
		"oauth token living longer than an hour": testkit.ForgeJWT(t, jwt.SigningMethodHS256, testKey, f.keys.KID(), mod(func(c *Claims) {
			c.Kind, c.Scope, c.ClientID, c.SID = KindOAuth, "mcp:live", "c1", "x"
			c.ExpiresAt = jwt.NewNumericDate(f.clk.Now().Add(2 * time.Hour))
		})),
		"no gen":              testkit.ForgeJWT(t, jwt.SigningMethodHS256, testKey, f.keys.KID(), mod(func(c *Claims) { c.Gen = 0 })),
		"stale gen":           testkit.ForgeJWT(t, jwt.SigningMethodHS256, testKey, f.keys.KID(), mod(func(c *Claims) { c.Gen = 7 })),
		"unknown user":        testkit.ForgeJWT(t, jwt.SigningMethodHS256, testKey, f.keys.KID(), mod(func(c *Claims) { c.Subject = "ghost" })),
		"bearer never issued": testkit.ForgeJWT(t, jwt.SigningMethodHS256, testKey, f.keys.KID(), func() Claims { c := base; c.ID = "never"; return c }()),
		"truncated":           "eyJhbGciOiJIUzI1NiJ9.e30",
		"garbage":             "not a token",
		"empty":               "",
		"huge":                strings.Repeat("a", 5000),
		"signature stripped": func() string {
			s := testkit.ForgeJWT(t, jwt.SigningMethodHS256, testKey, f.keys.KID(), mod(func(*Claims) {}))
			return s[:strings.LastIndex(s, ".")+1]
		}(),
	}
	for name, tok := range rows {
		if p, err := f.verifier.Verify(ctx, tok); err == nil || !errors.Is(err, ErrInvalidToken) {
			t.Errorf("%s: accepted (%+v) or wrong error %v", name, p, err)
		}
	}
	// Control: the same construction with nothing wrong passes.
	if _, err := f.verifier.Verify(ctx, testkit.ForgeJWT(t, jwt.SigningMethodHS256, testKey, f.keys.KID(), mod(func(*Claims) {}))); err != nil {
		t.Fatalf("control token refused: %v", err)
	}
}

func TestVerifierRevocationAndCacheBound(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	u := f.user(t, "max@example.com", TierPro)
	id, _, at := f.authorize(t, u, ScopeLive)
	_, _, sibling := f.authorize(t, u, ScopeLive)
	if _, err := f.verifier.Verify(ctx, at); err != nil {
		t.Fatal(err)
	}
	// Revoked elsewhere (another replica): this verifier may serve its cached fact for less
	// than a second, never longer.
	if err := f.oauth.RevokeAuthorization(ctx, u.ID, id); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(500 * time.Millisecond)
	if _, err := f.verifier.Verify(ctx, at); err != nil {
		t.Fatalf("within the cache bound the cached fact may stand: %v", err)
	}
	f.clk.Advance(500 * time.Millisecond)
	if _, err := f.verifier.Verify(ctx, at); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("revocation not effective after 1 s: %v", err)
	}
	if _, err := f.verifier.Verify(ctx, sibling); err != nil {
		t.Fatalf("another authorization suffered: %v", err)
	}
	// Per-jti revocation, and Purge makes it immediate here.
	p, _ := f.verifier.Verify(ctx, sibling)
	if err := f.oauth.RevokeAccessToken(ctx, p.JTI, p.ExpiresAt); err != nil {
		t.Fatal(err)
	}
	f.verifier.Purge()
	if _, err := f.verifier.Verify(ctx, sibling); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("revoked jti: %v", err)
	}
}

func TestBearerIdleWindowSlides(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	u := f.user(t, "ned@example.com", TierFree)
	api, _ := f.issuer.IssueAPIToken(ctx, u)
	key := store.Bearer(mustJTI(t, f, api.Token))
	// Let the record age, then a use slides it back to a full 7 days.
	f.rdb.Expire(ctx, key, time.Hour)
	f.verifier.Purge()
	if _, err := f.verifier.Verify(ctx, api.Token); err != nil {
		t.Fatal(err)
	}
	if ttl, _ := f.rdb.TTL(ctx, key).Result(); ttl < APITokenIdle-time.Minute {
		t.Fatalf("not slid: %v", ttl)
	}
	// Gone (idle too long, or logged out): refused.
	if err := f.issuer.RevokeAPIToken(ctx, mustJTI(t, f, api.Token)); err != nil {
		t.Fatal(err)
	}
	f.verifier.Purge()
	if _, err := f.verifier.Verify(ctx, api.Token); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("revoked bearer: %v", err)
	}
	// Absolute cap: 30 days after issue even an active token expires.
	api, _ = f.issuer.IssueAPIToken(ctx, u)
	f.clk.Advance(APITokenMaxLifetime + time.Second)
	if _, err := f.verifier.Verify(ctx, api.Token); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("bearer past its exp: %v", err)
	}
}

func mustJTI(t *testing.T, f *fixture, tok string) string {
	t.Helper()
	p, err := f.verifier.Verify(t.Context(), tok)
	if err != nil {
		t.Fatal(err)
	}
	return p.JTI
}

func TestKeyRotation(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	u := f.user(t, "ola@example.com", TierPro)
	oldTok, _ := f.issuer.IssueAPIToken(ctx, u)
	newKey := []byte("the next signing key, also at least 32 bytes")
	rotated, err := NewKeyring(newKey, testKey)
	if err != nil {
		t.Fatal(err)
	}
	iss := NewIssuer(IssuerOptions{Redis: f.rdb, Keys: rotated, Issuer: testIssuer, APIAudience: testAPI, Now: f.clk.Now})
	v, _ := NewVerifier(VerifierOptions{Redis: f.rdb, Keys: rotated, Issuer: testIssuer, Audiences: []string{testAPI}, Now: f.clk.Now})
	newTok, _ := iss.IssueAPIToken(ctx, u)
	for name, tok := range map[string]string{"old key": oldTok.Token, "new key": newTok.Token} {
		if _, err := v.Verify(ctx, tok); err != nil {
			t.Errorf("%s during rotation: %v", name, err)
		}
	}
	// After the previous key is dropped, its tokens die.
	done, _ := NewKeyring(newKey, nil)
	v2, _ := NewVerifier(VerifierOptions{Redis: f.rdb, Keys: done, Issuer: testIssuer, Audiences: []string{testAPI}, Now: f.clk.Now})
	if _, err := v2.Verify(ctx, oldTok.Token); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("old key after rotation: %v", err)
	}
	if _, err := NewKeyring([]byte("too short"), nil); err == nil {
		t.Fatal("short key accepted")
	}
}

// A token Parse has checked once is remembered by its whole text: what differs from it by
// a byte is checked afresh (a forged signature, claims changed under the same signature),
// and the remembered token itself is refused once it expires.
func TestParseRemembersOnlyTheExactTokenUntilItExpires(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	u := f.user(t, "max@example.com", TierPro)
	_, _, at := f.authorize(t, u, ScopeRead)
	p, err := f.verifier.Parse(at)
	if err != nil {
		t.Fatal(err)
	}
	p.UserID = "someone-else" // a caller's change of its copy reaches nobody else
	again, err := f.verifier.Parse(at)
	if err != nil || again.UserID != u.ID || again.Scope != ScopeRead {
		t.Fatalf("second parse: %+v %v", again, err)
	}

	parts := strings.Split(at, ".")
	sig := []byte(parts[2])
	sig[len(sig)/2] ^= 1
	forged := parts[0] + "." + parts[1] + "." + string(sig)
	claims := base64Claims(t, parts[1], func(m map[string]any) { m["scope"] = ScopeLive })
	for name, tok := range map[string]string{"signature changed": forged,
		"scope raised under the same signature": parts[0] + "." + claims + "." + parts[2]} {
		if _, err := f.verifier.Parse(tok); !errors.Is(err, ErrInvalidToken) {
			t.Fatalf("%s: %v", name, err)
		}
	}

	// Stage reads the token's live state with the user's identity in the caller's pipeline.
	pipe := f.rdb.Pipeline()
	st := f.verifier.Stage(ctx, pipe, again)
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if id, err := st.Identity(); err != nil || id.Email != "max@example.com" || id.Tier.Name != "Pro" {
		t.Fatalf("staged: %+v %v", id, err)
	}

	f.clk.Advance(AccessTokenLifetime)
	if _, err := f.verifier.Parse(at); !errors.Is(err, ErrInvalidToken) {
		t.Fatalf("expired token: %v", err)
	}
}

// base64Claims is a JWT's claims segment changed by fn.
func base64Claims(t *testing.T, seg string, fn func(map[string]any)) string {
	t.Helper()
	raw, err := base64.RawURLEncoding.DecodeString(seg)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	fn(m)
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(out)
}
