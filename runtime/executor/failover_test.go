package executor_test

import (
	"context"
	"errors"
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
	clientA := queueClient(t, h.srv)
	ctxA, killA := context.WithCancel(h.ctx)
	defer killA()
	exA := executor.New(executor.Deps{Redis: h.rdb, Prices: h.px, Logger: h.quiet, Now: func() time.Time { return h.now }})
	filled := make(chan struct{})
	executor.SetAfterPlace(exA, func(string) error {
		close(filled)
		_ = clientA.Close() // no more acks or lease renewals: the process is gone
		killA()
		return errors.New("killed")
	})
	consumerA := queue.NewConsumer(clientA, queue.Options{Name: "executor-a", LeaseTTL: time.Second, Logger: h.quiet})
	doneA := make(chan struct{})
	go func() { defer close(doneA); _ = consumerA.Run(ctxA, exA.Handle) }()

	if _, err := queue.Enqueue(h.ctx, h.rdb, env); err != nil {
		t.Fatal(err)
	}
	select {
	case <-filled:
	case <-time.After(10 * time.Second):
		t.Fatal("executor A never placed the order")
	}
	<-doneA
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
			testkit.EqualD(t, "fill price", res.Order.AvgPrice, "65000")
		}
		return ok
	})
	if n := h.exchangeOrders(); n != 1 {
		t.Fatalf("%d exchange orders, want 1", n)
	}
	testkit.EqualD(t, "balance", h.balance(), "8999.3003")
	testkit.EqualD(t, "position size", h.position("BTC/USDT").Size, "0.01538")
}
