// Package channels sends notifyd's messages: to a user's linked Telegram chat (silently in
// their quiet hours) and to their webhook destinations, in each destination's format, the
// JSON one signed (runtime/egress). It implements outbox.Sender.
package channels

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/egress"
	"github.com/sigops/sigops/runtime/notify"
	"github.com/sigops/sigops/runtime/notify/outbox"
	"github.com/sigops/sigops/runtime/notify/settings"
	"github.com/sigops/sigops/runtime/telegram"
)

// FailingLimit is how long a webhook destination may fail before it is disabled.
const FailingLimit = outbox.MaxAge

// Channels sends messages. Telegram may be nil (no bot token: Telegram is off).
type Channels struct {
	Settings *settings.Store
	Telegram *telegram.Client
	Egress   *egress.Client
	Now      func() time.Time
	// Disabled is called when a destination is disabled after failing for FailingLimit,
	// so that the user hears of it by their other channels.
	Disabled func(ctx context.Context, w settings.Webhook)
}

func (c *Channels) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// Send sends m to user's channel.
func (c *Channels) Send(ctx context.Context, user, channel string, m notify.Message) (string, error) {
	if channel == outbox.Telegram {
		return c.telegram(ctx, user, m)
	}
	id, ok := strings.CutPrefix(channel, "webhook:")
	if !ok {
		return "", &outbox.Gone{Status: "unknown channel"}
	}
	return c.webhook(ctx, user, id, m)
}

func (c *Channels) telegram(ctx context.Context, user string, m notify.Message) (string, error) {
	if c.Telegram == nil {
		return "", errors.New("no Telegram bot is configured")
	}
	chat, ok, err := c.Settings.Chat(ctx, user)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", &outbox.Gone{Status: "not linked"} // unlinked since it was queued
	}
	prefs, err := c.Settings.Prefs(ctx, user)
	if err != nil {
		return "", err
	}
	id, err := c.sendTelegram(ctx, user, chat, m, prefs.Silent(m.Events[0], c.now()))
	var retry *telegram.RetryAfter
	if errors.As(err, &retry) {
		return "", &outbox.Wait{Until: c.now().Add(retry.Wait), Err: err}
	}
	if err != nil {
		return "", err
	}
	return "message " + strconv.Itoa(id), nil
}

// sendTelegram sends m to chat; an approval request still open goes with its Approve and
// Reject buttons, whose callback data is an opaque token (settings.NewButton).
func (c *Channels) sendTelegram(ctx context.Context, user string, chat int64, m notify.Message, silent bool) (int, error) {
	e := m.Events[0]
	if len(m.Events) != 1 || e.Kind != notify.ApprovalRequested || e.Signal == "" || !e.Expires.After(c.now()) {
		return c.Telegram.Send(ctx, chat, notify.Text(m), silent)
	}
	token, err := c.Settings.NewButton(ctx, user, e.Signal, chat, e.Expires)
	if err != nil {
		return 0, err
	}
	id, err := c.Telegram.SendButtons(ctx, chat, notify.Text(m), silent,
		[]telegram.Button{{Text: "Approve", Data: ButtonApprove + token}, {Text: "Reject", Data: ButtonReject + token}})
	if err != nil {
		return 0, err
	}
	return id, c.Settings.ButtonSent(ctx, token, id)
}

// The callback data of an approval's buttons: a prefix, then the token.
const (
	ButtonApprove = "a:"
	ButtonReject  = "r:"
)

func (c *Channels) webhook(ctx context.Context, user, id string, m notify.Message) (string, error) {
	w, err := c.Settings.Webhook(ctx, user, id)
	if errors.Is(err, settings.ErrNoWebhook) {
		return "", &outbox.Gone{Status: "deleted"}
	}
	if err != nil {
		return "", err
	}
	if w.DisabledAt != nil {
		return "", &outbox.Gone{Status: "disabled"}
	}
	body, err := Body(w.Format, m)
	if err != nil {
		return "", err
	}
	h := http.Header{"Content-Type": {"application/json"}}
	if w.Format == settings.FormatJSON {
		h.Set(egress.SignatureHeader, egress.Sign([]byte(w.Secret), c.now(), body))
	}
	resp, err := c.Egress.Post(ctx, w.URL, h, body)
	if err == nil && !resp.OK() {
		err = fmt.Errorf("HTTP %d", resp.Status)
	}
	if err != nil {
		c.failed(ctx, w)
		return "", err
	}
	return "HTTP " + strconv.Itoa(resp.Status), c.Settings.DeliveryOK(ctx, w.ID)
}

// failed records a failed delivery; a destination failing for FailingLimit is disabled.
func (c *Channels) failed(ctx context.Context, w settings.Webhook) {
	disabled, err := c.Settings.DeliveryFailed(ctx, w.ID, c.now(), FailingLimit)
	if err == nil && disabled && c.Disabled != nil {
		c.Disabled(ctx, w)
	}
}

// TellDisabled is the Disabled hook that tells the user by their other channels: a
// WebhookDisabled event appended like any other fact (notify.Tell).
func TellDisabled(rdb redis.Cmdable, logger *slog.Logger) func(context.Context, settings.Webhook) {
	return func(ctx context.Context, w settings.Webhook) {
		now := time.Now()
		e := notify.Event{ID: "webhook_disabled:" + w.ID + ":" + strconv.FormatInt(now.UnixMilli(), 10), Kind: notify.WebhookDisabled,
			At: now, User: w.User, Destination: w.Host()}
		if err := notify.Tell(ctx, rdb, e); err != nil {
			logger.Warn("tell of a disabled webhook destination", "err", err)
		}
	}
}

// Body is m in a destination format.
func Body(format string, m notify.Message) ([]byte, error) {
	switch format {
	case settings.FormatSlack:
		return notify.Slack(m)
	case settings.FormatDiscord:
		return notify.Discord(m)
	}
	return notify.JSON(m)
}
