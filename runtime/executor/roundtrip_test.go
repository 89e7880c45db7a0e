package executor_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/exchange"
)

// tripCounter is a go-redis hook that counts round trips: one per command sent alone, one
// per pipeline or MULTI/EXEC block (however many commands it holds).
type tripCounter struct {
	mu    sync.Mutex
	trips []string // one entry per round trip: its commands, space-separated
}

func (c *tripCounter) DialHook(next redis.DialHook) redis.DialHook { return next }

func (c *tripCounter) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		c.add([]redis.Cmder{cmd})
		return next(ctx, cmd)
	}
}

func (c *tripCounter) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		c.add(cmds)
		return next(ctx, cmds)
	}
}

func (c *tripCounter) add(cmds []redis.Cmder) {
	names := make([]string, len(cmds))
	for i, cmd := range cmds {
		names[i] = cmd.Name()
	}
	c.mu.Lock()
	c.trips = append(c.trips, strings.Join(names, " "))
	c.mu.Unlock()
}

func (c *tripCounter) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := c.trips
	c.trips = nil
	return out
}

// Redis round trips of one paper signal through Handle, from the result check to the
// published result. They are most of a fill's latency (docs/benchmarks.md, "Signal
// pipeline under load"): these ceilings keep the count from creeping back up unnoticed.
func TestPaperRoundTrips(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	c := &tripCounter{}
	h.rdb.AddHook(c)
	for _, tc := range []struct {
		name, body string
		max        int
	}{
		// The bot's first signal: nothing to read ahead yet (its paper account, its symbol),
		// and the staging script is not loaded in this Redis yet (EVALSHA, then EVAL).
		{"market buy", `{"action":"buy","symbol":"BTCUSDT"}`, 11},
		{"market sell", `{"action":"sell","symbol":"BTCUSDT"}`, 8},
		{"buy again", `{"action":"buy","symbol":"BTCUSDT"}`, 8},
		{"close", `{"action":"close"}`, 8},
	} {
		env := h.envelope(tc.body)
		c.take()
		if err := h.ex.Handle(h.ctx, env); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		trips := c.take()
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
		trips = c.take()
		t.Logf("%s, redelivered: %d round trips: %v", tc.name, len(trips), trips)
		if len(trips) > 2 {
			t.Errorf("%s redelivered: %d Redis round trips, want at most 2", tc.name, len(trips))
		}
	}
}
