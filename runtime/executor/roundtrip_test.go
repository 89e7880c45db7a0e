package executor_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// paperTrips are the round trips of the paper exchange's fill (runtime/exchange/paper): its
// compare-and-set script, its inputs read ahead in the first pipeline.
const paperTrips = 1

// Redis round trips of one paper signal through Handle, from the result check to the
// published result. They are most of a fill's latency (docs/benchmarks.md, "Signal path at
// the limit: booking"): these ceilings keep the count from creeping back up unnoticed. A
// steady-state fill is the first pipeline, the paper fill and one commit script that books
// it and stores the result; a signal whose ID is not in its bot's partition publishes its
// result as a step of its own.
func TestPaperRoundTrips(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	c := &storetest.Trips{}
	h.rdb.AddHook(c)
	for _, tc := range []struct {
		name, body string
		outside    bool
		max        int
	}{
		// The bot's first signal: nothing to read ahead yet (its paper account, its symbol),
		// its first entry is staged (its starting equity), the scripts are not loaded in
		// this Redis yet (EVALSHA, then EVAL), and its partition's book marker is not there
		// (a new Redis): the restore checks it, takes its token, marks the partition and the
		// first pipeline is read again (5 more, once per partition and Redis).
		{"market buy", `{"action":"buy","symbol":"BTCUSDT"}`, false, 16},
		{"market sell", `{"action":"sell","symbol":"BTCUSDT"}`, false, 2 + paperTrips},
		{"buy again", `{"action":"buy","symbol":"BTCUSDT"}`, false, 2 + paperTrips},
		{"close", `{"action":"close"}`, false, 2 + paperTrips},
		{"buy, an ID outside the partition", `{"action":"buy","symbol":"BTCUSDT"}`, true, 3 + paperTrips},
		{"sell, an ID outside the partition", `{"action":"sell","symbol":"BTCUSDT"}`, true, 3 + paperTrips},
	} {
		env := h.envelope(tc.body)
		if tc.outside {
			env.SignalID = outsidePartition(h.bot.ID) + "-" + tc.name[:3]
		}
		c.Take()
		res := h.ok(h.run(env))
		trips := c.Take()
		trips = trips[:len(trips)-1] // the test's own read of the result
		t.Logf("%s: %d round trips", tc.name, len(trips))
		for i, tr := range trips {
			t.Logf("  %2d  %s", i+1, tr)
		}
		if len(trips) > tc.max {
			t.Errorf("%s: %d Redis round trips, want at most %d", tc.name, len(trips), tc.max)
		}
		last := trips[len(trips)-1]
		// The result's own step (outside the partition) is its store-and-archive script with
		// the index and announcements; the commit script is a round trip of its own.
		// The result's store is two scripts (the result, then the bot's index in its slot).
		fields := strings.Fields(last)
		if publish := len(fields) > 1 && strings.HasPrefix(fields[1], "eval"); tc.outside != publish || !strings.HasPrefix(last, "eval") {
			t.Errorf("%s: the last round trip is %q, want the commit script, or the result's store for an ID outside the partition", tc.name, last)
		}
		if res.Order == nil {
			t.Fatalf("%s: result without its order: %+v", tc.name, res)
		}
		// A redelivery of the executed signal only re-publishes its result.
		if err := h.ex.Handle(h.ctx, env); err != nil {
			t.Fatalf("%s again: %v", tc.name, err)
		}
		trips = c.Take()
		t.Logf("%s, redelivered: %d round trips: %v", tc.name, len(trips), trips)
		if len(trips) > 2 {
			t.Errorf("%s redelivered: %d Redis round trips, want at most 2", tc.name, len(trips))
		}
	}
}

// A successful paper fill's queue entry is acknowledged by the commit script that stores its
// result, so the worker sends no acknowledgement of its own; a failure is acknowledged by the
// worker after Handle (which may still count an execution error). Either way the entry
// leaves the stream and its pending list.
func TestQueueEntryAcknowledgedWithResult(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT"}`)) // loads the scripts, learns the hints
	qTrips := &storetest.Trips{}
	qc := queueClient(t, h.srv)
	qc.AddHook(qTrips)
	handled := make(chan queue.Envelope, 1)
	consumer := queue.NewConsumer(qc, queue.Options{Name: "ack", LeaseTTL: 5 * time.Second, Logger: h.quiet})
	ctx, stop := context.WithCancel(h.ctx)
	defer stop()
	go func() {
		_ = consumer.Run(ctx, func(ctx context.Context, env queue.Envelope) error {
			err := h.ex.Handle(ctx, env)
			if err == nil {
				handled <- env
			}
			return err
		})
	}()
	enq := h.srv.Client()
	defer enq.Close()
	for _, tc := range []struct {
		name, body string
		success    bool
	}{
		{"a fill", `{"action":"sell","symbol":"BTCUSDT"}`, true},
		{"a failure", `{"action":"close"}`, false}, // no position left to close
	} {
		env := h.envelope(tc.body)
		if _, err := queue.Enqueue(h.ctx, enq, env); err != nil {
			t.Fatal(err)
		}
		<-handled
		stream := queue.StreamOf(env.BotID, env.Priority)
		deadline := time.Now().Add(5 * time.Second)
		for {
			n, err := enq.XLen(h.ctx, stream).Result()
			if err != nil {
				t.Fatal(err)
			}
			p, err := enq.XPending(h.ctx, stream, queue.Group).Result()
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 && p.Count == 0 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: the entry is still queued (%d in the stream, %d pending)", tc.name, n, p.Count)
			}
			time.Sleep(5 * time.Millisecond)
		}
		st, err := queue.GetResult(h.ctx, h.rdb, env.SignalID)
		if err != nil || !st.Found {
			t.Fatalf("%s: no result: %v", tc.name, err)
		}
		if res := st.Result; res.Success != tc.success {
			t.Fatalf("%s: result %+v, want success %v", tc.name, res, tc.success)
		}
		workerAcked := slices.ContainsFunc(qTrips.Take(), func(trip string) bool { return strings.HasPrefix(trip, "xack") })
		if workerAcked == tc.success {
			t.Errorf("%s: the worker acknowledged the entry itself: %v, want %v", tc.name, workerAcked, !tc.success)
		}
	}
}
