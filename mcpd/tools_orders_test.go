package mcpd_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/history"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
)

func TestGetOrder(t *testing.T) {
	f := newBotFixture(t)
	f.project(t, "bot-o", "ada@example.com")
	ctx := t.Context()
	rec := position.OrderRecord{OrderID: "x-1", ClientOrderID: "c-1", SignalID: "sig-1", BotID: "bot-o", Leg: "entry",
		Symbol: "BTC/USDT", Kind: exchange.Spot, Side: exchange.SideBuy, Type: exchange.Market, Status: exchange.StatusFilled,
		Amount: httpapi.Num(testkit.D("0.1")), FilledAmount: httpapi.Num(testkit.D("0.1")), AvgPrice: httpapi.Num(testkit.D("60000.5")), Fee: httpapi.Num(testkit.D("6.00005")),
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
			Side: position.Long, Size: httpapi.Num(testkit.D("0.1")), EntryPrice: httpapi.Num(testkit.D("60000")), ExitPrice: httpapi.Num(testkit.D("61000")), Leverage: 1,
			// (61000 - 60000) × 0.1 = 100 gross; fees 6 + 6.1 = 12.1; net 87.9.
			Pnl: httpapi.Num(testkit.D("100")), Fees: httpapi.Num(testkit.D("12.1")), NetPnl: httpapi.Num(testkit.D("87.9")), Closed: true, Reason: "signal",
			OpenedAt: 500, ClosedAt: at}
		if _, err := f.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { return position.StageTrade(ctx, p, tr) }); err != nil {
			t.Fatal(err)
		}
	}
	type tradesPage struct {
		Trades      []position.Trade
		NextCursor  *string
		HistoryFrom *time.Time
	}
	p1 := toolOK[tradesPage](t, f.ada, "list_trades", map[string]any{"botId": "bot-t", "limit": 2})
	if len(p1.Trades) != 2 || p1.Trades[0].ID != "t1" || p1.Trades[1].ID != "t2" || p1.NextCursor == nil {
		t.Fatalf("page 1: %+v", p1)
	}
	p2 := toolOK[tradesPage](t, f.ada, "list_trades", map[string]any{"botId": "bot-t", "limit": 2, "cursor": *p1.NextCursor})
	if len(p2.Trades) != 1 || p2.Trades[0].ID != "t0" || p2.NextCursor != nil {
		t.Fatalf("page 2: %+v", p2)
	}
	want, err := f.trading.Trades(ctx, "bot-t", history.TradeQuery{Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want.Trades {
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
	if p1.HistoryFrom != nil {
		t.Fatalf("historyFrom %s before any compaction", p1.HistoryFrom)
	}
	// The retention's compactor removes every trade (closed before 5 s): the answer says
	// from when the list holds trades.
	if n, err := analytics.Compact(ctx, f.rdb, "bot-t", time.UnixMilli(5000), 10); err != nil || n != 3 {
		t.Fatalf("compacted %d, %v", n, err)
	}
	after := toolOK[tradesPage](t, f.ada, "list_trades", map[string]any{"botId": "bot-t"})
	if len(after.Trades) != 0 || after.HistoryFrom == nil || !after.HistoryFrom.Equal(time.UnixMilli(5000)) {
		t.Fatalf("after compaction: %+v", after)
	}
}

type ordersPage struct {
	Orders     []position.OrderRecord
	NextCursor *string
}

func cidsOf(p ordersPage) string {
	out := make([]string, len(p.Orders))
	for i, o := range p.Orders {
		out[i] = o.ClientOrderID
	}
	return strings.Join(out, ",")
}

// stageOrders lists orders cid on bot, in that order (the last is the newest), with the
// given statuses.
func stageOrders(t *testing.T, f *botFixture, bot string, orders map[string]exchange.OrderStatus, order ...string) {
	t.Helper()
	ctx := t.Context()
	for i, cid := range order {
		rec := position.OrderRecord{OrderID: "x-" + cid, ClientOrderID: cid, SignalID: "sig-" + cid, BotID: bot, Leg: "entry",
			Symbol: "BTC/USDT", Kind: exchange.Spot, Side: exchange.SideBuy, Type: exchange.Limit, Status: orders[cid],
			Amount: httpapi.Num(testkit.D("0.1")), Price: httpapi.Num(testkit.D("59000.25")), FilledAmount: httpapi.Num(testkit.D("0")), AvgPrice: httpapi.Num(testkit.D("0")),
			Fee: httpapi.Num(testkit.D("0")), CreatedAt: int64(1000 + i), UpdatedAt: int64(1000 + i)}
		if _, err := f.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { return position.StageOrder(ctx, p, rec, true) }); err != nil {
			t.Fatal(err)
		}
	}
}

func TestListOrders(t *testing.T) {
	f := newBotFixture(t)
	f.project(t, "bot-o", "ada@example.com")
	st := map[string]exchange.OrderStatus{"a": exchange.StatusFilled, "b": exchange.StatusOpen, "c": exchange.StatusRejected,
		"d": exchange.StatusPartiallyFilled, "e": exchange.StatusFilled}
	stageOrders(t, f, "bot-o", st, "a", "b", "c", "d", "e")
	p1 := toolOK[ordersPage](t, f.ada, "list_orders", map[string]any{"botId": "bot-o", "limit": 2})
	if cidsOf(p1) != "e,d" || p1.NextCursor == nil {
		t.Fatalf("page 1: %s", cidsOf(p1))
	}
	p2 := toolOK[ordersPage](t, f.ada, "list_orders", map[string]any{"botId": "bot-o", "limit": 2, "cursor": *p1.NextCursor})
	p3 := toolOK[ordersPage](t, f.ada, "list_orders", map[string]any{"botId": "bot-o", "limit": 2, "cursor": *p2.NextCursor})
	if cidsOf(p2) != "c,b" || cidsOf(p3) != "a" || p3.NextCursor != nil {
		t.Fatalf("pages 2, 3: %s / %s", cidsOf(p2), cidsOf(p3))
	}
	// Each record is the book's, figures as written.
	want, _ := position.NewBook(f.rdb).Order(t.Context(), "bot-o", "b")
	wj, _ := json.Marshal(want)
	gj, _ := json.Marshal(p2.Orders[1])
	if string(wj) != string(gj) || !strings.Contains(string(gj), `"price":59000.25`) {
		t.Fatalf("order b:\n got %s\nwant %s", gj, wj)
	}
	filled := toolOK[ordersPage](t, f.ada, "list_orders", map[string]any{"botId": "bot-o", "status": "filled"})
	if cidsOf(filled) != "e,a" || filled.NextCursor != nil {
		t.Fatalf("filled: %s", cidsOf(filled))
	}
	if text := toolErr(t, f.ada, "list_orders", map[string]any{"botId": "bot-o", "status": "done"}); !strings.Contains(text, `"code":"INVALID_PARAMETER"`) {
		t.Fatalf("bad status: %s", text)
	}
	// A cursor whose order left the list.
	gone := base64.RawURLEncoding.EncodeToString([]byte("k1:zz"))
	if text := toolErr(t, f.ada, "list_orders", map[string]any{"botId": "bot-o", "cursor": gone}); text !=
		`{"code":"INVALID_PARAMETER","message":"the cursor's order is no longer listed; list again without a cursor"}` {
		t.Fatalf("gone cursor: %s", text)
	}
	if text := toolErr(t, f.bob, "list_orders", map[string]any{"botId": "bot-o"}); text != `{"code":"NOT_FOUND","message":"bot not found"}` {
		t.Fatalf("bob: %s", text)
	}
}

func TestListOpenOrders(t *testing.T) {
	f := newBotFixture(t)
	f.project(t, "bot-1", "ada@example.com")
	f.project(t, "bot-2", "ada@example.com")
	f.project(t, "bot-3", "ada@example.com")
	f.project(t, "bot-x", "bob@example.com")
	open, part, done := exchange.StatusOpen, exchange.StatusPartiallyFilled, exchange.StatusFilled
	stageOrders(t, f, "bot-1", map[string]exchange.OrderStatus{"1a": open, "1b": done, "1c": part}, "1a", "1b", "1c")
	stageOrders(t, f, "bot-2", map[string]exchange.OrderStatus{"2a": done}, "2a")
	stageOrders(t, f, "bot-3", map[string]exchange.OrderStatus{"3a": open}, "3a")
	stageOrders(t, f, "bot-x", map[string]exchange.OrderStatus{"xa": open}, "xa")
	// All of ada's bots in id order, newest first within a bot; bob's never.
	all := toolOK[ordersPage](t, f.ada, "list_open_orders", nil)
	if cidsOf(all) != "1c,1a,3a" || all.NextCursor != nil {
		t.Fatalf("all: %s", cidsOf(all))
	}
	var got []string
	args := map[string]any{"limit": 1}
	for {
		p := toolOK[ordersPage](t, f.ada, "list_open_orders", args)
		got = append(got, cidsOf(p))
		if p.NextCursor == nil {
			break
		}
		args["cursor"] = *p.NextCursor
	}
	if strings.Join(got, "|") != "1c|1a|3a" {
		t.Fatalf("pages of one: %q", got)
	}
	one := toolOK[ordersPage](t, f.ada, "list_open_orders", map[string]any{"botId": "bot-3"})
	if cidsOf(one) != "3a" {
		t.Fatalf("bot-3: %s", cidsOf(one))
	}
	if none := toolOK[ordersPage](t, f.bob, "list_open_orders", map[string]any{"botId": "bot-x"}); cidsOf(none) != "xa" {
		t.Fatalf("bob's own: %s", cidsOf(none))
	}
	if text := toolErr(t, f.bob, "list_open_orders", map[string]any{"botId": "bot-1"}); text != `{"code":"NOT_FOUND","message":"bot not found"}` {
		t.Fatalf("bob: %s", text)
	}
}
