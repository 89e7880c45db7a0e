package authd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/oauth2"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// loginResult is one POST /api/auth/login seen from the client.
type loginResult struct {
	status     int
	retryAfter string
	body       map[string]any
	start, end time.Time
	err        error
}

// postLogin calls POST /api/auth/login without touching t, so goroutines may use it.
func postLogin(c *http.Client, base, email, password string) loginResult {
	r := loginResult{start: time.Now()}
	body, _ := json.Marshal(map[string]string{"email": email, "password": password})
	resp, err := c.Post(base+"/api/auth/login", "application/json", bytes.NewReader(body))
	r.end = time.Now()
	if err != nil {
		r.err = err
		return r
	}
	defer resp.Body.Close()
	r.status, r.retryAfter = resp.StatusCode, resp.Header.Get("Retry-After")
	_ = json.NewDecoder(resp.Body).Decode(&r.body)
	return r
}

// slowKDF makes each verification take long enough (milliseconds, not microseconds) that
// concurrent attempts really overlap inside the password check.
var slowKDF = auth.KDFParams{MemoryKiB: 8 * 1024, Time: 2, Threads: 1}

// warmClient is a client with n TLS connections to the harness already open, so a test's
// burst measures authd rather than the test's own TLS handshakes (a browser, too, has its
// connection from loading the login page).
func warmClient(t *testing.T, h *harness, n int) *http.Client {
	t.Helper()
	tr := h.ts.Client().Transport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = n
	c := &http.Client{Transport: tr, Timeout: 30 * time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			resp, err := c.Get(h.base + "/healthz")
			if err != nil {
				errs <- err
				return
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	return c
}

// TestLoginFloodVerifiesAtMostTheLimit: 300 concurrent wrong-password logins for one account
// from one address check at most LoginPerAccount passwords (counted as real argon2id
// verifications), and a real user of another account behind the same address logs in
// within 2 s during the flood. Refusals count nowhere, so the flood spends only its admitted
// attempts of the address's budget and does not lock that user out.
func TestLoginFloodVerifiesAtMostTheLimit(t *testing.T) {
	h := newHarness(t, func(o *Options) { o.KDF = slowKDF })
	ctx := context.Background()
	for _, email := range []string{"target@example.com", "real@example.com"} {
		// Created through the server's store so the stored hash has the slow parameters.
		if _, err := h.srv.users.Create(ctx, auth.NewUser{Email: email, Password: testPassword, Tier: auth.TierFree}); err != nil {
			t.Fatal(err)
		}
	}
	const n = 300
	flood, user := warmClient(t, h, n), warmClient(t, h, 1)
	before := h.srv.users.Verifications()
	results := make([]loginResult, n)
	var real loginResult
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			results[i] = postLogin(flood, h.base, "target@example.com", "wrong password "+string(rune('a'+i%26)))
		})
	}
	wg.Go(func() {
		<-start
		real = postLogin(user, h.base, "real@example.com", testPassword)
	})
	close(start)
	wg.Wait()

	if real.err != nil || real.status != http.StatusOK {
		t.Fatalf("real user's login during the flood: %d %v %v", real.status, real.body, real.err)
	}
	if d := real.end.Sub(real.start); d > 2*time.Second {
		t.Fatalf("real user's login took %v during the flood", d)
	}
	checked, refused := 0, 0
	var first, last time.Time
	for i, r := range results {
		switch {
		case r.err != nil:
			t.Fatalf("flood request %d: %v", i, r.err)
		case r.status == http.StatusUnauthorized:
			checked++
		case r.status == http.StatusTooManyRequests:
			refused++
			msg, _ := r.body["error"].(string)
			if r.retryAfter == "" || r.body["code"] != "RATE_LIMITED" || !strings.HasPrefix(msg, "Too many failed sign-in attempts") {
				t.Fatalf("refusal %d: Retry-After %q body %v", i, r.retryAfter, r.body)
			}
		default:
			t.Fatalf("flood request %d answered %d %v", i, r.status, r.body)
		}
		if first.IsZero() || r.start.Before(first) {
			first = r.start
		}
		if r.end.After(last) {
			last = r.end
		}
	}
	if !last.After(real.start) || !first.Before(real.end) {
		t.Fatal("the real user's login did not overlap the flood")
	}
	verified := int(h.srv.users.Verifications() - before)
	t.Logf("flood of %d over %v: %d passwords checked, %d refused; %d verifications in all; real login %v", n,
		last.Sub(first), checked, refused, verified, real.end.Sub(real.start))
	if checked < 1 || checked > auth.LoginPerAccount.Max {
		t.Fatalf("%d wrong passwords were checked, limit %d", checked, auth.LoginPerAccount.Max)
	}
	// Every checked attempt is exactly one argon2id verification, plus the real user's.
	if verified != checked+1 {
		t.Fatalf("%d verifications for %d checked attempts and one real login", verified, checked)
	}
}

// TestLoginHashQueueFull: with every hashing slot busy and the waiting queue full, a login
// is answered 429 at once with Retry-After, checks nothing, and spends none of its counts.
func TestLoginHashQueueFull(t *testing.T) {
	h := newHarness(t, func(o *Options) {
		o.KDF = auth.KDFParams{MemoryKiB: 32 * 1024, Time: 4, Threads: 1}
		o.HashConcurrency, o.HashQueue = 1, 1
		o.LoginPerIP = auth.Limit{Kind: "login-ip", Max: 1000, Window: time.Minute}
	})
	client := &http.Client{Transport: h.ts.Client().Transport, Timeout: 30 * time.Second}
	before := h.srv.users.Verifications()
	const n = 20
	results := make([]loginResult, n)
	email := func(i int) string { return "queue" + string(rune('a'+i)) + "@example.com" }
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			results[i] = postLogin(client, h.base, email(i), "some password")
		})
	}
	close(start)
	wg.Wait()
	checked, busy := 0, 0
	for i, r := range results {
		switch {
		case r.err != nil:
			t.Fatalf("%d: %v", i, r.err)
		case r.status == http.StatusUnauthorized:
			checked++
		case r.status == http.StatusTooManyRequests && r.body["error"] == auth.ErrHashBusy.Message:
			busy++
			if r.retryAfter != "1" || r.body["code"] != "RATE_LIMITED" {
				t.Fatalf("busy answer: Retry-After %q body %v", r.retryAfter, r.body)
			}
			// Nothing was checked, so the account's attempt was given back.
			if c, err := h.rdb.Get(context.Background(), store.LoginRateLimit("login-account", auth.LoginAccount(email(i)))).Int(); err == nil && c != 0 {
				t.Fatalf("a refused attempt stayed counted: %d", c)
			} else if err != nil && !errors.Is(err, redis.Nil) {
				t.Fatal(err)
			}
		default:
			t.Fatalf("%d: %d %v", i, r.status, r.body)
		}
	}
	t.Logf("%d checked, %d refused as busy", checked, busy)
	if busy == 0 || checked == 0 {
		t.Fatalf("checked %d, busy %d: the queue bound did not act", checked, busy)
	}
	if v := int(h.srv.users.Verifications() - before); v != checked {
		t.Fatalf("%d verifications for %d checked attempts", v, checked)
	}
	if c, _ := h.rdb.Get(context.Background(), store.LoginRateLimit("login-ip", "127.0.0.1")).Int(); c != checked {
		t.Fatalf("address counter %d, want the %d failures", c, checked)
	}
}

// viaProxy is a harness whose TLS listener's peer (127.0.0.1) is a trusted proxy, so a test
// names the client address in X-Forwarded-For.
func viaProxy(o *Options) { o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")} }

var publicMeta = map[string]any{"client_name": "Agent", "redirect_uris": []string{"https://a.example/cb"},
	"token_endpoint_auth_method": "none"}

func (h *harness) registerFrom(addr string, meta map[string]any) (int, map[string]any, http.Header) {
	h.t.Helper()
	body, _ := json.Marshal(meta)
	req, _ := http.NewRequest(http.MethodPost, h.base+"/api/oauth/register", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", addr)
	resp, err := h.ts.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m, resp.Header
}

func TestRegistrationPer48(t *testing.T) {
	h := newHarness(t, viaProxy, func(o *Options) {
		o.RegisterPerIP = auth.Limit{Kind: "register-ip", Max: 2, Window: time.Hour}
		o.RegisterPerNet48 = auth.Limit{Kind: "register-net48", Max: 3, Window: time.Hour}
	})
	for _, c := range []struct {
		addr string
		want int
	}{
		{"2001:db8:aa:1::1", 201},
		{"2001:db8:aa:1::2", 201},
		{"2001:db8:aa:1:ffff::3", 429}, // the /64's two are spent
		{"2001:db8:aa:2::1", 201},      // another /64 of the /48: its third
		{"2001:db8:aa:3::1", 429},      // a fresh /64, but the /48 is spent
		{"2001:db8:aa:ffff::1", 429},
		{"2001:db8:bb:1::1", 201}, // another /48
		{"192.0.2.1", 201},        // IPv4 has no /48 counter
	} {
		st, body, hdr := h.registerFrom(c.addr, publicMeta)
		if st != c.want {
			t.Fatalf("%s: %d %v, want %d", c.addr, st, body, c.want)
		}
		if st == 429 && (body["error"] != "rate_limited" || hdr.Get("Retry-After") == "") {
			t.Fatalf("%s: refusal %v %v", c.addr, body, hdr)
		}
	}
}

func TestRegistrationGlobalBudget(t *testing.T) {
	h := newHarness(t, viaProxy, func(o *Options) {
		o.RegisterGlobal = auth.Limit{Kind: "register-global", Max: 3, Window: time.Hour}
	})
	for i, addr := range []string{"192.0.2.1", "198.51.100.1", "2001:db8:1::1"} {
		if st, body, _ := h.registerFrom(addr, publicMeta); st != 201 {
			t.Fatalf("registration %d: %d %v", i, st, body)
		}
	}
	st, body, hdr := h.registerFrom("203.0.113.1", publicMeta)
	desc, _ := body["error_description"].(string)
	if st != 429 || body["error"] != "rate_limited" || !strings.Contains(desc, "service") {
		t.Fatalf("over the global budget: %d %v", st, body)
	}
	if ra := hdr.Get("Retry-After"); ra == "" || ra == "0" {
		t.Fatalf("Retry-After %q", ra)
	}
}

func TestRegistrationSizeLimits(t *testing.T) {
	h := newHarness(t)
	uri := func(n int) string {
		p := "https://app.example.com/"
		return p + strings.Repeat("a", n-len(p))
	}
	meta := func(name string, uris ...string) map[string]any {
		return map[string]any{"client_name": name, "redirect_uris": uris, "token_endpoint_auth_method": "none"}
	}
	for _, c := range []struct {
		name string
		meta map[string]any
		st   int
		err  string
	}{
		{"5 URIs, one of 512 bytes, a 64-byte name", meta(strings.Repeat("n", 64), uri(100), uri(101), uri(102), uri(103), uri(512)), 201, ""},
		{"6 URIs", meta("x", uri(100), uri(101), uri(102), uri(103), uri(104), uri(105)), 400, "invalid_redirect_uri"},
		{"a 513-byte URI", meta("x", uri(513)), 400, "invalid_redirect_uri"},
		{"a 65-byte name", meta(strings.Repeat("n", 65), uri(100)), 400, "invalid_client_metadata"},
	} {
		st, r := h.register(c.meta)
		if st != c.st || r.Error != c.err {
			t.Errorf("%s: %d %+v, want %d %q", c.name, st, r, c.st, c.err)
		}
	}
}

// TestUnusedClientExpiry: a registration expires after 24 h unless it obtains a token; the
// first token keeps it for the refresh-token lifetime, and refreshing still works.
func TestUnusedClientExpiry(t *testing.T) {
	h := newHarness(t)
	h.user("ttl@example.com", auth.TierFree)
	ctx := context.Background()
	ttl := func(id string) time.Duration { return h.rdb.TTL(ctx, store.OAuthClient(id)).Val() }
	cfg := h.publicClient("mcp:read")
	if d := ttl(cfg.ClientID); d <= 23*time.Hour || d > 24*time.Hour {
		t.Fatalf("unused client TTL %v", d)
	}
	b := h.browser()
	b.login("ttl@example.com", testPassword)
	code, v := h.grant(b, cfg)
	if d := ttl(cfg.ClientID); d > 24*time.Hour {
		t.Fatalf("consent alone extended the client: %v", d)
	}
	tok, err := cfg.Exchange(h.ctx(), code, oauth2.VerifierOption(v))
	if err != nil {
		t.Fatal(err)
	}
	if d := ttl(cfg.ClientID); d <= auth.RefreshTokenLifetime-time.Hour {
		t.Fatalf("client TTL after its first token %v, want about %v", d, auth.RefreshTokenLifetime)
	}
	st, body, _ := h.tokenPost("/api/oauth/token", refreshForm(cfg.ClientID, tok.RefreshToken, ""), "", "")
	if st != 200 {
		t.Fatalf("refresh: %d %v", st, body)
	}
	if d := ttl(cfg.ClientID); d <= auth.RefreshTokenLifetime-time.Hour {
		t.Fatalf("client TTL after a refresh %v", d)
	}
	// An unused client really goes: with its record gone, authorize no longer knows it.
	unused := h.publicClient("mcp:read")
	h.rdb.PExpire(ctx, store.OAuthClient(unused.ClientID), time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	resp, page := b.get(unused.AuthCodeURL("s", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
	if resp.StatusCode != 400 || !strings.Contains(page, "unknown client_id") {
		t.Fatalf("expired client at authorize: %d", resp.StatusCode)
	}
}

// TestConsentCapPerUser: a user's pending consent requests are capped; the oldest give way,
// the newest can still be answered.
func TestConsentCapPerUser(t *testing.T) {
	h := newHarness(t)
	u := h.user("cap@example.com", auth.TierFree)
	b := h.browser()
	b.login("cap@example.com", testPassword)
	cfg := h.publicClient("mcp:read")
	var consentURLs []string
	for i := range auth.MaxPendingPerUser + 2 {
		resp, body := b.get(cfg.AuthCodeURL("st", oauth2.S256ChallengeOption(oauth2.GenerateVerifier())))
		loc := resp.Header.Get("Location")
		if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/oauth/consent?request=") {
			t.Fatalf("authorize %d: %d %s %s", i, resp.StatusCode, loc, body)
		}
		consentURLs = append(consentURLs, loc)
		h.clk.Advance(time.Millisecond) // distinct ages
	}
	if n := h.rdb.HLen(context.Background(), store.OAuthPending(u.ID)).Val(); n != int64(auth.MaxPendingPerUser) {
		t.Fatalf("%d pending requests stored, cap %d", n, auth.MaxPendingPerUser)
	}
	for i, loc := range consentURLs {
		resp, _ := b.get(loc)
		want := http.StatusOK
		if i < 2 {
			want = http.StatusBadRequest // dropped: "Request expired"
		}
		if resp.StatusCode != want {
			t.Fatalf("consent page %d: %d, want %d", i, resp.StatusCode, want)
		}
	}
	// The newest is answered normally.
	last := consentURLs[len(consentURLs)-1]
	_, page := b.get(last)
	resp, _ := b.post("/oauth/consent", url.Values{"csrf_token": {field(t, csrfRe, page)},
		"request": {field(t, requestRe, page)}, "action": {"approve"}})
	loc, _ := url.Parse(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || loc == nil || loc.Query().Get("code") == "" {
		t.Fatalf("approve the newest: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	// Another user's browser cannot open this user's request.
	h.user("other@example.com", auth.TierFree)
	other := h.browser()
	other.login("other@example.com", testPassword)
	if resp, _ := other.get(consentURLs[len(consentURLs)-2]); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("another user opened the request: %d", resp.StatusCode)
	}
}

// With PostgreSQL, the record of registrations, down, a registration answers 503
// temporarily_unavailable with Retry-After, and nothing is registered.
func TestRegistrationWithPostgreSQLDown(t *testing.T) {
	down := dbtest.Pool(t, dbtest.NewURL(t))
	down.Close()
	h := newHarness(t, viaProxy, func(o *Options) { o.DB = down })
	st, body, hdr := h.registerFrom("192.0.2.7", publicMeta)
	if st != http.StatusServiceUnavailable || body["error"] != "temporarily_unavailable" || hdr.Get("Retry-After") != "5" {
		t.Fatalf("registration with PostgreSQL down: %d %v %v", st, body, hdr)
	}
	if keys, err := storetest.Keys(context.Background(), h.rdb, "sigops:oauth:client:*"); err != nil || len(keys) != 0 {
		t.Fatalf("registered in Redis alone: %v %v", keys, err)
	}
}
