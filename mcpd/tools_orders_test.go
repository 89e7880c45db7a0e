package mcpd_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/position"
)

func TestGetOrder(t *testing.T) {
	f := newBotFixture(t)
	f.project(t, "bot-o", "ada@example.com")
	ctx := t.Context()
	rec := position.OrderRecord{OrderID: "x-1", ClientOrderID: "c-1", SignalID: "sig-1", BotID: "bot-o", Leg: "entry",
		Symbol: "BTC/USDT", Kind: exchange.Spot, Side: exchange.SideBuy, Type: exchange.Market, Status: exchange.StatusFilled,
		Amount: testkit.D("0.1"), FilledAmount: testkit.D("0.1"), AvgPrice: testkit.D("60000.5"), Fee: testkit.D("6.00005"),
		FeeAsset: "USDT", CreatedAt: 1, UpdatedAt: 2}
	if _, err := f.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { return position.StageOrder(ctx, p, rec, true) }); err != nil {
		t.Fatal(err)
	}
	want, err := position.NewBook(f.rdb).Order(ctx, "bot-o", "c-1")
	if err != nil || want == nil {
		t.Fatal(want, err)
	}
	wantJSON, _ := json.Marshal(want)
	_, text := toolResult(t, f.ada, "get_order", map[string]any{"botId": "bot-o", "clientOrderId": "c-1"})
	if text != string(wantJSON) || !strings.Contains(text, `"avgPrice":60000.5,"fee":6.00005`) {
		t.Fatalf("get_order:\n got %s\nwant %s", text, wantJSON)
	}
	if text := toolErr(t, f.ada, "get_order", map[string]any{"botId": "bot-o", "clientOrderId": "c-9"}); text !=
		`{"code":"NOT_FOUND","message":"the bot has no order c-9"}` {
		t.Fatalf("missing order: %s", text)
	}
	if text := toolErr(t, f.ada, "get_order", map[string]any{"botId": "bot-o"}); !strings.Contains(text, `"code":"INVALID_PARAMETER"`) {
		t.Fatalf("no clientOrderId: %s", text)
	}
	// bob's call on ada's bot is the answer for a missing bot, even naming a real order.
	if text := toolErr(t, f.bob, "get_order", map[string]any{"botId": "bot-o", "clientOrderId": "c-1"}); text !=
		`{"code":"NOT_FOUND","message":"bot not found"}` {
		t.Fatalf("bob: %s", text)
	}
}

func TestListTrades(t *testing.T) {
	f := newBotFixture(t)
	f.project(t, "bot-t", "ada@example.com")
	ctx := t.Context()
	// Three trades closed at 3000, 1000, 2000 ms: listed 1000, 2000, 3000.
	for i, at := range []int64{3000, 1000, 2000} {
		tr := position.Trade{ID: fmt.Sprintf("t%d", i), PositionID: "p", BotID: "bot-t", Symbol: "BTC/USDT", Kind: exchange.Spot,
			Side: position.Long, Size: testkit.D("0.1"), EntryPrice: testkit.D("60000"), ExitPrice: testkit.D("61000"), Leverage: 1,
			// (61000 - 60000) × 0.1 = 100 gross; fees 6 + 6.1 = 12.1; net 87.9.
			Pnl: testkit.D("100"), Fees: testkit.D("12.1"), NetPnl: testkit.D("87.9"), Closed: true, Reason: "signal",
			OpenedAt: 500, ClosedAt: at}
		if _, err := f.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { return position.StageTrade(ctx, p, tr) }); err != nil {
			t.Fatal(err)
		}
	}
	type tradesPage struct {
		Trades     []position.Trade
		NextCursor *string
	}
	p1 := toolOK[tradesPage](t, f.ada, "list_trades", map[string]any{"botId": "bot-t", "limit": 2})
	if len(p1.Trades) != 2 || p1.Trades[0].ID != "t1" || p1.Trades[1].ID != "t2" || p1.NextCursor == nil {
		t.Fatalf("page 1: %+v", p1)
	}
	p2 := toolOK[tradesPage](t, f.ada, "list_trades", map[string]any{"botId": "bot-t", "limit": 2, "cursor": *p1.NextCursor})
	if len(p2.Trades) != 1 || p2.Trades[0].ID != "t0" || p2.NextCursor != nil {
		t.Fatalf("page 2: %+v", p2)
	}
	want, err := f.trading.Trades(ctx, "bot-t")
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if w.ID == "t1" {
			a, _ := json.Marshal(w)
			b, _ := json.Marshal(p1.Trades[0])
			if string(a) != string(b) || !p1.Trades[0].NetPnl.Equal(testkit.D("87.9")) {
				t.Fatalf("t1:\n got %s\nwant %s", b, a)
			}
		}
	}
	if text := toolErr(t, f.bob, "list_trades", map[string]any{"botId": "bot-t"}); text != `{"code":"NOT_FOUND","message":"bot not found"}` {
		t.Fatalf("bob: %s", text)
	}
}
