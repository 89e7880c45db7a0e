// Package manage is what a user does with their notification settings, the same on every
// surface (authd's /api/user/notifications and the dashboard's Notifications tab): get a
// Telegram link code, unlink, add a webhook destination (checked by the egress rules),
// send it a test, read its deliveries. Refusals are coded (runtime/errs) and never quote a
// destination's URL, which may carry a token.
package manage

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/sigops/sigops/runtime/egress"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/notify"
	"github.com/sigops/sigops/runtime/notify/channels"
	"github.com/sigops/sigops/runtime/notify/outbox"
	"github.com/sigops/sigops/runtime/notify/settings"
)

// Manager carries out the users' notification settings.
type Manager struct {
	Settings *settings.Store
	// Egress checks destinations when they are saved and sends the test delivery.
	Egress *egress.Client
	// BotUsername is the Telegram bot's username, for the deep link ("": none is given,
	// only the /start command).
	BotUsername string
	// Linked records whether a user has a linked chat (auth.Users.SetTelegramLinked).
	Linked func(ctx context.Context, user string, linked bool) error
	Now    func() time.Time
}

func (m *Manager) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// Link is a new link code with what to do with it.
type Link struct {
	Code string `json:"code"`
	// DeepLink opens the bot with the code ("" when no bot username is configured).
	DeepLink  string    `json:"deepLink,omitempty"`
	Command   string    `json:"command"`
	ExpiresAt time.Time `json:"-"`
	Expires   int64     `json:"expiresAt"`
}

// TelegramLink makes user a link code (settings.NewLinkCode) and its deep link.
func (m *Manager) TelegramLink(ctx context.Context, user string) (Link, error) {
	code, exp, err := m.Settings.NewLinkCode(ctx, user)
	if err != nil {
		return Link{}, err
	}
	l := Link{Code: code, Command: "/start " + code, ExpiresAt: exp, Expires: exp.UnixMilli()}
	if m.BotUsername != "" {
		l.DeepLink = "https://t.me/" + m.BotUsername + "?start=" + code
	}
	return l, nil
}

// Unlink forgets user's chat and marks the account unlinked.
func (m *Manager) Unlink(ctx context.Context, user string) error {
	if _, err := m.Settings.Unlink(ctx, user); err != nil {
		return err
	}
	return m.Linked(ctx, user, false)
}

// CreateWebhook adds a destination; a refusal is INVALID_PARAMETER naming what is wrong
// (never the URL's path), or POLICY_LIMIT for one more than settings.MaxWebhooks.
func (m *Manager) CreateWebhook(ctx context.Context, user, rawURL, format string, kinds []notify.Kind) (settings.Webhook, error) {
	hook, err := m.Settings.CreateWebhook(ctx, user, rawURL, format, kinds, m.Egress.Check)
	switch {
	case errors.Is(err, settings.ErrTooMany):
		return hook, errs.New(errs.PolicyLimit, "%s", err.Error())
	case err != nil && settings.IsInput(err):
		return hook, errs.New(errs.InvalidParameter, "%s", err.Error())
	}
	return hook, err
}

// Webhook is user's destination id (NOT_FOUND when it is not theirs or not there).
func (m *Manager) Webhook(ctx context.Context, user, id string) (settings.Webhook, error) {
	hook, err := m.Settings.Webhook(ctx, user, id)
	if errors.Is(err, settings.ErrNoWebhook) {
		return hook, errs.New(errs.NotFound, "no webhook destination %s", id)
	}
	return hook, err
}

// DeleteWebhook removes user's destination id.
func (m *Manager) DeleteWebhook(ctx context.Context, user, id string) error {
	err := m.Settings.DeleteWebhook(ctx, user, id)
	if errors.Is(err, settings.ErrNoWebhook) {
		return errs.New(errs.NotFound, "no webhook destination %s", id)
	}
	return err
}

// EnableWebhook turns user's disabled destination id on again.
func (m *Manager) EnableWebhook(ctx context.Context, user, id string) error {
	err := m.Settings.EnableWebhook(ctx, user, id)
	if errors.Is(err, settings.ErrNoWebhook) {
		return errs.New(errs.NotFound, "no webhook destination %s", id)
	}
	return err
}

// TestWebhook sends destination id a test message now, as notifyd sends a real one.
func (m *Manager) TestWebhook(ctx context.Context, user, id string) (egress.Response, error) {
	hook, err := m.Webhook(ctx, user, id)
	if err != nil {
		return egress.Response{}, err
	}
	msg := notify.Message{Events: []notify.Event{{ID: "test:" + id, Kind: notify.Fill, At: m.now(), Bot: "test", Reason: "TEST"}}}
	body, err := channels.Body(hook.Format, msg)
	if err != nil {
		return egress.Response{}, err
	}
	h := http.Header{"Content-Type": {"application/json"}}
	if hook.Format == settings.FormatJSON {
		h.Set(egress.SignatureHeader, egress.Sign([]byte(hook.Secret), m.now(), body))
	}
	resp, err := m.Egress.Post(ctx, hook.URL, h, body)
	if err != nil {
		return resp, errs.New(errs.InvalidParameter, "the test delivery failed: %s", err.Error())
	}
	return resp, nil
}

// Deliveries are destination id's last deliveries (at most 50), newest first.
func (m *Manager) Deliveries(ctx context.Context, user, id string) ([]outbox.Row, error) {
	if _, err := m.Webhook(ctx, user, id); err != nil {
		return nil, err
	}
	return outbox.Log(ctx, m.Settings.DB, user, outbox.WebhookChannel(id), 50)
}
