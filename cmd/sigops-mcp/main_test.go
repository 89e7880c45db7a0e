package main_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/authd"
	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/mcpd"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// binary is sigops-mcp built once for the package's tests, with buildFlags (-race under
// go test -race, so that the bridge's goroutines are checked too).
var (
	binary     string
	buildFlags []string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "sigops-mcp-bin")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "sigops-mcp")
	out, err := exec.Command("go", append([]string{"build", "-o", binary}, append(buildFlags, ".")...)...).CombinedOutput()
	if err != nil {
		os.RemoveAll(dir)
		panic("go build: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var testKey = []byte("0123456789abcdef0123456789abcdef-stdio-test-key")

const password = "correct horse battery staple"

type swap struct{ h http.Handler }

func (s *swap) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.h.ServeHTTP(w, r) }

// liveTool is a hosted test tool that needs mcp:live.
var liveTool = mcpd.Tool{Def: mcp.NewTool("test_live", mcp.WithDescription("needs mcp:live")), Scope: auth.ScopeLive,
	Handler: func(context.Context, mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return mcp.NewToolResultText("live ok"), nil
	}}

// stack is authd and mcpd over TLS on loopback on one real Redis, sharing a clock that the
// tests move to expire access tokens.
type stack struct {
	rdb          redis.UniversalClient
	clk          *testkit.Clock
	users        *auth.Users
	oauth        *auth.OAuth
	issuer       *auth.Issuer
	reg          *registry.Registry
	authd, mcpd  *httptest.Server
	caFile, base string
}

func newStack(t testing.TB) *stack {
	t.Helper()
	_, rdb := storetest.New(t)
	keys, err := auth.NewKeyring(testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := &stack{rdb: rdb, clk: testkit.NewClock(time.Now().Truncate(time.Second)), reg: registry.New(rdb)}
	aSw, mSw := &swap{h: http.NotFoundHandler()}, &swap{h: http.NotFoundHandler()}
	st.authd, st.mcpd = httptest.NewUnstartedServer(aSw), httptest.NewUnstartedServer(mSw)
	st.authd.StartTLS()
	st.mcpd.StartTLS()
	t.Cleanup(st.authd.Close)
	t.Cleanup(st.mcpd.Close)
	st.base = st.authd.URL
	quiet := slog.New(slog.DiscardHandler)
	a, err := authd.New(authd.Options{Redis: rdb, Keys: keys, BaseURL: st.base, MCPURL: st.mcpd.URL, KDF: auth.TestKDF,
		Now: st.clk.Now, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	aSw.h = a.Handler()
	st.users = auth.NewUsers(rdb, auth.UsersOptions{KDF: auth.TestKDF, Now: st.clk.Now})
	st.oauth = auth.NewOAuth(rdb, auth.OAuthOptions{Now: st.clk.Now})
	st.issuer = auth.NewIssuer(auth.IssuerOptions{Redis: rdb, Keys: keys, Issuer: st.base, APIAudience: st.base + "/api", Now: st.clk.Now})
	v, err := auth.NewVerifier(auth.VerifierOptions{Redis: rdb, Keys: keys, Issuer: st.base,
		Audiences: []string{st.mcpd.URL + "/mcp", st.base + "/api"}, CacheTTL: time.Nanosecond, Now: st.clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	m, err := mcpd.New(mcpd.Options{Redis: rdb, BaseURL: st.base, MCPURL: st.mcpd.URL, Verifier: v, Users: st.users,
		OAuth: st.oauth, Bots: st.reg, Logger: quiet, Now: st.clk.Now, Tools: []mcpd.Tool{liveTool}})
	if err != nil {
		t.Fatal(err)
	}
	mSw.h = m.Handler()
	// Both servers present httptest's self-signed certificate: the CA file the binary trusts.
	st.caFile = filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(st.caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: st.authd.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestModernAgent is an agent speaking 2026-07-28 (no initialize handshake, notifications
// by subscription): it sees the hosted tools appear and calls one.
func TestModernAgent(t *testing.T) {
	st := newStack(t)
	st.user(t, "ada@example.com")
	st.project(t, "ada-btc", "ada@example.com")
	a := st.startAt(t, mcp.ProtocolVersion20260728)
	if got := a.toolNames(t); !slices.Equal(got, ownTools) {
		t.Fatalf("tools before login: %v", got)
	}
	ok[signedIn](t, a, "login", map[string]any{"email": "ada@example.com", "password": password})
	a.waitChanged(t, 1)
	if got := a.toolNames(t); !slices.Contains(got, "list_bots") {
		t.Fatalf("tools after login: %v", got)
	}
	if res, text := a.call(t, "list_bots", map[string]any{}); res.IsError || !strings.Contains(text, `"ada-btc"`) {
		t.Fatalf("list_bots: %s", text)
	}
}

func (st *stack) user(t testing.TB, email string) auth.User {
	t.Helper()
	u, err := st.users.Create(t.Context(), auth.NewUser{Email: email, Name: "Test", Password: password, Tier: auth.TierPro})
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// agent is the binary as a desktop agent runs it, with its MCP client on its stdio.
type agent struct {
	c       *client.Client
	changed atomic.Int64 // notifications/tools/list_changed received
	stderr  *testkit.LogBuffer
}

// start runs sigops-mcp against st with HOME and the XDG directories in an empty directory,
// and checks at the end that the binary wrote nothing there.
func (st *stack) start(t testing.TB) *agent {
	t.Helper()
	return st.startAt(t, mcp.ProtocolVersion20250618)
}

// startAt is start with the agent speaking protocol version.
func (st *stack) startAt(t testing.TB, version string) *agent {
	t.Helper()
	home := t.TempDir()
	env := []string{"HOME=" + home, "XDG_CONFIG_HOME=" + home + "/config", "XDG_CACHE_HOME=" + home + "/cache",
		"XDG_DATA_HOME=" + home + "/data", "XDG_STATE_HOME=" + home + "/state", "TMPDIR=" + home,
		"SIGOPS_BASE_URL=", "SIGOPS_MCP_URL=", "SIGOPS_CA_FILE="}
	a := &agent{stderr: &testkit.LogBuffer{}}
	c, err := client.NewStdioMCPClientWithOptions(binary, env, []string{"--base-url", st.base, "--ca-file", st.caFile},
		transport.WithCommandStderrWriter(a.stderr))
	if err != nil {
		t.Fatal(err)
	}
	a.c = c
	t.Cleanup(func() {
		_ = c.Close()
		entries, err := os.ReadDir(home)
		if err != nil || len(entries) != 0 {
			t.Errorf("sigops-mcp wrote to its home directory: %v %v", entries, err)
		}
		if a.stderr.Contains("DATA RACE") || a.stderr.Contains("panic:") {
			t.Error("sigops-mcp raced or panicked")
		}
		if t.Failed() {
			t.Logf("sigops-mcp stderr:\n%s", a.stderr.String())
		}
	})
	c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationToolsListChanged) {
			a.changed.Add(1)
		}
	})
	res := testkit.InitializeMCP(t, c, version, "desktop-agent-test", 20*time.Second)
	if res.Capabilities.Tools == nil || !res.Capabilities.Tools.ListChanged || res.ProtocolVersion != version {
		t.Fatalf("initialize %s: tools capability %+v: want listChanged", res.ProtocolVersion, res.Capabilities.Tools)
	}
	if mcp.IsModernProtocol(version) {
		// From 2026-07-28 a client opts in to list_changed on a subscriptions/listen stream.
		stop, err := c.ListenAsync(t.Context(), mcp.SubscriptionFilter{ToolsListChanged: true}, func(error) {})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(stop)
	}
	return a
}

func (a *agent) call(t testing.TB, tool string, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	res, err := a.c.CallTool(ctx, req)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d contents", tool, len(res.Content))
	}
	return res, res.Content[0].(mcp.TextContent).Text
}

// ok calls tool expecting success and decodes its text (the exact JSON).
func ok[T any](t testing.TB, a *agent, tool string, args map[string]any) T {
	t.Helper()
	res, text := a.call(t, tool, args)
	if res.IsError {
		t.Fatalf("%s failed: %s", tool, text)
	}
	var v T
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatalf("%s: %v in %s", tool, err, text)
	}
	return v
}

type toolError struct {
	Code        string         `json:"code"`
	NumericCode int            `json:"numericCode"`
	Message     string         `json:"message"`
	Details     map[string]any `json:"details"`
}

// refused calls tool expecting an error result and decodes its error object.
func refused(t testing.TB, a *agent, tool string, args map[string]any) toolError {
	t.Helper()
	res, text := a.call(t, tool, args)
	if !res.IsError {
		t.Fatalf("%s succeeded: %s", tool, text)
	}
	var e toolError
	if err := json.Unmarshal([]byte(text), &e); err != nil {
		t.Fatalf("%s: %v in %s", tool, err, text)
	}
	return e
}

func (a *agent) toolNames(t testing.TB) []string {
	t.Helper()
	res, err := a.c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names
}

// waitChanged waits for the n-th tools/list_changed notification.
func (a *agent) waitChanged(t testing.TB, n int64) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for a.changed.Load() < n {
		if time.Now().After(deadline) {
			t.Fatalf("tools/list_changed: %d received, want %d", a.changed.Load(), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// hosted is a direct streamable HTTP client of mcpd with token: what the binary must
// answer unchanged.
func (st *stack) hosted(t testing.TB, token string) *client.Client {
	t.Helper()
	c, err := client.NewStreamableHttpClient(st.mcpd.URL+"/mcp", transport.WithHTTPBasicClient(st.mcpd.Client()),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + token}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	req := mcp.InitializeRequest{}
	req.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	if _, err := c.Initialize(t.Context(), req); err != nil {
		t.Fatal(err)
	}
	return c
}

var ownTools = []string{"authenticate", "check_auth", "login", "logout", "set_token"}

// signedIn is the answer of login and set_token.
type signedIn struct {
	Authenticated bool   `json:"authenticated"`
	Method        string `json:"method"`
	Tools         int    `json:"tools"`
}

func (st *stack) project(t testing.TB, id, owner string) {
	t.Helper()
	b := registry.Bot{ID: id, Namespace: "trading", Name: "bot " + id, Owner: owner,
		Account: registry.Account{Kind: registry.AccountPaper, Name: "main"}, Market: "spot", Symbol: "BTC/USDT",
		PositionSize: "10%", Leverage: 1, Availability: "active", WebhookEnabled: true,
		Risk: registry.Risk{MaxExposure: "0.8", DailyLossLimit: "100", MaxConsecutiveLosses: 4}}
	if err := st.reg.Project(t.Context(), b, "hash-"+id); err != nil {
		t.Fatal(err)
	}
}

func TestLoginForwardsHostedToolsAndLogoutRefuses(t *testing.T) {
	st := newStack(t)
	st.user(t, "ada@example.com")
	st.project(t, "ada-btc", "ada@example.com")
	a := st.start(t)

	// Before any token: the five own tools only, and check_auth says how to sign in.
	if got := a.toolNames(t); !slices.Equal(got, ownTools) {
		t.Fatalf("tools before login: %v", got)
	}
	e := refused(t, a, "check_auth", nil)
	if e.Code != "UNAUTHORIZED" || e.NumericCode != 2001 || !strings.Contains(e.Message, "call login") {
		t.Fatalf("check_auth without token: %+v", e)
	}
	if e := refused(t, a, "login", map[string]any{"email": "ada@example.com", "password": "wrong password"}); e.Code != "UNAUTHORIZED" {
		t.Fatalf("wrong password: %+v", e)
	}
	if got := a.toolNames(t); len(got) != len(ownTools) {
		t.Fatalf("a refused login registered tools: %v", got)
	}

	in := ok[signedIn](t, a, "login", map[string]any{"email": "ada@example.com", "password": password})
	if !in.Authenticated || in.Method != "login" || in.Tools == 0 {
		t.Fatalf("login: %+v", in)
	}
	a.waitChanged(t, 1)
	me := ok[auth.Status](t, a, "check_auth", nil)
	if me.Email != "ada@example.com" || me.Tier.Slug != auth.TierPro || me.Token != nil {
		t.Fatalf("check_auth after login: %+v", me)
	}

	// The forwarded tools carry the hosted definitions exactly, and their answers too.
	tok, err := st.issuer.IssueAPIToken(t.Context(), st.userByEmail(t, "ada@example.com"))
	if err != nil {
		t.Fatal(err)
	}
	direct := st.hosted(t, tok.Token)
	want, err := direct.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got, err := a.c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	// The hosted server also lists placeholders of the session tools (login, authenticate,
	// set_token, logout: they only point to sigops-mcp) and check_auth; sigops-mcp serves
	// those five itself and forwards all the others (the hosted server here has no candles
	// service, Lab or Fleet, whose tools are left out).
	var hostedNames, gotNames []string
	for _, x := range want.Tools {
		hostedNames = append(hostedNames, x.Name)
	}
	for _, x := range got.Tools {
		gotNames = append(gotNames, x.Name)
	}
	slices.Sort(hostedNames)
	slices.Sort(gotNames)
	if !slices.Equal(gotNames, hostedNames) || in.Tools != len(want.Tools)-len(ownTools) {
		t.Fatalf("tools through sigops-mcp %v (login said %d), hosted %v", gotNames, in.Tools, hostedNames)
	}
	byName := map[string]mcp.Tool{}
	for _, tl := range got.Tools {
		byName[tl.Name] = tl
	}
	for _, w := range want.Tools {
		g, found := byName[w.Name]
		if !found {
			t.Errorf("hosted tool %s not forwarded", w.Name)
			continue
		}
		if slices.Contains(ownTools, w.Name) && w.Name != "check_auth" {
			continue
		}
		if w.Name == "check_auth" {
			if !strings.HasPrefix(g.Description, w.Description) {
				t.Errorf("check_auth description %q", g.Description)
			}
			g.Description = w.Description
		}
		wj, _ := json.Marshal(w)
		gj, _ := json.Marshal(g)
		if string(wj) != string(gj) {
			t.Errorf("tool %s through sigops-mcp:\n%s\nhosted:\n%s", w.Name, gj, wj)
		}
	}

	res, text := a.call(t, "list_bots", map[string]any{})
	req := mcp.CallToolRequest{}
	req.Params.Name = "list_bots"
	req.Params.Arguments = map[string]any{}
	hres, err := direct.CallTool(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	htext := hres.Content[0].(mcp.TextContent).Text
	if res.IsError || text != htext || !strings.Contains(text, `"ada-btc"`) {
		t.Fatalf("list_bots through sigops-mcp %s\nhosted %s", text, htext)
	}
	gs, _ := json.Marshal(res.StructuredContent)
	hs, _ := json.Marshal(hres.StructuredContent)
	if string(gs) != string(hs) {
		t.Fatalf("structured content %s, hosted %s", gs, hs)
	}
	// A hosted refusal comes back unchanged too.
	if e := refused(t, a, "get_bot", map[string]any{"botId": "nobody-s-bot"}); e.Code != "NOT_FOUND" {
		t.Fatalf("get_bot of a missing bot: %+v", e)
	}

	out := ok[map[string]any](t, a, "logout", nil)
	if out["loggedOut"] != true || out["revoked"] != true {
		t.Fatalf("logout: %v", out)
	}
	// The forwarded tools stay listed and answer the sign-in error.
	e = refused(t, a, "list_bots", map[string]any{})
	if e.Code != "UNAUTHORIZED" || !strings.Contains(e.Message, "call login") {
		t.Fatalf("list_bots after logout: %+v", e)
	}
	if e := refused(t, a, "check_auth", nil); !strings.Contains(e.Message, "call login") {
		t.Fatalf("check_auth after logout: %+v", e)
	}
}

func (st *stack) userByEmail(t testing.TB, email string) auth.User {
	t.Helper()
	u, err := st.users.ByEmail(t.Context(), email)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func TestSetToken(t *testing.T) {
	st := newStack(t)
	bob := st.user(t, "bob@example.com")
	st.user(t, "ada@example.com")
	st.project(t, "ada-btc", "ada@example.com")
	st.project(t, "bob-eth", "bob@example.com")
	a := st.start(t)

	// Signed in as ada, then a dashboard token of bob's: every call after it is bob's.
	first := ok[signedIn](t, a, "login", map[string]any{"email": "ada@example.com", "password": password})
	if _, text := a.call(t, "list_bots", map[string]any{}); !strings.Contains(text, `"ada-btc"`) || strings.Contains(text, `"bob-eth"`) {
		t.Fatalf("ada's list_bots: %s", text)
	}
	tok, err := st.issuer.IssueAPIToken(t.Context(), bob)
	if err != nil {
		t.Fatal(err)
	}
	in := ok[signedIn](t, a, "set_token", map[string]any{"token": tok.Token})
	// The same hosted tools for bob as for ada.
	if in.Method != "set_token" || first.Tools == 0 || in.Tools != first.Tools {
		t.Fatalf("set_token: %+v", in)
	}
	a.waitChanged(t, 2)
	if me := ok[auth.Status](t, a, "check_auth", nil); me.Email != "bob@example.com" {
		t.Fatalf("check_auth: %+v", me)
	}
	if _, text := a.call(t, "list_bots", map[string]any{}); !strings.Contains(text, `"bob-eth"`) || strings.Contains(text, `"ada-btc"`) {
		t.Fatalf("bob's list_bots: %s", text)
	}

	// A token the hosted server refuses is not kept: the previous one is forgotten too.
	if e := refused(t, a, "set_token", map[string]any{"token": "not-a-real-token-at-all"}); e.Code != "UNAUTHORIZED" {
		t.Fatalf("bad token: %+v", e)
	}
	// The refused token is not kept, and no hosted tool was registered.
	if e := refused(t, a, "check_auth", nil); !strings.Contains(e.Message, "call login") {
		t.Fatalf("check_auth after a refused token: %+v", e)
	}
	if e := refused(t, a, "list_bots", map[string]any{}); !strings.Contains(e.Message, "call login") {
		t.Fatalf("list_bots after a refused token: %+v", e)
	}
	ok[signedIn](t, a, "set_token", map[string]any{"token": tok.Token})
	// logout forgets a dashboard token without revoking it: the user may use it elsewhere.
	if out := ok[map[string]any](t, a, "logout", nil); out["revoked"] != false {
		t.Fatalf("logout of a set token: %v", out)
	}
	direct := st.hosted(t, tok.Token)
	req := mcp.CallToolRequest{}
	req.Params.Name = "check_auth"
	if res, err := direct.CallTool(t.Context(), req); err != nil || res.IsError {
		t.Fatalf("the dashboard token after logout: %v %+v", err, res)
	}
}

var (
	csrfRe    = regexp.MustCompile(`name="csrf_token" value="([^"]+)"`)
	requestRe = regexp.MustCompile(`name="request" value="([^"]+)"`)
)

// browser is the user's browser: a cookie jar, redirects followed by hand.
type browser struct {
	t testing.TB
	c *http.Client
}

func (st *stack) browser(t testing.TB) *browser {
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Transport: st.authd.Client().Transport, Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &browser{t: t, c: c}
}

func (b *browser) do(method, u string, form url.Values) (*http.Response, string) {
	b.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, u, body)
	if err != nil {
		b.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	return resp, string(raw)
}

func match(t testing.TB, re *regexp.Regexp, page string) string {
	t.Helper()
	m := re.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no %s in\n%s", re, page)
	}
	return m[1]
}

func abs(base, loc string) string {
	if strings.HasPrefix(loc, "/") {
		return base + loc
	}
	return loc
}

// signInAndApprove opens authURL as a signed-out user: logs in through /login, approves the
// consent, and returns the redirect to the loopback callback (not yet followed).
func (b *browser) signInAndApprove(base, authURL, email string) *url.URL {
	t := b.t
	t.Helper()
	resp, body := b.do(http.MethodGet, authURL, nil)
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/login") {
		t.Fatalf("authorize signed out: %d %s %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	loginURL, _ := url.Parse(abs(base, resp.Header.Get("Location")))
	_, page := b.do(http.MethodGet, loginURL.String(), nil)
	resp, body = b.do(http.MethodPost, base+"/login", url.Values{"csrf_token": {match(t, csrfRe, page)}, "email": {email},
		"password": {password}, "next": {loginURL.Query().Get("next")}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login form: %d %s", resp.StatusCode, body)
	}
	resp, body = b.do(http.MethodGet, abs(base, resp.Header.Get("Location")), nil)
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(resp.Header.Get("Location"), "/oauth/consent") {
		t.Fatalf("authorize signed in: %d %s %s", resp.StatusCode, resp.Header.Get("Location"), body)
	}
	_, page = b.do(http.MethodGet, abs(base, resp.Header.Get("Location")), nil)
	resp, body = b.do(http.MethodPost, base+"/oauth/consent", url.Values{"csrf_token": {match(t, csrfRe, page)},
		"request": {match(t, requestRe, page)}, "action": {"approve"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("consent: %d %s", resp.StatusCode, body)
	}
	u, err := url.Parse(resp.Header.Get("Location"))
	if err != nil || u.Host == "" || u.Path != "/callback" {
		t.Fatalf("consent redirect %q", resp.Header.Get("Location"))
	}
	return u
}

type authorizeAnswer struct {
	AuthorizationURL string `json:"authorizationUrl"`
	RedirectURI      string `json:"redirectUri"`
	Scope            string `json:"scope"`
}

func TestAuthenticateRefreshScopeAndLogout(t *testing.T) {
	st := newStack(t)
	ada := st.user(t, "ada@example.com")
	a := st.start(t)

	if e := refused(t, a, "authenticate", map[string]any{"scope": "mcp:admin"}); e.Code != "INVALID_PARAMETER" || !strings.Contains(e.Message, "mcp:paper") {
		t.Fatalf("bad scope: %+v", e)
	}
	ans := ok[authorizeAnswer](t, a, "authenticate", map[string]any{})
	if ans.Scope != "mcp:paper" || !strings.HasPrefix(ans.RedirectURI, "http://127.0.0.1:") {
		t.Fatalf("authenticate: %+v", ans)
	}
	au, _ := url.Parse(ans.AuthorizationURL)
	q := au.Query()
	if au.Scheme+"://"+au.Host != st.base || au.Path != "/api/oauth/authorize" || q.Get("code_challenge_method") != "S256" ||
		q.Get("resource") != st.mcpd.URL+"/mcp" || q.Get("scope") != "mcp:paper" || q.Get("redirect_uri") != ans.RedirectURI {
		t.Fatalf("authorization URL %s", ans.AuthorizationURL)
	}
	// Pending: check_auth names the URL to open.
	if e := refused(t, a, "check_auth", nil); !strings.Contains(e.Message, "pending") || e.Details["authorizationUrl"] != ans.AuthorizationURL {
		t.Fatalf("check_auth while pending: %+v", e)
	}

	b := st.browser(t)
	cb := b.signInAndApprove(st.base, ans.AuthorizationURL, "ada@example.com")
	// A redirect with another state is refused and the sign-in goes on waiting.
	forged := *cb
	fq := forged.Query()
	fq.Set("state", "forged")
	forged.RawQuery = fq.Encode()
	if resp, _ := b.do(http.MethodGet, forged.String(), nil); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("forged state: %d", resp.StatusCode)
	}
	resp, page := b.do(http.MethodGet, cb.String(), nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "Signed in") {
		t.Fatalf("callback: %d %s", resp.StatusCode, page)
	}
	a.waitChanged(t, 1)
	me := ok[auth.Status](t, a, "check_auth", nil)
	if me.Email != "ada@example.com" || me.Token == nil || me.Token.Scope != "mcp:paper" || me.Token.ClientName != "sigops-mcp" {
		t.Fatalf("check_auth after authenticate: %+v", me)
	}

	// A call beyond the token's scope: mcpd's HTTP 403 becomes an error result naming it.
	e := refused(t, a, "test_live", map[string]any{})
	if e.Code != "INSUFFICIENT_SCOPE" || e.Details["requiredScope"] != "mcp:live" || e.Details["tokenScope"] != "mcp:paper" ||
		!strings.Contains(e.Message, "user's approval") {
		t.Fatalf("test_live with mcp:paper: %+v", e)
	}

	// The access token lives an hour: past it mcpd answers 401 and the binary refreshes
	// without the user. Twice: the second refresh works only with the rotated refresh token.
	for i := range 2 {
		st.clk.Advance(auth.AccessTokenLifetime + time.Minute)
		if me := ok[auth.Status](t, a, "check_auth", nil); me.Email != "ada@example.com" || me.Token == nil {
			t.Fatalf("check_auth after expiry %d: %+v", i, me)
		}
		if res, text := a.call(t, "list_bots", map[string]any{}); res.IsError {
			t.Fatalf("list_bots after expiry %d: %s", i, text)
		}
	}
	auths, err := st.oauth.ListAuthorizations(t.Context(), ada.ID)
	if err != nil || len(auths) != 1 {
		t.Fatalf("authorizations before logout: %v %v", auths, err)
	}

	out := ok[map[string]any](t, a, "logout", nil)
	if out["revoked"] != true {
		t.Fatalf("logout: %v", out)
	}
	// Revoking the refresh token ends the authorization on the server.
	if auths, err := st.oauth.ListAuthorizations(t.Context(), ada.ID); err != nil || len(auths) != 1 ||
		auths[0].RevokedAt.IsZero() || auths[0].RevokedReason != "client" {
		t.Fatalf("authorizations after logout: %+v %v", auths, err)
	}
	if e := refused(t, a, "list_bots", map[string]any{}); e.Code != "UNAUTHORIZED" || !strings.Contains(e.Message, "call login") {
		t.Fatalf("list_bots after logout: %+v", e)
	}
}

// benchAgent is a signed-in agent and a direct hosted client of the same user, with bots
// to list.
func benchAgent(b *testing.B) (*agent, *client.Client) {
	st := newStack(b)
	u := st.user(b, "ada@example.com")
	for _, id := range []string{"b1", "b2", "b3"} {
		st.project(b, id, "ada@example.com")
	}
	a := st.start(b)
	ok[signedIn](b, a, "login", map[string]any{"email": "ada@example.com", "password": password})
	tok, err := st.issuer.IssueAPIToken(b.Context(), u)
	if err != nil {
		b.Fatal(err)
	}
	return a, st.hosted(b, tok.Token)
}

// BenchmarkForwardedListBots is list_bots through sigops-mcp: stdio, the bridge, HTTPS to
// mcpd and back.
func BenchmarkForwardedListBots(b *testing.B) {
	a, _ := benchAgent(b)
	for b.Loop() {
		if res, text := a.call(b, "list_bots", map[string]any{}); res.IsError {
			b.Fatal(text)
		}
	}
}

// BenchmarkHostedListBots is the same call straight to mcpd, the baseline of the bridge's cost.
func BenchmarkHostedListBots(b *testing.B) {
	_, direct := benchAgent(b)
	req := mcp.CallToolRequest{}
	req.Params.Name = "list_bots"
	req.Params.Arguments = map[string]any{}
	for b.Loop() {
		if res, err := direct.CallTool(b.Context(), req); err != nil || res.IsError {
			b.Fatal(err, res)
		}
	}
}
