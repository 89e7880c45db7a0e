package daemon_test

import (
	"context"
	"io"
	"net"
	"net/http"
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
