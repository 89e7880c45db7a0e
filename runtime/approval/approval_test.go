package approval_test

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/approval"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// Approving one order from many places at once (two clicks, two replicas) decides it once,
// counts it once and queues it once; a rejection that loses the race changes nothing.
func TestApproveConcurrently(t *testing.T) {
	_, rdb := storetest.New(t)
	clk := testkit.NewClock(time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC))
	policies := apppolicy.NewPolicies(rdb, clk.Now)
	s := approval.New(rdb, policies, clk.Now)
	ctx := t.Context()
	env := queue.Envelope{SignalID: queue.SignalIDFor("bot-1", "m-00000000-0000-4000-8000-000000000001"), BotID: "bot-1",
		Priority: queue.PriorityStrategyEntry, Source: queue.SourceManual, Signal: json.RawMessage(`{"type":"market","side":"buy","symbol":"BTC/USDT","amount":0.002}`),
		Admitted: map[string]httpapi.Number{"": httpapi.Num(testkit.D("0.002"))}}
	a, err := s.Create(ctx, approval.Approval{SignalID: env.SignalID, UserID: "u1", ClientID: "c1", BotID: "bot-1", Tool: "place_order",
		Notional: httpapi.Num(testkit.D("100")), Envelope: env, Call: apppolicy.Call{UserID: "u1", ClientID: "c1", BotID: "bot-1", Live: true,
			Order: true, Notional: httpapi.Num(testkit.D("100"))}, CreatedAt: clk.Now().UnixMilli(), ExpiresAt: clk.Now().Add(time.Minute).UnixMilli()}, "k1")
	if err != nil || a.State != approval.AwaitingApproval {
		t.Fatalf("create: %+v %v", a, err)
	}
	// The same idempotency key names the same approval.
	again, err := s.Create(ctx, approval.Approval{SignalID: "another", UserID: "u1", ClientID: "c1", BotID: "bot-1",
		CreatedAt: clk.Now().UnixMilli(), ExpiresAt: clk.Now().Add(time.Minute).UnixMilli()}, "k1")
	if err != nil || again.SignalID != env.SignalID {
		t.Fatalf("the key's second call: %+v %v", again, err)
	}
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			if i%5 == 4 {
				_, _ = s.Reject(ctx, "u1", env.SignalID)
				return
			}
			_, _ = s.Approve(ctx, "u1", env.SignalID)
		})
	}
	wg.Wait()
	got, err := s.Get(ctx, "u1", env.SignalID)
	if err != nil {
		t.Fatal(err)
	}
	n, err := rdb.XLen(ctx, queue.StreamOf("bot-1", queue.PriorityStrategyEntry)).Result()
	if err != nil {
		t.Fatal(err)
	}
	committed, _ := policies.DayCommitted(ctx, "u1", "c1")
	switch got.State {
	case approval.Approved:
		if n != 1 || !committed.Equal(testkit.D("100")) {
			t.Fatalf("approved: %d queued, %s committed; want 1 and 100", n, committed)
		}
	case approval.Rejected:
		if n != 0 || !committed.IsZero() {
			t.Fatalf("rejected: %d queued, %s committed", n, committed)
		}
	default:
		t.Fatalf("state %s", got.State)
	}
	// Decided, it stays decided: the other decision is refused naming the state.
	_, err = s.Reject(ctx, "u1", env.SignalID)
	if e, ok := errs.As(err); got.State == approval.Approved && (!ok || e.Details["state"] != approval.Approved) {
		t.Fatalf("rejecting an approved order: %v", err)
	}
	// Another user's approval is not found.
	if _, err := s.Approve(ctx, "u2", env.SignalID); err == nil {
		t.Fatal("another user approved it")
	}
}

// An approval waits 5 minutes, or the bot's maxSignalAge when that is shorter.
func TestExpiryFor(t *testing.T) {
	now := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		maxAge int64
		want   time.Duration
	}{{0, 5 * time.Minute}, {60_000, time.Minute}, {600_000, 5 * time.Minute}} {
		if got := approval.ExpiryFor(now, c.maxAge).Sub(now); got != c.want {
			t.Errorf("maxSignalAge %d ms: %s, want %s", c.maxAge, got, c.want)
		}
	}
}
