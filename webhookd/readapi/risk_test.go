package readapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/risk"
)

// riskBody is the answer's data as a client reads it.
type riskBody struct {
	BotID                               string
	CurrentExposure, MaxExposureAllowed decimal.Decimal
	DailyLossLimit, DailyLossUsed       decimal.Decimal
	ConsecutiveLosses                   int
	MaxConsecutiveLosses                int
	RiskScore                           int
	RiskLevel                           string
}

func (f *fixture) risk(t *testing.T, botID string, c cred) riskBody {
	t.Helper()
	return okData[riskBody](t, f.get(t, riskPath(botID), c))
}

func TestRiskMetrics(t *testing.T) {
	f := newFixture(t)
	alice := f.bearer(t, f.user(t, "alice@example.com"))
	ctx := t.Context()

	// The account: 10,000 USDT; the bot buys 0.1 BTC at 60,000 (notional 6,000, fee 6):
	// free 3,994, the position uses 6,000 (its cost, on spot).
	if _, err := paper.NewAccounts(f.rdb).Ensure(ctx, paper.Config{ID: "acct-r", Namespace: "trading", Name: "main",
		Owner: "alice@example.com", Currency: "USDT", InitialBalance: testkit.D("10000"), FeeRate: testkit.D("0.001")}); err != nil {
		t.Fatal(err)
	}
	fill(t, f.rdb, "acct-r", "bot-r", exchange.OrderRequest{ClientOrderID: "o-r", Symbol: "BTC/USDT", Kind: exchange.Spot,
		Side: exchange.SideBuy, Type: exchange.Limit, Price: testkit.D("60000"), Amount: testkit.D("0.1")})
	book(t, f.rdb, position.Open("pos-r", "bot-r", "BTC/USDT", exchange.Spot, position.Long, 1,
		position.Fill{Amount: testkit.D("0.1"), Price: testkit.D("60000"), Fee: testkit.D("6"), At: f.clk.Now().UnixMilli()}, "sig-r"))
	bot := registry.Bot{ID: "bot-r", Namespace: "trading", Name: "r", Owner: "alice@example.com",
		Account: registry.Account{Kind: registry.AccountPaper, Name: "main", ID: "acct-r"}, Market: "spot", Symbol: "BTC/USDT",
		PositionSize: "10%", Leverage: 1, Availability: "active", WebhookEnabled: true,
		Risk: registry.Risk{MaxExposure: "0.8", DailyLossLimit: "100", MaxConsecutiveLosses: 4}}
	if err := f.reg.Project(ctx, bot, "hash-r"); err != nil {
		t.Fatal(err)
	}
	// Today's realised PnL −40 after two losses in a row.
	if _, err := f.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		risk.StageCounters(ctx, p, "bot-r", risk.Counters{Day: "2026-11-24", DayPnl: testkit.D("-40"), ConsecutiveLosses: 2})
		return nil
	}); err != nil {
		t.Fatal(err)
	}

	m := f.risk(t, "bot-r", alice)
	if m.BotID != "bot-r" {
		t.Fatalf("botId %q", m.BotID)
	}
	// 6,000 / (3,994 + 6,000) = 0.600360216…, six places.
	testkit.EqualD(t, "currentExposure", m.CurrentExposure, "0.60036")
	testkit.EqualD(t, "maxExposureAllowed", m.MaxExposureAllowed, "0.8")
	testkit.EqualD(t, "dailyLossLimit", m.DailyLossLimit, "100")
	testkit.EqualD(t, "dailyLossUsed", m.DailyLossUsed, "40")
	if m.ConsecutiveLosses != 2 || m.MaxConsecutiveLosses != 4 {
		t.Fatalf("losses %d of %d", m.ConsecutiveLosses, m.MaxConsecutiveLosses)
	}
	// Ratios: exposure 0.600360 / 0.8 = 0.750450, daily 40 / 100 = 0.4, losses 2 / 4 = 0.5.
	// x = 0.7 × 0.750450 + 0.3 × (1.650450 / 3) = 0.525315 + 0.165045 = 0.690360;
	// score = 1 + floor(9 × 0.690360) = 1 + 6 = 7: high (5-7).
	if m.RiskScore != 7 || m.RiskLevel != "high" {
		t.Fatalf("score %d %q, want 7 high", m.RiskScore, m.RiskLevel)
	}

	t.Run("levels", func(t *testing.T) {
		// Nothing at risk: every ratio 0, score 1, low.
		f.projectOn(t, "bot-idle", "alice@example.com", registry.AccountPaper, "acct-r")
		if m := f.risk(t, "bot-idle", alice); m.RiskScore != 1 || m.RiskLevel != "low" || !m.CurrentExposure.IsZero() {
			t.Fatalf("idle bot: %+v", m)
		}
		if _, err := f.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			risk.StageCounters(ctx, p, "bot-r", risk.Counters{Day: "2026-11-24", DayPnl: testkit.D("-40"), ConsecutiveLosses: 4})
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		// Losses 4 of 4, the limit that pauses the bot: ratios 0.750450, 0.4, 1;
		// x = 0.7 × 1 + 0.3 × (0.750450 + 0.4 + 1) / 3 = 0.7 + 0.215045 = 0.915045;
		// score = 1 + floor(8.235405) = 9: extreme (8-10).
		if m := f.risk(t, "bot-r", alice); m.RiskScore != 9 || m.RiskLevel != "extreme" {
			t.Fatalf("at the loss limit: score %d %q, want 9 extreme", m.RiskScore, m.RiskLevel)
		}
		// The next UTC day the daily loss no longer counts: x = 0.7 + 0.3 × 1.750450 / 3
		// = 0.875045, score 1 + floor(7.875405) = 8.
		f.clk.Advance(24 * time.Hour)
		if m := f.risk(t, "bot-r", alice); m.RiskScore != 8 || !m.DailyLossUsed.IsZero() {
			t.Fatalf("next day: %+v", m)
		}
	})

	t.Run("401 without credentials", func(t *testing.T) {
		r := f.get(t, riskPath("bot-r"))
		if r.status != http.StatusUnauthorized {
			t.Fatalf("status %d", r.status)
		}
		if ch := r.header.Get("WWW-Authenticate"); !strings.HasPrefix(ch, "Bearer ") || !strings.Contains(ch, "resource_metadata=") {
			t.Fatalf("WWW-Authenticate %q", ch)
		}
	})

	t.Run("404 for another user's bot, as for a missing one", func(t *testing.T) {
		bob := f.bearer(t, f.user(t, "bob@example.com"))
		foreign, missing := f.get(t, riskPath("bot-r"), bob), f.get(t, riskPath("bot-nope"), bob)
		if foreign.status != http.StatusNotFound || string(foreign.body) != string(missing.body) {
			t.Fatalf("foreign %d %s, missing %d %s", foreign.status, foreign.body, missing.status, missing.body)
		}
		if !strings.Contains(string(foreign.body), `"code":"NOT_FOUND"`) {
			t.Fatalf("body %s", foreign.body)
		}
	})
}
