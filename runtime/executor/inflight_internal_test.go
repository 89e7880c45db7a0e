package executor

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// claimSendScript, concurrently and with a missing send time, on a real Redis.
func TestClaimSend(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	e := New(Deps{Redis: rdb})
	j := &job{env: queue.Envelope{SignalID: "sig-1", BotID: "bot-1"}, progress: map[string]string{}}
	l := leg{Name: "close:BTC/USDT"}
	const window = 600 * time.Millisecond
	field := prefixSent + l.Name
	stamp := func() int64 {
		t.Helper()
		s, err := rdb.HGet(ctx, store.SignalProgress("bot-1", "sig-1"), field).Result()
		if err != nil {
			t.Fatal(err)
		}
		ms, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return ms
	}

	// No send time stored (a request staged without one): dated now, the whole window left.
	left, err := e.claimSend(ctx, j, l, window)
	if err != nil || left != window {
		t.Fatalf("missing send time: left %s, %v; want the whole window", left, err)
	}
	first := stamp()
	redisNow, err := rdb.Time(ctx).Result()
	if err != nil || redisNow.UnixMilli()-first < 0 || redisNow.UnixMilli()-first > 1000 {
		t.Fatalf("stamp %d is not Redis's time now (%s)", first, redisNow)
	}

	// Inside the window: the rest of it, and nothing stamped.
	time.Sleep(100 * time.Millisecond)
	if left, err = e.claimSend(ctx, j, l, window); err != nil || left <= 0 || left > window-100*time.Millisecond {
		t.Fatalf("inside the window: left %s, %v", left, err)
	}
	if stamp() != first {
		t.Fatal("a refused claim moved the send time")
	}

	// After it: of concurrent retries exactly one claims the send, and re-dates it; the
	// others wait a whole window from that send.
	time.Sleep(time.Until(time.UnixMilli(first).Add(window + 20*time.Millisecond)))
	var wg sync.WaitGroup
	lefts := make([]time.Duration, 8)
	for i := range lefts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			left, err := e.claimSend(ctx, j, l, window)
			if err != nil {
				t.Error(err)
			}
			lefts[i] = left
		}()
	}
	wg.Wait()
	claimed := 0
	for _, left := range lefts {
		switch {
		case left == 0:
			claimed++
		case left < window-200*time.Millisecond:
			t.Errorf("a retry after the claim waits only %s", left)
		}
	}
	if claimed != 1 {
		t.Fatalf("%d retries claimed the send, want 1 (%v)", claimed, lefts)
	}
	if stamp() < first+window.Milliseconds() {
		t.Fatal("the claim did not re-date the send")
	}
}
