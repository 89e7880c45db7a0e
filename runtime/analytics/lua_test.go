package analytics_test

import (
	"context"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// DayLua makes the writes of StageDay and StageStart: the days hash is the same after
// either, for a trade, a starting equity, both, and neither; ReadDayTextLater returns the
// day's text exactly as stored.
func TestDayLuaMatchesStage(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	script := redis.NewScript(analytics.DayLua(1, 1) + "return 1\n")
	const bot = "bot-1"
	date := analytics.DateOf(time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC))
	var day analytics.Day
	day.Add(position.Trade{BotID: bot, NetPnl: httpapi.Num(testkit.D("-1.3")), Fees: httpapi.Num(testkit.D("1.3")), ClosedAt: 1})
	start := testkit.D("10000")
	for _, tc := range []struct {
		name  string
		day   *analytics.Day
		start *decimal.Decimal
	}{{"a trade", &day, nil}, {"a start", nil, &start}, {"both", &day, &start}, {"neither", nil, nil}} {
		storetest.FlushAll(ctx, rdb)
		rdb.HSet(ctx, store.BookDays(bot), "start", "5000") // a start recorded stays
		if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			if tc.day != nil {
				if err := analytics.StageDay(ctx, p, bot, date, *tc.day); err != nil {
					return err
				}
			}
			if tc.start != nil {
				analytics.StageStart(ctx, p, bot, *tc.start)
			}
			p.Ping(ctx)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		staged, _ := storetest.Dump(ctx, rdb, store.BookDays(bot))
		storetest.FlushAll(ctx, rdb)
		rdb.HSet(ctx, store.BookDays(bot), "start", "5000")
		key, args, err := analytics.NewDayWrite(bot, date, tc.day, tc.start)
		if err != nil {
			t.Fatal(err)
		}
		if err := script.Run(ctx, rdb, []string{key}, args...).Err(); err != nil {
			t.Fatal(err)
		}
		scripted, _ := storetest.Dump(ctx, rdb, store.BookDays(bot))
		if staged != scripted {
			t.Errorf("%s: the script left %s, the transaction %s", tc.name, scripted, staged)
		}
		got, text, started, err := analytics.ReadDayTextLater(ctx, rdb, bot, date)()
		if err != nil || !started {
			t.Fatalf("%s: read = %v, started %v", tc.name, err, started)
		}
		if (tc.day == nil) != (text == nil) || text != nil && *text != rdb.HGet(ctx, store.BookDays(bot), date.String()).Val() {
			t.Errorf("%s: day text %v", tc.name, text)
		}
		if tc.day != nil && (got.Trades != 1 || got.Losses != 1) {
			t.Errorf("%s: day read back %+v", tc.name, got)
		}
	}
}
