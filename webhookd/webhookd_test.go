package webhookd_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/intake"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
	"github.com/sigops/sigops/webhookd"
)

const hookID = "6f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b"

// fakeWaiter hands results to waiting requests; the tests play the executor.
type fakeWaiter struct {
	mu      sync.Mutex
	waiting map[string]chan result.Result
}

func (f *fakeWaiter) Register(id string) (<-chan result.Result, func()) {
	ch := make(chan result.Result, 1)
	f.mu.Lock()
	f.waiting[id] = ch
	f.mu.Unlock()
	return ch, func() { f.mu.Lock(); delete(f.waiting, id); f.mu.Unlock() }
}
func (f *fakeWaiter) Channel() string { return "test-replies" }
func (f *fakeWaiter) deliver(r result.Result) {
	f.mu.Lock()
	ch := f.waiting[r.SignalID]
	f.mu.Unlock()
	if ch != nil {
		ch <- r
	}
}

type env struct {
	redis  *storetest.Server
	srv    *httptest.Server
	rdb    redis.UniversalClient
	reg    *registry.Registry
	waiter *fakeWaiter
	logs   *testkit.LogBuffer
	// respond decides the executor's answer to each queued signal; nil leaves it unanswered.
	respond func(queue.Envelope) *result.Result
}

func newEnv(t *testing.T, bot registry.Bot, mutate func(*webhookd.Options)) *env {
	t.Helper()
	rs, rdb := storetest.New(t)
	e := &env{redis: rs, rdb: rdb, reg: registry.New(rdb), waiter: &fakeWaiter{waiting: map[string]chan result.Result{}}, logs: &testkit.LogBuffer{}}
	if err := e.reg.Project(context.Background(), bot, registry.HashWebhookID(hookID)); err != nil {
		t.Fatal(err)
	}
	opts := webhookd.Options{
		Intake: intake.New(rdb), Waiter: e.waiter, Symbols: fixedSymbols("BTC/USDT", "ETH/USDT"),
		WaitBound: 500 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	if mutate != nil {
		mutate(&opts)
	}
	s, err := webhookd.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.srv = httptest.NewTLSServer(s.Handler())
	t.Cleanup(e.srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go e.executor(ctx, bot.ID)
	return e
}

// executor reads the bot's webhook stream and answers through the waiter.
func (e *env) executor(ctx context.Context, botID string) {
	stream := store.QueueStream(queue.PartitionOf(botID), int(queue.PriorityWebhook))
	last := "0"
	for ctx.Err() == nil {
		res, err := e.rdb.XRead(ctx, &redis.XReadArgs{Streams: []string{stream, last}, Block: 50 * time.Millisecond}).Result()
		if err != nil {
			continue
		}
		for _, m := range res[0].Messages {
			last = m.ID
			var en queue.Envelope
			_ = json.Unmarshal([]byte(m.Values[queue.EnvelopeField].(string)), &en)
			if e.respond != nil {
				if r := e.respond(en); r != nil {
					e.waiter.deliver(*r)
				}
			}
		}
	}
}

func (e *env) post(t *testing.T, path, body string, header map[string]string) (*http.Response, map[string]any) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "text/plain; charset=utf-8") // as TradingView sends it
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := e.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	raw, _ := io.ReadAll(resp.Body)
	_ = json.Unmarshal(raw, &out)
	return resp, out
}

func bot(id string) registry.Bot {
	return registry.Bot{ID: id, Name: "b", Owner: "a@x.io", Market: "spot", Availability: "active", WebhookEnabled: true,
		RateLimit: registry.Limit{PerMinute: 60, Burst: 10}, PositionSize: "10%", Leverage: 1}
}

const hookPath = "/api/webhooks/trade/" + hookID

func filled(en queue.Envelope) *result.Result {
	return &result.Result{SignalID: en.SignalID, BotID: en.BotID, Success: true, Message: "Order filled", Timestamp: 1_800_000_000_000,
		Order: &result.Order{Success: true, OrderID: "o-1", Status: "filled", Symbol: "BTC/USDT", Side: "buy", Type: "market",
			Amount: httpapi.Num(decimal.RequireFromString("0.01538")), FilledAmount: httpapi.Num(decimal.RequireFromString("0.01538")),
			AvgPrice: httpapi.Num(decimal.RequireFromString("65000")), Fee: httpapi.Num(decimal.RequireFromString("0.9997")), Timestamp: 1_800_000_000_000}}
}

func TestSuccessWaitsForTheOrder(t *testing.T) {
	e := newEnv(t, bot("bot-1"), nil)
	e.respond = filled
	resp, body := e.post(t, hookPath, `{"action":"long","symbol":"BINANCE:BTCUSDT","size":"10%"}`, nil)
	if resp.StatusCode != 200 || body["success"] != true || body["message"] != "Order filled" || body["signalId"] == "" || body["timestamp"] == nil {
		t.Fatalf("%d %v", resp.StatusCode, body)
	}
	// The wait was registered under the ID the intake queued: a UUID placed in the bot's
	// partition.
	if id, _ := body["signalId"].(string); uuid.Validate(id) != nil || !queue.InBotPartition("bot-1", id) {
		t.Fatalf("signalId %q: want a UUID in the bot's partition", id)
	}
	order := body["order"].(map[string]any)
	// Numbers are JSON numbers, exact.
	if order["avgPrice"] != 65000.0 || order["amount"] != 0.01538 || order["status"] != "filled" {
		t.Fatalf("order = %v", order)
	}
}

func TestExecutionFailuresKeepTheirCodes(t *testing.T) {
	e := newEnv(t, bot("bot-f"), nil)
	for _, c := range []struct {
		code   errs.Code
		status int
	}{{errs.InsufficientBalance, 422}, {errs.ExchangeError, 502}, {errs.DCANoPosition, 422}, {errs.InvalidAmount, 422}} {
		code := c.code
		e.respond = func(en queue.Envelope) *result.Result {
			return &result.Result{SignalID: en.SignalID, Code: code, Error: "nope", Timestamp: 1,
				Details: map[string]any{"required": 100.5, "available": 20}}
		}
		resp, body := e.post(t, hookPath, `{"action":"buy","symbol":"BTCUSDT"}`, nil)
		if resp.StatusCode != c.status || body["code"] != string(code) || body["success"] != false {
			t.Fatalf("%s: %d %v", code, resp.StatusCode, body)
		}
		if code == errs.InsufficientBalance {
			d := body["details"].(map[string]any)
			if d["required"] != 100.5 || d["available"] != 20.0 {
				t.Fatalf("details = %v", d)
			}
		}
	}
}

func TestWaitBoundAndNoWait(t *testing.T) {
	e := newEnv(t, bot("bot-w"), nil) // nobody answers
	start := time.Now()
	resp, body := e.post(t, hookPath, `{"action":"buy","symbol":"BTCUSDT"}`, nil)
	if resp.StatusCode != 200 || body["success"] != true || !strings.Contains(body["message"].(string), "queued") || time.Since(start) < 500*time.Millisecond {
		t.Fatalf("past the bound: %d %v after %v", resp.StatusCode, body, time.Since(start))
	}
	resp, body = e.post(t, hookPath+"?wait=false", `{"action":"buy","symbol":"BTCUSDT"}`, nil)
	if id, _ := body["signalId"].(string); resp.StatusCode != 200 || body["message"] != "Signal queued" || !queue.InBotPartition("bot-w", id) {
		t.Fatalf("wait=false: %d %v", resp.StatusCode, body)
	}
	n := e.rdb.XLen(context.Background(), store.QueueStream(queue.PartitionOf("bot-w"), 4)).Val()
	if n != 2 {
		t.Fatalf("queued %d", n)
	}
}

func TestErrorTable(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(*registry.Bot)
		path   string
		body   string
		status int
		code   string
	}{
		{"not a uuid", nil, "/api/webhooks/trade/not-a-uuid", `{"action":"buy"}`, 404, ""},
		{"unknown uuid", nil, "/api/webhooks/trade/7f1d2c3b-4a5e-4f60-8a7b-9c0d1e2f3a4b", `{"action":"buy","symbol":"BTCUSDT"}`, 401, "INVALID_WEBHOOK"},
		{"malformed json", nil, hookPath, `{"action":`, 400, "INVALID_JSON"},
		{"missing action", nil, hookPath, `{"symbol":"BTCUSDT"}`, 400, "INVALID_JSON"},
		{"unknown action", nil, hookPath, `{"action":"hodl"}`, 400, "INVALID_ACTION"},
		{"missing symbol", nil, hookPath, `{"action":"buy"}`, 400, "MISSING_SYMBOL"},
		{"unknown symbol", nil, hookPath, `{"action":"buy","symbol":"XRPUSDT"}`, 400, "INVALID_SYMBOL"},
		{"webhook disabled", func(b *registry.Bot) { b.WebhookEnabled = false }, hookPath, `{"action":"buy","symbol":"BTCUSDT"}`, 401, "WEBHOOK_DISABLED"},
		{"paused", func(b *registry.Bot) { b.Availability, b.PausedReason = "paused", "Manual" }, hookPath, `{"action":"buy","symbol":"BTCUSDT"}`, 403, "BOT_PAUSED"},
		{"disabled", func(b *registry.Bot) {
			b.Availability, b.DisabledCode, b.DisabledReason = "disabled", registry.DisabledAccountMissing, "PaperAccountNotFound"
		}, hookPath, `{"action":"buy","symbol":"BTCUSDT"}`, 403, "BOT_DISABLED"},
		{"exchange disconnected", func(b *registry.Bot) {
			b.Availability, b.DisabledCode, b.DisabledReason = "disabled", registry.DisabledExchangeDisconnected, "ExchangeConnectionNotReady"
		}, hookPath, `{"action":"buy","symbol":"BTCUSDT"}`, 403, "EXCHANGE_DISCONNECTED"},
		{"too big", nil, hookPath, `{"action":"buy","comment":"` + strings.Repeat("x", 70<<10) + `"}`, 413, "INVALID_JSON"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := bot("bot-e")
			if c.mutate != nil {
				c.mutate(&b)
			}
			e := newEnv(t, b, nil)
			resp, body := e.post(t, c.path, c.body, nil)
			if resp.StatusCode != c.status || (c.code != "" && body["code"] != c.code) || body["success"] != false {
				t.Fatalf("%d %v; want %d %s", resp.StatusCode, body, c.status, c.code)
			}
			if resp.StatusCode == 401 && body["timestamp"] == nil {
				t.Fatal("authentication error without timestamp")
			}
		})
	}
}

func TestDeletedBot(t *testing.T) {
	e := newEnv(t, bot("bot-del"), nil)
	if err := e.reg.Remove(context.Background(), "bot-del", time.Hour); err != nil {
		t.Fatal(err)
	}
	resp, body := e.post(t, hookPath, `{"action":"buy","symbol":"BTCUSDT"}`, nil)
	if resp.StatusCode != 403 || body["code"] != "BOT_DELETED" {
		t.Fatalf("%d %v", resp.StatusCode, body)
	}
}

func TestRateLimitedWithRetryAfter(t *testing.T) {
	b := bot("bot-rl")
	b.RateLimit = registry.Limit{PerMinute: 1, Burst: 2}
	e := newEnv(t, b, nil)
	for i := 0; i < 2; i++ {
		if resp, body := e.post(t, hookPath+"?wait=false", `{"action":"buy","symbol":"BTCUSDT"}`, nil); resp.StatusCode != 200 {
			t.Fatalf("within burst: %d %v", resp.StatusCode, body)
		}
	}
	resp, body := e.post(t, hookPath+"?wait=false", `{"action":"buy","symbol":"BTCUSDT"}`, nil)
	if resp.StatusCode != 429 || body["code"] != "RATE_LIMITED" {
		t.Fatalf("%d %v", resp.StatusCode, body)
	}
	if ra := resp.Header.Get("Retry-After"); ra == "" || ra == "0" {
		t.Fatalf("Retry-After = %q", ra)
	}
}

// Above Redis' memory watermark a webhook is refused before anything is written: 503 with
// Retry-After and the failure body's code SERVICE_UNAVAILABLE; room again, it is accepted.
func TestRefusedAboveTheMemoryWatermark(t *testing.T) {
	e := newEnv(t, bot("bot-mem"), nil)
	guarded := intake.New(e.rdb).WithMemoryGuard(store.NewMemoryGuard(e.rdb, store.MemoryOptions{Refresh: time.Nanosecond}))
	s, err := webhookd.New(webhookd.Options{Intake: guarded, Waiter: e.waiter, Symbols: fixedSymbols("BTC/USDT"),
		WaitBound: 500 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewTLSServer(s.Handler())
	t.Cleanup(ts.Close)
	e.srv = ts
	if err := storetest.ConfigSet(context.Background(), e.rdb, "maxmemory", "100kb"); err != nil {
		t.Fatal(err)
	}
	resp, body := e.post(t, hookPath+"?wait=false", `{"action":"buy","symbol":"BTCUSDT"}`, nil)
	if resp.StatusCode != 503 || body["code"] != "SERVICE_UNAVAILABLE" || body["success"] != false || body["signalId"] != nil {
		t.Fatalf("above the watermark: %d %v", resp.StatusCode, body)
	}
	if ra := resp.Header.Get("Retry-After"); ra != "5" {
		t.Fatalf("Retry-After = %q", ra)
	}
	if n := e.rdb.XLen(context.Background(), store.QueueStream(queue.PartitionOf("bot-mem"), 4)).Val(); n != 0 {
		t.Fatalf("queued %d while refusing", n)
	}
	if err := storetest.ConfigSet(context.Background(), e.rdb, "maxmemory", "0"); err != nil {
		t.Fatal(err)
	}
	if resp, body := e.post(t, hookPath+"?wait=false", `{"action":"buy","symbol":"BTCUSDT"}`, nil); resp.StatusCode != 200 {
		t.Fatalf("with room again: %d %v", resp.StatusCode, body)
	}
}

func TestIdempotencyKey(t *testing.T) {
	e := newEnv(t, bot("bot-k"), nil)
	_, first := e.post(t, hookPath+"?wait=false", `{"action":"buy","symbol":"BTCUSDT"}`, map[string]string{"Idempotency-Key": "alert-42"})
	resp, again := e.post(t, hookPath+"?wait=false", `{"action":"buy","symbol":"BTCUSDT","comment":"retry"}`, map[string]string{"Idempotency-Key": "alert-42"})
	if resp.StatusCode != 200 || again["signalId"] != first["signalId"] {
		t.Fatalf("duplicate: %d %v vs %v", resp.StatusCode, again, first)
	}
	if n := e.rdb.XLen(context.Background(), store.QueueStream(queue.PartitionOf("bot-k"), 4)).Val(); n != 1 {
		t.Fatalf("queued %d", n)
	}
}

// storedResults is a ResultStore the test fills.
type storedResults struct{ m sync.Map }

func (s *storedResults) GetResult(_ context.Context, id string) (result.Stored, error) {
	if v, ok := s.m.Load(id); ok {
		return result.Stored{Result: v.(result.Result), Found: true}, nil
	}
	return result.Stored{}, nil
}

// A duplicate answers the first signal's ID while it runs, and its result once it finished.
func TestDuplicateAnswersTheFirstSignalsResult(t *testing.T) {
	results := &storedResults{}
	e := newEnv(t, bot("bot-d"), func(o *webhookd.Options) { o.Results = results })
	key := map[string]string{"Idempotency-Key": "alert-7"}
	_, first := e.post(t, hookPath+"?wait=false", `{"action":"buy","symbol":"BTCUSDT"}`, key)
	id, _ := first["signalId"].(string)
	resp, again := e.post(t, hookPath, `{"action":"buy","symbol":"BTCUSDT"}`, key)
	if resp.StatusCode != 200 || again["signalId"] != id || again["message"] != "Duplicate signal; the first one stands" {
		t.Fatalf("duplicate of a running signal: %d %v", resp.StatusCode, again)
	}
	done := filled(queue.Envelope{SignalID: id, BotID: "bot-d"})
	results.m.Store(id, *done)
	resp, again = e.post(t, hookPath, `{"action":"buy","symbol":"BTCUSDT"}`, key)
	if resp.StatusCode != 200 || again["signalId"] != id || again["message"] != "Order filled" || again["order"] == nil {
		t.Fatalf("duplicate of a finished signal: %d %v", resp.StatusCode, again)
	}
}

func TestHTTPSOnly(t *testing.T) {
	e := newEnv(t, bot("bot-h"), func(o *webhookd.Options) {
		o.TrustedProxies = []netip.Prefix{netip.MustParsePrefix("127.0.0.1/32")}
	})
	// The same handler over plain HTTP.
	plain := httptest.NewServer(e.srv.Config.Handler)
	defer plain.Close()
	// post sends each X-Forwarded-Proto line as given, in order.
	post := func(protos ...string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, plain.URL+hookPath+"?wait=false", strings.NewReader(`{"action":"buy","symbol":"BTCUSDT"}`))
		for _, p := range protos {
			req.Header.Add("X-Forwarded-Proto", p)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if r := post(""); r.StatusCode != 403 {
		t.Fatalf("plain HTTP served: %d", r.StatusCode)
	}
	if r := post("http"); r.StatusCode != 403 {
		t.Fatalf("proxy-marked http served: %d", r.StatusCode)
	}
	// A client's own "https" sent over plain HTTP through a proxy that appends (to the
	// client's line, or as a line of its own) is plain HTTP.
	if r := post("https, http"); r.StatusCode != 403 {
		t.Fatalf("client-sent https before the proxy's http served: %d", r.StatusCode)
	}
	if r := post("https", "http"); r.StatusCode != 403 {
		t.Fatalf("client-sent https line before the proxy's http line served: %d", r.StatusCode)
	}
	if r := post("https"); r.StatusCode != 200 {
		t.Fatalf("trusted proxy over https refused: %d", r.StatusCode)
	}

	// An untrusted peer cannot claim HTTPS.
	e2 := newEnv(t, bot("bot-h2"), nil)
	plain2 := httptest.NewServer(e2.srv.Config.Handler)
	defer plain2.Close()
	req, _ := http.NewRequest(http.MethodPost, plain2.URL+hookPath, strings.NewReader(`{"action":"buy"}`))
	req.Header.Set("X-Forwarded-Proto", "https")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 403 {
		t.Fatalf("untrusted X-Forwarded-Proto honoured: %d", resp.StatusCode)
	}
}

func TestWebhookIDNeverLogged(t *testing.T) {
	e := newEnv(t, bot("bot-l"), nil)
	e.post(t, hookPath, `{"action":"buy","symbol":"BTCUSDT"}`, nil) // times out, logs
	e.post(t, hookPath+"?wait=false", `{"action":"buy","symbol":"BTCUSDT"}`, map[string]string{"Idempotency-Key": "k"})
	e.post(t, hookPath+"?wait=false", `{"action":"buy","symbol":"BTCUSDT"}`, map[string]string{"Idempotency-Key": "k"})
	if e.logs.Contains(hookID) {
		t.Fatalf("webhook ID in logs:\n%s", e.logs)
	}
	if e.logs.String() == "" {
		t.Fatal("nothing logged: the check proves nothing")
	}
}

// Redis down: 503 without a code, never a claim that the signal was queued.
func TestRedisDownIs503(t *testing.T) {
	e := newEnv(t, bot("bot-down"), nil)
	e.redis.Stop()
	resp, body := e.post(t, hookPath+"?wait=false", `{"action":"buy","symbol":"BTCUSDT"}`, nil)
	if resp.StatusCode != 503 || body["success"] != false || body["signalId"] != nil {
		t.Fatalf("%d %v", resp.StatusCode, body)
	}
}

// A full Redis (maxmemory reached, policy noeviction as config/redis sets it) refuses the
// intake's writes with OOM: the sender gets a 503 to retry, and nothing is half-queued.
func TestRedisFullIs503(t *testing.T) {
	e := newEnv(t, bot("bot-full"), nil)
	ctx := context.Background()
	if err := storetest.ConfigSet(ctx, e.rdb, "maxmemory-policy", "noeviction"); err != nil {
		t.Fatal(err)
	}
	if err := storetest.ConfigSet(ctx, e.rdb, "maxmemory", "1"); err != nil { // already over: every write is refused
		t.Fatal(err)
	}
	if err := e.rdb.Set(ctx, "probe", "x", 0).Err(); !store.IsOutOfMemory(err) {
		t.Fatalf("Redis not full: %v", err)
	}
	resp, body := e.post(t, hookPath+"?wait=false", `{"action":"buy","symbol":"BTCUSDT"}`, nil)
	if resp.StatusCode != 503 || body["success"] != false || body["signalId"] != nil {
		t.Fatalf("%d %v", resp.StatusCode, body)
	}
	if n := e.rdb.XLen(ctx, store.QueueStream(queue.PartitionOf("bot-full"), int(queue.PriorityWebhook))).Val(); n != 0 {
		t.Fatalf("queued %d signals into a full Redis", n)
	}
}

func fixedSymbols(list ...string) func() *signal.Symbols {
	s := signal.NewSymbols(list)
	return func() *signal.Symbols { return s }
}
