package mcpd_test

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/mcpd"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/risk"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// tripsFixture is one mcpd on a Redis whose round trips trips records, with ada and her
// paper bot id (a BTC/USDT spot bot, adjusted by with) projected.
func tripsFixture(t *testing.T, id string, with func(*registry.Bot)) (*fixture, *storetest.Trips, *httptest.Server, auth.User, registry.Bot) {
	t.Helper()
	_, rdb := storetest.New(t)
	trips := &storetest.Trips{}
	rdb.AddHook(trips)
	f := newFixtureOn(t, rdb)
	reg := registry.New(rdb)
	ts := f.serve(t, func(o *mcpd.Options) { o.Bots = reg })
	u := f.user(t, "ada@example.com", auth.TierPro)
	bot := registry.Bot{ID: id, Namespace: "trading", Name: id, Owner: "ada@example.com",
		Account: registry.Account{Kind: registry.AccountPaper, Name: "main"}, Market: "spot", Symbol: "BTC/USDT",
		PositionSize: "10%", Leverage: 1, Availability: "active", WebhookEnabled: true}
	with(&bot)
	if err := reg.Project(t.Context(), bot, "hash-"+id); err != nil {
		t.Fatal(err)
	}
	return f, trips, ts, u, bot
}

// One tools/call of get_bot_risk on a live session costs a bounded number of Redis round
// trips; the caller's account is read once (tier and email together), not again by the tool.
// The fixture's clock stands still, so the verifier's cache holds the token's facts.
func TestGetBotRiskRoundTrips(t *testing.T) {
	f, trips, ts, u, bot := tripsFixture(t, "bot-r", func(b *registry.Bot) {
		b.Risk = registry.Risk{MaxExposure: "0.8", DailyLossLimit: "100", MaxConsecutiveLosses: 4}
	})
	if _, err := f.rdb.TxPipelined(t.Context(), func(p redis.Pipeliner) error {
		risk.StageCounters(t.Context(), p, bot.ID, risk.Counters{Day: "2026-11-24", DayPnl: testkit.D("-40"), ConsecutiveLosses: 2})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	tok, _ := f.oauthToken(t, u, "agent", auth.ScopeRead, testResource)
	c, _ := mcpClient(t, tok.Token, "", ts)
	toolOK[map[string]any](t, c, "get_bot_risk", map[string]any{"botId": "bot-r"})
	trips.Take()
	toolOK[map[string]any](t, c, "get_bot_risk", map[string]any{"botId": "bot-r"})
	got := trips.Take()
	// Two: the token's live state with the caller's tier and email, the rate limit and the
	// session (one pipeline, nothing cached: protocol 2026-07-28 names no session here), then
	// the bot with its risk counters and open symbols (a second pipeline; open positions or
	// a paper account would add one more).
	want := []string{"hmget hmget exists evalsha", "hget hgetall smembers"}
	if !slices.Equal(got, want) {
		t.Fatalf("round trips: %s, want %s", strings.Join(got, " | "), strings.Join(want, " | "))
	}
}

// policyKeys are, per round trip of trips that touched a user's rules for their apps (the
// kill switch, an app's policy, its order count or its notional), the keys it touched.
func policyKeys(trips [][]redis.Cmder) [][]string {
	var out [][]string
	for _, cmds := range trips {
		var keys []string
		for _, c := range cmds {
			for _, a := range c.Args() {
				if s, ok := a.(string); ok && (strings.HasSuffix(s, ":apps-suspended") || strings.Contains(s, ":app:")) {
					keys = append(keys, s)
				}
			}
		}
		if len(keys) > 0 {
			out = append(out, keys)
		}
	}
	return out
}

// The app policy adds one Redis round trip to a trading call of a connected app, in which
// the kill switch, the policy, the hourly count and the day's notional are all read (and
// the counts taken);
// reads and the account's own bearer JWT add none.
func TestAppPolicyCostsOneRoundTrip(t *testing.T) {
	f, trips, ts, u, _ := tripsFixture(t, "bot-p", func(b *registry.Bot) { b.RateLimit = registry.Limit{PerMinute: 60, Burst: 10} })
	tok, _ := f.oauthToken(t, u, "agent", auth.ScopePaper, testResource)
	app, _ := mcpClient(t, tok.Token, "", ts)
	own, _ := mcpClient(t, f.bearer(t, u).Token, "", ts)
	// The first call loads the admission script into Redis's script cache (EVALSHA answers
	// NOSCRIPT, then EVAL): once per Redis server, not per call.
	toolOK[map[string]any](t, app, "send_signal", map[string]any{"botId": "bot-p", "action": "buy"})
	trips.Take()
	toolOK[map[string]any](t, app, "send_signal", map[string]any{"botId": "bot-p", "action": "buy", "size": "0.001"})
	got := policyKeys(trips.TakeCommands())
	if len(got) != 1 || len(got[0]) != 4 || !strings.HasSuffix(got[0][0], ":apps-suspended") ||
		!strings.HasSuffix(got[0][1], ":app:agent:policy") || !strings.Contains(got[0][2], ":app:agent:orders:") ||
		!strings.Contains(got[0][3], ":app:agent:notional:") {
		t.Fatalf("the app's trading call touched its rules in %d round trips: %v", len(got), got)
	}
	toolOK[map[string]any](t, app, "list_bots", nil)
	toolOK[map[string]any](t, own, "send_signal", map[string]any{"botId": "bot-p", "action": "close"})
	if got := policyKeys(trips.TakeCommands()); len(got) != 0 {
		t.Fatalf("a read and the account's own call touched app rules: %v", got)
	}
}
