package mcpd_test

import (
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

// One tools/call of get_bot_risk on a live session costs a bounded number of Redis round
// trips; the caller's account is read once (tier and email together), not again by the tool.
// The fixture's clock stands still, so the verifier's cache holds the token's facts.
func TestGetBotRiskRoundTrips(t *testing.T) {
	_, rdb := storetest.New(t)
	trips := &storetest.Trips{}
	rdb.AddHook(trips)
	f := newFixtureOn(t, rdb)
	reg := registry.New(rdb)
	ts := f.serve(t, func(o *mcpd.Options) { o.Bots = reg })
	u := f.user(t, "ada@example.com", auth.TierPro)
	bot := registry.Bot{ID: "bot-r", Namespace: "trading", Name: "risk", Owner: "ada@example.com",
		Account: registry.Account{Kind: registry.AccountPaper, Name: "main"}, Market: "spot", Symbol: "BTC/USDT",
		PositionSize: "10%", Leverage: 1, Availability: "active", WebhookEnabled: true,
		Risk: registry.Risk{MaxExposure: "0.8", DailyLossLimit: "100", MaxConsecutiveLosses: 4}}
	if err := reg.Project(t.Context(), bot, "hash-r"); err != nil {
		t.Fatal(err)
	}
	if _, err := rdb.TxPipelined(t.Context(), func(p redis.Pipeliner) error {
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
	// Four: the caller's tier and email (HMGET), the rate limit (script), the bot
	// (HGETALL), and its risk counters with its open symbols (HGETALL and SMEMBERS in one
	// pipeline; open positions would add one pipeline of their reads). The token's Redis
	// facts come from the verifier's cache; protocol 2026-07-28 has no session to check.
	// Reading the whole account for the owner check (Users.Get: the user hash and the
	// wallet) would add two.
	if len(got) > 4 || !slices.Contains(got, "hmget") {
		t.Fatalf("%d round trips: %s", len(got), strings.Join(got, " | "))
	}
}
