package telegramfake_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/sigops/sigops/runtime/telegram/telegramfake"
)

const token = "123456:test-token-AAAA"

// apiAnswer is a Bot API answer.
type apiAnswer struct {
	OK          bool            `json:"ok"`
	Result      json.RawMessage `json:"result"`
	ErrorCode   int             `json:"error_code"`
	Description string          `json:"description"`
}

// call makes a Bot API call with a form, as a bot would.
func call(t *testing.T, fake *telegramfake.Server, method string, params url.Values) (int, apiAnswer) {
	t.Helper()
	resp, err := http.PostForm(fake.URL+"/bot"+token+"/"+method, params)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var a apiAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		t.Fatalf("%s: %v", method, err)
	}
	if a.OK != (resp.StatusCode == http.StatusOK) || (!a.OK && a.ErrorCode != resp.StatusCode) {
		t.Fatalf("%s: status %d with %+v", method, resp.StatusCode, a)
	}
	return resp.StatusCode, a
}

// mustCall is call that must succeed, its result decoded into out.
func mustCall(t *testing.T, fake *telegramfake.Server, method string, params url.Values, out any) {
	t.Helper()
	code, a := call(t, fake, method, params)
	if code != http.StatusOK {
		t.Fatalf("%s: %d %s", method, code, a.Description)
	}
	if out != nil {
		if err := json.Unmarshal(a.Result, out); err != nil {
			t.Fatalf("%s result %s: %v", method, a.Result, err)
		}
	}
}

func keyboard(data ...string) string {
	var row []map[string]string
	for _, d := range data {
		row = append(row, map[string]string{"text": "Approve", "callback_data": d})
	}
	b, _ := json.Marshal(map[string]any{"inline_keyboard": [][]map[string]string{row}})
	return string(b)
}

type message struct {
	ID   int   `json:"message_id"`
	Date int64 `json:"date"`
	Chat struct {
		ID   int64  `json:"id"`
		Type string `json:"type"`
	} `json:"chat"`
	From struct {
		ID    int64 `json:"id"`
		IsBot bool  `json:"is_bot"`
	} `json:"from"`
	Text        string          `json:"text"`
	ReplyMarkup json.RawMessage `json:"reply_markup"`
}

// sendMessage keeps an inline keyboard and answers the Message; it refuses a callback_data
// out of 1 to 64 bytes and a button with no action, and a JSON body's markup is an object.
func TestSendMessageKeepsTheKeyboard(t *testing.T) {
	fake := telegramfake.Start(token)
	defer fake.Close()
	var m message
	mustCall(t, fake, "sendMessage", url.Values{"chat_id": {"42"}, "text": {"Approve grid-1?"},
		"parse_mode": {"HTML"}, "reply_markup": {keyboard("approve:grid-1", "deny:grid-1")}}, &m)
	if m.ID != 1 || m.Chat.ID != 42 || m.Chat.Type != "private" || m.Text != "Approve grid-1?" || m.Date == 0 ||
		!strings.Contains(string(m.ReplyMarkup), `"callback_data":"deny:grid-1"`) {
		t.Fatalf("result %+v", m)
	}
	want := [][]telegramfake.Button{{{Text: "Approve", Data: "approve:grid-1"}, {Text: "Approve", Data: "deny:grid-1"}}}
	if got := fake.Messages(); len(got) != 1 || len(got[0].Buttons) != 1 || len(got[0].Buttons[0]) != 2 ||
		got[0].Buttons[0][0] != want[0][0] || got[0].Buttons[0][1] != want[0][1] {
		t.Fatalf("kept %+v", got)
	}
	for i, markup := range []string{keyboard(strings.Repeat("x", 65)), keyboard(""), `{"inline_keyboard":[[{"text":"A"}]]}`, `{`} {
		code, a := call(t, fake, "sendMessage", url.Values{"chat_id": {"43"}, "text": {"t"}, "reply_markup": {markup}})
		if code != http.StatusBadRequest || !strings.HasPrefix(a.Description, "Bad Request: ") {
			t.Errorf("markup %d: %d %s", i, code, a.Description)
		}
	}
	code, a := call(t, fake, "sendMessage", url.Values{"chat_id": {"43"}, "text": {"t"}, "reply_markup": {keyboard(strings.Repeat("x", 65))}})
	if code != http.StatusBadRequest || a.Description != "Bad Request: BUTTON_DATA_INVALID" {
		t.Errorf("65 bytes of callback_data: %d %s", code, a.Description)
	}
	resp, err := http.Post(fake.URL+"/bot"+token+"/sendMessage", "application/json",
		strings.NewReader(`{"chat_id":44,"text":"json","reply_markup":{"inline_keyboard":[[{"text":"Go","callback_data":"go"}]]}}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if got := fake.Messages(); resp.StatusCode != 200 || len(got) != 2 || got[1].Buttons[0][0].Data != "go" {
		t.Fatalf("JSON body: %d, %+v", resp.StatusCode, got)
	}
}

// editMessageText edits the bot's message in its chat only, refuses an edit that changes
// nothing, and removes the keyboard when no reply_markup comes, as Telegram does.
func TestEditMessageText(t *testing.T) {
	fake := telegramfake.Start(token)
	defer fake.Close()
	mustCall(t, fake, "sendMessage", url.Values{"chat_id": {"42"}, "text": {"Approve?"}, "reply_markup": {keyboard("a")}}, nil)
	same := url.Values{"chat_id": {"42"}, "message_id": {"1"}, "text": {"Approve?"}, "reply_markup": {keyboard("a")}}
	if code, a := call(t, fake, "editMessageText", same); code != 400 || !strings.HasPrefix(a.Description, "Bad Request: message is not modified: ") {
		t.Fatalf("same content: %d %s", code, a.Description)
	}
	for _, p := range []url.Values{{"chat_id": {"43"}, "message_id": {"1"}, "text": {"x"}}, {"chat_id": {"42"}, "message_id": {"2"}, "text": {"x"}}} {
		if code, a := call(t, fake, "editMessageText", p); code != 400 || a.Description != "Bad Request: message to edit not found" {
			t.Fatalf("%v: %d %s", p, code, a.Description)
		}
	}
	var m message
	mustCall(t, fake, "editMessageText", url.Values{"chat_id": {"42"}, "message_id": {"1"}, "text": {"Approved by you"}}, &m)
	got := fake.Messages()
	if m.ID != 1 || m.Text != "Approved by you" || len(got) != 1 || got[0].Text != "Approved by you" || got[0].Buttons != nil || got[0].Edited != 1 {
		t.Fatalf("edited: result %+v, kept %+v", m, got)
	}
}

// A press is answered once; an unknown query id is refused.
func TestAnswerCallbackQueryOnce(t *testing.T) {
	fake := telegramfake.Start(token)
	defer fake.Close()
	id := fake.PressButton(42, 7, "approve:x")
	p := url.Values{"callback_query_id": {id}, "text": {"Approved"}, "show_alert": {"true"}}
	mustCall(t, fake, "answerCallbackQuery", p, nil)
	if code, a := call(t, fake, "answerCallbackQuery", p); code != 400 || !strings.Contains(a.Description, "query ID is invalid") {
		t.Fatalf("second answer: %d %s", code, a.Description)
	}
	if code, _ := call(t, fake, "answerCallbackQuery", url.Values{"callback_query_id": {"1"}}); code != 400 {
		t.Fatalf("unknown query: %d", code)
	}
	if got := fake.Answers(); len(got) != 1 || got[0] != (telegramfake.CallbackAnswer{QueryID: id, Text: "Approved", ShowAlert: true}) {
		t.Fatalf("answers %+v", got)
	}
}

type update struct {
	ID      int      `json:"update_id"`
	Message *message `json:"message"`
	Query   *struct {
		ID      string `json:"id"`
		From    struct{ ID int64 }
		Message message `json:"message"`
		Data    string  `json:"data"`
	} `json:"callback_query"`
}

// getUpdates numbers updates from 1, forgets those below offset and answers up to limit.
func TestGetUpdatesConfirmsByOffset(t *testing.T) {
	fake := telegramfake.Start(token)
	defer fake.Close()
	mustCall(t, fake, "sendMessage", url.Values{"chat_id": {"42"}, "text": {"Approve?"}, "reply_markup": {keyboard("a")}}, nil)
	if id := fake.PostStart(42, "/start abc"); id != 1 {
		t.Fatalf("first update_id %d", id)
	}
	q := fake.PressButton(42, 1, "a")
	var got []update
	mustCall(t, fake, "getUpdates", url.Values{"limit": {"1"}}, &got)
	if len(got) != 1 || got[0].ID != 1 || got[0].Message.Text != "/start abc" || got[0].Message.Chat.Type != "private" ||
		got[0].Message.From.ID != 42 || got[0].Message.From.IsBot || got[0].Message.ID != 2 {
		t.Fatalf("limit 1: %+v", got)
	}
	mustCall(t, fake, "getUpdates", url.Values{"offset": {"2"}}, &got)
	if len(got) != 1 || got[0].ID != 2 || got[0].Query == nil || got[0].Query.ID != q || got[0].Query.Data != "a" ||
		got[0].Query.Message.Text != "Approve?" || got[0].Query.From.ID != 42 {
		t.Fatalf("offset 2: %+v", got)
	}
	mustCall(t, fake, "getUpdates", url.Values{}, &got)
	if len(got) != 1 {
		t.Fatalf("update 2 is not confirmed yet: %+v", got)
	}
	mustCall(t, fake, "getUpdates", url.Values{"offset": {"3"}}, &got)
	if len(got) != 0 {
		t.Fatalf("all confirmed: %+v", got)
	}
}

// A long poll answers as soon as an update is posted, and Close ends one at once.
func TestGetUpdatesLongPolls(t *testing.T) {
	fake := telegramfake.Start(token)
	defer fake.Close()
	time.AfterFunc(100*time.Millisecond, func() { fake.PostStart(42, "hello") })
	start := time.Now()
	var got []update
	mustCall(t, fake, "getUpdates", url.Values{"timeout": {"30"}}, &got)
	if took := time.Since(start); len(got) != 1 || took < 100*time.Millisecond || took > 2*time.Second {
		t.Fatalf("got %+v after %s", got, took)
	}

	other := telegramfake.Start(token)
	done := make(chan int)
	go func() {
		resp, err := http.PostForm(other.URL+"/bot"+token+"/getUpdates", url.Values{"timeout": {"10"}})
		if err == nil {
			resp.Body.Close()
			done <- resp.StatusCode
			return
		}
		done <- 0
	}()
	time.Sleep(50 * time.Millisecond)
	start = time.Now()
	other.Close()
	select {
	case <-done:
	case <-time.After(time.Second):
		t.Fatal("a long poll outlived Close")
	}
	if took := time.Since(start); took > time.Second {
		t.Fatalf("Close took %s", took)
	}
}

// With a webhook, getUpdates is 409 and an update goes to the webhook with the secret,
// again after a failure; deleteWebhook brings getUpdates back.
func TestWebhook(t *testing.T) {
	fake := telegramfake.Start(token)
	defer fake.Close()
	var mu sync.Mutex
	var tries int
	got := make(chan update, 1)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tries++
		first := tries == 1
		mu.Unlock()
		if r.Header.Get("X-Telegram-Bot-Api-Secret-Token") != "s3cret_-x" || first {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		var u update
		_ = json.NewDecoder(r.Body).Decode(&u)
		got <- u
	}))
	defer recv.Close()
	mustCall(t, fake, "setWebhook", url.Values{"url": {recv.URL + "/hook"}, "secret_token": {"s3cret_-x"}}, nil)
	if code, a := call(t, fake, "getUpdates", url.Values{}); code != http.StatusConflict || !strings.HasPrefix(a.Description, "Conflict: ") {
		t.Fatalf("getUpdates with a webhook: %d %s", code, a.Description)
	}
	fake.PostStart(42, "/start")
	select {
	case u := <-got:
		if u.ID != 1 || u.Message == nil || u.Message.Text != "/start" {
			t.Fatalf("delivered %+v", u)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("no delivery")
	}
	mu.Lock()
	if tries != 2 {
		t.Errorf("%d tries, want 2 (one refused, one taken)", tries)
	}
	mu.Unlock()
	if code, _ := call(t, fake, "setWebhook", url.Values{"url": {recv.URL}, "secret_token": {"no spaces"}}); code != 400 {
		t.Errorf("a secret with a space: %d", code)
	}
	mustCall(t, fake, "deleteWebhook", url.Values{}, nil)
	fake.PostStart(42, "again")
	var ups []update
	mustCall(t, fake, "getUpdates", url.Values{}, &ups)
	if len(ups) != 1 || ups[0].ID != 2 {
		t.Fatalf("after deleteWebhook: %+v", ups)
	}
}

// The control surface posts messages and presses and shows what the bot sent.
func TestControlSurface(t *testing.T) {
	fake := telegramfake.Start(token)
	defer fake.Close()
	post := func(path, body string, out any) int {
		resp, err := http.Post(fake.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if out != nil {
			_ = json.NewDecoder(resp.Body).Decode(out)
		}
		return resp.StatusCode
	}
	var u struct{ UpdateID int }
	if code := post("/fake/updates/message", `{"chat":123,"text":"/start abc"}`, &u); code != 200 || u.UpdateID != 1 {
		t.Fatalf("message: %d %+v", code, u)
	}
	mustCall(t, fake, "sendMessage", url.Values{"chat_id": {"123"}, "text": {"Approve?"}, "reply_markup": {keyboard("ok")}}, nil)
	var q struct{ QueryID string }
	if code := post("/fake/updates/press", `{"chat":123,"messageId":2,"data":"ok"}`, &q); code != 200 || q.QueryID == "" {
		t.Fatalf("press: %d %+v", code, q)
	}
	mustCall(t, fake, "answerCallbackQuery", url.Values{"callback_query_id": {q.QueryID}}, nil)
	var ups []update
	mustCall(t, fake, "getUpdates", url.Values{}, &ups)
	if len(ups) != 2 || ups[0].Message.Text != "/start abc" || ups[1].Query.ID != q.QueryID {
		t.Fatalf("updates %+v", ups)
	}
	resp, err := http.Get(fake.URL + "/fake/messages")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	var sent []telegramfake.Sent
	if err := json.Unmarshal(body, &sent); err != nil || len(sent) != 1 || sent[0].ID != 2 || sent[0].Chat != 123 ||
		sent[0].Buttons[0][0].Data != "ok" || !strings.Contains(string(body), `"buttons":[[{"text":"Approve","data":"ok"}]]`) {
		t.Fatalf("messages %s: %v", body, err)
	}
	for path, want := range map[string]int{
		"/fake/updates/other":   404,
		"/fake/updates/message": 400, // a field this surface does not know
	} {
		if code := post(path, `{"chat":1,"message_id":2}`, nil); code != want {
			t.Errorf("%s: %d, want %d", path, code, want)
		}
	}
	if resp, err := http.Get(fake.URL + "/fake/updates/press"); err != nil || resp.StatusCode != 405 {
		t.Errorf("GET press: %v %v", resp.StatusCode, err)
	} else {
		resp.Body.Close()
	}
}

// StartAt listens where it is told, on loopback only.
func TestStartAt(t *testing.T) {
	fake, err := telegramfake.StartAt("127.0.0.1:0", token)
	if err != nil {
		t.Fatal(err)
	}
	defer fake.Close()
	var me struct{ Username string }
	mustCall(t, fake, "getMe", nil, &me)
	if me.Username != "sigops_local_bot" || fake.Username() != me.Username {
		t.Fatalf("getMe %+v", me)
	}
	if _, err := telegramfake.StartAt("0.0.0.0:0", token); err == nil {
		t.Fatal("listening beyond loopback")
	}
}

// go-telegram/bot, the client sigops uses, works against the fake: getMe, a message with
// an inline keyboard, its edit, and a press it polls for and answers.
func TestGoTelegramBot(t *testing.T) {
	fake := telegramfake.Start(token)
	defer fake.Close()
	presses := make(chan *models.CallbackQuery, 1)
	// A poll timeout of 2 s makes the library ask getUpdates for 1 s (it asks one less).
	b, err := bot.New(token, bot.WithServerURL(fake.URL), bot.WithHTTPClient(2*time.Second, &http.Client{Timeout: 5 * time.Second}),
		bot.WithDefaultHandler(func(ctx context.Context, b *bot.Bot, u *models.Update) {
			if u.CallbackQuery != nil {
				presses <- u.CallbackQuery
			}
		}))
	if err != nil {
		t.Fatalf("bot.New, which calls getMe: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	m, err := b.SendMessage(ctx, &bot.SendMessageParams{ChatID: int64(42), Text: "Approve grid-1?", ParseMode: models.ParseModeHTML,
		ReplyMarkup: models.InlineKeyboardMarkup{InlineKeyboard: [][]models.InlineKeyboardButton{{{Text: "Approve", CallbackData: "approve:grid-1"}}}}})
	if err != nil || m.ID != 1 || m.Chat.ID != 42 || len(m.ReplyMarkup.InlineKeyboard) != 1 {
		t.Fatalf("SendMessage: %+v, %v", m, err)
	}
	if got := fake.Messages(); len(got) != 1 || got[0].Buttons[0][0] != (telegramfake.Button{Text: "Approve", Data: "approve:grid-1"}) {
		t.Fatalf("kept %+v", got)
	}
	fake.PressButton(42, m.ID, "approve:grid-1")
	go b.Start(ctx)
	var q *models.CallbackQuery
	select {
	case q = <-presses:
	case <-ctx.Done():
		t.Fatal("the press did not reach the bot")
	}
	if q.Data != "approve:grid-1" || q.Message.Message == nil || q.Message.Message.Text != "Approve grid-1?" {
		t.Fatalf("press %+v", q)
	}
	if ok, err := b.AnswerCallbackQuery(ctx, &bot.AnswerCallbackQueryParams{CallbackQueryID: q.ID, Text: "Approved"}); !ok || err != nil {
		t.Fatalf("AnswerCallbackQuery: %v %v", ok, err)
	}
	if _, err := b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: int64(42), MessageID: m.ID, Text: "Approved"}); err != nil {
		t.Fatalf("EditMessageText: %v", err)
	}
	_, err = b.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: int64(42), MessageID: m.ID, Text: "Approved"})
	if err == nil || !strings.Contains(err.Error(), "message is not modified") {
		t.Fatalf("an edit that changes nothing: %v", err)
	}
	if got := fake.Messages(); got[0].Text != "Approved" || got[0].Buttons != nil || len(fake.Answers()) != 1 {
		t.Fatalf("after the answer and the edit: %+v, %+v", got, fake.Answers())
	}
}
