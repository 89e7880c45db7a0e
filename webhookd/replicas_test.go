package webhookd_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/intake"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/test/stack"
	"github.com/sigops/sigops/webhookd"
)

// With a Sentinel-managed Redis whose replica is stopped, a signal gets a 503 without a
// signalId (the sender retries) though its entry is on the master; the retry under the
// same Idempotency-Key, once the replica is back, gets the 200 with the first signal's ID,
// which the replica then holds: one signal, acknowledged once it is on two servers.
func TestUnreplicatedSignalIs503(t *testing.T) {
	ctx := context.Background()
	r := stack.StartReplicatedFor(t, 1)
	rdb := r.Connect(t, store.Options{ReplicaAckTimeout: 200 * time.Millisecond})
	b := bot("bot-repl")
	if err := registry.New(rdb).Project(ctx, b, registry.HashWebhookID(hookID)); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, b, func(o *webhookd.Options) { o.Intake = intake.New(rdb) })
	if err := stack.Pause(r.Servers[1], true); err != nil {
		t.Fatal(err)
	}
	key := map[string]string{"Idempotency-Key": "alert-repl"}
	signal := `{"action":"buy","symbol":"BTCUSDT"}`
	resp, body := e.post(t, hookPath+"?wait=false", signal, key)
	if resp.StatusCode != 503 || body["success"] != false || body["signalId"] != nil {
		t.Fatalf("replica stopped: %d %v; want 503 without a signalId", resp.StatusCode, body)
	}
	stream := queue.StreamOf(b.ID, queue.PriorityWebhook)
	master := r.Servers[0].Client()
	defer master.Close()
	if n := master.XLen(ctx, stream).Val(); n != 1 {
		t.Fatalf("master holds %d entries, want the one answered 503", n)
	}
	if err := stack.Pause(r.Servers[1], false); err != nil {
		t.Fatal(err)
	}
	resp, body = e.post(t, hookPath+"?wait=false", signal, key)
	id, _ := body["signalId"].(string)
	if resp.StatusCode != 200 || id == "" {
		t.Fatalf("retry with the replica back: %d %v", resp.StatusCode, body)
	}
	replica := r.Servers[1].Client()
	defer replica.Close()
	msgs, err := replica.XRange(ctx, stream, "-", "+").Result()
	if err != nil || len(msgs) != 1 {
		t.Fatalf("replica holds %v, %v; want the one signal", msgs, err)
	}
	var env queue.Envelope
	if err := json.Unmarshal([]byte(msgs[0].Values[queue.EnvelopeField].(string)), &env); err != nil || env.SignalID != id {
		t.Fatalf("replica's entry %+v (%v), acknowledged %s", env, err, id)
	}
}
