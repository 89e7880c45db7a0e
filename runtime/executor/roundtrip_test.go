package executor_test

import (
	"strings"
	"testing"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// paperTrips are the round trips of the paper exchange's fill (runtime/exchange/paper): its
// compare-and-set script, its inputs read ahead in the first pipeline.
const paperTrips = 1

// Redis round trips of one paper signal through Handle, from the result check to the
// published result. They are most of a fill's latency (docs/benchmarks.md, "Signal path at
// the limit: booking"): these ceilings keep the count from creeping back up unnoticed. A
// steady-state fill is the first pipeline, the paper fill and one commit script that books
// it and stores the result; a signal whose ID is not in its bot's partition publishes its
// result as a step of its own.
func TestPaperRoundTrips(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	c := &storetest.Trips{}
	h.rdb.AddHook(c)
	for _, tc := range []struct {
		name, body string
		outside    bool
		max        int
	}{
		// The bot's first signal: nothing to read ahead yet (its paper account, its symbol),
		// its first entry is staged (its starting equity), and the scripts are not loaded in
		// this Redis yet (EVALSHA, then EVAL).
		{"market buy", `{"action":"buy","symbol":"BTCUSDT"}`, false, 11},
		{"market sell", `{"action":"sell","symbol":"BTCUSDT"}`, false, 2 + paperTrips},
		{"buy again", `{"action":"buy","symbol":"BTCUSDT"}`, false, 2 + paperTrips},
		{"close", `{"action":"close"}`, false, 2 + paperTrips},
		{"buy, an ID outside the partition", `{"action":"buy","symbol":"BTCUSDT"}`, true, 3 + paperTrips},
		{"sell, an ID outside the partition", `{"action":"sell","symbol":"BTCUSDT"}`, true, 3 + paperTrips},
	} {
		env := h.envelope(tc.body)
		if tc.outside {
			env.SignalID = outsidePartition(h.bot.ID) + "-" + tc.name[:3]
		}
		c.Take()
		res := h.ok(h.run(env))
		trips := c.Take()
		trips = trips[:len(trips)-1] // the test's own read of the result
		t.Logf("%s: %d round trips", tc.name, len(trips))
		for i, tr := range trips {
			t.Logf("  %2d  %s", i+1, tr)
		}
		if len(trips) > tc.max {
			t.Errorf("%s: %d Redis round trips, want at most %d", tc.name, len(trips), tc.max)
		}
		last := trips[len(trips)-1]
		if tc.outside != strings.HasPrefix(last, "set ") || !tc.outside && !strings.HasPrefix(last, "eval") {
			t.Errorf("%s: the last round trip is %q, want the commit script, or the result's SET for an ID outside the partition", tc.name, last)
		}
		if res.Order == nil {
			t.Fatalf("%s: result without its order: %+v", tc.name, res)
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
