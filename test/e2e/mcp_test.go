package e2e_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/shopspring/decimal"
	"golang.org/x/oauth2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/authd"
	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/mcpd"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/candles"
	"github.com/sigops/sigops/runtime/exchange/connectors"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/lab"
	"github.com/sigops/sigops/runtime/portfolio"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/risk"
	"github.com/sigops/sigops/runtime/signal"
)

// The hosted MCP server's origin, as the tokens' audience names it; the replicas are served
// on loopback addresses of their own and share it, as replicas behind one host do.
const (
	mcpOrigin   = "https://mcp.sigops.test"
	mcpResource = mcpOrigin + mcpd.Path
	mcpMetadata = mcpOrigin + mcpd.MetadataPath
	// agentPassword is the password of the accounts these tests log in with.
	agentPassword = "correct horse battery"
)

var (
	// authdTS is authd on TLS; its URL is {base_url}, the tokens' issuer.
	authdTS *httptest.Server
	// mcpReplicas are two mcpd servers on the same Redis, keys and URLs.
	mcpReplicas [2]*httptest.Server
	// mcpClock is authd's and mcpd's clock: the wall clock, moved on to expire tokens.
	mcpClock *testkit.Clock
	// mcpKey is authd's signing key (the deprecated-token test signs with it).
	mcpKey []byte
)

// scopeTools are test-only tools whose scope is above mcp:read, so that the refusals are
// checked whichever of the action tools are registered.
var scopeTools = []mcpd.Tool{testTool("e2e_paper_action", auth.ScopePaper), testTool("e2e_live_action", auth.ScopeLive)}

func testTool(name, scope string) mcpd.Tool {
	f, t := false, true
	return mcpd.Tool{Def: mcp.NewTool(name, mcp.WithDescription("test-only: needs "+scope),
		mcp.WithToolAnnotation(mcp.ToolAnnotation{ReadOnlyHint: &f, DestructiveHint: &f, IdempotentHint: &t, OpenWorldHint: &f}),
		mcp.WithRawOutputSchema(json.RawMessage(`{"type":"object","properties":{"ok":{"type":"boolean"}}}`))),
		Scope: scope, Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return mcp.NewToolResultStructured(map[string]any{"ok": true}, `{"ok":true}`), nil
		}}
}

// startMCP serves authd and two mcpd replicas over TLS on the suite's Redis, with one
// signing key, issuer and MCP origin, reaching exchange connections through clients as the
// executor does; it returns what stops them. ctx bounds the replicas' result waiters.
func startMCP(ctx context.Context, log *slog.Logger, clients *connectors.Clients) (func(), error) {
	mcpKey = make([]byte, 32)
	if _, err := rand.Read(mcpKey); err != nil {
		return nil, err
	}
	keys, err := auth.NewKeyring(mcpKey, nil)
	if err != nil {
		return nil, err
	}
	mcpClock = testkit.WallClock()
	// The listener exists before the server starts, so authd learns its own origin.
	authdTS = httptest.NewUnstartedServer(nil)
	base := "https://" + authdTS.Listener.Addr().String()
	as, err := authd.New(authd.Options{Redis: rdb, Keys: keys, BaseURL: base, MCPURL: mcpOrigin,
		KDF: auth.KDFParams{MemoryKiB: 64, Time: 1, Threads: 1}, Logger: log, Now: mcpClock.Now})
	if err != nil {
		return nil, err
	}
	authdTS.Config.Handler = as.Handler()
	authdTS.StartTLS()
	stop := []func(){authdTS.Close}
	for i := range mcpReplicas {
		// The verifier's cache bound is the production one (auth.MaxCacheTTL): the
		// revocation test moves the clock past it.
		v, err := auth.NewVerifier(auth.VerifierOptions{Redis: rdb, Keys: keys, Issuer: base,
			Audiences: []string{mcpResource, base + "/api"}, Now: mcpClock.Now})
		if err != nil {
			return nil, err
		}
		// Each replica receives the results of its own send_signal calls with wait.
		waiter, err := queue.NewWaiter(ctx, rdb, fmt.Sprintf("e2e-mcp-%d", i))
		if err != nil {
			return nil, err
		}
		s, err := mcpd.New(mcpd.Options{Redis: rdb, BaseURL: base, MCPURL: mcpOrigin, Verifier: v, Users: users,
			OAuth: auth.NewOAuth(rdb, auth.OAuthOptions{Now: mcpClock.Now}), Trading: api,
			Portfolio: portfolio.New(portfolio.Options{Redis: rdb, Prices: prices, Clients: clients}), Exchanges: clients,
			// send_signal resolves symbols as webhookd does and waits for results.
			Symbols: func() *signal.Symbols { return paperSymbols }, Waiter: waiter,
			// get_candles over the paper catalogue with the simulated market as the source.
			Candles: candles.New(candles.Options{Redis: rdb, Symbols: func() *signal.Symbols { return paperSymbols },
				Fallback: prices, Logger: log}),
			// generate_strategy; no engine runs here, so jobs stay queued.
			Lab: lab.New(lab.Options{Redis: rdb, Users: users, Now: mcpClock.Now}),
			// The bot tools change SignalBots on the suite's API server, which the manager
			// reconciles into the registry the read tools see.
			Fleet: fleet.New(fleet.Options{Client: k8s, Redis: rdb}),
			// Dry runs and connected apps' live entries are sized by the executor's own
			// code on the same venues as the suite's executor (paper accounts, and
			// exchange connections through clients), so that what a policy admits is the
			// order the executor then places.
			Previews: executor.New(executor.Deps{Redis: rdb, Prices: prices, Logger: log, Venues: &executor.Paper{Redis: rdb,
				Prices: prices, Live: &executor.LiveVenues{Redis: rdb, Clients: clients}}}),
			Tools: scopeTools, Logger: log, Now: mcpClock.Now})
		if err != nil {
			return nil, err
		}
		mcpReplicas[i] = httptest.NewTLSServer(s.Handler())
		stop = append(stop, mcpReplicas[i].Close)
	}
	return func() {
		for _, s := range stop {
			s()
		}
	}, nil
}

// allTools are the 45 tools of the hosted MCP server.
var allTools = []string{
	// session
	"check_auth", "login", "authenticate", "set_token", "logout",
	// reads
	"list_bots", "get_bot", "get_bot_risk", "get_bot_analytics", "list_positions", "get_position", "get_order",
	"list_orders", "list_open_orders", "list_trades", "get_signal", "list_signals", "get_portfolio", "get_balances",
	"get_candles", "get_ticker", "list_symbols", "get_symbol_info", "list_exchange_connections",
	"get_exchange_connection", "list_paper_accounts", "get_paper_account", "get_webhook_url",
	"get_strategy_job", "list_strategy_jobs",
	// bots
	"create_bot", "update_bot", "delete_bot", "pause_bot", "resume_bot", "regenerate_webhook",
	// trading
	"send_signal", "place_order", "cancel_order", "close_position", "close_all_positions",
	"set_stop_loss", "set_take_profit", "refill_paper_account",
	// Strategy Lab
	"generate_strategy",
}

// agent is what an MCP client holds after signing in by OAuth: its registration, tokens
// and the user's browser session (for Connected Apps).
type agent struct {
	cfg     *oauth2.Config
	tok     *oauth2.Token
	browser *http.Client
	user    auth.User
}

// newAgentUser creates an account of tier team (allowMcpServer) that logs in with
// agentPassword.
func newAgentUser(t *testing.T, email string) auth.User {
	t.Helper()
	u, err := users.Create(t.Context(), auth.NewUser{Email: email, Name: "Agent Owner", Password: agentPassword, Tier: auth.TierTeam})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

var (
	csrfRe    = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
	requestRe = regexp.MustCompile(`name="request" value="([^"]+)"`)
	nextRe    = regexp.MustCompile(`name="next" value="([^"]+)"`)
)

func formField(t *testing.T, re *regexp.Regexp, page string) string {
	t.Helper()
	m := re.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no %s in page:\n%s", re, page)
	}
	return html.UnescapeString(m[1])
}

// browse sends req with the browser's cookies, not following redirects.
func browse(t *testing.T, b *http.Client, method, u string, form url.Values) (*http.Response, string) {
	t.Helper()
	if strings.HasPrefix(u, "/") {
		u = authdTS.URL + u
	}
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(t.Context(), method, u, body)
	if err != nil {
		t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := b.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	return resp, string(page)
}

// signIn does what an agent and its user do: discovery from the MCP server's 401, dynamic
// registration of a public client, authorization with PKCE S256 and a loopback redirect,
// login and consent by the HTML forms, and the code exchange.
func signIn(t *testing.T, u auth.User, scope string) *agent {
	t.Helper()
	ctx := t.Context()
	hc := authdTS.Client()

	// The MCP server's 401 names its metadata; the metadata names the authorization server.
	res, _ := postMCP(t, mcpReplicas[0], "", pingBody)
	if h := res.Header.Get("WWW-Authenticate"); res.StatusCode != http.StatusUnauthorized ||
		!strings.Contains(h, `resource_metadata="`+mcpMetadata+`"`) {
		t.Fatalf("no token: %d %q", res.StatusCode, h)
	}
	var prm struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	getJSON(t, mcpReplicas[1].Client(), mcpReplicas[1].URL+mcpd.MetadataPath, &prm)
	if prm.Resource != mcpResource || !slices.Equal(prm.AuthorizationServers, []string{authdTS.URL}) {
		t.Fatalf("protected resource metadata %+v", prm)
	}
	var as struct {
		AuthorizationEndpoint string `json:"authorization_endpoint"`
		TokenEndpoint         string `json:"token_endpoint"`
		RegistrationEndpoint  string `json:"registration_endpoint"`
	}
	getJSON(t, hc, authdTS.URL+"/.well-known/oauth-authorization-server", &as)

	// Dynamic registration: a public client with a loopback redirect.
	reg, _ := json.Marshal(map[string]any{"client_name": "E2E Agent", "redirect_uris": []string{"http://127.0.0.1/callback"},
		"token_endpoint_auth_method": "none"})
	resp, err := hc.Post(as.RegistrationEndpoint, "application/json", strings.NewReader(string(reg)))
	if err != nil {
		t.Fatal(err)
	}
	var client struct {
		ClientID string `json:"client_id"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&client)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || client.ClientID == "" {
		t.Fatalf("register: %d %+v", resp.StatusCode, client)
	}
	// RFC 8252 §7.3: the loopback redirect may use any port.
	cfg := &oauth2.Config{ClientID: client.ClientID, RedirectURL: "http://127.0.0.1:49152/callback", Scopes: []string{scope},
		Endpoint: oauth2.Endpoint{AuthURL: as.AuthorizationEndpoint, TokenURL: as.TokenEndpoint, AuthStyle: oauth2.AuthStyleInParams}}

	// Not logged in: authorize sends the browser to the login form, and back after it.
	jar, _ := cookiejar.New(nil)
	b := &http.Client{Transport: hc.Transport, Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	verifier := oauth2.GenerateVerifier()
	authURL := cfg.AuthCodeURL("state-1", oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", mcpResource))
	resp, _ = browse(t, b, http.MethodGet, authURL, nil)
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/login?next=") {
		t.Fatalf("authorize before login: %d %s", resp.StatusCode, loc)
	}
	_, page := browse(t, b, http.MethodGet, resp.Header.Get("Location"), nil)
	resp, _ = browse(t, b, http.MethodPost, "/login", url.Values{"csrf_token": {formField(t, csrfRe, page)},
		"next": {formField(t, nextRe, page)}, "email": {u.Email}, "password": {agentPassword}})
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/api/oauth/authorize?") {
		t.Fatalf("login: %d %s", resp.StatusCode, loc)
	}
	resp, _ = browse(t, b, http.MethodGet, resp.Header.Get("Location"), nil)
	if loc := resp.Header.Get("Location"); !strings.HasPrefix(loc, "/oauth/consent") {
		t.Fatalf("authorize after login: %d %s", resp.StatusCode, loc)
	}
	_, page = browse(t, b, http.MethodGet, resp.Header.Get("Location"), nil)
	for _, want := range []string{"E2E Agent", scope} {
		if !strings.Contains(page, want) {
			t.Fatalf("consent page lacks %q", want)
		}
	}
	resp, _ = browse(t, b, http.MethodPost, "/oauth/consent", url.Values{"csrf_token": {formField(t, csrfRe, page)},
		"request": {formField(t, requestRe, page)}, "action": {"approve"}})
	back, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || back.Host != "127.0.0.1:49152" || back.Query().Get("state") != "state-1" || back.Query().Get("code") == "" {
		t.Fatalf("redirect back: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, hc), back.Query().Get("code"), oauth2.VerifierOption(verifier))
	if err != nil {
		t.Fatal(err)
	}
	if tok.AccessToken == "" || tok.RefreshToken == "" || tok.Extra("scope") != scope {
		t.Fatalf("token %+v", tok)
	}
	return &agent{cfg: cfg, tok: tok, browser: b, user: u}
}

func getJSON(t *testing.T, hc *http.Client, u string, v any) {
	t.Helper()
	resp, err := hc.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d", u, resp.StatusCode)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// mcpSession is mcp-go's streamable HTTP client with token, initialized; its requests go
// to the two replicas in turn.
func mcpSession(t *testing.T, token string) (*client.Client, *testkit.RoundRobin) {
	t.Helper()
	rr := testkit.NewRoundRobin(mcpReplicas[0].Client().Transport, mcpReplicas[0].URL, mcpReplicas[1].URL)
	c, _ := testkit.MCPClient(t, rr, mcpReplicas[0].URL+mcpd.Path, token, mcp.LATEST_PROTOCOL_VERSION, "e2e-agent")
	return c, rr
}

// call calls tool with args and decodes the text content (the structured content's exact
// JSON) into v; it fails the test on an error result.
func call(t *testing.T, c *client.Client, tool string, args map[string]any, v any) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	text := res.Content[0].(mcp.TextContent).Text
	if res.IsError || res.StructuredContent == nil {
		t.Fatalf("%s: error result %s", tool, text)
	}
	if err := json.Unmarshal([]byte(text), v); err != nil {
		t.Fatalf("%s: %v in %s", tool, err, text)
	}
}

const pingBody = `{"jsonrpc":"2.0","id":1,"method":"ping"}`

func callBody(tool string, args map[string]any) string {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": "tools/call",
		"params": map[string]any{"name": tool, "arguments": args}})
	return string(b)
}

// postMCP sends one raw JSON-RPC message to ts's /mcp with token (none when empty).
func postMCP(t *testing.T, ts *httptest.Server, token, body string) (*http.Response, []byte) {
	t.Helper()
	return testkit.PostMCP(t, ts.Client(), ts.URL+mcpd.Path, token, body)
}

// An agent signs in by OAuth, then one MCP session spread over both replicas lists every
// tool with its schemas and annotations and calls check_auth.
func TestMCPAgentSignsInAndListsTools(t *testing.T) {
	a := signIn(t, newAgentUser(t, "agent@example.com"), auth.ScopeRead)
	c, rr := mcpSession(t, a.tok.AccessToken)

	var st struct {
		Email string `json:"email"`
		Token struct {
			ClientID, Scope string
		} `json:"token"`
	}
	// initialize went to the first replica; the calls alternate from the second on.
	for range 2 {
		call(t, c, "check_auth", nil, &st)
		if st.Email != "agent@example.com" || st.Token.ClientID != a.cfg.ClientID || st.Token.Scope != auth.ScopeRead {
			t.Fatalf("check_auth = %+v", st)
		}
	}

	// tools/list as raw JSON: the schemas exactly as served.
	res, body := postMCP(t, mcpReplicas[1], a.tok.AccessToken, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("tools/list: %d %s", res.StatusCode, body)
	}
	var list struct {
		Result struct {
			Tools []struct {
				Name         string         `json:"name"`
				Description  string         `json:"description"`
				InputSchema  map[string]any `json:"inputSchema"`
				OutputSchema map[string]any `json:"outputSchema"`
				Annotations  map[string]any `json:"annotations"`
			} `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		t.Fatal(err)
	}
	served := map[string]bool{}
	for _, tool := range list.Result.Tools {
		served[tool.Name] = true
		if tool.Description == "" || tool.InputSchema["type"] != "object" || tool.OutputSchema["type"] != "object" {
			t.Errorf("%s: description %q, input schema %v, output schema %v", tool.Name, tool.Description, tool.InputSchema, tool.OutputSchema)
		}
		for _, hint := range []string{"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"} {
			if _, ok := tool.Annotations[hint].(bool); !ok {
				t.Errorf("%s: no %s", tool.Name, hint)
			}
		}
	}
	var missing, extra []string
	for _, name := range allTools {
		if !served[name] {
			missing = append(missing, name)
		}
		delete(served, name)
	}
	for _, tool := range scopeTools {
		delete(served, tool.Def.Name)
	}
	for name := range served {
		extra = append(extra, name)
	}
	if len(allTools) != 45 || len(missing) > 0 || len(extra) > 0 {
		t.Errorf("tools/list: %d of the %d tools served; missing %v; not expected %v",
			len(allTools)-len(missing), len(allTools), missing, extra)
	}
	// Stateless: the session's requests reached both replicas.
	if rr.Seen(0) < 1 || rr.Seen(1) < 1 || rr.Seen(0)+rr.Seen(1) < 3 {
		t.Fatalf("requests per replica: %d and %d", rr.Seen(0), rr.Seen(1))
	}
}

// wantChallenge checks a 403 insufficient_scope naming scope.
func wantInsufficient(t *testing.T, res *http.Response, body []byte, scope string) {
	t.Helper()
	h := res.Header.Get("WWW-Authenticate")
	if res.StatusCode != http.StatusForbidden || !strings.HasPrefix(h, "Bearer ") ||
		!strings.Contains(h, `error="insufficient_scope"`) || !strings.Contains(h, `scope="`+scope+`"`) {
		t.Fatalf("want 403 insufficient_scope %s: %d %q %s", scope, res.StatusCode, h, body)
	}
}

// Tokens from the real flow are held to their scope before mcp-go sees the call.
func TestMCPScopeRefusals(t *testing.T) {
	u := newAgentUser(t, "scoped@example.com")
	read := signIn(t, u, auth.ScopeRead)
	paper := signIn(t, u, auth.ScopePaper)
	_, botID := deployFor(t, u.Email, &tradingv1.SignalBot{ObjectMeta: metav1.ObjectMeta{Name: "scoped"},
		Spec: tradingv1.SignalBotSpec{Symbol: "BTC/USDT"}})

	res, body := postMCP(t, mcpReplicas[0], read.tok.AccessToken, callBody("e2e_paper_action", nil))
	wantInsufficient(t, res, body, auth.ScopePaper)
	res, body = postMCP(t, mcpReplicas[1], paper.tok.AccessToken, callBody("e2e_live_action", nil))
	wantInsufficient(t, res, body, auth.ScopeLive)
	// Within its scope the same token is served.
	if res, body := postMCP(t, mcpReplicas[0], paper.tok.AccessToken, callBody("e2e_paper_action", nil)); res.StatusCode != http.StatusOK {
		t.Fatalf("mcp:paper on an mcp:paper tool: %d %s", res.StatusCode, body)
	}
	// Actions on a paper bot need mcp:paper (each checked once its tool is registered).
	res, body = postMCP(t, mcpReplicas[0], read.tok.AccessToken, `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("tools/list: %d", res.StatusCode)
	}
	checked := 0
	for _, tool := range []string{"pause_bot", "place_order", "close_all_positions"} {
		if !strings.Contains(string(body), `"name":"`+tool+`"`) {
			continue
		}
		res, refused := postMCP(t, mcpReplicas[1], read.tok.AccessToken, callBody(tool, map[string]any{"botId": botID}))
		wantInsufficient(t, res, refused, auth.ScopePaper)
		checked++
	}
	t.Logf("%d action tools refused on a paper bot", checked)
}

// A refresh after the access token expired gets a new one without consent; revoking the app
// in Connected Apps ends the session at its next call, with the challenge naming the
// metadata, and ends the refresh chain.
func TestMCPRefreshAndRevocationMidSession(t *testing.T) {
	a := signIn(t, newAgentUser(t, "revoker@example.com"), auth.ScopeRead)
	c, _ := mcpSession(t, a.tok.AccessToken)
	var st struct{ Email string }
	call(t, c, "check_auth", nil, &st)

	// An hour later the access token has expired (1 h lifetime): 401, invalid_token.
	mcpClock.Advance(61 * time.Minute)
	res, body := postMCP(t, mcpReplicas[0], a.tok.AccessToken, pingBody)
	if h := res.Header.Get("WWW-Authenticate"); res.StatusCode != http.StatusUnauthorized ||
		!strings.Contains(h, `error="invalid_token"`) || !strings.Contains(h, `resource_metadata="`+mcpMetadata+`"`) {
		t.Fatalf("expired token: %d %q %s", res.StatusCode, h, body)
	}
	// The refresh grant: a plain POST to the token endpoint, no browser, no consent.
	expired := *a.tok
	expired.Expiry = time.Now().Add(-time.Minute)
	fresh, err := a.cfg.TokenSource(context.WithValue(t.Context(), oauth2.HTTPClient, authdTS.Client()), &expired).Token()
	if err != nil {
		t.Fatal(err)
	}
	if fresh.AccessToken == a.tok.AccessToken || fresh.RefreshToken == a.tok.RefreshToken || fresh.Extra("scope") != auth.ScopeRead {
		t.Fatalf("refreshed token %+v", fresh)
	}
	c, _ = mcpSession(t, fresh.AccessToken)
	call(t, c, "check_auth", nil, &st)
	if st.Email != "revoker@example.com" {
		t.Fatalf("check_auth after refresh = %+v", st)
	}

	// Revocation in Connected Apps, with the session cookie and its CSRF field.
	_, page := browse(t, a.browser, http.MethodGet, "/dashboard/settings/connected-apps", nil)
	authID := formField(t, regexp.MustCompile(regexp.QuoteMeta(a.cfg.ClientID)+`[\s\S]*?name="authorization" value="([^"]+)"`), page)
	resp, _ := browse(t, a.browser, http.MethodPost, "/dashboard/settings/connected-apps/revoke",
		url.Values{"csrf_token": {formField(t, csrfRe, page)}, "authorization": {authID}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("revoke: %d", resp.StatusCode)
	}
	// The replicas' verifiers reuse Redis facts for at most auth.MaxCacheTTL.
	mcpClock.Advance(auth.MaxCacheTTL + 100*time.Millisecond)
	req := mcp.CallToolRequest{}
	req.Params.Name = "check_auth"
	if res, err := c.CallTool(t.Context(), req); err == nil {
		t.Fatalf("the session's next call after revocation succeeded: %+v", res)
	}
	for _, replica := range mcpReplicas {
		res, body := postMCP(t, replica, fresh.AccessToken, callBody("check_auth", nil))
		if h := res.Header.Get("WWW-Authenticate"); res.StatusCode != http.StatusUnauthorized ||
			!strings.HasPrefix(h, "Bearer ") || !strings.Contains(h, `resource_metadata="`+mcpMetadata+`"`) {
			t.Fatalf("revoked token: %d %q %s", res.StatusCode, h, body)
		}
	}
	revoked := *fresh
	revoked.Expiry = time.Now().Add(-time.Minute)
	if _, err := a.cfg.TokenSource(context.WithValue(t.Context(), oauth2.HTTPClient, authdTS.Client()), &revoked).Token(); err == nil ||
		!strings.Contains(err.Error(), "invalid_grant") {
		t.Fatalf("refresh after revocation: %v", err)
	}
}

// The deprecated token endpoint issues nothing, and a token of its shape (no jti) signed
// with the real key is refused by mcpd with 401.
func TestMCPDeprecatedTokenRefused(t *testing.T) {
	u := newAgentUser(t, "legacy@example.com")
	resp, err := authdTS.Client().PostForm(authdTS.URL+"/api/oauth/mcp/token", url.Values{"grant_type": {"authorization_code"}})
	if err != nil {
		t.Fatal(err)
	}
	var oe struct {
		Error string `json:"error"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&oe)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || oe.Error != "invalid_request" {
		t.Fatalf("deprecated endpoint: %d %+v", resp.StatusCode, oe)
	}
	keys, err := auth.NewKeyring(mcpKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := mcpClock.Now()
	legacy := testkit.ForgeJWT(t, jwt.SigningMethodHS256, mcpKey, keys.KID(), auth.Claims{RegisteredClaims: jwt.RegisteredClaims{
		Issuer: authdTS.URL, Subject: u.ID, Audience: jwt.ClaimStrings{mcpResource},
		IssuedAt: jwt.NewNumericDate(now), ExpiresAt: jwt.NewNumericDate(now.Add(time.Hour))},
		Kind: auth.KindOAuth, Scope: auth.ScopeLive, ClientID: "legacy-client", Gen: u.Generation})
	for _, replica := range mcpReplicas {
		res, body := postMCP(t, replica, legacy, callBody("check_auth", nil))
		if h := res.Header.Get("WWW-Authenticate"); res.StatusCode != http.StatusUnauthorized || !strings.Contains(h, `error="invalid_token"`) {
			t.Fatalf("legacy token: %d %q %s", res.StatusCode, h, body)
		}
	}
}

// A paper bot after a webhook fill, read through MCP: get_bot, list_positions and
// get_bot_risk, every figure to the decimal and equal to the REST read API's.
func TestMCPPipelineFiguresMatchReadAPI(t *testing.T) {
	u := newAgentUser(t, "mcp-trader@example.com")
	path, botID := deployFor(t, u.Email, &tradingv1.SignalBot{ObjectMeta: metav1.ObjectMeta{Name: "mcp-reader"},
		Spec: tradingv1.SignalBotSpec{Symbol: "BTC/USDT",
			Risk: tradingv1.RiskSpec{MaxExposure: "0.5", DailyLossLimit: "100", MaxConsecutiveLosses: 5}}})
	// A limit buy fills at once at its price, fee 0.1 %: 0.02 × 60,000 = 1,200 + fee 1.2;
	// balance 10,000 − 1,201.2 = 8,798.8.
	if r := send(t, path, `{"action":"buy","symbol":"BTCUSDT","size":"0.02","price":"60000"}`); r.Status != 200 || !r.Body.Success {
		t.Fatalf("buy: %+v", r)
	}
	mustEqual(t, "balance", decimal.RequireFromString(balance(t, botID)), "8798.8")
	pin(t, "BTC/USDT", "60500")

	a := signIn(t, u, auth.ScopeRead)
	c, _ := mcpSession(t, a.tok.AccessToken)

	var bot registry.Bot
	call(t, c, "get_bot", map[string]any{"botId": botID}, &bot)
	if bot.ID != botID || bot.Name != "mcp-reader" || bot.Symbol != "BTC/USDT" || bot.Account.Kind != "paper" ||
		bot.Availability != "active" {
		t.Fatalf("get_bot = %+v", bot)
	}

	// The open long at 60,500: pnl 0.02 × (60,500 − 60,000) = 10 before exit fees; 10 over
	// the 1,200 margin = 0.8333 % → 0.83.
	var ps struct {
		Positions  []position.View `json:"positions"`
		NextCursor string          `json:"nextCursor"`
	}
	call(t, c, "list_positions", map[string]any{"botId": botID}, &ps)
	if len(ps.Positions) != 1 || ps.NextCursor != "" {
		t.Fatalf("list_positions = %+v", ps)
	}
	p := ps.Positions[0]
	mustEqual(t, "size", p.Size.Decimal, "0.02")
	mustEqual(t, "entry", p.EntryPrice.Decimal, "60000")
	mustEqual(t, "current", p.CurrentPrice.Decimal, "60500")
	mustEqual(t, "pnl", p.Pnl.Decimal, "10")
	mustEqual(t, "pnlPercent", p.PnlPercent.Decimal, "0.83")
	mustEqual(t, "margin", p.Margin.Decimal, "1200")
	if p.Side != "long" || p.Symbol != "BTC/USDT" || p.Leverage != 1 {
		t.Fatalf("position = %+v", p)
	}
	// The same position in the REST portfolio.
	token := bearerOf(t, u.Email)
	var pf portfolio.Portfolio
	if st := read(t, "/api/user/portfolio", token, &pf); st != 200 || len(pf.Accounts) != 1 || len(pf.Accounts[0].Positions) != 1 {
		t.Fatalf("portfolio: %d %+v", st, pf)
	}
	rp := pf.Accounts[0].Positions[0]
	for name, pair := range map[string][2]decimal.Decimal{"size": {rp.Size.Decimal, p.Size.Decimal}, "entry": {rp.EntryPrice.Decimal, p.EntryPrice.Decimal},
		"current": {rp.CurrentPrice.Decimal, p.CurrentPrice.Decimal}, "pnl": {rp.Pnl.Decimal, p.Pnl.Decimal}, "pnlPercent": {rp.PnlPercent.Decimal, p.PnlPercent.Decimal},
		"margin": {rp.Margin.Decimal, p.Margin.Decimal}} {
		if !pair[0].Equal(pair[1]) {
			t.Errorf("%s: REST %s, MCP %s", name, pair[0], pair[1])
		}
	}

	// Risk: exposure = margin 1,200 / (free 8,798.8 + 1,200) = 0.12001440… → 0.120014; no
	// loss. Score: ratios 0.240029 (exposure / 0.5), 0, 0; 0.7 × 0.240029 + 0.3 × 0.080010
	// = 0.192023; 1 + floor(9 × 0.192023 = 1.728) = 2, low.
	var rm risk.BotMetrics
	call(t, c, "get_bot_risk", map[string]any{"botId": botID}, &rm)
	mustEqual(t, "currentExposure", rm.CurrentExposure.Decimal, "0.120014")
	mustEqual(t, "maxExposureAllowed", rm.MaxExposureAllowed.Decimal, "0.5")
	mustEqual(t, "dailyLossLimit", rm.DailyLossLimit.Decimal, "100")
	mustEqual(t, "dailyLossUsed", rm.DailyLossUsed.Decimal, "0")
	if rm.BotID != botID || rm.ConsecutiveLosses != 0 || rm.MaxConsecutiveLosses != 5 || rm.RiskScore != 2 || rm.RiskLevel != "low" {
		t.Fatalf("get_bot_risk = %+v", rm)
	}
	var rest risk.BotMetrics
	if st := read(t, "/api/botsvc/bots/"+botID+"/risk", token, &rest); st != 200 {
		t.Fatalf("REST risk: %d", st)
	}
	mcpJSON, _ := json.Marshal(rm)
	restJSON, _ := json.Marshal(rest)
	if string(mcpJSON) != string(restJSON) {
		t.Fatalf("get_bot_risk %s, REST %s", mcpJSON, restJSON)
	}

	// Another user's token sees the bot as missing.
	other := signIn(t, newAgentUser(t, "mcp-other@example.com"), auth.ScopeRead)
	oc, _ := mcpSession(t, other.tok.AccessToken)
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "get_bot_risk", map[string]any{"botId": botID}
	res, err := oc.CallTool(t.Context(), req)
	if err != nil || !res.IsError || !strings.Contains(res.Content[0].(mcp.TextContent).Text, `"NOT_FOUND"`) {
		t.Fatalf("another user's get_bot_risk: %+v, %v", res, err)
	}
}
