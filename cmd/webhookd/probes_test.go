package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/daemon"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// webhookd with Redis down: the result waiter's loop keeps going round (retrying its
// subscription), so /healthz stays 200 and no pod is restarted for an outage a restart
// cannot fix, while /readyz answers 503 and the pod leaves the Service. When the loop
// stops, /healthz fails.
func TestWebhookdProbesWithRedisDown(t *testing.T) {
	waiterRoundBound = 3 * time.Second
	defer func() { waiterRoundBound = 2 * time.Minute }()
	redisSrv, rdb := storetest.NewServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	waiter, err := queue.NewWaiter(ctx, rdb, "probe-test")
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(daemon.OpsServer("127.0.0.1:0", daemon.NewRegistry(), waiterProbes(rdb, waiter)).Handler)
	defer srv.Close()
	get := func(path string) int {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if h, r := get("/healthz"), get("/readyz"); h != 200 || r != 200 {
		t.Fatalf("Redis up: /healthz %d, /readyz %d; want 200 and 200", h, r)
	}
	redisSrv.Stop()
	// Past twice the loop's bound (each /readyz waits out its failing PINGs too): only the
	// loop's rounds through the outage keep it live.
	for start := time.Now(); time.Since(start) < 2*waiterRoundBound; {
		time.Sleep(time.Second)
		if h, r := get("/healthz"), get("/readyz"); h != 200 || r != 503 {
			t.Fatalf("Redis down: /healthz %d, /readyz %d; want 200 and 503", h, r)
		}
	}
	_ = waiter.Close()
	time.Sleep(waiterRoundBound + 500*time.Millisecond)
	if h := get("/healthz"); h != 503 {
		t.Fatalf("waiter stopped: /healthz %d, want 503", h)
	}
}
