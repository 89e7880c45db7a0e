package mcpd_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"

	"github.com/sigops/sigops/mcpd"
	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/registry"
)

// The kill switch stops every connected app of the user on every replica from its next
// call: both apps, each on its own replica, answer POLICY_LIMIT naming the switch for
// every call above mcp:read (entries and exits alike), keep reading, and trade again once
// it is lifted. The user's own bearer JWT is not an app and is not stopped.
func TestKillSwitchStopsEveryAppOnEveryReplica(t *testing.T) {
	f := newBotFixture(t)
	second := f.serve(t, func(o *mcpd.Options) {
		o.Bots, o.Trading, o.Analytics, o.Portfolio, o.Candles = f.reg, f.trading, f.analyt, f.folio, f.candles
	})
	signalBot(t, f, "b1", "ada@example.com", registry.AccountPaper)
	tokA, _ := f.oauthToken(t, f.adaUser, "app-a", auth.ScopeLive, testResource)
	tokB, _ := f.oauthToken(t, f.adaUser, "app-b", auth.ScopePaper, testResource)
	appA, _ := mcpClient(t, tokA.Token, "", f.ts)
	appB, _ := mcpClient(t, tokB.Token, "", second)
	own, _ := mcpClient(t, f.bearer(t, f.adaUser).Token, "", second)
	type answer struct{ Message string }
	if a := toolOK[answer](t, appA, "send_signal", map[string]any{"botId": "b1", "action": "buy"}); a.Message != "Signal queued" {
		t.Fatalf("A before: %+v", a)
	}
	if a := toolOK[answer](t, appB, "send_signal", map[string]any{"botId": "b1", "action": "buy"}); a.Message != "Signal queued" {
		t.Fatalf("B before: %+v", a)
	}

	sw := apppolicy.NewPolicies(f.rdb, f.clk.Now)
	if _, err := sw.Suspend(t.Context(), f.adaUser.ID); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for name, c := range map[string]*client.Client{"A": appA, "B": appB} {
		for _, args := range []map[string]any{{"botId": "b1", "action": "buy"}, {"botId": "b1", "action": "close"}} {
			text := toolErr(t, c, "send_signal", args)
			if !strings.Contains(text, `"code":"POLICY_LIMIT"`) || !strings.Contains(text, `"limit":"killSwitch"`) ||
				!strings.Contains(text, `"since":"2026-11-24T12:00:00Z"`) {
				t.Fatalf("app %s %v under the switch: %s", name, args, text)
			}
		}
		if page := toolOK[botsPage](t, c, "list_bots", nil); len(page.Bots) != 1 {
			t.Fatalf("app %s cannot read under the switch: %+v", name, page)
		}
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("refusals on both replicas took %s", took)
	}
	if a := toolOK[answer](t, own, "send_signal", map[string]any{"botId": "b1", "action": "close"}); a.Message != "Signal queued" {
		t.Fatalf("the user's own token under the switch: %+v", a)
	}
	if err := sw.Lift(t.Context(), f.adaUser.ID); err != nil {
		t.Fatal(err)
	}
	if a := toolOK[answer](t, appB, "send_signal", map[string]any{"botId": "b1", "action": "close"}); a.Message != "Signal queued" {
		t.Fatalf("B after the lift: %+v", a)
	}
}
