package telegram_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/telegram"
	"github.com/sigops/sigops/runtime/telegram/telegramfake"
)

const token = "123456:test-token-AAAA"

func client(t *testing.T, url, tok string) *telegram.Client {
	t.Helper()
	c, err := telegram.New(telegram.Options{Token: tok, APIURL: url})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// A message reaches its chat with its text and sound; a wrong token is refused, and the
// error does not hold the token.
func TestSend(t *testing.T) {
	fake := telegramfake.Start(token)
	defer fake.Close()
	ctx := context.Background()
	id, err := client(t, fake.URL, token).Send(ctx, 42, "Bot grid-1 paused: paused by you", true)
	if err != nil || id != 1 {
		t.Fatalf("send: %d, %v", id, err)
	}
	got := fake.Messages()
	if len(got) != 1 || got[0].Chat != 42 || got[0].Text != "Bot grid-1 paused: paused by you" || !got[0].Silent {
		t.Fatalf("sent %+v", got)
	}
	_, err = client(t, fake.URL, "999:wrong-token-BBBB").Send(ctx, 42, "x", false)
	if err == nil || strings.Contains(err.Error(), "wrong-token") {
		t.Fatalf("wrong token: %v", err)
	}
}

// Two messages to one chat go a second apart, so Telegram never answers 429; another
// chat does not wait for the first.
func TestSendKeepsTheChatLimit(t *testing.T) {
	fake := telegramfake.Start(token)
	defer fake.Close()
	c := client(t, fake.URL, token)
	ctx := context.Background()
	for _, chat := range []int64{1, 2, 1} {
		if _, err := c.Send(ctx, chat, "m", false); err != nil {
			t.Fatalf("chat %d: %v", chat, err)
		}
	}
	got := fake.Messages()
	if len(got) != 3 || got[2].At.Sub(got[0].At) < 900*time.Millisecond || got[1].At.Sub(got[0].At) > 500*time.Millisecond {
		t.Fatalf("sent at %v, %v, %v", got[0].At, got[1].At, got[2].At)
	}
}

// Telegram's 429 (here: another client of the same bot sent to the chat a moment before) is
// a RetryAfter with Telegram's wait, and the client sends nothing to any chat before the
// wait has passed.
func TestSendHonoursRetryAfter(t *testing.T) {
	fake := telegramfake.Start(token)
	defer fake.Close()
	ctx := context.Background()
	if _, err := client(t, fake.URL, token).Send(ctx, 7, "first", false); err != nil {
		t.Fatal(err)
	}
	c := client(t, fake.URL, token)
	_, err := c.Send(ctx, 7, "second", false)
	var ra *telegram.RetryAfter
	if !errors.As(err, &ra) || ra.Wait != time.Second {
		t.Fatalf("second: %v, want a RetryAfter of 1s", err)
	}
	start := time.Now()
	if _, err := c.Send(ctx, 8, "other chat", false); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 900*time.Millisecond {
		t.Fatalf("sent %s after a 429 asking for a second", waited)
	}
	ctx2, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	if _, err := c.Send(ctx2, 8, "too soon for the chat", false); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a send that cannot wait its turn: %v", err)
	}
}

// The stand-in refuses what Telegram refuses: an empty or too long text, an unknown
// method; and it takes a JSON body as well as a form.
func TestStandInRules(t *testing.T) {
	fake := telegramfake.Start(token)
	defer fake.Close()
	post := func(method, ctype, body string) int {
		resp, err := http.Post(fake.URL+"/bot"+token+"/"+method, ctype, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	form := "application/x-www-form-urlencoded"
	for _, c := range []struct {
		method, ctype, body string
		want                int
	}{
		{"sendMessage", form, "chat_id=1&text=", 400},
		{"sendMessage", form, "chat_id=1&text=" + strings.Repeat("a", 4097), 400},
		{"sendMessage", form, "text=hi", 400},
		{"sendSticker", form, "chat_id=1", 404},
		{"sendMessage", "application/json", `{"chat_id": 5, "text": "from json"}`, 200},
		{"sendMessage", form, "chat_id=6&text=" + strings.Repeat("é", 4096), 200},
	} {
		if got := post(c.method, c.ctype, c.body); got != c.want {
			t.Errorf("%s %.40s: %d, want %d", c.method, c.body, got, c.want)
		}
	}
	if m := fake.Messages(); len(m) != 2 || m[0].Text != "from json" || m[0].Chat != 5 {
		t.Fatalf("sent %+v", m)
	}
}
