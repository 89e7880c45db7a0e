package telegramfake

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"time"
)

// The Bot API's objects, as much of them as the fake answers
// (https://core.telegram.org/bots/api#available-types).
type (
	user struct {
		ID        int64  `json:"id"`
		IsBot     bool   `json:"is_bot"`
		FirstName string `json:"first_name"`
		Username  string `json:"username,omitempty"`
	}
	chat struct {
		ID   int64  `json:"id"`
		Type string `json:"type"`
	}
	entity struct {
		Type   string `json:"type"`
		Offset int    `json:"offset"`
		Length int    `json:"length"`
	}
	// message is a Message, or an InaccessibleMessage when Date is 0.
	message struct {
		ID          int       `json:"message_id"`
		From        *user     `json:"from,omitempty"`
		Date        int64     `json:"date"`
		EditDate    int64     `json:"edit_date,omitempty"`
		Chat        chat      `json:"chat"`
		Text        string    `json:"text,omitempty"`
		Entities    []entity  `json:"entities,omitempty"`
		ReplyMarkup *keyboard `json:"reply_markup,omitempty"`
	}
	callbackQuery struct {
		ID           string   `json:"id"`
		From         user     `json:"from"`
		Message      *message `json:"message,omitempty"`
		ChatInstance string   `json:"chat_instance"`
		Data         string   `json:"data,omitempty"`
	}
	update struct {
		ID            int            `json:"update_id"`
		Message       *message       `json:"message,omitempty"`
		CallbackQuery *callbackQuery `json:"callback_query,omitempty"`
	}
	keyboard struct {
		InlineKeyboard [][]button `json:"inline_keyboard"`
	}
	// button is an InlineKeyboardButton. Only the fields that make it a button of one kind
	// or another are read: a button needs one.
	button struct {
		Text         string                 `json:"text"`
		CallbackData *string                `json:"callback_data,omitempty"`
		URL          string                 `json:"url,omitempty"`
		CopyText     *struct{ Text string } `json:"copy_text,omitempty"`
		WebApp       json.RawMessage        `json:"web_app,omitempty"`
		LoginURL     json.RawMessage        `json:"login_url,omitempty"`
		Inline       *string                `json:"switch_inline_query,omitempty"`
		InlineHere   *string                `json:"switch_inline_query_current_chat,omitempty"`
		InlineChosen json.RawMessage        `json:"switch_inline_query_chosen_chat,omitempty"`
		Game         json.RawMessage        `json:"callback_game,omitempty"`
		Pay          bool                   `json:"pay,omitempty"`
	}
)

// acts is whether b has an action. go-telegram/bot sends "copy_text":{"text":""} with
// every button, so an empty copy_text is none.
func (b button) acts() bool {
	return b.CallbackData != nil || b.URL != "" || (b.CopyText != nil && b.CopyText.Text != "") ||
		len(b.WebApp) > 0 || len(b.LoginURL) > 0 || b.Inline != nil || b.InlineHere != nil ||
		len(b.InlineChosen) > 0 || len(b.Game) > 0 || b.Pay
}

// keyboardOf is the inline keyboard of a reply_markup (nil for none or a markup of another
// kind), or Telegram's refusal of it.
func keyboardOf(markup string) ([][]Button, string) {
	if markup == "" {
		return nil, ""
	}
	var k struct {
		InlineKeyboard [][]button `json:"inline_keyboard"`
	}
	if err := json.Unmarshal([]byte(markup), &k); err != nil {
		return nil, "Bad Request: can't parse reply keyboard markup JSON object"
	}
	var rows [][]Button
	for _, row := range k.InlineKeyboard {
		var r []Button
		for _, b := range row {
			if !b.acts() {
				return nil, "Bad Request: text buttons are unallowed in the inline keyboard"
			}
			if b.CallbackData != nil && (len(*b.CallbackData) == 0 || len(*b.CallbackData) > 64) {
				return nil, "Bad Request: BUTTON_DATA_INVALID"
			}
			r = append(r, Button{Text: b.Text, Data: deref(b.CallbackData)})
		}
		rows = append(rows, r)
	}
	return rows, ""
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func sameKeyboard(a, b [][]Button) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return false
		}
		for j := range a[i] {
			if a[i][j] != b[i][j] {
				return false
			}
		}
	}
	return true
}

// messageOf is the bot's message m as a Message.
func messageOf(m Sent, from *user) *message {
	out := &message{ID: m.ID, From: from, Date: m.At.Unix(), Chat: chat{ID: m.Chat, Type: "private"}, Text: m.Text}
	if len(m.Buttons) > 0 {
		k := &keyboard{}
		for _, row := range m.Buttons {
			var r []button
			for _, b := range row {
				data := b.Data
				r = append(r, button{Text: b.Text, CallbackData: &data})
			}
			k.InlineKeyboard = append(k.InlineKeyboard, r)
		}
		out.ReplyMarkup = k
	}
	return out
}

// command is a bot_command entity for a text starting with one ("/start abc"), as Telegram
// marks it; libraries route commands by it.
var command = regexp.MustCompile(`^/[A-Za-z0-9_]{1,32}(@[A-Za-z0-9_]+)?`)

// updates is the fake's side of updates: those pending, the callback queries, the webhook.
// Server's mu guards it.
type updates struct {
	lastUpdate int
	pending    []update      // not confirmed by getUpdates, or not yet delivered to the webhook
	changed    chan struct{} // closed (and replaced) when an update is posted
	hook       webhook
	delivering bool // a goroutine delivers pending to hook
	lastQuery  int
	queries    map[string]bool // callback query id → answered
	answers    []CallbackAnswer
}

type webhook struct{ url, secret string }

// CallbackAnswer is the bot's answer to a callback query (a press on a button).
type CallbackAnswer struct {
	QueryID   string
	Text      string
	ShowAlert bool
}

// Answers is the bot's answers to callback queries, oldest first.
func (s *Server) Answers() []CallbackAnswer {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]CallbackAnswer{}, s.answers...)
}

// AnswerTo is the bot's answer to the button press queryID, waiting for it up to within
// (ok false: none came).
func (s *Server) AnswerTo(queryID string, within time.Duration) (text string, ok bool) {
	for deadline := time.Now().Add(within); ; time.Sleep(10 * time.Millisecond) {
		for _, a := range s.Answers() {
			if a.QueryID == queryID {
				return a.Text, true
			}
		}
		if time.Now().After(deadline) {
			return "", false
		}
	}
}

// PostStart posts a message from the private chat chat to the bot, such as "/start abc", and
// is its update_id.
func (s *Server) PostStart(chatID int64, text string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastMsg++
	m := &message{ID: s.lastMsg, From: &user{ID: chatID, FirstName: "Local"}, Date: s.now().Unix(),
		Chat: chat{ID: chatID, Type: "private"}, Text: text}
	if c := command.FindString(text); c != "" {
		m.Entities = []entity{{Type: "bot_command", Length: len(c)}}
	}
	return s.post(update{Message: m})
}

// PressButton posts a press, in the private chat chat, on a button of the bot's message
// messageID that carries data, and is the callback query's id. The message need not exist
// (a forged press): the query then carries an InaccessibleMessage, as Telegram's does for a
// message it no longer shows.
func (s *Server) PressButton(chatID int64, messageID int, data string) (queryID string) {
	from := s.bot()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastQuery++
	queryID = strconv.FormatInt(queryBase+int64(s.lastQuery), 10)
	s.queries[queryID] = false
	m := &message{ID: messageID, Chat: chat{ID: chatID, Type: "private"}}
	if i := s.find(chatID, messageID); i >= 0 {
		m = messageOf(s.sent[i], from)
	}
	s.post(update{CallbackQuery: &callbackQuery{ID: queryID, From: user{ID: chatID, FirstName: "Local"},
		Message: m, ChatInstance: strconv.FormatInt(chatID, 10), Data: data}})
	return queryID
}

// queryBase makes a query's id a long number, as Telegram's are, unlike any update_id.
const queryBase = 4_000_000_000_000_000_000

// post numbers u, queues it, wakes a long poll and starts a webhook delivery. It holds mu.
func (s *Server) post(u update) int {
	s.lastUpdate++
	u.ID = s.lastUpdate
	s.pending = append(s.pending, u)
	close(s.changed)
	s.changed = make(chan struct{})
	s.deliver()
	return u.ID
}

func (s *Server) answerCallbackQuery(w http.ResponseWriter, p map[string]string) {
	id := p["callback_query_id"]
	s.mu.Lock()
	defer s.mu.Unlock()
	if answered, known := s.queries[id]; !known || answered {
		refuse(w, http.StatusBadRequest, "Bad Request: query is too old and response timeout expired or query ID is invalid")
		return
	}
	s.queries[id] = true
	s.answers = append(s.answers, CallbackAnswer{QueryID: id, Text: p["text"], ShowAlert: p["show_alert"] == "true"})
	answerOK(w, true)
}

// maxPoll is the longest a getUpdates waits here, whatever its timeout: a test or a person
// should not wait on the fake.
const maxPoll = 10 * time.Second

func (s *Server) getUpdates(ctx context.Context, w http.ResponseWriter, p map[string]string) {
	offset, _ := strconv.Atoi(p["offset"])
	limit, err := strconv.Atoi(p["limit"])
	if err != nil || limit > 100 {
		limit = 100
	}
	limit = max(limit, 1)
	timeout, _ := strconv.Atoi(p["timeout"])
	wait := time.NewTimer(min(time.Duration(max(timeout, 0))*time.Second, maxPoll))
	defer wait.Stop()
	waiting := timeout > 0
	s.mu.Lock()
	s.confirm(offset)
	for {
		if s.hook.url != "" {
			s.mu.Unlock()
			refuse(w, http.StatusConflict, "Conflict: can't use getUpdates method while webhook is active; "+
				"use deleteWebhook to delete the webhook first")
			return
		}
		if len(s.pending) > 0 || !waiting {
			got := append([]update{}, s.pending[:min(limit, len(s.pending))]...)
			s.mu.Unlock()
			answerOK(w, got)
			return
		}
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-wait.C:
			waiting = false
		case <-s.ctx.Done(): // Close: answer what there is, now
			waiting = false
		case <-ctx.Done(): // the caller is gone
			return
		}
		s.mu.Lock()
	}
}

// confirm forgets the updates below offset, or all but the last -offset. It holds mu.
func (s *Server) confirm(offset int) {
	switch {
	case offset > 0:
		i := 0
		for i < len(s.pending) && s.pending[i].ID < offset {
			i++
		}
		s.pending = s.pending[i:]
	case offset < 0 && -offset < len(s.pending):
		s.pending = s.pending[len(s.pending)+offset:]
	}
}

// secretToken is what setWebhook takes as a secret_token.
var secretToken = regexp.MustCompile(`^[A-Za-z0-9_-]{1,256}$`)

func (s *Server) setWebhook(w http.ResponseWriter, p map[string]string) {
	if p["url"] == "" { // Telegram: an empty url removes the webhook
		s.deleteWebhook(w, p)
		return
	}
	if u, err := url.Parse(p["url"]); err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		refuse(w, http.StatusBadRequest, "Bad Request: bad webhook: invalid webhook URL specified")
		return
	}
	if sec := p["secret_token"]; sec != "" && !secretToken.MatchString(sec) {
		refuse(w, http.StatusBadRequest, "Bad Request: secret token contains unallowed characters")
		return
	}
	s.mu.Lock()
	s.hook = webhook{url: p["url"], secret: p["secret_token"]}
	if p["drop_pending_updates"] == "true" {
		s.pending = nil
	}
	s.deliver()
	close(s.changed) // a long poll under way ends with 409, as Telegram's does
	s.changed = make(chan struct{})
	s.mu.Unlock()
	reply(w, http.StatusOK, answer{OK: true, Result: true, Description: "Webhook was set"})
}

func (s *Server) deleteWebhook(w http.ResponseWriter, p map[string]string) {
	s.mu.Lock()
	s.hook = webhook{}
	if p["drop_pending_updates"] == "true" {
		s.pending = nil
	}
	s.mu.Unlock()
	reply(w, http.StatusOK, answer{OK: true, Result: true, Description: "Webhook was deleted"})
}

func (s *Server) getWebhookInfo(w http.ResponseWriter) {
	s.mu.Lock()
	defer s.mu.Unlock()
	answerOK(w, map[string]any{"url": s.hook.url, "has_custom_certificate": false, "pending_update_count": len(s.pending)})
}

// deliver starts delivering the pending updates to the webhook, if one is set and no
// delivery is under way. It holds mu.
func (s *Server) deliver() {
	if s.hook.url == "" || len(s.pending) == 0 || s.delivering || s.closed {
		return
	}
	s.delivering = true
	s.hooks.Add(1)
	go s.deliverAll()
}

// deliverAll POSTs the pending updates to the webhook one at a time, in order, until none
// is left or the webhook is deleted.
func (s *Server) deliverAll() {
	defer s.hooks.Done()
	for {
		s.mu.Lock()
		if s.hook.url == "" || len(s.pending) == 0 || s.closed {
			s.delivering = false
			s.mu.Unlock()
			return
		}
		u, h := s.pending[0], s.hook
		s.pending = s.pending[1:]
		s.mu.Unlock()
		body, _ := json.Marshal(u)
		for try := range hookTries {
			if try > 0 {
				select {
				case <-s.ctx.Done():
					return
				case <-time.After(hookGap):
				}
			}
			if s.push(h, body) {
				break
			}
		}
	}
}

// A webhook gets an update hookTries times, hookGap apart, each within hookTimeout.
const (
	hookTries   = 3
	hookGap     = 200 * time.Millisecond
	hookTimeout = 5 * time.Second
)

// hookClient delivers to a webhook straight, never through a proxy of the environment: the
// webhook is on the local stack.
var hookClient = &http.Client{Transport: &http.Transport{Proxy: nil}}

// push POSTs an update to h and is whether h took it (a 2xx).
func (s *Server) push(h webhook, body []byte) bool {
	ctx, cancel := context.WithTimeout(s.ctx, hookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.url, bytes.NewReader(body))
	if err != nil {
		return false
	}
	req.Header.Set("Content-Type", "application/json")
	if h.secret != "" {
		req.Header.Set("X-Telegram-Bot-Api-Secret-Token", h.secret)
	}
	resp, err := hookClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxBody))
	return resp.StatusCode >= 200 && resp.StatusCode < 300
}

// control serves /fake/: a person's or a test's hand on the chats' side.
func (s *Server) control(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/fake/messages":
		if r.Method != http.MethodGet {
			controlError(w, http.StatusMethodNotAllowed, "GET only")
			return
		}
		controlReply(w, http.StatusOK, s.Messages())
	case "/fake/updates/message":
		var in struct {
			Chat int64  `json:"chat"`
			Text string `json:"text"`
		}
		if !readControl(w, r, &in) {
			return
		}
		if in.Chat == 0 || in.Text == "" {
			controlError(w, http.StatusBadRequest, "chat and text are needed")
			return
		}
		controlReply(w, http.StatusOK, map[string]int{"updateId": s.PostStart(in.Chat, in.Text)})
	case "/fake/updates/press":
		var in struct {
			Chat      int64  `json:"chat"`
			MessageID int    `json:"messageId"`
			Data      string `json:"data"`
		}
		if !readControl(w, r, &in) {
			return
		}
		if in.Chat == 0 || in.MessageID == 0 {
			controlError(w, http.StatusBadRequest, "chat and messageId are needed")
			return
		}
		controlReply(w, http.StatusOK, map[string]string{"queryId": s.PressButton(in.Chat, in.MessageID, in.Data)})
	default:
		controlError(w, http.StatusNotFound, "not found")
	}
}

// readControl reads a control call's JSON body into in, or answers why it cannot. An
// unknown field is refused: a person's "message_id" would otherwise read as no id.
func readControl(w http.ResponseWriter, r *http.Request, in any) bool {
	if r.Method != http.MethodPost {
		controlError(w, http.StatusMethodNotAllowed, "POST only")
		return false
	}
	d := json.NewDecoder(io.LimitReader(r.Body, maxBody))
	d.DisallowUnknownFields()
	if err := d.Decode(in); err != nil {
		controlError(w, http.StatusBadRequest, "body: "+err.Error())
		return false
	}
	return true
}

func controlReply(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func controlError(w http.ResponseWriter, code int, msg string) {
	controlReply(w, code, map[string]string{"error": msg})
}
