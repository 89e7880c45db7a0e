package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/sigops/sigops/test/stack"
)

// startDataPlane starts the executor (simulated market, paper trading), webhookd, authd and
// mcpd behind nginx, and nginx with a self-signed certificate as two HTTPS origins:
// {base_url} https://127.0.0.1:8443, routing the webhook and read API paths to webhookd and
// the rest to authd as config/ingress does, and {mcp_url} https://127.0.0.1:8444 for mcpd.
func (s *localStack) startDataPlane(ctx context.Context) error {
	bins := map[string]string{}
	for _, name := range []string{"executor", "webhookd", "authd", "mcpd"} {
		fmt.Printf("building %s...\n", name)
		bin, err := stack.Build(ctx, s.root, name)
		if err != nil {
			return err
		}
		bins[name] = bin
	}
	// Every daemon and the users command reach the stack's Redis with the same flags.
	redisArgs := s.store.Args()
	addr := func() (string, error) {
		port, err := stack.FreePort()
		return net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), err
	}
	execMetrics, err := addr()
	if err != nil {
		return err
	}
	fmt.Printf("starting the executor (simulated market; log: %s)\n", s.rel(s.executorLog))
	if s.executor, err = stack.StartDaemon(ctx, stack.DaemonOptions{
		Name: "executor", Binary: bins["executor"], LogFile: s.executorLog,
		Args: append([]string{"--market-data=simulated", "--metrics-bind-address=" + execMetrics,
			"--master-key-file=" + s.masterKey}, redisArgs...),
		ReadyURL: "http://" + execMetrics + "/readyz",
	}); err != nil {
		return err
	}

	hookAddr, err := addr()
	if err != nil {
		return err
	}
	hookMetrics, err := addr()
	if err != nil {
		return err
	}
	fmt.Printf("starting webhookd (log: %s)\n", s.rel(s.webhookdLog))
	if s.webhookd, err = stack.StartDaemon(ctx, stack.DaemonOptions{
		Name: "webhookd", Binary: bins["webhookd"], LogFile: s.webhookdLog,
		Args: append([]string{"--listen=" + hookAddr, "--metrics-bind-address=" + hookMetrics,
			"--trusted-proxies=127.0.0.1/32", "--market-data=simulated",
			// The read API checks authd's tokens: same signing key, issuer and audience.
			"--base-url=" + baseURL, "--jwt-key-file=" + s.jwtKey,
			// The portfolio opens exchange connections to read their balances.
			"--master-key-file=" + s.masterKey}, redisArgs...),
		ReadyURL: "http://" + hookMetrics + "/readyz",
	}); err != nil {
		return err
	}

	// authd, and the demo account the samples belong to (tier team, some wallet credit).
	fmt.Printf("creating the demo account %s (tier team)\n", demoEmail)
	ensure := exec.CommandContext(ctx, bins["authd"], append([]string{"users", "ensure", "--email", demoEmail, "--name", "Demo",
		"--tier", "team", "--wallet", "100", "--password-file", s.demoPassword}, redisArgs...)...)
	if out, err := ensure.CombinedOutput(); err != nil {
		return fmt.Errorf("authd users ensure: %w\n%s", err, out)
	}
	authAddr, err := addr()
	if err != nil {
		return err
	}
	authMetrics, err := addr()
	if err != nil {
		return err
	}
	fmt.Printf("starting authd (log: %s)\n", s.rel(s.authdLog))
	if s.authd, err = stack.StartDaemon(ctx, stack.DaemonOptions{
		Name: "authd", Binary: bins["authd"], LogFile: s.authdLog,
		Args: append([]string{"serve", "--listen=" + authAddr, "--metrics-bind-address=" + authMetrics,
			"--trusted-proxies=127.0.0.1/32", "--issuer=" + baseURL, "--mcp-url=" + mcpURL, "--jwt-key-file=" + s.jwtKey,
			// The dashboard's bot pages change SignalBots on the local control plane, its
			// portfolio reads exchange connections with their credentials, as mcpd's tools.
			"--market-data=simulated", "--kubeconfig=" + s.kubeconfig, "--master-key-file=" + s.masterKey}, redisArgs...),
		ReadyURL: "http://" + authMetrics + "/readyz",
	}); err != nil {
		return err
	}

	mcpAddr, err := addr()
	if err != nil {
		return err
	}
	mcpMetrics, err := addr()
	if err != nil {
		return err
	}
	fmt.Printf("starting mcpd (log: %s)\n", s.rel(s.mcpdLog))
	if s.mcpd, err = stack.StartDaemon(ctx, stack.DaemonOptions{
		Name: "mcpd", Binary: bins["mcpd"], LogFile: s.mcpdLog,
		Args: append([]string{"--listen=" + mcpAddr, "--metrics-bind-address=" + mcpMetrics,
			"--trusted-proxies=127.0.0.1/32", "--market-data=simulated",
			// authd's tokens: same signing key and issuer; OAuth tokens name {mcp_url}/mcp.
			"--base-url=" + baseURL, "--mcp-url=" + mcpURL, "--jwt-key-file=" + s.jwtKey,
			// The bot tools change SignalBots on the local control plane; balances of
			// exchange connections need their credentials.
			"--kubeconfig=" + s.kubeconfig, "--master-key-file=" + s.masterKey}, redisArgs...),
		ReadyURL: "http://" + mcpMetrics + "/readyz",
	}); err != nil {
		return err
	}

	if err := os.MkdirAll(filepath.Dir(s.certFile), 0o700); err != nil {
		return err
	}
	if err := stack.SelfSignedCert(s.certFile, s.keyFile); err != nil {
		return err
	}
	fmt.Printf("starting nginx on %s and %s (certificate: %s)\n", originAddr, mcpOriginAddr, s.rel(s.certFile))
	s.nginx, err = stack.StartNginx(ctx, stack.NginxOptions{
		Listen: originAddr, Dir: s.nginxDir, CertFile: s.certFile, KeyFile: s.keyFile, LogFile: s.nginxLog,
		Routes: map[string]string{
			"/api/webhooks/": hookAddr,
			// webhookd's read API; nginx picks the longest prefix, so /api/user/portfolio
			// goes to webhookd and the rest of /api/user/ to authd.
			"/api/charts/": hookAddr, "/api/botsvc/": hookAddr, "/api/user/portfolio": hookAddr, "/api/openapi.json": hookAddr,
			// authd: discovery, OAuth, logins, identity and the dashboard pages.
			"/.well-known/": authAddr, "/api/oauth/": authAddr, "/api/auth/": authAddr, "/api/user/": authAddr,
			"/oauth/": authAddr, "/login": authAddr, "/logout": authAddr, "/dashboard": authAddr,
			// The dashboard's internal API (live events, chart data) and its static files.
			"/api/dashboard/": authAddr, "/static/": authAddr,
		},
		// {mcp_url}: its own origin, as config/ingress would give it its own host: the MCP
		// endpoint and its protected resource metadata (the 401 challenge names it).
		Origins: []stack.NginxOrigin{{Listen: mcpOriginAddr, Routes: map[string]string{
			"/mcp": mcpAddr, "/.well-known/oauth-protected-resource": mcpAddr,
		}}},
	})
	return err
}

// originAddr is where nginx serves {base_url}, mcpOriginAddr {mcp_url}.
const (
	originAddr    = "127.0.0.1:8443"
	mcpOriginAddr = "127.0.0.1:8444"
)

// demoEmail owns the samples and is the local stack's login.
const demoEmail = "demo@sigops.local"
