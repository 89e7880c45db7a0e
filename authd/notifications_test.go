package authd

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/egress"
	"github.com/sigops/sigops/runtime/notify/manage"
	"github.com/sigops/sigops/runtime/notify/settings"
)

// notifyHarness is authd with notifications on a database of its own; loopback destinations
// are allowed only when loopback is set (the local stack's configuration).
func notifyHarness(t *testing.T, loopback bool) (*harness, *settings.Store) {
	set := &settings.Store{DB: dbtest.New(t)}
	h := newHarness(t, func(o *Options) {
		o.Notifications = &manage.Manager{Settings: set, Egress: egress.New(egress.Options{LoopbackHTTP: loopback}),
			BotUsername: "sigops_local_bot"}
	})
	return h, set
}

// call sends a JSON request with a bearer token and returns the status and decoded body.
func (h *harness) call(method, path, token string, body any) (int, map[string]any) {
	h.t.Helper()
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, _ := http.NewRequest(method, h.base+path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := h.ts.Client().Do(req)
	if err != nil {
		h.t.Fatal(err)
	}
	defer resp.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&m)
	return resp.StatusCode, m
}

func (h *harness) apiToken(email string) string {
	h.t.Helper()
	h.user(email, "pro")
	st, login, _ := h.apiLogin(email, testPassword)
	if st != http.StatusOK {
		h.t.Fatalf("login %d %v", st, login)
	}
	return login["token"].(string)
}

// A link code made through the API links a chat (as notifyd does on /start), after which
// telegramLinked is true on /api/user/me and the notifications' own answer; unlinking makes
// both false. A connected app's token may neither read nor change any of it.
func TestTelegramLinkThroughTheAPI(t *testing.T) {
	h, set := notifyHarness(t, false)
	tok := h.apiToken("ada@example.com")
	st, link := h.call(http.MethodPost, "/api/user/notifications/telegram/link", tok, nil)
	code, _ := link["code"].(string)
	if st != http.StatusCreated || len(code) < 30 || link["deepLink"] != "https://t.me/sigops_local_bot?start="+code {
		t.Fatalf("link %d %v", st, link)
	}
	user, err := set.Link(context.Background(), code, 777)
	if err != nil {
		t.Fatal(err)
	}
	if err := h.srv.users.SetTelegramLinked(context.Background(), user, true); err != nil {
		t.Fatal(err)
	}
	if _, err := set.Link(context.Background(), code, 778); err == nil {
		t.Fatal("a link code was used twice")
	}
	if _, me := h.me(tok); me["telegramLinked"] != true {
		t.Fatalf("me after linking: %v", me)
	}
	if st, n := h.call(http.MethodGet, "/api/user/notifications", tok, nil); st != 200 || n["telegramLinked"] != true {
		t.Fatalf("notifications %d %v", st, n)
	}
	if st, _ := h.call(http.MethodDelete, "/api/user/notifications/telegram", tok, nil); st != 200 {
		t.Fatalf("unlink %d", st)
	}
	if _, me := h.me(tok); me["telegramLinked"] != false {
		t.Fatalf("me after unlinking: %v", me)
	}
	_, app, _ := h.flow("ada@example.com", "mcp:live")
	for _, c := range []struct{ method, path string }{{"GET", "/api/user/notifications"}, {"POST", "/api/user/notifications/telegram/link"},
		{"POST", "/api/user/notifications/webhooks"}} {
		if st, body := h.call(c.method, c.path, app.AccessToken, map[string]any{}); st != http.StatusForbidden || body["code"] != "INSUFFICIENT_SCOPE" {
			t.Errorf("%s %s with an app's token: %d %v", c.method, c.path, st, body)
		}
	}
}

// Destinations that are not public are refused at creation outside the local
// configuration; a sixth destination is refused; the answers never show a URL's path.
func TestWebhookDestinationsAreChecked(t *testing.T) {
	h, _ := notifyHarness(t, false)
	tok := h.apiToken("bob@example.com")
	for _, u := range []string{"https://10.0.0.1/hook", "https://169.254.169.254/latest", "https://localhost/hook",
		"http://127.0.0.1:9/hook", "http://203.0.113.10/plain-http"} {
		st, body := h.call(http.MethodPost, "/api/user/notifications/webhooks", tok,
			map[string]any{"url": u, "format": "json", "events": []string{"fill"}})
		if st != http.StatusBadRequest || body["code"] != "INVALID_PARAMETER" {
			t.Errorf("%s: %d %v", u, st, body)
		}
	}
	for i := range 5 {
		st, body := h.call(http.MethodPost, "/api/user/notifications/webhooks", tok,
			map[string]any{"url": "https://93.184.216.34/secret-path-" + string(rune('a'+i)), "format": "slack", "events": []string{"bot_paused"}})
		if st != http.StatusCreated || !strings.HasPrefix(body["secret"].(string), "whsec_") {
			t.Fatalf("destination %d: %d %v", i, st, body)
		}
	}
	st, body := h.call(http.MethodPost, "/api/user/notifications/webhooks", tok,
		map[string]any{"url": "https://93.184.216.34/six", "format": "json", "events": []string{"fill"}})
	if st != http.StatusForbidden || body["code"] != "POLICY_LIMIT" {
		t.Fatalf("a sixth destination: %d %v", st, body)
	}
	st, list := h.call(http.MethodGet, "/api/user/notifications/webhooks", tok, nil)
	raw, _ := json.Marshal(list)
	if st != 200 || strings.Contains(string(raw), "secret-path") || strings.Contains(string(raw), "whsec_") ||
		!strings.Contains(string(raw), `"host":"93.184.216.34"`) {
		t.Fatalf("list %d %s", st, raw)
	}
	if st, body := h.call(http.MethodPut, "/api/user/notifications/preferences", tok,
		map[string]any{"events": map[string]bool{"teleport": true}}); st != http.StatusBadRequest || body["code"] != "INVALID_PARAMETER" {
		t.Fatalf("bad preferences: %d %v", st, body)
	}
	st, prefs := h.call(http.MethodPut, "/api/user/notifications/preferences", tok,
		map[string]any{"events": map[string]bool{"fill": true}, "quiet": map[string]int{"from": 1320, "to": 420}, "zone": "Europe/Berlin"})
	if st != 200 {
		t.Fatalf("preferences %d %v", st, prefs)
	}
	if st, got := h.call(http.MethodGet, "/api/user/notifications/preferences", tok, nil); st != 200 || got["zone"] != "Europe/Berlin" {
		t.Fatalf("preferences read back %d %v", st, got)
	}
}

// The "send test" action delivers a signed message that verifies with the destination's
// secret (loopback allowed: the local configuration).
func TestWebhookTestDeliveryIsSigned(t *testing.T) {
	h, _ := notifyHarness(t, true)
	tok := h.apiToken("cy@example.com")
	got := make(chan *http.Request, 1)
	bodies := make(chan []byte, 1)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- r
		bodies <- b
	}))
	defer recv.Close()
	st, created := h.call(http.MethodPost, "/api/user/notifications/webhooks", tok,
		map[string]any{"url": recv.URL + "/in", "format": "json", "events": []string{"fill", "order_refused"}})
	if st != http.StatusCreated {
		t.Fatalf("create %d %v", st, created)
	}
	id := created["webhook"].(map[string]any)["id"].(string)
	secret := created["secret"].(string)
	st, res := h.call(http.MethodPost, "/api/user/notifications/webhooks/"+id+"/test", tok, nil)
	if st != 200 || res["delivered"] != true {
		t.Fatalf("test %d %v", st, res)
	}
	r, b := <-got, <-bodies
	if err := egress.Verify([]byte(secret), r.Header.Get(egress.SignatureHeader), b, time.Now(), 5*time.Minute); err != nil {
		t.Fatalf("signature: %v", err)
	}
	if st, _ := h.call(http.MethodDelete, "/api/user/notifications/webhooks/"+id, tok, nil); st != http.StatusNoContent {
		t.Fatalf("delete %d", st)
	}
	if st, body := h.call(http.MethodPost, "/api/user/notifications/webhooks/"+id+"/test", tok, nil); st != http.StatusNotFound {
		t.Fatalf("test of a deleted destination %d %v", st, body)
	}
}
