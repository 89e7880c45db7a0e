package mcpd_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/mcpd"
	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/candles"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/portfolio"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/risk"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/trading"
)

// toolResult calls tool with args and returns the result and its text content.
func toolResult(t testing.TB, c *client.Client, tool string, args map[string]any) (*mcp.CallToolResult, string) {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("%s: %d contents, want 1", tool, len(res.Content))
	}
	checkOutput(t, c, tool, res)
	return res, res.Content[0].(mcp.TextContent).Text
}

// toolOK calls tool and decodes its answer's text (the exact JSON, decimals as written).
func toolOK[T any](t testing.TB, c *client.Client, tool string, args map[string]any) T {
	t.Helper()
	res, text := toolResult(t, c, tool, args)
	if res.IsError {
		t.Fatalf("%s(%v) failed: %s", tool, args, text)
	}
	if res.StructuredContent == nil {
		t.Fatalf("%s: no structured content", tool)
	}
	var v T
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// toolErr calls tool expecting an error result and returns its text.
func toolErr(t testing.TB, c *client.Client, tool string, args map[string]any) string {
	t.Helper()
	res, text := toolResult(t, c, tool, args)
	if !res.IsError {
		t.Fatalf("%s(%v) succeeded: %s", tool, args, text)
	}
	return text
}

// botFixture is mcpd on the fixture with ada (owner of bots) and bob (a stranger), and the
// Go APIs the tools must agree with.
type botFixture struct {
	*fixture
	reg      *registry.Registry
	trading  *trading.API
	analyt   *analytics.Analytics
	folio    *portfolio.Service
	candles  *candles.Service
	ada, bob *client.Client
	// adaUser and bobUser are the accounts behind ada and bob, for tokens of other scopes.
	adaUser, bobUser auth.User
	ts               *httptest.Server
}

// newBotFixture starts the fixture; with adjusts mcpd's options after the fixture's own.
func newBotFixture(t *testing.T, with ...func(*mcpd.Options)) *botFixture {
	t.Helper()
	f := &botFixture{fixture: newFixture(t)}
	f.reg = registry.New(f.rdb)
	market := prices{"BTC/USDT": testkit.D("61000"), "ETH/USDT": testkit.D("2900")}
	f.trading = trading.New(f.rdb, nil, market)
	f.folio = portfolio.New(portfolio.Options{Redis: f.rdb, Prices: market, Now: f.clk.Now})
	f.trading.Now = f.clk.Now
	f.analyt = analytics.New(f.rdb)
	f.candles = f.candlesService()
	ts := f.serve(t, append([]func(*mcpd.Options){func(o *mcpd.Options) {
		o.Bots, o.Trading, o.Analytics, o.Portfolio, o.Candles = f.reg, f.trading, f.analyt, f.folio, f.candles
	}}, with...)...)
	ada := f.user(t, "Ada@Example.com", auth.TierPro)
	bob := f.user(t, "bob@example.com", auth.TierPro)
	f.adaUser, f.bobUser, f.ts = ada, bob, ts
	tok, _ := f.oauthToken(t, ada, "agent", auth.ScopeRead, testResource)
	f.ada, _ = mcpClient(t, tok.Token, "", ts)
	f.bob, _ = mcpClient(t, f.bearer(t, bob).Token, "", ts)
	return f
}

// candlesService serves candles from the simulated market. No venues: every exchange
// answers from the simulated fallback, so nothing leaves the machine.
func (f *fixture) candlesService() *candles.Service {
	sim := marketdata.NewSimulated(marketdata.SimulatedOptions{Seed: 7, Now: f.clk.Now})
	idx := signal.NewSymbols(sim.Symbols())
	return candles.New(candles.Options{Redis: f.rdb, Now: f.clk.Now, Fallback: sim,
		Symbols: func() *signal.Symbols { return idx }, Venues: map[string]candles.Venue{}})
}

func (f *botFixture) project(t testing.TB, id, owner string) registry.Bot {
	t.Helper()
	b := registry.Bot{ID: id, Namespace: "trading", Name: "bot " + id, Owner: owner,
		Account: registry.Account{Kind: registry.AccountPaper, Name: "main"}, Market: "spot", Symbol: "BTC/USDT",
		PositionSize: "10%", Leverage: 1, Availability: "active", WebhookEnabled: true,
		Risk: registry.Risk{MaxExposure: "0.8", DailyLossLimit: "100", MaxConsecutiveLosses: 4}}
	if err := f.reg.Project(t.Context(), b, "hash-"+id); err != nil {
		t.Fatal(err)
	}
	return b
}

type botsPage struct {
	Bots       []registry.Bot
	NextCursor *string
}

func ids(bots []registry.Bot) string {
	out := make([]string, len(bots))
	for i, b := range bots {
		out[i] = b.ID
	}
	return strings.Join(out, ",")
}

func TestListBotsPages(t *testing.T) {
	f := newBotFixture(t)
	// 23 of ada's bots, projected out of order, and one of bob's that must never show.
	for _, i := range []int{7, 22, 1, 15, 3, 9, 20, 11, 0, 5, 18, 13, 2, 21, 8, 16, 4, 12, 19, 6, 10, 17, 14} {
		f.project(t, fmt.Sprintf("b%02d", i), "ada@example.com")
	}
	f.project(t, "b00x", "bob@example.com")

	// Default page size 20: b00..b19, then b20..b22 and no cursor.
	p1 := toolOK[botsPage](t, f.ada, "list_bots", nil)
	if len(p1.Bots) != mcpd.DefaultPageSize || p1.Bots[0].ID != "b00" || p1.Bots[19].ID != "b19" || p1.NextCursor == nil {
		t.Fatalf("page 1: %s cursor %v", ids(p1.Bots), p1.NextCursor)
	}
	if p1.Bots[0].Name != "bot b00" || p1.Bots[0].Risk.DailyLossLimit != "100" {
		t.Fatalf("bot: %+v", p1.Bots[0])
	}
	p2 := toolOK[botsPage](t, f.ada, "list_bots", map[string]any{"cursor": *p1.NextCursor})
	if ids(p2.Bots) != "b20,b21,b22" || p2.NextCursor != nil {
		t.Fatalf("page 2: %s cursor %v", ids(p2.Bots), p2.NextCursor)
	}

	// limit 5 from the first cursor; a bot deleted before the next page neither repeats nor
	// shifts the others: the cursor names the last bot served.
	q1 := toolOK[botsPage](t, f.ada, "list_bots", map[string]any{"limit": 5})
	if ids(q1.Bots) != "b00,b01,b02,b03,b04" {
		t.Fatalf("limit 5: %s", ids(q1.Bots))
	}
	if err := f.reg.Remove(t.Context(), "b04", 0); err != nil {
		t.Fatal(err)
	}
	q2 := toolOK[botsPage](t, f.ada, "list_bots", map[string]any{"limit": 5, "cursor": *q1.NextCursor})
	if ids(q2.Bots) != "b05,b06,b07,b08,b09" {
		t.Fatalf("after a deletion: %s", ids(q2.Bots))
	}
	// limit 100 is the largest: all 22 left on one page.
	if all := toolOK[botsPage](t, f.ada, "list_bots", map[string]any{"limit": 100}); len(all.Bots) != 22 || all.NextCursor != nil {
		t.Fatalf("limit 100: %d bots", len(all.Bots))
	}

	// bob sees only his own bot.
	if b := toolOK[botsPage](t, f.bob, "list_bots", nil); ids(b.Bots) != "b00x" {
		t.Fatalf("bob: %s", ids(b.Bots))
	}

	for _, args := range []map[string]any{{"limit": 0}, {"limit": 101}, {"limit": 2.5}, {"limit": "5"},
		{"cursor": "not-a-cursor"}, {"cursor": "Yjk5"}} { // "Yjk5" decodes to "b99", not a cursor of ours
		text := toolErr(t, f.ada, "list_bots", args)
		if !strings.Contains(text, `"code":"INVALID_PARAMETER"`) {
			t.Errorf("%v: %s", args, text)
		}
	}
}

func TestGetBotOwnership(t *testing.T) {
	f := newBotFixture(t)
	want := f.project(t, "bot-a", "ada@example.com")
	f.project(t, "bot-b", "bob@example.com")

	got := toolOK[registry.Bot](t, f.ada, "get_bot", map[string]any{"botId": "bot-a"})
	wantJSON, _ := json.Marshal(want)
	gotJSON, _ := json.Marshal(got)
	if string(gotJSON) != string(wantJSON) {
		t.Fatalf("get_bot:\n got %s\nwant %s", gotJSON, wantJSON)
	}

	// Another user's bot answers exactly as a missing one, for every bot tool.
	for _, tool := range []string{"get_bot", "get_bot_risk", "get_bot_analytics", "list_positions", "get_position"} {
		args := func(id string) map[string]any {
			if tool == "get_position" {
				return map[string]any{"botId": id, "symbol": "BTC/USDT"}
			}
			return map[string]any{"botId": id}
		}
		other := toolErr(t, f.ada, tool, args("bot-b"))
		missing := toolErr(t, f.ada, tool, args("bot-zz"))
		if other != missing || other != `{"code":"NOT_FOUND","message":"bot not found"}` {
			t.Errorf("%s: another's %s, missing %s", tool, other, missing)
		}
		noBot := map[string]any{}
		if tool == "get_position" {
			noBot["symbol"] = "BTC/USDT"
		}
		if text := toolErr(t, f.ada, tool, noBot); !strings.Contains(text, `"code":"INVALID_PARAMETER"`) ||
			!strings.Contains(text, "botId is required") {
			t.Errorf("%s without botId: %s", tool, text)
		}
	}
}

// A runtime pause shows as the bot's state in get_bot and list_bots: the projection keeps
// the spec-level availability, and an agent that paused a bot must not read it as active.
func TestGetBotShowsRuntimePause(t *testing.T) {
	f := newBotFixture(t)
	f.project(t, "bot-p", "ada@example.com")
	f.project(t, "bot-q", "ada@example.com")
	if ok, err := f.reg.Pause(t.Context(), "bot-p", registry.Pause{Reason: registry.PauseManual}, f.clk.Now()); err != nil || !ok {
		t.Fatalf("pause: %v, %v", ok, err)
	}
	got := toolOK[registry.Bot](t, f.ada, "get_bot", map[string]any{"botId": "bot-p"})
	if got.Availability != "paused" || got.PausedReason != registry.PauseManual {
		t.Fatalf("get_bot of a paused bot: %s %q", got.Availability, got.PausedReason)
	}
	page := toolOK[botsPage](t, f.ada, "list_bots", nil)
	if len(page.Bots) != 2 || page.Bots[0].Availability != "paused" || page.Bots[0].PausedReason != registry.PauseManual ||
		page.Bots[1].Availability != "active" || page.Bots[1].PausedReason != "" {
		t.Fatalf("list_bots: %+v", page.Bots)
	}
}

func TestGetBotRisk(t *testing.T) {
	f := newBotFixture(t)
	bot := f.project(t, "bot-r", "ada@example.com")
	ctx := t.Context()
	// Today's realised PnL -40 after two losses in a row.
	if _, err := f.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		risk.StageCounters(ctx, p, "bot-r", risk.Counters{Day: "2026-11-24", DayPnl: testkit.D("-40"), ConsecutiveLosses: 2})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	res, text := toolResult(t, f.ada, "get_bot_risk", map[string]any{"botId": "bot-r"})
	if res.IsError {
		t.Fatal(text)
	}
	want, err := f.trading.RiskMetricsOf(ctx, bot)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want)
	if text != string(wantJSON) {
		t.Fatalf("get_bot_risk:\n got %s\nwant %s", text, wantJSON)
	}
	// By hand: the loss used is the day's -40, the limits the bot's 100 and 4.
	var m map[string]any
	_ = json.Unmarshal([]byte(text), &m)
	if m["dailyLossUsed"] != 40.0 || m["dailyLossLimit"] != 100.0 || m["consecutiveLosses"] != 2.0 ||
		m["maxConsecutiveLosses"] != 4.0 {
		t.Fatalf("figures: %s", text)
	}
}

func TestGetBotAnalytics(t *testing.T) {
	f := newBotFixture(t)
	bot := f.project(t, "bot-n", "ada@example.com")
	args := map[string]any{"botId": "bot-n", "period": "7d", "includeEquity": true}
	res, text := toolResult(t, f.ada, "get_bot_analytics", args)
	if res.IsError {
		t.Fatal(text)
	}
	q, err := analytics.ParseQuery("7d", "", "", "true", f.clk.Now())
	if err != nil {
		t.Fatal(err)
	}
	want, err := f.analyt.Bot(t.Context(), bot, q)
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want)
	if text != string(wantJSON) {
		t.Fatalf("get_bot_analytics:\n got %s\nwant %s", text, wantJSON)
	}
	// 7d is today (2026-11-24) and the 6 days before.
	if !strings.Contains(text, `"startDate":"2026-11-18","endDate":"2026-11-24"`) {
		t.Fatalf("range: %s", text)
	}
	for _, bad := range []map[string]any{{"botId": "bot-n", "period": "2w"},
		{"botId": "bot-n", "period": "7d", "startDate": "2026-11-01"}, {"botId": "bot-n", "endDate": "2026-11-01"}} {
		if text := toolErr(t, f.ada, "get_bot_analytics", bad); !strings.Contains(text, `"code":"INVALID_PARAMETER"`) {
			t.Errorf("%v: %s", bad, text)
		}
	}
}

// The equity curve has a point per trade: three trades today, the middle one a big loss,
// show the dip, whose drawdown is the metrics' to the last decimal, as the REST endpoint
// and the dashboard show them (one computation, runtime/analytics).
func TestGetBotAnalyticsCurvePerTrade(t *testing.T) {
	f := newBotFixture(t)
	ctx := t.Context()
	f.project(t, "bot-dip", "ada@example.com")
	day := analytics.DateOf(f.clk.Now())
	var d analytics.Day
	if _, err := f.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		analytics.StageStart(ctx, p, "bot-dip", testkit.D("1000"))
		for i, net := range []string{"120.125", "-400.0625", "250.5"} {
			tr := position.Trade{ID: fmt.Sprintf("t%d", i), BotID: "bot-dip", NetPnl: httpapi.Num(testkit.D(net)),
				ClosedAt: day.Start().Add(time.Duration(i+1) * time.Hour).UnixMilli()}
			if err := position.StageTrade(ctx, p, tr); err != nil {
				return err
			}
			// Booked as the executor does: the trade with its day.
			d.Add(tr)
			if err := analytics.StageDay(ctx, p, "bot-dip", day, d); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	res, text := toolResult(t, f.ada, "get_bot_analytics", map[string]any{"botId": "bot-dip", "period": "today", "includeEquity": true})
	if res.IsError {
		t.Fatal(text)
	}
	var out struct {
		Metrics struct {
			MaxDrawdown json.Number `json:"maxDrawdown"`
		} `json:"metrics"`
		EquityCurve []struct {
			Timestamp        int64
			Equity, Drawdown json.Number
		} `json:"equityCurve"`
	}
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	if err := dec.Decode(&out); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range out.EquityCurve {
		got = append(got, fmt.Sprintf("%s %s %s", time.UnixMilli(p.Timestamp).UTC().Format("15:04"), p.Equity, p.Drawdown))
	}
	now := f.clk.Now().UTC().Format("15:04")
	if want := []string{"00:00 1000 0", "01:00 1120.125 0", "02:00 720.0625 400.0625", "03:00 970.5625 149.5625",
		now + " 970.5625 149.5625"}; strings.Join(got, ", ") != strings.Join(want, ", ") || out.Metrics.MaxDrawdown != "400.0625" {
		t.Fatalf("curve %v, maxDrawdown %s", got, out.Metrics.MaxDrawdown)
	}
	// The structured content validates against the tool's output schema (equityCurve's
	// items included): outputschema_test checks every tool's answers the same way.
	if res.StructuredContent == nil {
		t.Fatal("no structured content")
	}
}

// prices is a fixed market: the price of each symbol, whatever the kind.
type prices map[string]decimal.Decimal

func (p prices) Price(_ context.Context, _ exchange.Kind, symbol string) (decimal.Decimal, error) {
	if v, ok := p[symbol]; ok {
		return v, nil
	}
	return decimal.Zero, fmt.Errorf("no price for %s", symbol)
}
