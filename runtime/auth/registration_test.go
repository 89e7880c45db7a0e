package auth

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/store"
)

func TestTakeRegistrationCountsAllOrNone(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	l := NewLimiter(f.rdb)
	narrow := Limit{Kind: "narrow", Max: 2, Window: time.Minute}
	wide := Limit{Kind: "wide", Max: 3, Window: time.Hour}
	for i := range 2 {
		if r, _, err := l.TakeRegistration(ctx, Counter{narrow, "a"}, Counter{wide, "all"}); err != nil || r.Kind != "" {
			t.Fatalf("take %d: %v %v", i, r, err)
		}
	}
	r, retry, err := l.TakeRegistration(ctx, Counter{narrow, "a"}, Counter{wide, "all"})
	if err != nil || r.Kind != "narrow" || retry <= 0 || retry > time.Minute {
		t.Fatalf("narrow limit: %v %v %v", r, retry, err)
	}
	// The refusal spent nothing of the wide budget: one more subject still gets the last slot.
	if n, _ := f.rdb.Get(ctx, store.RegisterRateLimit("wide", "all")).Int(); n != 2 {
		t.Fatalf("wide counter %d after a refusal, want 2", n)
	}
	if r, _, _ := l.TakeRegistration(ctx, Counter{narrow, "b"}, Counter{wide, "all"}); r.Kind != "" {
		t.Fatalf("third registration refused by %v", r)
	}
	r, retry, _ = l.TakeRegistration(ctx, Counter{narrow, "c"}, Counter{wide, "all"})
	if r.Kind != "wide" || retry <= time.Minute || retry > time.Hour {
		t.Fatalf("wide limit: %v %v", r, retry)
	}
	if n, _ := f.rdb.Get(ctx, store.RegisterRateLimit("narrow", "c")).Int(); n != 0 {
		t.Fatalf("refused registration counted against its address: %d", n)
	}
}

func TestRegisterClientSizeLimits(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	uri := func(n int) string { // an https URI of exactly n bytes
		p := "https://app.example.com/"
		return p + strings.Repeat("a", n-len(p))
	}
	meta := func(name string, uris ...string) ClientMetadata {
		return ClientMetadata{ClientName: name, RedirectURIs: uris, TokenEndpointAuthMethod: AuthMethodNone}
	}
	five := []string{uri(100), uri(101), uri(102), uri(103), uri(104)}
	for _, c := range []struct {
		name string
		m    ClientMetadata
		code string
	}{
		{"at the limits", meta(strings.Repeat("n", 64), append(five[:4:4], uri(512))...), ""},
		{"six redirect URIs", meta("x", append(five, uri(105))...), "invalid_redirect_uri"},
		{"a 513-byte redirect URI", meta("x", uri(513)), "invalid_redirect_uri"},
		{"a 65-byte name", meta(strings.Repeat("n", 65), uri(100)), "invalid_client_metadata"},
	} {
		_, _, err := f.oauth.RegisterClient(ctx, c.m)
		var me *MetadataError
		switch {
		case c.code == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.code != "" && (!errors.As(err, &me) || me.Code != c.code):
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
	}
}

// TestUnusedClientExpiresAfterADay: a registration lives 24 h until its first token, then
// the refresh-token lifetime, slid by every grant.
func TestUnusedClientExpiresAfterADay(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	c, _, err := f.oauth.RegisterClient(ctx, ClientMetadata{ClientName: "x", RedirectURIs: []string{"https://a.example/cb"},
		TokenEndpointAuthMethod: AuthMethodNone})
	if err != nil {
		t.Fatal(err)
	}
	ttl := f.rdb.TTL(ctx, store.OAuthClient(c.ID)).Val()
	if ttl <= UnusedClientTTL-time.Minute || ttl > UnusedClientTTL {
		t.Fatalf("new client TTL %v, want about %v", ttl, UnusedClientTTL)
	}
	u := f.user(t, "ttl@example.com", TierFree)
	if _, err := f.oauth.CreateAuthorization(ctx, Authorization{ID: RandomToken(16), UserID: u.ID, ClientID: c.ID,
		ClientName: c.Name, Scope: ScopeRead, Resource: testAPI, Gen: u.Generation}); err != nil {
		t.Fatal(err)
	}
	ttl = f.rdb.TTL(ctx, store.OAuthClient(c.ID)).Val()
	if ttl <= RefreshTokenLifetime-time.Minute || ttl > RefreshTokenLifetime {
		t.Fatalf("client TTL after its first token %v, want about %v", ttl, RefreshTokenLifetime)
	}
}

func TestPendingRequestsCappedPerUser(t *testing.T) {
	f := newFixture(t)
	ctx := t.Context()
	save := func(uid string) string {
		id, err := f.oauth.SavePending(ctx, PendingRequest{ClientID: "c1", RedirectURI: "https://a.example/cb", State: "s",
			Challenge: "ch", Scope: ScopeRead, Resource: testAPI, UserID: uid, SessionHash: "sess"})
		if err != nil {
			t.Fatal(err)
		}
		f.clk.Advance(time.Millisecond) // distinct ages
		return id
	}
	var ids []string
	for range MaxPendingPerUser + 3 {
		ids = append(ids, save("u1"))
	}
	other := save("u2")
	if n := f.rdb.HLen(ctx, store.OAuthPending("u1")).Val(); n != MaxPendingPerUser {
		t.Fatalf("u1 has %d pending requests stored, want %d", n, MaxPendingPerUser)
	}
	for i, id := range ids {
		_, err := f.oauth.GetPending(ctx, "u1", id)
		if dropped := i < 3; dropped != errors.Is(err, ErrNotFound) {
			t.Fatalf("request %d (dropped=%v): %v", i, dropped, err)
		}
	}
	p, err := f.oauth.GetPending(ctx, "u2", other)
	if err != nil || p.ClientID != "c1" || p.UserID != "u2" || p.SessionHash != "sess" || p.ID != other {
		t.Fatalf("other user's request: %+v %v", p, err)
	}
	if _, err := f.oauth.GetPending(ctx, "u2", ids[len(ids)-1]); !errors.Is(err, ErrNotFound) {
		t.Fatal("a user read another user's request")
	}
	// Taken once.
	if _, err := f.oauth.TakePending(ctx, "u1", ids[5]); err != nil {
		t.Fatal(err)
	}
	if _, err := f.oauth.TakePending(ctx, "u1", ids[5]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second take: %v", err)
	}
	// Expired requests are gone, and make room without dropping live ones.
	f.clk.Advance(pendingTTL)
	if _, err := f.oauth.GetPending(ctx, "u1", ids[len(ids)-1]); !errors.Is(err, ErrNotFound) {
		t.Fatalf("expired request: %v", err)
	}
	fresh := save("u1")
	if n := f.rdb.HLen(ctx, store.OAuthPending("u1")).Val(); n != 1 {
		t.Fatalf("expired requests kept: %d stored", n)
	}
	if _, err := f.oauth.GetPending(ctx, "u1", fresh); err != nil {
		t.Fatal(err)
	}
}
