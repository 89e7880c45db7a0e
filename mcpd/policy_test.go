package mcpd_test

import (
	"strings"
	"sync"
	"testing"

	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/registry"
)

// A connected app's policy is enforced on the server: the bots it may act on, the venue,
// and its orders per hour, counted atomically across concurrent calls (20 at once take
// exactly the cap), with exits counted but never refused.
func TestAppPolicyOnTheServer(t *testing.T) {
	f := newBotFixture(t)
	for _, id := range []string{"b1", "b2"} {
		signalBot(t, f, id, "ada@example.com", registry.AccountPaper)
	}
	live := f.project(t, "x1", "ada@example.com")
	live.Account = registry.Account{Kind: registry.AccountExchange, Name: "binance", ID: "xc-1"}
	live.RateLimit = registry.Limit{PerMinute: 60, Burst: 10}
	if err := f.reg.Project(t.Context(), live, "hash-x1"); err != nil {
		t.Fatal(err)
	}
	ps := apppolicy.NewPolicies(f.rdb, f.clk.Now)
	if err := ps.Set(t.Context(), f.adaUser.ID, "app-narrow", apppolicy.Policy{Bots: []string{"b1"}, OrdersPerHour: 5}); err != nil {
		t.Fatal(err)
	}
	narrowTok, _ := f.oauthToken(t, f.adaUser, "app-narrow", auth.ScopeLive, testResource)
	narrow, _ := mcpClient(t, narrowTok.Token, "", f.ts)
	// No policy stored: the defaults (every bot, the scope's venue, 60 orders an hour).
	openTok, _ := f.oauthToken(t, f.adaUser, "app-open", auth.ScopeLive, testResource)
	open, _ := mcpClient(t, openTok.Token, "", f.ts)

	// Bots: b2 is not the app's; x1 neither.
	for _, id := range []string{"b2", "x1"} {
		if text := toolErr(t, narrow, "send_signal", map[string]any{"botId": id, "action": "buy"}); !strings.Contains(text, `"code":"POLICY_LIMIT"`) ||
			!strings.Contains(text, `"limit":"bots"`) || !strings.Contains(text, `"value":["b1"]`) {
			t.Fatalf("narrow app on %s: %s", id, text)
		}
	}
	// Venue: an app kept on paper is refused a live bot, though its token holds mcp:live.
	if err := ps.Set(t.Context(), f.adaUser.ID, "app-paper", apppolicy.Policy{OrdersPerHour: 60}); err != nil {
		t.Fatal(err)
	}
	paperTok, _ := f.oauthToken(t, f.adaUser, "app-paper", auth.ScopeLive, testResource)
	paperApp, _ := mcpClient(t, paperTok.Token, "", f.ts)
	if text := toolErr(t, paperApp, "send_signal", map[string]any{"botId": "x1", "action": "buy"}); !strings.Contains(text, `"limit":"venue"`) {
		t.Fatalf("paper-only app on a live bot: %s", text)
	}
	type answer struct{ Message string }
	if a := toolOK[answer](t, paperApp, "send_signal", map[string]any{"botId": "b2", "action": "close"}); a.Message != "Signal queued" {
		t.Fatalf("paper-only app on a paper bot: %+v", a)
	}
	if a := toolOK[answer](t, open, "send_signal", map[string]any{"botId": "x1", "action": "close"}); a.Message != "Signal queued" {
		t.Fatalf("app with the default policy on a live bot: %+v", a)
	}

	// Orders per hour: 20 entries at once, exactly 5 admitted.
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted, refused := 0, 0
	for i := range 20 {
		wg.Go(func() {
			res, text := toolResult(t, narrow, "send_signal", map[string]any{"botId": "b1", "action": "buy", "size": "0.001",
				"idempotencyKey": "k-" + string(rune('a'+i))})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case !res.IsError:
				admitted++
			case strings.Contains(text, `"limit":"ordersPerHour"`) && strings.Contains(text, `"value":5`) &&
				strings.Contains(text, `"resetsAt":"2026-11-24T13:00:00Z"`):
				refused++
			default:
				t.Errorf("entry %d: %s", i, text)
			}
		})
	}
	wg.Wait()
	if admitted != 5 || refused != 15 {
		t.Fatalf("%d admitted and %d refused, want 5 and 15", admitted, refused)
	}
	// An exit passes at the cap, and is counted.
	if a := toolOK[answer](t, narrow, "send_signal", map[string]any{"botId": "b1", "action": "close"}); a.Message != "Signal queued" {
		t.Fatalf("exit at the cap: %+v", a)
	}
	if n, err := ps.HourUsed(t.Context(), f.adaUser.ID, "app-narrow"); err != nil || n != 6 {
		t.Fatalf("orders counted this hour: %d %v, want 6", n, err)
	}
	// Refusals by the app's rules are journaled with their code.
	entries, _, err := audit.New(f.rdb, audit.Options{}).List(t.Context(), f.adaUser.ID, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	limited := 0
	for _, e := range entries {
		if e.Outcome.Code == errs.PolicyLimit {
			limited++
		}
	}
	if limited != 18 { // 2 bots, 1 venue, 15 over the hourly cap
		t.Fatalf("%d POLICY_LIMIT entries journaled, want 18", limited)
	}
	// Reads are never counted nor refused.
	if page := toolOK[botsPage](t, narrow, "list_bots", nil); len(page.Bots) != 3 {
		t.Fatalf("list_bots: %+v", page)
	}
}
