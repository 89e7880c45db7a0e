package events_test

import (
	"context"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/events"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// receive waits for the next event on l, publishing with publish until one arrives (the
// hub's subscription may still be starting).
func receive(t *testing.T, l *events.Listener, publish func()) events.Event {
	t.Helper()
	deadline := time.After(5 * time.Second)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case ev := <-l.C:
			return ev
		case <-tick.C:
			publish()
		case <-deadline:
			t.Fatal("no event within 5 s")
		}
	}
}

func TestHubDeliversResultsAndPausesToMatchingListeners(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hub := events.NewHub(rdb, nil)
	go func() { _ = hub.Run(ctx) }()

	mine := hub.Listen(func(ev events.Event) bool { return ev.BotID == "bot-a" })
	defer mine.Close()
	all := hub.Listen(func(events.Event) bool { return true })
	defer all.Close()

	ev := receive(t, mine, func() {
		events.PublishResult(ctx, rdb, "bot-b", "sig-b", true)
		events.PublishResult(ctx, rdb, "bot-a", "sig-a", false)
	})
	if ev != (events.Event{Kind: events.KindResult, BotID: "bot-a", SignalID: "sig-a", Success: false}) {
		t.Fatalf("listener of bot-a got %+v", ev)
	}
	// runtime/registry announces a pause change with the bare bot ID.
	for {
		ev := receive(t, all, func() { rdb.Publish(ctx, store.BotEvents(), "bot-c") })
		if ev.Kind == events.KindBot {
			if ev.BotID != "bot-c" {
				t.Fatalf("bot event %+v", ev)
			}
			break
		}
	}
}

// A listener that stops reading is never waited for: its buffer fills, the rest is
// dropped, and the next event it gets is KindResync (read everything again).
func TestSlowListenerGetsResync(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hub := events.NewHub(rdb, nil)
	go func() { _ = hub.Run(ctx) }()
	slow := hub.Listen(func(events.Event) bool { return true })
	defer slow.Close()
	// Wait until the subscription delivers, then overflow the buffer (64).
	receive(t, slow, func() { events.PublishResult(ctx, rdb, "bot", "first", true) })
	for len(slow.C) > 0 {
		<-slow.C
	}
	for i := 0; i < 200; i++ {
		events.PublishResult(ctx, rdb, "bot", "sig", true)
	}
	// Drain what the buffer took; then one more event must arrive as a resync.
	deadline := time.After(5 * time.Second)
	seen := 0
	for {
		select {
		case ev := <-slow.C:
			seen++
			if ev.Kind == events.KindResync {
				if seen <= 64 {
					t.Fatalf("resync after %d events, want it after the full buffer", seen)
				}
				return
			}
		case <-time.After(100 * time.Millisecond):
			events.PublishResult(ctx, rdb, "bot", "later", true)
		case <-deadline:
			t.Fatalf("no resync after %d events", seen)
		}
	}
}
