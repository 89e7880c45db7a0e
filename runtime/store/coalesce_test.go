package store_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// Callers that entered the coalescer share one round trip once all of them are waiting;
// each reads its own commands' replies, a missing key (redis.Nil) included.
func TestCoalescerSendsTheRunningCallersTogether(t *testing.T) {
	_, rdb := storetest.New(t)
	trips := &storetest.Trips{}
	rdb.AddHook(trips)
	ctx := t.Context()
	co := store.NewCoalescer(rdb, time.Minute) // only "all waiting" sends here
	const n = 5
	leave := co.Enter(n)
	var wg sync.WaitGroup
	got := make([]string, n)
	for i := range n {
		wg.Go(func() {
			defer leave()
			var set *redis.StatusCmd
			var get *redis.StringCmd
			var missing *redis.StringCmd
			if err := co.Pipelined(ctx, func(p redis.Pipeliner) error {
				set = p.Set(ctx, fmt.Sprintf("co:%d", i), i, 0)
				get = p.Get(ctx, fmt.Sprintf("co:%d", i))
				missing = p.Get(ctx, fmt.Sprintf("co:none:%d", i))
				return nil
			}); err != nil {
				t.Error(err)
				return
			}
			if set.Err() != nil || missing.Err() != redis.Nil {
				t.Errorf("caller %d: %v %v", i, set.Err(), missing.Err())
			}
			got[i] = get.Val()
		})
	}
	wg.Wait()
	for i, v := range got {
		if v != fmt.Sprint(i) {
			t.Fatalf("caller %d read %q", i, v)
		}
	}
	var tr []string
	for _, trip := range trips.Take() {
		if f := strings.Fields(trip)[0]; f != "hello" && f != "client" { // a new connection's handshake
			tr = append(tr, trip)
		}
	}
	if len(tr) != 1 || len(strings.Fields(tr[0])) != 3*n {
		t.Fatalf("round trips: %q, want one of %d commands", tr, 3*n)
	}
}

// A caller that never entered, or the only one running, sends at once; one running caller
// away (on an exchange's API) is not waited for; and a running caller that never queues
// anything holds the others back no longer than the coalescer's longest wait.
func TestCoalescerDoesNotWaitForWhatCannotCome(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := t.Context()
	ping := func(co *store.Coalescer) {
		t.Helper()
		if err := co.Pipelined(ctx, func(p redis.Pipeliner) error { p.Ping(ctx); return nil }); err != nil {
			t.Fatal(err)
		}
	}
	within := func(name string, d time.Duration, fn func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { defer close(done); fn() }()
		select {
		case <-done:
		case <-time.After(d):
			t.Fatalf("%s: still waiting after %v", name, d)
		}
	}
	patient := store.NewCoalescer(rdb, time.Hour)
	within("never entered", 5*time.Second, func() { ping(patient) })
	leave := patient.Enter(1)
	within("alone", 5*time.Second, func() { ping(patient) })
	leave()

	leave = patient.Enter(2)
	back := patient.Away() // the other running caller waits on an exchange
	within("the other away", 5*time.Second, func() { ping(patient) })
	back()
	leave()
	leave()

	quick := store.NewCoalescer(rdb, 20*time.Millisecond)
	leave = quick.Enter(2) // the other never queues
	began := time.Now()
	within("the longest wait", 5*time.Second, func() { ping(quick) })
	if took := time.Since(began); took < 20*time.Millisecond {
		t.Fatalf("sent after %v, before the longest wait", took)
	}
	leave()
	leave()
}

// A script Redis does not know is sent again as EVAL; a failed round trip fails every
// caller of the batch.
func TestCoalescerScriptsAndFailures(t *testing.T) {
	srv, rdb := storetest.New(t)
	ctx := t.Context()
	co := store.NewCoalescer(rdb, 0)
	s := redis.NewScript(`return redis.call('INCRBY', KEYS[1], ARGV[1])`)
	for want := range []int64{2, 4} {
		if err := rdb.ScriptFlush(ctx).Err(); err != nil {
			t.Fatal(err)
		}
		if v, err := co.Script(ctx, s, []string{"co:n"}, 2).Int64(); err != nil || v != int64(2*(want+1)) {
			t.Fatalf("script: %d %v", v, err)
		}
	}

	dead := redis.NewClient(&redis.Options{Addr: srv.Addr, MaxRetries: -1})
	_ = dead.Close()
	broken := store.NewCoalescer(dead, time.Minute)
	leave := broken.Enter(2)
	errs := make(chan error, 2)
	for range 2 {
		go func() {
			defer leave()
			errs <- broken.Pipelined(context.Background(), func(p redis.Pipeliner) error { p.Ping(ctx); return nil })
		}()
	}
	for range 2 {
		if err := <-errs; err == nil {
			t.Fatal("a failed round trip answered nil")
		}
	}
}
