package risk_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/risk"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// CountersLua writes the counters as StageCounters does, and ReadCountersTextLater returns
// each field's text as stored, absent fields absent.
func TestCountersLuaMatchesStage(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	script := redis.NewScript(risk.CountersLua(1, 1) + "return 1\n")
	key := store.RiskCounters("bot-1")
	c := risk.Counters{Day: "2026-11-21", DayPnl: testkit.D("-12.50"), ConsecutiveLosses: 2}
	rdb.HSet(ctx, key, "consecutiveErrors", "3")
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		risk.StageCounters(ctx, p, "bot-1", c)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	staged, _ := storetest.Dump(ctx, rdb, key)
	rdb.Del(ctx, key)
	if err := script.Run(ctx, rdb, []string{key}, risk.CountersArgs(c)...).Err(); err != nil {
		t.Fatal(err)
	}
	scripted, _ := storetest.Dump(ctx, rdb, key)
	if staged != scripted {
		t.Fatalf("the script left %s, the transaction %s", scripted, staged)
	}
	got, texts, err := risk.ReadCountersTextLater(ctx, rdb, "bot-1")()
	if err != nil || !got.DayPnl.Equal(testkit.D("-12.5")) || got.ConsecutiveLosses != 2 {
		t.Fatalf("read = %+v, %v", got, err)
	}
	// The text is the stored one ("-12.5", the decimal's string), not a re-encoding.
	if texts["dayPnl"] != "-12.5" || texts["consecutiveErrors"] != "0" || len(texts) != len(risk.CounterFields) {
		t.Fatalf("texts = %v", texts)
	}
	rdb.Del(ctx, key)
	if _, texts, _ := risk.ReadCountersTextLater(ctx, rdb, "bot-1")(); len(texts) != 0 {
		t.Fatalf("texts of no counters = %v", texts)
	}
}
