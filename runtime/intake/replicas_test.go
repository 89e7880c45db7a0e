package intake_test

import (
	"context"
	"encoding/json"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/intake"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/test/stack"
)

// replicated starts a primary, one replica and three Sentinels, and projects bot (with a
// rate limit no test reaches) through a client of them.
func replicated(t *testing.T, bot string) *stack.Replicated {
	t.Helper()
	r := stack.StartReplicatedFor(t, 1)
	b := activeBot(bot)
	b.RateLimit = registry.Limit{PerMinute: 1_000_000, Burst: 1_000_000}
	if err := registry.New(r.Connect(t, store.Options{})).Project(context.Background(), b, hookHash); err != nil {
		t.Fatal(err)
	}
	return r
}

// ackWithin is the replica wait of the tests' clients: short, as a stopped replica costs it.
var ackWithin = store.Options{ReplicaAckTimeout: 200 * time.Millisecond}

// queued is the IDs of the signals in bot's webhook stream on the server at addr.
func queued(t *testing.T, addr, bot string) map[string]bool {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr})
	defer c.Close()
	msgs, err := c.XRange(context.Background(), queue.StreamOf(bot, queue.PriorityWebhook), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, m := range msgs {
		var env queue.Envelope
		if err := json.Unmarshal([]byte(m.Values[queue.EnvelopeField].(string)), &env); err != nil {
			t.Fatal(err)
		}
		ids[env.SignalID] = true
	}
	return ids
}

// While the replica is stopped a signal is not acknowledged: the intake answers
// ErrNotReplicated (webhookd's 503), and so does its repeat under the same Idempotency-Key
// on another connection, which must not confirm an entry the replica lacks. Once the
// replica is back the repeat is answered with the first signal's ID.
func TestAdmitWaitsForTheReplica(t *testing.T) {
	ctx := context.Background()
	r := replicated(t, "bot-r")
	first, second := intake.New(r.Connect(t, ackWithin)), intake.New(r.Connect(t, ackWithin))
	now := time.Now()
	// A write on each connection while the replica is up, acknowledged.
	for _, in := range []*intake.Intake{first, second} {
		if _, err := in.Admit(ctx, req(now)); err != nil {
			t.Fatalf("with the replica up: %v", err)
		}
	}
	if err := stack.Pause(r.Servers[1], true); err != nil {
		t.Fatal(err)
	}
	sig := req(now)
	sig.IdempotencyHash = "idem-1"
	if adm, err := first.Admit(ctx, sig); !errors.Is(err, store.ErrNotReplicated) {
		t.Fatalf("replica stopped: admission %+v, %v; want ErrNotReplicated", adm, err)
	}
	if adm, err := second.Admit(ctx, sig); !errors.Is(err, store.ErrNotReplicated) {
		t.Fatalf("repeat with the replica stopped: admission %+v, %v; want ErrNotReplicated", adm, err)
	}
	if err := stack.Pause(r.Servers[1], false); err != nil {
		t.Fatal(err)
	}
	adm, err := second.Admit(ctx, sig)
	placed := queue.SignalIDFor("bot-r", sig.SignalID)
	if err != nil || !adm.Duplicate || adm.SignalID != placed {
		t.Fatalf("repeat with the replica back: %+v, %v; want duplicate of %s", adm, err, placed)
	}
	if !queued(t, r.Servers[1].Addr, "bot-r")[placed] {
		t.Errorf("replica lacks %s, acknowledged as queued", placed)
	}
}

// Signals flow while the primary is killed and the Sentinels promote the replica: the
// client follows by itself, and every signal acknowledged before, during or after the
// failover is queued on the new primary. The promoted master has no replica until the old
// primary is back as one (a StatefulSet restarts its pod): until then nothing is
// acknowledged, as a second failover would lose it; then admissions continue.
func TestAcknowledgedSignalsSurviveAFailover(t *testing.T) {
	ctx := context.Background()
	r := replicated(t, "bot-f")
	in := intake.New(r.Connect(t, ackWithin))
	old := r.Servers[0]
	var acked []string
	failures, afterFailover := 0, 0
	var watch chan string
	promoted := ""
	deadline := time.Now().Add(90 * time.Second)
	for afterFailover < 50 {
		if time.Now().After(deadline) {
			t.Fatalf("%d acknowledged, %d after the failover, %d failures: writes did not resume", len(acked), afterFailover, failures)
		}
		actx, cancel := context.WithTimeout(ctx, 3*time.Second)
		adm, err := in.Admit(actx, req(time.Now()))
		cancel()
		if err != nil {
			failures++
			time.Sleep(20 * time.Millisecond)
		} else {
			acked = append(acked, adm.SignalID)
			if promoted != "" {
				afterFailover++
			}
		}
		if watch == nil && len(acked) >= 50 {
			if err := syscall.Kill(old.Pid(), syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			watch = make(chan string, 1)
			go func() {
				addr, _ := r.WaitFailover(ctx, old.Addr)
				watch <- addr
			}()
		}
		if watch != nil && promoted == "" {
			select {
			case promoted = <-watch:
				if promoted == "" {
					t.Fatal("the Sentinels promoted no replica")
				}
				// Alone, the promoted master acknowledges nothing: the client's first
				// tries may still fail on the way to it, then the replica wait fails.
				for refused := false; !refused; {
					adm, err := in.Admit(ctx, req(time.Now()))
					if err == nil {
						t.Fatalf("signal %s acknowledged by the promoted master alone", adm.SignalID)
					}
					refused = errors.Is(err, store.ErrNotReplicated)
					if time.Now().After(deadline) {
						t.Fatalf("no ErrNotReplicated from the promoted master alone: %v", err)
					}
				}
				if err := r.Restart(ctx, 0); err != nil {
					t.Fatal(err)
				}
			default:
			}
		}
	}
	onNew := queued(t, promoted, "bot-f")
	lost := 0
	for _, id := range acked {
		if !onNew[id] {
			lost++
		}
	}
	if lost > 0 {
		t.Fatalf("%d of %d acknowledged signals missing on the new primary %s", lost, len(acked), promoted)
	}
	t.Logf("%d acknowledged, %d failed during the failover, none lost", len(acked), failures)
}
