package dashboard

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"

	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/events"
)

// keepAlive is how often an idle event stream gets a comment line, so proxies and load
// balancers do not close it.
const keepAlive = 20 * time.Second

// handleEvents is the live-update stream of a page (Server-Sent Events): one "change" event
// per change to one of the viewer's bots (a result stored: a fill, a failure, a position
// opened or closed; a pause or a resume) or to the viewer's approvals (kind "approval"),
// from whichever executor or replica made it. The page re-reads the parts that show that
// bot, or its approvals; "resync" asks it to re-read everything.
func (d *Dashboard) handleEvents(w http.ResponseWriter, r *http.Request) {
	fl, ok := w.(http.Flusher)
	if !ok {
		d.apiFail(w, http.StatusInternalServerError, "INTERNAL_ERROR", "streaming unsupported")
		return
	}
	v := viewerOf(r)
	owned := newOwnedSet(d, v.User.Email)
	owned.userID = v.User.ID
	if err := owned.load(r); err != nil {
		d.apiError(w, err)
		return
	}
	l := d.o.Hub.Listen(owned.accept)
	defer l.Close()

	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: pass events through at once
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write([]byte("retry: 2000\n\n"))
	fl.Flush()
	tick := time.NewTicker(keepAlive)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			_, _ = w.Write([]byte(": keep-alive\n\n"))
		case ev := <-l.C:
			if ev.Kind == events.KindBot && !owned.has(r.Context(), ev.BotID) {
				continue // another user's bot
			}
			data, _ := json.Marshal(ev)
			name := "change"
			if ev.Kind == events.KindResync {
				name = "resync"
			}
			_, _ = w.Write([]byte("event: " + name + "\ndata: "))
			_, _ = w.Write(data)
			_, _ = w.Write([]byte("\n\n"))
		}
		fl.Flush()
	}
}

// ownedSet is the IDs of the viewer's bots, read when the stream opens. A bot event for an
// ID not in it (a bot created since, by this user or anyone) passes the hub's quick filter
// and is checked against Redis on the stream's own goroutine, never on the hub's.
type ownedSet struct {
	d     *Dashboard
	owner string
	mu    sync.RWMutex
	ids   map[string]bool
	// userID is the viewer's: their approvals' events pass.
	userID string
}

func newOwnedSet(d *Dashboard, owner string) *ownedSet {
	return &ownedSet{d: d, owner: owner, ids: map[string]bool{}}
}

func (o *ownedSet) load(r *http.Request) error {
	ids, err := o.d.bots.OwnerBots(r.Context(), o.owner)
	if err != nil {
		return err
	}
	o.mu.Lock()
	for _, id := range ids {
		o.ids[id] = true
	}
	o.mu.Unlock()
	return nil
}

// accept runs on the hub's goroutine: a map lookup, nothing more. Bot events of unknown
// bots pass (has decides).
func (o *ownedSet) accept(ev events.Event) bool {
	o.mu.RLock()
	defer o.mu.RUnlock()
	if ev.Kind == events.KindApproval {
		return ev.UserID == o.userID
	}
	return o.ids[ev.BotID] || ev.Kind == events.KindBot
}

// has reports whether id is the viewer's bot, asking Redis for an ID not seen before.
func (o *ownedSet) has(ctx context.Context, id string) bool {
	o.mu.RLock()
	known := o.ids[id]
	o.mu.RUnlock()
	if known {
		return true
	}
	b, err := o.d.bots.Get(ctx, id)
	if err != nil || !emails.Same(b.Owner, o.owner) {
		return false
	}
	o.mu.Lock()
	o.ids[id] = true
	o.mu.Unlock()
	return true
}
