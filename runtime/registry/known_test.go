package registry_test

import (
	"context"
	"testing"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// Symbols recorded by validated exchange connections are accepted after a refresh.
func TestKnownSymbolsFollowRedis(t *testing.T) {
	_, rdb := storetest.New(t)
	reg := registry.New(rdb)
	known := registry.NewKnownSymbols([]string{"BTC/USDT"})
	if _, err := known.Get().Resolve("ADAUSDT"); errs.CodeOf(err) != errs.InvalidSymbol {
		t.Fatalf("ADA before: %v", err)
	}
	if err := reg.AddSymbols(context.Background(), []string{"ADA/USDT"}); err != nil {
		t.Fatal(err)
	}
	if err := known.Refresh(context.Background(), reg); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{"ADAUSDT": "ADA/USDT", "BTCUSDT": "BTC/USDT"} {
		if got, err := known.Get().Resolve(in); err != nil || got != want {
			t.Fatalf("%s: %q %v", in, got, err)
		}
	}
}
