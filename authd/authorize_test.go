package authd

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"golang.org/x/oauth2"
)

// Every check of an authorization request, in order: the client and redirect URI are shown
// as pages, the rest goes back to the client with the state (unless the state itself is
// too long), and a valid request without a session goes to the login page.
func TestAuthorizeRequestChecks(t *testing.T) {
	h := newHarness(t)
	u := h.user("authorize@example.com", "team")
	cfg := h.publicClient("mcp:read")
	good := url.Values{"response_type": {"code"}, "client_id": {cfg.ClientID}, "redirect_uri": {cfg.RedirectURL},
		"state": {"s"}, "code_challenge": {oauth2.S256ChallengeFromVerifier(oauth2.GenerateVerifier())},
		"code_challenge_method": {"S256"}, "scope": {"mcp:read"}}
	with := func(edit func(url.Values)) url.Values {
		q := url.Values{}
		for k, v := range good {
			q[k] = append([]string(nil), v...)
		}
		edit(q)
		return q
	}
	for _, tc := range []struct {
		name  string
		q     url.Values
		page  string // the error page's title, or "" for a redirect to the client
		error string // the error sent back to the client
		state string
	}{
		{"client_id twice", with(func(q url.Values) { q.Add("client_id", "x") }), "Invalid request", "", ""},
		{"unknown client", with(func(q url.Values) { q.Set("client_id", "nobody") }), "Unknown application", "", ""},
		{"redirect not registered", with(func(q url.Values) { q.Set("redirect_uri", "https://evil.example/cb") }), "Invalid redirect", "", ""},
		{"no redirect", with(func(q url.Values) { q.Del("redirect_uri") }), "Invalid redirect", "", ""},
		{"scope twice", with(func(q url.Values) { q.Add("scope", "mcp:read") }), "", "invalid_request", "s"},
		{"state too long", with(func(q url.Values) { q.Set("state", strings.Repeat("s", maxStateLen+1)) }), "", "invalid_request", ""},
		{"implicit flow", with(func(q url.Values) { q.Set("response_type", "token") }), "", "unsupported_response_type", "s"},
		{"no challenge", with(func(q url.Values) { q.Del("code_challenge") }), "", "invalid_request", "s"},
		{"plain challenge", with(func(q url.Values) { q.Set("code_challenge_method", "plain") }), "", "invalid_request", "s"},
		{"short challenge", with(func(q url.Values) { q.Set("code_challenge", "abc") }), "", "invalid_request", "s"},
		{"unknown scope", with(func(q url.Values) { q.Set("scope", "mcp:everything") }), "", "invalid_scope", "s"},
		{"other resource", with(func(q url.Values) { q.Set("resource", "https://evil.example/api") }), "", "invalid_target", "s"},
	} {
		b := h.browser()
		b.login(u.Email, testPassword)
		resp, body := b.get("/api/oauth/authorize?" + tc.q.Encode())
		if tc.page != "" {
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, tc.page) || resp.Header.Get("Location") != "" {
				t.Errorf("%s: %d %q, want the page %q", tc.name, resp.StatusCode, resp.Header.Get("Location"), tc.page)
			}
			continue
		}
		loc, _ := url.Parse(resp.Header.Get("Location"))
		got := loc.Query()
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc.String(), cfg.RedirectURL) ||
			got.Get("error") != tc.error || got.Get("state") != tc.state || got.Get("iss") != h.base {
			t.Errorf("%s: %d %s, want error=%s state=%q", tc.name, resp.StatusCode, loc, tc.error, tc.state)
		}
	}

	resp, _ := h.browser().get("/api/oauth/authorize?" + good.Encode())
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/login?next=") {
		t.Errorf("without a session: %d %s", resp.StatusCode, loc)
	}
}
