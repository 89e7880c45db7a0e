// Package analytics computes a bot's trading analytics (the read API's GET
// /api/botsvc/bots/{botId}/analytics; mcpd and the dashboard call the same API): trade
// counts, win rate, PnL, profit factor, drawdown, Sharpe ratio and the equity curve over a
// period of UTC days. The curve has a point per trade on the days whose trades are kept
// (curve.go), a point per day on the others.
//
// It owns the bot's per-day aggregates (store.BookDays): the executor's booking reads the
// day of the trade it books and writes it back with the trade in one transaction
// (ReadDayLater, StageDay, StageStart), so a report reads one hash whatever the number of
// trades. Definitions and degenerate cases: docs/decisions.md, "Bot analytics".
package analytics

import (
	"context"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/registry"
)

// Analytics computes reports from Redis, and draws their equity curves through the trades
// a TradeReader reads.
type Analytics struct {
	rdb    redis.UniversalClient
	trades TradeReader
}

// New returns Analytics on rdb, whose curves read the bots' trade lists in rdb (WithTrades
// adds PostgreSQL's archive).
func New(rdb redis.UniversalClient) *Analytics {
	return &Analytics{rdb: rdb, trades: listTrades{rdb}}
}

// Bot is bot's report for q (ParseQuery). With the equity curve it also reads the
// period's trades (at most MaxCurveTrades).
func (a *Analytics) Bot(ctx context.Context, bot registry.Bot, q Query) (Report, error) {
	h, err := load(ctx, a.rdb, bot.ID)
	if err != nil {
		return Report{}, err
	}
	if q.Equity {
		if err := readCurveTrades(ctx, a.trades, bot.ID, &h, q); err != nil {
			return Report{}, err
		}
	}
	return compute(bot, h, q), nil
}

// Realised is the sum of the NetPnl of every trade of the bot.
func (a *Analytics) Realised(ctx context.Context, botID string) (decimal.Decimal, error) {
	h, err := load(ctx, a.rdb, botID)
	if err != nil {
		return decimal.Zero, err
	}
	return historyOf(h.days).Realised(), nil
}
