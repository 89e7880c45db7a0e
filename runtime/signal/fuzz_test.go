package signal_test

import (
	"errors"
	"testing"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/signal"
)

// FuzzParse: any body either parses into a signal with a known action or fails with a typed
// error; the parser never panics and never returns an untyped error.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		`{"action":"buy","symbol":"BTCUSDT","price":"65000","size":"10%","stopLoss":"2%"}`,
		`{"action":"close_short","leverage":5,"dca":true,"dcaLevel":3,"comment":"x"}`,
		`{"action":"sell","price":1.5e3}`, `{`, `[]`, ``, `{"action":null}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		s, err := signal.Parse(body)
		if err != nil {
			var e *errs.Error
			if !errors.As(err, &e) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		switch s.Action {
		case signal.Buy, signal.Sell, signal.Close, signal.CloseLong, signal.CloseShort:
		default:
			t.Fatalf("unknown action %q accepted", s.Action)
		}
		if s.DCALevel < 1 || (s.Price != nil && !s.Price.IsPositive()) || (s.Size != nil && !s.Size.Value.IsPositive()) {
			t.Fatalf("invalid signal accepted: %+v", s)
		}
	})
}

func FuzzResolve(f *testing.F) {
	syms := signal.NewSymbols([]string{"BTC/USDT", "ETH/USDT", "DOGE/USDT"})
	for _, seed := range []string{"BTCUSDT", "BINANCE:ETHUSDT.P", "doge/usdt", "::", "PERP"} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		got, err := syms.Resolve(raw)
		if err != nil {
			if errs.CodeOf(err) != errs.InvalidSymbol {
				t.Fatalf("error code %s", errs.CodeOf(err))
			}
			return
		}
		if got != "BTC/USDT" && got != "ETH/USDT" && got != "DOGE/USDT" {
			t.Fatalf("resolved to %q", got)
		}
	})
}
