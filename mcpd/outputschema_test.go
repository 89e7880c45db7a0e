package mcpd_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/redis/go-redis/v9"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/mcpd"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/lab"
	"github.com/sigops/sigops/runtime/portfolio"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
)

// outputSchemas is, per client, the compiled output schema of each tool its server lists
// (map[string]*jsonschema.Schema; a tool without one maps to nil). Clients on the
// official TypeScript SDK validate every tool result's structuredContent against the
// tool's outputSchema and refuse the result when it does not match, so every successful
// call the helpers make is checked the same way (checkOutput).
var outputSchemas sync.Map // *client.Client → map[string]*jsonschema.Schema

// schemasOf lists c's tools once (tools/list through c itself, as an SDK client learns
// them) and compiles each output schema as the client receives it (JSON Schema 2020-12,
// the dialect MCP schemas default to).
func schemasOf(t testing.TB, c *client.Client) map[string]*jsonschema.Schema {
	t.Helper()
	if m, ok := outputSchemas.Load(c); ok {
		return m.(map[string]*jsonschema.Schema)
	}
	list, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatalf("tools/list for output schemas: %v", err)
	}
	m := make(map[string]*jsonschema.Schema, len(list.Tools))
	for _, tool := range list.Tools {
		raw, err := json.Marshal(tool)
		if err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
		var def struct {
			OutputSchema json.RawMessage `json:"outputSchema"`
		}
		if err := json.Unmarshal(raw, &def); err != nil {
			t.Fatalf("%s: %v", tool.Name, err)
		}
		if len(def.OutputSchema) == 0 {
			m[tool.Name] = nil
			continue
		}
		m[tool.Name] = compileOutput(t, tool.Name, def.OutputSchema)
	}
	outputSchemas.Store(c, m)
	t.Cleanup(func() { outputSchemas.Delete(c) })
	return m
}

// compileOutput compiles tool's output schema.
func compileOutput(t testing.TB, tool string, schema []byte) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatalf("%s: output schema %s: %v", tool, schema, err)
	}
	url := "mem://tool/" + tool + "/output.json"
	comp := jsonschema.NewCompiler()
	comp.DefaultDraft(jsonschema.Draft2020)
	// The SDK's validator (Ajv with ajv-formats) asserts formats such as date-time.
	comp.AssertFormat()
	if err := comp.AddResource(url, doc); err != nil {
		t.Fatalf("%s: output schema: %v", tool, err)
	}
	sch, err := comp.Compile(url)
	if err != nil {
		t.Fatalf("%s: output schema %s: %v", tool, schema, err)
	}
	return sch
}

// checkOutput fails t when res, a successful result of tool called through c, would be
// refused by a client that validates results: its structured content is missing although
// the tool declares an output schema, or does not match that schema. Error results carry
// no structured content and are not checked.
func checkOutput(t testing.TB, c *client.Client, tool string, res *mcp.CallToolResult) {
	t.Helper()
	if res == nil || res.IsError {
		return
	}
	sch, listed := schemasOf(t, c)[tool]
	if !listed {
		t.Fatalf("%s: not in tools/list, its output schema is unknown", tool)
	}
	if sch == nil {
		return
	}
	if res.StructuredContent == nil {
		t.Fatalf("%s: declares an output schema but its result has no structured content: %+v", tool, res.Content)
	}
	// The structured content exactly as it was on the wire.
	raw := []byte(res.RawStructuredContent)
	if len(raw) == 0 {
		var err error
		if raw, err = json.Marshal(res.StructuredContent); err != nil {
			t.Fatalf("%s: structured content: %v", tool, err)
		}
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("%s: structured content %s: %v", tool, raw, err)
	}
	if err := sch.Validate(v); err != nil {
		t.Fatalf("%s: structured content does not match the output schema: %v\n%s", tool, err, raw)
	}
}

// TestOutputSchemasOfEveryState calls the read tools in the states the other tests may not
// reach: accounts that cannot be read (an exchange connection that is not ready, one whose
// credentials cannot be opened, a paper account holding an asset without a price), an
// account with an excluded currency, a position without a price, trades of every reason,
// empty lists, and paused and disabled bots. The helpers check each answer against the
// tool's output schema (checkOutput).
func TestOutputSchemasOfEveryState(t *testing.T) {
	f := newBotFixture(t, func(o *mcpd.Options) {
		// ETH/BTC is priced but not quoted in USDT: a position on it is left out of the figures.
		market := prices{"BTC/USDT": testkit.D("61000"), "ETH/USDT": testkit.D("2900"), "ETH/BTC": testkit.D("0.05")}
		o.Portfolio = portfolio.New(portfolio.Options{Redis: o.Redis, Prices: market, Now: o.Now})
		o.Lab = lab.New(lab.Options{Redis: o.Redis, Users: o.Users, Now: o.Now})
	})
	ctx := t.Context()
	accts := paper.NewAccounts(f.rdb)
	for _, a := range []paper.Config{
		{ID: "acct-ok", Namespace: "trading", Name: "a-ok", Owner: "ada@example.com", Currency: "USDT",
			InitialBalance: testkit.D("1000"), FeeRate: testkit.D("0.001")},
		{ID: "acct-cross", Namespace: "trading", Name: "b-cross", Owner: "ada@example.com", Currency: "USDT",
			InitialBalance: testkit.D("1000"), FeeRate: testkit.D("0.001")},
		{ID: "acct-sol", Namespace: "trading", Name: "c-sol", Owner: "ada@example.com", Currency: "USDT",
			InitialBalance: testkit.D("1000"), FeeRate: testkit.D("0.001")},
	} {
		if _, err := accts.Ensure(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	// 1 SOL, which has no price: acct-sol cannot be valued.
	if _, err := paper.NewExchange(f.rdb, "acct-sol", "bot-x", nil).PlaceOrder(ctx, exchange.OrderRequest{
		ClientOrderID: "o-sol", Symbol: "SOL/USDT", Kind: exchange.Spot, Side: exchange.SideBuy, Type: exchange.Limit,
		Price: testkit.D("100"), Amount: testkit.D("1")}); err != nil {
		t.Fatal(err)
	}
	conns := credentials.NewConnections(f.rdb)
	for _, c := range []credentials.Connection{
		// Refused by the exchange: not ready.
		{UID: "xc-refused", Namespace: "trading", Name: "d-refused", Exchange: "binance", Owner: "ada@example.com",
			Reason: "InvalidCredentials", ValidatedAt: 1700},
		// Ready, but this process cannot open its credentials (no exchange clients).
		{UID: "xc-sealed", Namespace: "trading", Name: "e-sealed", Exchange: "bybit", Owner: "ada@example.com",
			Ready: true, Reason: "Validated", Permissions: []string{"read", "spot"}, ValidatedAt: 1800, Sealed: "sealed", KeyID: "k1"},
	} {
		if err := conns.Save(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	f.project(t, "bot-active", "ada@example.com")
	f.project(t, "bot-paused", "ada@example.com")
	// The paused bot holds SOL, which has no price: shown without a valuation.
	at := f.clk.Now().UnixMilli()
	bookPosition(t, f.rdb, position.Open("pos-sol", "bot-paused", "SOL/USDT", exchange.Spot, position.Long, 1,
		position.Fill{Amount: testkit.D("1"), Price: testkit.D("100"), Fee: testkit.D("0.1"), At: at}, "sig-1"))
	// A bot on acct-cross holding ETH/BTC, quoted in BTC: acct-cross's figures exclude BTC.
	cross := registry.Bot{ID: "bot-cross", Namespace: "trading", Name: "bot cross", Owner: "ada@example.com",
		Account: registry.Account{Kind: registry.AccountPaper, Name: "b-cross", ID: "acct-cross"}, Market: "spot",
		Symbol: "ETH/BTC", PositionSize: "10%", Leverage: 1, Availability: "active", WebhookEnabled: true}
	if err := f.reg.Project(ctx, cross, "hash-cross"); err != nil {
		t.Fatal(err)
	}
	bookPosition(t, f.rdb, position.Open("pos-cross", "bot-cross", "ETH/BTC", exchange.Spot, position.Long, 1,
		position.Fill{Amount: testkit.D("1"), Price: testkit.D("0.04"), Fee: testkit.D("0.00004"), At: at}, "sig-2"))
	if ok, err := f.reg.Pause(ctx, "bot-paused", registry.Pause{Reason: registry.PauseRisk, Until: f.clk.Now().Add(time.Hour)},
		f.clk.Now()); err != nil || !ok {
		t.Fatalf("pause: %v, %v", ok, err)
	}
	disabled := registry.Bot{ID: "bot-disabled", Namespace: "trading", Name: "bot disabled", Owner: "ada@example.com",
		Account: registry.Account{Kind: registry.AccountExchange, Name: "e-sealed", ID: "xc-sealed"}, Market: "futures",
		Symbol: "ETH/USDT", PositionSize: "10%", Leverage: 3, Availability: "disabled",
		DisabledCode: registry.DisabledExchangeDisconnected, DisabledReason: "ExchangeConnectionNotReady"}
	if err := f.reg.Project(ctx, disabled, "hash-disabled"); err != nil {
		t.Fatal(err)
	}
	// A bot whose account is not resolved yet, on no symbol.
	missing := registry.Bot{ID: "bot-missing", Namespace: "trading", Name: "bot missing", Owner: "ada@example.com",
		Account: registry.Account{Kind: registry.AccountPaper, Name: "gone"}, Market: "spot", PositionSize: "10%",
		Leverage: 1, Availability: "disabled", DisabledCode: registry.DisabledAccountMissing, DisabledReason: "AccountMissing"}
	if err := f.reg.Project(ctx, missing, "hash-missing"); err != nil {
		t.Fatal(err)
	}

	// Accounts that cannot be read carry an error object and null figures.
	type account struct {
		ID       string
		Equity   *json.Number
		Excluded []string
		Error    *portfolio.Error
	}
	folio := toolOK[struct {
		Accounts []account
		Totals   struct{ Complete bool }
	}](t, f.ada, "get_portfolio", nil)
	errored := map[string]bool{}
	for _, a := range folio.Accounts {
		if a.Error != nil {
			errored[a.ID] = a.Equity == nil && a.Error.Code != "" && a.Error.Message != ""
		}
	}
	if len(folio.Accounts) != 5 || !errored["acct-sol"] || !errored["xc-refused"] || !errored["xc-sealed"] ||
		len(errored) != 3 || folio.Totals.Complete {
		t.Fatalf("get_portfolio: %+v", folio)
	}
	if a := folio.Accounts[1]; a.ID != "acct-cross" || strings.Join(a.Excluded, ",") != "BTC" || a.Equity == nil {
		t.Fatalf("excluded: %+v", a)
	}
	toolOK[any](t, f.ada, "get_balances", nil)
	for _, id := range []string{"acct-sol", "xc-refused", "xc-sealed", "acct-cross"} {
		toolOK[any](t, f.ada, "get_balances", map[string]any{"accountId": id})
	}
	toolOK[any](t, f.ada, "get_balances", map[string]any{"botId": "bot-disabled"})
	toolOK[any](t, f.ada, "list_paper_accounts", nil)
	for _, id := range []string{"acct-ok", "acct-cross", "acct-sol"} {
		toolOK[any](t, f.ada, "get_paper_account", map[string]any{"accountId": id})
	}
	toolOK[any](t, f.ada, "list_exchange_connections", nil)
	for _, id := range []string{"xc-refused", "xc-sealed"} {
		toolOK[any](t, f.ada, "get_exchange_connection", map[string]any{"connectionId": id})
	}

	// Paused and disabled bots, and one whose account is missing.
	bots := toolOK[botsPage](t, f.ada, "list_bots", nil)
	if ids(bots.Bots) != "bot-active,bot-cross,bot-disabled,bot-missing,bot-paused" || bots.Bots[2].Availability != "disabled" ||
		bots.Bots[4].Availability != "paused" || bots.Bots[4].PausedReason != registry.PauseRisk {
		t.Fatalf("list_bots: %+v", bots.Bots)
	}
	for _, id := range []string{"bot-active", "bot-cross", "bot-paused", "bot-disabled", "bot-missing"} {
		toolOK[any](t, f.ada, "get_bot", map[string]any{"botId": id})
		toolOK[any](t, f.ada, "get_bot_risk", map[string]any{"botId": id})
		toolOK[any](t, f.ada, "get_bot_analytics", map[string]any{"botId": id, "includeEquity": true})
	}

	// The risk score is 1-10 on every surface (runtime/risk.Score): the schema refuses 0
	// and 11, which the answers above never hold.
	risk := schemasOf(t, f.ada)["get_bot_risk"]
	answer := toolOK[map[string]any](t, f.ada, "get_bot_risk", map[string]any{"botId": "bot-paused"})
	for _, bad := range []float64{0, 11} {
		answer["riskScore"] = bad
		if risk.Validate(answer) == nil {
			t.Fatalf("get_bot_risk's schema accepts a risk score of %v", bad)
		}
	}
	for _, id := range []string{"bot-paused", "bot-cross"} {
		toolOK[any](t, f.ada, "list_positions", map[string]any{"botId": id})
	}
	if p := toolOK[map[string]any](t, f.ada, "get_position", map[string]any{"botId": "bot-paused", "symbol": "SOL/USDT"}); p["currentPrice"] != 0.0 {
		t.Fatalf("a position without a price: %v", p)
	}

	// Trades of every reason the executor books, a follower's "copy" among them.
	for i, reason := range []string{"signal", "reversal", "stop_loss", "take_profit", "liquidation", "manual", "copy"} {
		tr := position.Trade{ID: fmt.Sprintf("t%d", i), PositionID: "p", BotID: "bot-cross", Symbol: "ETH/BTC", Kind: exchange.Spot,
			Side: position.Long, Size: httpapi.Num(testkit.D("1")), EntryPrice: httpapi.Num(testkit.D("0.04")), ExitPrice: httpapi.Num(testkit.D("0.05")), Leverage: 1,
			Pnl: httpapi.Num(testkit.D("0.01")), Fees: httpapi.Num(testkit.D("0.0001")), NetPnl: httpapi.Num(testkit.D("0.0099")), Closed: true, Reason: reason,
			OpenedAt: at, ClosedAt: at + int64(i)}
		if _, err := f.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { return position.StageTrade(ctx, p, tr) }); err != nil {
			t.Fatal(err)
		}
	}
	if p := toolOK[struct{ Trades []position.Trade }](t, f.ada, "list_trades", map[string]any{"botId": "bot-cross"}); len(p.Trades) != 7 {
		t.Fatalf("list_trades: %+v", p)
	}

	// Empty lists: a bot with nothing, and bob, who has nothing at all.
	for _, tool := range []string{"list_orders", "list_open_orders", "list_trades", "list_positions", "list_signals"} {
		toolOK[any](t, f.ada, tool, map[string]any{"botId": "bot-active"})
	}
	toolOK[any](t, f.ada, "get_bot_analytics", map[string]any{"botId": "bot-active", "period": "7d"})
	for _, tool := range []string{"list_bots", "list_open_orders", "list_exchange_connections", "list_paper_accounts",
		"get_balances", "get_portfolio", "list_strategy_jobs"} {
		toolOK[any](t, f.bob, tool, nil)
	}
	toolOK[any](t, f.ada, "list_symbols", map[string]any{"query": "nothing-matches-this"})
	toolOK[any](t, f.ada, "list_symbols", map[string]any{"exchangeId": "paper", "market": "futures", "limit": 2})
}
