package position_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// PositionLua and TradeLua make the writes StagePosition and StageTrade make: the same keys
// hold the same values after either, for a position with exits (watched), one without, and
// a closed one.
func TestPositionAndTradeLuaMatchStage(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	script := redis.NewScript(position.PositionLua(1, 1) + position.TradeLua(4, 5) + "return 1\n")
	const bot, sym = "bot-1", "BTC/USDT"
	keys := []string{store.BookPosition(bot, sym), store.BookPositions(bot), store.Watch(store.PartitionOf(bot)), store.BookTrades(bot)}
	open := position.Open("pos-1", bot, sym, exchange.Futures, position.Long, 5,
		position.Fill{Amount: testkit.D("0.01"), Price: testkit.D("65000"), Fee: testkit.D("0.65"), At: 1}, "sig-1")
	watched := open.Clone()
	watched.SetExit(true, testkit.D("2"), true, testkit.D("100"), exchange.MarketInfo{Symbol: sym, TickSize: testkit.D("0.1")})
	trade := position.Trade{BotID: bot, Symbol: sym, Side: position.Long, Size: httpapi.Num(testkit.D("0.01")), NetPnl: httpapi.Num(testkit.D("-1.3"))}
	for _, tc := range []struct {
		name  string
		pos   *position.Position
		trade *position.Trade
	}{
		{"opened, no exits", &open, nil},
		{"opened, watched", &watched, nil},
		{"closed, with its trade", nil, &trade},
	} {
		// The state before: a watched position and an older trade.
		seed := func() {
			storetest.FlushAll(ctx, rdb)
			if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				_ = position.StageTrade(ctx, p, position.Trade{BotID: bot, Symbol: sym})
				return position.StagePosition(ctx, p, bot, sym, &watched)
			}); err != nil {
				t.Fatal(err)
			}
		}
		seed()
		if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			if tc.trade != nil {
				_ = position.StageTrade(ctx, p, *tc.trade)
			}
			return position.StagePosition(ctx, p, bot, sym, tc.pos)
		}); err != nil {
			t.Fatal(err)
		}
		staged, err := storetest.Dump(ctx, rdb, keys...)
		if err != nil {
			t.Fatal(err)
		}
		seed()
		pw, err := position.NewPositionWrite(bot, sym, tc.pos)
		if err != nil {
			t.Fatal(err)
		}
		tw, err := position.NewTradeWrite(bot, tc.trade)
		if err != nil {
			t.Fatal(err)
		}
		if err := script.Run(ctx, rdb, append(pw.Keys, tw.Keys...), append(pw.Args, tw.Args...)...).Err(); err != nil {
			t.Fatal(err)
		}
		scripted, err := storetest.Dump(ctx, rdb, keys...)
		if err != nil {
			t.Fatal(err)
		}
		if staged != scripted {
			t.Errorf("%s: the script left\n%s\nthe transaction\n%s", tc.name, scripted, staged)
		}
	}
}
