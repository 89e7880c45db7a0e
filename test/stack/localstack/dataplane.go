package localstack

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sigops/sigops/test/stack"
)

// startDataPlane starts the executors (simulated market, paper trading), the webhookd
// replicas, authd, notifyd and the mcpd replicas, each supervised, then nginx with a self-signed
// certificate as two HTTPS origins: {base_url}, routing the webhook and read API paths to
// webhookd and the rest to authd as config/ingress does, and {mcp_url} for mcpd. nginx
// balances the replicas of webhookd and of mcpd; the executors share the queue partitions
// among themselves.
func (s *Stack) startDataPlane(ctx context.Context) error {
	bins := map[string]string{}
	for _, name := range []string{"executor", "webhookd", "authd", "mcpd", "notifyd"} {
		s.printf("building %s...\n", name)
		bin, err := stack.Build(ctx, s.root, name)
		if err != nil {
			return err
		}
		bins[name] = bin
	}
	// Every daemon and the users command reach the stack's Redis with the same flags.
	redisArgs := s.store.Args()
	baseURL, mcpURL := s.baseURL(), s.mcpURL()

	// Each executor archives the history of the partitions it holds.
	execArgs := []string{"--market-data=simulated", "--master-key-file=" + s.masterKey, "--database-url=" + s.postgres.URL}
	if s.o.HistoryRetention > 0 {
		execArgs = append(execArgs, "--history-retention="+s.o.HistoryRetention.String())
	}
	for i := range s.o.Executors {
		if _, err := s.startReplica(ctx, bins["executor"], "executor", i, s.o.Executors, false,
			append(slices.Clone(execArgs), redisArgs...)); err != nil {
			return err
		}
	}
	var hooks []string
	for i := range s.o.Webhookd {
		listen, err := s.startReplica(ctx, bins["webhookd"], "webhookd", i, s.o.Webhookd, true,
			append([]string{"--trusted-proxies=127.0.0.1/32", "--market-data=simulated",
				// The read API checks authd's tokens: same signing key, issuer and audience.
				"--base-url=" + baseURL, "--jwt-key-file=" + s.jwtKey,
				// The portfolio opens exchange connections to read their balances.
				"--master-key-file=" + s.masterKey,
				// The analytics' equity curve draws the archived trades.
				"--database-url=" + s.postgres.URL}, redisArgs...))
		if err != nil {
			return err
		}
		hooks = append(hooks, listen)
	}

	// authd, and the demo account the samples belong to (tier team, some wallet credit).
	s.printf("creating the demo account %s (tier team)\n", DemoEmail)
	ensure := exec.CommandContext(ctx, bins["authd"], append([]string{"users", "ensure", "--email", DemoEmail, "--name", "Demo",
		"--tier", "team", "--wallet", "100", "--password-file", s.demoPassword, "--database-url=" + s.postgres.URL}, redisArgs...)...)
	if out, err := ensure.CombinedOutput(); err != nil {
		return fmt.Errorf("authd users ensure: %w\n%s", err, out)
	}
	authAddr, err := s.startReplica(ctx, bins["authd"], "authd", 0, 1, true,
		append([]string{"serve", "--trusted-proxies=127.0.0.1/32", "--issuer=" + baseURL, "--mcp-url=" + mcpURL, "--jwt-key-file=" + s.jwtKey,
			// The dashboard's bot pages change SignalBots on the local control plane, its
			// portfolio reads exchange connections with their credentials, as mcpd's tools.
			"--market-data=simulated", "--kubeconfig=" + s.kubeconfig, "--master-key-file=" + s.masterKey,
			// History past Redis's hot window comes from the archive.
			"--database-url=" + s.postgres.URL,
			// Notifications: the stand-in's bot, and receivers on this machine.
			"--telegram-bot-username=" + s.telegram.Username(), "--webhook-loopback-http"}, redisArgs...))
	if err != nil {
		return err
	}
	// notifyd tells the demo account what its bots did, through the Telegram stand-in and
	// webhook receivers on this machine (plain HTTP on the loopback only).
	if _, err := s.startReplica(ctx, bins["notifyd"], "notifyd", 0, 1, false,
		append([]string{"--database-url=" + s.postgres.URL, "--telegram-token-file=" + s.telegramToken,
			"--telegram-api-url=" + s.telegram.URL, "--webhook-loopback-http"}, redisArgs...)); err != nil {
		return err
	}

	var mcps []string
	for i := range s.o.MCPD {
		listen, err := s.startReplica(ctx, bins["mcpd"], "mcpd", i, s.o.MCPD, true,
			append([]string{"--trusted-proxies=127.0.0.1/32", "--market-data=simulated",
				// authd's tokens: same signing key and issuer; OAuth tokens name {mcp_url}/mcp.
				"--base-url=" + baseURL, "--mcp-url=" + mcpURL, "--jwt-key-file=" + s.jwtKey,
				// The bot tools change SignalBots on the local control plane; balances of
				// exchange connections need their credentials.
				"--kubeconfig=" + s.kubeconfig, "--master-key-file=" + s.masterKey, "--database-url=" + s.postgres.URL}, redisArgs...))
		if err != nil {
			return err
		}
		mcps = append(mcps, listen)
	}
	return s.startNginx(ctx, strings.Join(hooks, ","), authAddr, strings.Join(mcps, ","))
}

// startReplica starts replica i of n of a daemon under a supervisor, with metrics and
// probes on a free port and, when it serves, its listener on another (returned). One
// replica is named after the daemon and logs to <daemon>.log; several are <daemon>-<i>.
func (s *Stack) startReplica(ctx context.Context, bin, daemon string, i, n int, serves bool, args []string) (string, error) {
	name := daemon
	if n > 1 {
		name = fmt.Sprintf("%s-%d", daemon, i)
	}
	ops, err := freeAddr()
	if err != nil {
		return "", err
	}
	listen := ""
	if serves {
		if listen, err = freeAddr(); err != nil {
			return "", err
		}
	}
	// authd's subcommand comes first.
	var flags []string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		flags, args = append(flags, args[0]), args[1:]
	}
	flags = append(flags, "--metrics-bind-address="+ops)
	if serves {
		flags = append(flags, "--listen="+listen)
	}
	log := filepath.Join(s.dir, name+".log")
	s.printf("starting %s (log: %s)\n", name, s.rel(log))
	_, err = s.supervise(ctx, stack.DaemonOptions{Name: name, Binary: bin, Args: append(flags, args...), LogFile: log,
		ReadyURL: "http://" + ops + "/readyz"})
	return listen, err
}

// supervise starts a daemon, waits until it is ready and restarts it whenever it exits,
// reporting each exit and restart on Out.
func (s *Stack) supervise(ctx context.Context, d stack.DaemonOptions) (*stack.Supervised, error) {
	sup, err := stack.Supervise(ctx, s.supervision(d, s.o.Backoff))
	if err != nil {
		return nil, err
	}
	s.daemons = append(s.daemons, sup)
	s.writePids()
	return sup, nil
}

// supervision is how the stack supervises every program: reports on Out, the given first
// backoff, giving up after restartGiveUp failed starts, and the pids file rewritten at
// every restart.
func (s *Stack) supervision(d stack.DaemonOptions, backoff time.Duration) stack.SupervisedOptions {
	return stack.SupervisedOptions{DaemonOptions: d, Logf: s.reportf, Backoff: backoff,
		MaxStartFailures: restartGiveUp, OnStart: func(*stack.Supervised) { s.writePids() }}
}

// reportf writes a supervisor's report as one line on Out.
func (s *Stack) reportf(format string, args ...any) {
	s.printf("%s\n", fmt.Sprintf(format, args...))
}

// startNginx serves {base_url} and {mcp_url}, supervised like the daemons.
func (s *Stack) startNginx(ctx context.Context, hooks, authAddr, mcps string) error {
	if err := os.MkdirAll(filepath.Dir(s.certFile), 0o700); err != nil {
		return err
	}
	if err := stack.SelfSignedCert(s.certFile, s.keyFile); err != nil {
		return err
	}
	s.printf("starting nginx on %s and %s (certificate: %s)\n", s.o.OriginAddr, s.o.MCPOriginAddr, s.rel(s.certFile))
	o := stack.NginxOptions{
		Listen: s.o.OriginAddr, Dir: s.nginxDir, CertFile: s.certFile, KeyFile: s.keyFile, LogFile: s.nginxLog,
		Routes: map[string]string{
			"/api/webhooks/": hooks,
			// webhookd's read API; nginx picks the longest prefix, so /api/user/portfolio
			// goes to webhookd and the rest of /api/user/ to authd.
			"/api/charts/": hooks, "/api/botsvc/": hooks, "/api/user/portfolio": hooks, "/api/openapi.json": hooks,
			// authd: discovery, OAuth, logins, identity and the dashboard pages.
			"/.well-known/": authAddr, "/api/oauth/": authAddr, "/api/auth/": authAddr, "/api/user/": authAddr,
			"/oauth/": authAddr, "/login": authAddr, "/logout": authAddr, "/dashboard": authAddr,
			// The dashboard's internal API (live events, chart data) and its static files.
			"/api/dashboard/": authAddr, "/static/": authAddr,
		},
		// {mcp_url}: its own origin, as config/ingress would give it its own host: the MCP
		// endpoint and its protected resource metadata (the 401 challenge names it).
		Origins: []stack.NginxOrigin{{Listen: s.o.MCPOriginAddr, Routes: map[string]string{
			"/mcp": mcps, "/.well-known/oauth-protected-resource": mcps,
		}}},
	}
	n, err := stack.StartNginx(ctx, o)
	if err != nil {
		return err
	}
	s.nginx = stack.SuperviseProcess(n.Process, s.supervision(stack.DaemonOptions{Name: "nginx", LogFile: s.nginxLog}, s.o.Backoff), func() (*stack.Process, error) {
		n, err := stack.StartNginx(context.WithoutCancel(ctx), o)
		if err != nil {
			return nil, err
		}
		return n.Process, nil
	})
	s.writePids()
	return nil
}

func freeAddr() (string, error) {
	port, err := stack.FreePort()
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), err
}
