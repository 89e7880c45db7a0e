package main

import (
	"context"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/queue"
)

// The executor with Redis down: its queue consumer keeps going round (renewals fail and are
// retried), so /healthz stays 200 and the pod is not restarted, while /readyz answers 503.
// When the consumer's loop stops, /healthz fails too.
func TestExecutorProbesWithRedisDown(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close() // nothing listens there: Redis is down
	rdb := redis.NewClient(&redis.Options{Addr: dead, MaxRetries: -1, DialTimeout: 100 * time.Millisecond})
	defer rdb.Close()

	leaseLoopBound = 0 // 10 lease TTLs: 500 ms
	defer func() { leaseLoopBound = time.Minute }()
	qopts := queue.Options{Name: "probe-test", LeaseTTL: 50 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)}
	probes := executorProbes(rdb, &qopts)
	if qopts.OnRound == nil {
		t.Fatal("the consumer's rounds are not watched")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- queue.NewConsumer(rdb, qopts).Run(ctx, func(context.Context, queue.Envelope) error { return nil })
	}()
	srv := httptest.NewServer(opsServer("127.0.0.1:0", probes).Handler)
	defer srv.Close()
	get := func(path string) int {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	// Three times the loop's bound: only its rounds through the outage keep it live.
	for range 3 {
		time.Sleep(500 * time.Millisecond)
		if h, r := get("/healthz"), get("/readyz"); h != 200 || r != 503 {
			t.Fatalf("Redis down: /healthz %d, /readyz %d; want 200 and 503", h, r)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	time.Sleep(600 * time.Millisecond)
	if h := get("/healthz"); h != 503 {
		t.Fatalf("consumer stopped: /healthz %d, want 503", h)
	}
}
