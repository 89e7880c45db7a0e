package mcpd_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/mcpd"
	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/signal"
)

type answerT struct {
	Success   bool
	Message   string
	SignalID  string
	Timestamp int64
	Order     *result.Order
}

// queued are the envelopes in bot's webhook-priority stream, oldest first.
func queued(t *testing.T, f *botFixture, bot string) []queue.Envelope {
	t.Helper()
	msgs, err := f.rdb.XRange(t.Context(), queue.StreamOf(bot, queue.PriorityWebhook), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []queue.Envelope
	for _, m := range msgs {
		var env queue.Envelope
		if err := json.Unmarshal([]byte(m.Values[queue.EnvelopeField].(string)), &env); err != nil {
			t.Fatal(err)
		}
		if env.BotID == bot {
			out = append(out, env)
		}
	}
	return out
}

// signalBot projects bot id of owner on an account of kind with the CRD's default rate
// limit (60 a minute, burst 10), which the intake applies.
func signalBot(t *testing.T, f *botFixture, id, owner, kind string) {
	t.Helper()
	b := f.project(t, id, owner)
	b.Account.Kind = kind
	b.RateLimit = registry.Limit{PerMinute: 60, Burst: 10}
	if err := f.reg.Project(t.Context(), b, "hash-"+id); err != nil {
		t.Fatal(err)
	}
}

func TestSendSignal(t *testing.T) {
	var waiter *queue.Waiter
	f := newBotFixture(t, func(o *mcpd.Options) {
		var err error
		if waiter, err = queue.NewWaiter(t.Context(), o.Redis, "mcpd-test"); err != nil {
			t.Fatal(err)
		}
		o.Waiter = waiter
	})
	t.Cleanup(func() { _ = waiter.Close() })
	signalBot(t, f, "b1", "ada@example.com", registry.AccountPaper)
	paperTok, _ := f.oauthToken(t, f.adaUser, "agent-paper", auth.ScopePaper, testResource)
	paper, _ := mcpClient(t, paperTok.Token, "", f.ts)
	now := f.clk.Now().UnixMilli()

	// Queued through the webhook's intake: the symbol resolved (btcusdt is BTC/USDT), the size
	// kept exactly as written, at webhook priority.
	buy := map[string]any{"botId": "b1", "action": "buy", "symbol": "btcusdt", "size": "0.01", "idempotencyKey": "order-1"}
	first := toolOK[answerT](t, paper, "send_signal", buy)
	if !first.Success || first.Message != "Signal queued" || !queue.InBotPartition("b1", first.SignalID) || first.Timestamp != now {
		t.Fatalf("send: %+v", first)
	}
	envs := queued(t, f, "b1")
	if len(envs) != 1 || envs[0].SignalID != first.SignalID || envs[0].Source != queue.SourceWebhook || envs[0].ReceivedAt != now {
		t.Fatalf("queue: %+v", envs)
	}
	var sig signal.Signal
	if err := json.Unmarshal(envs[0].Signal, &sig); err != nil {
		t.Fatal(err)
	}
	if sig.Action != signal.Buy || sig.Symbol != "BTC/USDT" || sig.Size == nil || sig.Size.String() != "0.01" || sig.DCALevel != 1 {
		t.Fatalf("signal %+v", sig)
	}

	// The same key again: the first signal's answer and nothing queued.
	dup := toolOK[answerT](t, paper, "send_signal", buy)
	if dup.SignalID != first.SignalID || dup.Message != "Duplicate signal; the first one stands" {
		t.Fatalf("duplicate: %+v", dup)
	}
	// Once the first has executed, the same key answers its result, still without a second order.
	fill := &result.Order{Success: true, OrderID: "p-1", Status: "filled", Symbol: "BTC/USDT", Side: "buy", Type: "market",
		Amount: httpapi.Num(testkit.D("0.01")), FilledAmount: httpapi.Num(testkit.D("0.01")), AvgPrice: httpapi.Num(testkit.D("61000")), Fee: httpapi.Num(testkit.D("0.61")), Timestamp: now}
	if err := queue.PublishResult(t.Context(), f.rdb, envs[0], result.Result{Success: true, Message: "Order filled", Order: fill, Timestamp: now}); err != nil {
		t.Fatal(err)
	}
	again := toolOK[answerT](t, paper, "send_signal", buy)
	// Fee 0.61 = 0.01 BTC × 61000 × 0.1 %, as the paper venue would charge; carried as written.
	if again.SignalID != first.SignalID || again.Message != "Order filled" || again.Order == nil ||
		again.Order.AvgPrice.String() != "61000" || again.Order.Fee.String() != "0.61" {
		t.Fatalf("duplicate after execution: %+v", again)
	}
	if n := len(queued(t, f, "b1")); n != 1 {
		t.Fatalf("%d queued after three sends with one key, want 1", n)
	}

	// wait true: the result the executor publishes, here played by the test.
	go func() {
		for range 250 {
			if envs := queued(t, f, "b1"); len(envs) == 2 {
				_ = queue.PublishResult(t.Context(), f.rdb, envs[1], result.Result{Success: true, Order: fill, Timestamp: now})
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	waited := toolOK[answerT](t, paper, "send_signal", map[string]any{"botId": "b1", "action": "close", "wait": true})
	// The wait was registered under the ID queued, placed in the bot's partition.
	if waited.Message != "Signal executed" || waited.Order == nil || waited.Order.OrderID != "p-1" || waited.SignalID == first.SignalID ||
		!queue.InBotPartition("b1", waited.SignalID) {
		t.Fatalf("wait: %+v", waited)
	}
	// A failed result with wait is an error result with the executor's code and the signal ID.
	go func() {
		for range 250 {
			if envs := queued(t, f, "b1"); len(envs) == 3 {
				_ = queue.PublishResult(t.Context(), f.rdb, envs[2], result.Result{Code: "INSUFFICIENT_BALANCE", Error: "insufficient balance",
					Details: map[string]any{"required": "610", "available": "12.5"}, Timestamp: now})
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	text := toolErr(t, paper, "send_signal", map[string]any{"botId": "b1", "action": "sell", "size": "1", "wait": true})
	if !strings.Contains(text, `"code":"INSUFFICIENT_BALANCE"`) || !strings.Contains(text, `"numericCode":3001`) ||
		!strings.Contains(text, `"available":"12.5"`) || !strings.Contains(text, `"signalId":"`) {
		t.Fatalf("failed result: %s", text)
	}

	// Refusals: the parser's codes, another user's bot, a paused bot; none queues anything.
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"botId": "b1", "action": "hold"}, `"code":"INVALID_ACTION"`},
		{map[string]any{"botId": "b1", "action": "buy", "size": "-1"}, `"code":"INVALID_AMOUNT"`},
		{map[string]any{"botId": "b1", "action": "buy", "idempotencyKey": strings.Repeat("k", 256)}, `"code":"INVALID_PARAMETER"`},
		{map[string]any{"action": "buy"}, `"code":"INVALID_PARAMETER"`},
	} {
		if text := toolErr(t, paper, "send_signal", c.args); !strings.Contains(text, c.want) {
			t.Errorf("send %v: %s, want %s", c.args, text, c.want)
		}
	}
	signalBot(t, f, "bob-bot", "bob@example.com", registry.AccountPaper)
	if text := toolErr(t, paper, "send_signal", map[string]any{"botId": "bob-bot", "action": "buy"}); text != `{"code":"NOT_FOUND","message":"bot not found"}` {
		t.Fatalf("another user's bot: %s", text)
	}
	if _, err := f.reg.Pause(t.Context(), "b1", registry.Pause{Reason: registry.PauseManual}, f.clk.Now()); err != nil {
		t.Fatal(err)
	}
	if text := toolErr(t, paper, "send_signal", map[string]any{"botId": "b1", "action": "buy"}); !strings.Contains(text, `"code":"BOT_PAUSED"`) ||
		!strings.Contains(text, `"numericCode":2002`) {
		t.Fatalf("paused bot: %s", text)
	}
	if n := len(queued(t, f, "b1")); n != 3 {
		t.Fatalf("%d queued, want the 3 accepted", n)
	}

	// Scopes by the bot's venue.
	readTok, _ := f.oauthToken(t, f.adaUser, "agent-read", auth.ScopeRead, testResource)
	ff := &fleetFixture{botFixture: f}
	ff.forbidden(t, readTok.Token, "send_signal", `{"botId":"b1","action":"buy"}`, auth.ScopePaper)
	signalBot(t, f, "x1", "ada@example.com", registry.AccountExchange)
	ff.forbidden(t, paperTok.Token, "send_signal", `{"botId":"x1","action":"buy"}`, auth.ScopeLive)

	// Every call that reached the tool is in ada's journal: 4 answered, 7 refused (one a failed execution).
	entries, _, err := audit.New(f.rdb, audit.Options{}).List(t.Context(), f.adaUser.ID, "", 50)
	if err != nil {
		t.Fatal(err)
	}
	ok := 0
	for _, e := range entries {
		if e.Tool != "send_signal" {
			t.Fatalf("entry %+v", e)
		}
		if e.Outcome.OK {
			ok++
		}
	}
	if ok != 4 || len(entries) != 11 {
		t.Fatalf("audit: %d entries, %d ok; want 11 and 4", len(entries), ok)
	}
}
