package marketdata_test

import (
	"testing"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/marketdata"
)

// sameCandles checks that a public venue client, reading marketdatafake over sim, answers
// sim's candles exactly: 50 of BTC/USDT in every timeframe, spot and futures. Each venue
// answers in its own form (newest first, decimal strings, OKX's swap volume in volCcy) and
// must turn it into the same candles; the check is one, so that the venues are held to the
// same standard.
func sameCandles(t *testing.T, p marketdata.Provider, sim *marketdata.Simulated) {
	t.Helper()
	for _, kind := range []exchange.Kind{exchange.Spot, exchange.Futures} {
		for _, tf := range marketdata.Timeframes() {
			got, err := p.Candles(t.Context(), kind, "BTC/USDT", tf, 50)
			if err != nil {
				t.Fatalf("%s %s: %v", kind, tf, err)
			}
			want, _ := sim.Candles(t.Context(), kind, "BTC/USDT", tf, 50)
			if len(got) != len(want) {
				t.Fatalf("%s %s: %d candles, want %d", kind, tf, len(got), len(want))
			}
			for i := range want {
				g, w := got[i], want[i]
				if g.Timestamp != w.Timestamp || g.Time != w.Time || !g.Open.Equal(w.Open) || !g.High.Equal(w.High) ||
					!g.Low.Equal(w.Low) || !g.Close.Equal(w.Close) || !g.Volume.Equal(w.Volume) {
					t.Fatalf("%s %s candle %d: %+v, want %+v", kind, tf, i, g, w)
				}
			}
		}
	}
}
