package telegram

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net/http"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"
)

// SecretHeader is the header in which Telegram sends the webhook's secret token.
const SecretHeader = "X-Telegram-Bot-Api-Secret-Token"

// maxUpdate bounds an update's body (Telegram's are a few KiB).
const maxUpdate = 1 << 20

// SetWebhook asks Telegram to POST the bot's updates to url with secret in SecretHeader
// (1-256 characters of A-Z, a-z, 0-9, _ and -: Telegram's rule for secret_token).
func (c *Client) SetWebhook(ctx context.Context, url, secret string) error {
	if _, err := c.b.SetWebhook(ctx, &bot.SetWebhookParams{URL: url, SecretToken: secret,
		AllowedUpdates: []string{"message", "callback_query"}}); err != nil {
		return c.failed("set the webhook", err)
	}
	return nil
}

// WebhookHandler receives the updates Telegram POSTs and hands each to OnUpdate. A request
// without the secret token, or with another, is refused with 401 and read no further: only
// Telegram knows the token, so nobody else can post a press or a /start. The library's
// own handler answers 200 to a wrong token and compares it in variable time, hence this.
func (c *Client) WebhookHandler(secret string) (http.Handler, error) {
	if secret == "" || c.onUpdate == nil {
		return nil, errors.New("telegram: a webhook needs a secret token and an update handler")
	}
	want := []byte(secret)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		if subtle.ConstantTimeCompare([]byte(r.Header.Get(SecretHeader)), want) != 1 {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		var u models.Update
		if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxUpdate)).Decode(&u); err != nil {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		c.onUpdate(r.Context(), &u)
		w.WriteHeader(http.StatusOK)
	}), nil
}
