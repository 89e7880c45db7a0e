package chaos_test

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/test/stack"
)

// Replicas of each daemon, as config/default runs them (the executor at three so that a
// dead one's partitions are shared by two).
const (
	executors = 3
	webhookds = 2
	mcpds     = 2
)

// chaosStack is the stack the test runs: every process real, started by the test.
type chaosStack struct {
	cp       *stack.ControlPlane
	redis    *stack.Replicated
	manager  *stack.Manager
	executor []*stack.Supervised
	webhookd []*stack.Supervised
	mcpd     []*stack.Supervised
	nginx    *stack.Nginx
	// origin is nginx's {base_url} origin (host:port) in front of the webhookd replicas;
	// roots trust its certificate.
	origin string
	roots  *x509.CertPool
	// ready are the daemons' /readyz URLs by name ("mcpd-0").
	ready map[string]string
}

// startChaosStack starts the control plane, a Sentinel-managed Redis (a primary, two
// replicas, three Sentinels), the manager, and the daemons' replicas under supervisors
// that restart them when killed, with nginx balancing webhookd's.
func startChaosStack(ctx context.Context, t *testing.T, root, dir string) *chaosStack {
	t.Helper()
	s := &chaosStack{ready: map[string]string{}}
	var err error
	if s.cp, err = stack.StartControlPlane(stack.ControlPlaneOptions{Root: root, Kubeconfig: filepath.Join(dir, "kubeconfig")}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.cp.Stop(); err != nil {
			t.Error("stop control plane:", err)
		}
	})
	s.redis = stack.StartReplicatedFor(t, 2)
	redisArgs := store.Options{SentinelAddrs: s.redis.SentinelAddrs(), MasterName: stack.SentinelMaster}
	bins := map[string]string{}
	for _, name := range []string{"manager", "executor", "webhookd", "mcpd"} {
		if bins[name], err = stack.Build(ctx, root, name); err != nil {
			t.Fatal(err)
		}
	}
	if s.manager, err = stack.StartManager(ctx, stack.ManagerOptions{
		Binary: bins["manager"], Kubeconfig: s.cp.Kubeconfig, Redis: redisArgs,
		BaseURL: baseURL, LogFile: filepath.Join(dir, "manager.log"),
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.manager.Stop(30 * time.Second) })

	keyFile := filepath.Join(dir, "jwt.key")
	if err := stack.SecretFile(keyFile); err != nil {
		t.Fatal(err)
	}
	common := append(redisArgs.Args(), "--log-level=WARN", "--market-data=simulated")
	for i := range executors {
		s.executor = append(s.executor, s.supervise(ctx, t, dir, bins["executor"], fmt.Sprintf("executor-%d", i), common, ""))
	}
	var hooks, mcps []string
	for i := range webhookds {
		listen := freeAddr(t)
		s.webhookd = append(s.webhookd, s.supervise(ctx, t, dir, bins["webhookd"], fmt.Sprintf("webhookd-%d", i),
			append(common, "--trusted-proxies=127.0.0.1/32"), listen))
		hooks = append(hooks, listen)
	}
	for i := range mcpds {
		listen := freeAddr(t)
		s.mcpd = append(s.mcpd, s.supervise(ctx, t, dir, bins["mcpd"], fmt.Sprintf("mcpd-%d", i), append(common, "--trusted-proxies=127.0.0.1/32",
			"--base-url="+baseURL, "--mcp-url="+baseURL, "--jwt-key-file="+keyFile, "--kubeconfig="+s.cp.Kubeconfig), listen))
		mcps = append(mcps, listen)
	}
	s.startNginx(ctx, t, dir, strings.Join(hooks, ","), strings.Join(mcps, ","))
	return s
}

// baseURL is the {base_url} the stack is configured with (webhook URLs, token issuer);
// the test reaches nginx by its loopback address.
const baseURL = "https://sigops.chaos"

// supervise starts one replica of a daemon, with metrics and probes on a free port and,
// when it serves (listen not empty), its listener on listen; it is restarted whenever it
// exits.
func (s *chaosStack) supervise(ctx context.Context, t *testing.T, dir, bin, name string, args []string, listen string) *stack.Supervised {
	t.Helper()
	ops := freeAddr(t)
	args = append(append([]string{}, args...), "--metrics-bind-address="+ops)
	if listen != "" {
		args = append(args, "--listen="+listen)
	}
	d, err := stack.Supervise(ctx, stack.SupervisedOptions{
		DaemonOptions: stack.DaemonOptions{Name: name, Binary: bin, Args: args,
			LogFile: filepath.Join(dir, name+".log"), ReadyURL: "http://" + ops + "/readyz"},
		Logf: t.Logf,
	})
	if err != nil {
		t.Fatal(err)
	}
	s.ready[name] = "http://" + ops + "/readyz"
	t.Cleanup(func() {
		if err := d.Stop(30 * time.Second); err != nil {
			t.Error(err)
		}
	})
	return d
}

// startNginx serves {base_url}'s webhook paths from the webhookd replicas and /mcp from
// the mcpd replicas, with a self-signed certificate.
func (s *chaosStack) startNginx(ctx context.Context, t *testing.T, dir, hooks, mcps string) {
	t.Helper()
	cert, key := filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := stack.SelfSignedCert(cert, key); err != nil {
		t.Fatal(err)
	}
	s.origin = freeAddr(t)
	var err error
	if s.nginx, err = stack.StartNginx(ctx, stack.NginxOptions{Listen: s.origin, Dir: filepath.Join(dir, "nginx"),
		CertFile: cert, KeyFile: key, LogFile: filepath.Join(dir, "nginx.log"),
		Routes: map[string]string{"/api/webhooks/": hooks, "/mcp": mcps, "/.well-known/oauth-protected-resource": mcps},
	}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.nginx.Stop(10 * time.Second) })
	pem, err := os.ReadFile(cert)
	if err != nil {
		t.Fatal(err)
	}
	s.roots = x509.NewCertPool()
	s.roots.AppendCertsFromPEM(pem)
}

func freeAddr(t *testing.T) string {
	t.Helper()
	port, err := stack.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}
