package dashboard

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/shopspring/decimal"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/portfolio"
	"github.com/sigops/sigops/runtime/registry"
)

// accountRoutes adds the Paper accounts page's routes (under /dashboard).
func (d *Dashboard) accountRoutes(r chi.Router) {
	r.Get("/accounts", d.handleAccounts)
	r.Post("/accounts", d.handleCreateAccount)
	r.Get("/accounts/{id}/card", d.handleAccountCard)
	r.Post("/accounts/{id}/refill", d.handleRefill)
}

// accountsData is the Paper accounts page.
type accountsData struct {
	Accounts []accountCard
	// Form is the create form's last values (after a refusal).
	Form accountForm
	// CanCreate: fleet is configured; Max is how many accounts it makes for one user.
	CanCreate bool
	Max       int
}

// accountForm is what the create form sends.
type accountForm struct {
	Name, InitialBalance string
}

// accountCard is one paper account: settings and refill times from the paper exchange,
// balances and figures from the portfolio (the figures get_balances and the read API show),
// and the viewer's bots that trade on it.
type accountCard struct {
	ID, Namespace, Name, Currency string
	InitialBalance, FeeRate       decimal.Decimal
	Balances                      []portfolio.Balance
	// Equity, UnrealisedPnl and RealisedPnl are nil when Error is set.
	Equity, UnrealisedPnl, RealisedPnl *httpapi.Number
	Excluded                           []string
	Error                              *portfolio.Error
	LastRefillAt                       time.Time
	NextRefillAt                       time.Time
	// RefillIn is the wait before the next refill in words ("5 h 12 min"); empty when a
	// refill is allowed now.
	RefillIn string
	Bots     []registry.Bot
	// BotIDs are the bots' IDs separated by spaces (data-live-bots).
	BotIDs string
	// CSRF is the viewer's token for the card's refill form (the card renders alone too).
	CSRF string
}

// accountDone are the page's flashes after a successful form post (?done=). Only these
// words are shown: the query string never reaches the page.
var accountDone = map[string]string{
	"refilled":        "The paper account was refilled to its initial balance.",
	"account-created": "Paper account created: it appears here within a few seconds, once the operator has opened its balance.",
}

func (d *Dashboard) handleAccounts(w http.ResponseWriter, r *http.Request) {
	d.accountsPage(w, r, http.StatusOK, accountForm{InitialBalance: "10000"}, "")
}

// accountsPage renders the page with status, the create form's values and a refusal.
func (d *Dashboard) accountsPage(w http.ResponseWriter, r *http.Request, status int, form accountForm, refusal string) {
	cards, err := d.accountCards(r, "")
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	d.render(w, r, status, "accounts", Page{Title: "Paper accounts", Nav: "accounts", Viewer: viewerOf(r),
		Flash: accountDone[r.URL.Query().Get("done")], Error: refusal,
		Data: accountsData{Accounts: cards, Form: form, CanCreate: d.o.APIs.Fleet != nil, Max: fleet.MaxPaperAccounts}})
}

// handleAccountCard is one account's card alone: the live refresh after a fill of one of its
// bots. Another user's account answers 404 like a missing one.
func (d *Dashboard) handleAccountCard(w http.ResponseWriter, r *http.Request) {
	cards, err := d.accountCards(r, chi.URLParam(r, "id"))
	if err == nil && len(cards) == 0 {
		err = errPaperAccountNotFound
	}
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	d.fragment(w, http.StatusOK, "accounts", "account-card-fragment", Page{Viewer: viewerOf(r), Data: cards[0]})
}

var errPaperAccountNotFound = errs.New(errs.NotFound, "paper account not found")

// accountCards are the viewer's paper accounts (only id when it is set), by name, as
// portfolio.PaperAccounts joins them for every surface, with the viewer's bots on each.
func (d *Dashboard) accountCards(r *http.Request, id string) ([]accountCard, error) {
	ctx, owner := r.Context(), viewerOf(r).User.Email
	now := d.o.Now()
	accts, err := d.o.APIs.Portfolio.PaperAccounts(ctx, owner, id, now)
	if err != nil {
		return nil, err
	}
	bots, err := d.bots.AllOwned(ctx, owner)
	if err != nil {
		return nil, err
	}
	cards := make([]accountCard, 0, len(accts))
	for _, p := range accts {
		st, a := p.State, p.Valued
		c := accountCard{ID: st.ID, Namespace: st.Namespace, Name: st.Name, Currency: p.Currency,
			InitialBalance: st.InitialBalance, FeeRate: st.FeeRate, Balances: a.Balances, Equity: a.Equity,
			UnrealisedPnl: a.UnrealisedPnl, RealisedPnl: a.RealisedPnl, Excluded: a.Excluded, Error: a.Error,
			LastRefillAt: st.LastRefillAt, NextRefillAt: p.NextRefillAt, CSRF: viewerOf(r).CSRF}
		if c.NextRefillAt.After(now) {
			c.RefillIn = waitInWords(c.NextRefillAt.Sub(now))
		}
		var ids []string
		for _, b := range bots {
			if b.Account.Kind == registry.AccountPaper && b.Account.ID == st.ID {
				c.Bots = append(c.Bots, b)
				ids = append(ids, b.ID)
			}
		}
		c.BotIDs = strings.Join(ids, " ")
		cards = append(cards, c)
	}
	return cards, nil
}

// waitInWords is a wait as the page shows it, rounded up to the whole minute so that the
// time shown is never before the time the server allows: 5 h 11 min 30 s is "5 h 12 min".
func waitInWords(d time.Duration) string {
	mins := int((d + time.Minute - 1) / time.Minute)
	switch {
	case mins <= 0:
		return ""
	case mins < 60:
		return fmt.Sprintf("%d min", mins)
	case mins%60 == 0:
		return fmt.Sprintf("%d h", mins/60)
	}
	return fmt.Sprintf("%d h %d min", mins/60, mins%60)
}

// handleRefill resets one of the viewer's paper accounts to its initial balance, at most
// once every 24 hours (paper.Accounts.RefillOwned checks the owner inside its transaction).
func (d *Dashboard) handleRefill(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	now := d.o.Now()
	_, err := d.accounts.RefillOwned(r.Context(), id, viewerOf(r).User.Email, now)
	var cool *paper.CooldownError
	switch {
	case errors.Is(err, paper.ErrNotFound):
		err = errPaperAccountNotFound
	case errors.As(err, &cool):
		next := cool.NextAllowed.UTC()
		e := errs.New(errs.RateLimited, "A paper account is refilled at most once every 24 hours: the next refill is possible at %s (in %s).",
			fmtTime(next), waitInWords(next.Sub(now))).WithDetails(map[string]any{"nextRefillAt": next.Format(time.RFC3339)})
		e.RetryAfter = next.Sub(now)
		err = e
	}
	d.recordAction(r, "refill_paper_account", map[string]string{"accountId": id}, err)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	redirect(w, r, "/dashboard/accounts?done=refilled")
}

// handleCreateAccount makes a paper account in the viewer's namespace through fleet, with the
// CRD's limits on its initial balance (the API server's refusal is shown in words, the form
// kept).
func (d *Dashboard) handleCreateAccount(w http.ResponseWriter, r *http.Request) {
	form := accountForm{Name: strings.TrimSpace(r.PostFormValue("name")), InitialBalance: strings.TrimSpace(r.PostFormValue("initial_balance"))}
	if d.o.APIs.Fleet == nil {
		d.accountsPage(w, r, http.StatusServiceUnavailable, form, "Creating paper accounts is not configured on this server.")
		return
	}
	var err error
	if form.Name == "" {
		err = errs.New(errs.InvalidParameter, "name: give the account a name (lower-case letters, digits and dashes)")
	} else {
		v := viewerOf(r)
		_, err = d.o.APIs.Fleet.CreatePaperAccount(r.Context(), fleet.Caller{UserID: v.User.ID, Email: v.User.Email}, form.Name,
			tradingv1.PaperAccountSpec{InitialBalance: form.InitialBalance})
	}
	d.recordAction(r, "create_paper_account", map[string]string{"name": form.Name, "initialBalance": form.InitialBalance}, err)
	if e, ok := errs.As(err); ok && e.Code == errs.InvalidParameter {
		d.accountsPage(w, r, http.StatusBadRequest, form, ErrorInWords(e))
		return
	}
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	redirect(w, r, "/dashboard/accounts?done=account-created")
}
