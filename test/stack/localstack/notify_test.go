package localstack

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"k8s.io/apimachinery/pkg/types"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/store"
)

// notifyChat is the private chat that presses Start in the Telegram stand-in.
const notifyChat = int64(1001)

// notificationsEndToEnd checks the alerts through the public surfaces of the running stack:
// the demo account links the stand-in's chat with a code from the API, telegramLinked turns
// true in /api/user/me and MCP check_auth, and then a pause (MCP pause_bot), a refused order
// and a fill (fills turned on) of the sample bot each bring exactly one message.
func notificationsEndToEnd(t *testing.T, s *Stack, hc *http.Client, token string) {
	t.Helper()
	linkDemoChat(t, s, hc, token)
	mc, _ := testkit.MCPClient(t, hc.Transport, s.mcpURL()+"/mcp", token, mcp.LATEST_PROTOCOL_VERSION, "notify-e2e")
	if text := callTool(t, mc, "check_auth", nil); !strings.Contains(text, `"telegramLinked":true`) {
		t.Fatalf("check_auth: %s", text)
	}
	setFills(t, s, hc, token, true)
	var bot tradingv1.SignalBot
	if err := s.Client.Get(t.Context(), types.NamespacedName{Namespace: SampleNamespace, Name: SampleBot}, &bot); err != nil {
		t.Fatal(err)
	}
	// After a loss of Redis (the FLUSHALL before) the manager projects the bot again; a
	// pause is written only on a projected bot.
	rdb, err := store.Connect(t.Context(), s.Store())
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	testkit.EventuallyTrue(t, 30*time.Second, "the sample bot projected", func() bool {
		n, err := rdb.Exists(t.Context(), store.Bot(string(bot.UID))).Result()
		return err == nil && n == 1
	})

	expectOne(t, s, "paused", func() { callTool(t, mc, "pause_bot", map[string]any{"botId": string(bot.UID)}) })
	callTool(t, mc, "resume_bot", map[string]any{"botId": string(bot.UID)})
	// Far above the bot's exposure limit: queued, then refused by the executor.
	expectOne(t, s, "Bot "+SampleBot+": an order was refused", func() {
		signal(t, hc, s.WebhookURL, `{"action":"buy","symbol":"BTCUSDT","size":"1000000"}`)
	})
	expectOne(t, s, "Bot "+SampleBot+" bought", func() { signal(t, hc, s.WebhookURL, `{"action":"buy","symbol":"BTCUSDT","size":"1%"}`) })
}

// apiCall calls the stack's API with the bearer token and decodes the answer.
func apiCall(t *testing.T, s *Stack, hc *http.Client, token, method, path string, body any) (int, map[string]any) {
	t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequestWithContext(t.Context(), method, s.BaseURL()+path, rd)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

// demoToken signs the demo account in and returns its bearer token.
func demoToken(t *testing.T, s *Stack, hc *http.Client) string {
	t.Helper()
	st, login := apiCall(t, s, hc, "", http.MethodPost, "/api/auth/login", map[string]string{"email": DemoEmail, "password": s.Password})
	token, _ := login["token"].(string)
	if st != http.StatusOK || token == "" {
		t.Fatalf("login: %d %v", st, login)
	}
	return token
}

// linkDemoChat links the stand-in's chat notifyChat to the demo account as a person does:
// a code from the API, then /start <code> in the chat; telegramLinked turns true.
func linkDemoChat(t *testing.T, s *Stack, hc *http.Client, token string) {
	t.Helper()
	st, link := apiCall(t, s, hc, token, http.MethodPost, "/api/user/notifications/telegram/link", nil)
	code, _ := link["code"].(string)
	if st != http.StatusCreated || code == "" {
		t.Fatalf("link code: %d %v", st, link)
	}
	s.Telegram().PostStart(notifyChat, "/start "+code)
	testkit.Eventually(t, 30*time.Second, "telegramLinked in /api/user/me", func() error {
		if _, me := apiCall(t, s, hc, token, http.MethodGet, "/api/user/me", nil); me["telegramLinked"] != true {
			return fmt.Errorf("me: %v", me)
		}
		return nil
	})
}

// setFills turns the demo account's fill messages on or off, and waits out notifyd's reuse
// of the settings it read.
func setFills(t *testing.T, s *Stack, hc *http.Client, token string, on bool) {
	t.Helper()
	if st, p := apiCall(t, s, hc, token, http.MethodPut, "/api/user/notifications/preferences",
		map[string]any{"events": map[string]bool{"fill": on}}); st != http.StatusOK {
		t.Fatalf("preferences: %d %v", st, p)
	}
	time.Sleep(3 * time.Second) // notifyd reuses a user's settings for 2 s
}

// expectOne runs act and checks that exactly one new message containing want reaches the
// linked chat (waiting past the moment it arrives, so that a second copy would be seen).
func expectOne(t *testing.T, s *Stack, want string, act func()) {
	t.Helper()
	count := func() int {
		n := 0
		for _, m := range s.Telegram().Messages() {
			if m.Chat == notifyChat && strings.Contains(strings.ToLower(m.Text), strings.ToLower(want)) {
				n++
			}
		}
		return n
	}
	before := count()
	act()
	for deadline := time.Now().Add(30 * time.Second); count() <= before; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			dumpNotify(t, s)
			t.Fatalf("no message with %q within 30 s", want)
		}
	}
	time.Sleep(2 * time.Second)
	if n := count() - before; n != 1 {
		t.Fatalf("%d messages with %q, want exactly one: %v", n, want, s.Telegram().Messages())
	}
}

func callTool(t *testing.T, c *client.Client, tool string, args map[string]any) string {
	t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	res, err := c.CallTool(t.Context(), req)
	if err != nil {
		t.Fatalf("%s: %v", tool, err)
	}
	text := res.Content[0].(mcp.TextContent).Text
	if res.IsError {
		t.Fatalf("%s: %s", tool, text)
	}
	return text
}

// signal sends body to a bot's webhook URL and waits for its answer.
func signal(t *testing.T, hc *http.Client, url, body string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// dumpNotify logs notifyd's queue, bursts and positions and what the bot sent: why a
// message did not come.
func dumpNotify(t *testing.T, s *Stack) {
	t.Helper()
	db, err := pgxpool.New(context.Background(), s.DatabaseURL())
	if err != nil {
		t.Log(err)
		return
	}
	defer db.Close()
	for _, q := range []string{
		`SELECT id, event_id, channel, state, attempts, last_status FROM notify_outbox ORDER BY id DESC LIMIT 20`,
		`SELECT channel, burst, next_at, attempts, seq, has_pending FROM notify_bursts`,
		`SELECT stream, last_ms, last_seq, updated_at FROM notify_progress ORDER BY updated_at DESC LIMIT 10`,
		`SELECT user_id, chat_id FROM telegram_chats`,
	} {
		rows, err := db.Query(context.Background(), q)
		if err != nil {
			t.Log(q, err)
			continue
		}
		for rows.Next() {
			v, _ := rows.Values()
			t.Logf("%.40s…: %v", q, v)
		}
		rows.Close()
	}
	for _, m := range s.Telegram().Messages() {
		t.Logf("sent to %d: %q", m.Chat, m.Text)
	}
	var bot tradingv1.SignalBot
	if err := s.Client.Get(context.Background(), types.NamespacedName{Namespace: SampleNamespace, Name: SampleBot}, &bot); err != nil {
		return
	}
	rdb, err := store.Connect(context.Background(), s.Store())
	if err != nil {
		return
	}
	defer rdb.Close()
	h, err := rdb.HGetAll(context.Background(), store.Bot(string(bot.UID))).Result()
	t.Logf("bot hash: %d fields, pause %q (%v)", len(h), h["pause"], err)
	msgs, err := rdb.XRevRangeN(context.Background(), store.ArchiveOf(string(bot.UID)), "+", "-", 5).Result()
	for _, m := range msgs {
		t.Logf("archive %s: %v", m.ID, m.Values["k"])
	}
	t.Logf("archive read: %v", err)
}
