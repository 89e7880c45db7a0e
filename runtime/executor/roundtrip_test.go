package executor_test

import (
	"testing"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// Redis round trips of one paper signal through Handle, from the result check to the
// published result. They are most of a fill's latency (docs/benchmarks.md, "Signal
// pipeline under load"): these ceilings keep the count from creeping back up unnoticed.
func TestPaperRoundTrips(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	c := &storetest.Trips{}
	h.rdb.AddHook(c)
	for _, tc := range []struct {
		name, body string
		max        int
	}{
		// The bot's first signal: nothing to read ahead yet (its paper account, its symbol),
		// so the paper fill reads first (its script without the write), and the staging and
		// fill scripts are not loaded in this Redis yet (EVALSHA, then EVAL).
		{"market buy", `{"action":"buy","symbol":"BTCUSDT"}`, 11},
		// Then the paper account, the bot's holding and the leg's order are read in the
		// first pipeline, and the fill is one script: pipeline, staging, fill, booking
		// WATCH read, booking MULTI, result.
		{"market sell", `{"action":"sell","symbol":"BTCUSDT"}`, 6},
		{"buy again", `{"action":"buy","symbol":"BTCUSDT"}`, 6},
		{"close", `{"action":"close"}`, 6},
	} {
		env := h.envelope(tc.body)
		c.Take()
		if err := h.ex.Handle(h.ctx, env); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		trips := c.Take()
		t.Logf("%s: %d round trips", tc.name, len(trips))
		for i, tr := range trips {
			t.Logf("  %2d  %s", i+1, tr)
		}
		if len(trips) > tc.max {
			t.Errorf("%s: %d Redis round trips, want at most %d", tc.name, len(trips), tc.max)
		}
		// A redelivery of the executed signal only re-publishes its result.
		if err := h.ex.Handle(h.ctx, env); err != nil {
			t.Fatalf("%s again: %v", tc.name, err)
		}
		trips = c.Take()
		t.Logf("%s, redelivered: %d round trips: %v", tc.name, len(trips), trips)
		if len(trips) > 2 {
			t.Errorf("%s redelivered: %d Redis round trips, want at most 2", tc.name, len(trips))
		}
	}
}
