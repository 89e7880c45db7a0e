package mcpd_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/mcpd"
	"github.com/sigops/sigops/runtime/auth"
)

// liveTool is a test-only tool that needs mcp:live.
var liveTool = mcpd.Tool{Def: mcp.NewTool("test_live", mcp.WithDescription("needs mcp:live")), Scope: auth.ScopeLive,
	Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("live ok"), nil
	}}

func withLiveTool(o *mcpd.Options) { o.Tools = append(o.Tools, liveTool) }

func TestInitializeAndListTools(t *testing.T) {
	f := newFixture(t)
	ts := f.serve(t)
	u := f.user(t, "ada@example.com", auth.TierPro)
	tok := f.bearer(t, u)

	for _, version := range []string{mcp.ProtocolVersion20250618, ""} {
		c, init := mcpClient(t, tok.Token, version, ts)
		if version != "" && init.ProtocolVersion != version {
			t.Fatalf("negotiated %q, want %q", init.ProtocolVersion, version)
		}
		if init.ServerInfo.Name != "sigops" {
			t.Fatalf("server name %q", init.ServerInfo.Name)
		}
		res, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		var check *mcp.Tool
		for i := range res.Tools {
			names = append(names, res.Tools[i].Name)
			if res.Tools[i].Name == "check_auth" {
				check = &res.Tools[i]
			}
		}
		slices.Sort(names)
		if want := []string{"authenticate", "cancel_order", "check_auth", "close_all_positions", "close_position", "get_balances",
			"get_bot", "get_bot_analytics", "get_bot_risk", "get_exchange_connection", "get_order", "get_paper_account",
			"get_portfolio", "get_position", "get_signal", "list_bots", "list_exchange_connections", "list_open_orders",
			"list_orders", "list_paper_accounts", "list_positions", "list_signals", "list_trades", "login", "logout",
			"place_order", "refill_paper_account", "send_signal", "set_stop_loss", "set_take_profit", "set_token"}; !slices.Equal(names, want) {
			t.Fatalf("version %q: tools %v, want %v", version, names, want)
		}
		// Every read tool says it changes nothing and declares what it answers.
		for _, tool := range res.Tools {
			if !strings.HasPrefix(tool.Name, "get_") && !strings.HasPrefix(tool.Name, "list_") {
				continue
			}
			if ro := tool.Annotations.ReadOnlyHint; ro == nil || !*ro || tool.OutputSchema.Type != "object" || tool.Description == "" {
				t.Errorf("%s: annotations %+v, output schema %+v", tool.Name, tool.Annotations, tool.OutputSchema)
			}
		}
		a := check.Annotations
		if a.ReadOnlyHint == nil || !*a.ReadOnlyHint || a.DestructiveHint == nil || *a.DestructiveHint ||
			a.IdempotentHint == nil || !*a.IdempotentHint || a.Title != "Check authentication" {
			t.Fatalf("check_auth annotations %+v", a)
		}
		out, _ := json.Marshal(check.OutputSchema)
		if !strings.Contains(string(out), `"strategyLabBalanceUsd"`) || !strings.Contains(string(out), `"allowMcpServer"`) {
			t.Fatalf("check_auth output schema %s", out)
		}
	}
}

func TestCheckAuthBearerJWT(t *testing.T) {
	f := newFixture(t)
	ts := f.serve(t)
	u, err := f.users.Create(t.Context(), auth.NewUser{Email: "Ada@Example.com", Name: "Ada", Password: "correct horse battery",
		Tier: auth.TierPro, Wallet: testkit.D("12.5")})
	if err != nil {
		t.Fatal(err)
	}
	c, _ := mcpClient(t, f.bearer(t, u).Token, mcp.ProtocolVersion20250618, ts)
	st := checkAuth(t, c)
	// 12.5 with two decimals is "12.50"; the e-mail is stored in canonical (lower) case.
	if st.ID != u.ID || st.Name != "Ada" || st.Email != "ada@example.com" || st.TelegramLinked ||
		st.StrategyLabBalanceUsd != "12.50" || st.Tier.Slug != auth.TierPro || !st.Tier.Capabilities.AllowMcpServer ||
		!st.Tier.Capabilities.AllowLiveTrading || st.Token != nil {
		t.Fatalf("status %+v (token %+v)", st, st.Token)
	}
}

func TestCheckAuthOAuthTokenAndCache(t *testing.T) {
	f := newFixture(t)
	ts := f.serve(t)
	u := f.user(t, "ada@example.com", auth.TierFree)
	tok, _ := f.oauthToken(t, u, "client-1", auth.ScopePaper, testResource)
	c, _ := mcpClient(t, tok.Token, mcp.ProtocolVersion20250618, ts)
	st := checkAuth(t, c)
	want := auth.StatusToken{ClientID: "client-1", ClientName: "Test agent", Scope: auth.ScopePaper,
		ExpiresAt: tok.ExpiresAt.UTC().Format(time.RFC3339)}
	if st.Token == nil || *st.Token != want || st.Tier.Slug != auth.TierFree || st.StrategyLabBalanceUsd != "0.00" {
		t.Fatalf("status %+v, token %+v, want %+v", st, st.Token, want)
	}

	// The status is reused for 30 s: a Telegram link shows after that, not before.
	if err := f.users.SetTelegramLinked(t.Context(), u.ID, true); err != nil {
		t.Fatal(err)
	}
	// The wallet is read on every call: a credit of 2.5 shows at once.
	if _, err := f.users.Wallets.Credit(t.Context(), u.ID, testkit.D("2.5")); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(29 * time.Second)
	if st := checkAuth(t, c); st.TelegramLinked || st.StrategyLabBalanceUsd != "2.50" {
		t.Fatalf("within 30 s: telegramLinked %v (want the cached false), wallet %s (want 2.50)", st.TelegramLinked, st.StrategyLabBalanceUsd)
	}
	f.clk.Advance(time.Second)
	if !checkAuth(t, c).TelegramLinked {
		t.Fatal("status not re-read after 30 s")
	}
}

func TestSessionToolsChangeNothing(t *testing.T) {
	f := newFixture(t)
	ts := f.serve(t)
	u := f.user(t, "ada@example.com", auth.TierPro)
	tok := f.bearer(t, u)
	c, _ := mcpClient(t, tok.Token, mcp.ProtocolVersion20250618, ts)
	// Each with its own parameters: arguments are checked strictly (unknown keys refused).
	for name, args := range map[string]map[string]any{"login": {"email": "eve@example.com", "password": "x"},
		"authenticate": {}, "set_token": {"token": "other"}, "logout": nil} {
		req := mcp.CallToolRequest{}
		req.Params.Name = name
		req.Params.Arguments = args
		res, err := c.CallTool(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		text := res.Content[0].(mcp.TextContent).Text
		if res.IsError {
			t.Fatalf("%s: %s", name, text)
		}
		checkOutput(t, c, name, res)
		msg, _ := res.StructuredContent.(map[string]any)["message"].(string)
		if !strings.Contains(text, "nothing was changed") || !strings.Contains(msg, "nothing was changed") {
			t.Fatalf("%s: %+v", name, res)
		}
	}
	// The token still works: logout revoked nothing.
	if checkAuth(t, c).ID != u.ID {
		t.Fatal("token stopped working after logout")
	}
}

func TestUnauthorizedAndMetadata(t *testing.T) {
	f := newFixture(t)
	ts := f.serve(t)
	res, body := post(t, ts, "", pingBody)
	if res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("no token: %d %s", res.StatusCode, body)
	}
	want := `resource_metadata="` + testMetadata + `"`
	// The challenge names the least scope (mcp:read): a host following the MCP scope
	// selection asks for it, not for every scope of the metadata, and steps up on a 403.
	if h := res.Header.Get("WWW-Authenticate"); !strings.HasPrefix(h, "Bearer ") || !strings.Contains(h, want) ||
		strings.Contains(h, "error=") || !strings.Contains(h, `scope="mcp:read"`) {
		t.Fatalf("no token challenge %q", h)
	}
	res, body = post(t, ts, "not-a-jwt", pingBody)
	if h := res.Header.Get("WWW-Authenticate"); res.StatusCode != http.StatusUnauthorized ||
		!strings.Contains(h, `error="invalid_token"`) || !strings.Contains(h, want) {
		t.Fatalf("bad token: %d %q %s", res.StatusCode, h, body)
	}

	for _, path := range []string{mcpd.MetadataPath, mcpd.MetadataResourcePath} {
		res, err := ts.Client().Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		var doc struct {
			Resource             string   `json:"resource"`
			AuthorizationServers []string `json:"authorization_servers"`
			MCPResource          string   `json:"mcp_resource"`
			Scopes               []string `json:"scopes_supported"`
		}
		err = json.NewDecoder(res.Body).Decode(&doc)
		res.Body.Close()
		if err != nil || res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %v", path, res.StatusCode, err)
		}
		if doc.Resource != testResource || !slices.Equal(doc.AuthorizationServers, []string{testBase}) ||
			doc.MCPResource != testResource || !slices.Equal(doc.Scopes, auth.SupportedScopes) {
			t.Fatalf("%s: %+v", path, doc)
		}
	}
}

func TestRefusedTokens(t *testing.T) {
	f := newFixture(t)
	ts := f.serve(t)
	u := f.user(t, "ada@example.com", auth.TierPro)
	ok := func(name, token string) {
		t.Helper()
		if res, body := post(t, ts, token, pingBody); res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", name, res.StatusCode, body)
		}
	}
	refused := func(name, token string) {
		t.Helper()
		res, body := post(t, ts, token, pingBody)
		if res.StatusCode != http.StatusUnauthorized || !strings.Contains(res.Header.Get("WWW-Authenticate"), `error="invalid_token"`) {
			t.Fatalf("%s: %d %q %s", name, res.StatusCode, res.Header.Get("WWW-Authenticate"), body)
		}
	}

	bearer := f.bearer(t, u)
	ok("bearer", bearer.Token)
	if err := f.issuer.RevokeAPIToken(t.Context(), bearer.JTI); err != nil {
		t.Fatal(err)
	}
	// The verifier's cache lives 1 ns here: a millisecond later it asks Redis again.
	f.clk.Advance(time.Millisecond)
	refused("revoked bearer", bearer.Token)

	oauth, authID := f.oauthToken(t, u, "client-1", auth.ScopeRead, testResource)
	ok("oauth", oauth.Token)
	if err := f.oauth.RevokeAuthorization(t.Context(), u.ID, authID); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Millisecond)
	refused("revoked authorization", oauth.Token)

	apiOnly, _ := f.oauthToken(t, u, "client-1", auth.ScopeLive, testAPI)
	refused("OAuth token for the API resource", apiOnly.Token)

	// The deprecated /api/oauth/mcp/token endpoint's tokens carry no jti.
	legacy := jwt.NewWithClaims(jwt.SigningMethodHS256, auth.Claims{RegisteredClaims: jwt.RegisteredClaims{
		Issuer: testBase, Subject: u.ID, Audience: jwt.ClaimStrings{testResource},
		IssuedAt: jwt.NewNumericDate(f.clk.Now()), ExpiresAt: jwt.NewNumericDate(f.clk.Now().Add(time.Hour))},
		Kind: auth.KindOAuth, Scope: auth.ScopeLegacy, ClientID: "client-1", SID: authID, Gen: u.Generation})
	legacy.Header["typ"] = "at+jwt"
	legacy.Header["kid"] = f.keys.KID()
	raw, err := legacy.SignedString(testKey)
	if err != nil {
		t.Fatal(err)
	}
	refused("deprecated token without jti", raw)

	fresh := f.bearer(t, u)
	ok("fresh bearer", fresh.Token)
	if err := f.users.SetPassword(t.Context(), u.ID, "another correct horse"); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(time.Millisecond)
	refused("bearer from before a password change", fresh.Token)
}

func TestInsufficientScope(t *testing.T) {
	f := newFixture(t)
	reg := prometheus.NewRegistry()
	ts := f.serve(t, withLiveTool, func(o *mcpd.Options) { o.Registerer = reg })
	u := f.user(t, "ada@example.com", auth.TierPro)

	paper, _ := f.oauthToken(t, u, "client-1", auth.ScopePaper, testResource)
	res, body := post(t, ts, paper.Token, callBody("test_live"))
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("mcp:paper calling an mcp:live tool: %d %s", res.StatusCode, body)
	}
	if h := res.Header.Get("WWW-Authenticate"); !strings.Contains(h, `error="insufficient_scope"`) ||
		!strings.Contains(h, `scope="mcp:live"`) {
		t.Fatalf("challenge %q", h)
	}
	m := decode(t, body)
	if m["scope"] != auth.ScopeLive || m["tokenScope"] != auth.ScopePaper || m["error"] != "insufficient_scope" {
		t.Fatalf("body %v", m)
	}
	// A tool within the scope is served by the same token.
	if res, body := post(t, ts, paper.Token, callBody("check_auth")); res.StatusCode != http.StatusOK {
		t.Fatalf("check_auth with mcp:paper: %d %s", res.StatusCode, body)
	}

	// mcp:live, the legacy "mcp" (counted as mcp:live) and a bearer JWT reach the tool.
	live, _ := f.oauthToken(t, u, "client-1", auth.ScopeLive, testResource)
	legacy, _ := f.oauthToken(t, u, "client-1", auth.ScopeLegacy, testResource)
	for name, token := range map[string]string{"mcp:live": live.Token, "mcp": legacy.Token, "bearer": f.bearer(t, u).Token} {
		c, _ := mcpClient(t, token, mcp.ProtocolVersion20250618, ts)
		req := mcp.CallToolRequest{}
		req.Params.Name = "test_live"
		out, err := c.CallTool(t.Context(), req)
		if err != nil || out.IsError || out.Content[0].(mcp.TextContent).Text != "live ok" {
			t.Fatalf("%s: %+v %v", name, out, err)
		}
	}
	// One refusal; three tokens reached the tool.
	if n := counter(t, reg, "sigops_mcp_requests_total", "insufficient_scope"); n != 1 {
		t.Fatalf("insufficient_scope refusals %v", n)
	}
	if n := counter(t, reg, "sigops_mcp_tool_calls_total", "ok", "test_live"); n != 3 {
		t.Fatalf("test_live calls %v", n)
	}
}

// counter is the value of the counter name in reg whose label values, in the order of the
// label names sorted (as Gather gives them), are labels.
func counter(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var vals []string
			for _, l := range m.GetLabel() {
				vals = append(vals, l.GetValue())
			}
			if slices.Equal(vals, labels) {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("no %s%v", name, labels)
	return 0
}

func TestTierWithoutMCPServer(t *testing.T) {
	f := newFixture(t)
	u := f.user(t, "ada@example.com", auth.TierFree)
	// Every built-in tier includes the MCP server; this one is the Free tier without it.
	ts := f.serve(t, func(o *mcpd.Options) {
		o.Tier = func(ctx context.Context, id string) (auth.Tier, error) {
			tier, err := f.users.TierOfUser(ctx, id)
			tier.Capabilities.AllowMcpServer = false
			return tier, err
		}
	})
	res, body := post(t, ts, f.bearer(t, u).Token, pingBody)
	m := decode(t, body)
	if res.StatusCode != http.StatusForbidden || m["code"] != "TIER_NOT_ALLOWED" ||
		!strings.Contains(m["error"].(string), "Free tier does not include the MCP server") {
		t.Fatalf("%d %v", res.StatusCode, m)
	}
}

func TestRateLimitAcrossReplicas(t *testing.T) {
	f := newFixture(t)
	limit := func(o *mcpd.Options) { o.RateLimit = 3 }
	a, b := f.serve(t, limit), f.serve(t, limit)
	u := f.user(t, "ada@example.com", auth.TierPro)
	tok, _ := f.oauthToken(t, u, "client-1", auth.ScopeRead, testResource)

	// 3 a minute: two requests on one replica and one on the other use the budget up.
	for i, ts := range []*httptest.Server{a, b, a} {
		if res, body := post(t, ts, tok.Token, pingBody); res.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %d %s", i+1, res.StatusCode, body)
		}
	}
	res, body := post(t, b, tok.Token, pingBody)
	if res.StatusCode != http.StatusTooManyRequests || decode(t, body)["code"] != "RATE_LIMITED" {
		t.Fatalf("4th request: %d %s", res.StatusCode, body)
	}
	// GCRA at 3 a minute frees one request every 60 s / 3 = 20 s; the wait left, a few
	// milliseconds under 20 s, rounds up to 20.
	if ra := res.Header.Get("Retry-After"); ra != "20" {
		t.Fatalf("Retry-After %q, want 20", ra)
	}

	// Another client of the same user, and the user's bearer JWTs, have budgets of their own.
	other, _ := f.oauthToken(t, u, "client-2", auth.ScopeRead, testResource)
	for name, token := range map[string]string{"client-2": other.Token, "bearer": f.bearer(t, u).Token} {
		if res, body := post(t, a, token, pingBody); res.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d %s", name, res.StatusCode, body)
		}
	}
}

// A limit whose script Redis has forgotten (a restarted or flushed server) still counts:
// the request runs the script again by itself.
func TestRateLimitAfterScriptFlush(t *testing.T) {
	f := newFixture(t)
	ts := f.serve(t, func(o *mcpd.Options) { o.RateLimit = 2 })
	u := f.user(t, "ada@example.com", auth.TierPro)
	tok, _ := f.oauthToken(t, u, "client-1", auth.ScopeRead, testResource)
	for i := range 2 {
		if err := f.rdb.ScriptFlush(t.Context()).Err(); err != nil {
			t.Fatal(err)
		}
		if res, body := post(t, ts, tok.Token, pingBody); res.StatusCode != http.StatusOK {
			t.Fatalf("request %d: %d %s", i+1, res.StatusCode, body)
		}
	}
	if err := f.rdb.ScriptFlush(t.Context()).Err(); err != nil {
		t.Fatal(err)
	}
	if res, body := post(t, ts, tok.Token, pingBody); res.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("3rd request: %d %s", res.StatusCode, body)
	}
}

// mcpd asks Redis whether a token is live on every request, whatever the verifier's cache
// time: a revocation made anywhere refuses the very next call on every replica, with the
// clock standing still (a cached answer would still admit it).
func TestRevocationRefusesTheNextCallOnEveryReplica(t *testing.T) {
	f := newFixture(t)
	cached := func(o *mcpd.Options) {
		v, err := auth.NewVerifier(auth.VerifierOptions{Redis: f.rdb, Keys: f.keys, Issuer: testBase,
			Audiences: []string{testResource, testAPI}, CacheTTL: auth.MaxCacheTTL, Now: f.clk.Now})
		if err != nil {
			t.Fatal(err)
		}
		o.Verifier = v
	}
	a, b := f.serve(t, cached), f.serve(t, cached)
	u := f.user(t, "ada@example.com", auth.TierPro)
	status := func(ts *httptest.Server, token string) int {
		t.Helper()
		res, _ := post(t, ts, token, pingBody)
		return res.StatusCode
	}

	sibling, _ := f.oauthToken(t, u, "client-2", auth.ScopeRead, testResource)
	tok, authID := f.oauthToken(t, u, "client-1", auth.ScopeRead, testResource)
	for _, ts := range []*httptest.Server{a, b} {
		if got := status(ts, tok.Token); got != http.StatusOK {
			t.Fatalf("before revocation: %d", got)
		}
	}
	if err := f.oauth.RevokeAccessToken(t.Context(), tok.JTI, tok.ExpiresAt); err != nil {
		t.Fatal(err)
	}
	for i, ts := range []*httptest.Server{a, b} {
		if got := status(ts, tok.Token); got != http.StatusUnauthorized {
			t.Fatalf("replica %d after the token's revocation: %d", i, got)
		}
	}
	// The same for a whole authorization, and a password change, with another client's token.
	if got := status(a, sibling.Token); got != http.StatusOK {
		t.Fatalf("sibling: %d", got)
	}
	if err := f.oauth.RevokeAuthorization(t.Context(), u.ID, authID); err != nil {
		t.Fatal(err)
	}
	if got := status(b, tok.Token); got != http.StatusUnauthorized {
		t.Fatalf("after the authorization's revocation: %d", got)
	}
	if err := f.users.SetPassword(t.Context(), u.ID, "another horse battery"); err != nil {
		t.Fatal(err)
	}
	for i, ts := range []*httptest.Server{a, b} {
		if got := status(ts, sibling.Token); got != http.StatusUnauthorized {
			t.Fatalf("replica %d after a password change: %d", i, got)
		}
	}
}

func TestSessionsAcrossReplicasAndUsers(t *testing.T) {
	f := newFixture(t)
	a, b := f.serve(t), f.serve(t)
	u := f.user(t, "ada@example.com", auth.TierPro)
	bob := f.user(t, "bob@example.com", auth.TierPro)
	tok, _ := f.oauthToken(t, u, "client-1", auth.ScopeRead, testResource)
	// The client initializes on one replica; its next requests, carrying the session ID,
	// alternate between the two.
	c, _, rr := mcpClientRR(t, tok.Token, mcp.ProtocolVersion20250618, a, b)
	if c.GetSessionId() == "" {
		t.Fatal("no session ID issued")
	}
	for range 3 {
		if checkAuth(t, c).ID != u.ID {
			t.Fatal("wrong account")
		}
	}
	if _, err := c.ListTools(t.Context(), mcp.ListToolsRequest{}); err != nil {
		t.Fatal(err)
	}
	if rr.Seen(0) < 2 || rr.Seen(1) < 2 {
		t.Fatalf("requests per replica: %d and %d", rr.Seen(0), rr.Seen(1))
	}

	// A session started on a is served by b for its user, and by nobody for another user.
	res, body := post(t, a, tok.Token, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",`+
		`"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	sid := res.Header.Get("Mcp-Session-Id")
	if res.StatusCode != http.StatusOK || sid == "" {
		t.Fatalf("initialize: %d session %q %s", res.StatusCode, sid, body)
	}
	if v := decode(t, body)["result"].(map[string]any)["protocolVersion"]; v != mcp.ProtocolVersion20250618 {
		t.Fatalf("protocol version %v", v)
	}
	withSession := func(ts *httptest.Server, token, method, id string) int {
		t.Helper()
		var rd io.Reader
		if method == http.MethodPost {
			rd = strings.NewReader(pingBody)
		}
		req, _ := http.NewRequest(method, ts.URL+mcpd.Path, rd)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", id)
		req.Header.Set("Mcp-Protocol-Version", mcp.ProtocolVersion20250618)
		res, err := ts.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res.StatusCode
	}
	bobs := f.bearer(t, bob).Token
	for _, c := range []struct {
		name   string
		ts     *httptest.Server
		token  string
		method string
		id     string
		want   int
	}{
		{"owner on the other replica", b, tok.Token, http.MethodPost, sid, http.StatusOK},
		{"another user's token", b, bobs, http.MethodPost, sid, http.StatusNotFound},
		{"an unknown session", a, tok.Token, http.MethodPost, "mcps_unknown", http.StatusNotFound},
		{"another user ends it", a, bobs, http.MethodDelete, sid, http.StatusNotFound},
		{"still the owner's", a, tok.Token, http.MethodPost, sid, http.StatusOK},
		{"the owner ends it on b", b, tok.Token, http.MethodDelete, sid, http.StatusOK},
		{"ended on both", a, tok.Token, http.MethodPost, sid, http.StatusNotFound},
	} {
		if got := withSession(c.ts, c.token, c.method, c.id); got != c.want {
			t.Fatalf("%s: %d, want %d", c.name, got, c.want)
		}
	}
}

func TestHTTPSRequired(t *testing.T) {
	f := newFixture(t)
	tls := f.serve(t)
	ts := httptest.NewServer(tls.Config.Handler)
	t.Cleanup(ts.Close)
	res, err := http.Post(ts.URL+mcpd.Path, "application/json", strings.NewReader(pingBody))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusForbidden {
		t.Fatalf("plain HTTP: %d", res.StatusCode)
	}
}

func TestScopeCheckReadsTheBody(t *testing.T) {
	f := newFixture(t)
	ts := f.serve(t, withLiveTool)
	u := f.user(t, "ada@example.com", auth.TierPro)
	read, _ := f.oauthToken(t, u, "client-1", auth.ScopeRead, testResource)

	// A batch (revisions before 2025-06-18) needs its highest tool's scope.
	res, body := post(t, ts, read.Token, "["+callBody("check_auth")+","+callBody("test_live")+"]")
	if res.StatusCode != http.StatusForbidden || !strings.Contains(res.Header.Get("WWW-Authenticate"), `scope="mcp:live"`) {
		t.Fatalf("batch: %d %q %s", res.StatusCode, res.Header.Get("WWW-Authenticate"), body)
	}
	// An unknown tool is mcp-go's to answer: a JSON-RPC error, not a scope refusal.
	res, body = post(t, ts, read.Token, callBody("no_such_tool"))
	if res.StatusCode == http.StatusForbidden || !strings.Contains(string(body), `"error"`) {
		t.Fatalf("unknown tool: %d %s", res.StatusCode, body)
	}
	// A body over MaxBodyBytes is refused before it is parsed.
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", mcpd.MaxBodyBytes) + `"}}`
	if res, body := post(t, ts, read.Token, big); res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("large body: %d %s", res.StatusCode, body)
	}
}

func TestRedisUnavailable(t *testing.T) {
	f := newFixture(t)
	u := f.user(t, "ada@example.com", auth.TierPro)
	tok := f.bearer(t, u)
	// A Redis that refuses connections: the token's state cannot be read.
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	t.Cleanup(func() { _ = dead.Close() })
	v, err := auth.NewVerifier(auth.VerifierOptions{Redis: dead, Keys: f.keys, Issuer: testBase, Audiences: []string{testAPI}})
	if err != nil {
		t.Fatal(err)
	}
	ts := f.serve(t, func(o *mcpd.Options) { o.Verifier, o.Redis = v, dead })
	res, body := post(t, ts, tok.Token, pingBody)
	if res.StatusCode != http.StatusServiceUnavailable || decode(t, body)["code"] != "INTERNAL_ERROR" {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
}
