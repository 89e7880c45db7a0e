package dashboard

import (
	"errors"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/registry"
)

// ErrWrongPassword is Options.ChangePassword's refusal of a wrong current password. It is
// UNAUTHORIZED in the audit journal; the page says it in its own words (ErrorInWords of
// UNAUTHORIZED speaks of an ended session, which this is not).
var ErrWrongPassword = errs.New(errs.Unauthorized, "the current password is not right")

// settingsRoutes adds the Settings page's routes (under /dashboard): the profile with the
// password change and the API token, Connected Apps, and the audit journal.
func (d *Dashboard) settingsRoutes(r chi.Router) {
	r.Get("/settings", d.handleSettings)
	r.Post("/settings/token", d.handleIssueToken)
	r.Post("/settings/password", d.handleChangePassword)
	r.Get("/settings/connected-apps", d.handleConnectedApps)
	r.Post("/settings/connected-apps/revoke", d.handleRevokeApp)
	r.Post("/settings/connected-apps/policy", d.handleAppPolicy)
	r.Post("/settings/connected-apps/suspend", d.handleAppsSwitch(true))
	r.Post("/settings/connected-apps/lift", d.handleAppsSwitch(false))
	r.Get("/settings/audit", d.handleAuditJournal)
	d.notifyRoutes(r)
}

// settingsData is the Settings template's Data; Section picks the tab shown.
type settingsData struct {
	Section string
	User    auth.User
	// Token is a bearer token just issued (shown once: only in the answer to the POST).
	Token        string
	TokenExpires time.Time
	// PasswordChange is false when authd wired no password change.
	PasswordChange bool
	MinPassword    int
	Apps           []appRow
	// Policies are the limits of each app with access (one per client), and Bots the
	// viewer's bots their forms offer.
	Policies []appPolicyRow
	Bots     []registry.Bot
	// Suspended: the kill switch suspends every app's trading, since SuspendedSince.
	Suspended      bool
	SuspendedSince time.Time
	Audit          auditPage
	Notify         notifyTab
}

type appRow struct {
	auth.Authorization
	Expired, Active bool
}

// appPolicyRow is one app's limits on the Connected apps page: in words, and the form.
type appPolicyRow struct {
	ClientID, ClientName string
	Policy               apppolicy.Policy
	Words                []string
	// UsedThisHour is the orders the app placed in the current UTC hour; CommittedToday the
	// USDT of real money it committed in the current UTC day.
	UsedThisHour   int
	CommittedToday decimal.Decimal
}

type auditPage struct {
	Entries []auditRow
	// Next is the cursor of the next (older) page, "" at the end; Paged tells a later page
	// from the newest.
	Next          string
	Paged         bool
	RetentionDays int
}

type auditRow struct {
	Time                           time.Time
	Channel, Client, Tool, Outcome string
	Arguments                      string
	Truncated, OK                  bool
}

// doneWords are the flashes a settings redirect may ask for (?done=): fixed words, never the
// query's text.
var doneWords = map[string]string{
	"revoked":         "Access revoked: the app's tokens no longer work and it cannot refresh them.",
	"policy":          "The app's limits are saved; they apply from its next call.",
	"suspended":       "Every connected app's trading is suspended: they can still read, and cannot trade, change bots or spend.",
	"lifted":          "The suspension is lifted: connected apps may trade again within their scopes.",
	"unlinked":        "Telegram is unlinked: that chat gets no more alerts.",
	"notify-saved":    "Your notification choices are saved.",
	"webhook-deleted": "The webhook destination is deleted.",
	"webhook-enabled": "The webhook destination is on again.",
}

func (d *Dashboard) settingsPage(r *http.Request, data settingsData) Page {
	v := viewerOf(r)
	data.User = v.User
	data.PasswordChange = d.o.ChangePassword != nil
	data.MinPassword = auth.MinPasswordLen
	title := map[string]string{"profile": "Settings", "apps": "Connected apps", "audit": "Audit journal",
		"notify": "Notifications"}[data.Section]
	return Page{Title: title, Nav: "settings", Viewer: v, Flash: doneWords[r.URL.Query().Get("done")], Data: data}
}

// handleSettings is the profile: name, email, tier and its capabilities, the Strategy Lab
// wallet, the password change and the API token.
func (d *Dashboard) handleSettings(w http.ResponseWriter, r *http.Request) {
	d.render(w, r, http.StatusOK, "settings", d.settingsPage(r, settingsData{Section: "profile"}))
}

// handleIssueToken issues a full-access bearer token and shows it in this answer only: it
// is not stored anywhere it could be shown again.
func (d *Dashboard) handleIssueToken(w http.ResponseWriter, r *http.Request) {
	u := viewerOf(r).User
	if d.o.Issuer == nil {
		d.errorPage(w, r, http.StatusServiceUnavailable, "Unavailable", "API tokens are not configured on this server.")
		return
	}
	tok, err := d.o.Issuer.IssueAPIToken(r.Context(), u)
	d.recordAction(r, "create_api_token", nil, err)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	d.log().Info("api token issued", "channel", "dashboard", "user", u.ID)
	d.render(w, r, http.StatusOK, "settings", d.settingsPage(r, settingsData{Section: "profile",
		Token: tok.Token, TokenExpires: tok.ExpiresAt}))
}

// handleChangePassword changes the viewer's password. The current password is checked
// behind the login limits; success ends every session (this one included) and bearer token
// of the user, so the browser goes to the login page with a note saying so.
func (d *Dashboard) handleChangePassword(w http.ResponseWriter, r *http.Request) {
	if d.o.ChangePassword == nil {
		d.errorPage(w, r, http.StatusServiceUnavailable, "Unavailable", "Password changes are not configured on this server.")
		return
	}
	current, next := r.PostFormValue("current_password"), r.PostFormValue("new_password")
	refuse := func(status int, words string, err error) {
		d.recordAction(r, "change_password", nil, err)
		p := d.settingsPage(r, settingsData{Section: "profile"})
		p.Error = words
		d.render(w, r, status, "settings", p)
	}
	switch {
	case current == "":
		refuse(http.StatusBadRequest, "Enter your current password.", errs.New(errs.InvalidParameter, "current password missing"))
		return
	case next != r.PostFormValue("new_password_again"):
		refuse(http.StatusBadRequest, "The two new passwords are not the same. Nothing was changed.",
			errs.New(errs.InvalidParameter, "new passwords differ"))
		return
	case auth.CheckPasswordPolicy(next) != nil:
		refuse(http.StatusBadRequest, "The new password must be "+strconv.Itoa(auth.MinPasswordLen)+" to "+
			strconv.Itoa(auth.MaxPasswordLen)+" characters long. Nothing was changed.",
			errs.New(errs.InvalidParameter, "new password outside the length bounds"))
		return
	}
	err := d.o.ChangePassword(r, viewerOf(r).User, current, next)
	if e, ok := errs.As(err); ok && e.Code == errs.RateLimited {
		w.Header().Set("Retry-After", strconv.Itoa(max(int((e.RetryAfter+time.Second-1)/time.Second), 1)))
		refuse(http.StatusTooManyRequests, e.Message+" Nothing was changed.", err)
		return
	}
	switch {
	case errors.Is(err, ErrWrongPassword):
		refuse(http.StatusForbidden, "The current password is not right. Nothing was changed.", err)
		return
	case err != nil:
		d.recordAction(r, "change_password", nil, err)
		d.failPage(w, r, err)
		return
	}
	d.recordAction(r, "change_password", nil, nil)
	if d.o.Purge != nil {
		d.o.Purge()
	}
	d.log().Info("password changed", "channel", "dashboard", "user", viewerOf(r).User.ID)
	// The session record is gone (SetPassword deleted every session of the user); the
	// cookie goes too, so the browser holds nothing stale.
	http.SetCookie(w, &http.Cookie{Name: auth.SessionCookie, Value: "", Path: "/", MaxAge: -1, HttpOnly: true,
		Secure: true, SameSite: http.SameSiteStrictMode})
	redirect(w, r, "/login?done=password")
}

// handleConnectedApps lists the viewer's OAuth authorizations, revoked and expired ones
// included.
func (d *Dashboard) handleConnectedApps(w http.ResponseWriter, r *http.Request) {
	if d.o.OAuth == nil {
		d.errorPage(w, r, http.StatusServiceUnavailable, "Unavailable", "Connected apps are not configured on this server.")
		return
	}
	list, err := d.o.OAuth.ListAuthorizations(r.Context(), viewerOf(r).User.ID)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	now := d.o.Now()
	rows := make([]appRow, len(list))
	for i, a := range list {
		rows[i] = appRow{Authorization: a, Expired: !now.Before(a.ExpiresAt), Active: a.Active(now)}
	}
	data := settingsData{Section: "apps", Apps: rows}
	if data.Policies, data.Bots, err = d.appPolicies(r, rows); err != nil {
		d.failPage(w, r, err)
		return
	}
	since, on, err := d.o.Policies.Since(r.Context(), viewerOf(r).User.ID)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	data.Suspended, data.SuspendedSince = on, since
	d.render(w, r, http.StatusOK, "settings", d.settingsPage(r, data))
}

// appPolicies are the limits of the viewer's apps that have access, one per client, and
// the viewer's bots (names for the words, choices for the forms).
func (d *Dashboard) appPolicies(r *http.Request, rows []appRow) ([]appPolicyRow, []registry.Bot, error) {
	v := viewerOf(r).User
	bots, err := d.bots.AllOwned(r.Context(), emails.Canonical(v.Email))
	if err != nil {
		return nil, nil, err
	}
	sort.Slice(bots, func(i, j int) bool { return bots[i].Name < bots[j].Name })
	names := make(map[string]string, len(bots))
	for _, b := range bots {
		names[b.ID] = b.Name
	}
	ps := d.o.Policies
	var out []appPolicyRow
	seen := map[string]bool{}
	for _, a := range rows {
		if !a.Active || seen[a.ClientID] {
			continue
		}
		seen[a.ClientID] = true
		p, err := ps.Get(r.Context(), v.ID, a.ClientID)
		if err != nil {
			return nil, nil, err
		}
		used, err := ps.HourUsed(r.Context(), v.ID, a.ClientID)
		if err != nil {
			return nil, nil, err
		}
		committed, err := ps.DayCommitted(r.Context(), v.ID, a.ClientID)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, appPolicyRow{ClientID: a.ClientID, ClientName: a.ClientName, Policy: p, Words: p.Words(names),
			UsedThisHour: used, CommittedToday: committed})
	}
	return out, bots, nil
}

// handleAppPolicy sets the limits of one of the viewer's apps (the consent page's fields,
// apppolicy.FromForm); an app the viewer never authorized is not found. Journaled.
func (d *Dashboard) handleAppPolicy(w http.ResponseWriter, r *http.Request) {
	if d.o.OAuth == nil {
		d.errorPage(w, r, http.StatusServiceUnavailable, "Unavailable", "Connected apps are not configured on this server.")
		return
	}
	v := viewerOf(r).User
	client := r.PostFormValue("client")
	list, err := d.o.OAuth.ListAuthorizations(r.Context(), v.ID)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	if !slices.ContainsFunc(list, func(a auth.Authorization) bool { return a.ClientID == client }) {
		err = errs.New(errs.NotFound, "no such connected app")
	}
	var p apppolicy.Policy
	if err == nil {
		p, err = apppolicy.FromForm(r.Context(), r.PostForm, d.bots, emails.Canonical(v.Email))
	}
	if err == nil {
		err = d.o.Policies.Set(r.Context(), v.ID, client, p)
	}
	d.recordAction(r, "set_app_policy", map[string]any{"app": client, "live": p.Live, "bots": p.Bots,
		"ordersPerHour": p.OrdersPerHour, "orderNotional": p.OrderNotional, "dayNotional": p.DayNotional,
		"approve": p.Approve, "approveAbove": p.ApproveAbove}, err)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	redirect(w, r, "/dashboard/settings/connected-apps?done=policy")
}

// handleAppsSwitch turns the viewer's kill switch on (suspend) or off: while it is on every
// connected app's calls that trade, change bots or spend answer POLICY_LIMIT on every mcpd
// replica from their next call, and reads keep working. The action is audited.
func (d *Dashboard) handleAppsSwitch(suspend bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		sw := d.o.Policies
		user := viewerOf(r).User.ID
		tool, done := "lift_connected_apps_suspension", "lifted"
		var err error
		if suspend {
			tool, done = "suspend_connected_apps", "suspended"
			_, err = sw.Suspend(r.Context(), user)
		} else {
			err = sw.Lift(r.Context(), user)
		}
		d.recordAction(r, tool, map[string]any{}, err)
		if err != nil {
			d.failPage(w, r, err)
			return
		}
		d.log().Info("connected apps "+done, "user", user)
		redirect(w, r, "/dashboard/settings/connected-apps?done="+done)
	}
}

// handleRevokeApp revokes one authorization of the viewer: its access tokens and refresh
// chain die at once, its record stays listed with its revocation time. Another user's
// authorization is not found, like a missing one.
func (d *Dashboard) handleRevokeApp(w http.ResponseWriter, r *http.Request) {
	if d.o.OAuth == nil {
		d.errorPage(w, r, http.StatusServiceUnavailable, "Unavailable", "Connected apps are not configured on this server.")
		return
	}
	id := r.PostFormValue("authorization")
	err := d.o.OAuth.RevokeAuthorization(r.Context(), viewerOf(r).User.ID, id)
	if errors.Is(err, auth.ErrNotFound) {
		err = errs.New(errs.NotFound, "no such connected app")
	}
	// "app", not "authorization": the journal redacts keys that name credentials, and an
	// authorization's ID is no credential (it only works with the owner's session).
	d.recordAction(r, "revoke_connected_app", map[string]string{"app": id}, err)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	if d.o.Purge != nil {
		d.o.Purge()
	}
	d.log().Info("connected app revoked", "user", viewerOf(r).User.ID, "authorization", id)
	redirect(w, r, "/dashboard/settings/connected-apps?done=revoked")
}

// handleAuditJournal is the viewer's audit journal, newest first, one page of the journal's
// default size at a time (?cursor= from the previous page).
func (d *Dashboard) handleAuditJournal(w http.ResponseWriter, r *http.Request) {
	j := d.o.APIs.Audit
	cursor := r.URL.Query().Get("cursor")
	entries, next, err := j.List(r.Context(), viewerOf(r).User.ID, cursor, 0)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	page := auditPage{Next: next, Paged: cursor != "", RetentionDays: int(j.Retention() / (24 * time.Hour)),
		Entries: make([]auditRow, len(entries))}
	for i, e := range entries {
		page.Entries[i] = auditRowOf(e)
	}
	d.render(w, r, http.StatusOK, "settings", d.settingsPage(r, settingsData{Section: "audit", Audit: page}))
}

func auditRowOf(e audit.Entry) auditRow {
	row := auditRow{Time: e.Time, Channel: e.Channel, Client: e.ClientName, Tool: e.Tool,
		Arguments: string(e.Arguments), Truncated: audit.Truncated(e.Arguments), OK: e.Outcome.OK, Outcome: "ok"}
	switch {
	case row.Client != "":
	case e.ClientID != "":
		row.Client = e.ClientID
	case e.Channel == audit.ChannelMCP:
		row.Client = "API token (full access)"
	default:
		row.Client = dashboardClient
	}
	if !e.Outcome.OK {
		row.Outcome = ErrorInWords(&errs.Error{Code: e.Outcome.Code, Message: e.Outcome.Message})
	}
	return row
}
