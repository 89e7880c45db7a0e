package load_test

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/test/load"
)

// redisConfig is one Redis configuration BenchmarkSignalPipeline runs under.
type redisConfig struct {
	name string
	// persist gives Redis a data directory: the append-only file is written to disk.
	persist bool
	// flags replace stack.ShippedRedisFlags' values ("--name", "value" pairs).
	flags []string
}

// redisConfigs are persist=off and persist=shipped, and persist=custom when custom
// ("name=value;name=value") is not empty.
func redisConfigs(custom string) ([]redisConfig, error) {
	configs := []redisConfig{{name: "off"}, {name: "shipped", persist: true}}
	if strings.TrimSpace(custom) == "" {
		return configs, nil
	}
	var flags []string
	for _, part := range strings.Split(custom, ";") {
		name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || name == "" {
			return nil, fmt.Errorf("SIGOPS_LOAD_REDIS_FLAGS %q: %q is not name=value", custom, part)
		}
		flags = append(flags, "--"+strings.TrimPrefix(name, "--"), value)
	}
	return append(configs, redisConfig{name: "custom", persist: true, flags: flags}), nil
}

// persistenceFields are the INFO fields sample keeps for the persistence report: forks
// (stats), rewrites, saves, delayed fsyncs and the append-only file's size (persistence),
// the copy-on-write memory of the last rewrite and snapshot (persistence), and the data set
// (memory).
var persistenceFields = []string{"total_forks", "latest_fork_usec", "aof_rewrites", "rdb_saves",
	"aof_delayed_fsync", "aof_current_size", "used_memory", "aof_last_cow_size", "rdb_last_cow_size"}

// latencyEvent is one LATENCY LATEST row: the event (fork, aof-write, aof-fsync-always,
// command, expire-cycle, ...) and its latest and largest latency since the last reset.
type latencyEvent struct {
	name            string
	latestMs, maxMs int64
}

// resetLatency clears the latency monitor so the next LATENCY LATEST covers one step.
func resetLatency(ctx context.Context, rdb *redis.Client) { _ = rdb.Do(ctx, "LATENCY", "RESET").Err() }

// latencyLatest reads LATENCY LATEST (events above latency-monitor-threshold).
func latencyLatest(ctx context.Context, rdb *redis.Client) []latencyEvent {
	rows, err := rdb.Do(ctx, "LATENCY", "LATEST").Slice()
	if err != nil {
		return nil
	}
	var out []latencyEvent
	for _, r := range rows {
		f, ok := r.([]any)
		if !ok || len(f) < 4 {
			continue
		}
		name, _ := f[0].(string)
		latest, _ := f[2].(int64)
		most, _ := f[3].(int64)
		out = append(out, latencyEvent{name, latest, most})
	}
	slices.SortFunc(out, func(a, b latencyEvent) int { return strings.Compare(a.name, b.name) })
	return out
}

// persistenceWork is what Redis's persistence did during one step.
type persistenceWork struct {
	forks, rewrites, saves, delayedFsyncs float64
	// forkMs is the latest fork's duration, when the step forked; cowMiB the memory the
	// last rewrite or snapshot child copied on write.
	forkMs, cowMiB float64
	// usedMiB is the data set after the step; grewMiB its growth over the step.
	usedMiB, grewMiB float64
	// aofBytesPerSignal is the append-only file's growth per accepted signal; -1 when a
	// rewrite replaced the file during the step or nothing is persisted.
	aofBytesPerSignal float64
	events            []latencyEvent
}

func persistence(before, after snapshot, events []latencyEvent, signals int) persistenceWork {
	d := func(k string) float64 { return after.redis[k] - before.redis[k] }
	w := persistenceWork{forks: d("total_forks"), rewrites: d("aof_rewrites"), saves: d("rdb_saves"),
		delayedFsyncs: d("aof_delayed_fsync"), usedMiB: after.redis["used_memory"] / (1 << 20),
		grewMiB: d("used_memory") / (1 << 20), aofBytesPerSignal: -1, events: events}
	if w.forks > 0 {
		w.forkMs = after.redis["latest_fork_usec"] / 1000
		w.cowMiB = max(d("aof_last_cow_size"), d("rdb_last_cow_size"), 0) / (1 << 20)
	}
	if w.rewrites == 0 && after.redis["aof_current_size"] > 0 && signals > 0 {
		w.aofBytesPerSignal = d("aof_current_size") / float64(signals)
	}
	return w
}

// report adds the step's persistence figures to the benchmark's metrics.
func (w persistenceWork) report(b *testing.B) {
	b.ReportMetric(w.forks, "forks")
	b.ReportMetric(w.forkMs, "fork-ms")
	b.ReportMetric(w.cowMiB, "cow-MiB")
	b.ReportMetric(w.rewrites, "aof-rewrites")
	b.ReportMetric(w.delayedFsyncs, "delayed-fsyncs")
	b.ReportMetric(w.usedMiB, "used-MiB")
	if w.aofBytesPerSignal >= 0 {
		b.ReportMetric(w.aofBytesPerSignal, "aof-B/signal")
	}
	var worst int64
	for _, e := range w.events {
		worst = max(worst, e.maxMs)
	}
	b.ReportMetric(float64(worst), "latency-max-ms")
}

func (w persistenceWork) String() string {
	out := fmt.Sprintf("redis persistence during the run: %.0f forks", w.forks)
	if w.forks > 0 {
		out += fmt.Sprintf(" (latest %.1f ms, %.1f MiB copied on write)", w.forkMs, w.cowMiB)
	}
	out += fmt.Sprintf(", %.0f AOF rewrites, %.0f RDB saves, %.0f delayed fsyncs, used memory %.0f MiB (%+.0f)",
		w.rewrites, w.saves, w.delayedFsyncs, w.usedMiB, w.grewMiB)
	if w.aofBytesPerSignal >= 0 {
		out += fmt.Sprintf(", AOF %.0f B per signal", w.aofBytesPerSignal)
	}
	var ev []string
	for _, e := range w.events {
		ev = append(ev, fmt.Sprintf("%s %d ms (max %d)", e.name, e.latestMs, e.maxMs))
	}
	if len(ev) == 0 {
		ev = []string{"none"}
	}
	return out + "; latency events: " + strings.Join(ev, ", ")
}

// writeComparison prints each step of a configuration beside the same step of the bare
// reference (persist=off) with the ratio: throughput, p50, p99, max.
func writeComparison(w io.Writer, ref, other []load.Row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "step\tsignals/s\toff\tratio\tp50 ms\toff\tratio\tp99 ms\toff\tratio\tmax ms\toff\tratio\t")
	for _, o := range other {
		i := slices.IndexFunc(ref, func(r load.Row) bool { return r.Result.Scenario.Name == o.Result.Scenario.Name })
		if i < 0 {
			continue
		}
		r := ref[i].Result
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t\n", o.Result.Scenario.Name,
			beside(o.Result.Throughput(), r.Throughput(), "%.0f"),
			beside(msOf(o.Result.Percentile(0.5)), msOf(r.Percentile(0.5)), "%.2f"),
			strings.Join([]string{beside(msOf(o.Result.Percentile(0.99)), msOf(r.Percentile(0.99)), "%.2f"),
				beside(msOf(o.Result.Max()), msOf(r.Max()), "%.2f")}, "\t"))
	}
	_ = tw.Flush()
}

// beside is "figure<TAB>reference<TAB>ratio" with the figures in format f.
func beside(v, ref float64, f string) string {
	ratio := "-"
	if ref > 0 {
		ratio = fmt.Sprintf("%.2f", v/ref)
	}
	return fmt.Sprintf(f+"\t"+f+"\t%s", v, ref, ratio)
}

// TestRedisConfigs reads SIGOPS_LOAD_REDIS_FLAGS as the benchmark does.
func TestRedisConfigs(t *testing.T) {
	got, err := redisConfigs("save=60 10000; --auto-aof-rewrite-min-size=64mb;appendfsync=always")
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, c := range got {
		names = append(names, c.name)
	}
	if !slices.Equal(names, []string{"off", "shipped", "custom"}) || got[0].persist || !got[1].persist || !got[2].persist {
		t.Fatalf("configurations %+v; want off (in memory), shipped and custom (persistent)", got)
	}
	want := []string{"--save", "60 10000", "--auto-aof-rewrite-min-size", "64mb", "--appendfsync", "always"}
	if !slices.Equal(got[2].flags, want) {
		t.Fatalf("custom flags %q; want %q", got[2].flags, want)
	}
	if _, err := redisConfigs("save"); err == nil {
		t.Fatal(`"save" without a value was accepted`)
	}
	if got, _ := redisConfigs(" "); len(got) != 2 {
		t.Fatalf("no custom flags: %d configurations; want 2", len(got))
	}
}
