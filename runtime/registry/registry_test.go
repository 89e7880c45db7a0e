package registry_test

import (
	"context"
	"encoding/json"
	"errors"
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
	"github.com/sigops/sigops/runtime/strategy"
)

func bot(id, owner string) registry.Bot {
	return registry.Bot{ID: id, Namespace: "ns", Name: "b-" + id, Owner: owner, Market: "spot",
		PositionSize: "10%", Leverage: 1, Availability: "active", WebhookEnabled: true}
}

func TestProjectResolveAndRegenerate(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	reg := registry.New(rdb)

	h1 := registry.HashWebhookID("11111111-1111-4111-8111-111111111111")
	if err := reg.Project(ctx, bot("uid-1", "a@x.io"), h1); err != nil {
		t.Fatal(err)
	}
	route, err := reg.Resolve(ctx, h1)
	if err != nil || route.BotID != "uid-1" || route.Deleted {
		t.Fatalf("resolve = %+v, %v; want uid-1 live", route, err)
	}
	got, err := reg.Get(ctx, "uid-1")
	if err != nil || got.PositionSize != "10%" || got.Owner != "a@x.io" {
		t.Fatalf("get = %+v, %v", got, err)
	}

	// A new hash (regenerated ID) kills the old one in the same transaction.
	h2 := registry.HashWebhookID("22222222-2222-4222-8222-222222222222")
	if err := reg.Project(ctx, bot("uid-1", "a@x.io"), h2); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Resolve(ctx, h1); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("old hash after regenerate: err = %v, want ErrNotFound", err)
	}
	if route, _ := reg.Resolve(ctx, h2); route.BotID != "uid-1" {
		t.Fatalf("new hash resolves to %q", route.BotID)
	}
}

func TestProjectRefusesWebhookOfAnotherLiveBot(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	reg := registry.New(rdb)
	h := registry.HashWebhookID("33333333-3333-4333-8333-333333333333")
	if err := reg.Project(ctx, bot("uid-a", "a@x.io"), h); err != nil {
		t.Fatal(err)
	}
	if err := reg.Project(ctx, bot("uid-b", "b@x.io"), h); !errors.Is(err, registry.ErrWebhookInUse) {
		t.Fatalf("second bot with same webhook: err = %v, want ErrWebhookInUse", err)
	}
	if route, _ := reg.Resolve(ctx, h); route.BotID != "uid-a" {
		t.Fatalf("route hijacked: %q", route.BotID)
	}
}

func TestRemoveLeavesTombstoneWithTTL(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	reg := registry.New(rdb)
	h := registry.HashWebhookID("44444444-4444-4444-8444-444444444444")
	if err := reg.Project(ctx, bot("uid-1", "Owner@X.io"), h); err != nil {
		t.Fatal(err)
	}
	if err := reg.Remove(ctx, "uid-1", time.Hour); err != nil {
		t.Fatal(err)
	}
	route, err := reg.Resolve(ctx, h)
	if err != nil || !route.Deleted || route.BotID != "uid-1" {
		t.Fatalf("after remove: %+v, %v; want tombstone", route, err)
	}
	if ttl := rdb.TTL(ctx, store.Webhook(h)).Val(); ttl <= 0 || ttl > time.Hour {
		t.Fatalf("tombstone ttl = %v", ttl)
	}
	if _, err := reg.Get(ctx, "uid-1"); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("bot still projected: %v", err)
	}
	if n, _ := reg.Count(ctx); n != 0 {
		t.Fatalf("count = %d", n)
	}
	if ids, _ := reg.OwnerBots(ctx, "owner@x.io"); len(ids) != 0 {
		t.Fatalf("owner index keeps %v", ids)
	}
	// A hash known only from the Secret (never projected) is tombstoned too.
	h2 := registry.HashWebhookID("55555555-5555-4555-8555-555555555555")
	if err := reg.Remove(ctx, "uid-2", time.Hour, h2); err != nil {
		t.Fatal(err)
	}
	if route, _ := reg.Resolve(ctx, h2); !route.Deleted {
		t.Fatal("extra hash not tombstoned")
	}
}

func TestOwnerChangeMovesIndex(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	reg := registry.New(rdb)
	h := registry.HashWebhookID("66666666-6666-4666-8666-666666666666")
	_ = reg.Project(ctx, bot("uid-1", "a@x.io"), h)
	if err := reg.Project(ctx, bot("uid-1", "b@x.io"), h); err != nil {
		t.Fatal(err)
	}
	if ids, _ := reg.OwnerBots(ctx, "a@x.io"); len(ids) != 0 {
		t.Fatalf("old owner keeps %v", ids)
	}
	if ids, _ := reg.OwnerBots(ctx, "b@x.io"); len(ids) != 1 {
		t.Fatalf("new owner has %v", ids)
	}
}

func TestHashWebhookID(t *testing.T) {
	// sha256("abc"), a published test vector.
	if got := registry.HashWebhookID("abc"); got != "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Fatalf("hash = %s", got)
	}
}

// BenchmarkProject is one bot projection (a WATCH/MULTI transaction) against a real Redis.
func BenchmarkProject(b *testing.B) {
	ctx := context.Background()
	_, rdb := storetest.New(b)
	reg := registry.New(rdb)
	bt := bot("uid-bench", "bench@x.io")
	h := registry.HashWebhookID("77777777-7777-4777-8777-777777777777")
	for b.Loop() {
		if err := reg.Project(ctx, bt, h); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkResolve is the webhook lookup webhookd will do on every signal.
func BenchmarkResolve(b *testing.B) {
	ctx := context.Background()
	_, rdb := storetest.New(b)
	reg := registry.New(rdb)
	h := registry.HashWebhookID("88888888-8888-4888-8888-888888888888")
	if err := reg.Project(ctx, bot("uid-bench", "bench@x.io"), h); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := reg.Resolve(ctx, h); err != nil {
			b.Fatal(err)
		}
	}
}

// A projection interrupted after any of its steps never routes a webhook to the wrong bot:
// until the bot's hash switches, the old URL works and the new one does not; from the
// switch, the reverse, even on an intake that remembers the old route. The next projection
// finishes the clean-up (old route, old owner's set).
func TestInterruptedProjectionIsSafeAndRepaired(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	crash := &storetest.Crash{}
	rdb.AddHook(crash)
	reg := registry.New(rdb)
	in := intake.New(rdb)
	h1 := registry.HashWebhookID("11111111-1111-4111-8111-111111111112")
	h2 := registry.HashWebhookID("22222222-2222-4222-8222-222222222223")
	b := bot("uid-c", "a@x.io")
	b.RateLimit = registry.Limit{PerMinute: 6000, Burst: 1000}
	if err := reg.Project(ctx, b, h1); err != nil {
		t.Fatal(err)
	}
	admit := func(hash string) errs.Code {
		t.Helper()
		_, err := in.Admit(ctx, intake.Request{WebhookHash: hash, SignalID: "s", Priority: queue.PriorityWebhook,
			Signal: json.RawMessage(`{"action":"buy"}`), ReceivedAt: time.Now()})
		if err == nil {
			return ""
		}
		if _, ok := errs.As(err); !ok {
			t.Fatal(err)
		}
		return errs.CodeOf(err)
	}
	if c := admit(h1); c != "" { // the intake now remembers h1 -> uid-c
		t.Fatalf("before: %s", c)
	}
	moved := b
	moved.Owner = "b@x.io"

	// Interrupted after routing h2: nothing switched.
	crash.At(func(c redis.Cmder) bool { return c.Name() == "sadd" })
	if err := reg.Project(ctx, moved, h2); !errors.Is(err, storetest.ErrCrash) {
		t.Fatalf("project: %v", err)
	}
	crash.At(nil)
	if c1, c2 := admit(h1), admit(h2); c1 != "" || c2 != errs.InvalidWebhook {
		t.Fatalf("after routing the new hash: old URL %q, new URL %q", c1, c2)
	}

	// Interrupted right after the switch, before the old route is deleted.
	crash.At(func(c redis.Cmder) bool {
		return (c.Name() == "evalsha" || c.Name() == "eval") && slices.Contains(c.Args(), any(store.Webhook(h1)))
	})
	if err := reg.Project(ctx, moved, h2); !errors.Is(err, storetest.ErrCrash) {
		t.Fatalf("project: %v", err)
	}
	crash.At(nil)
	if c1, c2 := admit(h1), admit(h2); c1 != errs.InvalidWebhook || c2 != "" {
		t.Fatalf("after the switch: old URL %q, new URL %q", c1, c2)
	}
	if route, err := reg.Resolve(ctx, h1); err != nil || route.BotID != "uid-c" {
		t.Fatalf("the old route is expected to be left: %+v, %v", route, err)
	}

	// The next projection (the next reconcile) finishes.
	if err := reg.Project(ctx, moved, h2); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Resolve(ctx, h1); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("old route after the repair: %v", err)
	}
	if ids, _ := reg.OwnerBots(ctx, "a@x.io"); len(ids) != 0 {
		t.Fatalf("old owner keeps %v", ids)
	}
	if ids, _ := reg.OwnerBots(ctx, "b@x.io"); !slices.Equal(ids, []string{"uid-c"}) {
		t.Fatalf("new owner has %v", ids)
	}
	if c := admit(h2); c != "" {
		t.Fatalf("after the repair: %s", c)
	}

	// A removal interrupted before the bot's hash goes still admits through it; the next
	// one finishes and the URL answers BOT_DELETED.
	crash.At(func(c redis.Cmder) bool {
		return c.Name() == "del" && slices.Contains(c.Args(), any(store.Bot("uid-c")))
	})
	if err := reg.Remove(ctx, "uid-c", time.Hour); !errors.Is(err, storetest.ErrCrash) {
		t.Fatalf("remove: %v", err)
	}
	crash.At(nil)
	if ids, _ := reg.OwnerBots(ctx, "b@x.io"); len(ids) != 0 {
		t.Fatalf("owner keeps %v", ids)
	}
	if err := reg.Remove(ctx, "uid-c", time.Hour); err != nil {
		t.Fatal(err)
	}
	if c := admit(h2); c != errs.BotDeleted {
		t.Fatalf("after the removal: %s", c)
	}
}

// Get decodes a bot's projection once per change: a read after a re-projection returns the
// new projection, never the remembered one, and a caller that changes what Get returned
// (its strategy included) does not change what the next Get returns.
func TestGetIsNeverStalerThanTheProjection(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	reg := registry.New(rdb)
	b := bot("b1", "a@x.io")
	b.Strategy = &strategy.Spec{Family: strategy.EMACrossover, Timeframe: "1m", Symbol: "BTC/USDT"}
	if err := reg.Project(ctx, b, "hook-b1"); err != nil {
		t.Fatal(err)
	}
	got, err := reg.Get(ctx, "b1")
	if err != nil || got.PositionSize != "10%" || got.Strategy == nil {
		t.Fatalf("first read: %+v, %v", got, err)
	}
	got.PositionSize, got.Strategy.Family = "99%", strategy.RSIReversion
	again, err := reg.Get(ctx, "b1")
	if err != nil || again.PositionSize != "10%" || again.Strategy.Family != strategy.EMACrossover {
		t.Fatalf("a caller's change reached the next read: %+v, %v", again, err)
	}
	b.PositionSize = "25%"
	if err := reg.Project(ctx, b, "hook-b1"); err != nil {
		t.Fatal(err)
	}
	if after, err := reg.Get(ctx, "b1"); err != nil || after.PositionSize != "25%" {
		t.Fatalf("after the re-projection: %+v, %v", after, err)
	}
}
