package intake_test

import (
	"context"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/intake"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/signal"
)

func TestNewRequest(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_000)
	syms := signal.NewSymbols([]string{"BTC/USDT"})
	body := []byte(`{"action":"long","symbol":"btcusdt","size":"0.010"}`)
	r, err := intake.NewRequest(body, syms, "key-1", now)
	if err != nil {
		t.Fatal(err)
	}
	// The alias long is buy, the symbol resolved, the size 0.010 as the decimal 0.01; only hashes of
	// the body and the key.
	if string(r.Signal) != `{"action":"buy","symbol":"BTC/USDT","size":{"value":0.01},"dcaLevel":1}` {
		t.Fatalf("signal %s", r.Signal)
	}
	if r.SignalID == "" || r.Priority != queue.PriorityWebhook || !r.ReceivedAt.Equal(now) || r.NeedsSymbol ||
		r.BodyHash != intake.SHA256Hex(body) || r.IdempotencyHash != intake.SHA256Hex([]byte("key-1")) || r.WebhookHash != "" {
		t.Fatalf("request %+v", r)
	}
	if r, _ := intake.NewRequest([]byte(`{"action":"buy"}`), syms, "", now); !r.NeedsSymbol || r.IdempotencyHash != "" {
		t.Fatalf("entry without symbol: %+v", r)
	}
	if _, err := intake.NewRequest([]byte(`{"action":"hold"}`), syms, "", now); errs.CodeOf(err) != errs.InvalidAction {
		t.Fatalf("bad action: %v", err)
	}
	if _, err := intake.NewRequest([]byte(`{"action":"buy","symbol":"DOGE/EUR"}`), syms, "", now); errs.CodeOf(err) != errs.InvalidSymbol {
		t.Fatalf("unknown symbol: %v", err)
	}
}

func TestAdmitBot(t *testing.T) {
	ctx := context.Background()
	in, rdb, reg := setup(t, activeBot("bot-k"))
	now := time.UnixMilli(1_800_000_000_000)

	// By bot ID, through the bot's current webhook: queued as a webhook signal.
	r := req(now)
	r.WebhookHash = "ignored: AdmitBot reads the bot's"
	adm, err := in.AdmitBot(ctx, "bot-k", r)
	if err != nil || adm.SignalID != queue.SignalIDFor("bot-k", r.SignalID) || adm.BotID != "bot-k" || adm.Duplicate {
		t.Fatalf("admit = %+v, %v", adm, err)
	}
	// The webhook regenerated: the new hash is read, the signal still admitted, and the
	// same Idempotency-Key answers the first signal.
	if err := reg.Project(ctx, activeBot("bot-k"), registry.HashWebhookID("11111111-2222-4333-8444-555555555555")); err != nil {
		t.Fatal(err)
	}
	k1, k2 := req(now), req(now)
	k1.IdempotencyHash, k2.IdempotencyHash = intake.SHA256Hex([]byte("k")), intake.SHA256Hex([]byte("k"))
	first := queue.SignalIDFor("bot-k", k1.SignalID)
	if adm, err := in.AdmitBot(ctx, "bot-k", k1); err != nil || adm.SignalID != first {
		t.Fatalf("after regenerate: %+v, %v", adm, err)
	}
	if adm, err := in.AdmitBot(ctx, "bot-k", k2); err != nil || !adm.Duplicate || adm.SignalID != first {
		t.Fatalf("same key: %+v, %v", adm, err)
	}
	if n := rdb.XLen(ctx, queue.StreamOf("bot-k", queue.PriorityWebhook)).Val(); n != 2 {
		t.Fatalf("%d queued, want 2", n)
	}
	// The gates are the script's: a paused bot answers BOT_PAUSED; a bot never projected
	// BOT_DELETED.
	if _, err := reg.Pause(ctx, "bot-k", registry.Pause{Reason: registry.PauseManual}, now); err != nil {
		t.Fatal(err)
	}
	if _, err := in.AdmitBot(ctx, "bot-k", req(now)); code(err) != errs.BotPaused {
		t.Fatalf("paused: %v", err)
	}
	if _, err := in.AdmitBot(ctx, "nobody", req(now)); code(err) != errs.BotDeleted {
		t.Fatalf("missing bot: %v", err)
	}
}
