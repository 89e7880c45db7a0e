// Package telegramfake is a stand-in for Telegram's Bot API on 127.0.0.1, for tests and the
// local stack: it keeps what the bot sent, hands the bot the updates a test or a person
// posts, and refuses what Telegram refuses. Each rule is Telegram's published one
// (https://core.telegram.org/bots/api, its sections named below, and the bots FAQ):
//
//   - a method is POST or GET /bot<token>/<method>, its name in any case ("Making
//     requests"); another token is 401 Unauthorized; an unknown method is 404 Not Found;
//   - parameters come as a query string, a form (urlencoded or multipart; an empty body is
//     no parameters) or a JSON body ("Making requests");
//   - an answer is {"ok":true,"result":...} or {"ok":false,"error_code":N,"description":...};
//   - getMe is the bot: {"id":1,"is_bot":true,"username":Username()};
//   - sendMessage needs chat_id and a text of 1 to 4,096 characters (400 otherwise);
//     parse_mode is ignored; reply_markup is kept when it is an inline keyboard, whose
//     buttons' callback_data is 1 to 64 bytes (400 BUTTON_DATA_INVALID) and a button with
//     no action is refused ("InlineKeyboardButton"); the result is the Message;
//   - more than one message a second to one chat (within 900 ms: a tenth is left for the
//     time between the sender's clock and this one), or thirty a second in all, is 429 Too
//     Many Requests with parameters.retry_after (seconds), as Telegram answers a bot over
//     its limits (bots FAQ);
//   - editMessageText edits a message the bot sent to chat_id: 400 "message to edit not
//     found" for another, 400 "message is not modified" when text and keyboard are those
//     it has; no reply_markup removes the keyboard, as Telegram does ("Updating messages");
//   - a message's id counts up across the bot's messages and the chats' (PostStart);
//   - updates are numbered from 1; getUpdates forgets those below offset (a negative offset
//     keeps the last -offset), answers up to limit (1 to 100, default 100) and, when none is
//     pending, waits up to timeout seconds (at most 10 here) for one ("getUpdates");
//   - getUpdates while a webhook is set is 409 Conflict; setWebhook(url, secret_token,
//     drop_pending_updates) and deleteWebhook switch modes; with a webhook, each update is
//     POSTed to it as JSON, in order, with X-Telegram-Bot-Api-Secret-Token when a secret
//     was set ("setWebhook"). Telegram retries a refused update for a long while; the fake
//     tries 3 times, 200 ms apart, then drops it, so that a test does not wait;
//   - a chat's message starting with a command ("/start abc") carries its bot_command
//     entity ("MessageEntity"), by which libraries route commands; a press on a message
//     the bot did not send carries an InaccessibleMessage (date 0);
//   - answerCallbackQuery answers a query once: an unknown or answered id is 400 "query is
//     too old and response timeout expired or query ID is invalid".
//
// A test drives the chats' side with PostStart and PressButton. A person driving the local
// stack has the same through HTTP on the fake's address, without authentication (it
// listens on loopback only):
//
//   - GET /fake/messages: the bot's messages, oldest first, as a JSON array of
//     {"id","chat","text","silent","at","buttons":[[{"text","data"}]],"edited"};
//   - POST /fake/updates/message {"chat":123,"text":"/start abc"}: a message from the
//     private chat 123 to the bot; answers {"updateId":N};
//   - POST /fake/updates/press {"chat":123,"messageId":5,"data":"..."}: a press on a
//     button of message 5 (which need not exist: a forged press); answers {"queryId":"..."};
//   - anything else under /fake/ is 404.
package telegramfake

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Button is an inline keyboard button: its label and its callback_data ("" for a button of
// another kind, such as a link).
type Button struct {
	Text string `json:"text"`
	Data string `json:"data,omitempty"`
}

// Sent is a message the bot sent, as its edits left it.
type Sent struct {
	ID      int        `json:"id"`
	Chat    int64      `json:"chat"`
	Text    string     `json:"text"`
	Silent  bool       `json:"silent"`
	At      time.Time  `json:"at"`
	Buttons [][]Button `json:"buttons,omitempty"`
	Edited  int        `json:"edited"` // how many editMessageText changed it
}

// DefaultUsername is the fake bot's username until SetUsername.
const DefaultUsername = "sigops_local_bot"

// Server is the stand-in. The zero value is not usable: Start it.
type Server struct {
	URL   string
	token string
	srv   *httptest.Server
	now   func() time.Time
	// ctx ends when Close begins, so that long polls and webhook deliveries end with it.
	ctx   context.Context
	stop  context.CancelFunc
	hooks sync.WaitGroup // the webhook delivery under way

	mu       sync.Mutex
	closed   bool
	username string
	sent     []Sent
	lastMsg  int // the last message id given
	down     bool
	// throttled sendMessage calls are still to be answered 429 with retryAfter (Throttle).
	throttled, retryAfter int
	times                 map[int64][]time.Time // recent sends per chat
	all                   []time.Time           // recent sends of the bot
	updates
}

func newServer(token string) *Server {
	s := &Server{token: token, now: time.Now, username: DefaultUsername, times: map[int64][]time.Time{}}
	s.ctx, s.stop = context.WithCancel(context.Background())
	s.queries = map[string]bool{}
	s.changed = make(chan struct{})
	return s
}

// Start serves the Bot API of token on a free 127.0.0.1 port until Close.
func Start(token string) *Server {
	s := newServer(token)
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// StartAt serves the Bot API of token on addr (such as 127.0.0.1:8081) until Close. addr
// must be a loopback address: the control surface under /fake/ has no authentication.
func StartAt(addr, token string) (*Server, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("telegramfake: %w", err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return nil, fmt.Errorf("telegramfake: %s is not a loopback address", addr)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("telegramfake: %w", err)
	}
	s := newServer(token)
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	_ = s.srv.Listener.Close() // the free port httptest took; addr's is used instead
	s.srv.Listener = l
	s.srv.Start()
	s.URL = s.srv.URL
	return s, nil
}

// Close stops the server: long polls answer at once and a webhook delivery gives up.
func (s *Server) Close() {
	s.mu.Lock()
	s.closed = true // no delivery starts after this, so that hooks.Wait is final
	s.mu.Unlock()
	s.stop()
	s.srv.Close()
	s.hooks.Wait()
}

// Messages is what the bot sent, oldest first.
func (s *Server) Messages() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	// An edit replaces Buttons rather than writing into it, so sharing them is safe.
	return append([]Sent{}, s.sent...)
}

// Throttle makes the next n sendMessage calls answer 429 with retry_after seconds, as
// Telegram answers a bot it throttles for reasons of its own (flood control beyond the
// published limits).
func (s *Server) Throttle(n, retryAfter int) {
	s.mu.Lock()
	s.throttled, s.retryAfter = n, retryAfter
	s.mu.Unlock()
}

// SetDown makes every Bot API call fail with 502 (Telegram unreachable) until
// SetDown(false). The control surface under /fake/ stays up.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	s.down = down
	s.mu.Unlock()
}

// Username is the bot's username, as getMe answers it.
func (s *Server) Username() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.username
}

// SetUsername changes the bot's username (DefaultUsername until then).
func (s *Server) SetUsername(name string) {
	s.mu.Lock()
	s.username = name
	s.mu.Unlock()
}

type answer struct {
	OK          bool           `json:"ok"`
	Result      any            `json:"result,omitempty"`
	ErrorCode   int            `json:"error_code,omitempty"`
	Description string         `json:"description,omitempty"`
	Parameters  map[string]int `json:"parameters,omitempty"`
}

func reply(w http.ResponseWriter, code int, a answer) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(a)
}

func refuse(w http.ResponseWriter, code int, desc string) {
	reply(w, code, answer{ErrorCode: code, Description: desc})
}

func answerOK(w http.ResponseWriter, result any) {
	reply(w, http.StatusOK, answer{OK: true, Result: result})
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/fake/") {
		s.control(w, r)
		return
	}
	s.mu.Lock()
	down := s.down
	s.mu.Unlock()
	if down {
		http.Error(w, "bad gateway", http.StatusBadGateway)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	token, method, ok2 := strings.Cut(rest, "/")
	if !ok || !ok2 || token != s.token {
		refuse(w, http.StatusUnauthorized, "Unauthorized")
		return
	}
	if r.Method != http.MethodPost && r.Method != http.MethodGet {
		refuse(w, http.StatusNotFound, "Not Found")
		return
	}
	params, err := paramsOf(r)
	if err != nil {
		refuse(w, http.StatusBadRequest, "Bad Request: "+err.Error())
		return
	}
	s.call(w, r.Context(), strings.ToLower(method), params)
}

// call serves a Bot API method; its name is lower case (Telegram's are case-insensitive).
func (s *Server) call(w http.ResponseWriter, ctx context.Context, method string, p map[string]string) {
	switch method {
	case "getme":
		s.getMe(w)
	case "sendmessage":
		s.sendMessage(w, p)
	case "editmessagetext":
		s.editMessageText(w, p)
	case "answercallbackquery":
		s.answerCallbackQuery(w, p)
	case "getupdates":
		s.getUpdates(ctx, w, p)
	case "setwebhook":
		s.setWebhook(w, p)
	case "deletewebhook":
		s.deleteWebhook(w, p)
	case "getwebhookinfo":
		s.getWebhookInfo(w)
	default:
		refuse(w, http.StatusNotFound, "Not Found")
	}
}

// maxBody is the most a call's body may hold here; sigops sends no files.
const maxBody = 1 << 20

// paramsOf reads a call's parameters from its query, form or JSON body.
func paramsOf(r *http.Request) (map[string]string, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, err
	}
	if len(body) > maxBody {
		return nil, errors.New("request entity too large")
	}
	out := map[string]string{}
	switch {
	case len(body) == 0:
		// No parameters: a multipart reader would call an empty body truncated, but
		// go-telegram/bot sends one, with a multipart type, for a call without parameters.
	case strings.HasPrefix(r.Header.Get("Content-Type"), "application/json"):
		if err := jsonParams(body, out); err != nil {
			return nil, err
		}
	default:
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err := r.ParseMultipartForm(maxBody); err != nil && err != http.ErrNotMultipart {
			return nil, err
		}
		for k, v := range r.PostForm {
			out[k] = v[0]
		}
	}
	for k, v := range r.URL.Query() {
		if _, ok := out[k]; !ok {
			out[k] = v[0]
		}
	}
	return out, nil
}

// jsonParams puts a JSON body's fields into out: a string as it is, anything else as its
// JSON text (so a reply_markup object reads as a form's would).
func jsonParams(body []byte, out map[string]string) error {
	d := json.NewDecoder(bytes.NewReader(body))
	d.UseNumber() // a chat id is an int64: a float64 would round it
	var fields map[string]any
	if err := d.Decode(&fields); err != nil {
		return err
	}
	for k, v := range fields {
		switch v := v.(type) {
		case string:
			out[k] = v
		default:
			b, _ := json.Marshal(v)
			out[k] = string(b)
		}
	}
	return nil
}

func (s *Server) getMe(w http.ResponseWriter) {
	answerOK(w, s.bot())
}

// bot is the bot as a User.
func (s *Server) bot() *user {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &user{ID: botID, IsBot: true, FirstName: "sigops (local)", Username: s.username}
}

// botID is the fake bot's user id.
const botID = 1

// checkText is Telegram's refusal of a message text, or "".
func checkText(text string) string {
	switch n := utf8.RuneCountInString(text); {
	case n == 0:
		return "Bad Request: message text is empty"
	case n > 4096:
		return "Bad Request: message is too long"
	}
	return ""
}

// messageParams reads a message's chat, text and buttons, or the refusal Telegram answers.
func messageParams(p map[string]string) (chat int64, text string, buttons [][]Button, bad string) {
	chat, err := strconv.ParseInt(p["chat_id"], 10, 64)
	if err != nil {
		return 0, "", nil, "Bad Request: chat not found"
	}
	text = p["text"]
	if bad := checkText(text); bad != "" {
		return 0, "", nil, bad
	}
	buttons, bad = keyboardOf(p["reply_markup"])
	return chat, text, buttons, bad
}

// tooMany is Telegram's 429 with its retry_after (seconds).
func tooMany(w http.ResponseWriter, wait int) {
	reply(w, http.StatusTooManyRequests, answer{ErrorCode: 429, Description: "Too Many Requests: retry after " + strconv.Itoa(wait),
		Parameters: map[string]int{"retry_after": wait}})
}

func (s *Server) sendMessage(w http.ResponseWriter, p map[string]string) {
	chat, text, buttons, bad := messageParams(p)
	if bad != "" {
		refuse(w, http.StatusBadRequest, bad)
		return
	}
	from := s.bot()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	if s.throttled > 0 {
		s.throttled--
		tooMany(w, s.retryAfter)
		return
	}
	s.times[chat] = recent(s.times[chat], now, chatGap)
	s.all = recent(s.all, now, time.Second)
	if len(s.times[chat]) >= 1 || len(s.all) >= 30 {
		tooMany(w, 1)
		return
	}
	s.times[chat] = append(s.times[chat], now)
	s.all = append(s.all, now)
	s.lastMsg++
	m := Sent{ID: s.lastMsg, Chat: chat, Text: text, Silent: p["disable_notification"] == "true", At: now, Buttons: buttons}
	s.sent = append(s.sent, m)
	answerOK(w, messageOf(m, from))
}

func (s *Server) editMessageText(w http.ResponseWriter, p map[string]string) {
	chat, text, buttons, bad := messageParams(p)
	id, _ := strconv.Atoi(p["message_id"])
	if bad != "" {
		refuse(w, http.StatusBadRequest, bad)
		return
	}
	from := s.bot()
	s.mu.Lock()
	defer s.mu.Unlock()
	i := s.find(chat, id)
	switch {
	case i < 0:
		refuse(w, http.StatusBadRequest, "Bad Request: message to edit not found")
		return
	case s.sent[i].Text == text && sameKeyboard(s.sent[i].Buttons, buttons):
		refuse(w, http.StatusBadRequest, "Bad Request: message is not modified: specified new message content "+
			"and reply markup are exactly the same as a current content and reply markup of the message")
		return
	}
	s.sent[i].Text, s.sent[i].Buttons = text, buttons
	s.sent[i].Edited++
	m := messageOf(s.sent[i], from)
	m.EditDate = s.now().Unix()
	answerOK(w, m)
}

// find is the index in sent of the bot's message id in chat, or -1. It holds mu.
func (s *Server) find(chat int64, id int) int {
	for i := range s.sent {
		if s.sent[i].ID == id && s.sent[i].Chat == chat {
			return i
		}
	}
	return -1
}

// chatGap is the shortest time between two messages to one chat: a second, less a tenth
// for the time a request spends between its sender's clock and this one.
const chatGap = 900 * time.Millisecond

// recent is ts without the times window or more before now.
func recent(ts []time.Time, now time.Time, window time.Duration) []time.Time {
	i := 0
	for i < len(ts) && now.Sub(ts[i]) >= window {
		i++
	}
	return ts[i:]
}
