package trading_test

import (
	"strconv"
	"testing"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/order"
)

// BenchmarkPlaceManualOnce is one keyed manual order: the key's read, the bot's gates and
// the enqueue script (a new key each time).
func BenchmarkPlaceManualOnce(b *testing.B) {
	ctx, _, api, _ := setup(b)
	buy := order.Request{Type: exchange.Market, Side: exchange.SideBuy, Symbol: "ETH/USDT", Amount: httpapi.NumOrNil(testkit.DP("0.5"))}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := api.PlaceManualOnce(ctx, "bot-1", "user-a", "k-"+strconv.Itoa(i), buy); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPlaceManualOnceRepeat is a repeat of a key: one read, nothing queued.
func BenchmarkPlaceManualOnceRepeat(b *testing.B) {
	ctx, _, api, _ := setup(b)
	buy := order.Request{Type: exchange.Market, Side: exchange.SideBuy, Symbol: "ETH/USDT", Amount: httpapi.NumOrNil(testkit.DP("0.5"))}
	if _, err := api.PlaceManualOnce(ctx, "bot-1", "user-a", "k", buy); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if p, err := api.PlaceManualOnce(ctx, "bot-1", "user-a", "k", buy); err != nil || !p.Repeat {
			b.Fatal(p, err)
		}
	}
}
