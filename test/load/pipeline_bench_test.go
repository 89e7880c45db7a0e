package load_test

import (
	"bufio"
	"cmp"
	"context"
	"crypto/x509"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/redis/go-redis/v9"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/test/load"
	"github.com/sigops/sigops/test/stack"
)

// reconcileBound is how long, after a scenario's last answer, every accepted signal may
// take to have its result (the executor draining what the intake queued faster than it
// executes).
const reconcileBound = 60 * time.Second

// maxBackground is how busy (cores) processes outside the benchmark, and the kernel, may
// keep the machine in the second before a step before the benchmark warns that its figures
// are not representative (another workload shares the CPUs).
const maxBackground = 0.25

// BenchmarkSignalPipeline starts the whole signal path as real processes (etcd and
// kube-apiserver through envtest, redis-server, and the manager, executor and webhookd
// binaries with their real flags, --log-level=WARN), sets up 100 paper bots, and runs
// load.PipelineScenarios against webhookd directly (plain HTTP from 127.0.0.1 with
// X-Forwarded-Proto: https, as the Ingress sends): throughput and latency percentiles per
// scenario, and after each a reconciliation that every accepted signal produced exactly one
// result and at most one order. Lost or duplicated signals fail it. Run it once:
// -benchtime 1x.
//
// It runs the whole sequence once per Redis configuration, as sub-benchmarks, each on a
// fresh stack: persist=off (in memory: the bare reference) and persist=shipped (a data
// directory and stack.ShippedRedisFlags, exactly as config/redis and the local stack run
// Redis); then it prints each step of the others beside persist=off's.
// SIGOPS_LOAD_REDIS_FLAGS="name=value;name=value" (e.g. "save=60 10000;
// auto-aof-rewrite-min-size=64mb") adds persist=custom: persistent, the shipped flags with
// those replaced, for A/B measurements. Each step is a sub-benchmark of its configuration,
// so -bench 'SignalPipeline/persist=shipped/fill-500' runs that step alone (the executor
// then starts before it).
//
// intake-max runs twice: first as intake-max-noexec, before the executor starts (webhookd,
// Redis and the load generator alone on the machine, as the bare-handler reference
// was measured); then, with the executor running, as intake-max, while the executor drains
// what the intake queues faster than it executes, on the same two cores.
//
// Per step it prints, on stdout, the cores each process used, Redis's commands per signal,
// its persistence work (forks, rewrites, delayed fsyncs, memory, LATENCY LATEST events) and
// the daemons' mean latencies from their /metrics; it warns when processes outside the
// benchmark kept the machine busy (the figures assume it otherwise idle).
//
// SIGOPS_LOAD_NGINX=1 also runs intake-max and fill-500 through nginx terminating TLS in
// front of webhookd (the local stack's origin), for a reference figure.
//
// SIGOPS_LOAD_PPROF=<dir> starts webhookd and the executor with --pprof and, during each
// step, records a CPU profile of each for the step's duration, as
// <dir>/<configuration>-<step>-<daemon>.pprof (read with `go tool pprof -top bin/<daemon>
// <file>`: the benchmark builds the daemons into the repository's bin/).
func BenchmarkSignalPipeline(b *testing.B) {
	ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	configs, err := redisConfigs(os.Getenv("SIGOPS_LOAD_REDIS_FLAGS"))
	if err != nil {
		b.Fatal(err)
	}
	runs := map[string][]load.Row{}
	for _, rc := range configs {
		b.Run("persist="+rc.name, func(b *testing.B) { runs[rc.name] = runPipeline(b, rc) })
	}
	for _, rc := range configs[1:] {
		if len(runs["off"]) > 0 && len(runs[rc.name]) > 0 {
			fmt.Printf("\npersist=%s against persist=off (the bare reference, same run):\n", rc.name)
			writeComparison(os.Stdout, runs["off"], runs[rc.name])
		}
	}
}

// pipelineStep is one scenario of a run.
type pipelineStep struct {
	scenario load.Scenario
	runner   *load.Runner
	// noExecutor: the step runs before the executor starts (intake alone); its signals
	// wait in the queue and are reconciled once the executor has run them.
	noExecutor bool
}

// pipelineRun is one configuration's stack and what its steps measured.
type pipelineRun struct {
	s                  *pipeline
	config             string
	checker            *load.Checker
	rows               []load.Row
	verdicts, warnings []string
}

// runPipeline starts a stack with Redis configured as rc and runs every step as a
// sub-benchmark; it returns the steps' rows.
func runPipeline(b *testing.B, rc redisConfig) []load.Row {
	ctx := b.Context()
	root, err := stack.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	s := startStack(ctx, b, root, dir, rc)

	c, err := stack.NewClient(s.cp.Config, 200, 400)
	if err != nil {
		b.Fatal(err)
	}
	began := time.Now()
	fleet, err := load.Setup(ctx, c, load.SetupOptions{})
	if err != nil {
		b.Fatalf("%v\nmanager output:\n%s", err, s.manager.Tail())
	}
	b.Logf("%d bots Ready in %.1f s", len(fleet.Bots), time.Since(began).Seconds())
	rdb := s.redis.Client()
	b.Cleanup(func() { _ = rdb.Close() })
	s.rdb = rdb
	run := &pipelineRun{s: s, config: rc.name, checker: load.NewChecker(rdb, fleet)}

	direct, err := load.NewRunner(load.Target{BaseURL: "http://" + s.hookAddr, ForwardedProto: true}, fleet.Paths())
	if err != nil {
		b.Fatal(err)
	}
	var steps []pipelineStep
	for _, sc := range load.PipelineScenarios() {
		if sc.Name == "intake-max" {
			solo := sc
			solo.Name = "intake-max-noexec"
			steps = append(steps, pipelineStep{solo, direct, true})
		}
		steps = append(steps, pipelineStep{sc, direct, false})
	}
	if os.Getenv("SIGOPS_LOAD_NGINX") == "1" {
		viaNginx := startNginx(ctx, b, dir, s.hookAddr, fleet)
		for _, sc := range load.PipelineScenarios() {
			if sc.Name == "intake-max" || sc.Name == "fill-500" {
				sc.Name += "-nginx"
				steps = append(steps, pipelineStep{sc, viaNginx, false})
			}
		}
	}
	for _, st := range steps {
		if !b.Run(st.scenario.Name, func(sb *testing.B) {
			for i := range sb.N {
				if !st.noExecutor || i == 0 {
					run.step(ctx, b, sb, st)
				}
			}
		}) {
			break
		}
	}
	// On stdout: the testing package keeps only the first lines of a benchmark's log.
	fmt.Printf("\nsignal pipeline, persist=%s, %d bots, webhookd at %s (direct, X-Forwarded-Proto: https):\n", rc.name, len(fleet.Bots), s.hookAddr)
	load.WriteTable(os.Stdout, run.rows)
	fmt.Printf("\ntargets:\n  %s\n", strings.Join(run.verdicts, "\n  "))
	if rc.persist {
		printAOFMix(ctx, s, filepath.Join(dir, "redis", "appendonlydir"), run.rows)
	}
	for _, w := range run.warnings {
		fmt.Println("WARNING: " + w)
		b.Log("WARNING: " + w)
	}
	return run.rows
}

// printAOFMix prints what the append-only file holds since the last rewrite, by command
// and by key family: which writes the file's volume (and so the disk and a rewrite) goes
// to. Without a rewrite in the run, the file holds every step's writes (and the set-up's).
func printAOFMix(ctx context.Context, s *pipeline, dir string, rows []load.Row) {
	m, err := readAOFMix(dir)
	if err != nil {
		fmt.Println("append-only file:", err)
		return
	}
	signals := 0
	for _, r := range rows {
		signals += len(r.Result.Accepted)
	}
	rewrites := s.rdb.InfoMap(ctx, "persistence").Item("Persistence", "aof_rewrites")
	fmt.Printf("\nappend-only file since the last rewrite (%s rewrites in the run): %.1f MiB", rewrites, float64(m.total)/(1<<20))
	if rewrites == "0" && signals > 0 {
		fmt.Printf(", %.0f B per accepted signal", float64(m.total)/float64(signals))
	}
	fmt.Printf("\n  by command: %s\n  by key: %s\n", top(m.byCommand, m.total, 12), top(m.byKey, m.total, 16))
}

// step runs one scenario as the sub-benchmark sb of the configuration's benchmark b (which
// owns the processes: an executor started here outlives the step), reconciles it and
// reports its figures.
func (run *pipelineRun) step(ctx context.Context, b, sb *testing.B, st pipelineStep) {
	s := run.s
	sb.StopTimer()
	if !st.noExecutor && s.executor == nil {
		s.startExecutor(ctx, b)
	}
	// Let the previous step's stragglers settle, and see whether anything else keeps the
	// machine busy meanwhile (the figures assume it idle).
	busy0, ours0 := machineBusy(), ourCPU()
	time.Sleep(time.Second)
	busy1, ours1 := machineBusy(), ourCPU()
	ours := (ours1 - ours0).Seconds()
	background := (busy1 - busy0).Seconds() - ours
	before := sample(sb, s)
	resetLatency(ctx, s.rdb)
	profiled := s.profile(ctx, sb, run.config+"-"+st.scenario.Name, st.scenario.Duration)
	sb.StartTimer()
	res, err := st.runner.Run(ctx, st.scenario)
	if err != nil {
		sb.Fatal(err)
	}
	sb.StopTimer()
	profiled()
	after := sample(sb, s)
	events := latencyLatest(ctx, s.rdb)
	if s.executor == nil {
		s.startExecutor(ctx, b)
	}
	rec, err := run.checker.Reconcile(ctx, res, reconcileBound)
	if err != nil {
		sb.Fatal(err)
	}
	run.rows = append(run.rows, load.Row{Result: res, Check: rec})
	name := st.scenario.Name
	sb.ReportMetric(res.Throughput(), "signals/s")
	sb.ReportMetric(msOf(res.Percentile(0.50)), "p50-ms")
	sb.ReportMetric(msOf(res.Percentile(0.99)), "p99-ms")
	sb.ReportMetric(msOf(res.Max()), "max-ms")
	persisted := persistence(before, after, events, len(res.Accepted))
	persisted.report(sb)
	fmt.Printf("%s\n  %s\n  %s\n  in the second before it: the stack %.2f cores, the kernel and other processes %.2f\n",
		st.scenario, describe(before, after, res.Elapsed, len(res.Accepted)), persisted, ours, max(0, background))
	if during := foreignLoad(before, after, res.Elapsed); during > maxBackground {
		run.warnings = append(run.warnings, fmt.Sprintf("%s: processes outside the benchmark, and the kernel, kept %.2f cores busy during it: its figures are not representative", name, during))
	}
	if background > maxBackground {
		run.warnings = append(run.warnings, fmt.Sprintf("%s: processes outside the benchmark kept %.2f cores busy in the second before it: its figures are not representative", name, background))
	}
	sb.Logf("%s: %.0f signals/s accepted, p50 %s, p99 %s, max %s; lost %d, duplicated %d",
		name, res.Throughput(), fmtMs(res.Percentile(0.5)), fmtMs(res.Percentile(0.99)), fmtMs(res.Max()),
		rec.Lost, rec.DuplicatedTotal())
	if g, ok := load.Goals[name]; ok {
		run.verdicts = append(run.verdicts, g.Verdicts(res)...)
	}
	if !rec.OK() {
		var out strings.Builder
		load.WriteTable(&out, run.rows)
		sb.Fatalf("%s: reconciliation failed: %s\n%s", name, rec.Problems(), out.String())
	}
	sb.StartTimer()
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func fmtMs(d time.Duration) string { return fmt.Sprintf("%.2f ms", msOf(d)) }

// pipeline is the stack the benchmark runs.
type pipeline struct {
	cp                             *stack.ControlPlane
	redis                          *stack.Redis
	manager                        *stack.Manager
	executor, webhookd             *stack.Process
	hookAddr, hookOps, executorOps string
	executorBin, dir               string
	// profiles is SIGOPS_LOAD_PPROF: where CPU profiles of the daemons go ("" for none).
	profiles string
	rdb      *redis.Client // for INFO
}

func startStack(ctx context.Context, b *testing.B, root, dir string, rc redisConfig) *pipeline {
	b.Helper()
	s := &pipeline{profiles: os.Getenv("SIGOPS_LOAD_PPROF")}
	var err error
	if s.cp, err = stack.StartControlPlane(stack.ControlPlaneOptions{Root: root, Kubeconfig: filepath.Join(dir, "kubeconfig")}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := s.cp.Stop(); err != nil {
			b.Error("stop control plane:", err)
		}
	})
	ro := stack.RedisOptions{LogFile: filepath.Join(dir, "redis.log"), Flags: rc.flags}
	if rc.persist {
		ro.DataDir = filepath.Join(dir, "redis")
	}
	if s.redis, err = stack.StartRedis(ctx, ro); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := s.redis.Stop(10 * time.Second); err != nil {
			b.Error(err)
		}
	})
	bins := map[string]string{}
	for _, name := range []string{"manager", "executor", "webhookd"} {
		if bins[name], err = stack.Build(ctx, root, name); err != nil {
			b.Fatal(err)
		}
	}
	if s.manager, err = stack.StartManager(ctx, stack.ManagerOptions{
		Binary: bins["manager"], Kubeconfig: s.cp.Kubeconfig, Redis: store.Options{Addr: s.redis.Addr},
		BaseURL: "https://sigops.bench", LogFile: filepath.Join(dir, "manager.log"),
	}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := s.manager.Stop(30 * time.Second); err != nil {
			b.Error(err)
		}
	})
	addr := func() string {
		port, err := stack.FreePort()
		if err != nil {
			b.Fatal(err)
		}
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	}
	s.executorBin, s.dir = bins["executor"], dir
	s.hookAddr, s.hookOps = addr(), addr()
	if s.webhookd, err = stack.StartDaemon(ctx, stack.DaemonOptions{
		Name: "webhookd", Binary: bins["webhookd"], LogFile: filepath.Join(dir, "webhookd.log"),
		Args: []string{"--redis-addr=" + s.redis.Addr, "--listen=" + s.hookAddr, "--metrics-bind-address=" + s.hookOps,
			"--trusted-proxies=127.0.0.1/32", "--log-level=WARN", s.pprofFlag()},
		ReadyURL: "http://" + s.hookOps + "/readyz",
	}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { // cleanups run last first: webhookd stops before the executor
		if err := s.webhookd.Stop(30 * time.Second); err != nil {
			b.Error(err)
		}
	})
	return s
}

// startExecutor starts the executor (simulated market, paper trading) with its real flags.
func (s *pipeline) startExecutor(ctx context.Context, b *testing.B) {
	b.Helper()
	port, err := stack.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	s.executorOps = net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if s.executor, err = stack.StartDaemon(ctx, stack.DaemonOptions{
		Name: "executor", Binary: s.executorBin, LogFile: filepath.Join(s.dir, "executor.log"),
		Args: []string{"--redis-addr=" + s.redis.Addr, "--market-data=simulated",
			"--metrics-bind-address=" + s.executorOps, "--log-level=WARN", s.pprofFlag()},
		ReadyURL: "http://" + s.executorOps + "/readyz",
	}); err != nil {
		b.Fatal(err)
	}
	// Registered after webhookd's, so it runs before it: stop the webhookd first, so
	// in-flight waits get their results.
	b.Cleanup(func() {
		if err := s.webhookd.Stop(30 * time.Second); err != nil {
			b.Error(err)
		}
		if err := s.executor.Stop(30 * time.Second); err != nil {
			b.Error(err)
		}
	})
}

// startNginx puts nginx with a self-signed certificate in front of webhookd and returns a
// runner through it.
func startNginx(ctx context.Context, b *testing.B, dir, hookAddr string, fleet *load.Fleet) *load.Runner {
	b.Helper()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := stack.SelfSignedCert(cert, key); err != nil {
		b.Fatal(err)
	}
	port, err := stack.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	n, err := stack.StartNginx(ctx, stack.NginxOptions{Listen: listen, Dir: filepath.Join(dir, "nginx"), CertFile: cert, KeyFile: key,
		LogFile: filepath.Join(dir, "nginx.log"), Routes: map[string]string{"/api/webhooks/": hookAddr}})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = n.Stop(10 * time.Second) })
	pem, err := os.ReadFile(cert)
	if err != nil {
		b.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(pem)
	r, err := load.NewRunner(load.Target{BaseURL: "https://" + listen, RootCAs: pool}, fleet.Paths())
	if err != nil {
		b.Fatal(err)
	}
	return r
}

// snapshot is the CPU time used so far by the daemons and by this process (the load
// generator), and the daemons' latency histograms' sums and counts.
type snapshot struct {
	cpu     map[string]time.Duration
	metrics map[string]float64
	// machine is the whole machine's /proc/stat cpu line: busy, idle (with iowait) and
	// steal time.
	busy, idle, steal time.Duration
	// redis is Redis's INFO counters: total_commands_processed and total_reads_processed
	// (read events: about one per client round trip), cmdstat_<command> calls, and
	// persistenceFields.
	redis map[string]float64
}

// The histograms read from /metrics (sum and count give a mean per scenario).
var histograms = map[string]string{
	"webhookd": "sigops_webhook_receive_to_queued_seconds sigops_webhook_receive_to_result_seconds",
	"executor": "sigops_executor_queued_to_executed_seconds sigops_executor_execute_seconds sigops_executor_exchange_seconds",
}

func sample(b *testing.B, s *pipeline) snapshot {
	snap := snapshot{cpu: map[string]time.Duration{}, metrics: map[string]float64{}}
	for name, t := range stackCPU() {
		snap.cpu[name] = t
	}
	snap.cpu["load generator"] = cpuTime(os.Getpid())
	snap.busy, snap.idle, snap.steal = machineTime()
	snap.redis = map[string]float64{}
	if info, err := s.rdb.Info(context.Background(), "stats", "commandstats", "persistence", "memory").Result(); err == nil {
		for _, line := range strings.Split(info, "\r\n") {
			k, v, ok := strings.Cut(line, ":")
			switch {
			case !ok:
			case k == "total_commands_processed" || k == "total_reads_processed" || slices.Contains(persistenceFields, k):
				snap.redis[k], _ = strconv.ParseFloat(v, 64)
			case strings.HasPrefix(k, "cmdstat_"): // cmdstat_get:calls=12,usec=34,...
				calls, rest, _ := strings.Cut(strings.TrimPrefix(v, "calls="), ",")
				usec, _, _ := strings.Cut(strings.TrimPrefix(rest, "usec="), ",")
				snap.redis[k], _ = strconv.ParseFloat(calls, 64)
				snap.redis["cmdusec_"+strings.TrimPrefix(k, "cmdstat_")], _ = strconv.ParseFloat(usec, 64)
			}
		}
	}
	for daemon, addr := range map[string]string{"webhookd": s.hookOps, "executor": s.executorOps} {
		if addr == "" {
			continue
		}
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			b.Logf("metrics of %s: %v", daemon, err)
			continue
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			name, value, ok := strings.Cut(sc.Text(), " ")
			if !ok {
				continue
			}
			key, _, _ := strings.Cut(name, "{") // summed over labels
			base := strings.TrimSuffix(strings.TrimSuffix(key, "_sum"), "_count")
			if base == key || !slices.Contains(strings.Fields(histograms[daemon]), base) {
				continue
			}
			if v, err := strconv.ParseFloat(value, 64); err == nil {
				snap.metrics[key] += v
			}
		}
		_ = resp.Body.Close()
	}
	return snap
}

// describe reports the cores each process used, Redis's work per signal and the daemons'
// mean latencies over one scenario.
func describe(before, after snapshot, elapsed time.Duration, signals int) string {
	var parts []string
	for _, name := range []string{"load generator", "webhookd", "executor", "redis-server", "manager", "kube-apiserver", "etcd", "nginx"} {
		if _, ok := after.cpu[name]; !ok {
			continue
		}
		used := after.cpu[name] - before.cpu[name]
		parts = append(parts, fmt.Sprintf("%s %.2f", name, used.Seconds()/elapsed.Seconds()))
	}
	busy, idle, steal := after.busy-before.busy, after.idle-before.idle, after.steal-before.steal
	var named time.Duration
	for name := range after.cpu {
		named += after.cpu[name] - before.cpu[name]
	}
	// Per-process and machine-wide tick counts round differently: small negatives are 0.
	parts = append(parts, fmt.Sprintf("the kernel and other processes %.2f", max(0, (busy-named).Seconds()/elapsed.Seconds())))
	parts = append(parts, fmt.Sprintf("machine busy %.2f, idle %.2f, steal %.2f",
		busy.Seconds()/elapsed.Seconds(), idle.Seconds()/elapsed.Seconds(), steal.Seconds()/elapsed.Seconds()))
	out := "cores used: " + strings.Join(parts, ", ")
	if signals > 0 {
		out += fmt.Sprintf("\n  redis per signal during the run: %.1f commands, %.1f read events",
			(after.redis["total_commands_processed"]-before.redis["total_commands_processed"])/float64(signals),
			(after.redis["total_reads_processed"]-before.redis["total_reads_processed"])/float64(signals))
		out += " (" + perCommand(before, after, "cmdstat_", signals, 0.05, 0) + ")"
		// Where Redis's CPU per signal goes (the rest is reading requests and writing replies).
		out += "\n  redis µs per signal in commands (a script's include the commands it calls): " +
			perCommand(before, after, "cmdusec_", signals, 0, 10)
	}
	var means []string
	for _, daemon := range []string{"webhookd", "executor"} {
		for _, h := range strings.Fields(histograms[daemon]) {
			n := after.metrics[h+"_count"] - before.metrics[h+"_count"]
			if n <= 0 {
				continue
			}
			sum := after.metrics[h+"_sum"] - before.metrics[h+"_sum"]
			short := strings.TrimPrefix(strings.TrimPrefix(h, "sigops_"), "webhook_")
			means = append(means, fmt.Sprintf("%s %.2f ms", strings.TrimSuffix(short, "_seconds"), sum/n*1000))
		}
	}
	if len(means) > 0 {
		out += "\n  daemon means: " + strings.Join(means, ", ")
	}
	return out
}

// cpuTime is a process's user plus system CPU time (/proc/<pid>/stat, clock ticks of 10 ms).
func cpuTime(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) may hold spaces; the fields after it follow its ")".
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// machineTime reads the machine's CPU time from /proc/stat: busy (user, nice, system, irq,
// softirq), idle (idle, iowait) and steal (taken by the hypervisor).
func machineTime() (busy, idle, steal time.Duration) {
	data, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, 0, 0
	}
	line, _, _ := strings.Cut(string(data), "\n")
	f := strings.Fields(line) // cpu user nice system idle iowait irq softirq steal ...
	if len(f) < 9 || f[0] != "cpu" {
		return 0, 0, 0
	}
	v := func(i int) time.Duration {
		n, _ := strconv.ParseInt(f[i], 10, 64)
		return time.Duration(n) * 10 * time.Millisecond
	}
	return v(1) + v(2) + v(3) + v(6) + v(7), v(4) + v(5), v(8)
}

// stackCPU is the CPU time of every process the benchmark started (its descendants: the
// control plane, redis-server, the daemons, nginx), by command name.
func stackCPU() map[string]time.Duration {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	parent := map[int]int{}
	comm := map[int]string{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		st := string(data)
		open, end := strings.IndexByte(st, '('), strings.LastIndexByte(st, ')')
		if open < 0 || end < open {
			continue
		}
		f := strings.Fields(st[end+1:]) // state ppid ...
		if len(f) < 2 {
			continue
		}
		parent[pid], _ = strconv.Atoi(f[1])
		comm[pid] = st[open+1 : end]
	}
	self := os.Getpid()
	out := map[string]time.Duration{}
	for pid := range parent {
		for p := parent[pid]; p > 1; p = parent[p] {
			if p == self {
				out[comm[pid]] += cpuTime(pid)
				break
			}
		}
	}
	return out
}

func machineBusy() time.Duration {
	busy, _, _ := machineTime()
	return busy
}

// ourCPU is the CPU time of this process and every process it started.
func ourCPU() time.Duration {
	t := cpuTime(os.Getpid())
	for _, d := range stackCPU() {
		t += d
	}
	return t
}

// foreignLoad is the cores the kernel and processes outside the benchmark used between
// two snapshots.
func foreignLoad(before, after snapshot, elapsed time.Duration) float64 {
	busy := after.busy - before.busy
	for name := range after.cpu {
		busy -= after.cpu[name] - before.cpu[name]
	}
	return busy.Seconds() / elapsed.Seconds()
}

// pprofFlag is the daemons' --pprof flag: on when the run records profiles.
func (s *pipeline) pprofFlag() string {
	return "--pprof=" + strconv.FormatBool(s.profiles != "")
}

// profile starts recording a CPU profile of webhookd and of the executor (when running) for
// d, and returns a function that waits for both and writes them under s.profiles as
// <name>-<daemon>.pprof. Without SIGOPS_LOAD_PPROF it does nothing.
func (s *pipeline) profile(ctx context.Context, b *testing.B, name string, d time.Duration) (wait func()) {
	if s.profiles == "" {
		return func() {}
	}
	if err := os.MkdirAll(s.profiles, 0o755); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	started := 0
	for daemon, addr := range map[string]string{"webhookd": s.hookOps, "executor": s.executorOps} {
		if addr == "" {
			continue
		}
		started++
		file := filepath.Join(s.profiles, name+"-"+daemon+".pprof")
		url := fmt.Sprintf("http://%s/debug/pprof/profile?seconds=%d", addr, max(1, int(d/time.Second)))
		go func() {
			defer func() { done <- struct{}{} }()
			if err := fetchTo(ctx, url, file); err != nil {
				b.Logf("CPU profile of %s: %v", daemon, err)
			}
		}()
	}
	return func() {
		for range started {
			<-done
		}
	}
}

func fetchTo(ctx context.Context, url, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s answered %s", url, resp.Status)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(file, body, 0o644)
}

// perCommand lists the commands of one INFO commandstats figure (prefix: cmdstat_ for calls,
// cmdusec_ for µs spent) during a step, per signal, largest first: the commands with at
// least `least` per signal, at most `top` of them (0: all).
func perCommand(before, after snapshot, prefix string, signals int, least float64, top int) string {
	type cmd struct {
		name string
		n    float64
	}
	var cmds []cmd
	for k, v := range after.redis {
		if name, ok := strings.CutPrefix(k, prefix); ok {
			if n := (v - before.redis[k]) / float64(signals); n >= least {
				cmds = append(cmds, cmd{name, n})
			}
		}
	}
	slices.SortFunc(cmds, func(a, b cmd) int { return cmp.Compare(b.n, a.n) })
	if top > 0 {
		cmds = cmds[:min(len(cmds), top)]
	}
	list := make([]string, len(cmds))
	for i, c := range cmds {
		list[i] = fmt.Sprintf("%s %.1f", c.name, c.n)
	}
	return strings.Join(list, ", ")
}
