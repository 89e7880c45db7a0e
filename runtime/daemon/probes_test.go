package daemon_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/daemon"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// status GETs path from srv and returns the status code.
func status(t *testing.T, srv *httptest.Server, path string) int {
	t.Helper()
	resp, err := http.Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// With Redis down the process is still live (/healthz 200: a restart would not bring Redis
// back, and every pod would be restarted at once) but not ready (/readyz 503: the pod leaves
// the Service); once Redis is back it is ready again.
func TestLivenessDoesNotDependOnRedis(t *testing.T) {
	redisSrv, rdb := storetest.NewServer(t)
	probes := daemon.NewProbes()
	probes.Ready("redis", daemon.RedisReady(rdb))
	loop := probes.Loop("a loop", time.Minute)
	srv := httptest.NewServer(daemon.OpsServer("127.0.0.1:0", daemon.NewRegistry(), probes).Handler)
	defer srv.Close()

	if h, r := status(t, srv, "/healthz"), status(t, srv, "/readyz"); h != 200 || r != 200 {
		t.Fatalf("Redis up: /healthz %d, /readyz %d; want 200 and 200", h, r)
	}
	redisSrv.Stop()
	loop.Beat() // the loop goes on through the outage (its Redis calls fail and are retried)
	if h, r := status(t, srv, "/healthz"), status(t, srv, "/readyz"); h != 200 || r != 503 {
		t.Fatalf("Redis down: /healthz %d, /readyz %d; want 200 and 503", h, r)
	}
	if err := redisSrv.Restart(); err != nil {
		t.Fatal(err)
	}
	testkit.Eventually(t, 10*time.Second, "ready again once Redis is back", func() error {
		if r := status(t, srv, "/readyz"); r != 200 {
			return fmt.Errorf("/readyz %d", r)
		}
		return nil
	})
}

// A loop that stops going round fails both probes (the kubelet restarts the pod) until it
// goes round again; a loop that never started fails them too once its bound has passed.
func TestStalledLoopFailsLiveness(t *testing.T) {
	probes := daemon.NewProbes()
	loop := probes.Loop("the lease loop", 50*time.Millisecond)
	last := time.Now()
	probes.Watch("the waiter", time.Hour, func() time.Time { return last })
	srv := httptest.NewServer(probes)
	defer srv.Close()
	if h := status(t, srv, "/healthz"); h != 200 {
		t.Fatalf("fresh loop: /healthz %d, want 200", h)
	}
	time.Sleep(100 * time.Millisecond)
	if h, r := status(t, srv, "/healthz"), status(t, srv, "/readyz"); h != 503 || r != 503 {
		t.Fatalf("stalled loop: /healthz %d, /readyz %d; want 503 and 503", h, r)
	}
	if err := probes.Live(); err == nil || !strings.Contains(err.Error(), "the lease loop") || strings.Contains(err.Error(), "the waiter") {
		t.Fatalf("liveness error %v; want the stalled loop named, and only it", err)
	}
	loop.Beat()
	if h, r := status(t, srv, "/healthz"), status(t, srv, "/readyz"); h != 200 || r != 200 {
		t.Fatalf("loop going round again: /healthz %d, /readyz %d; want 200 and 200", h, r)
	}
	if status(t, srv, "/metrics") != 404 {
		t.Fatal("Probes answers paths other than /healthz and /readyz")
	}
}
