package dashboard

import (
	"errors"
	"net/http"
	"net/url"
	"path"
	"strings"

	"github.com/go-chi/chi/v5"

	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/registry"
)

// botRoutes adds the Bots page's routes (under /dashboard): the list, the create and edit
// forms, the delete confirmation, and pause / resume (which the Overview and Bot detail
// pages post to as well, with a next path to come back to). GET /bots/{id} is Bot detail's.
func (d *Dashboard) botRoutes(r chi.Router) {
	r.Get("/bots", d.handleBots)
	r.Get("/bots/table", d.handleBotsTable)
	r.Get("/bots/new", d.handleNewBot)
	r.Post("/bots", d.handleCreateBot)
	r.Get("/bots/{id}/edit", d.handleEditBot)
	r.Post("/bots/{id}/edit", d.handleUpdateBot)
	r.Post("/bots/{id}/delete", d.handleDeleteBot)
	r.Post("/bots/{id}/pause", d.handlePauseBot)
	r.Post("/bots/{id}/resume", d.handleResumeBot)
}

// notConfigured is the words of a bot change on a server without fleet (no Kubernetes
// access: --bot-actions=false).
const notConfigured = "Bot management is not configured on this server: bots are created and changed through your platform team's repository."

// fleetOf is the fleet, or nil once it has answered that bot management is not configured.
func (d *Dashboard) fleetOf(w http.ResponseWriter, r *http.Request) *fleet.Fleet {
	if d.o.APIs.Fleet == nil {
		d.errorPage(w, r, http.StatusServiceUnavailable, "Not configured", notConfigured)
	}
	return d.o.APIs.Fleet
}

// botsPage is the Bots page's data.
type botsPage struct {
	Bots []botRow
	// Fleet: bot management is configured (create, edit, delete, pause, resume).
	Fleet bool
	// LiveIDs lists the bots' IDs for data-live-bots.
	LiveIDs string
}

// botRow is one bot of the list.
type botRow struct {
	registry.Bot
	// ManagedKnown: whether fleet could say who manages the bot; Managed: sigops does (else
	// its GitOps repository).
	ManagedKnown, Managed bool
}

// Live reports whether the bot trades real money (an exchange connection).
func (b botRow) Live() bool { return b.Account.Kind == registry.AccountExchange }

func (d *Dashboard) botsData(r *http.Request) (botsPage, error) {
	bots, err := d.ownBots(r.Context(), fleetCaller(r).Email, d.o.Now())
	if err != nil {
		return botsPage{}, err
	}
	p := botsPage{Fleet: d.o.APIs.Fleet != nil}
	var managed map[string]bool
	if p.Fleet {
		// Who manages a bot is on its Kubernetes object only; without the API server the
		// list still shows the bots.
		if managed, err = d.o.APIs.Fleet.ManagedIDs(r.Context(), fleetCaller(r)); err != nil {
			d.log().Warn("dashboard: reading which bots sigops manages", "error", err)
		}
	}
	ids := make([]string, 0, len(bots))
	for _, b := range bots {
		p.Bots = append(p.Bots, botRow{Bot: b, ManagedKnown: managed != nil, Managed: managed[b.ID]})
		ids = append(ids, b.ID)
	}
	p.LiveIDs = strings.Join(ids, " ")
	return p, nil
}

// handleBots is the Bots page: the viewer's bots with their venue, pair, availability and
// manager, and the actions on each.
func (d *Dashboard) handleBots(w http.ResponseWriter, r *http.Request) {
	data, err := d.botsData(r)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "bots", Page{Title: "Bots", Nav: "bots", Viewer: viewerOf(r),
		Flash: botDoneWords[r.URL.Query().Get("done")], Data: data})
}

// handleBotsTable is the list alone, for the live refresh.
func (d *Dashboard) handleBotsTable(w http.ResponseWriter, r *http.Request) {
	data, err := d.botsData(r)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	d.fragment(w, http.StatusOK, "bots", "bots-table", Page{Viewer: viewerOf(r), Data: data})
}

// botDoneWords are the flashes of ?done= after a bot action, for the Bots page and for the
// pages a pause or resume goes back to. Only these words are shown: the query is the
// visitor's to write, the words are ours.
var botDoneWords = map[string]string{
	"created":  "Bot created.",
	"pending":  "Bot created: it appears in the list within moments, once the operator has set it up.",
	"updated":  "Bot updated: the change applies within moments.",
	"deleted":  "Bot deleted: its webhook stops at once. Open positions stay on the account.",
	"paused":   "Bot paused: it refuses new entries until resumed. Open positions stay; closing still works.",
	"resumed":  "Bot resumed: it takes signals again.",
	"resuming": "Resume requested: the operator lifts this pause within moments if its rule allows (a downgrade pause only with the tier).",
	// Bot detail's own actions.
	"webhook-regenerated": "A new webhook URL is being made: the old one stops within moments. Reveal the new one below and update your alerts.",
	"lab-applied":         "Bot created from a Strategy Lab result.",
}

func (d *Dashboard) handlePauseBot(w http.ResponseWriter, r *http.Request) {
	d.pauseAction(w, r, "pause_bot")
}

func (d *Dashboard) handleResumeBot(w http.ResponseWriter, r *http.Request) {
	d.pauseAction(w, r, "resume_bot")
}

// pauseAction pauses or resumes (tool) the viewer's bot, sigops-managed or GitOps alike,
// and goes back to the form's next path (a dashboard path only) with the outcome.
func (d *Dashboard) pauseAction(w http.ResponseWriter, r *http.Request, tool string) {
	fl := d.fleetOf(w, r)
	if fl == nil {
		return
	}
	id := chi.URLParam(r, "id")
	c := fleetCaller(r)
	do, done := fl.Pause, "paused"
	if tool == "resume_bot" {
		do, done = fl.Resume, "resumed"
	}
	err := do(r.Context(), c, id)
	d.recordAction(r, tool, map[string]any{"botId": id}, err)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	if tool == "resume_bot" {
		// A pause other than Manual is handed to the operator (fleet.Resume): say so when it
		// is still in force.
		if p, err := d.bots.ReadPause(r.Context(), id, d.o.Now()); err == nil && p != nil {
			done = "resuming"
		}
	}
	redirect(w, r, withDone(localNext(r.PostFormValue("next")), done))
}

// localNext is next when it is a path of the dashboard's own (/dashboard or below, no
// scheme, host or user, nothing a browser reads as another origin), else the Bots page:
// the form's next field is the visitor's to write, and a redirect must never leave the site.
func localNext(next string) string {
	const fallback = "/dashboard/bots"
	if len(next) > 2048 || !strings.HasPrefix(next, "/dashboard") || strings.ContainsAny(next, "\\\r\n\t") {
		return fallback
	}
	u, err := url.Parse(next)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil || u.Opaque != "" {
		return fallback
	}
	if p := path.Clean(u.Path); p != "/dashboard" && !strings.HasPrefix(p, "/dashboard/") {
		return fallback
	}
	return next
}

// withDone is the local path to with its done query parameter set to done.
func withDone(to, done string) string {
	u, err := url.Parse(to)
	if err != nil {
		return to
	}
	q := u.Query()
	q.Set("done", done)
	u.RawQuery = q.Encode()
	return u.String()
}

// deletePage is the delete confirmation's data.
type deletePage struct {
	Bot registry.Bot
	// Open is how many positions the bot holds: they stay on the account.
	Open int
}

// handleDeleteBot deletes the viewer's bot in two steps: a first POST shows what deleting
// does and asks again; the second, with confirm=yes, deletes. A GitOps bot is refused at
// the first step, in words.
func (d *Dashboard) handleDeleteBot(w http.ResponseWriter, r *http.Request) {
	fl := d.fleetOf(w, r)
	if fl == nil {
		return
	}
	id, c := chi.URLParam(r, "id"), fleetCaller(r)
	if r.PostFormValue("confirm") == "yes" {
		err := fl.Delete(r.Context(), c, id)
		d.recordAction(r, "delete_bot", map[string]any{"botId": id, "confirm": true}, err)
		if err != nil {
			d.failPage(w, r, err)
			return
		}
		redirect(w, r, "/dashboard/bots?done=deleted")
		return
	}
	obj, err := fl.Object(r.Context(), c, id)
	if err == nil && !fleet.IsManaged(obj) {
		err = fleet.GitOpsRefusal(id)
	}
	var bot registry.Bot
	if err == nil {
		bot, err = fl.Get(r.Context(), c, id)
	}
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	open, err := d.o.APIs.Trading.Positions(r.Context(), id)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	d.render(w, r, http.StatusOK, "bots_delete", Page{Title: "Delete " + bot.Name, Nav: "bots", Viewer: viewerOf(r),
		Data: deletePage{Bot: bot, Open: len(open)}})
}

// refusal is err as a form shows it: its words and, for an API refusal, its status.
func refusal(err error) (int, string, bool) {
	var e *errs.Error
	if !errors.As(err, &e) {
		return 0, "", false
	}
	return e.Code.HTTPStatus(), ErrorInWords(e), true
}
