package mcpd_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
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
			Amount: httpapi.Num(testkit.D("0.1")), FilledAmount: httpapi.Num(testkit.D("0.1")), AvgPrice: httpapi.Num(testkit.D("60000")), Fee: httpapi.Num(testkit.D("6")), Timestamp: 41}})
	publish("sig-fail", "bot-s", result.Result{Code: errs.InsufficientBalance, Error: "insufficient balance", Timestamp: 43})
	publish("sig-bob", "bot-x", result.Result{Success: true, Timestamp: 44})

	for id, state := range map[string]string{"sig-ok": "executed", "sig-fail": "failed"} {
		st, err := f.trading.Result(ctx, id)
		if err != nil || !st.Found {
			t.Fatal(st, err)
		}
		want, _ := json.Marshal(st.Result)
		want = append(want[:len(want)-1], []byte(`,"state":"`+state+`"}`)...)
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

func TestListSignals(t *testing.T) {
	f := newBotFixture(t)
	f.project(t, "bot-s", "ada@example.com")
	ctx := t.Context()
	publish := func(env queue.Envelope, res result.Result) {
		t.Helper()
		if err := queue.PublishResult(ctx, f.rdb, env, res); err != nil {
			t.Fatal(err)
		}
	}
	// Accepted at 1000, 2000, 3000 ms and decided 40, 250 and 1500 ms later.
	publish(queue.Envelope{SignalID: "sig-1", BotID: "bot-s", Source: queue.SourceWebhook, Signal: json.RawMessage(`{"action":"buy"}`),
		ReceivedAt: 1000}, result.Result{Success: true, Message: "Order placed", Timestamp: 1040,
		Order: &result.Order{Success: true, OrderID: "x-1", Status: "filled", Symbol: "BTC/USDT", Side: "buy", Type: "market",
			Amount: httpapi.Num(testkit.D("0.1")), FilledAmount: httpapi.Num(testkit.D("0.1")), AvgPrice: httpapi.Num(testkit.D("60000.5")), Fee: httpapi.Num(testkit.D("6.00005")), Timestamp: 1039}})
	publish(queue.Envelope{SignalID: "sig-2", BotID: "bot-s", Source: queue.SourceManual, Signal: json.RawMessage(`{"type":"close"}`),
		ReceivedAt: 2000}, result.Result{Code: errs.PositionNotFound, Error: "no open position", Timestamp: 2250})
	publish(queue.Envelope{SignalID: "sig-3", BotID: "bot-s", Source: queue.SourceWebhook, Signal: json.RawMessage(`{"action":"sell"}`),
		ReceivedAt: 3000}, result.Result{Code: errs.InsufficientBalance, Error: "insufficient balance", Timestamp: 4500})
	type item struct {
		SignalID, Source, Action, Code   string
		ReceivedAt, DecidedAt, LatencyMs int64
		Success                          bool
		Order                            *result.Order
	}
	type page struct {
		Signals    []item
		NextCursor *string
	}
	p1 := toolOK[page](t, f.ada, "list_signals", map[string]any{"botId": "bot-s", "limit": 2})
	want1 := []item{
		{SignalID: "sig-3", Source: "webhook", Action: "sell", Code: "INSUFFICIENT_BALANCE", ReceivedAt: 3000, DecidedAt: 4500, LatencyMs: 1500},
		{SignalID: "sig-2", Source: "manual", Action: "close", Code: "POSITION_NOT_FOUND", ReceivedAt: 2000, DecidedAt: 2250, LatencyMs: 250},
	}
	if !reflect.DeepEqual(p1.Signals, want1) || p1.NextCursor == nil {
		t.Fatalf("page 1: %+v", p1)
	}
	_, text := toolResult(t, f.ada, "list_signals", map[string]any{"botId": "bot-s", "limit": 2, "cursor": *p1.NextCursor})
	want2 := `{"signals":[{"signalId":"sig-1","source":"webhook","action":"buy","receivedAt":1000,"success":true,` +
		`"message":"Order placed","order":{"success":true,"orderId":"x-1","status":"filled","symbol":"BTC/USDT","side":"buy",` +
		`"type":"market","amount":0.1,"filledAmount":0.1,"avgPrice":60000.5,"fee":6.00005,"timestamp":1039},` +
		`"decidedAt":1040,"latencyMs":40}]}`
	if text != want2 {
		t.Fatalf("page 2:\n got %s\nwant %s", text, want2)
	}
	if text := toolErr(t, f.bob, "list_signals", map[string]any{"botId": "bot-s"}); text != `{"code":"NOT_FOUND","message":"bot not found"}` {
		t.Fatalf("bob: %s", text)
	}
	if text := toolErr(t, f.ada, "list_signals", map[string]any{"botId": "bot-s", "cursor": "nope"}); !strings.Contains(text, "INVALID_PARAMETER") {
		t.Fatalf("bad cursor: %s", text)
	}
}
