package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/authd"
	"github.com/sigops/sigops/authd/dashboard"
	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
)

var (
	xssScript = `<script>alert(1)</script>`
	xssAttr   = `"><img src=x onerror=alert(1)>`
	tokenRe   = regexp.MustCompile(`id="api-token" type="text" readonly value="([^"]+)"`)
)

// assertInert fails unless page shows payload escaped, never as markup.
func assertInert(t *testing.T, page, payload string) {
	t.Helper()
	if strings.Contains(page, payload) || strings.Contains(page, "<img src=x") || strings.Contains(page, "<script>alert") {
		t.Fatalf("payload %q rendered as markup", payload)
	}
	if !strings.Contains(page, html.EscapeString(payload)) {
		t.Fatalf("payload %q not shown escaped (%q)", payload, html.EscapeString(payload))
	}
}

// userNamed creates an account with a chosen name and Strategy Lab wallet.
func (f *fixture) userNamed(name, tier, wallet string) auth.User {
	f.t.Helper()
	email := fmt.Sprintf("settings%d-%d@example.io", time.Now().UnixNano()%1e9, serial.Add(1))
	u, err := f.users.Create(context.Background(), auth.NewUser{Email: email, Name: name, Password: testPassword,
		Tier: tier, Wallet: decimal.RequireFromString(wallet)})
	if err != nil {
		f.t.Fatal(err)
	}
	return u
}

// login submits the login form as a fresh browser: the answer's status, and the browser.
func (f *fixture) login(email, password string) (int, *browser) {
	f.t.Helper()
	b := f.browser()
	_, page := b.get("/login")
	resp, _ := b.post("/login", url.Values{"csrf_token": {match(f.t, csrfRe, page)}, "email": {email}, "password": {password}})
	return resp.StatusCode, b
}

// me is GET /api/user/me with a bearer token: its status.
func (f *fixture) me(token string) int {
	f.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, f.base+"/api/user/me", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := f.ts.Client().Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

func (f *fixture) journal(userID string) []audit.Entry {
	f.t.Helper()
	entries, _, err := f.apis.Audit.List(context.Background(), userID, "", audit.MaxPageSize)
	if err != nil {
		f.t.Fatal(err)
	}
	return entries
}

func TestSettingsRoutesNeedASession(t *testing.T) {
	f := newFixture(t)
	b := f.browser()
	for _, path := range []string{"/dashboard/settings", "/dashboard/settings/connected-apps", "/dashboard/settings/audit"} {
		resp, _ := b.get(path)
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login?next="+url.QueryEscape(path) {
			t.Errorf("GET %s without session: %d to %q", path, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	for _, path := range []string{"/dashboard/settings/token", "/dashboard/settings/password", "/dashboard/settings/connected-apps/revoke",
		"/dashboard/settings/connected-apps/suspend", "/dashboard/settings/connected-apps/lift"} {
		if resp, _ := b.post(path, url.Values{"current_password": {testPassword}}); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("POST %s without session: %d, want 401", path, resp.StatusCode)
		}
	}
}

func TestSettingsPostsNeedTheCSRFToken(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	forms := map[string]url.Values{
		"/dashboard/settings/token": {},
		"/dashboard/settings/password": {"current_password": {testPassword}, "new_password": {"a brand new password"},
			"new_password_again": {"a brand new password"}},
		"/dashboard/settings/connected-apps/revoke":  {"authorization": {"x"}},
		"/dashboard/settings/connected-apps/suspend": {},
	}
	for path, form := range forms {
		for _, tok := range []string{"", "forged-token-forged-token-forged-token-0"} {
			form.Set("csrf_token", tok)
			if resp, page := b.post(path, form); resp.StatusCode != http.StatusForbidden || tokenRe.MatchString(page) {
				t.Errorf("POST %s with CSRF %q: %d, want 403 and nothing done", path, tok, resp.StatusCode)
			}
		}
	}
	// Nothing happened: the password is the old one, the session lives, nothing journaled.
	if st, _ := f.login(u.Email, testPassword); st != http.StatusSeeOther {
		t.Fatalf("old password refused after forged change: %d", st)
	}
	if resp, _ := b.get("/dashboard/settings"); resp.StatusCode != http.StatusOK {
		t.Fatalf("session lost: %d", resp.StatusCode)
	}
	if n := len(f.journal(u.ID)); n != 0 {
		t.Fatalf("%d journal entries for refused posts", n)
	}
}

func TestSettingsProfile(t *testing.T) {
	f := newFixture(t)
	for _, name := range []string{xssScript, xssAttr} {
		u := f.userNamed(name, "pro", "12.5")
		b := f.loggedIn(u)
		resp, page := b.get("/dashboard/settings")
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("settings: %d\n%s", resp.StatusCode, page)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); csp != dashboard.PageCSP {
			t.Fatalf("CSP %q", csp)
		}
		for _, bad := range []string{"style=", "<style", " onclick="} {
			if strings.Contains(page, bad) {
				t.Fatalf("page holds %q", bad)
			}
		}
		assertInert(t, page, name)
		// Pro: live trading, the AI builder and the MCP server, no news trading (runtime/auth's
		// tiers). The wallet is 12.5 shown to the cent: 12.50.
		for _, want := range []string{u.Email, "<td>Pro</td>", `<td class="num" id="wallet">12.50 USD</td>`,
			`action="/dashboard/settings/password"`, `action="/dashboard/settings/token"`, `aria-current="page">Settings`} {
			if !strings.Contains(page, want) {
				t.Fatalf("settings page lacks %q:\n%s", want, page)
			}
		}
		caps := regexp.MustCompile(`<th scope="row">([^<]+)</th><td><span class="badge[^"]*">(yes|no)</span>`).FindAllStringSubmatch(page, -1)
		got := map[string]string{}
		for _, c := range caps {
			got[c[1]] = c[2]
		}
		want := map[string]string{"Live trading": "yes", "AI strategy builder": "yes", "News trading": "no", "MCP server": "yes"}
		for k, v := range want {
			if got[k] != v {
				t.Fatalf("capability %s = %q, want %q (all: %v)", k, got[k], v, got)
			}
		}
	}
}

func TestSettingsAPITokenShownOnce(t *testing.T) {
	f := newFixture(t)
	u := f.user("team")
	b := f.loggedIn(u)
	resp, page := b.submit("/dashboard/settings/token", nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("issue: %d %q\n%s", resp.StatusCode, resp.Header.Get("Cache-Control"), page)
	}
	tok := match(t, tokenRe, page)
	if !strings.Contains(page, `<button type="button" data-copy="api-token">Copy</button>`) ||
		!strings.Contains(page, "set_token") || !strings.Contains(page, "7 days without use") {
		t.Fatalf("token block:\n%s", page)
	}
	if st := f.me(tok); st != http.StatusOK {
		t.Fatalf("issued token refused by /api/user/me: %d", st)
	}
	_, again := b.get("/dashboard/settings")
	if strings.Contains(again, tok) || strings.Contains(again, `id="api-token"`) {
		t.Fatal("the token is shown a second time")
	}
	entries := f.journal(u.ID)
	if len(entries) != 1 || entries[0].Tool != "create_api_token" || entries[0].Channel != audit.ChannelDashboard ||
		entries[0].ClientName != "dashboard" || !entries[0].Outcome.OK || strings.Contains(string(entries[0].Arguments), tok) {
		t.Fatalf("journal %+v", entries)
	}
}

func TestSettingsPasswordChangeEndsEverySessionAndToken(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	other := f.loggedIn(u)
	_, page := b.submit("/dashboard/settings/token", nil)
	bearer := match(t, tokenRe, page)
	if st := f.me(bearer); st != http.StatusOK {
		t.Fatalf("bearer before: %d", st)
	}
	const next = "a wholly different passphrase"
	resp, _ := b.submit("/dashboard/settings/password", url.Values{"current_password": {testPassword},
		"new_password": {next}, "new_password_again": {next}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/login?done=password" {
		t.Fatalf("change: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	cleared := false
	for _, c := range resp.Cookies() {
		cleared = cleared || (c.Name == auth.SessionCookie && c.MaxAge < 0)
	}
	if !cleared {
		t.Fatal("session cookie not cleared")
	}
	// The login page says why.
	_, login := b.get("/login?done=password")
	if !strings.Contains(login, "Your password was changed") {
		t.Fatalf("login page:\n%s", login)
	}
	// Both sessions ended, the bearer token too.
	for name, br := range map[string]*browser{"this browser": b, "another browser": other} {
		if resp, _ := br.get("/dashboard/settings"); resp.StatusCode != http.StatusSeeOther {
			t.Errorf("%s after the change: %d, want 303 to the login page", name, resp.StatusCode)
		}
	}
	if resp, _ := other.submit("/dashboard/settings/token", nil); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("other session's post after the change: %d", resp.StatusCode)
	}
	if st := f.me(bearer); st != http.StatusUnauthorized {
		t.Fatalf("bearer issued before the change: %d, want 401", st)
	}
	if st, _ := f.login(u.Email, testPassword); st != http.StatusUnauthorized {
		t.Fatalf("old password: %d, want 401", st)
	}
	if st, _ := f.login(u.Email, next); st != http.StatusSeeOther {
		t.Fatalf("new password: %d, want 303", st)
	}
	entries := f.journal(u.ID)
	if len(entries) != 2 || entries[0].Tool != "change_password" || !entries[0].Outcome.OK {
		t.Fatalf("journal %+v", entries)
	}
	for _, e := range entries {
		if strings.Contains(string(e.Arguments), testPassword) || strings.Contains(string(e.Arguments), next) {
			t.Fatalf("a password reached the journal: %s", e.Arguments)
		}
	}
}

func TestSettingsPasswordRefusals(t *testing.T) {
	// Three attempts per account and window: the login gate's, shared with the login form.
	f := newFixture(t, func(o *authd.Options) {
		o.LoginPerAccount = auth.Limit{Kind: "login-account", Max: 3, Window: time.Hour}
	})
	u := f.user("free")
	b := f.loggedIn(u)
	const next = "a wholly different passphrase"
	for _, c := range []struct {
		form   url.Values
		status int
		words  string
	}{
		{url.Values{"current_password": {testPassword}, "new_password": {next}, "new_password_again": {next + "x"}},
			http.StatusBadRequest, "The two new passwords are not the same."},
		{url.Values{"current_password": {testPassword}, "new_password": {"short"}, "new_password_again": {"short"}},
			http.StatusBadRequest, "The new password must be 10 to"},
		{url.Values{"new_password": {next}, "new_password_again": {next}}, http.StatusBadRequest, "Enter your current password."},
		// Validation refusals checked no password: the gate still has its 3 attempts.
		{url.Values{"current_password": {"wrong one 1"}, "new_password": {next}, "new_password_again": {next}},
			http.StatusForbidden, "The current password is not right."},
		{url.Values{"current_password": {"wrong one 2"}, "new_password": {next}, "new_password_again": {next}},
			http.StatusForbidden, "The current password is not right."},
		{url.Values{"current_password": {"wrong one 3"}, "new_password": {next}, "new_password_again": {next}},
			http.StatusForbidden, "The current password is not right."},
		// The fourth check is refused before any password is checked, the right one included.
		{url.Values{"current_password": {testPassword}, "new_password": {next}, "new_password_again": {next}},
			http.StatusTooManyRequests, "Too many failed sign-in attempts."},
	} {
		resp, page := b.submit("/dashboard/settings/password", c.form)
		if resp.StatusCode != c.status || !strings.Contains(page, c.words) || !strings.Contains(page, "Nothing was changed") && c.status != 400 {
			t.Fatalf("%v: %d, want %d with %q\n%s", c.form, resp.StatusCode, c.status, c.words, page)
		}
		if c.status == http.StatusTooManyRequests && resp.Header.Get("Retry-After") == "" {
			t.Fatal("429 without Retry-After")
		}
	}
	// The form shares the login's counter: the login form is locked too.
	if st, _ := f.login(u.Email, testPassword); st != http.StatusTooManyRequests {
		t.Fatalf("login after the locked-out change: %d, want 429", st)
	}
	// Nothing changed: the session lives and the password is the old one.
	if resp, _ := b.get("/dashboard/settings"); resp.StatusCode != http.StatusOK {
		t.Fatalf("session after refusals: %d", resp.StatusCode)
	}
	if _, err := f.users.Authenticate(context.Background(), u.Email, testPassword); err != nil {
		t.Fatalf("old password: %v", err)
	}
	// Every attempt is journaled with its refusal: 3 invalid, 3 wrong, 1 rate-limited.
	count := map[errs.Code]int{}
	for _, e := range f.journal(u.ID) {
		if e.Tool != "change_password" || e.Outcome.OK {
			t.Fatalf("entry %+v", e)
		}
		count[e.Outcome.Code]++
	}
	if count[errs.InvalidParameter] != 3 || count[errs.Unauthorized] != 3 || count[errs.RateLimited] != 1 {
		t.Fatalf("journal outcomes %v", count)
	}
}

// authorize stores an OAuth authorization of u for a client as the consent flow would.
func (f *fixture) authorize(u auth.User, clientName string) string {
	f.t.Helper()
	id := auth.RandomToken(16)
	if _, err := auth.NewOAuth(env.RDB, auth.OAuthOptions{}).CreateAuthorization(context.Background(), auth.Authorization{
		ID: id, UserID: u.ID, ClientID: "client-" + id, ClientName: clientName, Scope: "mcp:read", Resource: f.base + "/mcp",
		Gen: u.Generation}); err != nil {
		f.t.Fatal(err)
	}
	return id
}

func TestSettingsConnectedApps(t *testing.T) {
	f := newFixture(t)
	u, stranger := f.user("pro"), f.user("pro")
	b, sb := f.loggedIn(u), f.loggedIn(stranger)
	_, page := b.get("/dashboard/settings/connected-apps")
	if !strings.Contains(page, "No application has access to your account.") {
		t.Fatalf("empty list:\n%s", page)
	}
	first, second := f.authorize(u, xssScript), f.authorize(u, xssAttr)
	resp, page := b.get("/dashboard/settings/connected-apps")
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "client-"+first) || !strings.Contains(page, `value="`+second+`"`) {
		t.Fatalf("list: %d\n%s", resp.StatusCode, page)
	}
	assertInert(t, page, xssScript)
	assertInert(t, page, xssAttr)
	// Another user's revocation: 404 like a missing app, and the app stays active.
	if resp, _ := sb.submit("/dashboard/settings/connected-apps/revoke", url.Values{"authorization": {first}}); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("stranger's revoke: %d, want 404", resp.StatusCode)
	}
	if resp, _ := b.submit("/dashboard/settings/connected-apps/revoke", url.Values{"authorization": {"no-such-app"}}); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("missing app: %d, want 404", resp.StatusCode)
	}
	if a, err := auth.NewOAuth(env.RDB, auth.OAuthOptions{}).GetAuthorization(context.Background(), first); err != nil || !a.RevokedAt.IsZero() {
		t.Fatalf("after refused revocations: %+v %v", a, err)
	}
	resp, _ = b.submit("/dashboard/settings/connected-apps/revoke", url.Values{"authorization": {first}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/dashboard/settings/connected-apps?done=revoked" {
		t.Fatalf("revoke: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	_, page = b.get(resp.Header.Get("Location"))
	if !strings.Contains(page, "Access revoked") || strings.Count(page, `class="badge disabled">revoked`) != 1 ||
		strings.Contains(page, `value="`+first+`"`) || !strings.Contains(page, `value="`+second+`"`) {
		t.Fatalf("after revoke:\n%s", page)
	}
	var tools []string
	for _, e := range f.journal(u.ID) {
		tools = append(tools, e.Tool+":"+string(e.Arguments)+":"+string(e.Outcome.Code))
	}
	// Newest first: the success, then the refusal of the missing app.
	want := []string{`revoke_connected_app:{"app":"` + first + `"}:`, `revoke_connected_app:{"app":"no-such-app"}:NOT_FOUND`}
	if strings.Join(tools, "\n") != strings.Join(want, "\n") {
		t.Fatalf("journal\n%s\nwant\n%s", strings.Join(tools, "\n"), strings.Join(want, "\n"))
	}
	if n := len(f.journal(stranger.ID)); n != 1 {
		t.Fatalf("stranger's journal holds %d entries, want its refused revocation", n)
	}
}

func TestSettingsAuditJournal(t *testing.T) {
	f := newFixture(t)
	u, stranger := f.user("pro"), f.user("pro")
	ctx := context.Background()
	args, _ := json.Marshal(map[string]string{"name": xssScript, "comment": xssAttr})
	for _, e := range []audit.Entry{
		{UserID: u.ID, Channel: audit.ChannelMCP, Tool: "pause_bot", ClientID: "cid-1", ClientName: xssAttr, Arguments: args,
			Outcome: audit.Outcome{OK: true}},
		{UserID: u.ID, Channel: audit.ChannelMCP, Tool: "place_order", ClientName: xssScript, Arguments: json.RawMessage(`{}`),
			Outcome: audit.Outcome{Code: errs.BotPaused, Message: "bot b1 is paused"}},
		{UserID: stranger.ID, Channel: audit.ChannelMCP, Tool: "strangers_tool", ClientName: "Stranger's agent",
			Arguments: json.RawMessage(`{}`), Outcome: audit.Outcome{OK: true}},
	} {
		if err := f.apis.Audit.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	b := f.loggedIn(u)
	b.submit("/dashboard/settings/token", nil) // a dashboard entry, newest
	resp, page := b.get("/dashboard/settings/audit")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("audit: %d\n%s", resp.StatusCode, page)
	}
	assertInert(t, page, xssScript)
	assertInert(t, page, xssAttr)
	if strings.Contains(page, "strangers_tool") || strings.Contains(page, "Stranger") {
		t.Fatal("another user's entry is shown")
	}
	rows := regexp.MustCompile(`(?s)<tr>\s*<td>[^<]+</td><td>(mcp|dashboard)</td><td>[^<]*</td><td><code>([a-z_]+)</code></td>.*?</tr>`).FindAllStringSubmatch(page, -1)
	var got []string
	for _, r := range rows {
		got = append(got, r[1]+" "+r[2])
	}
	if strings.Join(got, ",") != "dashboard create_api_token,mcp place_order,mcp pause_bot" {
		t.Fatalf("rows newest first: %v\n%s", got, page)
	}
	for _, want := range []string{"<td>dashboard</td><td>dashboard</td>", `<span class="badge active">ok</span>`,
		html.EscapeString("The bot is paused: resume it to open positions (closing still works). bot b1 is paused (BOT_PAUSED"),
		"Entries are kept 90 days"} {
		if !strings.Contains(page, want) {
			t.Fatalf("audit page lacks %q:\n%s", want, page)
		}
	}
}

func TestSettingsAuditJournalPages(t *testing.T) {
	f := newFixture(t)
	u := f.user("free")
	ctx := context.Background()
	// 55 entries: a page of the journal's default 50 (tool_54 .. tool_5), then 5 (tool_4 .. tool_0).
	for i := range 55 {
		if err := f.apis.Audit.Record(ctx, audit.Entry{UserID: u.ID, Channel: audit.ChannelMCP, Tool: fmt.Sprintf("tool_%d", i),
			Outcome: audit.Outcome{OK: true}}); err != nil {
			t.Fatal(err)
		}
	}
	b := f.loggedIn(u)
	toolRe := regexp.MustCompile(`<code>(tool_\d+)</code>`)
	_, page := b.get("/dashboard/settings/audit")
	tools := toolRe.FindAllStringSubmatch(page, -1)
	if len(tools) != audit.DefaultPageSize || tools[0][1] != "tool_54" || tools[49][1] != "tool_5" || strings.Contains(page, "Newest entries") {
		t.Fatalf("first page: %d rows from %v", len(tools), tools[0])
	}
	older := html.UnescapeString(match(t, regexp.MustCompile(`href="(/dashboard/settings/audit\?cursor=[^"]+)">Older entries`), page))
	_, page = b.get(older)
	tools = toolRe.FindAllStringSubmatch(page, -1)
	if len(tools) != 5 || tools[0][1] != "tool_4" || tools[4][1] != "tool_0" || strings.Contains(page, "Older entries") ||
		!strings.Contains(page, `href="/dashboard/settings/audit">Newest entries`) {
		t.Fatalf("second page: %v\n%s", tools, page)
	}
	if resp, page := b.get("/dashboard/settings/audit?cursor=" + url.QueryEscape(xssScript)); resp.StatusCode != http.StatusBadRequest ||
		!strings.Contains(page, "INVALID_PARAMETER") {
		t.Fatalf("malformed cursor: %d\n%s", resp.StatusCode, page)
	}
}

// A journal that cannot be written is logged; the action itself succeeds.
func TestRecordActionFailureDoesNotFailTheAction(t *testing.T) {
	dead := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	t.Cleanup(func() { dead.Close() })
	f := newFixture(t, func(o *authd.Options) {
		a := *o.APIs
		a.Audit = audit.New(dead, audit.Options{})
		o.APIs = &a
	})
	b := f.loggedIn(f.user("pro"))
	resp, page := b.submit("/dashboard/settings/token", nil)
	if resp.StatusCode != http.StatusOK || f.me(match(t, tokenRe, page)) != http.StatusOK {
		t.Fatalf("issue with a dead journal: %d", resp.StatusCode)
	}
	if !strings.Contains(f.logs.String(), "dashboard: audit record failed") {
		t.Fatalf("failure not logged:\n%s", f.logs.String())
	}
}

// The login, logout and consent pages take the dashboard's stylesheet: no inline style, and
// a CSP without 'unsafe-inline'.
func TestAuthPagesUseTheDashboardStylesheet(t *testing.T) {
	f := newFixture(t)
	u := f.user("free")
	b := f.loggedIn(u)
	anon := f.browser()
	for name, get := range map[string]func() (*http.Response, string){
		"login":  func() (*http.Response, string) { return anon.get("/login") },
		"logout": func() (*http.Response, string) { return b.get("/logout") },
	} {
		resp, page := get()
		csp := resp.Header.Get("Content-Security-Policy")
		if resp.StatusCode != http.StatusOK || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "style-src 'self'") {
			t.Fatalf("%s: %d CSP %q", name, resp.StatusCode, csp)
		}
		if !strings.Contains(page, `<link rel="stylesheet" href="/static/dashboard.css">`) || strings.Contains(page, "<style") ||
			strings.Contains(page, "style=") || strings.Contains(page, "<script") {
			t.Fatalf("%s page:\n%s", name, page)
		}
	}
	if resp, _ := anon.get("/static/dashboard.css"); resp.StatusCode != http.StatusOK {
		t.Fatalf("stylesheet without a session: %d", resp.StatusCode)
	}
}

// The kill switch: one button suspends every connected app's trading, the page says so
// and offers the lift; both are journaled.
func TestSettingsKillSwitch(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	sw := apppolicy.NewPolicies(env.RDB, nil)
	_, page := b.get("/dashboard/settings/connected-apps")
	if !strings.Contains(page, `action="/dashboard/settings/connected-apps/suspend"`) {
		t.Fatalf("no kill switch:\n%s", page)
	}
	resp, _ := b.submit("/dashboard/settings/connected-apps/suspend", nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/dashboard/settings/connected-apps?done=suspended" {
		t.Fatalf("suspend: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if _, on, err := sw.Since(context.Background(), u.ID); !on || err != nil {
		t.Fatalf("switch after suspend: %v %v", on, err)
	}
	_, page = b.get(resp.Header.Get("Location"))
	if !strings.Contains(page, "trading is suspended since") || !strings.Contains(page, `action="/dashboard/settings/connected-apps/lift"`) {
		t.Fatalf("suspended page:\n%s", page)
	}
	if resp, _ = b.submit("/dashboard/settings/connected-apps/lift", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("lift: %d", resp.StatusCode)
	}
	if _, on, _ := sw.Since(context.Background(), u.ID); on {
		t.Fatal("still suspended after the lift")
	}
	var tools []string
	for _, e := range f.journal(u.ID) {
		tools = append(tools, e.Tool)
	}
	if strings.Join(tools, ",") != "lift_connected_apps_suspension,suspend_connected_apps" {
		t.Fatalf("journal %v", tools)
	}
}

// With PostgreSQL, the kill switch the page turns on is recorded: when Redis loses the
// user's copy (the switch and its marker), the page and every admission still find it on.
func TestSettingsKillSwitchIsRecorded(t *testing.T) {
	f := newFixture(t, func(o *authd.Options) { o.DB = dbtest.New(t) })
	u := f.user("pro")
	b := f.loggedIn(u)
	if resp, _ := b.submit("/dashboard/settings/connected-apps/suspend", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("suspend: %d", resp.StatusCode)
	}
	if err := env.RDB.Del(context.Background(), store.UserAppsSuspended(u.ID), store.UserAppsCached(u.ID)).Err(); err != nil {
		t.Fatal(err)
	}
	if _, page := b.get("/dashboard/settings/connected-apps"); !strings.Contains(page, "trading is suspended since") {
		t.Fatalf("the switch lapsed with Redis:\n%s", page)
	}
	if resp, _ := b.submit("/dashboard/settings/connected-apps/lift", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("lift: %d", resp.StatusCode)
	}
	if err := env.RDB.Del(context.Background(), store.UserAppsCached(u.ID)).Err(); err != nil {
		t.Fatal(err)
	}
	if _, page := b.get("/dashboard/settings/connected-apps"); strings.Contains(page, "trading is suspended since") {
		t.Fatalf("a lifted switch came back from the record:\n%s", page)
	}
}

// Connected apps shows each app's limits in words and saves new ones; an app the viewer
// never authorized is not found.
func TestSettingsAppLimits(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	id := f.authorize(u, "Desk agent")
	client := "client-" + id
	bot := registry.Bot{ID: "lim-" + u.ID, Namespace: "ns", Name: "swing-" + u.ID[:6], Owner: strings.ToLower(u.Email),
		Account: registry.Account{Kind: registry.AccountPaper, Name: "paper"}}
	if err := registry.New(env.RDB).Project(context.Background(), bot, "hash-"+bot.ID); err != nil {
		t.Fatal(err)
	}
	_, page := b.get("/dashboard/settings/connected-apps")
	if !strings.Contains(page, "Limits of Desk agent") || !strings.Contains(page, "Bots: all your bots") ||
		!strings.Contains(page, "At most 60 orders an hour") || !strings.Contains(page, `value="`+bot.ID+`"`) {
		t.Fatalf("limits:\n%s", page)
	}
	resp, _ := b.submit("/dashboard/settings/connected-apps/policy", url.Values{"client": {client}, "bots_mode": {"chosen"},
		"bot": {bot.ID}, "orders_per_hour": {"12"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/dashboard/settings/connected-apps?done=policy" {
		t.Fatalf("save: %d %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	p, err := apppolicy.NewPolicies(env.RDB, nil).Get(context.Background(), u.ID, client)
	if err != nil || p.Live || p.OrdersPerHour != 12 || len(p.Bots) != 1 || p.Bots[0] != bot.ID {
		t.Fatalf("policy %+v %v", p, err)
	}
	_, page = b.get("/dashboard/settings/connected-apps")
	if !strings.Contains(page, "Bots: only "+bot.Name) || !strings.Contains(page, "Trades on: paper accounts only") {
		t.Fatalf("limits after the save:\n%s", page)
	}
	if resp, _ := b.submit("/dashboard/settings/connected-apps/policy", url.Values{"client": {"client-of-nobody"}}); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("another app: %d", resp.StatusCode)
	}
	if resp, _ := b.submit("/dashboard/settings/connected-apps/policy", url.Values{"client": {client}, "orders_per_hour": {"0"}}); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("0 an hour: %d", resp.StatusCode)
	}
	// Real money: the notional caps in USDT, blank for none, shown in words.
	if resp, _ := b.submit("/dashboard/settings/connected-apps/policy", url.Values{"client": {client}, "live": {"yes"},
		"orders_per_hour": {"60"}, "order_notional": {"250.5"}, "day_notional": {""}, "approval": {"above"},
		"approve_above": {"75"}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("save the caps: %d", resp.StatusCode)
	}
	if p, err := apppolicy.NewPolicies(env.RDB, nil).Get(context.Background(), u.ID, client); err != nil || !p.Live ||
		p.OrderNotional.String() != "250.5" || !p.DayNotional.IsZero() || !p.Approve || p.ApproveAbove.String() != "75" {
		t.Fatalf("caps %+v %v", p, err)
	}
	_, page = b.get("/dashboard/settings/connected-apps")
	if !strings.Contains(page, "Real money in one order (or one Strategy Lab charge): at most 250.5 USDT; in one UTC day: no limit") ||
		!strings.Contains(page, "Real money committed today: 0 USDT") || !strings.Contains(page, `name="order_notional" value="250.5"`) ||
		!strings.Contains(page, "Your approval: asked for live entries above 75 USDT") || !strings.Contains(page, `value="above" checked`) {
		t.Fatalf("caps in words:\n%s", page)
	}
	if resp, _ := b.submit("/dashboard/settings/connected-apps/policy", url.Values{"client": {client}, "approval": {"above"},
		"approve_above": {"0"}}); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a threshold of 0: %d", resp.StatusCode)
	}
	for _, bad := range []string{"lots", "-5", "10000001"} {
		if resp, _ := b.submit("/dashboard/settings/connected-apps/policy", url.Values{"client": {client}, "order_notional": {bad}}); resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("order cap %q: %d", bad, resp.StatusCode)
		}
	}
}
