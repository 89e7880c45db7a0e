package stack

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/sigops/sigops/runtime/store"
)

// Build compiles ./cmd/<name> into root/bin/<name>. It builds beside the target and
// renames, so a process still running from that path is not disturbed.
func Build(ctx context.Context, root, name string) (string, error) {
	bin := filepath.Join(root, "bin", name)
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		return "", err
	}
	f, err := os.CreateTemp(filepath.Dir(bin), "."+name+".*")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	_ = f.Close()
	defer os.Remove(tmp) // a no-op after the rename
	cmd := exec.CommandContext(ctx, "go", "build", "-o", tmp, "./cmd/"+name)
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build ./cmd/%s: %w\n%s", name, err, out)
	}
	if err := os.Rename(tmp, bin); err != nil {
		return "", err
	}
	return bin, nil
}

// BuildManager compiles cmd/manager into root/bin/manager.
func BuildManager(ctx context.Context, root string) (string, error) {
	return Build(ctx, root, "manager")
}

// ManagerOptions configure StartManager.
type ManagerOptions struct {
	// Binary is the manager executable (see BuildManager).
	Binary string
	// Kubeconfig is passed as KUBECONFIG.
	Kubeconfig string
	// Redis is how the manager reaches Redis: one server, Sentinels or a Cluster.
	Redis store.Options
	// BaseURL is the public origin written into webhook URLs.
	BaseURL string
	// LogFile receives the manager's stdout and stderr; empty discards them.
	LogFile string
	// Args are extra flags.
	Args []string
	// ReadyTimeout bounds the wait for /readyz; 0 means 60 s.
	ReadyTimeout time.Duration
}

// Manager is a running manager process.
type Manager struct {
	*Process
	// MetricsAddr and ProbeAddr are the host:port of /metrics and of /healthz and /readyz.
	MetricsAddr, ProbeAddr string
}

// StartManager starts the manager with metrics and probes on free loopback ports and waits
// until its /readyz answers 200.
func StartManager(ctx context.Context, o ManagerOptions) (*Manager, error) {
	d, m, err := ManagerDaemon(o)
	if err != nil {
		return nil, err
	}
	if m.Process, err = StartDaemon(ctx, d); err != nil {
		return nil, err
	}
	return m, nil
}

// ManagerDaemon is how StartManager runs the manager, for a caller that supervises it
// (Supervise): its command line and environment, readiness URL and log, with metrics and
// probes on free loopback ports, which the returned Manager (without a process) names.
func ManagerDaemon(o ManagerOptions) (DaemonOptions, *Manager, error) {
	metricsPort, err := FreePort()
	if err != nil {
		return DaemonOptions{}, nil, err
	}
	probePort, err := FreePort()
	if err != nil {
		return DaemonOptions{}, nil, err
	}
	m := &Manager{
		MetricsAddr: net.JoinHostPort("127.0.0.1", strconv.Itoa(metricsPort)),
		ProbeAddr:   net.JoinHostPort("127.0.0.1", strconv.Itoa(probePort)),
	}
	args := append(o.Redis.Args(),
		"--base-url="+o.BaseURL,
		"--metrics-bind-address="+m.MetricsAddr,
		"--health-probe-bind-address="+m.ProbeAddr)
	args = append(args, o.Args...)
	return DaemonOptions{
		Name: "manager", Binary: o.Binary, Args: args, LogFile: o.LogFile,
		Env:      append(withoutEnv(os.Environ(), "KUBECONFIG"), "KUBECONFIG="+o.Kubeconfig),
		ReadyURL: "http://" + m.ProbeAddr + "/readyz", ReadyTimeout: o.ReadyTimeout,
	}, m, nil
}

// waitHTTPOK polls url until it answers 200, the process exits or the timeout passes.
func waitHTTPOK(ctx context.Context, p *Process, url string, timeout time.Duration) error {
	return waitHealthy(ctx, p, &http.Client{Timeout: time.Second}, url, timeout, nil)
}

// waitHealthy polls url with hc until it answers 200 with a body that accept takes (any
// body when accept is nil), the process exits or the timeout passes.
func waitHealthy(ctx context.Context, p *Process, hc *http.Client, url string, timeout time.Duration, accept func([]byte) error) error {
	deadline := time.After(timeout)
	last := "no answer"
	for {
		ok, status, err := probe(ctx, hc, url, accept)
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		last = status
		select {
		case <-p.Done():
			return p.exited()
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline:
			return fmt.Errorf("%s not ready at %s within %s (%s); last output:\n%s", p.Name, url, timeout, last, indent(p.Tail()))
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// probe makes one request; status says why it was not ok. Only a malformed request is an
// error: a refused connection or a bad answer just means "not yet".
func probe(ctx context.Context, hc *http.Client, url string, accept func([]byte) error) (ok bool, status string, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false, "", err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return false, err.Error(), nil
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return false, resp.Status, nil
	}
	if accept == nil {
		return true, "", nil
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return false, err.Error(), nil
	}
	if err := accept(body); err != nil {
		return false, err.Error(), nil
	}
	return true, "", nil
}

func withoutEnv(env []string, key string) []string {
	out := env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, key+"=") {
			out = append(out, kv)
		}
	}
	return out
}
