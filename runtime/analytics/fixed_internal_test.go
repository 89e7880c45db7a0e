package analytics

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
)

// TestReportOfFixedIsReportOf: random trade lists (several a day, break-evens, equal falls
// from different peaks, days without trades, losses deeper than the equity) give ReportOfFixed the report of
// ReportOf, byte for byte in JSON, equity curve included.
func TestReportOfFixedIsReportOf(t *testing.T) {
	q := query(t, "30d", "", "")
	from := q.From.Start().UnixMilli()
	for seed := range uint64(300) {
		r := rand.New(rand.NewPCG(seed, 3))
		scale := int32(r.IntN(13))
		n := r.IntN(200)
		fixed := make([]FixedTrade, n)
		trades := make([]position.Trade, n)
		at := from + r.Int64N(msPerDay)
		for i := range n {
			at += r.Int64N(msPerDay / 3)
			net := r.Int64N(2_000_000) - 1_000_000
			if seed%2 == 0 {
				// Few distinct results: equal falls from different peaks, break-evens.
				net = 100 * (r.Int64N(7) - 3)
			}
			fee := r.Int64N(10_000)
			fixed[i] = FixedTrade{ClosedAt: at, NetPnl: net, Fees: fee}
			trades[i] = position.Trade{ClosedAt: at, NetPnl: httpapi.Num(decimal.New(net, -scale)), Fees: httpapi.Num(decimal.New(fee, -scale))}
		}
		start := decimal.New(r.Int64N(100_000_000), -scale)
		got, ok := ReportOfFixed(Header{Symbol: "BTC/USDT"}, fixed, scale, &start, q)
		if !ok {
			t.Fatalf("seed %d: refused", seed)
		}
		want := ReportOf(Header{Symbol: "BTC/USDT"}, trades, &start, q)
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		if string(gj) != string(wj) {
			t.Fatalf("seed %d:\n%s\n%s", seed, gj, wj)
		}
	}
}

// TestReportOfFixedRefuses: a sum beyond int64 and trades out of ClosedAt order are left
// to ReportOf.
func TestReportOfFixedRefuses(t *testing.T) {
	q := query(t, "7d", "", "")
	ms := at(20, 10, 0).UnixMilli()
	big := []FixedTrade{{ClosedAt: ms, NetPnl: math.MaxInt64}, {ClosedAt: ms, NetPnl: 1}}
	if _, ok := ReportOfFixed(Header{}, big, 2, testkit.DP("1"), q); ok {
		t.Fatal("an overflowing sum is taken")
	}
	order := []FixedTrade{{ClosedAt: ms + msPerDay, NetPnl: 1}, {ClosedAt: ms, NetPnl: 1}}
	if _, ok := ReportOfFixed(Header{}, order, 2, testkit.DP("1"), q); ok {
		t.Fatal("trades out of order are taken")
	}
	// The hand-worked history of TestReportOf in cents: the same figures.
	cents := []FixedTrade{{at(20, 10, 0).UnixMilli(), 10000, 100}, {at(20, 11, 0).UnixMilli(), -4000, 100}, {at(22, 9, 0).UnixMilli(), -2000, 100}}
	r, ok := ReportOfFixed(Header{}, cents, 2, testkit.DP("1000"), q)
	if !ok {
		t.Fatal("refused")
	}
	// Net 100 − 40 − 20 = 40; drawdown from 1100 to 1040: 60.
	testkit.EqualD(t, "totalPnL", r.Metrics.TotalPnL.Decimal, "40")
	testkit.EqualD(t, "maxDrawdown", r.Metrics.MaxDrawdown.Decimal, "60")
	testkit.EqualD(t, "avgLoss", r.Metrics.AvgLoss.Decimal, "-30")
}
