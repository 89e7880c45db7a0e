package mcpd_test

import (
	"encoding/json"
	"testing"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/result"
)

func TestGetSignal(t *testing.T) {
	f := newBotFixture(t)
	f.project(t, "bot-s", "ada@example.com")
	f.project(t, "bot-x", "bob@example.com")
	ctx := t.Context()
	publish := func(signalID, botID string, res result.Result) {
		if err := queue.PublishResult(ctx, f.rdb, queue.Envelope{SignalID: signalID, BotID: botID}, res); err != nil {
			t.Fatal(err)
		}
	}
	publish("sig-ok", "bot-s", result.Result{Success: true, Message: "Order placed", Timestamp: 42,
		Order: &result.Order{Success: true, OrderID: "x-1", Status: "filled", Symbol: "BTC/USDT", Side: "buy", Type: "market",
			Amount: testkit.D("0.1"), FilledAmount: testkit.D("0.1"), AvgPrice: testkit.D("60000"), Fee: testkit.D("6"), Timestamp: 41}})
	publish("sig-fail", "bot-s", result.Result{Code: errs.InsufficientBalance, Error: "insufficient balance", Timestamp: 43})
	publish("sig-bob", "bot-x", result.Result{Success: true, Timestamp: 44})

	for _, id := range []string{"sig-ok", "sig-fail"} {
		st, err := f.trading.Result(ctx, id)
		if err != nil || !st.Found {
			t.Fatal(st, err)
		}
		want, _ := json.Marshal(st.Result)
		if _, text := toolResult(t, f.ada, "get_signal", map[string]any{"signalId": id}); text != string(want) {
			t.Fatalf("%s:\n got %s\nwant %s", id, text, want)
		}
	}
	// A failed signal is a successful read: the failure is the answer's data.
	if r := toolOK[result.Result](t, f.ada, "get_signal", map[string]any{"signalId": "sig-fail"}); r.Success ||
		r.Code != errs.InsufficientBalance || r.BotID != "bot-s" {
		t.Fatalf("sig-fail: %+v", r)
	}
	mine := toolErr(t, f.ada, "get_signal", map[string]any{"signalId": "sig-none"})
	bobs := toolErr(t, f.ada, "get_signal", map[string]any{"signalId": "sig-bob"})
	// Another user's signal answers as one with no result, each naming the ID asked for.
	want := func(id string) string {
		return `{"code":"NOT_FOUND","message":"no result for signal ` + id + `: it is still being executed (call again in a few ` +
			`seconds), its result has expired (kept 24 hours), or it is not one of your bots' signals"}`
	}
	if mine != want("sig-none") || bobs != want("sig-bob") {
		t.Fatalf("missing %s\nbob's %s", mine, bobs)
	}
	if text := toolErr(t, f.ada, "get_signal", nil); text !=
		`{"code":"INVALID_PARAMETER","message":"signalId is required: the signalId a webhook or order answered"}` {
		t.Fatalf("no signalId: %s", text)
	}
}
