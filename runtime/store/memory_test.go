package store_test

import (
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// The guard follows maxmemory as Redis has it now (CONFIG SET at runtime included), from a
// reading at most Refresh old; no limit is never full.
func TestMemoryGuardFollowsMaxmemory(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := t.Context()
	clk := testkit.NewClock(time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC))
	g := store.NewMemoryGuard(rdb, store.MemoryOptions{Headroom: 0.1, Refresh: time.Second, Now: clk.Now})
	set := func(v string) {
		t.Helper()
		if err := storetest.ConfigSet(ctx, rdb, "maxmemory", v); err != nil {
			t.Fatal(err)
		}
	}
	set("0")
	if g.Full(ctx) {
		t.Fatalf("full with no maxmemory: %+v", g.Reading())
	}
	// A limit every node is past: full from the next reading, not before.
	set("100kb")
	if g.Full(ctx) {
		t.Fatal("a reading younger than Refresh was not used")
	}
	clk.Advance(time.Second)
	if r := g.Reading(); g.Full(ctx) != true || !g.Reading().Full || g.Reading().Max != 100<<10 {
		t.Fatalf("under a 100 KB limit: %+v (before %+v)", g.Reading(), r)
	}
	// Raised at runtime: not full again.
	set("4gb")
	clk.Advance(time.Second)
	if g.Full(ctx) {
		t.Fatalf("under 4 GB: %+v", g.Reading())
	}
}
