// Package telegramfake is a stand-in for Telegram's Bot API on 127.0.0.1, for tests and the
// local stack: it keeps what the bot sent and refuses what Telegram refuses. Each rule is
// Telegram's published one (https://core.telegram.org/bots/api and the bots FAQ):
//
//   - a method is POST or GET /bot<token>/<method>; another token is 401 Unauthorized;
//   - parameters come as a query string, a form (urlencoded or multipart) or a JSON body;
//   - sendMessage needs chat_id and a text of 1 to 4,096 characters (400 Bad Request
//     otherwise);
//   - more than one message a second to one chat (within 900 ms: a tenth is left for the
//     time between the sender's clock and this one), or thirty a second in all, is 429 Too
//     Many Requests with parameters.retry_after (seconds), as Telegram answers a bot over
//     its limits;
//   - an unknown method is 404 Not Found.
//
// Only what sigops sends is served (sendMessage); linking, updates and buttons are not
// built yet.
package telegramfake

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Sent is a message the bot sent.
type Sent struct {
	ID     int
	Chat   int64
	Text   string
	Silent bool
	At     time.Time
}

// Server is the stand-in. The zero value is not usable: Start it.
type Server struct {
	URL   string
	token string
	srv   *httptest.Server
	now   func() time.Time

	mu    sync.Mutex
	sent  []Sent
	down  bool
	times map[int64][]time.Time // recent sends per chat
	all   []time.Time           // recent sends of the bot
}

// Start serves the Bot API of token on a free 127.0.0.1 port until Close.
func Start(token string) *Server {
	s := &Server{token: token, now: time.Now, times: map[int64][]time.Time{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Messages is what the bot sent, oldest first.
func (s *Server) Messages() []Sent {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Sent(nil), s.sent...)
}

// SetDown makes every call fail with 502 (Telegram unreachable) until SetDown(false).
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	s.down = down
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

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
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
	switch method {
	case "sendMessage":
		s.sendMessage(w, params)
	default:
		refuse(w, http.StatusNotFound, "Not Found")
	}
}

// paramsOf reads a call's parameters from its query, form or JSON body.
func paramsOf(r *http.Request) (map[string]string, error) {
	out := map[string]string{}
	if strings.HasPrefix(r.Header.Get("Content-Type"), "application/json") {
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			return nil, err
		}
		for k, v := range body {
			switch v := v.(type) {
			case string:
				out[k] = v
			default:
				b, _ := json.Marshal(v)
				out[k] = string(b)
			}
		}
	} else {
		if err := r.ParseMultipartForm(1 << 20); err != nil && err != http.ErrNotMultipart {
			return nil, err
		}
		for k, v := range r.Form {
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

func (s *Server) sendMessage(w http.ResponseWriter, p map[string]string) {
	chat, err := strconv.ParseInt(p["chat_id"], 10, 64)
	if err != nil {
		refuse(w, http.StatusBadRequest, "Bad Request: chat not found")
		return
	}
	text := p["text"]
	switch n := utf8.RuneCountInString(text); {
	case n == 0:
		refuse(w, http.StatusBadRequest, "Bad Request: message text is empty")
		return
	case n > 4096:
		refuse(w, http.StatusBadRequest, "Bad Request: message is too long")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	s.times[chat] = recent(s.times[chat], now, chatGap)
	s.all = recent(s.all, now, time.Second)
	if len(s.times[chat]) >= 1 || len(s.all) >= 30 {
		reply(w, http.StatusTooManyRequests, answer{ErrorCode: 429, Description: "Too Many Requests: retry after 1",
			Parameters: map[string]int{"retry_after": 1}})
		return
	}
	s.times[chat] = append(s.times[chat], now)
	s.all = append(s.all, now)
	m := Sent{ID: len(s.sent) + 1, Chat: chat, Text: text, Silent: p["disable_notification"] == "true", At: now}
	s.sent = append(s.sent, m)
	reply(w, http.StatusOK, answer{OK: true, Result: map[string]any{
		"message_id": m.ID, "date": now.Unix(), "chat": map[string]any{"id": chat, "type": "private"}, "text": text}})
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
