package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/sigops/sigops/test/stack"
)

// startDataPlane starts the executor (simulated market, paper trading), webhookd behind
// nginx, and nginx as the single HTTPS origin https://127.0.0.1:8443 with a self-signed
// certificate, routing /api/webhooks/ to webhookd as config/ingress does.
func (s *localStack) startDataPlane(ctx context.Context) error {
	bins := map[string]string{}
	for _, name := range []string{"executor", "webhookd"} {
		fmt.Printf("building %s...\n", name)
		bin, err := stack.Build(ctx, s.root, name)
		if err != nil {
			return err
		}
		bins[name] = bin
	}
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
		Args: []string{"--redis-addr=" + s.redis.Addr, "--market-data=simulated", "--metrics-bind-address=" + execMetrics,
			"--master-key-file=" + s.masterKey},
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
		Args: []string{"--redis-addr=" + s.redis.Addr, "--listen=" + hookAddr, "--metrics-bind-address=" + hookMetrics,
			"--trusted-proxies=127.0.0.1/32"},
		ReadyURL: "http://" + hookMetrics + "/readyz",
	}); err != nil {
		return err
	}

	if err := os.MkdirAll(filepath.Dir(s.certFile), 0o700); err != nil {
		return err
	}
	if err := stack.SelfSignedCert(s.certFile, s.keyFile); err != nil {
		return err
	}
	fmt.Printf("starting nginx on %s (certificate: %s)\n", originAddr, s.rel(s.certFile))
	s.nginx, err = stack.StartNginx(ctx, stack.NginxOptions{
		Listen: originAddr, Dir: s.nginxDir, CertFile: s.certFile, KeyFile: s.keyFile, LogFile: s.nginxLog,
		Routes: map[string]string{"/api/webhooks/": hookAddr},
	})
	return err
}

// originAddr is where nginx serves {base_url}.
const originAddr = "127.0.0.1:8443"
