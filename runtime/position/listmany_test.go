package position_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// ListMany answers what List answers for each bot, in the order asked, in two round trips
// whatever the number of bots.
func TestListMany(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	open := func(bot, symbol string) {
		p := position.Open("p-"+bot+symbol, bot, symbol, exchange.Spot, position.Long, 1,
			position.Fill{Amount: testkit.D("1"), Price: testkit.D("10")}, "s")
		if _, err := rdb.TxPipelined(ctx, func(tx redis.Pipeliner) error {
			return position.StagePosition(ctx, tx, bot, symbol, &p)
		}); err != nil {
			t.Fatal(err)
		}
	}
	open("bot-1", "SOL/USDT")
	open("bot-1", "BTC/USDT")
	open("bot-3", "ETH/USDT")
	trips := &storetest.Trips{}
	rdb.AddHook(trips)
	got, err := position.ListMany(ctx, rdb, []string{"bot-1", "bot-2", "bot-3"})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(trips.Take()); n != 2 {
		t.Fatalf("%d round trips, want 2", n)
	}
	if len(got) != 3 || len(got[0]) != 2 || got[0][0].Symbol != "BTC/USDT" || got[0][1].Symbol != "SOL/USDT" ||
		len(got[1]) != 0 || len(got[2]) != 1 || got[2][0].Symbol != "ETH/USDT" || got[2][0].BotID != "bot-3" {
		t.Fatalf("%+v", got)
	}
	one, err := position.NewBook(rdb).List(ctx, "bot-1")
	if err != nil || len(one) != 2 || one[0].ID != got[0][0].ID || !one[1].Size.Equal((got[0][1].Size).Decimal) {
		t.Fatalf("List %+v, %v", one, err)
	}
}
