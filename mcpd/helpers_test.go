package mcpd_test

import (
	"github.com/sigops/sigops/runtime/executor"

	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/mcpd"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/store/storetest"
)

const (
	testBase     = "https://sigops.test"
	testAPI      = testBase + "/api"
	testMCPURL   = "https://mcp.sigops.test"
	testResource = testMCPURL + "/mcp"
	testMetadata = testMCPURL + "/.well-known/oauth-protected-resource"
)

var testKey = []byte("0123456789abcdef0123456789abcdef-mcpd-test-key")

// fixture is authd's stores on real Redis, to sign callers in, and the keys mcpd verifies
// their tokens with.
type fixture struct {
	rdb    redis.UniversalClient
	clk    *testkit.Clock
	keys   *auth.Keyring
	users  *auth.Users
	oauth  *auth.OAuth
	issuer *auth.Issuer
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	_, rdb := storetest.New(t)
	return newFixtureOn(t, rdb)
}

// newFixtureOn is newFixture on a Redis of the caller's.
func newFixtureOn(t testing.TB, rdb redis.UniversalClient) *fixture {
	t.Helper()
	clk := testkit.NewClock(time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC))
	keys, err := auth.NewKeyring(testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{rdb: rdb, clk: clk, keys: keys,
		users:  auth.NewUsers(rdb, auth.UsersOptions{KDF: auth.TestKDF, Now: clk.Now}),
		oauth:  auth.NewOAuth(rdb, auth.OAuthOptions{Now: clk.Now}),
		issuer: auth.NewIssuer(auth.IssuerOptions{Redis: rdb, Keys: keys, Issuer: testBase, APIAudience: testAPI, Now: clk.Now})}
}

// serve starts one mcpd replica over TLS on the fixture's Redis; with adjusts its options.
func (f *fixture) serve(t testing.TB, with ...func(*mcpd.Options)) *httptest.Server {
	t.Helper()
	ts := httptest.NewTLSServer(f.server(t, with...).Handler())
	t.Cleanup(ts.Close)
	return ts
}

// server is an mcpd server on the fixture's Redis; with adjusts its options.
func (f *fixture) server(t testing.TB, with ...func(*mcpd.Options)) *mcpd.Server {
	t.Helper()
	v, err := auth.NewVerifier(auth.VerifierOptions{Redis: f.rdb, Keys: f.keys, Issuer: testBase,
		Audiences: []string{testResource, testAPI}, CacheTTL: time.Nanosecond, Now: f.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	o := mcpd.Options{Redis: f.rdb, BaseURL: testBase, MCPURL: testMCPURL, Verifier: v, Users: f.users, OAuth: f.oauth,
		Logger: slog.New(slog.DiscardHandler), Now: f.clk.Now,
		// Previews on paper accounts at no prices: a test that sizes orders sets its own.
		Previews: executor.New(executor.Deps{Redis: f.rdb, Prices: prices{}, Logger: slog.New(slog.DiscardHandler), Now: f.clk.Now})}
	for _, fn := range with {
		fn(&o)
	}
	s, err := mcpd.New(o)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *fixture) user(t testing.TB, email, tier string) auth.User {
	t.Helper()
	u, err := f.users.Create(t.Context(), auth.NewUser{Email: email, Name: "Ada", Password: "correct horse battery", Tier: tier})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// bearer is a full-access bearer JWT of u.
func (f *fixture) bearer(t testing.TB, u auth.User) auth.IssuedToken {
	t.Helper()
	tok, err := f.issuer.IssueAPIToken(t.Context(), u)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// oauthToken is an OAuth access token of u for client with scope and audience, from a live
// authorization whose ID is returned for revocation.
func (f *fixture) oauthToken(t testing.TB, u auth.User, clientID, scope, audience string) (auth.IssuedToken, string) {
	t.Helper()
	id := auth.RandomToken(12)
	if _, err := f.oauth.CreateAuthorization(t.Context(), auth.Authorization{ID: id, UserID: u.ID, ClientID: clientID,
		ClientName: "Test agent", Scope: scope, Resource: audience, Gen: u.Generation}); err != nil {
		t.Fatal(err)
	}
	tok, err := f.issuer.IssueAccessToken(auth.AccessTokenRequest{UserID: u.ID, Gen: u.Generation, ClientID: clientID,
		Scope: scope, AuthorizationID: id, Audience: audience})
	if err != nil {
		t.Fatal(err)
	}
	return tok, id
}

// mcpClient is mcp-go's streamable HTTP client for the servers' /mcp with token, initialized
// at protocol version (empty: the newest both sides speak). Successive HTTP requests go to
// the servers in turn, as a load balancer without affinity would send them.
func mcpClient(t testing.TB, token, version string, servers ...*httptest.Server) (*client.Client, *mcp.InitializeResult) {
	t.Helper()
	c, res, _ := mcpClientRR(t, token, version, servers...)
	return c, res
}

// mcpClientRR is mcpClient that also returns its round robin, to count requests per server.
func mcpClientRR(t testing.TB, token, version string, servers ...*httptest.Server) (*client.Client, *mcp.InitializeResult, *testkit.RoundRobin) {
	t.Helper()
	urls := make([]string, len(servers))
	for i, s := range servers {
		urls[i] = s.URL
	}
	rr := testkit.NewRoundRobin(servers[0].Client().Transport, urls...)
	c, res := testkit.MCPClient(t, rr, servers[0].URL+mcpd.Path, token, version, "mcpd-test")
	return c, res, rr
}

// post sends one raw JSON-RPC message to ts's /mcp with token (none when empty).
func post(t testing.TB, ts *httptest.Server, token, body string) (*http.Response, []byte) {
	t.Helper()
	return testkit.PostMCP(t, ts.Client(), ts.URL+mcpd.Path, token, body)
}

// callBody is a tools/call message for tool.
func callBody(tool string) string {
	return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":{}}}`
}

const pingBody = `{"jsonrpc":"2.0","id":1,"method":"ping"}`

func decode(t testing.TB, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("body %q: %v", b, err)
	}
	return m
}

// checkAuth calls check_auth and decodes its structured result.
func checkAuth(t testing.TB, c *client.Client) auth.Status {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = "check_auth"
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	if res.IsError {
		t.Fatalf("check_auth failed: %+v", res.Content)
	}
	checkOutput(t, c, "check_auth", res)
	// The text content is the status's exact JSON; StructuredContent arrives decoded into
	// float64s, which would hide how the balance is written.
	text := res.Content[0].(mcp.TextContent).Text
	var st auth.Status
	if err := json.Unmarshal([]byte(text), &st); err != nil {
		t.Fatal(err)
	}
	return st
}
