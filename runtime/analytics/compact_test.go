package analytics_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

func day(d, h int) time.Time { return time.Date(2026, 11, d, h, 0, 0, 0, time.UTC) }

// report is the bot's report for period (ParseQuery's names) with the equity curve.
func report(t *testing.T, rdb redis.UniversalClient, bot registry.Bot, period string) analytics.Report {
	t.Helper()
	q, err := analytics.ParseQuery(period, "", "", "true", storeNow)
	if err != nil {
		t.Fatal(err)
	}
	r, err := analytics.New(rdb).Bot(context.Background(), bot, q)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func listed(t *testing.T, rdb redis.UniversalClient, botID string) []string {
	t.Helper()
	trades, err := position.AllTrades(context.Background(), rdb, botID)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]string, len(trades))
	for i, tr := range trades {
		ids[i] = tr.ID
	}
	return ids
}

// Compacting removes the trades closed before the cutoff from the list and changes no
// figure of any report: every period is computed from the days. The equity curve draws
// the days whose trades left the list a point each.
func TestCompactKeepsEveryFigure(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	bot := registry.Bot{ID: "bot-c", Name: "c", Symbol: "BTC/USDT"}
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		analytics.StageStart(ctx, p, bot.ID, testkit.D("1000"))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i, tr := range []struct {
		net    string
		closed time.Time
	}{{"10", day(20, 9)}, {"-4", day(20, 15)}, {"7", day(21, 9)}, {"-2.5", day(22, 9)}, {"3", day(24, 9)}} {
		x := netTrade(tr.net, tr.closed)
		x.ID = string(rune('a' + i))
		bookTrade(t, rdb, bot.ID, x)
	}
	before := map[string]analytics.Report{}
	for _, p := range []string{"all", "7d", "today", "week", "month", "30d"} {
		before[p] = report(t, rdb, bot, p)
	}
	// The cutoff is the start of the 22nd: a, b (20th) and c (21st) go.
	n, err := analytics.Compact(ctx, rdb, bot.ID, day(22, 0), 100)
	if err != nil || n != 3 {
		t.Fatalf("compacted %d, %v; want 3", n, err)
	}
	if ids := listed(t, rdb, bot.ID); len(ids) != 2 || ids[0] != "d" || ids[1] != "e" {
		t.Fatalf("list after compaction %v, want [d e]", ids)
	}
	for p, want := range before {
		got := report(t, rdb, bot, p)
		// The curve draws the compacted days a point each (below); the rest is unchanged.
		got.EquityCurve, want.EquityCurve = nil, nil
		g, _ := json.Marshal(got)
		w, _ := json.Marshal(want)
		if string(g) != string(w) {
			t.Errorf("period %s after compaction:\n%s\nbefore:\n%s", p, g, w)
		}
	}
	// Before, a point per trade; after, the 20th and 21st (compacted) a point each, the
	// 22nd and 24th (kept) a point per trade; every day closed at its end.
	wantCurve := func(r analytics.Report, want ...string) {
		t.Helper()
		var got []string
		for _, p := range r.EquityCurve {
			got = append(got, time.UnixMilli(p.Timestamp).UTC().Format("02T15")+" "+p.Equity.String()+" "+p.Drawdown.String())
		}
		if strings.Join(got, ", ") != strings.Join(want, ", ") {
			t.Errorf("curve\n%s\nwant\n%s", strings.Join(got, ", "), strings.Join(want, ", "))
		}
	}
	wantCurve(before["all"], "20T00 1000 0", "20T09 1010 0", "20T15 1006 4", "21T00 1006 4", "21T09 1013 0", "22T00 1013 0",
		"22T09 1010.5 2.5", "23T00 1010.5 2.5", "24T00 1010.5 2.5", "24T09 1013.5 0", "24T12 1013.5 0")
	wantCurve(report(t, rdb, bot, "all"), "20T00 1000 0", "21T00 1006 4", "22T00 1013 0",
		"22T09 1010.5 2.5", "23T00 1010.5 2.5", "24T00 1010.5 2.5", "24T09 1013.5 0", "24T12 1013.5 0")
	// all: 10 − 4 + 7 − 2.5 + 3 = 13.5 over 5 trades, 3 winners.
	all := report(t, rdb, bot, "all")
	if all.Metrics.TotalTrades != 5 || all.Metrics.WinningTrades != 3 || !all.Metrics.TotalPnL.Equal(testkit.D("13.5")) {
		t.Errorf("all after compaction: %+v", all.Metrics)
	}
	if realised, err := analytics.New(rdb).Realised(ctx, bot.ID); err != nil || !realised.Equal(testkit.D("13.5")) {
		t.Errorf("realised %s %v, want 13.5", realised, err)
	}
	if at, ok, err := analytics.Cutoff(ctx, rdb, bot.ID); err != nil || !ok || !at.Equal(day(22, 0)) {
		t.Errorf("cutoff %s %v %v, want %s", at, ok, err, day(22, 0))
	}

	// Compacting again at the same cutoff removes nothing; a booking after still counts.
	if n, err := analytics.Compact(ctx, rdb, bot.ID, day(22, 0), 100); err != nil || n != 0 {
		t.Fatalf("second compaction %d, %v", n, err)
	}
	bookTrade(t, rdb, bot.ID, position.Trade{ID: "f", NetPnl: httpapi.Num(testkit.D("1.5")), Fees: httpapi.Num(testkit.D("0.5")), ClosedAt: day(24, 10).UnixMilli()})
	// 13.5 + 1.5 = 15 over 6 trades.
	if all := report(t, rdb, bot, "all"); all.Metrics.TotalTrades != 6 || !all.Metrics.TotalPnL.Equal(testkit.D("15")) {
		t.Errorf("all after a later booking: %+v", all.Metrics)
	}
	// The days are complete, so there is nothing to rebuild.
	if wrote, err := analytics.Rebuild(ctx, rdb, bot.ID, false); err != nil || wrote {
		t.Fatalf("rebuild of compacted complete days: %v %v", wrote, err)
	}

	// A trade listed without its day (an old executor) makes the days incomplete: a report
	// still reads the days (the list lacks a, b and c), and the days are never rebuilt from
	// the compacted list.
	legacyTrades(t, rdb, bot.ID, position.Trade{ID: "g", NetPnl: httpapi.Num(testkit.D("100")), ClosedAt: day(24, 11).UnixMilli()})
	if all := report(t, rdb, bot, "all"); all.Metrics.TotalTrades != 6 || !all.Metrics.TotalPnL.Equal(testkit.D("15")) {
		t.Errorf("all with an uncounted trade after compaction: %+v", all.Metrics)
	}
	if _, err := analytics.Rebuild(ctx, rdb, bot.ID, false); !errors.Is(err, analytics.ErrCompacted) {
		t.Fatalf("rebuild from a compacted list: %v, want ErrCompacted", err)
	}
	if _, err := analytics.Compact(ctx, rdb, bot.ID, day(25, 0), 100); err == nil {
		t.Fatal("compacting incomplete compacted days succeeded")
	}
	if ids := listed(t, rdb, bot.ID); len(ids) != 4 {
		t.Fatalf("list after a refused compaction %v, want d e f g", ids)
	}
}

// A bot whose trades predate its days has its days built from the whole list before any
// trade leaves it; limit bounds one call.
func TestCompactBuildsLegacyDaysFirst(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	bot := registry.Bot{ID: "bot-old", Name: "old", Symbol: "ETH/USDT"}
	legacyTrades(t, rdb, bot.ID, position.Trade{ID: "a", NetPnl: httpapi.Num(testkit.D("12")), ClosedAt: day(10, 9).UnixMilli()},
		position.Trade{ID: "b", NetPnl: httpapi.Num(testkit.D("-4")), ClosedAt: day(11, 9).UnixMilli()},
		position.Trade{ID: "c", NetPnl: httpapi.Num(testkit.D("3")), ClosedAt: day(23, 9).UnixMilli()})
	before := report(t, rdb, bot, "all")

	if n, err := analytics.Compact(ctx, rdb, bot.ID, day(20, 0), 1); err != nil || n != 1 {
		t.Fatalf("first call: %d, %v; want 1 (limit)", n, err)
	}
	if n, err := analytics.Compact(ctx, rdb, bot.ID, day(20, 0), 100); err != nil || n != 1 {
		t.Fatalf("second call: %d, %v; want 1", n, err)
	}
	if ids := listed(t, rdb, bot.ID); len(ids) != 1 || ids[0] != "c" {
		t.Fatalf("list %v, want [c]", ids)
	}
	after := report(t, rdb, bot, "all")
	// The 10th and 11th left the list: their points are each day's close, the trades'
	// points gone; the 23rd's trade is still drawn.
	if n := len(after.EquityCurve); n != len(before.EquityCurve)-2 || after.EquityCurve[1].Timestamp != day(11, 0).UnixMilli() ||
		after.EquityCurve[n-3].Timestamp != day(23, 9).UnixMilli() {
		t.Errorf("curve after compaction %+v", after.EquityCurve)
	}
	after.EquityCurve, before.EquityCurve = nil, nil
	got, _ := json.Marshal(after)
	want, _ := json.Marshal(before)
	if string(got) != string(want) {
		t.Errorf("after compaction:\n%s\nbefore:\n%s", got, want)
	}
	// 12 − 4 + 3 = 11 over 3 trades, from the days (dropped 2 + listed 1 = counted 3).
	if h := rdb.HMGet(ctx, store.BookDays(bot.ID), "trades", "dropped").Val(); h[0] != "3" || h[1] != "2" {
		t.Errorf("days count %v, want trades 3 dropped 2", h)
	}
}
