package authd

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/notify"
	"github.com/sigops/sigops/runtime/notify/settings"
)

// notifyRoutes adds the notification settings API. It serves the user's own API token and
// their session, never a connected app's OAuth token: a destination or a chat is where the
// account's trading is told, and an agent may not choose it. The session cookie is
// SameSite=Strict, so a request another site makes carries no session and is refused.
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
		r.Post("/webhooks/{id}/enable", s.notifyHandler(s.handleWebhookEnable))
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
	v := webhookView{ID: w.ID, Host: w.Host(), Format: w.Format, Events: w.Kinds, CreatedAt: w.CreatedAt.UnixMilli()}
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
	link, err := s.o.Notifications.TelegramLink(r.Context(), user)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, link)
	return nil
}

func (s *Server) handleTelegramUnlink(w http.ResponseWriter, r *http.Request, user string) error {
	if err := s.o.Notifications.Unlink(r.Context(), user); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"telegramLinked": false})
	return nil
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
	hook, err := s.o.Notifications.CreateWebhook(r.Context(), user, in.URL, in.Format, in.Events)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusCreated, map[string]any{"webhook": viewOf(hook), "secret": hook.Secret})
	return nil
}

func (s *Server) handleWebhookDelete(w http.ResponseWriter, r *http.Request, user string) error {
	err := s.o.Notifications.DeleteWebhook(r.Context(), user, chi.URLParam(r, "id"))
	if err == nil {
		w.WriteHeader(http.StatusNoContent)
	}
	return err
}

func (s *Server) handleWebhookEnable(w http.ResponseWriter, r *http.Request, user string) error {
	if err := s.o.Notifications.EnableWebhook(r.Context(), user, chi.URLParam(r, "id")); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"enabled": true})
	return nil
}

func (s *Server) handleWebhookTest(w http.ResponseWriter, r *http.Request, user string) error {
	status, err := s.o.Notifications.TestWebhook(r.Context(), user, chi.URLParam(r, "id"))
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"delivered": status.OK(), "status": status.Status})
	return nil
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
	rows, err := s.o.Notifications.Deliveries(r.Context(), user, chi.URLParam(r, "id"))
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
