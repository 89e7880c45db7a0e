// Command localstack runs the sigops local stack: the Kubernetes control plane (etcd,
// kube-apiserver and kube-controller-manager), Redis, the manager and the sample
// resources. `make run` (hack/local-stack.sh) builds and starts it; Ctrl-C stops everything
// it started.
//
// State lives in bin/local: the cluster (etcd) and Redis keep their data across runs, so
// bots and paper balances survive a restart; -fresh starts from empty.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/controllers"
	"github.com/sigops/sigops/runtime/backtest"
	"github.com/sigops/sigops/runtime/backtest/candlegen"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/keymigration"
	"github.com/sigops/sigops/test/stack"
)

const (
	// redisPort is the local stack's fixed Redis port (a free one if it is taken).
	redisPort = 6390
	// clusterPorts are the masters' fixed ports with -redis=cluster (cluster buses 10000
	// above each): free ones on the first start if these are taken; a formed cluster keeps
	// its ports, because its nodes.conf records them.
	clusterBasePort = 6391
	clusterMasters  = 3
	// baseURL and mcpURL are the public origins nginx serves (originAddr, mcpOriginAddr):
	// authd's discovery documents and the OAuth tokens' audience name mcpURL.
	baseURL = "https://" + originAddr
	mcpURL  = "https://" + mcpOriginAddr
	// The sample bot whose readiness means the stack works.
	sampleNamespace = "default"
	sampleBot       = "demo-btc"
	readyTimeout    = 2 * time.Minute
	stopTimeout     = 30 * time.Second
)

func main() {
	fresh := flag.Bool("fresh", false, "delete the local cluster's and Redis's data (bin/local/etcd, bin/local/redis, bin/local/redis-cluster) before starting")
	topology := flag.String("redis", redisSingle, "the Redis the stack runs on: "+redisSingle+" (one server) or "+redisCluster+" (a Redis Cluster of three masters)")
	flag.Parse()
	if *topology != redisSingle && *topology != redisCluster {
		fmt.Fprintf(os.Stderr, "error: -redis=%s: want %s or %s\n", *topology, redisSingle, redisCluster)
		os.Exit(2)
	}
	// Only warnings and errors of envtest and the client reach the terminal.
	ctrllog.SetLogger(logr.FromSlogHandler(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	os.Exit(run(*fresh, *topology))
}

// The -redis topologies.
const (
	redisSingle  = "single"
	redisCluster = "cluster"
)

func run(fresh bool, topology string) int {
	root, err := stack.RepoRoot()
	if err != nil {
		return fail(err)
	}
	p := newPaths(root)
	if err := os.MkdirAll(p.dir, 0o755); err != nil {
		return fail(err)
	}
	lock, err := takeLock(p)
	if err != nil {
		return fail(err)
	}
	if lock == nil {
		return 1 // another stack runs; takeLock said so
	}
	defer lock.Close() // holds the flock for the life of the process

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, os.Interrupt, syscall.SIGTERM)
	go func() {
		<-signals
		fmt.Println("\nstopping...")
		cancel()
		for range signals { // keep Ctrl-C from killing us before the children are stopped
			fmt.Println("still stopping; waiting for the manager, Redis and the control plane to exit")
		}
	}()

	s := &localStack{paths: p, topology: topology}
	defer func() {
		s.stop()
		_ = os.Remove(p.pid)
		fmt.Println("stopped")
	}()
	if fresh {
		for _, d := range []string{p.etcdDir, p.redisDir, p.clusterDir} {
			if err := os.RemoveAll(d); err != nil {
				return fail(err)
			}
		}
		fmt.Println("removed the previous cluster and Redis data")
	}
	if err := s.start(ctx); err != nil {
		if ctx.Err() != nil {
			return 130 // interrupted while starting
		}
		return fail(err)
	}
	select {
	case <-ctx.Done():
		return 0
	case <-s.cp.ControllerManager.Done():
		return fail(fmt.Errorf("kube-controller-manager exited (%v); see %s", s.cp.ControllerManager.ExitErr(), p.rel(p.kcmLog)))
	case <-s.manager.Done():
		return fail(fmt.Errorf("the manager exited (%v); see %s", s.manager.ExitErr(), p.rel(p.managerLog)))
	case r := <-s.redisExited():
		return fail(fmt.Errorf("redis-server %s exited (%v); see %s", r.Addr, r.ExitErr(), p.rel(s.redisLogOf(r))))
	case <-s.executor.Done():
		return fail(fmt.Errorf("the executor exited (%v); see %s", s.executor.ExitErr(), p.rel(p.executorLog)))
	case <-s.authd.Done():
		return fail(fmt.Errorf("authd exited (%v); see %s", s.authd.ExitErr(), p.rel(p.authdLog)))
	case <-s.mcpd.Done():
		return fail(fmt.Errorf("mcpd exited (%v); see %s", s.mcpd.ExitErr(), p.rel(p.mcpdLog)))
	case <-s.webhookd.Done():
		return fail(fmt.Errorf("webhookd exited (%v); see %s", s.webhookd.ExitErr(), p.rel(p.webhookdLog)))
	case <-s.nginx.Done():
		return fail(fmt.Errorf("nginx exited (%v); see %s", s.nginx.ExitErr(), p.rel(p.nginxLog)))
	}
}

// paths are the files of the local stack, all under bin/local.
type paths struct {
	root, cwd, dir                                 string
	lock, pid, kubeconfig, env, etcdDir, redisDir  string
	clusterDir                                     string
	managerLog, redisLog, samples, kubectl, assets string
	webhookdLog, executorLog, nginxDir, nginxLog   string
	certFile, keyFile, masterKey                   string
	authdLog, jwtKey, demoPassword, mcpdLog        string
	kcmLog, candles                                string
}

func newPaths(root string) paths {
	dir := filepath.Join(root, "bin", "local")
	cwd, _ := os.Getwd()
	return paths{
		root: root, cwd: cwd, dir: dir,
		lock: filepath.Join(dir, "lock"), pid: filepath.Join(dir, "pid"),
		kubeconfig: filepath.Join(dir, "kubeconfig"), env: filepath.Join(dir, "env"),
		etcdDir: filepath.Join(dir, "etcd"), redisDir: filepath.Join(dir, "redis"), clusterDir: filepath.Join(dir, "redis-cluster"),
		managerLog: filepath.Join(dir, "manager.log"), redisLog: filepath.Join(dir, "redis.log"),
		webhookdLog: filepath.Join(dir, "webhookd.log"), executorLog: filepath.Join(dir, "executor.log"),
		nginxDir: filepath.Join(dir, "nginx"), nginxLog: filepath.Join(dir, "nginx.log"),
		certFile: filepath.Join(dir, "tls", "cert.pem"), keyFile: filepath.Join(dir, "tls", "key.pem"),
		masterKey: filepath.Join(dir, "master.key"), jwtKey: filepath.Join(dir, "jwt.key"),
		demoPassword: filepath.Join(dir, "demo.password"), authdLog: filepath.Join(dir, "authd.log"),
		mcpdLog: filepath.Join(dir, "mcpd.log"),
		kcmLog:  filepath.Join(dir, "kube-controller-manager.log"),
		candles: filepath.Join(dir, "candles-btc-usdt-1m.csv"),
		samples: filepath.Join(root, "config", "samples"),
		kubectl: filepath.Join(stack.AssetsDir(root), "kubectl"),
	}
}

// rel shows a path relative to the working directory when it lies below it.
func (p paths) rel(path string) string {
	if r, err := filepath.Rel(p.cwd, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

// takeLock takes bin/local/lock so that only one local stack runs; it returns nil (after
// saying why) when another one holds it.
func takeLock(p paths) (*os.File, error) {
	f, err := os.OpenFile(p.lock, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %s: %w", p.lock, err)
		}
		pid := "unknown"
		if b, err := os.ReadFile(p.pid); err == nil && len(strings.TrimSpace(string(b))) > 0 {
			pid = strings.TrimSpace(string(b))
		}
		fmt.Fprintf(os.Stderr, "sigops local stack is already running (pid %s); stop it with Ctrl-C in its terminal\n", pid)
		return nil, nil
	}
	if err := os.WriteFile(p.pid, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}

// localStack is what run started, stopped in reverse order.
type localStack struct {
	paths
	cp *stack.ControlPlane
	// topology is -redis; redis the one server or cluster the masters it started, and
	// store how every daemon reaches them.
	topology string
	redis    *stack.Redis
	cluster  *stack.RedisCluster
	store    store.Options
	manager  *stack.Manager
	// The data plane: executor, webhookd, authd, mcpd and nginx in front as the {base_url}
	// and {mcp_url} origins.
	executor, webhookd, authd, mcpd *stack.Process
	password                        string // the demo account's
	nginx                           *stack.Nginx
}

func (s *localStack) start(ctx context.Context) error {
	fmt.Printf("starting control plane (etcd + kube-apiserver + kube-controller-manager, log: %s)...\n", s.rel(s.kcmLog))
	began := time.Now()
	cp, err := stack.StartControlPlane(stack.ControlPlaneOptions{Root: s.root, Kubeconfig: s.kubeconfig, EtcdDataDir: s.etcdDir,
		ControllerManagerLog: s.kcmLog})
	if err != nil {
		return err
	}
	s.cp = cp
	fmt.Printf("control plane up in %s (kubeconfig: %s)\n", time.Since(began).Round(100*time.Millisecond), s.rel(s.kubeconfig))
	if err := ctx.Err(); err != nil {
		return err
	}

	// The master key that seals exchange credentials (kept across runs: sealed blobs in
	// Redis need it; -fresh removes both).
	for _, f := range []string{s.masterKey, s.jwtKey, s.demoPassword} {
		if err := stack.SecretFile(f); err != nil {
			return err
		}
	}

	if err := s.startRedis(ctx); err != nil {
		return err
	}

	fmt.Printf("building and starting the manager (log: %s)\n", s.rel(s.managerLog))
	bin, err := stack.BuildManager(ctx, s.root)
	if err != nil {
		return err
	}
	if s.manager, err = stack.StartManager(ctx, stack.ManagerOptions{
		Binary: bin, Kubeconfig: s.kubeconfig, Redis: s.store, BaseURL: baseURL, LogFile: s.managerLog,
		Args: []string{"--master-key-file=" + s.masterKey},
	}); err != nil {
		return err
	}

	if err := s.startDataPlane(ctx); err != nil {
		return err
	}

	fmt.Printf("creating the samples (%s)\n", s.rel(s.samples))
	c, err := stack.NewClient(cp.Config, 50, 100)
	if err != nil {
		return err
	}
	objs, err := stack.ReadKustomization(s.samples)
	if err != nil {
		return err
	}
	if err := stack.CreateAll(ctx, c, objs); err != nil {
		return err
	}
	fmt.Printf("waiting for SignalBot %s/%s to be Ready...\n", sampleNamespace, sampleBot)
	key := types.NamespacedName{Namespace: sampleNamespace, Name: sampleBot}
	bot, err := stack.WaitReady(ctx, c, tradingv1.GroupVersion.WithKind("SignalBot"), key, readyTimeout)
	if err != nil {
		return fmt.Errorf("%w (manager log: %s)", err, s.rel(s.managerLog))
	}
	secretName, _, _ := unstructured.NestedString(bot.Object, "status", "webhookSecretName")
	if secretName == "" {
		secretName = sampleBot + "-webhook"
	}
	var secret corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: sampleNamespace, Name: secretName}, &secret); err != nil {
		return fmt.Errorf("webhook Secret of %s: %w", key, err)
	}
	webhookURL := string(secret.Data[controllers.WebhookSecretKeyURL])

	password, err := os.ReadFile(s.demoPassword)
	if err != nil {
		return err
	}
	s.password = strings.TrimSpace(string(password))
	env := fmt.Sprintf("KUBECONFIG=%s\nREDIS_ADDR=%s\nBASE_URL=%s\nMCP_URL=%s\nCURL_CA_BUNDLE=%s\nSIGOPS_EMAIL=%s\nSIGOPS_PASSWORD=%s\n",
		s.kubeconfig, s.redisAddrs()[0], baseURL, mcpURL, s.certFile, demoEmail, s.password)
	if s.cluster != nil {
		env += "REDIS_CLUSTER_ADDRS=" + strings.Join(s.redisAddrs(), ",") + "\n"
	}
	if err := os.WriteFile(s.env, []byte(env), 0o600); err != nil { // it holds the demo password
		return err
	}
	if err := s.writeCandles(); err != nil {
		return err
	}
	s.printReady(secretName, webhookURL)
	return nil
}

// writeCandles writes the backtest fixture (100,000 generated one-minute BTC/USDT candles,
// seed 1, the same on every machine) for `backtest run`, once.
func (s *localStack) writeCandles() error {
	if _, err := os.Stat(s.candles); err == nil {
		return nil
	}
	cs, err := candlegen.Generate(candlegen.Options{Seed: 1, Count: 100_000, Symbol: "BTC/USDT"})
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(s.dir, ".candles-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	w := bufio.NewWriter(f)
	if err := backtest.WriteCSV(w, cs); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), s.candles)
}

func (s *localStack) printReady(secretName, webhookURL string) {
	kubectl := s.rel(s.kubectl) + " --kubeconfig " + s.rel(s.kubeconfig)
	fmt.Printf(`
sigops local stack ready

  kubeconfig   %s
  redis        %s
  manager log  %s
  environment  %s (KUBECONFIG, REDIS_ADDR, BASE_URL, MCP_URL, CURL_CA_BUNDLE, SIGOPS_EMAIL, SIGOPS_PASSWORD)

Try:
  export $(cat %s)
  %s get signalbots,paperaccounts,exchangeconnections -A
  %s get secret %s -n %s -o jsonpath='{.data.url}' | base64 -d

Send a signal to the sample bot %s/%s (paper trading on a simulated market):
  curl --cacert %s -H 'Content-Type: application/json' \
    -d '{"action":"buy","symbol":"BTCUSDT","size":"10%%"}' \
    %s

Backtest a strategy on the local candle fixture (100,000 one-minute BTC/USDT candles):
  go run ./cmd/backtest run --candles %s --family emaCrossover --fast 12 --slow 26

Dashboard: open %s/dashboard in a browser (trust the self-signed certificate) and log
in as %s with password %s (also in %s as SIGOPS_EMAIL and SIGOPS_PASSWORD).
The sample bot's fills appear on the open Overview page as they happen. Or get a bearer token:
  curl -H 'Content-Type: application/json' -d '{"email":"'$SIGOPS_EMAIL'","password":"'$SIGOPS_PASSWORD'"}' $BASE_URL/api/auth/login

MCP server (MCP_URL): point an MCP client at %s/mcp (streamable HTTP); it finds the
authorization server through the 401 challenge and signs in by OAuth in the browser, or
send that bearer token as "Authorization: Bearer <token>". The certificate is self-signed:
trust %s (Node clients: NODE_EXTRA_CA_CERTS=%s).

Logs: %s, %s, %s, %s, %s, %s.
Ctrl-C stops the stack.
`, s.rel(s.kubeconfig), s.redisShown(), s.rel(s.managerLog), s.rel(s.env),
		s.rel(s.env), kubectl, kubectl, secretName, sampleNamespace,
		sampleNamespace, sampleBot, s.rel(s.certFile), webhookURL,
		s.rel(s.candles), baseURL, demoEmail, s.password, s.rel(s.env),
		mcpURL, s.rel(s.certFile), s.certFile,
		s.rel(s.managerLog), s.rel(s.webhookdLog), s.rel(s.executorLog), s.rel(s.authdLog), s.rel(s.mcpdLog), s.rel(s.kcmLog))
}

// stop stops what start started, newest first: the manager, Redis, the control plane
// (kube-controller-manager, then kube-apiserver and etcd).
func (s *localStack) stop() {
	if s.nginx != nil {
		if err := s.nginx.Stop(stopTimeout); err != nil {
			fmt.Fprintln(os.Stderr, "nginx:", err)
		}
	}
	for _, p := range []*stack.Process{s.mcpd, s.authd, s.webhookd, s.executor} { // in-flight signals finish first
		if p != nil {
			if err := p.Stop(stopTimeout); err != nil {
				fmt.Fprintln(os.Stderr, p.Name+":", err)
			}
		}
	}
	if s.manager != nil {
		if err := s.manager.Stop(stopTimeout); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}
	if s.redis != nil {
		if err := s.redis.Stop(stopTimeout); err != nil {
			fmt.Fprintln(os.Stderr, "redis:", err)
		}
	}
	if s.cluster != nil {
		if err := s.cluster.Stop(stopTimeout); err != nil {
			fmt.Fprintln(os.Stderr, "redis cluster:", err)
		}
	}
	if s.cp != nil {
		if err := s.cp.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "control plane:", err)
		}
	}
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, "error:", err)
	return 1
}

// migrateKeys carries Redis data kept in bin/local by a build whose keys had no hash tags
// over to the current names, before anything reads it; on current data it changes nothing.
func migrateKeys(ctx context.Context, r *stack.Redis) error {
	rdb := r.Client()
	defer rdb.Close()
	report, err := keymigration.Run(ctx, rdb, false)
	if err != nil {
		return fmt.Errorf("migrating the Redis keys: %w", err)
	}
	if n := report.Moved(); n > 0 {
		fmt.Printf("carried %d Redis keys (or entries) over to their hash-tagged names\n", n)
	}
	return nil
}
