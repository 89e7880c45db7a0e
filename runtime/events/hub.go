package events

import (
	"context"
	"log/slog"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/store"
)

// listenerBuffer is how many events a listener may have waiting; one that falls further
// behind gets a single KindResync instead of the events it missed.
const listenerBuffer = 64

// Hub is a replica's one subscription to the event channels, shared by its listeners (the
// open pages), so a thousand open pages cost Redis one subscriber, not a thousand.
type Hub struct {
	rdb    redis.UniversalClient
	logger *slog.Logger

	mu        sync.Mutex
	listeners map[*Listener]struct{}
}

// NewHub returns a hub; Run delivers its events.
func NewHub(rdb redis.UniversalClient, logger *slog.Logger) *Hub {
	if logger == nil {
		logger = slog.Default()
	}
	return &Hub{rdb: rdb, logger: logger, listeners: map[*Listener]struct{}{}}
}

// Listener receives the events its filter accepts, on C.
type Listener struct {
	C      <-chan Event
	c      chan Event
	accept func(Event) bool
	hub    *Hub
	// behind is set when an event was dropped; the next delivery is a KindResync.
	behind bool
}

// Listen registers a listener for the events accept returns true for (KindResync always
// reaches it). accept runs on the hub's goroutine: it must be quick and must not block.
func (h *Hub) Listen(accept func(Event) bool) *Listener {
	c := make(chan Event, listenerBuffer)
	l := &Listener{C: c, c: c, accept: accept, hub: h}
	h.mu.Lock()
	h.listeners[l] = struct{}{}
	h.mu.Unlock()
	return l
}

// Close unregisters the listener.
func (l *Listener) Close() {
	l.hub.mu.Lock()
	delete(l.hub.listeners, l)
	l.hub.mu.Unlock()
}

// Run subscribes until ctx ends. go-redis re-establishes a dropped subscription by itself;
// each (re)subscription is announced to every listener as KindResync, since events
// published in between are gone.
func (h *Hub) Run(ctx context.Context) error {
	channels := []string{store.ResultEvents(), store.BotEvents(), store.ApprovalEvents()}
	sub := h.rdb.Subscribe(ctx, channels...)
	defer sub.Close()
	ch := sub.ChannelWithSubscriptions(redis.WithChannelSize(1024))
	subscribed := 0
	for {
		select {
		case <-ctx.Done():
			return nil
		case m, ok := <-ch:
			if !ok {
				return nil
			}
			switch m := m.(type) {
			case *redis.Subscription:
				if m.Kind != "subscribe" {
					continue
				}
				// The first round of confirmations (one per channel) is the start, every
				// later one a reconnect.
				if subscribed++; subscribed > len(channels) {
					h.deliver(Event{Kind: KindResync})
				}
			case *redis.Message:
				if ev, ok := decode(m.Channel, m.Payload); ok {
					h.deliver(ev)
				} else {
					h.logger.Debug("events: message dropped", "channel", m.Channel)
				}
			}
		}
	}
}

// deliver hands ev to every listener that accepts it, never blocking on a slow one.
func (h *Hub) deliver(ev Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for l := range h.listeners {
		if ev.Kind != KindResync && !l.accept(ev) {
			continue
		}
		out := ev
		if l.behind {
			out = Event{Kind: KindResync}
		}
		select {
		case l.c <- out:
			l.behind = false
		default:
			l.behind = true
		}
	}
}
