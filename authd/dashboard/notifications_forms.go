package dashboard

import (
	"net/http"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/notify"
)

// handleNotifyPrefs saves the events (for all bots) and the quiet hours. Per-bot choices
// made through the API are kept.
func (d *Dashboard) handleNotifyPrefs(w http.ResponseWriter, r *http.Request) {
	if !d.enabled(w, r) {
		return
	}
	ctx, user := r.Context(), viewerOf(r).User.ID
	prefs, err := d.o.Notifications.Settings.Prefs(ctx, user)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	if err := r.ParseForm(); err != nil {
		d.showNotify(w, r, http.StatusBadRequest, notifyTab{}, "The form could not be read.")
		return
	}
	prefs.Events = map[notify.Kind]bool{}
	for _, k := range notify.Kinds {
		prefs.Events[k] = r.PostForm.Has("event_" + string(k))
	}
	prefs.Quiet, prefs.Zone = nil, r.PostFormValue("zone")
	from, to := r.PostFormValue("quiet_from"), r.PostFormValue("quiet_to")
	if from != "" || to != "" {
		f, ok1 := minutes(from)
		t, ok2 := minutes(to)
		if !ok1 || !ok2 {
			d.showNotify(w, r, http.StatusBadRequest, notifyTab{}, "Quiet hours are two times of day, HH:MM. Nothing was changed.")
			return
		}
		prefs.Quiet = &notify.Quiet{From: f, To: t}
	}
	prefs.SummaryHour = nil
	if v := r.PostFormValue("summary_hour"); v != "" {
		h, err := strconv.Atoi(v)
		if err != nil || h < 0 || h > 23 {
			d.showNotify(w, r, http.StatusBadRequest, notifyTab{}, "The summary hour is a whole hour from 0 to 23. Nothing was changed.")
			return
		}
		prefs.SummaryHour = &h
	}
	if _, zerr := time.LoadLocation(prefs.Zone); zerr != nil {
		d.showNotify(w, r, http.StatusBadRequest, notifyTab{}, "That time zone is not known (use a name such as Europe/Berlin). Nothing was changed.")
		return
	}
	err = d.o.Notifications.Settings.SetPrefs(ctx, user, prefs)
	d.recordAction(r, "set_notification_preferences", prefs, err)
	if err != nil {
		d.failPage(w, r, errs.New(errs.InvalidParameter, "%s", err.Error()))
		return
	}
	redirect(w, r, "/dashboard/settings/notifications?done=notify-saved")
}

// handleNotifyCreate adds a destination and shows its secret once.
func (d *Dashboard) handleNotifyCreate(w http.ResponseWriter, r *http.Request) {
	if !d.enabled(w, r) {
		return
	}
	if err := r.ParseForm(); err != nil {
		d.showNotify(w, r, http.StatusBadRequest, notifyTab{}, "The form could not be read.")
		return
	}
	var kinds []notify.Kind
	for _, k := range notify.Kinds {
		if r.PostForm.Has("event_" + string(k)) {
			kinds = append(kinds, k)
		}
	}
	format := r.PostFormValue("format")
	hook, err := d.o.Notifications.CreateWebhook(r.Context(), viewerOf(r).User.ID, r.PostFormValue("url"), format, kinds)
	// The journal keeps the format and events, never the URL (it may carry a token).
	d.recordAction(r, "create_notification_webhook", map[string]any{"format": format, "events": kinds}, err)
	if e, ok := errs.As(err); ok {
		d.showNotify(w, r, e.Code.HTTPStatus(), notifyTab{}, e.Message+". Nothing was added.")
		return
	}
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	d.showNotify(w, r, http.StatusOK, notifyTab{Secret: hook.Secret}, "")
}

func (d *Dashboard) handleNotifyDelete(w http.ResponseWriter, r *http.Request) {
	if !d.enabled(w, r) {
		return
	}
	id := chi.URLParam(r, "id")
	err := d.o.Notifications.DeleteWebhook(r.Context(), viewerOf(r).User.ID, id)
	d.recordAction(r, "delete_notification_webhook", map[string]any{"id": id}, err)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	redirect(w, r, "/dashboard/settings/notifications?done=webhook-deleted")
}

func (d *Dashboard) handleNotifyTest(w http.ResponseWriter, r *http.Request) {
	if !d.enabled(w, r) {
		return
	}
	resp, err := d.o.Notifications.TestWebhook(r.Context(), viewerOf(r).User.ID, chi.URLParam(r, "id"))
	if e, ok := errs.As(err); ok {
		d.showNotify(w, r, http.StatusOK, notifyTab{Tested: e.Message + "."}, "")
		return
	}
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	words := "The test message was delivered (HTTP " + strconv.Itoa(resp.Status) + ")."
	if !resp.OK() {
		words = "The destination answered HTTP " + strconv.Itoa(resp.Status) + ": not delivered."
	}
	d.showNotify(w, r, http.StatusOK, notifyTab{Tested: words}, "")
}

// handleNotifyEnable turns a disabled destination on again, its failures forgotten.
func (d *Dashboard) handleNotifyEnable(w http.ResponseWriter, r *http.Request) {
	if !d.enabled(w, r) {
		return
	}
	id := chi.URLParam(r, "id")
	err := d.o.Notifications.EnableWebhook(r.Context(), viewerOf(r).User.ID, id)
	d.recordAction(r, "enable_notification_webhook", map[string]any{"id": id}, err)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	redirect(w, r, "/dashboard/settings/notifications?done=webhook-enabled")
}
