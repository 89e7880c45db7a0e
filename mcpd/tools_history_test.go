package mcpd_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/archive"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/history"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/store"
)

// With the archive, list_trades, get_order and get_signal answer history that has left
// Redis's hot window, from the same reader as the dashboard (runtime/history).
func TestHistoryToolsReadTheArchive(t *testing.T) {
	f := newBotFixture(t)
	db := dbtest.New(t)
	f.trading.WithHistory(history.New(f.rdb, db, nil))
	f.project(t, "bot-h", "ada@example.com")
	ctx := context.Background()
	sig := queue.SignalIDFor("bot-h", "old")
	for i := range 3 {
		tr := position.Trade{ID: fmt.Sprintf("t%d", i), BotID: "bot-h", Symbol: "BTC/USDT", Kind: exchange.Spot, Side: position.Long,
			Size: httpapi.Num(testkit.D("0.1")), NetPnl: httpapi.Num(testkit.D("87.9")), Closed: true, Reason: "signal", Leverage: 1, ClosedAt: int64(1000 * (i + 1))}
		rec := position.OrderRecord{ClientOrderID: fmt.Sprintf("c%d", i), BotID: "bot-h", SignalID: sig, Symbol: "BTC/USDT",
			Kind: exchange.Spot, Side: exchange.SideBuy, Type: exchange.Market, Status: exchange.StatusFilled,
			Amount: httpapi.Num(testkit.D("0.1")), FilledAmount: httpapi.Num(testkit.D("0.1")), AvgPrice: httpapi.Num(testkit.D("60000.5")), CreatedAt: int64(i), UpdatedAt: int64(i)}
		if _, err := f.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			if err := position.StageOrder(ctx, p, rec, true); err != nil {
				return err
			}
			return position.StageTrade(ctx, p, tr)
		}); err != nil {
			t.Fatal(err)
		}
	}
	env := queue.Envelope{SignalID: sig, BotID: "bot-h", Source: queue.SourceWebhook, ReceivedAt: 1}
	if err := queue.PublishResult(ctx, f.rdb, env, result.Result{Success: true, Message: "filled", Timestamp: 2}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := archive.New(archive.Options{Redis: f.rdb, DB: db}).Step(ctx); err != nil {
		t.Fatal(err)
	}
	// All of it leaves Redis, as past the hot window.
	f.rdb.Del(ctx, store.BookTrades("bot-h"), store.BookOrders("bot-h"), store.BookOrder("bot-h", "c1"), store.SignalResult(sig))

	type tradesPage struct {
		Trades     []position.Trade
		NextCursor *string
	}
	p1 := toolOK[tradesPage](t, f.ada, "list_trades", map[string]any{"botId": "bot-h", "limit": 2})
	if len(p1.Trades) != 2 || p1.Trades[0].ID != "t0" || p1.NextCursor == nil || !p1.Trades[0].NetPnl.Equal(testkit.D("87.9")) {
		t.Fatalf("page 1: %+v", p1)
	}
	p2 := toolOK[tradesPage](t, f.ada, "list_trades", map[string]any{"botId": "bot-h", "limit": 2, "cursor": *p1.NextCursor})
	if len(p2.Trades) != 1 || p2.Trades[0].ID != "t2" || p2.NextCursor != nil {
		t.Fatalf("page 2: %+v", p2)
	}
	o := toolOK[position.OrderRecord](t, f.ada, "get_order", map[string]any{"botId": "bot-h", "clientOrderId": "c1"})
	if o.ClientOrderID != "c1" || !o.AvgPrice.Equal(testkit.D("60000.5")) {
		t.Fatalf("get_order from the archive: %+v", o)
	}
	type signalAnswer struct {
		Success bool
		Message string
	}
	if s := toolOK[signalAnswer](t, f.ada, "get_signal", map[string]any{"signalId": sig}); !s.Success || s.Message != "filled" {
		t.Fatalf("get_signal from the archive: %+v", s)
	}
	// Another user's bot stays invisible, archive or not.
	if text := toolErr(t, f.bob, "list_trades", map[string]any{"botId": "bot-h"}); text != `{"code":"NOT_FOUND","message":"bot not found"}` {
		t.Fatalf("bob: %s", text)
	}
}
