package authd

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/egress"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/notify"
	"github.com/sigops/sigops/runtime/notify/channels"
	"github.com/sigops/sigops/runtime/notify/outbox"
	"github.com/sigops/sigops/runtime/notify/settings"
)

// Notifications configure /api/user/notifications/* and the dashboard's Notifications tab.
type Notifications struct {
	Settings *settings.Store
	// Egress checks destinations when they are saved and sends the "send test" delivery.
	Egress *egress.Client
	// BotUsername is the Telegram bot's username, for the deep link (empty: the page shows
	// the /start command to send instead).
	BotUsername string
}

// notifyRoutes adds the notification settings API. It serves the user's own API token and
// their session (SameSite=Strict, and a JSON body forces a CORS preflight on a cross-site
// write), never a connected app's OAuth token: a destination or a chat is where the
// account's trading is told, and an agent may not choose it.
func (s *Server) notifyRoutes(r chi.Router) {
	r.Route("/api/user/notifications", func(r chi.Router) {
		r.Get("/", s.notifyHandler(s.handleNotifyGet))
		r.Post("/telegram/link", s.notifyHandler(s.handleTelegramLink))
		r.Delete("/telegram", s.notifyHandler(s.handleTelegramUnlink))
		r.Get("/preferences", s.notifyHandler(s.handlePrefsGet))
		r.Put("/preferences", s.notifyHandler(s.handlePrefsPut))
		r.Get("/webhooks", s.notifyHandler(s.handleWebhooksGet))
		r.Post("/webhooks", s.notifyHandler(s.handleWebhookCreate))
		r.Delete("/webhooks/{id}", s.notifyHandler(s.handleWebhookDelete))
		r.Post("/webhooks/{id}/test", s.notifyHandler(s.handleWebhookTest))
		r.Get("/webhooks/{id}/deliveries", s.notifyHandler(s.handleWebhookDeliveries))
	})
}

type notifyCall func(w http.ResponseWriter, r *http.Request, user string) error

// notifyHandler authenticates the call (notifyRoutes' rule), runs it and answers its
// coded errors with their status.
func (s *Server) notifyHandler(h notifyCall) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if s.o.Notifications == nil {
			s.auditRefused(w, errs.New(errs.ServiceUnavailable, "notifications need PostgreSQL, which this server was not given"))
			return
		}
		if _, ok := r.Header["Authorization"]; ok {
			p, err := s.verifier.VerifyRequest(r)
			if err == nil && p.Kind != auth.KindAPI {
				s.auditRefused(w, errs.New(errs.InsufficientScope, "notification settings are for the account's owner, not a connected app"))
				return
			}
		}
		user, ok := s.requestUser(w, r)
		if !ok {
			return
		}
		if err := h(w, r, user); err != nil {
			if e, coded := errs.As(err); coded {
				s.auditRefused(w, e)
				return
			}
			s.meUnavailable(w, err)
		}
	}
}

// webhookView is a destination as the API shows it: never its URL (Slack's and Discord's
// carry a token) nor its secret, only its host.
type webhookView struct {
	ID           string        `json:"id"`
	Host         string        `json:"host"`
	Format       string        `json:"format"`
	Events       []notify.Kind `json:"events"`
	CreatedAt    int64         `json:"createdAt"`
	FailingSince *int64        `json:"failingSince,omitempty"`
	DisabledAt   *int64        `json:"disabledAt,omitempty"`
}

func viewOf(w settings.Webhook) webhookView {
	v := webhookView{ID: w.ID, Host: HostOf(w.URL), Format: w.Format, Events: w.Kinds, CreatedAt: w.CreatedAt.UnixMilli()}
	ms := func(t *time.Time) *int64 {
		if t == nil {
			return nil
		}
		n := t.UnixMilli()
		return &n
	}
	v.FailingSince, v.DisabledAt = ms(w.FailingSince), ms(w.DisabledAt)
	return v
}

// HostOf is a destination URL's host, what is shown of it.
func HostOf(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	return u.Host
}

func (s *Server) handleNotifyGet(w http.ResponseWriter, r *http.Request, user string) error {
	n := s.o.Notifications
	_, linked, err := n.Settings.Chat(r.Context(), user)
	if err != nil {
		return err
	}
	prefs, err := n.Settings.Prefs(r.Context(), user)
	if err != nil {
		return err
	}
	hooks, err := s.webhookViews(r.Context(), user)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"telegramLinked": linked, "preferences": prefs, "webhooks": hooks,
		"events": notify.Kinds})
	return nil
}

func (s *Server) webhookViews(ctx context.Context, user string) ([]webhookView, error) {
	hooks, err := s.o.Notifications.Settings.Webhooks(ctx, user)
	out := make([]webhookView, len(hooks))
	for i, h := range hooks {
		out[i] = viewOf(h)
	}
	return out, err
}

func (s *Server) handleTelegramLink(w http.ResponseWriter, r *http.Request, user string) error {
	link, err := s.TelegramLink(r.Context(), user)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, link)
	return nil
}

// TelegramLinkAnswer is a new link code with what to do with it.
type TelegramLinkAnswer struct {
	Code string `json:"code"`
	// DeepLink opens the bot with the code (empty when no bot username is configured).
	DeepLink  string `json:"deepLink,omitempty"`
	Command   string `json:"command"`
	ExpiresAt int64  `json:"expiresAt"`
}

// TelegramLink makes user a link code (settings.NewLinkCode) and its deep link.
func (s *Server) TelegramLink(ctx context.Context, user string) (TelegramLinkAnswer, error) {
	n := s.o.Notifications
	code, exp, err := n.Settings.NewLinkCode(ctx, user)
	if err != nil {
		return TelegramLinkAnswer{}, err
	}
	a := TelegramLinkAnswer{Code: code, Command: "/start " + code, ExpiresAt: exp.UnixMilli()}
	if n.BotUsername != "" {
		a.DeepLink = "https://t.me/" + n.BotUsername + "?start=" + code
	}
	return a, nil
}

func (s *Server) handleTelegramUnlink(w http.ResponseWriter, r *http.Request, user string) error {
	if err := s.UnlinkTelegram(r.Context(), user); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"telegramLinked": false})
	return nil
}

// UnlinkTelegram forgets user's chat and marks the account unlinked.
func (s *Server) UnlinkTelegram(ctx context.Context, user string) error {
	if _, err := s.o.Notifications.Settings.Unlink(ctx, user); err != nil {
		return err
	}
	return s.users.SetTelegramLinked(ctx, user, false)
}

func (s *Server) handlePrefsGet(w http.ResponseWriter, r *http.Request, user string) error {
	p, err := s.o.Notifications.Settings.Prefs(r.Context(), user)
	if err == nil {
		writeJSON(w, http.StatusOK, p)
	}
	return err
}

func (s *Server) handlePrefsPut(w http.ResponseWriter, r *http.Request, user string) error {
	var p notify.Prefs
	if err := decodeBody(r, &p); err != nil {
		return err
	}
	if err := p.Validate(); err != nil {
		return errs.New(errs.InvalidParameter, "%s", err.Error())
	}
	if err := s.o.Notifications.Settings.SetPrefs(r.Context(), user, p); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, p)
	return nil
}

// decodeBody reads a JSON body of at most 64 KiB into v, refusing unknown fields.
func decodeBody(r *http.Request, v any) error {
	if r.Header.Get("Content-Type") != "application/json" {
		return errs.New(errs.InvalidJSON, "send the body as application/json")
	}
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, 64<<10))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return errs.New(errs.InvalidJSON, "the body is not valid JSON for this call: %s", err.Error())
	}
	return nil
}

func (s *Server) handleWebhooksGet(w http.ResponseWriter, r *http.Request, user string) error {
	hooks, err := s.webhookViews(r.Context(), user)
	if err == nil {
		writeJSON(w, http.StatusOK, map[string]any{"webhooks": hooks})
	}
	return err
}

func (s *Server) handleWebhookCreate(w http.ResponseWriter, r *http.Request, user string) error {
	var in struct {
		URL    string        `json:"url"`
		Format string        `json:"format"`
		Events []notify.Kind `json:"events"`
	}
	if err := decodeBody(r, &in); err != nil {
		return err
	}
	hook, err := s.CreateWebhook(r.Context(), user, in.URL, in.Format, in.Events)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"webhook": viewOf(hook), "secret": hook.Secret})
	return nil
}

// CreateWebhook adds a destination; a refusal is INVALID_PARAMETER (or POLICY_LIMIT for a
// sixth) naming what is wrong, never the URL's path.
func (s *Server) CreateWebhook(ctx context.Context, user, rawURL, format string, kinds []notify.Kind) (settings.Webhook, error) {
	n := s.o.Notifications
	hook, err := n.Settings.CreateWebhook(ctx, user, rawURL, format, kinds, n.Egress.Check)
	switch {
	case errors.Is(err, settings.ErrTooMany):
		return hook, errs.New(errs.PolicyLimit, "%s", err.Error())
	case err != nil && settings.IsInput(err):
		return hook, errs.New(errs.InvalidParameter, "%s", err.Error())
	}
	return hook, err
}

func (s *Server) handleWebhookDelete(w http.ResponseWriter, r *http.Request, user string) error {
	err := s.o.Notifications.Settings.DeleteWebhook(r.Context(), user, chi.URLParam(r, "id"))
	if errors.Is(err, settings.ErrNoWebhook) {
		return errs.New(errs.NotFound, "no webhook destination %s", chi.URLParam(r, "id"))
	}
	if err == nil {
		w.WriteHeader(http.StatusNoContent)
	}
	return err
}

func (s *Server) handleWebhookTest(w http.ResponseWriter, r *http.Request, user string) error {
	status, err := s.TestWebhook(r.Context(), user, chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"delivered": status.OK(), "status": status.Status})
	return nil
}

// TestWebhook sends destination id a test message now, as notifyd would send a real one.
func (s *Server) TestWebhook(ctx context.Context, user, id string) (egress.Response, error) {
	n := s.o.Notifications
	hook, err := n.Settings.Webhook(ctx, user, id)
	if errors.Is(err, settings.ErrNoWebhook) {
		return egress.Response{}, errs.New(errs.NotFound, "no webhook destination %s", id)
	}
	if err != nil {
		return egress.Response{}, err
	}
	m := notify.Message{Events: []notify.Event{{ID: "test:" + id, Kind: notify.Fill, At: s.o.Now(), Bot: "test",
		Reason: "TEST"}}}
	body, err := channels.Body(hook.Format, m)
	if err != nil {
		return egress.Response{}, err
	}
	h := http.Header{"Content-Type": {"application/json"}}
	if hook.Format == settings.FormatJSON {
		h.Set(egress.SignatureHeader, egress.Sign([]byte(hook.Secret), s.o.Now(), body))
	}
	resp, err := n.Egress.Post(ctx, hook.URL, h, body)
	if err != nil {
		return resp, errs.New(errs.InvalidParameter, "the test delivery failed: %s", err.Error())
	}
	return resp, nil
}

type deliveryView struct {
	Event    string      `json:"event"`
	Kind     notify.Kind `json:"kind"`
	State    string      `json:"state"`
	Status   string      `json:"status"`
	Attempts int         `json:"attempts"`
	At       int64       `json:"at"`
	SentAt   *int64      `json:"sentAt,omitempty"`
}

func (s *Server) handleWebhookDeliveries(w http.ResponseWriter, r *http.Request, user string) error {
	id := chi.URLParam(r, "id")
	if _, err := s.o.Notifications.Settings.Webhook(r.Context(), user, id); errors.Is(err, settings.ErrNoWebhook) {
		return errs.New(errs.NotFound, "no webhook destination %s", id)
	} else if err != nil {
		return err
	}
	rows, err := outbox.Log(r.Context(), s.o.Notifications.Settings.DB, user, outbox.WebhookChannel(id), 50)
	if err != nil {
		return err
	}
	out := make([]deliveryView, len(rows))
	for i, row := range rows {
		out[i] = deliveryView{Event: row.Event.ID, Kind: row.Event.Kind, State: row.State, Status: row.Status,
			Attempts: row.Attempts, At: row.Created.UnixMilli()}
		if row.SentAt != nil {
			ms := row.SentAt.UnixMilli()
			out[i].SentAt = &ms
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"deliveries": out})
	return nil
}
