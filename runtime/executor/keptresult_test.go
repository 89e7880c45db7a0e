package executor_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/store"
)

// A filled signal whose only order is its main leg's leaves its result in that order record,
// not under a key of its own; GetResult reads it there, byte for byte the result a waiter
// heard; a redelivery re-publishes it, books nothing and stores no second copy. A failure
// keeps its own key.
func TestResultKeptInTheOrderRecord(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	for _, body := range []string{`{"action":"buy","symbol":"BTCUSDT"}`, `{"action":"sell","symbol":"BTCUSDT"}`} {
		env := h.envelope(body)
		env.ReplyTo = store.ReplyChannel("w-kept")
		sub := h.rdb.Subscribe(h.ctx, env.ReplyTo)
		if _, err := sub.Receive(h.ctx); err != nil {
			t.Fatal(err)
		}
		if err := h.ex.Handle(h.ctx, env); err != nil {
			t.Fatal(err)
		}
		msg, err := sub.ReceiveMessage(h.ctx)
		if err != nil {
			t.Fatal(err)
		}
		_, heard, _ := strings.Cut(msg.Payload, "\n")
		if n := h.rdb.Exists(h.ctx, store.SignalResult(env.SignalID)).Val(); n != 0 {
			t.Fatalf("%s: the result has its own key too", body)
		}
		text := h.rdb.Get(h.ctx, store.BookOrder(h.bot.ID, position.ClientOrderID(env.SignalID, ""))).Val()
		if rec, err := position.DecodeOrder(text); err != nil || rec.Outcome == nil {
			t.Fatalf("%s: order record %q (%v) holds no result", body, text, err)
		}
		st, err := queue.GetResult(h.ctx, h.rdb, env.SignalID)
		if err != nil || !st.Found {
			t.Fatalf("%s: GetResult %+v, %v", body, st, err)
		}
		if got := mustJSON(t, st.Result); got != heard {
			t.Fatalf("%s: stored result\n%s\nheard\n%s", body, got, heard)
		}
		trades := len(h.trades())
		if err := h.ex.Handle(h.ctx, env); err != nil {
			t.Fatal(err)
		}
		again, err := sub.ReceiveMessage(h.ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, v, _ := strings.Cut(again.Payload, "\n"); v != heard || len(h.trades()) != trades {
			t.Fatalf("%s redelivered: heard %s, %d trades (were %d)", body, v, len(h.trades()), trades)
		}
		// Announced again, not stored again: the record still holds the only copy.
		if n := h.rdb.Exists(h.ctx, store.SignalResult(env.SignalID)).Val(); n != 0 {
			t.Fatalf("%s redelivered: the result was stored under its own key too", body)
		}
		sub.Close()
	}
	// Nothing to sell: a failure, under its own key.
	env := h.envelope(`{"action":"sell","symbol":"BTCUSDT"}`)
	if res := h.run(env); res.Success {
		t.Fatalf("a sell with nothing held: %+v", res)
	}
	if h.rdb.Exists(h.ctx, store.SignalResult(env.SignalID)).Val() != 1 {
		t.Fatal("a failed signal's result has no key of its own")
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
