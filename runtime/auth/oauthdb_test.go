package auth

import (
	"errors"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// A lost Redis ends every token but loses no registration and no consent: the client is
// recalled with its redirect URIs and secret, the consents are listed, an active one as
// revoked because its tokens are gone, and the app can be authorized again.
func TestRegistrationsAndConsentsSurviveALostRedis(t *testing.T) {
	f := newFixtureOn(t, dbtest.New(t))
	ctx := t.Context()
	c, secret, err := f.oauth.RegisterClient(ctx, ClientMetadata{ClientName: "Agent", RedirectURIs: []string{"https://agent.example/cb"},
		TokenEndpointAuthMethod: AuthMethodBasic})
	if err != nil {
		t.Fatal(err)
	}
	u := f.user(t, "kim@example.com", TierPro)
	revoked, _, _ := f.authorize(t, u, "mcp:read")
	if err := f.oauth.RevokeAuthorization(ctx, u.ID, revoked); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Minute)
	active, refresh, _ := f.authorize(t, u, "mcp:live")
	if err := storetest.FlushAll(ctx, f.rdb); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Minute)

	got, err := f.oauth.GetClient(ctx, c.ID)
	if err != nil || got.Name != "Agent" || !got.CheckSecret(secret) || !got.MatchRedirect("https://agent.example/cb", false) ||
		!got.CreatedAt.Equal(c.CreatedAt) {
		t.Fatalf("client after FLUSHALL: %+v %v", got, err)
	}
	if _, _, err := f.oauth.Rotate(ctx, RotateRequest{Token: refresh, ClientID: "c1"}); !errors.Is(err, ErrGrantUnknown) {
		t.Fatalf("a refresh token after FLUSHALL: %v", err)
	}
	list, err := f.oauth.ListAuthorizations(ctx, u.ID)
	if err != nil || len(list) != 2 || list[0].ID != active || list[1].ID != revoked {
		t.Fatalf("consents after FLUSHALL: %+v %v", list, err)
	}
	if list[0].RevokedReason != TokensLost || list[0].Active(f.clk.Now()) || list[0].Scope != "mcp:live" {
		t.Fatalf("the active consent: %+v", list[0])
	}
	if list[1].RevokedReason != "user" {
		t.Fatalf("the revoked consent: %+v", list[1])
	}
	// The loss is recorded once: listing again shows the same time.
	f.clk.Advance(time.Minute)
	again, _ := f.oauth.ListAuthorizations(ctx, u.ID)
	if len(again) != 2 || !again[0].RevokedAt.Equal(list[0].RevokedAt) {
		t.Fatalf("second list: %+v", again)
	}
	f.authorize(t, u, "mcp:live")
	if len(mustList(t, f, u.ID)) != 3 {
		t.Fatal("a new consent after the loss is not listed")
	}
}

func mustList(t *testing.T, f *fixture, userID string) []Authorization {
	t.Helper()
	list, err := f.oauth.ListAuthorizations(t.Context(), userID)
	if err != nil {
		t.Fatal(err)
	}
	return list
}

// PostgreSQL down: a registration or a new consent answers SERVICE_UNAVAILABLE and exists
// nowhere; a client Redis holds is read, a refresh token rotates, a revocation works.
func TestOAuthWithPostgreSQLDown(t *testing.T) {
	url := dbtest.NewURL(t)
	f := newFixtureOn(t, dbtest.Pool(t, url))
	ctx := t.Context()
	c, _, err := f.oauth.RegisterClient(ctx, ClientMetadata{ClientName: "Agent", RedirectURIs: []string{"https://agent.example/cb"}})
	if err != nil {
		t.Fatal(err)
	}
	u := f.user(t, "lee@example.com", TierPro)
	id, refresh, _ := f.authorize(t, u, "mcp:read")

	down := dbtest.Pool(t, url)
	down.Close()
	f.oauth = NewOAuth(f.rdb, OAuthOptions{Now: f.clk.Now, DB: down})
	if _, _, err := f.oauth.RegisterClient(ctx, ClientMetadata{ClientName: "Other", RedirectURIs: []string{"https://o.example/cb"}}); errs.CodeOf(err) != errs.ServiceUnavailable {
		t.Fatalf("register with PostgreSQL down: %v", err)
	}
	if _, err := f.oauth.CreateAuthorization(ctx, Authorization{ID: RandomToken(16), UserID: u.ID, ClientID: c.ID,
		ClientName: "Agent", Scope: "mcp:read", Resource: testMCP, Gen: u.Generation}); errs.CodeOf(err) != errs.ServiceUnavailable {
		t.Fatalf("a new consent with PostgreSQL down: %v", err)
	}
	if _, err := f.oauth.GetClient(ctx, c.ID); err != nil {
		t.Fatalf("a cached client: %v", err)
	}
	if _, _, err := f.oauth.Rotate(ctx, RotateRequest{Token: refresh, ClientID: "c1"}); err != nil {
		t.Fatalf("rotate with PostgreSQL down: %v", err)
	}
	if err := f.oauth.RevokeAuthorization(ctx, u.ID, id); err != nil {
		t.Fatalf("revoke with PostgreSQL down: %v", err)
	}
	if list := mustList(t, f, u.ID); len(list) != 1 || list[0].RevokedReason != "user" {
		t.Fatalf("list with PostgreSQL down: %+v", list)
	}
}
