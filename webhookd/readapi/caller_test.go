package readapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/auth"
)

// riskPath is an account route: every caller check runs on it.
func riskPath(botID string) string { return "/api/botsvc/bots/" + botID + "/risk" }

func TestCallerCredentials(t *testing.T) {
	f := newFixture(t)
	alice := f.user(t, "Alice@Example.com")
	f.projectBot(t, "bot-a", "alice@example.com", "acct-a")
	readTok, readID := f.oauthToken(t, alice, auth.ScopeRead, testAPI)
	liveTok, _ := f.oauthToken(t, alice, auth.ScopeLive, testAPI)
	mcpTok, _ := f.oauthToken(t, alice, auth.ScopeRead, testMCP)

	for _, tc := range []struct {
		name   string
		creds  []cred
		status int
		// challenge is a fragment of WWW-Authenticate on a refusal.
		challenge string
	}{
		{"bearer JWT", []cred{f.bearer(t, alice)}, http.StatusOK, ""},
		{"OAuth mcp:read", []cred{readTok}, http.StatusOK, ""},
		{"OAuth mcp:live includes read", []cred{liveTok}, http.StatusOK, ""},
		{"dashboard session", []cred{f.session(t, alice)}, http.StatusOK, ""},
		{"no credentials", nil, http.StatusUnauthorized, `Bearer realm="sigops", resource_metadata=`},
		{"token for the MCP server, not the API", []cred{mcpTok}, http.StatusUnauthorized, `error="invalid_token"`},
		{"garbage token", []cred{func(r *http.Request) { r.Header.Set("Authorization", "Bearer abc.def.ghi") }}, http.StatusUnauthorized, `error="invalid_token"`},
		{"unknown session", []cred{func(r *http.Request) { r.AddCookie(&http.Cookie{Name: "__Host-sigops_session", Value: "nope"}) }}, http.StatusUnauthorized, `error="invalid_token"`},
		// A bad token decides alone, even beside a good cookie.
		{"bad token beside a good session", []cred{f.session(t, alice), func(r *http.Request) { r.Header.Set("Authorization", "Bearer x") }}, http.StatusUnauthorized, `error="invalid_token"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := f.get(t, riskPath("bot-a"), tc.creds...)
			if r.status != tc.status {
				t.Fatalf("status %d, want %d: %s", r.status, tc.status, r.body)
			}
			if tc.challenge == "" {
				return
			}
			if ch := r.header.Get("WWW-Authenticate"); !strings.Contains(ch, tc.challenge) {
				t.Fatalf("WWW-Authenticate %q, want it to contain %q", ch, tc.challenge)
			}
			var body struct {
				Success bool   `json:"success"`
				Code    string `json:"code"`
			}
			r.decode(t, &body)
			if body.Success || body.Code != "UNAUTHORIZED" {
				t.Fatalf("body %s, want success false and code UNAUTHORIZED", r.body)
			}
		})
	}

	t.Run("revoked OAuth token", func(t *testing.T) {
		if err := f.oauth.RevokeAuthorization(t.Context(), alice.ID, readID); err != nil {
			t.Fatal(err)
		}
		f.clk.Advance(2 * time.Second) // past the verifier's cache
		if r := f.get(t, riskPath("bot-a"), readTok); r.status != http.StatusUnauthorized {
			t.Fatalf("status %d after revocation, want 401: %s", r.status, r.body)
		}
	})

	t.Run("password change ends sessions and tokens", func(t *testing.T) {
		sess, tok := f.session(t, alice), f.bearer(t, alice)
		if err := f.users.SetPassword(t.Context(), alice.ID, "another horse battery"); err != nil {
			t.Fatal(err)
		}
		f.clk.Advance(2 * time.Second)
		for name, c := range map[string]cred{"session": sess, "bearer": tok} {
			if r := f.get(t, riskPath("bot-a"), c); r.status != http.StatusUnauthorized {
				t.Fatalf("%s: status %d after a password change, want 401", name, r.status)
			}
		}
	})
}

func TestForeignBotLooksMissing(t *testing.T) {
	f := newFixture(t)
	alice, bob := f.user(t, "alice@example.com"), f.user(t, "bob@example.com")
	f.projectBot(t, "bot-b", "bob@example.com", "acct-b")
	foreign := f.get(t, riskPath("bot-b"), f.bearer(t, alice))
	missing := f.get(t, riskPath("no-such-bot"), f.bearer(t, alice))
	if foreign.status != http.StatusNotFound || missing.status != http.StatusNotFound {
		t.Fatalf("statuses %d and %d, want 404 for both", foreign.status, missing.status)
	}
	// Same body, the timestamp apart (the clock is pinned, so it is equal too).
	if string(foreign.body) != string(missing.body) {
		t.Fatalf("foreign bot body %s differs from missing bot body %s", foreign.body, missing.body)
	}
	if own := f.get(t, riskPath("bot-b"), f.bearer(t, bob)); own.status != http.StatusOK {
		t.Fatalf("owner gets %d: %s", own.status, own.body)
	}
}

func TestReadAPIIsHTTPSOnly(t *testing.T) {
	f := newFixture(t)
	alice := f.user(t, "alice@example.com")
	f.projectBot(t, "bot-a", "alice@example.com", "acct-a")
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, f.url+riskPath("bot-a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	f.bearer(t, alice)(req)
	resp, err := http.DefaultClient.Do(req) // plain HTTP, no X-Forwarded-Proto
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusOK {
		t.Fatal("a plain-HTTP read was served")
	}
}
