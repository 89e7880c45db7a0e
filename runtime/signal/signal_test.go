package signal_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/signal"
)

func TestActionsAndAliases(t *testing.T) {
	for in, want := range map[string]signal.Action{
		"buy": signal.Buy, "BUY": signal.Buy, "long": signal.Buy, "Long": signal.Buy,
		"sell": signal.Sell, "short": signal.Sell, "SHORT": signal.Sell,
		"close": signal.Close, "exit": signal.Close, "flatten": signal.Close, "Flatten": signal.Close,
		"close_long": signal.CloseLong, "exit_long": signal.CloseLong, "EXIT_LONG": signal.CloseLong,
		"close_short": signal.CloseShort, "exit_short": signal.CloseShort,
		" buy ": signal.Buy,
	} {
		s, err := signal.Parse([]byte(`{"action":"` + in + `"}`))
		if err != nil || s.Action != want {
			t.Errorf("action %q: %v, %v; want %s", in, s.Action, err, want)
		}
	}
}

func TestFieldForms(t *testing.T) {
	s, err := signal.Parse([]byte(`{"action":"buy","symbol":"BTCUSDT","price":"65000.5","size":"10%",
		"leverage":"5","stopLoss":"2%","takeProfit":"70000","comment":"hi","dca":true,"dcaLevel":2,"extra":{"x":1}}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Symbol != "BTCUSDT" || s.Price.String() != "65000.5" || !s.Size.Percent || s.Size.Value.String() != "10" ||
		s.Leverage != 5 || !s.StopLoss.Percent || s.StopLoss.Value.String() != "2" || s.TakeProfit.Percent ||
		s.TakeProfit.Value.String() != "70000" || s.Comment != "hi" || !s.DCA || s.DCALevel != 2 {
		t.Fatalf("parsed = %+v", s)
	}
	// Numbers where strings are usual, and the reverse.
	s, err = signal.Parse([]byte(`{"action":"sell","price":65000.25,"leverage":10,"size":0.015,"dca":"false","dcaLevel":"1"}`))
	if err != nil {
		t.Fatal(err)
	}
	if s.Price.String() != "65000.25" || s.Leverage != 10 || s.Size.Percent || s.Size.Value.String() != "0.015" || s.DCA || s.DCALevel != 1 {
		t.Fatalf("parsed = %+v", s)
	}
	// Defaults: market order, bot size, level 1.
	s, _ = signal.Parse([]byte(`{"action":"close"}`))
	if s.Price != nil || s.Size != nil || s.Leverage != 0 || s.DCALevel != 1 {
		t.Fatalf("defaults = %+v", s)
	}
	// An exact decimal survives: no float on the way.
	s, _ = signal.Parse([]byte(`{"action":"buy","price":0.1000000000000000055511151231257827}`))
	if s.Price.String() != "0.1000000000000000055511151231257827" {
		t.Fatalf("price lost precision: %s", s.Price)
	}
	// Empty placeholders are absent.
	s, err = signal.Parse([]byte(`{"action":"buy","price":"","size":"","leverage":""}`))
	if err != nil || s.Price != nil || s.Size != nil || s.Leverage != 0 {
		t.Fatalf("empty placeholders: %+v %v", s, err)
	}
}

func TestParseErrors(t *testing.T) {
	long := strings.Repeat("é", 201)
	rows := []struct {
		body string
		code errs.Code
	}{
		{``, errs.InvalidJSON},
		{`not json`, errs.InvalidJSON},
		{`[1,2]`, errs.InvalidJSON},
		{`{"action":"buy"`, errs.InvalidJSON},
		{`{}`, errs.InvalidJSON},
		{`{"action":""}`, errs.InvalidJSON},
		{`{"action":5}`, errs.InvalidJSON},
		{`{"action":"hodl"}`, errs.InvalidAction},
		{`{"action":"buy","symbol":5}`, errs.InvalidJSON},
		{`{"action":"buy","price":"abc"}`, errs.InvalidPrice},
		{`{"action":"buy","price":0}`, errs.InvalidPrice},
		{`{"action":"buy","price":-1}`, errs.InvalidPrice},
		{`{"action":"buy","price":"1e5"}`, errs.InvalidPrice},
		{`{"action":"buy","price":{}}`, errs.InvalidJSON},
		{`{"action":"buy","size":"0%"}`, errs.InvalidAmount},
		{`{"action":"buy","size":"101%"}`, errs.InvalidAmount},
		{`{"action":"buy","size":"-1"}`, errs.InvalidAmount},
		{`{"action":"buy","size":"1,000"}`, errs.InvalidAmount},
		{`{"action":"buy","stopLoss":"100%"}`, errs.InvalidPrice},
		{`{"action":"buy","takeProfit":"x%"}`, errs.InvalidPrice},
		{`{"action":"buy","leverage":0}`, errs.InvalidAmount},
		{`{"action":"buy","leverage":126}`, errs.InvalidAmount},
		{`{"action":"buy","leverage":2.5}`, errs.InvalidJSON},
		{`{"action":"buy","leverage":true}`, errs.InvalidJSON},
		{`{"action":"buy","comment":"` + long + `"}`, errs.InvalidJSON},
		{`{"action":"buy","dca":"maybe"}`, errs.InvalidJSON},
		{`{"action":"buy","dcaLevel":0}`, errs.DCAInvalidLevel},
		{`{"action":"buy","dcaLevel":-2}`, errs.DCAInvalidLevel},
		{`{"action":"buy","dcaLevel":1.5}`, errs.InvalidJSON},
	}
	for _, r := range rows {
		_, err := signal.Parse([]byte(r.body))
		var e *errs.Error
		if !errors.As(err, &e) || e.Code != r.code {
			t.Errorf("%.60s: err = %v, want %s", r.body, err, r.code)
		}
	}
	// 200 characters exactly is allowed.
	if _, err := signal.Parse([]byte(`{"action":"buy","comment":"` + strings.Repeat("é", 200) + `"}`)); err != nil {
		t.Errorf("200-character comment refused: %v", err)
	}
}

func TestResolveSymbols(t *testing.T) {
	syms := signal.NewSymbols([]string{"BTC/USDT", "ETH/USDT", "DOGE/USDT", "ETH/BTC", "1000PEPE/USDT"})
	for in, want := range map[string]string{
		"BTCUSDT": "BTC/USDT", "BTC/USDT": "BTC/USDT", "btcusdt": "BTC/USDT", "btc/usdt": "BTC/USDT",
		"BINANCE:BTCUSDT": "BTC/USDT", "BINANCE:BTCUSDT.P": "BTC/USDT", "BTCUSDTPERP": "BTC/USDT",
		"BYBIT:ETHUSDT.P": "ETH/USDT", "eth-usdt": "ETH/USDT", "ETH_USDT": "ETH/USDT", "ETHBTC": "ETH/BTC",
		" dogeusdt ": "DOGE/USDT", "1000PEPEUSDT": "1000PEPE/USDT", "BTC-PERP": "",
		"BTC/USDT:USDT": "BTC/USDT", "btc/usdt:usdt": "BTC/USDT", "BYBIT:ETH/USDT:USDT": "ETH/USDT",
		"BINANCE:BTC/USDT": "BTC/USDT", "BTC-USDT": "BTC/USDT", "BTCUSDT.P": "BTC/USDT",
	} {
		got, err := syms.Resolve(in)
		if want == "" {
			if errs.CodeOf(err) != errs.InvalidSymbol {
				t.Errorf("%q: %q, %v; want INVALID_SYMBOL", in, got, err)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("%q: %q, %v; want %s", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "XRPUSDT", "BT/CUSDT", "BINANCE:", "USDT", "BTC/USDC", "BT/CUSDT:USDT", "BTCUSDT:USDT"} {
		if _, err := syms.Resolve(bad); errs.CodeOf(err) != errs.InvalidSymbol {
			t.Errorf("%q: err = %v, want INVALID_SYMBOL", bad, err)
		}
	}
}
