// Command loadgen sends webhook signals to a running local stack (`make run`) and reports
// throughput, latency percentiles and a reconciliation that every accepted signal produced
// exactly one result. It sets up (or reuses) 100 paper bots in the namespace "load".
//
//	go run ./hack/loadgen                         # the pipeline scenarios, through nginx (TLS)
//	go run ./hack/loadgen -target direct          # webhookd itself, as the Ingress reaches it
//	go run ./hack/loadgen -only fill-500
//	go run ./hack/loadgen -scenario name=burst,wait=false,rate=2000,duration=5s,conns=20
//	go run ./hack/loadgen -cleanup                # delete the load bots afterwards
//
// The library is test/load; BenchmarkSignalPipeline there starts its own stack instead.
package main

import (
	"bufio"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	"github.com/jackc/pgx/v5/pgxpool"
	"k8s.io/client-go/tools/clientcmd"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/test/load"
	"github.com/sigops/sigops/test/stack"
)

type scenarioFlags []load.Scenario

func (s *scenarioFlags) String() string { return fmt.Sprint(len(*s), " scenarios") }
func (s *scenarioFlags) Set(v string) error {
	sc, err := load.ParseScenario(v)
	if err == nil {
		*s = append(*s, sc)
	}
	return err
}

func main() {
	root, err := stack.RepoRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var (
		custom    scenarioFlags
		envFile   = flag.String("env", filepath.Join(root, "bin", "local", "env"), "the local stack's environment file (KUBECONFIG, REDIS_ADDR, BASE_URL, CURL_CA_BUNDLE)")
		target    = flag.String("target", "", "origin to send to: default BASE_URL of the env file (nginx, https://127.0.0.1:8443); \"direct\" finds webhookd's own address in bin/local/webhookd.log (webhookd-0.log with replicas); or http://host:port of webhookd")
		caFile    = flag.String("ca", "", "CA certificate for an https target (default CURL_CA_BUNDLE of the env file)")
		only      = flag.String("only", "", "comma-separated names of the pipeline scenarios to run (intake-max, intake-1000, fill-500, fill-max); default all")
		namespace = flag.String("namespace", load.DefaultNamespace, "namespace of the load bots")
		bots      = flag.Int("bots", load.DefaultBots, "how many bots")
		bound     = flag.Duration("reconcile-bound", time.Minute, "how long after a scenario every accepted signal may take to have its result")
		cleanup   = flag.Bool("cleanup", false, "delete the load bots, their accounts and webhook Secrets afterwards (the local stack keeps its state between runs)")
	)
	flag.Var(&custom, "scenario", "a scenario of your own, name=x,wait=false,rate=1000,duration=10s,conns=50 (rate 0: full speed); repeatable; replaces the pipeline scenarios")
	flag.Parse()
	ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	o := options{root: root, envFile: *envFile, target: *target, caFile: *caFile, only: *only,
		namespace: *namespace, bots: *bots, bound: *bound, cleanup: *cleanup, scenarios: custom}
	// controller-runtime registers -kubeconfig; it overrides the env file's KUBECONFIG.
	if f := flag.Lookup("kubeconfig"); f != nil {
		o.kubeconfig = f.Value.String()
	}
	if err := run(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

type options struct {
	root, envFile, target, caFile, only, namespace, kubeconfig string
	bots                                                       int
	bound                                                      time.Duration
	cleanup                                                    bool
	scenarios                                                  []load.Scenario
}

func run(ctx context.Context, o options) error {
	root, target, caFile, only, namespace, bots, bound, custom := o.root, o.target, o.caFile, o.only, o.namespace, o.bots, o.bound, o.scenarios
	env, err := readEnv(o.envFile)
	if err != nil {
		return fmt.Errorf("%w (is the local stack running? `make run`)", err)
	}
	scenarios := custom
	if len(scenarios) == 0 {
		for _, sc := range load.PipelineScenarios() {
			if only == "" || slices.Contains(strings.Split(only, ","), sc.Name) {
				scenarios = append(scenarios, sc)
			}
		}
		if len(scenarios) == 0 {
			return fmt.Errorf("-only %q names no pipeline scenario", only)
		}
	}

	t := load.Target{BaseURL: target}
	switch target {
	case "":
		t.BaseURL = env["BASE_URL"]
	case "direct":
		// One replica logs to webhookd.log, several to webhookd-<i>.log: the first.
		log := filepath.Join(root, "bin", "local", "webhookd.log")
		if _, err := os.Stat(log); err != nil {
			log = filepath.Join(root, "bin", "local", "webhookd-0.log")
		}
		addr, err := webhookdAddr(log)
		if err != nil {
			return err
		}
		t.BaseURL = "http://" + addr
	}
	if strings.HasPrefix(t.BaseURL, "http://") {
		// webhookd serves plain HTTP only to its trusted proxies (127.0.0.1 in the local
		// stack) that say the client used HTTPS, as the Ingress does.
		t.ForwardedProto = true
	} else {
		if caFile == "" {
			caFile = env["CURL_CA_BUNDLE"]
		}
		if caFile != "" {
			pem, err := os.ReadFile(caFile)
			if err != nil {
				return err
			}
			t.RootCAs = x509.NewCertPool()
			if !t.RootCAs.AppendCertsFromPEM(pem) {
				return fmt.Errorf("%s holds no PEM certificate", caFile)
			}
		}
	}

	kubeconfig := env["KUBECONFIG"]
	if o.kubeconfig != "" {
		kubeconfig = o.kubeconfig
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return err
	}
	c, err := stack.NewClient(cfg, 200, 400)
	if err != nil {
		return err
	}
	rdb, err := store.Connect(ctx, store.Options{Addr: env["REDIS_ADDR"]})
	if err != nil {
		return err
	}
	defer rdb.Close()

	fmt.Printf("setting up %d paper bots in namespace %s...\n", bots, namespace)
	began := time.Now()
	fleet, err := load.Setup(ctx, c, load.SetupOptions{Namespace: namespace, Bots: bots})
	if err != nil {
		return err
	}
	if o.cleanup {
		defer func() {
			fmt.Printf("deleting the %d load bots, their accounts and webhook Secrets...\n", len(fleet.Bots))
			if err := load.Teardown(context.Background(), c, fleet, 2*time.Minute); err != nil {
				fmt.Fprintln(os.Stderr, "loadgen:", err)
			}
		}()
	}
	fmt.Printf("%d bots Ready in %.1f s; sending to %s\n", len(fleet.Bots), time.Since(began).Seconds(), t.BaseURL)
	if !t.ForwardedProto {
		fmt.Println("(through nginx; `-target direct` measures webhookd itself, as the Ingress reaches it)")
	}
	runner, err := load.NewRunner(t, fleet.Paths())
	if err != nil {
		return err
	}
	checker := load.NewChecker(rdb, fleet)
	if url := env["DATABASE_URL"]; url != "" {
		// The book's orders older than the executors' hot window are in the archive.
		db, err := pgxpool.New(ctx, url)
		if err != nil {
			return err
		}
		defer db.Close()
		checker.WithArchive(db)
	}

	var rows []load.Row
	var verdicts []string
	failed := false
	for _, sc := range scenarios {
		fmt.Printf("running %s\n", sc)
		res, err := runner.Run(ctx, sc)
		if err != nil {
			return err
		}
		fmt.Printf("  %d signals accepted at %.0f/s; reconciling...\n", len(res.Accepted), res.Throughput())
		rec, err := checker.Reconcile(ctx, res, bound)
		if err != nil {
			return err
		}
		rows = append(rows, load.Row{Result: res, Check: rec})
		if !rec.OK() {
			failed = true
			fmt.Printf("  RECONCILIATION FAILED: %s\n", rec.Problems())
		}
		if g, ok := load.Goals[sc.Name]; ok && len(custom) == 0 {
			verdicts = append(verdicts, g.Verdicts(res)...)
		}
	}
	fmt.Println()
	load.WriteTable(os.Stdout, rows)
	if len(verdicts) > 0 {
		fmt.Println()
		fmt.Println("Targets (set for webhookd itself on a 2-core machine, load generator included):")
		for _, v := range verdicts {
			fmt.Println("  " + v)
		}
	}
	if failed {
		return errors.New("lost or duplicated signals (see above)")
	}
	return nil
}

// readEnv reads KEY=VALUE lines.
func readEnv(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	env := map[string]string{}
	s := bufio.NewScanner(f)
	for s.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(s.Text()), "="); ok && !strings.HasPrefix(k, "#") {
			env[k] = v
		}
	}
	for _, k := range []string{"KUBECONFIG", "REDIS_ADDR", "BASE_URL"} {
		if env[k] == "" {
			return nil, fmt.Errorf("%s: no %s", path, k)
		}
	}
	return env, s.Err()
}

// webhookdAddr finds the listen address in webhookd's "webhookd listening" log line (the
// local stack gives webhookd a free port and logs at info).
func webhookdAddr(logPath string) (string, error) {
	f, err := os.Open(logPath)
	if err != nil {
		return "", fmt.Errorf("-target direct: %w", err)
	}
	defer f.Close()
	addr := ""
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 64<<10), 1<<20)
	for s.Scan() {
		var line struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal(s.Bytes(), &line) == nil && line.Msg == "webhookd listening" && line.Addr != "" {
			addr = line.Addr // the last start wins
		}
	}
	if addr == "" {
		return "", fmt.Errorf("-target direct: no \"webhookd listening\" line in %s; pass -target http://127.0.0.1:<port> (webhookd's --listen)", logPath)
	}
	return addr, nil
}
