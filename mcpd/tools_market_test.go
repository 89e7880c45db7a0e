package mcpd_test

import (
	"strings"
	"testing"

	"github.com/sigops/sigops/runtime/candles"
)

func TestGetCandles(t *testing.T) {
	f := newBotFixture(t)
	res, text := toolResult(t, f.ada, "get_candles", map[string]any{"symbol": "btcusdt", "exchangeId": "paper",
		"timeframe": "1h", "limit": 3})
	if res.IsError {
		t.Fatal(text)
	}
	want, err := f.candles.Get(t.Context(), candles.Request{Symbol: "btcusdt", ExchangeID: "paper", Timeframe: "1h", Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := want.MarshalJSON()
	if text != string(wantJSON) || len(want.Candles) != 3 || !strings.HasPrefix(text, `{"symbol":"BTC/USDT","timeframe":"1h"`) {
		t.Fatalf("get_candles:\n got %s\nwant %s", text, wantJSON)
	}
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"symbol": "BTCUSDT", "exchangeId": "paper", "timeframe": "2h"}, `"code":"INVALID_PARAMETER","message":"timeframe must be one of`},
		{map[string]any{"symbol": "BTCUSDT", "exchangeId": "paper", "timeframe": "1h", "limit": 501}, `"message":"limit must be an integer from 1 to 500"`},
		{map[string]any{"symbol": "BTCUSDT", "exchangeId": "paper", "timeframe": "1h", "limit": 2.5}, `"message":"limit must be an integer from 1 to 500"`},
		{map[string]any{"symbol": "BTCUSDT", "exchangeId": "kraken", "timeframe": "1h"}, `{"code":"NOT_FOUND","message":"exchange not found"}`},
		// Another user's or an unknown exchange connection: the same answer as an unknown exchange.
		{map[string]any{"symbol": "BTCUSDT", "exchangeId": "0b6e5c1e-0000-4000-8000-000000000000", "timeframe": "1h"}, `{"code":"NOT_FOUND","message":"exchange not found"}`},
		{map[string]any{"exchangeId": "paper", "timeframe": "1h"}, `"code":"MISSING_SYMBOL"`},
	} {
		if text := toolErr(t, f.ada, "get_candles", tc.args); !strings.Contains(text, tc.want) {
			t.Errorf("%v: %s", tc.args, text)
		}
	}
}
