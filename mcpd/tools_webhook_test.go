package mcpd_test

import (
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/mcpd"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/test/testenv"
)

// TestGetWebhookURL runs on a real API server (no controllers): the test makes the bots,
// their projections and their webhook Secrets as the SignalBot controller would.
func TestGetWebhookURL(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	k8s, err := env.Client()
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	ctx := t.Context()
	reg := registry.New(f.rdb)
	ts := f.serve(t, func(o *mcpd.Options) {
		o.Bots, o.Fleet = reg, fleet.New(fleet.Options{Client: k8s, Redis: f.rdb, Now: f.clk.Now})
	})
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "trading"}}); err != nil {
		t.Fatal(err)
	}
	// bot makes a SignalBot of ada's on paper or on an exchange connection, its projection
	// and, unless pending, its webhook Secret; it returns the bot's ID.
	bot := func(name string, live, pending bool) string {
		t.Helper()
		sb := &tradingv1.SignalBot{ObjectMeta: metav1.ObjectMeta{Namespace: "trading", Name: name},
			Spec: tradingv1.SignalBotSpec{Owner: "ada@example.com", Symbol: "BTC/USDT"}}
		acct := registry.Account{Kind: registry.AccountPaper, Name: "paper", ID: "acct-1"}
		if live {
			sb.Spec.ExchangeConnectionRef = &tradingv1.LocalObjectReference{Name: "binance"}
			acct = registry.Account{Kind: registry.AccountExchange, Name: "binance", ID: "xc-1"}
		} else {
			sb.Spec.PaperAccountRef = &tradingv1.LocalObjectReference{Name: "paper"}
		}
		if err := k8s.Create(ctx, sb); err != nil {
			t.Fatal(err)
		}
		id := string(sb.UID)
		if err := reg.Project(ctx, registry.Bot{ID: id, Namespace: "trading", Name: name, Owner: "ada@example.com",
			Account: acct, Market: "spot", Symbol: "BTC/USDT", PositionSize: "10%", Leverage: 1, Availability: "active",
			WebhookEnabled: true}, "hash-"+id); err != nil {
			t.Fatal(err)
		}
		if !pending {
			if err := k8s.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "trading", Name: name + "-webhook"},
				Data: map[string][]byte{"url": []byte("https://sigops.test/api/webhooks/trade/" + name + "-secret-id")}}); err != nil {
				t.Fatal(err)
			}
		}
		return id
	}
	paperBot, liveBot, pendingBot := bot("trend", false, false), bot("live", true, false), bot("fresh", false, true)

	ada := f.user(t, "ada@example.com", auth.TierPro)
	bob := f.user(t, "bob@example.com", auth.TierPro)
	read, _ := f.oauthToken(t, ada, "agent", auth.ScopeRead, testResource)
	paper, _ := f.oauthToken(t, ada, "agent", auth.ScopePaper, testResource)
	live, _ := f.oauthToken(t, ada, "agent", auth.ScopeLive, testResource)
	call := func(id string) string {
		return `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_webhook_url","arguments":{"botId":"` + id + `"}}}`
	}
	// mcp:read is refused the URL of a paper bot, mcp:paper that of a live bot.
	for _, tc := range []struct{ token, bot, scope string }{{read.Token, paperBot, "mcp:paper"}, {paper.Token, liveBot, "mcp:live"}} {
		res, body := post(t, ts, tc.token, call(tc.bot))
		if res.StatusCode != http.StatusForbidden || !strings.Contains(res.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`) ||
			!strings.Contains(res.Header.Get("WWW-Authenticate"), `scope="`+tc.scope+`"`) {
			t.Fatalf("%s: %d %s %q", tc.scope, res.StatusCode, body, res.Header.Get("WWW-Authenticate"))
		}
	}
	paperC, _ := mcpClient(t, paper.Token, "", ts)
	liveC, _ := mcpClient(t, live.Token, "", ts)
	if _, text := toolResult(t, paperC, "get_webhook_url", map[string]any{"botId": paperBot}); text !=
		`{"botId":"`+paperBot+`","webhookUrl":"https://sigops.test/api/webhooks/trade/trend-secret-id"}` {
		t.Fatalf("paper bot: %s", text)
	}
	if _, text := toolResult(t, liveC, "get_webhook_url", map[string]any{"botId": liveBot}); text !=
		`{"botId":"`+liveBot+`","webhookUrl":"https://sigops.test/api/webhooks/trade/live-secret-id"}` {
		t.Fatalf("live bot: %s", text)
	}
	if text := toolErr(t, paperC, "get_webhook_url", map[string]any{"botId": pendingBot}); text !=
		`{"code":"NOT_FOUND","message":"bot `+pendingBot+` has no webhook URL yet"}` {
		t.Fatalf("no Secret yet: %s", text)
	}
	// bob (a bearer JWT, not limited by scope) is answered as for a missing bot.
	bobC, _ := mcpClient(t, f.bearer(t, bob).Token, "", ts)
	for _, id := range []string{liveBot, "no-such-bot"} {
		if text := toolErr(t, bobC, "get_webhook_url", map[string]any{"botId": id}); text != `{"code":"NOT_FOUND","message":"bot not found"}` {
			t.Fatalf("bob on %s: %s", id, text)
		}
	}
}
