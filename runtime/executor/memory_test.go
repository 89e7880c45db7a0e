package executor_test

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/archive"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/retention"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// What one executed paper signal leaves in Redis is measured by key family (storetest.Family)
// over signals through Handle, so that the figure follows whatever the executor, the paper
// exchange and the queue store: market buys and the sells that close them, on one bot.

// signalsEach runs n signals (a buy, then the sell that closes it, alternately) at h.now.
func signalsEach(t testing.TB, h *harness, n int) {
	t.Helper()
	for i := range n {
		body := `{"action":"buy","symbol":"BTCUSDT"}`
		if i%2 == 1 {
			body = `{"action":"sell","symbol":"BTCUSDT"}`
		}
		if err := h.ex.Handle(h.ctx, h.envelope(body)); err != nil {
			t.Fatal(err)
		}
	}
}

// archiverOf is an archiver of h's Redis into a database of its own: the executor's
// archive role, which takes the history out of Redis.
func archiverOf(t testing.TB, h *harness) *archive.Archiver {
	return archive.New(archive.Options{Redis: h.rdb, DB: dbtest.New(t)})
}

// drainArchive copies everything the archive streams hold to PostgreSQL, as the executor's
// archiver does continuously.
func drainArchive(t testing.TB, h *harness, a *archive.Archiver) {
	t.Helper()
	for {
		_, full, err := a.Step(h.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !full {
			return
		}
	}
}

// perSignal is the memory of each key family per signal over n signals, after warm-up
// signals that create the keys every signal shares (the bot's lists and hashes).
type perSignal struct {
	bytes map[string]float64
	ttl   map[string]time.Duration
	// total is every family's bytes (MEMORY USAGE); hot those kept for the hot window, that
	// is all but the families that live no longer than a retry can need them (the paper
	// exchange's orders, paper.MinOrderTTL); used is Redis's used_memory grown per signal,
	// which counts what MEMORY USAGE leaves out (the keyspace's hash table and expiry
	// entries, the allocator's rounding).
	total, hot, used float64
	// usedHot is used_memory grown per signal once the paper exchange's copies have left.
	usedHot float64
	signal  int
}

// usedMemory is Redis's used_memory.
func usedMemory(t testing.TB, h *harness) int64 {
	t.Helper()
	n, err := storetest.UsedMemory(h.ctx, h.rdb)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// measurePerSignal runs warm, then n signals with the lives the executor sets with
// PostgreSQL and the default hot window (cmd/executor): order records and results for 24
// hours, paper orders for paper.MinOrderTTL.
func measurePerSignal(t testing.TB, h *harness, warm, n int) perSignal {
	t.Helper()
	position.SetOrderTTL(retention.DefaultHot)
	queue.SetResultTTL(retention.DefaultHot)
	paper.SetOrderTTL(paper.MinOrderTTL)
	defer func() {
		position.SetOrderTTL(position.OrderTTL)
		queue.SetResultTTL(queue.DefaultResultTTL)
		paper.SetOrderTTL(paper.DefaultOrderTTL)
	}()
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	arch := archiverOf(t, h)
	signalsEach(t, h, warm)
	drainArchive(t, h, arch)
	before, err := storetest.Usage(h.ctx, h.rdb)
	if err != nil {
		t.Fatal(err)
	}
	usedBefore := usedMemory(t, h)
	signalsEach(t, h, n)
	drainArchive(t, h, arch)
	after, err := storetest.Usage(h.ctx, h.rdb)
	if err != nil {
		t.Fatal(err)
	}
	usedAll := usedMemory(t, h)
	// The paper exchange's copies leave after paper.MinOrderTTL; what is left then is what
	// the hot window keeps.
	short, err := storetest.Keys(h.ctx, h.rdb, store.PaperOrder("*", "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range short {
		h.rdb.Del(h.ctx, k)
	}
	usedHot := usedMemory(t, h)
	out := perSignal{bytes: map[string]float64{}, ttl: map[string]time.Duration{}, signal: n,
		used: float64(usedAll-usedBefore) / float64(n), usedHot: float64(usedHot-usedBefore) / float64(n)}
	for f, u := range after {
		d := float64(u.Bytes-before[f].Bytes) / float64(n)
		if d != 0 {
			out.bytes[f], out.ttl[f] = d, u.MaxTTL
			out.total += d
			if u.MaxTTL <= 0 || u.MaxTTL > paper.MinOrderTTL {
				out.hot += d
			}
		}
	}
	return out
}

func (p perSignal) table() string {
	fams := make([]string, 0, len(p.bytes))
	for f := range p.bytes {
		fams = append(fams, f)
	}
	sort.Slice(fams, func(i, j int) bool { return p.bytes[fams[i]] > p.bytes[fams[j]] })
	var b strings.Builder
	fmt.Fprintf(&b, "| key | B/signal | TTL |\n|---|---:|---|\n")
	for _, f := range fams {
		ttl := "none"
		if p.ttl[f] > 0 {
			ttl = p.ttl[f].Round(time.Minute).String()
		}
		fmt.Fprintf(&b, "| `%s` | %.0f | %s |\n", f, p.bytes[f], ttl)
	}
	fmt.Fprintf(&b, "| total | %.0f | |\n", p.total)
	fmt.Fprintf(&b, "| kept for the hot window | %.0f | |\n", p.hot)
	fmt.Fprintf(&b, "| used_memory grown | %.0f | |\n", p.used)
	fmt.Fprintf(&b, "| used_memory grown, once the paper copies left | %.0f | |\n", p.usedHot)
	return b.String()
}

// TestMemoryPerSignal prints the table of docs/benchmarks.md, "Memory per signal".
func TestMemoryPerSignal(t *testing.T) {
	if testing.Short() {
		t.Skip("measures 400 signals")
	}
	h := newHarness(t, nil)
	p := measurePerSignal(t, h, 20, 400)
	if p.total <= 0 {
		t.Fatalf("no memory per signal measured: %v", p.bytes)
	}
	t.Logf("memory per signal over %d signals:\n%s", p.signal, p.table())
}

// BenchmarkMemoryPerSignal reports the Redis bytes each executed signal leaves for the hot
// window (B/signal), in all (all-B/signal, the paper exchange's ten-minute copy included)
// and as used_memory grew (used-B/signal), beside the bare reference of one 64-byte string
// value under a 40-byte key (ref-B/key).
func BenchmarkMemoryPerSignal(b *testing.B) {
	h := newHarness(b, nil)
	n := max(b.N, 100)
	p := measurePerSignal(b, h, 20, n)
	h.rdb.Set(h.ctx, "sigops:ref:0123456789012345678901234567", strings.Repeat("x", 64), 0)
	ref := h.rdb.MemoryUsage(h.ctx, "sigops:ref:0123456789012345678901234567", 0).Val()
	b.ReportMetric(p.hot, "B/signal")
	b.ReportMetric(p.total, "all-B/signal")
	b.ReportMetric(p.used, "used-B/signal")
	b.ReportMetric(p.usedHot, "used-hot-B/signal")
	b.ReportMetric(float64(ref), "ref-B/key")
	b.ReportMetric(p.hot/float64(ref), "x-ref")
	b.Logf("%d signals:\n%s", n, p.table())
}

// TestMemoryFlat runs a steady number of signals a day (the clock and Redis's TTLs moved a
// day at a time) for longer than the history retention, compacting after each day as the
// executor does, and checks that from the day the retention applies the memory of every key
// stays flat; and that compaction changes no figure of a recent period.
func TestMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 21 simulated days")
	}
	const perDay, ret, days = 40, 7 * 24 * time.Hour, 21
	position.SetOrderTTL(ret)
	t.Cleanup(func() { position.SetOrderTTL(position.OrderTTL) })
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	h.now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	c, err := retention.New(retention.Options{Redis: h.rdb, Retention: ret, Now: func() time.Time { return h.now }})
	if err != nil {
		t.Fatal(err)
	}
	a := analytics.New(h.rdb)
	arch := archiverOf(t, h)
	var sums []map[string]int64
	for d := range days {
		signalsEach(t, h, perDay)
		drainArchive(t, h, arch)
		before := recentReport(t, h, a)
		r, err := c.Bot(h.ctx, h.bot.ID, c.Cutoff(h.now))
		if err != nil {
			t.Fatal(err)
		}
		if after := recentReport(t, h, a); after != before {
			t.Fatalf("day %d: the 7d report changed with compaction (%+v):\n%s\nbefore:\n%s", d, r, after, before)
		}
		sums = append(sums, daySums(t, h))
		t.Logf("day %2d: %d B in Redis keys, compaction removed %d trades, %d orders", d, sums[d][""], r.Trades, r.Orders)
		h.now = h.now.Add(24 * time.Hour)
		if err := storetest.AdvanceTTLs(h.ctx, h.rdb, 24*time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	// The retention applies from day 9 on (the cutoff is a day start, so a day's trades
	// leave on the ninth run after them). From then on each day ends within 0.5 % of the one
	// before, and the last within 1 % of day 10, leaving aside the families bounded by their
	// owners elsewhere. What one day adds is about 40 signals × 1 kB = 40 kB, of which the
	// trades are 20 × 210 B = 4.2 kB: trades never removed would break both bounds (1.35 % a
	// day on about 310 kB). The days hash grows by one field (about 100 B) a day.
	excl := func(d int) int64 {
		n := sums[d][""]
		for f := range unboundedElsewhere {
			n -= sums[d][f]
		}
		return n
	}
	for d := 10; d < days; d++ {
		for f, why := range unboundedElsewhere {
			if grew := sums[d][f] - sums[d-1][f]; grew > 0 {
				t.Logf("day %d: %s grew %d B (%s)", d, f, grew, why)
			}
		}
		prev, cur := excl(d-1), excl(d)
		if diff := float64(cur-prev) / float64(prev); diff > 0.005 || diff < -0.005 {
			t.Errorf("day %d: %d B, day %d: %d B (%+.2f %%)", d, cur, d-1, prev, 100*diff)
		}
	}
	if diff := float64(excl(days-1)-excl(10)) / float64(excl(10)); diff > 0.01 || diff < -0.01 {
		t.Errorf("day %d: %d B, day 10: %d B (%+.2f %%)", days-1, excl(days-1), excl(10), 100*diff)
	}
}

// unboundedElsewhere are the key families that grow with every signal and whose bound is
// their owner's, not the history retention's, with that bound.
// The paper exchange's orders expire (paper.OrderTTL, 8 days) within the run, so none is.
var unboundedElsewhere = map[string]string{}

// daySums is the memory of each key family, and under "" their total.
func daySums(t *testing.T, h *harness) map[string]int64 {
	t.Helper()
	u, err := storetest.Usage(h.ctx, h.rdb)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for f, x := range u {
		out[f] = x.Bytes
		out[""] += x.Bytes
	}
	return out
}

// recentReport is the bot's 7d report as JSON.
func recentReport(t *testing.T, h *harness, a *analytics.Analytics) string {
	t.Helper()
	q, err := analytics.ParseQuery("7d", "", "", "true", h.now)
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.Bot(h.ctx, h.bot, q)
	if err != nil {
		t.Fatal(err)
	}
	return fmt.Sprintf("%+v", r)
}
