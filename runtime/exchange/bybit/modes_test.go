package bybit_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/bybit"
	"github.com/sigops/sigops/runtime/exchange/bybit/bybitfake"
)

var _ exchange.ModeReader = (*bybit.Account)(nil)

// TestAccountMode: read from the position list; with no position held (Bybit lists none by
// settle coin) from BTCUSDT's entries.
func TestAccountMode(t *testing.T) {
	srv, a := setup(t)
	ctx := context.Background()
	m, err := a.AccountMode(ctx)
	if err != nil || m != (exchange.AccountMode{Mode: exchange.OneWay}) {
		t.Fatalf("fresh account: %+v %v", m, err)
	}
	srv.SetPositionMode(bybitfake.BothSides)
	if m, err = a.AccountMode(ctx); err != nil || m != (exchange.AccountMode{Mode: exchange.Hedge}) {
		t.Fatalf("hedge, nothing held: %+v %v", m, err)
	}
	for _, req := range []exchange.OrderRequest{linear(exchange.SideBuy, exchange.Market, "0.01"),
		linear(exchange.SideSell, exchange.Market, "0.01")} {
		if _, err := a.PlaceOrder(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	eth := linear(exchange.SideBuy, exchange.Market, "0.1")
	eth.Symbol = "ETH/USDT"
	if _, err := a.PlaceOrder(ctx, eth); err != nil {
		t.Fatal(err)
	}
	if m, err = a.AccountMode(ctx); err != nil || m != (exchange.AccountMode{Mode: exchange.Hedge, OpenPositions: 3}) {
		t.Errorf("hedge with a long and a short BTC and a long ETH: %+v %v", m, err)
	}

	// One-way with a position: read from the position itself.
	srv2, a2 := setup(t)
	if _, err := a2.PlaceOrder(ctx, linear(exchange.SideBuy, exchange.Market, "0.01")); err != nil {
		t.Fatal(err)
	}
	before := srv2.Calls("/v5/position/list")
	if m, err = a2.AccountMode(ctx); err != nil || m != (exchange.AccountMode{Mode: exchange.OneWay, OpenPositions: 1}) {
		t.Errorf("one-way with a position: %+v %v", m, err)
	}
	if n := srv2.Calls("/v5/position/list") - before; n != 1 {
		t.Errorf("%d position reads", n)
	}
}

// TestModeReadOncePerTTL: the mode is read before the first linear order, kept for
// ModeTTL, then read again; spot orders never read it.
func TestModeReadOncePerTTL(t *testing.T) {
	srv := bybitfake.New()
	defer srv.Close()
	a := account(t, srv, bybit.Connector{ModeTTL: 300 * time.Millisecond})
	ctx := context.Background()
	if _, err := a.PlaceOrder(ctx, spotMarket(exchange.SideBuy, "0.001")); err != nil {
		t.Fatal(err)
	}
	if n := srv.Calls("/v5/position/list"); n != 0 {
		t.Errorf("a spot order read the mode %d times", n)
	}
	for i := 0; i < 3; i++ {
		if _, err := a.PlaceOrder(ctx, linear(exchange.SideBuy, exchange.Market, "0.01")); err != nil {
			t.Fatal(err)
		}
	}
	if n := srv.Calls("/v5/position/list"); n != 1 {
		t.Errorf("3 orders read the mode %d times", n)
	}
	// Past the TTL, AccountMode reads the mode again and keeps it for the symbols it saw.
	time.Sleep(350 * time.Millisecond)
	if _, err := a.AccountMode(ctx); err != nil {
		t.Fatal(err)
	}
	reads := srv.Calls("/v5/position/list")
	if _, err := a.PlaceOrder(ctx, linear(exchange.SideSell, exchange.Market, "0.01")); err != nil {
		t.Fatal(err)
	}
	if n := srv.Calls("/v5/position/list") - reads; n != 0 {
		t.Errorf("an order after AccountMode read the mode %d times", n)
	}
}

// TestSwitchModeThroughTheFake: the fake's switch-mode takes a free symbol and refuses one
// that holds a position; the adapter follows what Bybit then reports.
func TestSwitchModeThroughTheFake(t *testing.T) {
	srv := bybitfake.New()
	defer srv.Close()
	a := account(t, srv, bybit.Connector{ModeTTL: time.Nanosecond})
	ctx := context.Background()
	if _, err := a.PlaceOrder(ctx, linear(exchange.SideBuy, exchange.Market, "0.01")); err != nil {
		t.Fatal(err)
	}
	// By coin: BTCUSDT holds a position and keeps one-way; ETHUSDT switches.
	if code, _ := switchMode(t, srv, `{"category":"linear","coin":"USDT","mode":3}`); code != 0 {
		t.Fatalf("switch by coin: %d", code)
	}
	if srv.PositionMode("BTCUSDT") != bybitfake.MergedSingle || srv.PositionMode("ETHUSDT") != bybitfake.BothSides {
		t.Errorf("modes BTC %d ETH %d", srv.PositionMode("BTCUSDT"), srv.PositionMode("ETHUSDT"))
	}
	eth := linear(exchange.SideBuy, exchange.Market, "0.1")
	eth.Symbol = "ETH/USDT"
	if _, err := a.PlaceOrder(ctx, eth); err != nil {
		t.Fatal(err)
	}
	btc := linear(exchange.SideBuy, exchange.Market, "0.01")
	if _, err := a.PlaceOrder(ctx, btc); err != nil {
		t.Fatal(err)
	}
	if fe, _ := srv.Order(eth.ClientOrderID); fe.PositionIdx != 1 {
		t.Errorf("ETHUSDT (hedge) sent positionIdx %d", fe.PositionIdx)
	}
	if fb, _ := srv.Order(btc.ClientOrderID); fb.PositionIdx != 0 {
		t.Errorf("BTCUSDT (one-way) sent positionIdx %d", fb.PositionIdx)
	}
	m, err := a.AccountMode(ctx)
	if err != nil || m != (exchange.AccountMode{Mode: exchange.Hedge, OpenPositions: 2}) {
		t.Errorf("mixed: %+v %v", m, err)
	}
}

// switchMode sends POST /v5/position/switch-mode as the account's owner would, and
// returns Bybit's retCode and retMsg.
func switchMode(t *testing.T, srv *bybitfake.Server, body string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, srv.URL()+"/v5/position/switch-mode", strings.NewReader(body))
	ts := strconv.FormatInt(time.Now().UnixMilli(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-BAPI-API-KEY", bybitfake.APIKey)
	req.Header.Set("X-BAPI-TIMESTAMP", ts)
	req.Header.Set("X-BAPI-RECV-WINDOW", "5000")
	req.Header.Set("X-BAPI-SIGN", bybit.Sign(bybitfake.APISecret, ts, bybitfake.APIKey, "5000", body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var env struct {
		RetCode int    `json:"retCode"`
		RetMsg  string `json:"retMsg"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&env); err != nil {
		t.Fatal(err)
	}
	return env.RetCode, env.RetMsg
}
