package mcpd_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
)

func TestGetPortfolio(t *testing.T) {
	f := newBotFixture(t)
	ctx := t.Context()
	for _, a := range []paper.Config{
		{ID: "acct-a", Namespace: "trading", Name: "main", Owner: "ada@example.com", Currency: "USDT",
			InitialBalance: testkit.D("10000"), FeeRate: testkit.D("0.001")},
		{ID: "acct-b", Namespace: "trading", Name: "bobs", Owner: "bob@example.com", Currency: "USDT",
			InitialBalance: testkit.D("500"), FeeRate: testkit.D("0.001")},
	} {
		if _, err := paper.NewAccounts(f.rdb).Ensure(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	// 0.1 BTC bought at 60,000: notional 6,000, fee 6 (0.1%), so 10,000 - 6,006 = 3,994 USDT left.
	if _, err := paper.NewExchange(f.rdb, "acct-a", "bot-a", nil).PlaceOrder(ctx, exchange.OrderRequest{ClientOrderID: "o-1",
		Symbol: "BTC/USDT", Kind: exchange.Spot, Side: exchange.SideBuy, Type: exchange.Limit, Price: testkit.D("60000"),
		Amount: testkit.D("0.1")}); err != nil {
		t.Fatal(err)
	}
	want, err := f.folio.Of(ctx, "ada@example.com")
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want)
	_, text := toolResult(t, f.ada, "get_portfolio", nil)
	if text != string(wantJSON) {
		t.Fatalf("get_portfolio:\n got %s\nwant %s", text, wantJSON)
	}
	if !strings.Contains(text, `"id":"acct-a"`) || strings.Contains(text, "acct-b") || !strings.Contains(text, "3994") {
		t.Fatalf("ada's portfolio: %s", text)
	}
	if _, text := toolResult(t, f.bob, "get_portfolio", nil); !strings.Contains(text, `"id":"acct-b"`) || strings.Contains(text, "acct-a") {
		t.Fatalf("bob's portfolio: %s", text)
	}
}
