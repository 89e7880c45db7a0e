package mcpd_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/portfolio"
	"github.com/sigops/sigops/runtime/registry"
)

// accountsFixture gives ada two paper accounts (acct-a holding 0.1 BTC, acct-c refilled at
// the fixture's now) and a connection the exchange refused; bob one of each.
func accountsFixture(t *testing.T) *botFixture {
	t.Helper()
	f := newBotFixture(t)
	ctx := t.Context()
	accts := paper.NewAccounts(f.rdb)
	for _, a := range []paper.Config{
		{ID: "acct-a", Namespace: "trading", Name: "main", Owner: "ada@example.com", Currency: "USDT",
			InitialBalance: testkit.D("10000"), FeeRate: testkit.D("0.001")},
		{ID: "acct-c", Namespace: "trading", Name: "spare", Owner: "ada@example.com", Currency: "USDT",
			InitialBalance: testkit.D("250.5"), FeeRate: testkit.D("0.002")},
		{ID: "acct-b", Namespace: "trading", Name: "bobs", Owner: "bob@example.com", Currency: "USDT",
			InitialBalance: testkit.D("500"), FeeRate: testkit.D("0.001")},
	} {
		if _, err := accts.Ensure(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := accts.Refill(ctx, "acct-c", f.clk.Now()); err != nil {
		t.Fatal(err)
	}
	// 0.1 BTC bought at 60,000: notional 6,000, fee 6 (0.1%), so 10,000 - 6,006 = 3,994 USDT left.
	if _, err := paper.NewExchange(f.rdb, "acct-a", "bot-a", nil).PlaceOrder(ctx, exchange.OrderRequest{ClientOrderID: "o-1",
		Symbol: "BTC/USDT", Kind: exchange.Spot, Side: exchange.SideBuy, Type: exchange.Limit, Price: testkit.D("60000"),
		Amount: testkit.D("0.1")}); err != nil {
		t.Fatal(err)
	}
	conns := credentials.NewConnections(f.rdb)
	for _, c := range []credentials.Connection{
		{UID: "xc-ada", Namespace: "trading", Name: "ada-binance", Exchange: "binance", Owner: "ada@example.com", Testnet: true,
			Reason: "WithdrawalPermissionEnabled", Permissions: []string{"read", "spot", "futures", "withdraw"}, ValidatedAt: 1700},
		{UID: "xc-bob", Namespace: "trading", Name: "bob-bybit", Exchange: "bybit", Owner: "bob@example.com",
			Reason: "Validated", Permissions: []string{"read", "spot"}, ValidatedAt: 1800},
	} {
		if err := conns.Save(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func TestExchangeConnectionTools(t *testing.T) {
	f := accountsFixture(t)
	type page struct {
		Connections []credentials.View
		NextCursor  *string
	}
	_, text := toolResult(t, f.ada, "list_exchange_connections", nil)
	want := `{"connections":[{"id":"xc-ada","namespace":"trading","name":"ada-binance","exchange":"binance","testnet":true,` +
		`"status":"not_ready","reason":"WithdrawalPermissionEnabled","permissions":["read","spot","futures","withdraw"],` +
		`"markets":["spot","futures"],"validatedAt":1700}]}`
	if text != want {
		t.Fatalf("list:\n got %s\nwant %s", text, want)
	}
	if _, text := toolResult(t, f.ada, "get_exchange_connection", map[string]any{"connectionId": "xc-ada"}); !strings.HasPrefix(want, `{"connections":[`+text) {
		t.Fatalf("get: %s", text)
	}
	if p := toolOK[page](t, f.bob, "list_exchange_connections", nil); len(p.Connections) != 1 || p.Connections[0].ID != "xc-bob" ||
		p.Connections[0].Status != "not_ready" || strings.Join(p.Connections[0].Markets, ",") != "spot" {
		t.Fatalf("bob: %+v", p)
	}
	// bob's connection answers ada as an unknown one does.
	for _, id := range []string{"xc-bob", "xc-none"} {
		if text := toolErr(t, f.ada, "get_exchange_connection", map[string]any{"connectionId": id}); text !=
			`{"code":"NOT_FOUND","message":"exchange connection not found"}` {
			t.Fatalf("%s: %s", id, text)
		}
	}
}

func TestPaperAccountTools(t *testing.T) {
	f := accountsFixture(t)
	type view struct {
		ID, Name, Currency      string
		InitialBalance, FeeRate json.Number
		Equity                  *json.Number
		Balances                []portfolio.Balance
		LastRefillAt            *time.Time
		NextRefillAt            time.Time
	}
	type page struct {
		Accounts   []view
		NextCursor *string
	}
	p1 := toolOK[page](t, f.ada, "list_paper_accounts", map[string]any{"limit": 1})
	if len(p1.Accounts) != 1 || p1.Accounts[0].ID != "acct-a" || p1.NextCursor == nil {
		t.Fatalf("page 1: %+v", p1)
	}
	a := p1.Accounts[0]
	// 3,994 USDT + 0.1 BTC × 61,000 (the fixture's price) = 3,994 + 6,100 = 10,094.
	if a.Equity == nil || *a.Equity != "10094" || a.InitialBalance != "10000" || a.FeeRate != "0.001" || a.LastRefillAt != nil ||
		!a.NextRefillAt.Equal(f.clk.Now()) {
		t.Fatalf("acct-a: %+v", a)
	}
	// The balances and equity are the portfolio's.
	folio, err := f.folio.Accounts(t.Context(), "ada@example.com", portfolio.Select{ID: "acct-a"})
	if err != nil || len(folio) != 1 {
		t.Fatal(folio, err)
	}
	wb, _ := json.Marshal(folio[0].Balances)
	gb, _ := json.Marshal(a.Balances)
	if string(wb) != string(gb) || !strings.Contains(string(gb), `{"asset":"USDT","wallet":"unified","free":3994,"locked":0,"total":3994}`) {
		t.Fatalf("balances:\n got %s\nwant %s", gb, wb)
	}
	p2 := toolOK[page](t, f.ada, "list_paper_accounts", map[string]any{"limit": 1, "cursor": *p1.NextCursor})
	if len(p2.Accounts) != 1 || p2.Accounts[0].ID != "acct-c" || p2.NextCursor != nil {
		t.Fatalf("page 2: %+v", p2)
	}
	c := toolOK[view](t, f.ada, "get_paper_account", map[string]any{"accountId": "acct-c"})
	// Refilled at the fixture's now (2026-11-24 12:00 UTC): the next refill 24 hours on.
	if c.LastRefillAt == nil || !c.LastRefillAt.Equal(f.clk.Now()) || !c.NextRefillAt.Equal(f.clk.Now().Add(24*time.Hour)) ||
		c.Equity == nil || *c.Equity != "250.5" {
		t.Fatalf("acct-c: %+v", c)
	}
	for _, id := range []string{"acct-b", "acct-none"} {
		if text := toolErr(t, f.ada, "get_paper_account", map[string]any{"accountId": id}); text !=
			`{"code":"NOT_FOUND","message":"paper account not found"}` {
			t.Fatalf("%s: %s", id, text)
		}
	}
}

func TestGetBalances(t *testing.T) {
	f := accountsFixture(t)
	b := f.project(t, "bot-a", "ada@example.com")
	b.Account = registry.Account{Kind: registry.AccountPaper, Name: "main", ID: "acct-a"}
	if err := f.reg.Project(t.Context(), b, "hash-bot-a"); err != nil {
		t.Fatal(err)
	}
	type page struct {
		Accounts []struct {
			ID, Kind string
			Balances []portfolio.Balance
			Error    *portfolio.Error
		}
	}
	all := toolOK[page](t, f.ada, "get_balances", nil)
	got := []string{}
	for _, a := range all.Accounts {
		got = append(got, a.ID+":"+a.Kind)
	}
	// Paper accounts by name (main, spare), then the connection; the refused connection
	// carries its error and no balances.
	if strings.Join(got, ",") != "acct-a:paper,acct-c:paper,xc-ada:exchange" || all.Accounts[2].Error == nil ||
		all.Accounts[2].Error.Code != "EXCHANGE_DISCONNECTED" || len(all.Accounts[2].Balances) != 0 {
		t.Fatalf("all: %+v", all)
	}
	folio, err := f.folio.Of(t.Context(), "ada@example.com")
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range all.Accounts {
		w, _ := json.Marshal(folio.Accounts[i].Balances)
		g, _ := json.Marshal(a.Balances)
		if string(w) != string(g) {
			t.Fatalf("%s:\n got %s\nwant %s", a.ID, g, w)
		}
	}
	byBot := toolOK[page](t, f.ada, "get_balances", map[string]any{"botId": "bot-a"})
	byID := toolOK[page](t, f.ada, "get_balances", map[string]any{"accountId": "acct-a"})
	if len(byBot.Accounts) != 1 || byBot.Accounts[0].ID != "acct-a" || len(byID.Accounts) != 1 ||
		byID.Accounts[0].Balances[0].Total.String() != byBot.Accounts[0].Balances[0].Total.String() {
		t.Fatalf("by bot %+v, by id %+v", byBot, byID)
	}
	if text := toolErr(t, f.ada, "get_balances", map[string]any{"accountId": "acct-b"}); text != `{"code":"NOT_FOUND","message":"account not found"}` {
		t.Fatalf("bob's account: %s", text)
	}
	if text := toolErr(t, f.bob, "get_balances", map[string]any{"botId": "bot-a"}); text != `{"code":"NOT_FOUND","message":"bot not found"}` {
		t.Fatalf("bob on ada's bot: %s", text)
	}
	if text := toolErr(t, f.ada, "get_balances", map[string]any{"botId": "bot-a", "accountId": "acct-a"}); !strings.Contains(text, "INVALID_PARAMETER") {
		t.Fatalf("both: %s", text)
	}
}
