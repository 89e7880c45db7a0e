package load_test

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/test/stack"
)

// persistCase is one A/B case of BenchmarkRedisPersistence.
type persistCase struct {
	name string
	// persist gives Redis a data directory and the shipped flags; flags replace some.
	persist bool
	flags   []string
	// event is what the server is told to do one second into the load: "" nothing,
	// "bgsave" the RDB snapshot a save rule starts, "bgrewriteaof" an append-only rewrite.
	event string
	// dataMB is the data set loaded before the load starts; signalBytes what one signal
	// writes.
	dataMB, signalBytes int
}

// BenchmarkRedisPersistence isolates what Redis's persistence costs the signal path's
// latency, without the daemons: redis-server as the stack starts it, a data set loaded
// first (DEBUG POPULATE), then a steady open-loop load of 1,000 signals/s for 5 s over 32
// connections, each signal one MULTI/EXEC that writes what a paper fill writes (a stream
// entry, a progress hash later deleted, an order hash, a trade list entry, a result with a
// TTL, a counter, a publish; signalBytes in total). Latency is from each signal's intended
// start (no coordinated omission). One second into the load the case may start an RDB
// snapshot (what the default save rules do every minute under load) or an append-only
// rewrite (what auto-aof-rewrite does). persist=off/event=none is the bare reference.
// Run: go test ./test/load -run '^$' -bench RedisPersistence -benchtime 1x.
func BenchmarkRedisPersistence(b *testing.B) {
	nofsync := []string{"--no-appendfsync-on-rewrite", "yes"}
	cases := []persistCase{
		{name: "persist=off/event=none", dataMB: 200, signalBytes: 6000},
		{name: "persist=shipped/event=none", persist: true, dataMB: 200, signalBytes: 6000},
		{name: "persist=shipped/event=none/signal=1500B", persist: true, dataMB: 200, signalBytes: 1500},
		{name: "persist=shipped/event=bgsave", persist: true, event: "bgsave", dataMB: 200, signalBytes: 6000},
		{name: "persist=shipped/event=bgrewriteaof", persist: true, event: "bgrewriteaof", dataMB: 200, signalBytes: 6000},
		{name: "persist=shipped/event=bgrewriteaof/no-appendfsync-on-rewrite", persist: true, flags: nofsync, event: "bgrewriteaof", dataMB: 200, signalBytes: 6000},
		{name: "persist=shipped/event=bgrewriteaof/data=600MB", persist: true, event: "bgrewriteaof", dataMB: 600, signalBytes: 6000},
	}
	for _, pc := range cases {
		b.Run(pc.name, func(b *testing.B) {
			for range b.N {
				runPersistCase(b, pc)
			}
		})
	}
}

func runPersistCase(b *testing.B, pc persistCase) {
	ctx := b.Context()
	b.StopTimer()
	o := stack.RedisOptions{MaxMemory: "1gb", Flags: append([]string{"--enable-debug-command", "local"}, pc.flags...)}
	if pc.persist {
		o.DataDir = b.TempDir()
	}
	r, err := stack.StartRedis(ctx, o)
	if err != nil {
		b.Fatal(err)
	}
	defer r.Stop(10 * time.Second)
	rdb := redis.NewClient(&redis.Options{Addr: r.Addr, PoolSize: 40})
	defer rdb.Close()
	// 1 KB values: the count that makes dataMB of values (Redis adds its overhead).
	if err := rdb.Do(ctx, "DEBUG", "POPULATE", pc.dataMB*1000, "data", 1000).Err(); err != nil {
		b.Fatal(err)
	}
	if pc.persist { // start from a compact file, as a server that has run a while does
		if err := rdb.BgRewriteAOF(ctx).Err(); err != nil {
			b.Fatal(err)
		}
		waitIdle(b, rdb)
	}
	var before, after snapshot
	before.redis, after.redis = redisCounters(ctx, rdb), nil
	resetLatency(ctx, rdb)
	b.StartTimer()
	lat := paceSignals(ctx, rdb, 1000, 5*time.Second, 32, pc)
	b.StopTimer()
	waitIdle(b, rdb) // a child still running has not yet reported what it copied on write
	after.redis = redisCounters(ctx, rdb)
	w := persistence(before, after, latencyLatest(ctx, rdb), len(lat))
	pct := func(p float64) float64 { return msOf(lat[min(len(lat)-1, int(p*float64(len(lat))))]) }
	b.ReportMetric(pct(0.50), "p50-ms")
	b.ReportMetric(pct(0.99), "p99-ms")
	b.ReportMetric(pct(0.999), "p999-ms")
	b.ReportMetric(msOf(lat[len(lat)-1]), "max-ms")
	w.report(b)
	fmt.Printf("%s: p50 %.2f ms, p99 %.2f ms, p99.9 %.2f ms, max %.2f ms\n  %s\n", pc.name, pct(0.5), pct(0.99), pct(0.999), msOf(lat[len(lat)-1]), w)
}

// redisCounters reads the INFO fields the persistence report uses.
func redisCounters(ctx context.Context, rdb *redis.Client) map[string]float64 {
	out := map[string]float64{}
	info := rdb.Info(ctx, "stats", "persistence", "memory").Val()
	for _, line := range strings.Split(info, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && slices.Contains(persistenceFields, k) {
			out[k], _ = strconv.ParseFloat(v, 64)
		}
	}
	return out
}

// waitIdle waits (at most 60 s) until no snapshot or rewrite runs.
func waitIdle(b *testing.B, rdb *redis.Client) {
	for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		info := rdb.Info(context.Background(), "persistence").Val()
		if strings.Contains(info, "aof_rewrite_in_progress:0") && strings.Contains(info, "rdb_bgsave_in_progress:0") &&
			strings.Contains(info, "aof_rewrite_scheduled:0") {
			return
		}
	}
	b.Fatal("a snapshot or rewrite still runs after 60 s")
}

// paceSignals sends rate signals a second for d over conns connections, open loop, and
// returns their latencies from their intended start, sorted.
func paceSignals(ctx context.Context, rdb *redis.Client, rate int, d time.Duration, conns int, pc persistCase) []time.Duration {
	total := int(float64(rate) * d.Seconds())
	lat := make([]time.Duration, total)
	var next atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	if pc.event != "" {
		time.AfterFunc(time.Second, func() { _ = rdb.Do(ctx, pc.event).Err() })
	}
	value := strings.Repeat("x", max(pc.signalBytes/6-60, 1))
	for range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1)) - 1
				if i >= total {
					return
				}
				due := start.Add(time.Duration(i) * time.Second / time.Duration(rate))
				time.Sleep(time.Until(due))
				writeSignal(ctx, rdb, i, value)
				lat[i] = time.Since(due)
			}
		}()
	}
	wg.Wait()
	slices.Sort(lat)
	return lat
}

// writeSignal writes one signal's records in one MULTI/EXEC on one bot's hash tag, as the
// executor's booking does: six writes of value plus their keys and fields.
func writeSignal(ctx context.Context, rdb *redis.Client, i int, value string) {
	tag := fmt.Sprintf("{%d}", i%32)
	bot, sig := fmt.Sprintf("bot-%d", i%100), fmt.Sprintf("sig-%d", i)
	_, _ = rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAdd(ctx, &redis.XAddArgs{Stream: "q:" + tag, MaxLen: 1000, Approx: true, Values: []string{"signal", value}})
		p.HSet(ctx, "sig:"+tag+":"+sig, "plan", value, "state", "sent")
		p.HSet(ctx, "book:"+tag+":"+bot+":order:"+sig, "order", value)
		p.LPush(ctx, "book:"+tag+":"+bot+":trades", value)
		p.LTrim(ctx, "book:"+tag+":"+bot+":trades", 0, 999)
		p.HIncrBy(ctx, "risk:"+tag+":"+bot, "fills", 1)
		p.Set(ctx, "result:"+sig, value, time.Hour)
		p.Set(ctx, "idem:"+tag+":"+sig, value, time.Hour)
		p.Del(ctx, "sig:"+tag+":"+sig)
		p.Publish(ctx, "results", sig)
		return nil
	})
}
