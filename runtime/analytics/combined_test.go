package analytics_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/store/storetest"
)

func at(days int, hour int) int64 {
	return storeNow.AddDate(0, 0, -days).Truncate(24 * time.Hour).Add(time.Duration(hour) * time.Hour).UnixMilli()
}

// combinedFixture: bot A trades +10 then −30 three days ago and +5 today; bot B +20
// yesterday. A's days are booked with the trades (Rebuild); B's are left to the fallback
// that reads the trade list, so both paths feed the sum.
func combinedFixture(t *testing.T) (*analytics.Analytics, redis.UniversalClient) {
	_, rdb := storetest.New(t)
	legacyTrades(t, rdb, "bot-a",
		position.Trade{ID: "a1", NetPnl: httpapi.Num(testkit.D("10")), ClosedAt: at(3, 9)},
		position.Trade{ID: "a2", NetPnl: httpapi.Num(testkit.D("-30")), ClosedAt: at(3, 10)},
		position.Trade{ID: "a3", NetPnl: httpapi.Num(testkit.D("5")), ClosedAt: at(0, 8)})
	if _, err := analytics.Rebuild(context.Background(), rdb, "bot-a", false); err != nil {
		t.Fatal(err)
	}
	legacyTrades(t, rdb, "bot-b", position.Trade{ID: "b1", NetPnl: httpapi.Num(testkit.D("20")), ClosedAt: at(1, 15)})
	return analytics.New(rdb), rdb
}

func TestCombinedCurve(t *testing.T) {
	a, _ := combinedFixture(t)
	ctx := context.Background()
	q, err := analytics.ParseQuery(analytics.Period7d, "", "", "true", storeNow)
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.Combined(ctx, []string{"bot-a", "bot-b", "bot-missing"}, q)
	if err != nil {
		t.Fatal(err)
	}
	// Realised: 10 − 30 + 5 + 20 = 5; today: A's +5; four trades.
	if !c.Realised.Equal(testkit.D("5")) || !c.Today.Equal(testkit.D("5")) || c.Trades != 4 {
		t.Fatalf("realised %s, today %s, trades %d", c.Realised, c.Today, c.Trades)
	}
	curve := c.Curve(testkit.D("1000"))
	// Day nets over the 7 days: 0, 0, 0, −20 (A), 0, +20 (B), +5 (A). The curve ends at
	// 1,000 and steps back: start 1000 − (−20 + 20 + 5) = 995.
	want := []string{"995", "995", "995", "995", "975", "975", "995", "1000"}
	if len(curve.Points) != len(want) {
		t.Fatalf("%d points, want %d", len(curve.Points), len(want))
	}
	for i, w := range want {
		if !curve.Points[i].Equity.Equal(testkit.D(w)) {
			t.Fatalf("point %d: %s, want %s", i, curve.Points[i].Equity, w)
		}
	}
	// The first point is the first day's midnight, the last is now; the others end a day.
	if curve.Points[0].Timestamp != at(6, 0) || curve.Points[1].Timestamp != at(5, 0) || curve.Points[7].Timestamp != storeNow.UnixMilli() {
		t.Fatalf("timestamps %d %d %d", curve.Points[0].Timestamp, curve.Points[1].Timestamp, curve.Points[7].Timestamp)
	}
	// Between daily points the largest fall is 995 → 975 = 20 (A's intraday 1005 → 975 is
	// not seen: two bots' trades of a day have no common order), 20 / 995 × 100 =
	// 2.0100…%; the curve ends at its peak.
	if !curve.MaxDrawdown.Equal(testkit.D("20")) || !curve.Drawdown.IsZero() || curve.DrawdownPercent != 0 ||
		curve.MaxDrawdownPercent < 2.01004 || curve.MaxDrawdownPercent > 2.01006 {
		t.Fatalf("drawdowns %+v", curve)
	}
	if !curve.Points[4].Drawdown.Equal(testkit.D("20")) || !curve.Points[7].Drawdown.IsZero() {
		t.Fatalf("point drawdowns %s %s", curve.Points[4].Drawdown, curve.Points[7].Drawdown)
	}
	// Ending at 990 instead, every point is 10 lower: 985 … 985, 965, 965, 985, 990; the
	// fall is still 20 (from 985) and the curve ends at its peak.
	lower := c.Curve(testkit.D("990"))
	if !lower.Points[0].Equity.Equal(testkit.D("985")) || !lower.MaxDrawdown.Equal(testkit.D("20")) || !lower.Drawdown.IsZero() {
		t.Fatalf("lower %+v", lower)
	}
}

func TestCombinedCurrentDrawdownAndAll(t *testing.T) {
	a, _ := combinedFixture(t)
	ctx := context.Background()
	q, err := analytics.ParseQuery(analytics.PeriodAll, "", "", "true", storeNow)
	if err != nil {
		t.Fatal(err)
	}
	c, err := a.Combined(ctx, []string{"bot-a", "bot-b"}, q)
	if err != nil {
		t.Fatal(err)
	}
	// All: from the first trade day, three days ago: its midnight, then 4 day ends.
	// Ending at 980: start 980 − 5 = 975; points 975, 955, 955, 975, 980. Largest fall
	// 975 → 955 = 20 (20 / 975 × 100 = 2.0512…%); now at the peak 980.
	curve := c.Curve(testkit.D("980"))
	want := []string{"975", "955", "955", "975", "980"}
	if len(curve.Points) != len(want) {
		t.Fatalf("%d points, want %d", len(curve.Points), len(want))
	}
	for i, w := range want {
		if !curve.Points[i].Equity.Equal(testkit.D(w)) {
			t.Fatalf("point %d: %s, want %s", i, curve.Points[i].Equity, w)
		}
	}
	if !curve.MaxDrawdown.Equal(testkit.D("20")) || curve.MaxDrawdownPercent < 2.05127 || curve.MaxDrawdownPercent > 2.05129 {
		t.Fatalf("max drawdown %s (%v%%)", curve.MaxDrawdown, curve.MaxDrawdownPercent)
	}
	// A current drawdown: only bot A (net −20 three days ago, +5 today), ending at 1000:
	// points 1015, 995, 995, 995, 1000; peak 1015, now 1000: 15 below, 15 / 1015 × 100 =
	// 1.4778…%; the largest fall 1015 → 995 = 20.
	onlyA, err := a.Combined(ctx, []string{"bot-a"}, q)
	if err != nil {
		t.Fatal(err)
	}
	cur := onlyA.Curve(testkit.D("1000"))
	if !cur.Points[0].Equity.Equal(testkit.D("1015")) || !cur.Drawdown.Equal(testkit.D("15")) || !cur.MaxDrawdown.Equal(testkit.D("20")) ||
		cur.DrawdownPercent < 1.47783 || cur.DrawdownPercent > 1.47784 {
		t.Fatalf("current drawdown %+v", cur)
	}
}

func TestRealisedOf(t *testing.T) {
	a, _ := combinedFixture(t)
	got, err := a.RealisedOf(context.Background(), []string{"bot-b", "bot-missing", "bot-a"})
	if err != nil {
		t.Fatal(err)
	}
	// B: +20; none; A: 10 − 30 + 5 = −15. Each equals Realised of the bot alone.
	for i, w := range []string{"20", "0", "-15"} {
		if !got[i].Equal(testkit.D(w)) {
			t.Fatalf("%d: %s, want %s", i, got[i], w)
		}
	}
	one, _ := a.Realised(context.Background(), "bot-a")
	if !one.Equal(got[2]) {
		t.Fatalf("Realised %s, RealisedOf %s", one, got[2])
	}
}

// Histories read once in a caller's pipeline give the figures Combined and RealisedOf read
// for themselves: the portfolio's realised PnL and the overview's curve sum the same days.
func TestHistoriesReadOnceGiveTheSameFigures(t *testing.T) {
	a, rdb := combinedFixture(t)
	ctx := context.Background()
	ids := []string{"bot-a", "bot-b", "bot-missing"}
	q, err := analytics.ParseQuery(analytics.PeriodAll, "", "", "true", storeNow)
	if err != nil {
		t.Fatal(err)
	}
	trips := &storetest.Trips{}
	rdb.AddHook(trips)
	reads := make([]func() (analytics.History, error), len(ids))
	if _, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			reads[i] = analytics.HistoryLater(ctx, p, rdb, id)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	hs := make([]analytics.History, len(ids))
	for i, read := range reads {
		if hs[i], err = read(); err != nil {
			t.Fatal(err)
		}
	}
	// One pipeline, and bot B's trade list (its days were never kept).
	if n := len(trips.Take()); n != 2 {
		t.Fatalf("%d round trips, want 2", n)
	}
	realised, err := a.RealisedOf(ctx, ids)
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range hs {
		if !h.Realised().Equal(realised[i]) {
			t.Fatalf("%s: realised %s, RealisedOf %s", ids[i], h.Realised(), realised[i])
		}
	}
	want, err := a.Combined(ctx, ids, q)
	if err != nil {
		t.Fatal(err)
	}
	got := analytics.Combine(hs, q)
	gc, wc := got.Curve(testkit.D("1000")), want.Curve(testkit.D("1000"))
	gj, _ := json.Marshal(gc.Points)
	wj, _ := json.Marshal(wc.Points)
	if string(gj) != string(wj) || !got.Realised.Equal(want.Realised) || !got.Today.Equal(want.Today) || got.Trades != want.Trades ||
		!gc.MaxDrawdown.Equal(wc.MaxDrawdown) {
		t.Fatalf("shared read %+v %s, own read %+v %s", got, gj, want, wj)
	}
}
