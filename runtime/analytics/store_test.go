package analytics_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

var storeNow = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// legacyTrades writes trades into the bot's trade list only, as a version without the
// days booked them.
func legacyTrades(t testing.TB, rdb redis.UniversalClient, botID string, trades ...position.Trade) {
	t.Helper()
	if _, err := rdb.TxPipelined(context.Background(), func(p redis.Pipeliner) error {
		for _, tr := range trades {
			tr.BotID = botID
			if err := position.StageTrade(context.Background(), p, tr); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// bookTrade books one more trade as the executor does: its day read, the trade added,
// the day and the trade written together.
func bookTrade(t testing.TB, rdb redis.UniversalClient, botID string, tr position.Trade) {
	t.Helper()
	ctx := context.Background()
	date := analytics.DateOfMS(tr.ClosedAt)
	d, err := analytics.ReadDayLater(ctx, rdb, botID, date)()
	if err != nil {
		t.Fatal(err)
	}
	d.Add(tr)
	tr.BotID = botID
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if err := position.StageTrade(ctx, p, tr); err != nil {
			return err
		}
		return analytics.StageDay(ctx, p, botID, date, d)
	}); err != nil {
		t.Fatal(err)
	}
}

func netTrade(net string, closed time.Time) position.Trade {
	return position.Trade{NetPnl: httpapi.Num(testkit.D(net)), Fees: httpapi.Num(testkit.D("0.5")), ClosedAt: closed.UnixMilli()}
}

func reportJSON(t *testing.T, a *analytics.Analytics, bot registry.Bot) string {
	t.Helper()
	q, err := analytics.ParseQuery("all", "", "", "true", storeNow)
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.Bot(context.Background(), bot, q)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(r)
	return string(data)
}

// A bot whose trades were booked before the days existed is reported from its trade list
// (two round trips) until the migration builds its days (one round trip after, and one
// for the trades the equity curve draws), with the same figures; the starting equity
// stays unknown.
func TestTradesBeforeTheDays(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	bot := registry.Bot{ID: "bot-legacy", Name: "legacy", Symbol: "ETH/USDT"}
	legacyTrades(t, rdb, bot.ID, netTrade("12", time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)),
		netTrade("-4", time.Date(2026, 11, 20, 10, 0, 0, 0, time.UTC)), netTrade("3", time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)))
	hook := &storetest.Trips{}
	rdb.AddHook(hook)
	// trips are the report's round trips, a new connection's handshake aside.
	trips := func() []string {
		var out []string
		for _, tr := range hook.Take() {
			if !strings.HasPrefix(tr, "hello") && !strings.HasPrefix(tr, "client") {
				out = append(out, tr)
			}
		}
		return out
	}
	a := analytics.New(rdb)

	fromTrades := reportJSON(t, a, bot)
	if tr := trips(); len(tr) != 2 {
		t.Errorf("report from the trade list: %d round trips, want 2: %q", len(tr), tr)
	}
	var r analytics.Report
	if err := json.Unmarshal([]byte(fromTrades), &r); err != nil {
		t.Fatal(err)
	}
	// 12 − 4 + 3 = 11 over 3 trades; no starting equity.
	if r.Metrics.TotalTrades != 3 || !r.Metrics.TotalPnL.Equal(testkit.D("11")) || r.StartingEquity != nil || r.StartDate != "2026-11-20" {
		t.Fatalf("report %s", fromTrades)
	}
	if realised, err := a.Realised(ctx, bot.ID); err != nil || !realised.Equal(testkit.D("11")) {
		t.Errorf("realised %s %v, want 11", realised, err)
	}

	// A dry run writes nothing.
	if wrote, err := analytics.Rebuild(ctx, rdb, bot.ID, true); err != nil || !wrote {
		t.Fatalf("dry rebuild: %v %v", wrote, err)
	}
	if n := rdb.Exists(ctx, store.BookDays(bot.ID)).Val(); n != 0 {
		t.Fatal("a dry rebuild wrote the days")
	}
	if wrote, err := analytics.Rebuild(ctx, rdb, bot.ID, false); err != nil || !wrote {
		t.Fatalf("rebuild: %v %v", wrote, err)
	}
	trips()
	if fromDays := reportJSON(t, a, bot); fromDays != fromTrades {
		t.Errorf("from the days:\n%s\nfrom the trades:\n%s", fromDays, fromTrades)
	}
	// One for the days, one for the trades the equity curve draws.
	if tr := trips(); len(tr) != 2 || tr[1] != "lrange" {
		t.Errorf("report from the days: %d round trips, want 2: %q", len(tr), tr)
	}
	if wrote, err := analytics.Rebuild(ctx, rdb, bot.ID, false); err != nil || wrote {
		t.Fatalf("second rebuild: %v %v", wrote, err)
	}
	// The starting equity stays unknown: a later entry's HSETNX does not set it.
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		analytics.StageStart(ctx, p, bot.ID, testkit.D("5000"))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	bookTrade(t, rdb, bot.ID, netTrade("1", time.Date(2026, 11, 24, 9, 0, 0, 0, time.UTC)))
	if err := json.Unmarshal([]byte(reportJSON(t, a, bot)), &r); err != nil {
		t.Fatal(err)
	}
	if r.Metrics.TotalTrades != 4 || !r.Metrics.TotalPnL.Equal(testkit.D("12")) || r.StartingEquity != nil {
		t.Fatalf("after a booking: %+v", r)
	}

	// Trades booked without days after days exist (an executor of the old version still
	// running): the count no longer matches and the report reads the trade list again.
	legacyTrades(t, rdb, bot.ID, netTrade("100", time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)))
	trips()
	if err := json.Unmarshal([]byte(reportJSON(t, a, bot)), &r); err != nil {
		t.Fatal(err)
	}
	if n := len(trips()); n != 2 || r.Metrics.TotalTrades != 5 || !r.Metrics.TotalPnL.Equal(testkit.D("112")) {
		t.Fatalf("after an uncounted trade (%d round trips): %+v", n, r.Metrics)
	}
}

func TestPurge(t *testing.T) {
	_, rdb := storetest.New(t)
	bookTrade(t, rdb, "bot-1", netTrade("1", storeNow))
	bookTrade(t, rdb, "bot-2", netTrade("1", storeNow))
	if err := analytics.Purge(context.Background(), rdb, "bot-1"); err != nil {
		t.Fatal(err)
	}
	if rdb.Exists(context.Background(), store.BookDays("bot-1")).Val() != 0 || rdb.Exists(context.Background(), store.BookDays("bot-2")).Val() != 1 {
		t.Fatal("purge removed the wrong days")
	}
}

// seed100k writes a bot with 100,000 trades over 1,095 days ending today: its trade list,
// and its days built through Day.Add, as the bookings would have left them.
func seed100k(b *testing.B, rdb redis.UniversalClient, botID string) {
	b.Helper()
	ctx := context.Background()
	const trades, days = 100_000, 1095
	rng := rand.New(rand.NewPCG(7, 8))
	first := analytics.DateOf(storeNow) - days + 1
	byDay := make([]analytics.Day, days)
	var list []any
	flush := func() {
		if len(list) > 0 {
			if err := rdb.RPush(ctx, store.BookTrades(botID), list...).Err(); err != nil {
				b.Fatal(err)
			}
			list = list[:0]
		}
	}
	for i := range trades {
		day := i * days / trades
		tr := position.Trade{ID: fmt.Sprintf("t%d", i), BotID: botID, Symbol: "BTC/USDT",
			NetPnl: httpapi.Num(decimal.New(int64(rng.IntN(20001)-9900), -2)), Fees: httpapi.Num(decimal.New(int64(rng.IntN(500)), -3)),
			ClosedAt: (first + analytics.Date(day)).Start().UnixMilli() + int64(i%86_400_000)}
		byDay[day].Add(tr)
		data, _ := json.Marshal(tr)
		list = append(list, data)
		if len(list) == 1000 {
			flush()
		}
	}
	flush()
	values := []any{"start", "100000", "trades", trades}
	for i, d := range byDay {
		data, _ := json.Marshal(d)
		values = append(values, (first + analytics.Date(i)).String(), data)
	}
	if err := rdb.HSet(ctx, store.BookDays(botID), values...).Err(); err != nil {
		b.Fatal(err)
	}
}

// BenchmarkAnalytics100kTrades is one report of a bot with 100,000 trades over three
// years, period all with the equity curve, beside one HGETALL of the same days hash.
func BenchmarkAnalytics100kTrades(b *testing.B) {
	_, rdb := storetest.New(b)
	ctx := context.Background()
	bot := registry.Bot{ID: "bot-bench", Name: "bench", Symbol: "BTC/USDT"}
	seed100k(b, rdb, bot.ID)
	q, err := analytics.ParseQuery("all", "", "", "true", storeNow)
	if err != nil {
		b.Fatal(err)
	}
	a := analytics.New(rdb)
	r, err := a.Bot(ctx, bot, q)
	if n := len(r.EquityCurve); err != nil || r.Metrics.TotalTrades != 100_000 || n <= 1096 || n > 1096+analytics.MaxCurveTrades {
		b.Fatalf("report: %d trades, %d points, %v", r.Metrics.TotalTrades, len(r.EquityCurve), err)
	}
	b.Run("report", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := a.Bot(ctx, bot, q); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("hgetall", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := rdb.HGetAll(ctx, store.BookDays(bot.ID)).Err(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
