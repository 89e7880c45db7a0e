package mcpd_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/position"
)

// bookPosition writes an open position as the executor's booking does.
func bookPosition(t testing.TB, rdb redis.UniversalClient, p position.Position) {
	t.Helper()
	if _, err := rdb.TxPipelined(t.Context(), func(tx redis.Pipeliner) error {
		return position.StagePosition(t.Context(), tx, p.BotID, p.Symbol, &p)
	}); err != nil {
		t.Fatal(err)
	}
}

func TestPositions(t *testing.T) {
	f := newBotFixture(t)
	f.project(t, "bot-p", "ada@example.com")
	at := f.clk.Now().UnixMilli()
	bookPosition(t, f.rdb, position.Open("pos-2", "bot-p", "BTC/USDT", exchange.Spot, position.Long, 1,
		position.Fill{Amount: testkit.D("0.1"), Price: testkit.D("60000"), Fee: testkit.D("6"), At: at}, "sig-1"))
	bookPosition(t, f.rdb, position.Open("pos-1", "bot-p", "ETH/USDT", exchange.Spot, position.Long, 1,
		position.Fill{Amount: testkit.D("2"), Price: testkit.D("3000"), Fee: testkit.D("6"), At: at}, "sig-2"))

	want, err := f.trading.Positions(t.Context(), "bot-p")
	if err != nil || len(want) != 2 {
		t.Fatal(want, err)
	}
	byID := map[string]string{}
	for _, v := range want {
		b, _ := json.Marshal(v)
		byID[v.ID] = string(b)
	}

	// Pages of one, in position id order: pos-1 (ETH) then pos-2 (BTC).
	type posPage struct {
		Positions  []json.RawMessage
		NextCursor *string
	}
	p1 := toolOK[posPage](t, f.ada, "list_positions", map[string]any{"botId": "bot-p", "limit": 1})
	if len(p1.Positions) != 1 || string(p1.Positions[0]) != byID["pos-1"] || p1.NextCursor == nil {
		t.Fatalf("page 1: %s", p1.Positions)
	}
	p2 := toolOK[posPage](t, f.ada, "list_positions", map[string]any{"botId": "bot-p", "limit": 1, "cursor": *p1.NextCursor})
	if len(p2.Positions) != 1 || string(p2.Positions[0]) != byID["pos-2"] || p2.NextCursor != nil {
		t.Fatalf("page 2: %s %v", p2.Positions, p2.NextCursor)
	}

	_, text := toolResult(t, f.ada, "get_position", map[string]any{"botId": "bot-p", "symbol": "BTC/USDT"})
	if text != byID["pos-2"] {
		t.Fatalf("get_position:\n got %s\nwant %s", text, byID["pos-2"])
	}
	// By hand: 0.1 BTC bought at 60,000, now 61,000: pnl (61000 - 60000) × 0.1 = 100.
	var v struct{ CurrentPrice, Pnl json.Number }
	_ = json.Unmarshal([]byte(text), &v)
	if v.CurrentPrice != "61000" || v.Pnl != "100" {
		t.Fatalf("figures: %s", text)
	}

	if text := toolErr(t, f.ada, "get_position", map[string]any{"botId": "bot-p", "symbol": "SOL/USDT"}); !strings.Contains(text,
		`"code":"POSITION_NOT_FOUND","numericCode":3002`) {
		t.Fatalf("no position: %s", text)
	}
	if text := toolErr(t, f.ada, "get_position", map[string]any{"botId": "bot-p"}); !strings.Contains(text, `"code":"INVALID_PARAMETER"`) {
		t.Fatalf("no symbol: %s", text)
	}
	if text := toolErr(t, f.ada, "list_positions", map[string]any{"botId": "bot-p", "limit": 101}); !strings.Contains(text, `"code":"INVALID_PARAMETER"`) {
		t.Fatalf("limit 101: %s", text)
	}
}
