package position_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// orderBook lists position.MaxOrders orders of one bot, the oldest of them open.
func orderBook(b *testing.B) *position.Book {
	b.Helper()
	_, rdb := storetest.New(b)
	ctx := context.Background()
	for i := range position.MaxOrders {
		rec := pendingRecord("bot-b", fmt.Sprintf("c%05d", i))
		rec.Status = exchange.StatusFilled
		if i == 0 {
			rec.Status = exchange.StatusOpen
		}
		if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { return position.StageOrder(ctx, p, rec, true) }); err != nil {
			b.Fatal(err)
		}
	}
	return position.NewBook(rdb)
}

// BenchmarkOrderPage is list_orders' first page of 20.
func BenchmarkOrderPage(b *testing.B) {
	book := orderBook(b)
	for b.Loop() {
		if p, err := book.OrderPage(context.Background(), "bot-b", position.OrderQuery{Limit: 20}); err != nil || len(p.Orders) != 20 {
			b.Fatal(len(p.Orders), err)
		}
	}
}

// BenchmarkOpenOrdersFullScan is list_open_orders on a bot whose one open order is the
// oldest of a full list: every record is read.
func BenchmarkOpenOrdersFullScan(b *testing.B) {
	book := orderBook(b)
	q := position.OrderQuery{Limit: 20, Statuses: []exchange.OrderStatus{exchange.StatusOpen, exchange.StatusPartiallyFilled}}
	for b.Loop() {
		if p, err := book.OrderPage(context.Background(), "bot-b", q); err != nil || len(p.Orders) != 1 {
			b.Fatal(len(p.Orders), err)
		}
	}
}
