package queue

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// Enqueue-to-handled throughput of one executor instance (all 32 partitions) with a no-op
// handler, signals spread over 256 bots and enqueued by 16 concurrent producers. Each signal
// costs an XADD, a share of an XREADGROUP, a read of the higher-priority streams and an
// XACK+XDEL round trip.
func BenchmarkEnqueueConsumeRoundTrip(b *testing.B) {
	_, rdb := storetest.New(b)
	var handled atomic.Int64
	done := make(chan struct{})
	n := int64(b.N)
	r := startConsumer(b, dedicated(b, rdb), Options{}, func(context.Context, Envelope) error {
		if handled.Add(1) == n {
			close(done)
		}
		return nil
	})
	testkit.EventuallyTrue(b, 10*time.Second, "consumer owns all partitions", func() bool { return len(r.c.Owned()) == Partitions })
	bots := make([]string, 256)
	for i := range bots {
		bots[i] = "bench-bot-" + strconv.Itoa(i)
	}
	producer := dedicated(b, rdb)
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	const producers = 16
	for g := 0; g < producers; g++ {
		wg.Go(func() {
			for i := g; i < b.N; i += producers {
				if _, err := Enqueue(context.Background(), producer, testEnv(bots[i%len(bots)], i, PriorityWebhook)); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case <-done:
	case <-time.After(2 * time.Minute):
		b.Fatalf("handled %d of %d", handled.Load(), b.N)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "signals/s")
}

// Latency from PublishResult (executor) to the Waiter's channel (webhookd), one at a time.
func BenchmarkPublishResultToWaiter(b *testing.B) {
	_, rdb := storetest.New(b)
	ctx := context.Background()
	w := newTestWaiter(b, rdb, "bench")
	res := result.Result{Success: true, Message: "Order placed", Timestamp: time.Now().UnixMilli()}
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		id := fmt.Sprintf("sig-%d", i)
		ch, cancel := w.Register(id)
		t0 := time.Now()
		if err := PublishResult(ctx, rdb, Envelope{SignalID: id, BotID: "b", ReplyTo: w.Channel()}, res); err != nil {
			b.Fatal(err)
		}
		<-ch
		lat = append(lat, time.Since(t0))
		cancel()
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}
