package telegram_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/go-telegram/bot/models"

	"github.com/sigops/sigops/runtime/telegram"
	"github.com/sigops/sigops/runtime/telegram/telegramfake"
)

// Updates arrive by webhook with the secret token; a post without it, or with another, is
// refused with 401 and reaches no handler.
func TestWebhookChecksTheSecretToken(t *testing.T) {
	fake := telegramfake.Start(token)
	defer fake.Close()
	got := make(chan *models.Update, 4)
	c, err := telegram.New(telegram.Options{Token: token, APIURL: fake.URL,
		OnUpdate: func(_ context.Context, u *models.Update) { got <- u }})
	if err != nil {
		t.Fatal(err)
	}
	const secret = "s3cr3t-token_for-the-webhook"
	h, err := c.WebhookHandler(secret)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	defer srv.Close()
	if err := c.SetWebhook(t.Context(), srv.URL+"/telegram/updates", secret); err != nil {
		t.Fatal(err)
	}
	fake.PostStart(55, "/start abc")
	select {
	case u := <-got:
		if u.Message == nil || u.Message.Text != "/start abc" || u.Message.Chat.ID != 55 {
			t.Fatalf("update %+v", u)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no update by webhook")
	}
	for name, header := range map[string]string{"none": "", "another": "s3cr3t-token_for-the-webhooK"} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"update_id":9,"message":{"message_id":1,"date":1,"chat":{"id":55,"type":"private"},"text":"/stop"}}`))
		if header != "" {
			req.Header.Set(telegram.SecretHeader, header)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s token: %d, want 401", name, resp.StatusCode)
		}
	}
	select {
	case u := <-got:
		t.Fatalf("a forged update reached the handler: %+v", u)
	case <-time.After(200 * time.Millisecond):
	}
}
