package executor_test

import (
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/sigops/sigops/runtime/exchange"
)

// BenchmarkPaperSignalMemory reports the Redis memory each paper signal leaves behind
// (MEMORY USAGE of every key after b.N market buys and sells of one bot, divided by the
// signals), in total and per key family, right after the run: before any TTL has expired.
func BenchmarkPaperSignalMemory(b *testing.B) {
	h := newHarness(b, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT"}`))
	h.ok(h.send(`{"action":"sell","symbol":"BTCUSDT"}`))
	base := keyMemory(b, h)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT"}`))
		h.ok(h.send(`{"action":"sell","symbol":"BTCUSDT"}`))
	}
	b.StopTimer()
	after := keyMemory(b, h)
	signals := float64(2 * b.N)
	var total int64
	families := make([]string, 0, len(after))
	for f := range after {
		families = append(families, f)
	}
	sort.Strings(families)
	for _, f := range families {
		d := after[f] - base[f]
		total += d
		if d != 0 {
			b.Logf("%-40s %8.0f B/signal", f, float64(d)/signals)
		}
	}
	b.ReportMetric(float64(total)/signals, "B/signal")
}

// family is a key's name with its IDs replaced, so that the keys of many signals add up.
var family = regexp.MustCompile(`(sig-\d+[~\w]*|[0-9a-f]{16,}|P[0-9a-f]{16,})`)

// keyMemory sums MEMORY USAGE by key family (the server's keys; on a Cluster, the nodes').
func keyMemory(b *testing.B, h *harness) map[string]int64 {
	b.Helper()
	out := map[string]int64{}
	keys, err := h.rdb.Keys(h.ctx, "*").Result()
	if err != nil {
		b.Skipf("KEYS: %v", err)
	}
	for _, k := range keys {
		n, err := h.rdb.MemoryUsage(h.ctx, k).Result()
		if err != nil {
			b.Fatal(err)
		}
		out[strings.TrimSpace(family.ReplaceAllString(k, "<id>"))] += n
	}
	return out
}
