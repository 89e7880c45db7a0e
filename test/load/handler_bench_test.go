package load_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/intake"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/test/load"
	"github.com/sigops/sigops/test/stack"
	"github.com/sigops/sigops/webhookd"
)

// BenchmarkWebhookdIntake is the webhook handler alone, in this process, wired as
// cmd/webhookd wires it (store.Connect's client, intake, waiter, trusted proxy) on a real
// redis-server, with 100 bots projected straight into Redis and no executor, at full speed
// over 50 connections with ?wait=false: the intake's own ceiling, and the way to profile
// it (-o keeps the test binary for pprof):
//
//	go test -run '^$' -bench 'WebhookdIntake/as-deployed' -benchtime 1x -cpuprofile cpu.out -o load.test ./test/load/
//	go tool pprof -top -cum -focus handleWebhook load.test cpu.out
//
// The load generator runs in the same process, so the profile holds both; its frames are
// net/http's client side (persistConn) and test/load.
func BenchmarkWebhookdIntake(b *testing.B) {
	ctx := b.Context()
	rds, err := stack.StartRedis(ctx, stack.RedisOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rds.Stop(10 * time.Second) })
	rdb, err := store.Connect(ctx, store.Options{Addr: rds.Addr})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = rdb.Close() })

	reg := registry.New(rdb)
	paths := make([]string, load.DefaultBots)
	for i := range paths {
		id := uuid.NewString()
		bot := registry.Bot{
			ID: uuid.NewString(), Namespace: "load", Name: fmt.Sprintf("load-bot-%03d", i), Owner: load.DefaultOwner,
			Account: registry.Account{Kind: registry.AccountPaper, Name: "paper", ID: uuid.NewString()},
			Market:  "spot", Symbol: load.Symbol, PositionSize: load.PositionSize, Leverage: 1,
			RateLimit:    registry.Limit{PerMinute: 60000, Burst: 1000},
			Availability: "active", WebhookEnabled: true,
		}
		if err := reg.Project(ctx, bot, registry.HashWebhookID(id)); err != nil {
			b.Fatal(err)
		}
		paths[i] = load.WebhookPathPrefix + id
	}
	// The waiter stops before the client closes (cleanups run last first).
	wctx, stopWaiter := context.WithCancel(ctx)
	b.Cleanup(func() { stopWaiter(); time.Sleep(100 * time.Millisecond) })
	waiter, err := queue.NewWaiter(wctx, rdb, "bench")
	if err != nil {
		b.Fatal(err)
	}

	// as-deployed: the intake on store.Connect's client, as cmd/webhookd runs it.
	// autopipeline: the same, its script calls batched across concurrent requests by
	// go-redis's automatic pipelining (an experiment, not what webhookd does today).
	variants := []struct {
		name   string
		script func() (intake.Client, func())
	}{
		{"as-deployed", func() (intake.Client, func()) { return rdb, func() {} }},
		{"autopipeline", func() (intake.Client, func()) {
			ap, err := rdb.AutoPipeline()
			if err != nil {
				b.Fatal(err)
			}
			return ap, func() { _ = ap.Close() }
		}},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			script, done := v.script()
			defer done()
			benchHandler(b, rds, rdb, script, waiter, paths)
		})
	}
}

func benchHandler(b *testing.B, rds *stack.Redis, rdb redis.UniversalClient, script intake.Client, waiter *queue.Waiter, paths []string) {
	ctx := b.Context()
	srv, err := webhookd.New(webhookd.Options{
		Intake: intake.New(script), Waiter: waiter, Symbols: func() *signal.Symbols { return paperSymbols },
		TrustedProxies: []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")},
		Logger:         slog.New(slog.NewJSONHandler(io.Discard, &slog.HandlerOptions{Level: slog.LevelWarn})),
		Registerer:     prometheus.NewRegistry(),
		Ready:          func(ctx context.Context) error { return rdb.Ping(ctx).Err() },
	})
	if err != nil {
		b.Fatal(err)
	}
	hs := httptest.NewUnstartedServer(srv.Handler())
	hs.Config.ReadHeaderTimeout, hs.Config.IdleTimeout = 5*time.Second, 2*time.Minute
	hs.Start()
	defer hs.Close()

	r, err := load.NewRunner(load.Target{BaseURL: hs.URL, ForwardedProto: true}, paths)
	if err != nil {
		b.Fatal(err)
	}
	sc := load.Scenario{Name: "intake-inprocess", Duration: 5 * time.Second, Connections: 50}
	reads := func() float64 {
		info, _ := rdb.Info(ctx, "stats").Result()
		for _, line := range strings.Split(info, "\r\n") {
			if v, ok := strings.CutPrefix(line, "total_reads_processed:"); ok {
				n, _ := strconv.ParseFloat(v, 64)
				return n
			}
		}
		return 0
	}
	reads0, redisCPU0, selfCPU0 := reads(), cpuTime(rds.Pid()), cpuTime(os.Getpid())
	b.ResetTimer()
	var res *load.Result
	for range b.N {
		if res, err = r.Run(ctx, sc); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	if n := res.Outcomes["200 queued"]; n != res.Sent {
		b.Fatalf("not every signal queued: %v (%s)", res.Outcomes, res.FirstError)
	}
	b.ReportMetric(res.Throughput(), "signals/s")
	b.ReportMetric(msOf(res.Percentile(0.5)), "p50-ms")
	b.ReportMetric(msOf(res.Percentile(0.99)), "p99-ms")
	n := float64(len(res.Accepted))
	redisUS := float64(cpuTime(rds.Pid())-redisCPU0) / float64(time.Microsecond) / n
	selfUS := float64(cpuTime(os.Getpid())-selfCPU0) / float64(time.Microsecond) / n
	b.ReportMetric(redisUS, "redis-µs/signal")
	b.Logf("%.0f signals/s queued, p50 %s, p99 %s, max %s; per signal: redis-server %.1f µs CPU and %.2f read events, this process (handler and load generator) %.1f µs CPU",
		res.Throughput(), fmtMs(res.Percentile(0.5)), fmtMs(res.Percentile(0.99)), fmtMs(res.Max()),
		redisUS, (reads()-reads0)/n, selfUS)
}

var paperSymbols = signal.NewSymbols(paper.Symbols())
