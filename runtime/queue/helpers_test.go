package queue

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
)

// testLogger shows warnings with -v and stays quiet otherwise.
func testLogger(t testing.TB) *slog.Logger {
	var w io.Writer = io.Discard
	if testing.Verbose() {
		w = t.Output()
	}
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// dedicated returns a client of rdb's Redis sized for a Consumer (as the daemon does).
func dedicated(t testing.TB, rdb redis.UniversalClient) redis.UniversalClient {
	t.Helper()
	var o store.Options
	switch rdb := rdb.(type) {
	case *redis.Client:
		o.Addr = rdb.Options().Addr
	case *redis.ClusterClient:
		o.ClusterAddrs = rdb.Options().Addrs
	}
	c, err := DedicatedClient(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// running is a Consumer whose Run goroutine the test controls.
type running struct {
	c      *Consumer
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// startConsumer runs a Consumer until the test stops it (or ends).
func startConsumer(t testing.TB, rdb redis.UniversalClient, opts Options, h Handler) *running {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{c: NewConsumer(rdb, opts), cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- r.c.Run(ctx, h) }()
	t.Cleanup(func() { r.stop(t) })
	return r
}

// stop cancels Run and waits for it to return.
func (r *running) stop(t testing.TB) {
	t.Helper()
	r.once.Do(func() {
		r.cancel()
		select {
		case err := <-r.done:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("consumer %s did not stop", r.c.Name())
		}
	})
}

// botsIn returns n bot IDs that map to partition p.
func botsIn(p, n int) []string {
	var out []string
	for i := 0; len(out) < n; i++ {
		if id := fmt.Sprintf("bot-%d", i); PartitionOf(id) == p {
			out = append(out, id)
		}
	}
	return out
}

// testEnv is signal seq of bot at priority prio; its signal ID is "bot/seq".
func testEnv(bot string, seq int, prio Priority) Envelope {
	return Envelope{
		SignalID: fmt.Sprintf("%s/%d", bot, seq),
		BotID:    bot,
		Priority: prio,
		Source:   SourceWebhook,
		Signal:   json.RawMessage(fmt.Sprintf(`{"seq":%d}`, seq)),
	}
}

func seqOf(t testing.TB, env Envelope) int {
	var s struct{ Seq int }
	if err := json.Unmarshal(env.Signal, &s); err != nil {
		t.Errorf("signal %s: %v", env.SignalID, err)
	}
	return s.Seq
}

func mustEnqueue(t testing.TB, rdb redis.UniversalClient, env Envelope) {
	t.Helper()
	if _, err := Enqueue(context.Background(), rdb, env); err != nil {
		t.Fatal(err)
	}
}

// recorder keeps the signal IDs a handler saw, in order.
type recorder struct {
	mu  sync.Mutex
	ids []string
}

func (r *recorder) add(id string) {
	r.mu.Lock()
	r.ids = append(r.ids, id)
	r.mu.Unlock()
}

func (r *recorder) snapshot() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.ids...)
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ids)
}

// metricValue sums the counter and gauge values a collector reports (testutil would need a
// module go.mod lacks).
func metricValue(t testing.TB, c prometheus.Collector) float64 {
	t.Helper()
	ch := make(chan prometheus.Metric, 64)
	c.Collect(ch)
	close(ch)
	var sum float64
	for m := range ch {
		var d dto.Metric
		if err := m.Write(&d); err != nil {
			t.Fatal(err)
		}
		sum += d.GetCounter().GetValue() + d.GetGauge().GetValue()
	}
	return sum
}

func jsonOf(v any) (string, error) {
	b, err := json.Marshal(v)
	return string(b), err
}
