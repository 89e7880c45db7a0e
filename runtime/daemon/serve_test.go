package daemon_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/daemon"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// Serve answers on both servers, and on cancel lets an in-flight request finish.
func TestServeAndGracefulShutdown(t *testing.T) {
	apiAddr, opsAddr := freeAddr(t), freeAddr(t)
	release := make(chan struct{})
	api := &http.Server{Addr: apiAddr, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-release
		_, _ = io.WriteString(w, "done")
	})}
	probes := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	ops := daemon.OpsServer(opsAddr, daemon.NewRegistry(), probes)
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- daemon.Serve(ctx, api, ops, "", "", 5*time.Second) }()

	var resp *http.Response
	testkit.Eventually(t, 2*time.Second, "the ops server answers /metrics", func() (err error) {
		resp, err = http.Get("http://" + opsAddr + "/metrics")
		return err
	})
	if resp.StatusCode != 200 {
		t.Fatalf("metrics: %s", resp.Status)
	}
	resp.Body.Close()

	inflight := make(chan string, 1)
	go func() {
		r, err := http.Get("http://" + apiAddr + "/")
		if err != nil {
			inflight <- err.Error()
			return
		}
		b, _ := io.ReadAll(r.Body)
		r.Body.Close()
		inflight <- string(b)
	}()
	time.Sleep(100 * time.Millisecond) // the request is in the handler
	cancel()
	time.Sleep(100 * time.Millisecond)
	close(release)
	if got := <-inflight; got != "done" {
		t.Fatalf("in-flight request: %q", got)
	}
	if err := <-served; err != nil {
		t.Fatalf("serve: %v", err)
	}
}

// The profiler is served on the ops port only when asked for (--pprof).
func TestOpsServerServesTheProfilerOnlyWhenAsked(t *testing.T) {
	probes := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusOK) })
	for _, on := range []bool{false, true} {
		daemon.SetProfiling(on)
		ops := daemon.OpsServer("127.0.0.1:0", daemon.NewRegistry(), probes)
		srv := httptest.NewServer(ops.Handler)
		resp, err := http.Get(srv.URL + "/debug/pprof/heap?debug=1")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		switch {
		case on && (resp.StatusCode != http.StatusOK || !strings.Contains(string(body), "heap profile")):
			t.Fatalf("--pprof on: /debug/pprof/heap answered %d %.80q, want the heap profile", resp.StatusCode, body)
		case !on && resp.StatusCode != http.StatusNotFound:
			t.Fatalf("--pprof off: /debug/pprof/heap answered %d, want 404", resp.StatusCode)
		}
	}
	daemon.SetProfiling(false)
}
