package dashboard

import (
	"net/http"
	"strconv"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/sigops/sigops/runtime/notify"
	"github.com/sigops/sigops/runtime/notify/manage"
	"github.com/sigops/sigops/runtime/notify/outbox"
	"github.com/sigops/sigops/runtime/notify/settings"
)

// notifyRoutes add the Notifications tab of Settings: the Telegram link, the preferences,
// and the webhook destinations with their last deliveries. Every change is journaled.
func (d *Dashboard) notifyRoutes(r chi.Router) {
	r.Get("/settings/notifications", d.handleNotify)
	r.Post("/settings/notifications/telegram/link", d.handleNotifyLink)
	r.Post("/settings/notifications/telegram/unlink", d.handleNotifyUnlink)
	r.Post("/settings/notifications/preferences", d.handleNotifyPrefs)
	r.Post("/settings/notifications/webhooks", d.handleNotifyCreate)
	r.Post("/settings/notifications/webhooks/{id}/delete", d.handleNotifyDelete)
	r.Post("/settings/notifications/webhooks/{id}/test", d.handleNotifyTest)
	r.Post("/settings/notifications/webhooks/{id}/enable", d.handleNotifyEnable)
}

// notifyTab is the Notifications tab's data.
type notifyTab struct {
	Enabled bool
	Linked  bool
	// Link is a link code just made (shown in the answer to its POST only).
	Link *manage.Link
	// Kinds are the events with the user's choice (or its default) for all bots.
	Kinds []kindChoice
	// QuietFrom and QuietTo are "HH:MM" ("" for none); Zone the time zone; SummaryHour
	// the daily summary's hour ("" for none).
	QuietFrom, QuietTo, Zone, SummaryHour string
	Webhooks                              []webhookRow
	// Secret is a destination's secret just made (shown once).
	Secret string
	// Tested is the outcome of a test delivery, in words.
	Tested string
}

type kindChoice struct {
	Kind  notify.Kind
	Words string
	On    bool
}

type webhookRow struct {
	settings.Webhook
	Host       string
	Deliveries []outbox.Row
}

// kindWords name the events on the page.
var kindWords = map[notify.Kind]string{
	notify.Fill: "Fills", notify.OrderRefused: "Refused orders", notify.SignalDeadLettered: "Signals given up",
	notify.SignalExpired: "Expired signals", notify.BotPaused: "Bot paused", notify.BotResumed: "Bot resumed",
	notify.ConnectionInvalid: "Connection stopped working", notify.ApprovalRequested: "Approval needed",
	notify.ApprovalDecided: "Approval decided", notify.DailySummary: "Daily summary",
	notify.WebhookDisabled: "Webhook destination turned off",
}

// notifyPage is the tab with the viewer's current settings, plus what a handler adds.
func (d *Dashboard) notifyPage(r *http.Request, tab notifyTab) (Page, error) {
	m := d.o.Notifications
	tab.Enabled = m != nil
	if m == nil {
		return d.settingsPage(r, settingsData{Section: "notify", Notify: tab}), nil
	}
	ctx, user := r.Context(), viewerOf(r).User.ID
	var err error
	if _, tab.Linked, err = m.Settings.Chat(ctx, user); err != nil {
		return Page{}, err
	}
	prefs, err := m.Settings.Prefs(ctx, user)
	if err != nil {
		return Page{}, err
	}
	for _, k := range notify.Kinds {
		tab.Kinds = append(tab.Kinds, kindChoice{Kind: k, Words: kindWords[k], On: prefs.Wants(notify.Event{Kind: k})})
	}
	if q := prefs.Quiet; q != nil {
		tab.QuietFrom, tab.QuietTo = clock(q.From), clock(q.To)
	}
	tab.Zone = prefs.Zone
	if h := prefs.SummaryHour; h != nil {
		tab.SummaryHour = strconv.Itoa(*h)
	}
	hooks, err := m.Settings.Webhooks(ctx, user)
	if err != nil {
		return Page{}, err
	}
	for _, h := range hooks {
		rows, err := m.Deliveries(ctx, user, h.ID)
		if err != nil {
			return Page{}, err
		}
		tab.Webhooks = append(tab.Webhooks, webhookRow{Webhook: h, Host: h.Host(), Deliveries: rows[:min(len(rows), 5)]})
	}
	return d.settingsPage(r, settingsData{Section: "notify", Notify: tab}), nil
}

func clock(m int) string {
	return strconv.Itoa(m/60/10) + strconv.Itoa(m/60%10) + ":" + strconv.Itoa(m%60/10) + strconv.Itoa(m%10)
}

// minutes reads "HH:MM" as minutes of the day.
func minutes(s string) (int, bool) {
	h, m, ok := strings.Cut(s, ":")
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	return hh*60 + mm, ok && err1 == nil && err2 == nil && hh >= 0 && hh < 24 && mm >= 0 && mm < 60
}

func (d *Dashboard) showNotify(w http.ResponseWriter, r *http.Request, status int, tab notifyTab, errWords string) {
	p, err := d.notifyPage(r, tab)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	p.Error = errWords
	d.render(w, r, status, "settings", p)
}

func (d *Dashboard) handleNotify(w http.ResponseWriter, r *http.Request) {
	d.showNotify(w, r, http.StatusOK, notifyTab{}, "")
}

// enabled answers for a server without notifications and says whether to go on.
func (d *Dashboard) enabled(w http.ResponseWriter, r *http.Request) bool {
	if d.o.Notifications == nil {
		d.errorPage(w, r, http.StatusServiceUnavailable, "Unavailable", "Notifications need PostgreSQL, which this server was not given.")
		return false
	}
	return true
}

func (d *Dashboard) handleNotifyLink(w http.ResponseWriter, r *http.Request) {
	if !d.enabled(w, r) {
		return
	}
	link, err := d.o.Notifications.TelegramLink(r.Context(), viewerOf(r).User.ID)
	d.recordAction(r, "link_telegram", nil, err)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	d.showNotify(w, r, http.StatusOK, notifyTab{Link: &link}, "")
}

func (d *Dashboard) handleNotifyUnlink(w http.ResponseWriter, r *http.Request) {
	if !d.enabled(w, r) {
		return
	}
	err := d.o.Notifications.Unlink(r.Context(), viewerOf(r).User.ID)
	d.recordAction(r, "unlink_telegram", nil, err)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	redirect(w, r, "/dashboard/settings/notifications?done=unlinked")
}
