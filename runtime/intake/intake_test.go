package intake_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/intake"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

const hookID = "0b9f8e2c-3c1e-4b7a-9d5e-1f2a3b4c5d6e"

var hookHash = registry.HashWebhookID(hookID)

func activeBot(id string) registry.Bot {
	return registry.Bot{ID: id, Name: "b", Owner: "a@x.io", Market: "spot", Availability: "active",
		WebhookEnabled: true, RateLimit: registry.Limit{PerMinute: 60, Burst: 10}, PositionSize: "10%", Leverage: 1}
}

func setup(t *testing.T, b registry.Bot) (*intake.Intake, redis.UniversalClient, *registry.Registry) {
	t.Helper()
	_, rdb := storetest.New(t)
	reg := registry.New(rdb)
	if err := reg.Project(context.Background(), b, hookHash); err != nil {
		t.Fatal(err)
	}
	return intake.New(rdb), rdb, reg
}

var serial int

func req(now time.Time) intake.Request {
	serial++
	return intake.Request{WebhookHash: hookHash, SignalID: fmt.Sprintf("sig-%d", serial), Priority: queue.PriorityWebhook,
		Signal: json.RawMessage(`{"action":"buy","symbol":"BTC/USDT"}`), ReceivedAt: now, ReplyTo: "reply-1"}
}

func code(err error) errs.Code {
	if err == nil {
		return ""
	}
	return errs.CodeOf(err)
}

func TestAdmitQueuesWithBotID(t *testing.T) {
	ctx := context.Background()
	in, rdb, _ := setup(t, activeBot("bot-1"))
	now := time.UnixMilli(1_800_000_000_000)
	r := req(now)
	var heard []string
	r.Listen = func(id string) { heard = append(heard, id) }
	adm, err := in.Admit(ctx, r)
	// The ID is queued placed in the bot's partition, and the listener hears that ID.
	placed := queue.SignalIDFor("bot-1", r.SignalID)
	if err != nil || adm.BotID != "bot-1" || adm.SignalID != placed || adm.Duplicate {
		t.Fatalf("admit = %+v, %v; want signal %s", adm, err, placed)
	}
	if !queue.InBotPartition("bot-1", adm.SignalID) || len(heard) != 1 || heard[0] != placed {
		t.Fatalf("signal %s (partition %d, bot's %d), heard %v", adm.SignalID, store.SignalPartition(adm.SignalID),
			store.PartitionOf("bot-1"), heard)
	}
	stream := store.QueueStream(queue.PartitionOf("bot-1"), int(queue.PriorityWebhook))
	msgs, err := rdb.XRange(ctx, stream, "-", "+").Result()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("stream %s: %v, %v", stream, msgs, err)
	}
	var env queue.Envelope
	if err := json.Unmarshal([]byte(msgs[0].Values[queue.EnvelopeField].(string)), &env); err != nil {
		t.Fatal(err)
	}
	if env.BotID != "bot-1" || env.SignalID != placed || env.Priority != queue.PriorityWebhook || env.Source != "webhook" ||
		env.ReceivedAt != now.UnixMilli() || env.ReplyTo != "reply-1" || string(env.Signal) != `{"action":"buy","symbol":"BTC/USDT"}` {
		t.Fatalf("envelope = %+v", env)
	}
}

func TestGates(t *testing.T) {
	ctx := context.Background()
	now := time.UnixMilli(1_800_000_000_000)
	cases := []struct {
		name   string
		mutate func(*registry.Bot)
		pause  map[string]any
		needs  bool
		want   errs.Code
	}{
		{"webhook disabled", func(b *registry.Bot) { b.WebhookEnabled = false }, nil, false, errs.WebhookDisabled},
		{"bot disabled", func(b *registry.Bot) {
			b.Availability, b.DisabledCode, b.DisabledReason = "disabled", registry.DisabledAccountMissing, "PaperAccountNotFound"
		}, nil, false, errs.BotDisabled},
		{"owner mismatch disabled", func(b *registry.Bot) {
			b.Availability, b.DisabledCode, b.DisabledReason = "disabled", registry.DisabledOwnerMismatch, "AccountOwnerMismatch"
		}, nil, false, errs.BotDisabled},
		{"exchange disconnected", func(b *registry.Bot) {
			b.Availability, b.DisabledCode, b.DisabledReason = "disabled", registry.DisabledExchangeDisconnected, "ExchangeConnectionNotReady"
		}, nil, false, errs.ExchangeDisconnected},
		{"suspended", func(b *registry.Bot) { b.Availability, b.PausedReason = "paused", "Manual" }, nil, false, errs.BotPaused},
		{"errors pause", nil, map[string]any{"pause": "Errors", "pauseUntil": "0"}, false, errs.BotPaused},
		{"risk pause running", nil, map[string]any{"pause": "Risk", "pauseUntil": now.Add(time.Hour).UnixMilli()}, false, errs.BotPaused},
		{"risk pause over", nil, map[string]any{"pause": "Risk", "pauseUntil": now.Add(-time.Second).UnixMilli()}, false, ""},
		{"missing symbol", nil, nil, true, errs.MissingSymbol},
		{"fixed pair covers it", func(b *registry.Bot) { b.Symbol = "BTC/USDT" }, nil, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := activeBot("bot-g")
			if c.mutate != nil {
				c.mutate(&b)
			}
			in, rdb, _ := setup(t, b)
			if c.pause != nil {
				rdb.HSet(ctx, store.Bot("bot-g"), c.pause)
			}
			r := req(now)
			r.NeedsSymbol = c.needs
			adm, err := in.Admit(ctx, r)
			if code(err) != c.want {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
			if c.want != "" && adm.BotID != "bot-g" {
				t.Fatalf("refusal lost the bot ID: %+v", adm)
			}
			n, _ := rdb.XLen(ctx, store.QueueStream(queue.PartitionOf("bot-g"), 4)).Result()
			if (c.want == "") != (n == 1) {
				t.Fatalf("queued %d signals", n)
			}
		})
	}
}

func TestUnknownRegeneratedAndDeleted(t *testing.T) {
	ctx := context.Background()
	in, _, reg := setup(t, activeBot("bot-d"))
	r := req(time.Now())
	r.WebhookHash = registry.HashWebhookID("11111111-2222-4333-8444-555555555555")
	if _, err := in.Admit(ctx, r); code(err) != errs.InvalidWebhook {
		t.Fatalf("unknown: %v", err)
	}
	// Regenerated: the old hash stops at once.
	if err := reg.Project(ctx, activeBot("bot-d"), registry.HashWebhookID("99999999-2222-4333-8444-555555555555")); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Admit(ctx, req(time.Now())); code(err) != errs.InvalidWebhook {
		t.Fatalf("regenerated: %v", err)
	}
	if err := reg.Remove(ctx, "bot-d", time.Hour); err != nil {
		t.Fatal(err)
	}
	r = req(time.Now())
	r.WebhookHash = registry.HashWebhookID("99999999-2222-4333-8444-555555555555")
	if _, err := in.Admit(ctx, r); code(err) != errs.BotDeleted {
		t.Fatalf("deleted: %v", err)
	}
}

func TestRateLimitBurstThenRate(t *testing.T) {
	ctx := context.Background()
	b := activeBot("bot-r")
	b.RateLimit = registry.Limit{PerMinute: 600, Burst: 3} // one every 100 ms after a burst of 3
	in, _, _ := setup(t, b)
	for i := 0; i < 3; i++ {
		if _, err := in.Admit(ctx, req(time.Now())); err != nil {
			t.Fatalf("burst %d: %v", i, err)
		}
	}
	_, err := in.Admit(ctx, req(time.Now()))
	e, ok := errs.As(err)
	if !ok || e.Code != errs.RateLimited || e.RetryAfter <= 0 || e.RetryAfter > 100*time.Millisecond {
		t.Fatalf("over burst: %v (retry %v)", err, e)
	}
	// After the interval one more is allowed, and only one.
	time.Sleep(e.RetryAfter + 5*time.Millisecond)
	if _, err := in.Admit(ctx, req(time.Now())); err != nil {
		t.Fatalf("after the interval: %v", err)
	}
	if _, err := in.Admit(ctx, req(time.Now())); code(err) != errs.RateLimited {
		t.Fatalf("second after the interval: %v", err)
	}
}

// A request that reaches the script late (held up in a Redis failover, seen in the chaos
// test) is limited by when it runs, not refused as a burst from the past behind requests
// that arrived after it.
func TestRateLimitCountsWhenTheRequestRuns(t *testing.T) {
	ctx := context.Background()
	b := activeBot("bot-late")
	b.RateLimit = registry.Limit{PerMinute: 60000, Burst: 1000} // 1 ms apart, a second's burst
	in, _, _ := setup(t, b)
	if _, err := in.Admit(ctx, req(time.Now())); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Admit(ctx, req(time.Now().Add(-3*time.Second))); err != nil {
		t.Fatalf("a request that arrived 3 s ago, at 2 signals in all: %v", err)
	}
}

func TestIdempotencyAndDedupe(t *testing.T) {
	ctx := context.Background()
	b := activeBot("bot-i")
	b.DedupeWindowMillis = 10_000
	in, rdb, _ := setup(t, b)
	now := time.Now()

	r1 := req(now)
	r1.IdempotencyHash = "k1"
	first, err := in.Admit(ctx, r1)
	if err != nil {
		t.Fatal(err)
	}
	r2 := req(now)
	r2.IdempotencyHash = "k1"
	dup, err := in.Admit(ctx, r2)
	if err != nil || !dup.Duplicate || dup.SignalID != first.SignalID {
		t.Fatalf("same key: %+v, %v", dup, err)
	}

	r3 := req(now)
	r3.BodyHash = "body-a"
	a, _ := in.Admit(ctx, r3)
	r4 := req(now)
	r4.BodyHash = "body-a"
	again, err := in.Admit(ctx, r4)
	if err != nil || !again.Duplicate || again.SignalID != a.SignalID {
		t.Fatalf("same body: %+v, %v", again, err)
	}
	r5 := req(now)
	r5.BodyHash = "body-b"
	if other, err := in.Admit(ctx, r5); err != nil || other.Duplicate {
		t.Fatalf("other body: %+v %v", other, err)
	}
	ttl := rdb.PTTL(ctx, store.Dedupe("bot-i", "body-a")).Val()
	if ttl <= 0 || ttl > 10*time.Second {
		t.Fatalf("dedupe ttl = %v", ttl)
	}
	if n := rdb.XLen(ctx, store.QueueStream(queue.PartitionOf("bot-i"), 4)).Val(); n != 3 {
		t.Fatalf("queued %d, want 3 (duplicates are not queued)", n)
	}
}

func TestDedupeOffByDefault(t *testing.T) {
	ctx := context.Background()
	in, _, _ := setup(t, activeBot("bot-o"))
	for i := 0; i < 2; i++ {
		r := req(time.Now())
		r.BodyHash = "same"
		if adm, err := in.Admit(ctx, r); err != nil || adm.Duplicate {
			t.Fatalf("dedupe applied with window 0: %+v %v", adm, err)
		}
	}
}

func BenchmarkAdmit(b *testing.B) {
	ctx := context.Background()
	bot := activeBot("bot-bench")
	bot.RateLimit = registry.Limit{PerMinute: 6000, Burst: 1000}
	_, rdb := storetest.New(b)
	if err := registry.New(rdb).Project(ctx, bot, hookHash); err != nil {
		b.Fatal(err)
	}
	in := intake.New(rdb)
	r := req(time.Now())
	for b.Loop() {
		r.ReceivedAt = r.ReceivedAt.Add(10 * time.Millisecond) // a clock that keeps the limiter open
		if _, err := in.Admit(ctx, r); err != nil {
			b.Fatal(err)
		}
	}
}

// The first signal of a webhook reads its route; every later one is the script alone: one
// command, one round trip.
func TestOneRoundTripOnceTheRouteIsKnown(t *testing.T) {
	ctx := context.Background()
	in, rdb, _ := setup(t, activeBot("bot-1rt"))
	trips := &storetest.Trips{}
	rdb.AddHook(trips)
	now := time.UnixMilli(1_800_000_000_000)
	if _, err := in.Admit(ctx, req(now)); err != nil {
		t.Fatal(err)
	}
	if got := trips.Take(); len(got) < 2 || got[0] != "hmget" {
		t.Fatalf("first signal's round trips %v; want the route read, then the script", got)
	}
	for i := range 3 {
		if _, err := in.Admit(ctx, req(now)); err != nil {
			t.Fatal(err)
		}
		if got := trips.Take(); !slices.Equal(got, []string{"evalsha"}) {
			t.Fatalf("signal %d's round trips %v; want one, the script", i+2, got)
		}
	}
}

// A remembered route is checked on every use: a regenerated webhook's old URL and a deleted
// bot's URL stop working the moment the projection changes, on an Intake that admitted
// through them before.
func TestRememberedRoutesFollowTheProjection(t *testing.T) {
	ctx := context.Background()
	in, rdb, reg := setup(t, activeBot("bot-m"))
	now := time.UnixMilli(1_800_000_000_000)
	if _, err := in.Admit(ctx, req(now)); err != nil {
		t.Fatal(err)
	}
	newHash := registry.HashWebhookID("99999999-2222-4333-8444-555555555556")
	if err := reg.Project(ctx, activeBot("bot-m"), newHash); err != nil {
		t.Fatal(err)
	}
	if adm, err := in.Admit(ctx, req(now)); code(err) != errs.InvalidWebhook {
		t.Fatalf("regenerated, old URL: %+v, %v", adm, err)
	}
	r := req(now)
	r.WebhookHash = newHash
	if _, err := in.Admit(ctx, r); err != nil {
		t.Fatalf("regenerated, new URL: %v", err)
	}
	if err := reg.Remove(ctx, "bot-m", time.Hour); err != nil {
		t.Fatal(err)
	}
	r = req(now)
	r.WebhookHash = newHash
	if adm, err := in.Admit(ctx, r); code(err) != errs.BotDeleted || adm.BotID != "bot-m" {
		t.Fatalf("deleted: %+v, %v", adm, err)
	}
	if n := rdb.XLen(ctx, queue.StreamOf("bot-m", queue.PriorityWebhook)).Val(); n != 2 {
		t.Fatalf("queued %d, want 2", n)
	}
}

// A remembered route that has come to lead to another bot: the first try is stale and
// queues nothing, the second queues the signal under its ID placed for the bot found then,
// and the listener's last call names that ID.
func TestListenHearsTheIDOfTheTryThatQueues(t *testing.T) {
	ctx := context.Background()
	in, rdb, reg := setup(t, activeBot("bot-m"))
	now := time.UnixMilli(1_800_000_000_000)
	if _, err := in.Admit(ctx, req(now)); err != nil {
		t.Fatal(err)
	}
	// The webhook hash moves from bot-m to bot-n: a bot in another partition, so that the
	// two placements differ.
	other := "bot-n"
	for i := 0; store.PartitionOf(other) == store.PartitionOf("bot-m"); i++ {
		other = fmt.Sprintf("bot-n%d", i)
	}
	if err := reg.Project(ctx, activeBot("bot-m"), registry.HashWebhookID("99999999-2222-4333-8444-555555555556")); err != nil {
		t.Fatal(err)
	}
	if err := reg.Project(ctx, activeBot(other), hookHash); err != nil {
		t.Fatal(err)
	}
	r := req(now)
	var heard []string
	r.Listen = func(id string) { heard = append(heard, id) }
	adm, err := in.Admit(ctx, r)
	want := queue.SignalIDFor(other, r.SignalID)
	if err != nil || adm.BotID != other || adm.SignalID != want {
		t.Fatalf("admit = %+v, %v; want %s for %s", adm, err, want, other)
	}
	if len(heard) != 2 || heard[0] != queue.SignalIDFor("bot-m", r.SignalID) || heard[1] != want {
		t.Fatalf("heard %v; want the placement for bot-m, then %s", heard, want)
	}
	if n := rdb.XLen(ctx, queue.StreamOf(other, queue.PriorityWebhook)).Val(); n != 1 {
		t.Fatalf("queued %d for %s, want 1", n, other)
	}
}
