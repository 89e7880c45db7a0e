package executor_test

import (
	"context"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/queue"
)

// An executor dies after its order filled and before it booked it; the queue hands the
// signal to another executor, which finishes it: one order, one booking, one result.
func TestKilledExecutorSignalFinishedByAnotherWithOneOrder(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	env := h.envelope(`{"action":"buy","symbol":"BTCUSDT","size":"10%"}`)

	// Executor A: its queue client dies right after the exchange fill.
	h.runUntilKilled(env, "the exchange fill", executor.SetAfterPlace)
	h.px.set(exchange.Spot, "BTC/USDT", "70000") // an order placed again would fill here

	// Executor B takes the partition once A's lease expires and reclaims the signal.
	clientB := queueClient(t, h.srv)
	ctxB, stopB := context.WithCancel(h.ctx)
	defer stopB()
	consumerB := queue.NewConsumer(clientB, queue.Options{Name: "executor-b", LeaseTTL: time.Second, Logger: h.quiet})
	go func() { _ = consumerB.Run(ctxB, h.ex.Handle) }()

	testkit.EventuallyTrue(t, 15*time.Second, "executor B finishes the signal", func() bool {
		st, err := queue.GetResult(h.ctx, h.rdb, env.SignalID)
		res, ok := st.Result, st.Found
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			h.ok(res)
			testkit.EqualD(t, "fill price", res.Order.AvgPrice.Decimal, "65000")
		}
		return ok
	})
	if n := h.exchangeOrders(); n != 1 {
		t.Fatalf("%d exchange orders, want 1", n)
	}
	testkit.EqualD(t, "balance", h.balance(), "8999.3003")
	testkit.EqualD(t, "position size", (h.position("BTC/USDT").Size).Decimal, "0.01538")
}
