package notify

import (
	"sort"
	"time"
)

// DefaultWindow is how long a burst of one bot's events of one kind is gathered.
const DefaultWindow = time.Minute

// Message is what one delivery carries: one user's events of one bot and kind (several
// when a burst was gathered), oldest first.
type Message struct {
	Events []Event
}

// Burst gathers bursts: the first event of a user's bot and kind goes at once; the ones
// that follow within Window wait and go together, as one message with their count, when
// the window ends (Due). A hundred fills in a minute are two messages, not a hundred.
// Urgent events always go at once, alone. A Burst is one goroutine's (notifyd's loop).
type Burst struct {
	// Window is DefaultWindow when zero.
	Window time.Duration
	open   map[burstKey]*burst
}

type burstKey struct {
	user, bot string
	kind      Kind
}

type burst struct {
	until   time.Time
	waiting []Event
}

// Add takes e at now and returns the message to send at once, if any.
func (b *Burst) Add(e Event, now time.Time) *Message {
	if e.Kind.Urgent() {
		return &Message{Events: []Event{e}}
	}
	if b.open == nil {
		b.open = map[burstKey]*burst{}
	}
	k := burstKey{e.User, e.BotID + "\x00" + e.Connection, e.Kind}
	if g, ok := b.open[k]; ok && now.Before(g.until) {
		g.waiting = append(g.waiting, e)
		return nil
	}
	w := b.Window
	if w <= 0 {
		w = DefaultWindow
	}
	b.open[k] = &burst{until: now.Add(w)}
	return &Message{Events: []Event{e}}
}

// Due returns the gathered messages whose window has ended by now, oldest window first,
// and forgets those windows.
func (b *Burst) Due(now time.Time) []Message {
	type due struct {
		end time.Time
		m   Message
	}
	var ready []due
	for k, g := range b.open {
		if now.Before(g.until) {
			continue
		}
		if len(g.waiting) > 0 {
			ready = append(ready, due{g.until, Message{Events: g.waiting}})
		}
		delete(b.open, k)
	}
	sort.Slice(ready, func(i, j int) bool {
		if !ready[i].end.Equal(ready[j].end) {
			return ready[i].end.Before(ready[j].end)
		}
		return ready[i].m.Events[0].ID < ready[j].m.Events[0].ID
	})
	out := make([]Message, len(ready))
	for i, d := range ready {
		out[i] = d.m
	}
	return out
}
