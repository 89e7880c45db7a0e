package mcpd_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sigops/sigops/runtime/candles"
	"github.com/sigops/sigops/runtime/credentials"
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

func TestGetTicker(t *testing.T) {
	f := newBotFixture(t)
	want, err := f.candles.Ticker(t.Context(), candles.TickerRequest{Symbol: "ETH/USDT", Market: "futures"})
	if err != nil {
		t.Fatal(err)
	}
	wantJSON, _ := json.Marshal(want)
	_, text := toolResult(t, f.ada, "get_ticker", map[string]any{"symbol": "BINANCE:ETHUSDT.P", "market": "futures"})
	// The fixture's clock: 2026-11-24 12:00 UTC is 1795521600000 ms.
	if text != string(wantJSON) || !strings.Contains(text, `"asOf":1795521600000,"usingFallback":true`) ||
		!strings.HasPrefix(text, `{"symbol":"ETH/USDT","market":"futures","price":`) {
		t.Fatalf("get_ticker:\n got %s\nwant %s", text, wantJSON)
	}
	if text := toolErr(t, f.ada, "get_ticker", map[string]any{"symbol": "FOO/USDT"}); text != `{"code":"INVALID_SYMBOL","numericCode":1001,"message":"unknown symbol \"FOO/USDT\""}` {
		t.Fatalf("unknown: %s", text)
	}
	if text := toolErr(t, f.ada, "get_ticker", map[string]any{"symbol": "BTCUSDT", "exchangeId": "conn-of-someone"}); text != `{"code":"NOT_FOUND","message":"exchange not found"}` {
		t.Fatalf("connection: %s", text)
	}
}

func TestListSymbols(t *testing.T) {
	f := newBotFixture(t)
	type page struct {
		Symbols    []string
		NextCursor *string
	}
	all := f.candles.Symbols()
	if len(all) < 6 {
		t.Fatalf("index: %v", all)
	}
	var got []string
	args := map[string]any{"limit": 4}
	for {
		p := toolOK[page](t, f.ada, "list_symbols", args)
		got = append(got, p.Symbols...)
		if p.NextCursor == nil {
			break
		}
		args["cursor"] = *p.NextCursor
	}
	if strings.Join(got, ",") != strings.Join(all, ",") {
		t.Fatalf("pages %v, want %v", got, all)
	}
	// The paper catalogue: BTC ETH DOGE SOL BNB XRP against USDT, sorted.
	if p := toolOK[page](t, f.ada, "list_symbols", map[string]any{"exchangeId": "paper", "market": "futures"}); strings.Join(p.Symbols, ",") !=
		"BNB/USDT,BTC/USDT,DOGE/USDT,ETH/USDT,SOL/USDT,XRP/USDT" {
		t.Fatalf("paper: %v", p.Symbols)
	}
	if p := toolOK[page](t, f.ada, "list_symbols", map[string]any{"exchangeId": "paper", "query": "eth-usd"}); strings.Join(p.Symbols, ",") != "ETH/USDT" {
		t.Fatalf("query: %v", p.Symbols)
	}
	if text := toolErr(t, f.ada, "list_symbols", map[string]any{"market": "options"}); !strings.Contains(text, "INVALID_PARAMETER") {
		t.Fatalf("market: %s", text)
	}
}

func TestGetSymbolInfo(t *testing.T) {
	f := newBotFixture(t)
	if err := credentials.NewConnections(f.rdb).Save(t.Context(), credentials.Connection{UID: "xc-ada", Namespace: "trading", Name: "a",
		Exchange: "binance", Owner: "ada@example.com", Ready: true, Sealed: "blob", Reason: "Validated"}); err != nil {
		t.Fatal(err)
	}
	_, text := toolResult(t, f.ada, "get_symbol_info", map[string]any{"symbol": "btc_usdt"})
	// The paper catalogue's BTC/USDT: 2 price decimals, 5 amount decimals, 5 USDT notional.
	if want := `{"symbol":"BTC/USDT","base":"BTC","quote":"USDT","market":"spot","tickSize":0.01,"stepSize":0.00001,` +
		`"minQty":0.00001,"minNotional":5}`; text != want {
		t.Fatalf("BTC:\n got %s\nwant %s", text, want)
	}
	for _, tc := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"symbol": "NOPE"}, `{"code":"INVALID_SYMBOL","numericCode":1001,"message":"unknown symbol \"NOPE\""}`},
		{map[string]any{"symbol": "BTCUSDT", "exchangeId": "binance"}, `"code":"INVALID_PARAMETER"`},
		// ada's ready connection, on a server without the master key.
		{map[string]any{"symbol": "BTCUSDT", "exchangeId": "xc-ada"}, `{"code":"EXCHANGE_DISCONNECTED","message":"credentials unavailable"}`},
	} {
		if text := toolErr(t, f.ada, "get_symbol_info", tc.args); !strings.Contains(text, tc.want) {
			t.Errorf("%v: %s", tc.args, text)
		}
	}
	if text := toolErr(t, f.bob, "get_symbol_info", map[string]any{"symbol": "BTCUSDT", "exchangeId": "xc-ada"}); text != `{"code":"NOT_FOUND","message":"exchange not found"}` {
		t.Fatalf("bob: %s", text)
	}
}
