package executor_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/intake"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// Driven to its memory limit by signals, Redis refuses new ones at the intake (503,
// SERVICE_UNAVAILABLE) before it is full, and every signal it accepted is executed and
// answered: the headroom above the watermark holds their bookings and results.
func TestAcceptedSignalsAreAnsweredAtTheMemoryLimit(t *testing.T) {
	h := newHarness(t, func(b *registry.Bot) { b.RateLimit = registry.Limit{PerMinute: 60000, Burst: 1000} })
	h.px.set(exchange.Spot, "BTC/USDT", "60000")
	used, err := storetest.UsedMemory(h.ctx, h.rdb)
	if err != nil {
		t.Fatal(err)
	}
	// Room for a few thousand fills above what Redis holds now; the guard reads often
	// enough that what it admits between two readings fits in the headroom.
	limit := used + 12<<20
	if err := storetest.ConfigSet(h.ctx, h.rdb, "maxmemory", fmt.Sprint(limit)); err != nil {
		t.Fatal(err)
	}
	guard := store.NewMemoryGuard(h.rdb, store.MemoryOptions{Headroom: 0.15, Refresh: 5 * time.Millisecond})
	in := intake.New(h.rdb).WithMemoryGuard(guard)
	symbols := signal.NewSymbols(paper.Symbols())

	var accepted []string
	refused := 0
	for i := 0; refused < 50; i++ {
		if i > 20000 {
			t.Fatalf("no refusal after %d signals; Redis at %+v", i, guard.Reading())
		}
		h.now = h.now.Add(time.Millisecond)
		body := `{"action":"buy","symbol":"BTCUSDT","size":"0.001"}`
		if i%2 == 1 {
			body = `{"action":"close","symbol":"BTCUSDT"}`
		}
		r, err := intake.NewRequest([]byte(body), symbols, "", h.now)
		if err != nil {
			t.Fatal(err)
		}
		// The bot's rate limit runs on Redis's clock, which here moves far slower than the
		// signals: it is not what this test is about, so its state is cleared each time.
		h.rdb.Del(h.ctx, store.RateLimit(h.bot.ID))
		adm, err := in.AdmitBot(h.ctx, h.bot.ID, r)
		if e, ok := errs.As(err); ok && e.Code == errs.ServiceUnavailable {
			if e.RetryAfter <= 0 {
				t.Fatalf("a memory refusal without Retry-After: %+v", e)
			}
			refused++
			continue
		}
		if err != nil {
			t.Fatalf("signal %d: %v (Redis at %+v)", i, err, guard.Reading())
		}
		accepted = append(accepted, adm.SignalID)
		// The executor takes what was queued, as its consumer would.
		for _, p := range []queue.Priority{queue.PriorityWebhook, queue.PriorityManualClose} {
			msgs, err := h.rdb.XRange(h.ctx, queue.StreamOf(h.bot.ID, p), "-", "+").Result()
			if err != nil {
				t.Fatal(err)
			}
			for _, m := range msgs {
				var env queue.Envelope
				if err := json.Unmarshal([]byte(m.Values[queue.EnvelopeField].(string)), &env); err != nil {
					t.Fatal(err)
				}
				if err := h.ex.Handle(h.ctx, env); err != nil {
					t.Fatalf("an accepted signal could not be executed (%d accepted, Redis at %+v): %v", len(accepted), guard.Reading(), err)
				}
				h.rdb.XDel(h.ctx, queue.StreamOf(h.bot.ID, p), m.ID)
			}
		}
	}
	// Every accepted signal has its one result; the refused ones were never queued.
	missing := 0
	for _, id := range accepted {
		st, err := queue.GetResult(h.ctx, h.rdb, id)
		if err != nil {
			t.Fatal(err)
		}
		if !st.Found {
			missing++
		}
	}
	r := guard.Reading()
	t.Logf("%d signals accepted and answered, then %d refused at %d of %d bytes (%.1f %%)", len(accepted), refused, r.Used, r.Max,
		100*float64(r.Used)/float64(r.Max))
	if missing > 0 || len(accepted) < 100 {
		t.Fatalf("%d of %d accepted signals have no result", missing, len(accepted))
	}
	if r.Used >= r.Max {
		t.Fatalf("Redis reached its limit: %+v", r)
	}
}
