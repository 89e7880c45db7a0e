package readapi_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store/storetest"
	"github.com/sigops/sigops/runtime/trading"
	"github.com/sigops/sigops/runtime/trustedproxy"
	"github.com/sigops/sigops/webhookd"
	"github.com/sigops/sigops/webhookd/readapi"
)

const (
	testBase = "https://sigops.test"
	testAPI  = testBase + "/api"
	testMCP  = "https://mcp.sigops.test/mcp"
)

var testKey = []byte("0123456789abcdef0123456789abcdef-read-api-test-key")

// fixture is the read API behind the real webhookd router, on real Redis, with authd's
// token and session stores to sign callers in.
type fixture struct {
	rdb      redis.UniversalClient
	clk      *testkit.Clock
	users    *auth.Users
	oauth    *auth.OAuth
	sessions *auth.Sessions
	issuer   *auth.Issuer
	reg      *registry.Registry
	url      string
	// handler is webhookd's router, for walking its routes.
	handler http.Handler
}

// newFixture starts the server. with adjusts the read API's options before it is built
// (an endpoint's own services).
func newFixture(t testing.TB, with ...func(*readapi.Options)) *fixture {
	t.Helper()
	return newServedFixture(t, nil, with...)
}

// newServedFixture is newFixture whose webhookd options web adjusts too (the webhook
// endpoint's intake, waiter and symbols); it is given the fixture's Redis.
func newServedFixture(t testing.TB, web func(*webhookd.Options, redis.UniversalClient), with ...func(*readapi.Options)) *fixture {
	t.Helper()
	_, rdb := storetest.New(t)
	clk := testkit.NewClock(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
	keys, err := auth.NewKeyring(testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{rdb: rdb, clk: clk, reg: registry.New(rdb)}
	f.users = auth.NewUsers(rdb, auth.UsersOptions{KDF: auth.TestKDF, Now: clk.Now})
	f.oauth = auth.NewOAuth(rdb, auth.OAuthOptions{Now: clk.Now})
	f.sessions = auth.NewSessions(rdb, clk.Now)
	f.issuer = auth.NewIssuer(auth.IssuerOptions{Redis: rdb, Keys: keys, Issuer: testBase, APIAudience: testAPI, Now: clk.Now})
	verifier, err := auth.NewVerifier(auth.VerifierOptions{Redis: rdb, Keys: keys, Issuer: testBase,
		Audiences: []string{testAPI}, CacheTTL: time.Nanosecond, Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	proxies, err := trustedproxy.Parse("127.0.0.1/32")
	if err != nil {
		t.Fatal(err)
	}
	tr := trading.New(rdb, nil, nil)
	tr.Now = clk.Now
	o := readapi.Options{Redis: rdb, Verifier: verifier, Sessions: f.sessions, Users: f.users,
		ResourceMetadata: testBase + "/.well-known/oauth-protected-resource/api", Proxies: proxies,
		Trading: tr, Logger: slog.New(slog.DiscardHandler), Now: clk.Now}
	for _, fn := range with {
		fn(&o)
	}
	wo := webhookd.Options{TrustedProxies: []netip.Prefix(proxies), Read: readapi.New(o), Now: clk.Now}
	if web != nil {
		web(&wo, rdb)
	}
	srv, err := webhookd.New(wo)
	if err != nil {
		t.Fatal(err)
	}
	f.handler = srv.Handler()
	ts := httptest.NewServer(f.handler)
	t.Cleanup(ts.Close)
	f.url = ts.URL
	return f
}

// user creates an account.
func (f *fixture) user(t testing.TB, email string) auth.User {
	t.Helper()
	u, err := f.users.Create(t.Context(), auth.NewUser{Email: email, Password: "correct horse battery", Tier: "pro"})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// cred adds a caller's credentials to a request.
type cred func(*http.Request)

// bearer is a bearer JWT of u (the dashboard-issued kind).
func (f *fixture) bearer(t testing.TB, u auth.User) cred {
	t.Helper()
	tok, err := f.issuer.IssueAPIToken(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok.Token) }
}

// oauthToken is an OAuth access token of u with scope for audience, from a live
// authorization; its ID is returned for revocation.
func (f *fixture) oauthToken(t testing.TB, u auth.User, scope, audience string) (cred, string) {
	t.Helper()
	id := auth.RandomToken(12)
	if _, err := f.oauth.CreateAuthorization(t.Context(), auth.Authorization{ID: id, UserID: u.ID, ClientID: "client-1",
		ClientName: "Test agent", Scope: scope, Resource: audience, Gen: u.Generation}); err != nil {
		t.Fatal(err)
	}
	tok, err := f.issuer.IssueAccessToken(auth.AccessTokenRequest{UserID: u.ID, Gen: u.Generation, ClientID: "client-1",
		Scope: scope, AuthorizationID: id, Audience: audience})
	if err != nil {
		t.Fatal(err)
	}
	return func(r *http.Request) { r.Header.Set("Authorization", "Bearer "+tok.Token) }, id
}

// session is a dashboard session cookie of u.
func (f *fixture) session(t testing.TB, u auth.User) cred {
	t.Helper()
	raw, _, err := f.sessions.Create(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	return func(r *http.Request) { r.AddCookie(&http.Cookie{Name: auth.SessionCookie, Value: raw}) }
}

// response is an answer of the server.
type response struct {
	status int
	header http.Header
	body   []byte
}

// decode unmarshals the body into v.
func (r response) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("body %s: %v", r.body, err)
	}
}

// okData is the data of a 200 success envelope, decoded into T; anything else fails t.
func okData[T any](t testing.TB, r response) T {
	t.Helper()
	if r.status != http.StatusOK {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	var body struct {
		Success bool
		Data    T
	}
	r.decode(t, &body)
	if !body.Success {
		t.Fatalf("body %s", r.body)
	}
	return body.Data
}

// get requests path as a client behind the trusted proxy over HTTPS.
func (f *fixture) get(t testing.TB, path string, creds ...cred) response {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, f.url+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Forwarded-Proto", "https")
	for _, c := range creds {
		c(req)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: body}
}

// projectBot projects a paper bot of owner into Redis as the controller does.
func (f *fixture) projectBot(t testing.TB, id, owner, accountID string) registry.Bot {
	t.Helper()
	bot := registry.Bot{ID: id, Namespace: "default", Name: "bot-" + id, Owner: owner,
		Account: registry.Account{Kind: registry.AccountPaper, Name: "paper-" + accountID, ID: accountID}, Market: "spot", Symbol: "BTC/USDT",
		PositionSize: "10%", Leverage: 1, Availability: "active", WebhookEnabled: true}
	if err := f.reg.Project(t.Context(), bot, "hash-"+id); err != nil {
		t.Fatal(err)
	}
	return bot
}
