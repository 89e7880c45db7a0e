package registry_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// TestMemoryPerBot prints the Redis bytes each projected bot costs before it trades (its
// hash with config and gate fields, its webhook route, its entries in the owner's and the
// global sets), by key family, for docs/benchmarks.md ("Memory per bot"). What trading
// adds per bot is in the per-signal table (the signal index, capped at 1,000 per bot) and
// the per-day aggregate.
func TestMemoryPerBot(t *testing.T) {
	if testing.Short() {
		t.Skip("projects 500 bots")
	}
	const bots = 500
	ctx := context.Background()
	_, rdb := storetest.New(t)
	before, err := storetest.Usage(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	reg := registry.New(rdb)
	for i := range bots {
		b := registry.Bot{ID: fmt.Sprintf("6f1c2d3e-4b5a-4c6d-8e7f-%012d", i), Namespace: "team-a", Name: fmt.Sprintf("trend-%d", i),
			Owner: fmt.Sprintf("trader%d@example.com", i%50), Account: registry.Account{Kind: registry.AccountPaper, Name: "main", ID: "acct"},
			Market: "futures", Symbol: "BTC/USDT", PositionSize: "10%", Leverage: 3, Availability: "active", WebhookEnabled: true,
			RateLimit: registry.Limit{PerMinute: 60, Burst: 10},
			Risk:      registry.Risk{MaxExposure: "0.8", DailyLossLimit: "100", MaxConsecutiveLosses: 4}}
		if err := reg.Project(ctx, b, fmt.Sprintf("%064d", i)); err != nil {
			t.Fatal(err)
		}
	}
	after, err := storetest.Usage(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	var fams []string
	per := map[string]float64{}
	total := 0.0
	for f, u := range after {
		d := float64(u.Bytes-before[f].Bytes) / bots
		if d == 0 {
			continue
		}
		// The owners' sets, one family whatever the owner.
		if rest, ok := strings.CutPrefix(f, "sigops:owner:"); ok {
			f = "sigops:owner:<email>" + rest[strings.LastIndexByte(rest, ':'):]
		}
		if _, seen := per[f]; !seen {
			fams = append(fams, f)
		}
		per[f] += d
		total += d
	}
	if total <= 0 {
		t.Fatal("no memory per bot measured")
	}
	sort.Slice(fams, func(i, j int) bool { return per[fams[i]] > per[fams[j]] })
	var b strings.Builder
	for _, f := range fams {
		fmt.Fprintf(&b, "| `%s` | %.0f |\n", f, per[f])
	}
	t.Logf("Redis bytes per projected bot (%d bots):\n| key | B/bot |\n|---|---:|\n%s| total | %.0f |", bots, b.String(), total)
}
