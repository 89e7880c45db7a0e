package queue_test

import (
	"context"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// ResultLua, inside a script on the bot's slot, stores and announces a result as
// PublishResult does: the same result and index entry with their TTLs, the same reply.
func TestResultLuaMatchesPublishResult(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	script := redis.NewScript(queue.ResultLua(1, 1) + "return 1\n")
	env := queue.Envelope{SignalID: queue.NewSignalID("bot-1"), BotID: "bot-1", Source: queue.SourceWebhook,
		Signal: []byte(`{"action":"buy"}`), ReceivedAt: 1700000000000, ReplyTo: store.ReplyChannel("w1")}
	res := result.Result{Success: true, Message: "opened", Timestamp: 1700000000100}
	keys := []string{store.SignalResult(env.SignalID), store.BotRecent(env.BotID)}
	sub := rdb.Subscribe(ctx, env.ReplyTo)
	defer sub.Close()
	if _, err := sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	if err := queue.PublishResult(ctx, rdb, env, res); err != nil {
		t.Fatal(err)
	}
	published, _ := storetest.Dump(ctx, rdb, keys...)
	first, err := sub.ReceiveMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	rdb.Del(ctx, keys...)
	w, err := queue.NewResultWrite(env, res)
	if err != nil {
		t.Fatal(err)
	}
	if w.Keys[0] != keys[0] || w.Keys[1] != keys[1] {
		t.Fatalf("write keys %v, want %v", w.Keys, keys)
	}
	if err := script.Run(ctx, rdb, w.Keys, w.Args...).Err(); err != nil {
		t.Fatal(err)
	}
	scripted, _ := storetest.Dump(ctx, rdb, keys...)
	second, err := sub.ReceiveMessage(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if published != scripted || first.Payload != second.Payload {
		t.Fatalf("the script left\n%s%q\nPublishResult\n%s%q", scripted, second.Payload, published, first.Payload)
	}
	st, err := queue.GetResult(ctx, rdb, env.SignalID)
	if err != nil || !st.Found || st.Result.SignalID != env.SignalID || st.Result.BotID != "bot-1" {
		t.Fatalf("stored = %+v, %v", st, err)
	}
}
