package history_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/archive"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/history"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

const bot = "bot-history"

// seam writes n trades and n orders (every third one cancelled, the rest filled) and n
// results; the first cold of each are archived and then dropped from Redis (past the hot
// window), the next are archived and still in Redis, and the rest are not archived yet.
func seam(t *testing.T, n, cold, archived int) (redis.UniversalClient, *history.Reader) {
	t.Helper()
	ctx := context.Background()
	_, rdb := storetest.New(t)
	db := dbtest.New(t)
	write := func(from, to int) {
		for i := from; i < to; i++ {
			sig := queue.SignalIDFor(bot, fmt.Sprintf("s%02d", i))
			rec := position.OrderRecord{ClientOrderID: fmt.Sprintf("c%02d", i), SignalID: sig, BotID: bot, Leg: "entry",
				Symbol: "BTC/USDT", Kind: exchange.Spot, Side: exchange.SideBuy, Type: exchange.Limit, Status: exchange.StatusFilled,
				Amount: httpapi.Num(decimal.RequireFromString("0.001")), Price: httpapi.Num(decimal.RequireFromString("65000.5")),
				CreatedAt: 1_800_000_000_000 + int64(i)*1000, UpdatedAt: 1_800_000_000_000 + int64(i)*1000 + 5}
			if i%3 == 0 {
				rec.Status = exchange.StatusCancelled
			}
			// Two trades close in the same millisecond: the ID orders them.
			tr := position.Trade{ID: fmt.Sprintf("t%02d", i), BotID: bot, SignalID: sig, Symbol: "BTC/USDT", Kind: exchange.Spot,
				Side: position.Long, Size: httpapi.Num(decimal.RequireFromString("0.001")), NetPnl: httpapi.Num(decimal.New(int64(i), -2)), Closed: true,
				ClosedAt: 1_800_000_000_000 + int64(i/2)*1000}
			if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
				if err := position.StageOrder(ctx, p, rec, true); err != nil {
					return err
				}
				return position.StageTrade(ctx, p, tr)
			}); err != nil {
				t.Fatal(err)
			}
			env := queue.Envelope{SignalID: sig, BotID: bot, Source: queue.SourceWebhook, ReceivedAt: rec.CreatedAt}
			if err := queue.PublishResult(ctx, rdb, env, result.Result{Success: true, Message: fmt.Sprint(i), Timestamp: rec.UpdatedAt}); err != nil {
				t.Fatal(err)
			}
		}
	}
	a := archive.New(archive.Options{Redis: rdb, DB: db})
	write(0, archived)
	if _, _, err := a.Step(ctx); err != nil {
		t.Fatal(err)
	}
	// Past the hot window: the oldest leave Redis (as the compactor and the TTLs do).
	if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.LTrim(ctx, store.BookTrades(bot), int64(cold), -1)
		p.LTrim(ctx, store.BookOrders(bot), 0, int64(archived-cold-1))
		for i := range cold {
			p.Del(ctx, store.BookOrder(bot, fmt.Sprintf("c%02d", i)))
			p.Del(ctx, store.SignalResult(queue.SignalIDFor(bot, fmt.Sprintf("s%02d", i))))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	write(archived, n)
	return rdb, history.New(rdb, db, nil)
}

// Paged in either direction at every page size, the trades are the whole history in close
// order, each once, across the three parts.
func TestTradesAcrossTheSeam(t *testing.T) {
	const n = 20
	_, h := seam(t, n, 6, 13)
	var want []string
	for i := range n {
		want = append(want, fmt.Sprintf("t%02d", i))
	}
	for _, newest := range []bool{false, true} {
		exp := slices.Clone(want)
		if newest {
			slices.Reverse(exp)
		}
		for limit := 1; limit <= n+1; limit++ {
			var got []string
			var after *history.TradeCursor
			for pages := 0; ; pages++ {
				if pages > n+1 {
					t.Fatalf("newest=%v limit=%d: paging does not end", newest, limit)
				}
				p, err := h.Trades(context.Background(), bot, history.TradeQuery{Newest: newest, After: after, Limit: limit})
				if err != nil {
					t.Fatal(err)
				}
				if p.Partial {
					t.Fatal("partial page with the archive up")
				}
				for _, tr := range p.Trades {
					got = append(got, tr.ID)
				}
				if p.Next == nil {
					break
				}
				c, err := history.ParseTradeCursor(p.Next.String())
				if err != nil || c != *p.Next {
					t.Fatalf("cursor %v does not read back (%v)", p.Next, err)
				}
				after = &c
			}
			if !slices.Equal(got, exp) {
				t.Fatalf("newest=%v limit=%d: %v\nwant %v", newest, limit, got, exp)
			}
		}
	}
}

// Orders page newest first across the seam, with and without a status filter, and an order
// or a result that left Redis is still found by its ID.
func TestOrdersAndResultsAcrossTheSeam(t *testing.T) {
	const n = 20
	ctx := context.Background()
	_, h := seam(t, n, 6, 13)
	for _, statuses := range [][]exchange.OrderStatus{nil, {exchange.StatusCancelled}, {exchange.StatusFilled}} {
		var want []string
		for i := n - 1; i >= 0; i-- {
			cancelled := i%3 == 0
			if statuses == nil || cancelled == (statuses[0] == exchange.StatusCancelled) {
				want = append(want, fmt.Sprintf("c%02d", i))
			}
		}
		for limit := 1; limit <= n+1; limit++ {
			var got []string
			after := ""
			for pages := 0; pages <= n+1; pages++ {
				p, err := h.OrderPage(ctx, bot, position.OrderQuery{After: after, Limit: limit, Statuses: statuses})
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range p.Orders {
					got = append(got, o.ClientOrderID)
				}
				if after = p.Next; after == "" {
					break
				}
			}
			if !slices.Equal(got, want) {
				t.Fatalf("statuses %v limit %d: %v\nwant %v", statuses, limit, got, want)
			}
		}
	}
	rec, err := h.Order(ctx, bot, "c02")
	if err != nil || rec == nil || !rec.Price.Equal(decimal.RequireFromString("65000.5")) || rec.CreatedAt != 1_800_000_002_000 {
		t.Fatalf("archived order c02: %+v, %v", rec, err)
	}
	if _, err := h.OrderPage(ctx, bot, position.OrderQuery{After: "nope", Limit: 5}); err != position.ErrCursorGone {
		t.Fatalf("unknown cursor: %v", err)
	}
	st, err := h.Result(ctx, queue.SignalIDFor(bot, "s01"))
	if err != nil || !st.Found || st.Result.Message != "1" {
		t.Fatalf("archived result of s01: %+v, %v", st, err)
	}
}

// The trades an equity curve draws come from both sides of the seam, each once, oldest
// first, the newest limit of those closed in the range; without the archive only Redis's.
func TestTradeResultsAcrossTheSeam(t *testing.T) {
	const n = 20
	ctx := context.Background()
	rdb, h := seam(t, n, 6, 13)
	ms := func(i int) int64 { return 1_800_000_000_000 + int64(i/2)*1000 } // trade i's close
	ids := func(rs []position.TradeResult) []string {
		var out []string
		for _, r := range rs {
			if !r.NetPnl.Equal(decimal.RequireFromString(fmt.Sprintf("0.%02d", atoi(r.ID[1:])))) || r.ClosedAt != ms(atoi(r.ID[1:])) {
				t.Fatalf("trade %+v", r)
			}
			out = append(out, r.ID)
		}
		return out
	}
	span := func(from, to int) []string {
		var out []string
		for i := from; i < to; i++ {
			out = append(out, fmt.Sprintf("t%02d", i))
		}
		return out
	}
	for _, c := range []struct {
		from, to, limit int // trades from..to-1 by their close times
		want            []string
	}{
		{0, 20, 100, span(0, 20)},
		{2, 16, 100, span(2, 16)},
		{0, 20, 7, span(13, 20)},
		{0, 6, 100, span(0, 6)}, // the archive alone
	} {
		got, err := h.TradeResultsIn(ctx, bot, ms(c.from), ms(c.to), c.limit)
		if err != nil || !slices.Equal(ids(got), c.want) {
			t.Errorf("[%d, %d) limit %d: %v %v, want %v", c.from, c.to, c.limit, ids(got), err, c.want)
		}
	}
	// Redis alone: the trades the list still holds.
	got, err := history.New(rdb, nil, nil).TradeResultsIn(ctx, bot, ms(0), ms(20), 100)
	if err != nil || !slices.Equal(ids(got), span(6, 20)) {
		t.Fatalf("without the archive: %v %v", ids(got), err)
	}
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}
