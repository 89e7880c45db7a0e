package summary_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/notify"
	"github.com/sigops/sigops/runtime/notify/settings"
	"github.com/sigops/sigops/runtime/notify/summary"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// A summary goes at the user's hour in their time zone, once that day however often the
// scheduler looks, and not to a user whose hour it is not.
func TestSummaryAtTheUsersHourOnce(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	clk := testkit.NewClock(time.Date(2026, 12, 7, 17, 5, 0, 0, time.UTC)) // 18:05 in Berlin
	set := &settings.Store{DB: dbtest.New(t)}
	hour := func(h int) *int { return &h }
	for user, p := range map[string]notify.Prefs{
		"berlin": {SummaryHour: hour(18), Zone: "Europe/Berlin"},
		"utc":    {SummaryHour: hour(18)},
		"none":   {},
	} {
		if err := set.SetPrefs(ctx, user, p); err != nil {
			t.Fatal(err)
		}
	}
	asked := 0
	s := &summary.Scheduler{DB: set.DB, Redis: rdb, Now: clk.Now,
		Summarize: func(_ context.Context, user string) (notify.Event, error) {
			asked++
			return notify.Event{Day: "2026-12-07", Summary: []notify.BotDay{{Bot: "grid-" + user, State: "active",
				PnL: httpapi.Num(testkit.D("12.5")), Open: []string{"long 0.1 BTC/USDT"}}}}, nil
		}}
	for range 3 {
		if _, err := s.Step(ctx); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Minute)
	}
	if asked != 1 {
		t.Fatalf("%d summaries made, want 1 (berlin's, once)", asked)
	}
	msgs, err := rdb.XRange(ctx, store.Archive(store.PartitionOf("berlin")), "-", "+").Result()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("berlin's facts: %v %v", msgs, err)
	}
	v := msgs[0].Values["v"].(string)
	if !strings.Contains(v, `"id":"daily_summary:berlin:2026-12-07"`) || !strings.Contains(v, `"grid-berlin"`) {
		t.Fatalf("fact %s", v)
	}
	text := notify.Text(notify.Message{Events: []notify.Event{{Kind: notify.DailySummary, Day: "2026-12-07",
		Summary:  []notify.BotDay{{Bot: "a", State: "active", PnL: httpapi.Num(testkit.D("12.5"))}, {Bot: "b", State: "paused: Risk", PnL: httpapi.Num(testkit.D("-2.25")), Open: []string{"long 0.1 BTC/USDT"}}},
		Balances: []notify.Balance{{Account: "demo-paper", Currency: "USDT", Amount: httpapi.Num(testkit.D("9876.50"))}}}}})
	want := "Your day (2026-12-07, UTC), realised PnL:\n• a (active): +12.5\n• b (paused: Risk): -2.25; open: long 0.1 BTC/USDT\nTotal: +10.25\nPaper account demo-paper: 9876.5 USDT free"
	if text != want {
		t.Fatalf("text:\n%s\nwant:\n%s", text, want)
	}
}
