package e2e_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/authd"
	"github.com/sigops/sigops/mcpd"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/signal"
)

// tssdkDir holds the host script and its pinned dependency, the official TypeScript MCP
// client SDK (package-lock.json); node_modules is installed by npm ci on first use.
const tssdkDir = "tssdk"

// A host on the official TypeScript MCP client SDK, with no scope configured, signs in as
// the MCP authorization spec has it and ends with an mcp:read token (the 401 challenge
// names mcp:read); its first paper call is answered 403 insufficient_scope and the SDK
// steps up to mcp:paper through a second consent, after which the call succeeds. The SDK
// also validates every structured result against the tool's output schema.
//
// Unlike the other MCP tests, authd and mcpd run here on the loopback addresses the SDK
// connects to: the SDK checks that the protected resource metadata names the URL it
// connected to, and sends that resource indicator to authd.
func TestTypeScriptSDKHostStartsAtReadAndStepsUp(t *testing.T) {
	node := lookTool(t, "node")
	npm := lookTool(t, "npm")
	if _, err := os.Stat(filepath.Join(tssdkDir, "node_modules", "@modelcontextprotocol", "client")); err != nil {
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, npm, "ci", "--no-audit", "--no-fund")
		cmd.Dir = tssdkDir
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("npm ci in test/e2e/%s: %v\n%s", tssdkDir, err, b)
		}
	}

	// authd and mcpd, each knowing the other's real URL.
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	keys, err := auth.NewKeyring(key, nil)
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	authTS, mcpTS := httptest.NewUnstartedServer(nil), httptest.NewUnstartedServer(nil)
	base, mcpURL := "https://"+authTS.Listener.Addr().String(), "https://"+mcpTS.Listener.Addr().String()
	as, err := authd.New(authd.Options{Redis: rdb, Keys: keys, BaseURL: base, MCPURL: mcpURL,
		KDF: auth.KDFParams{MemoryKiB: 64, Time: 1, Threads: 1}, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	authTS.Config.Handler = as.Handler()
	authTS.StartTLS()
	t.Cleanup(authTS.Close)
	v, err := auth.NewVerifier(auth.VerifierOptions{Redis: rdb, Keys: keys, Issuer: base, Audiences: []string{mcpURL + mcpd.Path, base + "/api"}})
	if err != nil {
		t.Fatal(err)
	}
	ms, err := mcpd.New(mcpd.Options{Redis: rdb, BaseURL: base, MCPURL: mcpURL, Verifier: v, Users: users,
		OAuth: auth.NewOAuth(rdb, auth.OAuthOptions{}), Trading: api, Symbols: func() *signal.Symbols { return paperSymbols }, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	mcpTS.Config.Handler = ms.Handler()
	mcpTS.StartTLS()
	t.Cleanup(mcpTS.Close)
	// Node trusts the test servers' certificate (both use httptest's) as a host trusts a CA.
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: authTS.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}

	u := newAgentUser(t, "tssdk@example.com")
	_, botID := deployFor(t, u.Email, &tradingv1.SignalBot{ObjectMeta: metav1.ObjectMeta{Name: "tssdk"},
		Spec: tradingv1.SignalBotSpec{Symbol: "BTC/USDT"}})

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "host.mjs")
	cmd.Dir = tssdkDir
	cmd.Env = append(os.Environ(), "MCP_URL="+mcpURL+mcpd.Path, "BOT_ID="+botID, "NODE_EXTRA_CA_CERTS="+caFile)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()

	// The user: a browser that logs in once and consents to what each authorization asks.
	jar, _ := cookiejar.New(nil)
	b := &http.Client{Transport: authTS.Client().Transport, Jar: jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var asked, tokens, checked []string
	var sent map[string]any
	done := false
	lines := bufio.NewScanner(stdout)
	for lines.Scan() {
		var ev struct {
			Event, URL, Scope, Message string
			Result                     map[string]any
		}
		if err := json.Unmarshal(lines.Bytes(), &ev); err != nil {
			t.Fatalf("host printed %q: %v", lines.Text(), err)
		}
		switch ev.Event {
		case "authorize":
			a, err := url.Parse(ev.URL)
			if err != nil {
				t.Fatal(err)
			}
			if got := a.Query().Get("resource"); got != mcpURL+mcpd.Path {
				t.Fatalf("authorization's resource %q, want %s", got, mcpURL+mcpd.Path)
			}
			asked = append(asked, a.Query().Get("scope"))
			consentTo(t, b, base, ev.URL, u.Email)
		case "tokens":
			tokens = append(tokens, ev.Scope)
		case "check_auth":
			checked = append(checked, ev.Scope)
		case "send_signal":
			sent = ev.Result
		case "done":
			done = true
		case "error":
			t.Fatalf("host failed: %s\nstderr: %s", ev.Message, stderr.String())
		}
	}
	if !done {
		t.Fatalf("host stopped early; stderr: %s", stderr.String())
	}
	// First at least privilege, then the step-up the 403 named (the SDK asks for the union
	// of what it holds and what the challenge names; authd normalizes to the highest).
	if len(asked) != 2 || asked[0] != auth.ScopeRead || !strings.Contains(asked[1], auth.ScopePaper) || strings.Contains(asked[1], auth.ScopeLive) {
		t.Fatalf("authorizations asked for %q, want mcp:read then mcp:paper", asked)
	}
	if len(tokens) != 2 || tokens[0] != auth.ScopeRead || tokens[1] != auth.ScopePaper {
		t.Fatalf("tokens of scope %q, want mcp:read then mcp:paper", tokens)
	}
	if len(checked) != 2 || checked[0] != auth.ScopeRead || checked[1] != auth.ScopePaper {
		t.Fatalf("check_auth saw %q", checked)
	}
	if sent["success"] != true || sent["message"] != "Signal queued" {
		t.Fatalf("send_signal after the step-up: %v", sent)
	}
}

// consentTo is the user's part of an authorization: the browser opens authURL, logs in as
// email when it has no session yet, approves the scope asked on the consent page, and
// delivers the redirect to the host's loopback callback.
func consentTo(t *testing.T, b *http.Client, base, authURL, email string) {
	t.Helper()
	resp, _ := browseAt(t, b, base, http.MethodGet, authURL, nil)
	if loc := resp.Header.Get("Location"); strings.HasPrefix(loc, "/login") {
		_, page := browseAt(t, b, base, http.MethodGet, loc, nil)
		resp, _ = browseAt(t, b, base, http.MethodPost, "/login", url.Values{"csrf_token": {formField(t, csrfRe, page)},
			"next": {formField(t, nextRe, page)}, "email": {email}, "password": {agentPassword}})
		resp, _ = browseAt(t, b, base, http.MethodGet, resp.Header.Get("Location"), nil)
	}
	loc := resp.Header.Get("Location")
	if !strings.HasPrefix(loc, "/oauth/consent") {
		t.Fatalf("authorize: %d to %q", resp.StatusCode, loc)
	}
	_, page := browseAt(t, b, base, http.MethodGet, loc, nil)
	resp, _ = browseAt(t, b, base, http.MethodPost, "/oauth/consent", url.Values{"csrf_token": {formField(t, csrfRe, page)},
		"request": {formField(t, requestRe, page)}, "action": {"approve"}})
	back := resp.Header.Get("Location")
	if !strings.HasPrefix(back, "http://127.0.0.1:") || !strings.Contains(back, "code=") {
		t.Fatalf("consent redirected to %q (%d)", back, resp.StatusCode)
	}
	cb, err := http.Get(back)
	if err != nil {
		t.Fatal(err)
	}
	cb.Body.Close()
}

// browseAt is browse against base instead of the suite's authd.
func browseAt(t *testing.T, b *http.Client, base, method, u string, form url.Values) (*http.Response, string) {
	t.Helper()
	if strings.HasPrefix(u, "/") {
		u = base + u
	}
	return browse(t, b, method, u, form)
}

// lookTool is the path of a program the test runs; its absence fails the test with what to
// install (Node.js 20 and npm come with the project's machines).
func lookTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is needed to run the TypeScript SDK host (Node.js 20 with npm): %v", name, err)
	}
	return p
}
