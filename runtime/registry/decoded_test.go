package registry_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store/storetest"
	"github.com/sigops/sigops/runtime/strategy"
)

// A cached decode follows every change of the projection, and what one reader does to its
// copy never reaches the next reader.
func TestDecodedFollowsChangesAndHandsCopies(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	reg := registry.New(rdb)
	var d registry.Decoded
	read := func() registry.Bot {
		t.Helper()
		got, err := d.GetLater(ctx, rdb, "uid-1")()
		if err != nil {
			t.Fatal(err)
		}
		return got
	}

	b := bot("uid-1", "a@x.io")
	b.Strategy = &strategy.Spec{Family: strategy.EMACrossover, Timeframe: "1h", Symbol: "BTC/USDT",
		Params: strategy.Params{FastPeriod: 9, SlowPeriod: 21}}
	b.CopyFrom = &registry.CopyFrom{MasterID: "uid-0", Ratio: "1"}
	if err := reg.Project(ctx, b, registry.HashWebhookID("11111111-1111-4111-8111-111111111111")); err != nil {
		t.Fatal(err)
	}
	first := read()
	if !reflect.DeepEqual(first.Strategy, b.Strategy) || first.PositionSize != "10%" {
		t.Fatalf("first read = %+v", first)
	}
	first.Strategy.Params.FastPeriod = 99
	first.CopyFrom.Ratio = "7"
	first.PositionSize = "1"
	again := read()
	if again.Strategy.Params.FastPeriod != 9 || again.CopyFrom.Ratio != "1" || again.PositionSize != "10%" {
		t.Fatalf("a reader's change reached the cache: %+v %+v %+v", again, *again.Strategy, *again.CopyFrom)
	}

	b.PositionSize = "20%"
	b.Strategy.Params.SlowPeriod = 50
	if err := reg.Project(ctx, b, registry.HashWebhookID("11111111-1111-4111-8111-111111111111")); err != nil {
		t.Fatal(err)
	}
	if after := read(); after.PositionSize != "20%" || after.Strategy.Params.SlowPeriod != 50 {
		t.Fatalf("after the projection changed, read %+v (strategy %+v), want the new one", after, *after.Strategy)
	}
}

// clone copies what Bot's pointers hold, and nothing else in Bot may share memory between
// copies: a slice, map or other pointer added to Bot must be copied by clone too.
func TestBotSharesNoMemoryButCloned(t *testing.T) {
	cloned := map[string]bool{"Strategy": true, "CopyFrom": true}
	var walk func(path string, typ reflect.Type)
	walk = func(path string, typ reflect.Type) {
		switch typ.Kind() {
		case reflect.Struct:
			for f := range typ.Fields() {
				walk(path+"."+f.Name, f.Type)
			}
		case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Chan, reflect.Func, reflect.Interface:
			t.Errorf("%s is a %s: registry.Decoded hands out copies that would share it", path, typ.Kind())
		}
	}
	for f := range reflect.TypeFor[registry.Bot]().Fields() {
		if cloned[f.Name] {
			walk("Bot."+f.Name, f.Type.Elem())
			continue
		}
		walk("Bot."+f.Name, f.Type)
	}
}
