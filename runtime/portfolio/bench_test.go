package portfolio_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/portfolio"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store/storetest"
)

type flat struct{}

func (flat) Price(context.Context, exchange.Kind, string) (decimal.Decimal, error) {
	return decimal.NewFromInt(65000), nil
}

// BenchmarkOf: one owner with 2 paper accounts of 10 bots each, every bot with an open
// position and 20 realised trades.
func BenchmarkOf(b *testing.B) {
	ctx := context.Background()
	_, rdb := storetest.New(b)
	reg := registry.New(rdb)
	for a := range 2 {
		acct := fmt.Sprintf("pa-%d", a)
		if _, err := paper.NewAccounts(rdb).Ensure(ctx, paper.Config{ID: acct, Namespace: "ns", Name: acct, Owner: "a@x.io",
			Currency: "USDT", InitialBalance: decimal.NewFromInt(100000), FeeRate: decimal.Zero}); err != nil {
			b.Fatal(err)
		}
		for i := range 10 {
			bot := fmt.Sprintf("bot-%d-%d", a, i)
			if err := reg.Project(ctx, registry.Bot{ID: bot, Owner: "a@x.io",
				Account: registry.Account{Kind: registry.AccountPaper, ID: acct}}, "h-"+bot); err != nil {
				b.Fatal(err)
			}
			p := position.Open("p-"+bot, bot, "BTC/USDT", exchange.Spot, position.Long, 1,
				position.Fill{Amount: decimal.RequireFromString("0.01"), Price: decimal.NewFromInt(60000)}, "s")
			if _, err := rdb.TxPipelined(ctx, func(tx redis.Pipeliner) error {
				for j := range 20 {
					if err := position.StageTrade(ctx, tx, position.Trade{ID: fmt.Sprint(j), BotID: bot, Symbol: "BTC/USDT",
						NetPnl: httpapi.Num(decimal.RequireFromString("1.25"))}); err != nil {
						return err
					}
				}
				return position.StagePosition(ctx, tx, bot, p.Symbol, &p)
			}); err != nil {
				b.Fatal(err)
			}
		}
	}
	s := portfolio.New(portfolio.Options{Redis: rdb, Prices: flat{}})
	b.ResetTimer()
	for b.Loop() {
		p, err := s.Of(ctx, "a@x.io")
		if err != nil || len(p.Accounts) != 2 || len(p.Accounts[0].Positions) != 10 {
			b.Fatalf("%+v, %v", p, err)
		}
	}
}
