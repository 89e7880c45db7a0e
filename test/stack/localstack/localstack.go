// Package localstack runs the sigops local stack, as `make run` starts it (hack/localstack
// is its command): the Kubernetes control plane (etcd, kube-apiserver and
// kube-controller-manager), Redis (one server or a three-master Cluster), the manager, the
// executor, webhookd, authd and mcpd behind nginx, and the sample resources.
//
// It behaves like a cluster: every daemon, Redis and nginx runs under a supervisor that
// starts it again with backoff when it exits, as a Deployment or StatefulSet would, and
// the executor, webhookd and mcpd can run as several replicas (nginx balances webhookd and
// mcpd; executors share the queue partitions). Tests start it the same way.
//
// State lives in Options.Dir: the cluster (etcd) and Redis keep their data across runs,
// so bots and paper balances survive a restart; Options.Fresh starts from empty.
package localstack

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/controllers"
	"github.com/sigops/sigops/runtime/backtest"
	"github.com/sigops/sigops/runtime/backtest/candlegen"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/keymigration"
	"github.com/sigops/sigops/runtime/telegram/telegramfake"
	"github.com/sigops/sigops/test/stack"
)

// The -redis topologies.
const (
	RedisSingle   = "single"
	RedisCluster  = "cluster"
	RedisSentinel = "sentinel"
)

// SentinelDownAfter is how long the local Sentinels wait before they deem a server down:
// one second, so that a failover can be watched (config/redis ships 5 s).
const SentinelDownAfter = time.Second

// ClusterNodeTimeout is the local Redis Cluster's node timeout: how long a master that does
// not answer its peers takes to be deemed failing before its replica takes over. Two
// seconds rather than config/redis's five, for the same reason as SentinelDownAfter, and
// not one: a Cluster's failure report travels by gossip between busy processes on two cores.
const ClusterNodeTimeout = 2 * time.Second

// Defaults of Options.
const (
	// DefaultRedisPort is the fixed port of the one Redis server (a free one if it is taken).
	DefaultRedisPort = 6390
	// DefaultPostgresPort is PostgreSQL's fixed port (a free one if it is taken).
	DefaultPostgresPort = 6400
	// Database is the local stack's PostgreSQL database.
	Database = "sigops"
	// DefaultClusterBasePort is the first of the cluster nodes' fixed ports (the three
	// masters, then their three replicas; cluster buses 10000 above each): free ones on the
	// first start if these are taken; a formed cluster keeps its ports, because its
	// nodes.conf records them.
	DefaultClusterBasePort = 6391
	clusterMasters         = 3
	clusterNodes           = 2 * clusterMasters
	// DefaultOriginAddr and DefaultMCPOriginAddr are where nginx serves {base_url} and
	// {mcp_url}.
	DefaultOriginAddr    = "127.0.0.1:8443"
	DefaultMCPOriginAddr = "127.0.0.1:8444"
)

const (
	// The sample bot whose readiness means the stack works.
	SampleNamespace = "default"
	SampleBot       = "demo-btc"
	// DemoEmail owns the samples and is the local stack's login.
	DemoEmail    = "demo@sigops.local"
	readyTimeout = 2 * time.Minute
	stopTimeout  = 30 * time.Second
	// restartGiveUp is how many failed starts in a row make a supervisor give up, and the
	// stack stop: a program that cannot even be run (its port taken, its binary gone).
	restartGiveUp = 5
)

// Options configure Start. Zero values take the defaults.
type Options struct {
	// Root is the repository (config/samples, the binaries' sources); Dir the state
	// directory (bin/local under Root when empty).
	Root, Dir string
	// Fresh deletes the previous cluster and Redis data before starting.
	Fresh bool
	// Redis is RedisSingle (default), RedisCluster or RedisSentinel.
	Redis string
	// Executors, Webhookd and MCPD are the replicas of each (at least 1).
	Executors, Webhookd, MCPD int
	// OriginAddr and MCPOriginAddr are nginx's {base_url} and {mcp_url} origins.
	OriginAddr, MCPOriginAddr string
	// RedisPort places the one server; ClusterPorts the cluster's three masters and then
	// their three replicas (DefaultClusterBasePort and the next five when empty).
	RedisPort    int
	ClusterPorts []int
	// PostgresPort places PostgreSQL (DefaultPostgresPort when 0).
	PostgresPort int
	// Out receives the progress lines and the supervisors' exit and restart reports
	// (os.Stdout when nil).
	Out io.Writer
	// Backoff is the supervisors' first restart delay (stack.DefaultBackoff when 0).
	Backoff time.Duration
	// HistoryRetention is the executors' --history-retention, Redis's hot window of
	// history in front of PostgreSQL (0: the executor's default, 24 hours).
	HistoryRetention time.Duration
}

func (o *Options) defaults() error {
	if o.Root == "" {
		root, err := stack.RepoRoot()
		if err != nil {
			return err
		}
		o.Root = root
	}
	if o.Dir == "" {
		o.Dir = filepath.Join(o.Root, "bin", "local")
	}
	if o.Redis == "" {
		o.Redis = RedisSingle
	}
	if o.Redis != RedisSingle && o.Redis != RedisCluster && o.Redis != RedisSentinel {
		return fmt.Errorf("redis %q: want %s, %s or %s", o.Redis, RedisSingle, RedisCluster, RedisSentinel)
	}
	for _, n := range []*int{&o.Executors, &o.Webhookd, &o.MCPD} {
		if *n < 0 {
			return errors.New("replicas cannot be negative")
		}
		*n = max(*n, 1)
	}
	if o.OriginAddr == "" {
		o.OriginAddr = DefaultOriginAddr
	}
	if o.MCPOriginAddr == "" {
		o.MCPOriginAddr = DefaultMCPOriginAddr
	}
	if o.RedisPort == 0 {
		o.RedisPort = DefaultRedisPort
	}
	if o.PostgresPort == 0 {
		o.PostgresPort = DefaultPostgresPort
	}
	if len(o.ClusterPorts) == 0 {
		for i := range clusterNodes {
			o.ClusterPorts = append(o.ClusterPorts, DefaultClusterBasePort+i)
		}
	}
	if len(o.ClusterPorts) != clusterNodes {
		return fmt.Errorf("a local Redis Cluster has %d nodes (three masters, a replica each), not %d", clusterNodes, len(o.ClusterPorts))
	}
	if o.Out == nil {
		o.Out = os.Stdout
	}
	return nil
}

// paths are the files of the local stack, all under Options.Dir.
type paths struct {
	root, cwd, dir                                 string
	kubeconfig, env, etcdDir, redisDir, clusterDir string
	sentinelDir, postgresDir, postgresLog          string
	managerLog, redisLog, samples, kubectl         string
	nginxDir, nginxLog, certFile, keyFile          string
	masterKey, jwtKey, demoPassword, kcmLog        string
	candles, pids                                  string
}

func newPaths(root, dir string) paths {
	cwd, _ := os.Getwd()
	return paths{
		root: root, cwd: cwd, dir: dir,
		kubeconfig: filepath.Join(dir, "kubeconfig"), env: filepath.Join(dir, "env"),
		etcdDir: filepath.Join(dir, "etcd"), redisDir: filepath.Join(dir, "redis"), clusterDir: filepath.Join(dir, "redis-cluster"),
		sentinelDir: filepath.Join(dir, "redis-sentinel"),
		postgresDir: filepath.Join(dir, "postgres"), postgresLog: filepath.Join(dir, "postgres.log"),
		managerLog: filepath.Join(dir, "manager.log"), redisLog: filepath.Join(dir, "redis.log"),
		nginxDir: filepath.Join(dir, "nginx"), nginxLog: filepath.Join(dir, "nginx.log"),
		certFile: filepath.Join(dir, "tls", "cert.pem"), keyFile: filepath.Join(dir, "tls", "key.pem"),
		masterKey: filepath.Join(dir, "master.key"), jwtKey: filepath.Join(dir, "jwt.key"),
		demoPassword: filepath.Join(dir, "demo.password"),
		kcmLog:       filepath.Join(dir, "kube-controller-manager.log"),
		candles:      filepath.Join(dir, "candles-btc-usdt-1m.csv"),
		pids:         filepath.Join(dir, PidsFile),
		samples:      filepath.Join(root, "config", "samples"),
		kubectl:      filepath.Join(stack.AssetsDir(root), "kubectl"),
	}
}

// rel shows a path relative to the working directory when it lies below it.
func (p paths) rel(path string) string {
	if r, err := filepath.Rel(p.cwd, path); err == nil && !strings.HasPrefix(r, "..") {
		return r
	}
	return path
}

// Stack is a running local stack. Stop stops what Start started, newest first.
type Stack struct {
	paths
	o  Options
	cp *stack.ControlPlane
	// redis is the one server or cluster the masters it started, store how every daemon
	// reaches them.
	redis    *stack.Redis
	cluster  *stack.RedisCluster
	sentinel *stack.Replicated
	store    store.Options
	// postgres is the record (history, and later accounts and the wallet).
	postgres *stack.Postgres
	// telegram is the Bot API stand-in notifyd talks to; telegramToken its token's file.
	telegram      *telegramfake.Server
	telegramToken string
	// pgHold holds PostgreSQL's restarts (HoldPostgres).
	pgHold pgHold
	// storeRuns supervise the Redis servers (and Sentinels, first) and PostgreSQL, daemons every
	// daemon's replicas (manager, executors, webhookd, authd, mcpd) in start order, and
	// nginx the front.
	storeRuns []*stack.Supervised
	daemons   []*stack.Supervised
	nginx     *stack.Supervised
	// failure is closed with failErr set at the first failure Failed reports; its
	// watchers start once and live as long as the stack.
	failedOnce sync.Once
	failure    chan struct{}
	failErr    error
	// Password is the demo account's; WebhookURL the sample bot's webhook, Secret its
	// Secret's name.
	Password, WebhookURL, Secret string
	// Client reaches the local cluster.
	Client client.Client
}

// Start starts the local stack and waits until the sample bot is Ready. On an error it
// stops what it had started.
func Start(ctx context.Context, o Options) (s *Stack, err error) {
	if err := o.defaults(); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, err
	}
	s = &Stack{paths: newPaths(o.Root, o.Dir), o: o}
	defer func() {
		if err != nil {
			s.Stop()
			s = nil
		}
	}()
	if o.Fresh {
		for _, d := range []string{s.etcdDir, s.redisDir, s.clusterDir, s.sentinelDir, s.postgresDir} {
			if err := os.RemoveAll(d); err != nil {
				return nil, err
			}
		}
		s.printf("removed the previous cluster, Redis and PostgreSQL data\n")
	}
	_ = os.Remove(s.pids)
	return s, s.start(ctx)
}

func (s *Stack) printf(format string, args ...any) { fmt.Fprintf(s.o.Out, format, args...) }

func (s *Stack) start(ctx context.Context) error {
	s.printf("starting control plane (etcd + kube-apiserver + kube-controller-manager, log: %s)...\n", s.rel(s.kcmLog))
	began := time.Now()
	cp, err := stack.StartControlPlane(stack.ControlPlaneOptions{Root: s.root, Kubeconfig: s.kubeconfig, EtcdDataDir: s.etcdDir,
		ControllerManagerLog: s.kcmLog})
	if err != nil {
		return err
	}
	s.cp = cp
	s.printf("control plane up in %s (kubeconfig: %s)\n", time.Since(began).Round(100*time.Millisecond), s.rel(s.kubeconfig))
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
	if err := s.startPostgres(ctx); err != nil {
		return err
	}
	if err := s.startTelegram(); err != nil {
		return err
	}

	s.printf("building and starting the manager (log: %s)\n", s.rel(s.managerLog))
	bin, err := stack.BuildManager(ctx, s.root)
	if err != nil {
		return err
	}
	d, _, err := stack.ManagerDaemon(stack.ManagerOptions{
		Binary: bin, Kubeconfig: s.kubeconfig, Redis: s.store, BaseURL: s.baseURL(), LogFile: s.managerLog,
		Args: []string{"--master-key-file=" + s.masterKey},
	})
	if err != nil {
		return err
	}
	if _, err := s.supervise(ctx, d); err != nil {
		return err
	}

	if err := s.startDataPlane(ctx); err != nil {
		return err
	}

	s.printf("creating the samples (%s)\n", s.rel(s.samples))
	c, err := stack.NewClient(cp.Config, 50, 100)
	if err != nil {
		return err
	}
	s.Client = c
	objs, err := stack.ReadKustomization(s.samples)
	if err != nil {
		return err
	}
	if err := stack.CreateAll(ctx, c, objs); err != nil {
		return err
	}
	s.printf("waiting for SignalBot %s/%s to be Ready...\n", SampleNamespace, SampleBot)
	key := types.NamespacedName{Namespace: SampleNamespace, Name: SampleBot}
	bot, err := stack.WaitReady(ctx, c, tradingv1.GroupVersion.WithKind("SignalBot"), key, readyTimeout)
	if err != nil {
		return fmt.Errorf("%w (manager log: %s)", err, s.rel(s.managerLog))
	}
	s.Secret, _, _ = unstructured.NestedString(bot.Object, "status", "webhookSecretName")
	if s.Secret == "" {
		s.Secret = SampleBot + "-webhook"
	}
	var secret corev1.Secret
	if err := c.Get(ctx, types.NamespacedName{Namespace: SampleNamespace, Name: s.Secret}, &secret); err != nil {
		return fmt.Errorf("webhook Secret of %s: %w", key, err)
	}
	s.WebhookURL = string(secret.Data[controllers.WebhookSecretKeyURL])

	password, err := os.ReadFile(s.demoPassword)
	if err != nil {
		return err
	}
	s.Password = strings.TrimSpace(string(password))
	env := fmt.Sprintf("KUBECONFIG=%s\nREDIS_ADDR=%s\nDATABASE_URL=%s\nBASE_URL=%s\nMCP_URL=%s\nCURL_CA_BUNDLE=%s\nSIGOPS_EMAIL=%s\nSIGOPS_PASSWORD=%s\nTELEGRAM_API_URL=%s\n",
		s.kubeconfig, s.RedisAddrs()[0], s.postgres.URL, s.baseURL(), s.mcpURL(), s.certFile, DemoEmail, s.Password, s.telegram.URL)
	switch {
	case s.cluster != nil:
		env += "REDIS_CLUSTER_ADDRS=" + strings.Join(s.RedisAddrs(), ",") + "\n"
	case s.sentinel != nil:
		env += "REDIS_SENTINEL_ADDRS=" + strings.Join(s.sentinel.SentinelAddrs(), ",") + "\nREDIS_MASTER_NAME=" + stack.SentinelMaster +
			"\nREDIS_PASSWORD_FILE=" + s.sentinel.PasswordFile() + "\n"
	}
	if err := os.WriteFile(s.env, []byte(env), 0o600); err != nil { // it holds the demo password
		return err
	}
	return s.writeCandles()
}

// baseURL and mcpURL are the public origins nginx serves: authd's discovery documents and
// the OAuth tokens' audience name mcpURL.
func (s *Stack) baseURL() string { return "https://" + s.o.OriginAddr }
func (s *Stack) mcpURL() string  { return "https://" + s.o.MCPOriginAddr }

// BaseURL is {base_url}; CertFile the certificate nginx serves.
func (s *Stack) BaseURL() string  { return s.baseURL() }
func (s *Stack) CertFile() string { return s.certFile }

// Store is how the daemons reach Redis.
func (s *Stack) Store() store.Options { return s.store }

// writeCandles writes the backtest fixture (100,000 generated one-minute BTC/USDT candles,
// seed 1, the same on every machine) for `backtest run`, once.
func (s *Stack) writeCandles() error {
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

// Daemons are the supervised daemons' replicas, nginx last.
func (s *Stack) Daemons() []*stack.Supervised {
	out := append([]*stack.Supervised{}, s.daemons...)
	if s.nginx != nil {
		out = append(out, s.nginx)
	}
	return out
}

// Daemon is the supervised replica of that name ("executor-1", "webhookd"), or nil.
func (s *Stack) Daemon(name string) *stack.Supervised {
	for _, d := range append(s.Daemons(), s.storeRuns...) {
		if d.Name() == name {
			return d
		}
	}
	return nil
}

// Failed delivers why the stack cannot go on: a program that could not be started again
// (its supervisor gave up), or kube-controller-manager exiting (the control plane is not
// supervised: envtest runs etcd and kube-apiserver). Every call gets the failure on a
// channel of its own; the programs are watched once, however often it is called.
func (s *Stack) Failed() <-chan error {
	s.failedOnce.Do(s.watchFailures)
	out := make(chan error, 1)
	go func() {
		<-s.failure
		out <- s.failErr
	}()
	return out
}

// watchFailures starts one watcher per program; the first failure closes s.failure.
func (s *Stack) watchFailures() {
	s.failure = make(chan struct{})
	var once sync.Once
	fail := func(err error) {
		once.Do(func() {
			s.failErr = err
			close(s.failure)
		})
	}
	for _, d := range append(s.Daemons(), s.storeRuns...) {
		go func() {
			<-d.Failed()
			fail(fmt.Errorf("%w; see %s", d.Err(), s.rel(d.LogFile())))
		}()
	}
	go func() {
		<-s.cp.ControllerManager.Done()
		fail(fmt.Errorf("kube-controller-manager exited (%v); see %s", s.cp.ControllerManager.ExitErr(), s.rel(s.kcmLog)))
	}()
}

// Stop stops what Start started, newest first: nginx, the daemons (executors last among
// the data plane, so that in-flight signals finish), the manager, Redis, the control
// plane (kube-controller-manager, then kube-apiserver and etcd).
func (s *Stack) Stop() {
	if s.nginx != nil {
		if err := s.nginx.Stop(stopTimeout); err != nil {
			fmt.Fprintln(os.Stderr, "nginx:", err)
		}
	}
	for i := len(s.daemons) - 1; i >= 0; i-- {
		if err := s.daemons[i].Stop(stopTimeout); err != nil {
			fmt.Fprintln(os.Stderr, s.daemons[i].Name()+":", err)
		}
	}
	// The stores stop after every daemon, Redis (and Sentinels) in start order, then
	// PostgreSQL.
	for _, r := range s.storeRuns {
		if err := r.Stop(stopTimeout); err != nil {
			fmt.Fprintln(os.Stderr, r.Name()+":", err)
		}
	}
	if s.telegram != nil {
		s.telegram.Close()
	}
	if s.cp != nil {
		if err := s.cp.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "control plane:", err)
		}
	}
	_ = os.Remove(s.pids)
}

// migrateKeys carries Redis data kept in bin/local by a build whose keys had no hash tags
// over to the current names, before anything reads it; on current data it changes nothing.
func (s *Stack) migrateKeys(ctx context.Context, r *stack.Redis) error {
	rdb := r.Client()
	defer rdb.Close()
	report, err := keymigration.Run(ctx, rdb, false)
	if err != nil {
		return fmt.Errorf("migrating the Redis keys: %w", err)
	}
	if n := report.Moved(); n > 0 {
		s.printf("carried %d Redis keys (or entries) over to their hash-tagged names\n", n)
	}
	return nil
}
