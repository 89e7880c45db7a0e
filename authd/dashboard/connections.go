package dashboard

import (
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/go-chi/chi/v5"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/registry"
)

// connectionRoutes adds the Exchange connections page's routes (under /dashboard).
func (d *Dashboard) connectionRoutes(r chi.Router) {
	r.Get("/connections", d.handleConnections)
	r.Post("/connections", d.handleCreateConnection)
	r.Get("/connections/{id}/status", d.handleConnectionStatus)
	r.Get("/connections/{id}/delete", d.handleConfirmDeleteConnection)
	r.Post("/connections/{id}/delete", d.handleDeleteConnection)
}

// connectionsData is the Exchange connections page.
type connectionsData struct {
	Connections []connectionCard
	Form        connectionForm
	Exchanges   []exchangeChoice
	// CanCreate: fleet is configured; Max is how many connections it makes for one user.
	CanCreate bool
	Max       int
	// LiveTrading: the viewer's tier includes live trading (bots on these connections need
	// it).
	LiveTrading bool
	// Confirm is the connection whose deletion the page asks to confirm (nil: the list).
	Confirm *connectionCard
	// GitOps: Confirm was applied outside sigops, so it is deleted in its repository.
	GitOps bool
}

// connectionForm is what the add form sends back after a refusal: never the credentials.
type connectionForm struct {
	Name, Exchange string
	Testnet        bool
}

// exchangeChoice is one exchange the form offers: the connectors the operator has
// (ExchangeConnectionSpec.exchange's enum). OKX alone signs with a passphrase as well.
type exchangeChoice struct{ Value, Label string }

var exchangeChoices = []exchangeChoice{
	{string(tradingv1.ExchangeBinance), "Binance"},
	{string(tradingv1.ExchangeBybit), "Bybit"},
	{string(tradingv1.ExchangeOKX), "OKX"},
}

// connectionCard is one connection as its owner sees it (credentials.View: nothing of the
// key), its validation in words, and the viewer's bots on it.
type connectionCard struct {
	credentials.View
	// State is pending (not judged yet), ready, retrying (the exchange did not answer) or
	// refused.
	State string
	// Words say the verdict to a person.
	Words string
	Bots  []registry.Bot
	// ValidatedAt as a time (zero: never).
	ValidatedAt time.Time
}

// Connection states of a card.
const (
	connPending  = "pending"
	connReady    = "ready"
	connRetrying = "retrying"
	connRefused  = "refused"
)

// reasonWords say each Ready reason of the ExchangeConnection controller to the person who
// added the key: what it means and what to do.
var reasonWords = map[string]string{
	"Validated":                   "The exchange accepted the key: it can read and trade, and cannot withdraw or transfer funds.",
	"WithdrawalPermissionEnabled": "This key can withdraw funds; sigops never uses such keys: make a key without withdrawal and transfer permissions.",
	"MissingReadPermission":       "The key cannot read the account: enable reading for it on the exchange.",
	"MissingTradePermission":      "The key can trade neither spot nor futures: enable spot or futures trading for it on the exchange.",
	"InvalidCredentials":          "The exchange refused the key (wrong, expired or deleted, or this server's address is not on the key's IP allow-list): make a new key and add it again.",
	"Unreachable":                 "The exchange did not answer; sigops keeps trying on its own. Bots on this connection cannot trade until it answers.",
	"ValidationFailed":            "The check with the exchange failed; sigops keeps trying on its own.",
	"ConnectFailed":               "The connection's settings were refused before any call to the exchange.",
	"ExchangeNotSupported":        "This sigops installation cannot connect to this exchange.",
	"MasterKeyMissing":            "This sigops installation cannot store keys encrypted yet (it has no master key): ask its operator.",
	"SecretNotFound":              "The stored key is missing: delete this connection and add the key again.",
	"SecretMissingKeys":           "The stored key lacks its API key or secret: delete this connection and add the key again.",
}

// retryingReasons are the verdicts the controller retries on its own.
var retryingReasons = []string{"Unreachable", "ValidationFailed"}

// cardOf is a connection's card.
func cardOf(v credentials.View, bots []registry.Bot) connectionCard {
	c := connectionCard{View: v, Words: reasonWords[v.Reason]}
	if v.ValidatedAt > 0 {
		c.ValidatedAt = time.UnixMilli(v.ValidatedAt)
	}
	switch {
	case v.Reason == "":
		c.State, c.Words = connPending, "Validating… sigops is checking the key with the exchange."
	case v.Status == credentials.StatusReady:
		c.State = connReady
	case slices.Contains(retryingReasons, v.Reason):
		c.State = connRetrying
	default:
		c.State = connRefused
	}
	if c.Words == "" {
		c.Words = "The key is not usable (" + v.Reason + ")."
	}
	for _, b := range bots {
		if b.Account.Kind == registry.AccountExchange && (b.Account.ID == v.ID || (b.Namespace == v.Namespace && b.Account.Name == v.Name)) {
			c.Bots = append(c.Bots, b)
		}
	}
	return c
}

var connectionDone = map[string]string{
	"connection-added":   "Exchange connection added: sigops is checking the key with the exchange.",
	"connection-deleted": "Exchange connection deleted, with its stored key.",
}

func (d *Dashboard) handleConnections(w http.ResponseWriter, r *http.Request) {
	d.connectionsPage(w, r, http.StatusOK, connectionForm{Exchange: exchangeChoices[0].Value}, "")
}

// connectionsPage renders the page with status, the add form's values and a refusal. A
// connection just added (?added=<id>) that the controller has not judged yet is shown as
// validating.
func (d *Dashboard) connectionsPage(w http.ResponseWriter, r *http.Request, status int, form connectionForm, refusal string) {
	v := viewerOf(r)
	cards, err := d.connectionCards(r)
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	if id := r.URL.Query().Get("added"); id != "" && !slices.ContainsFunc(cards, func(c connectionCard) bool { return c.ID == id }) {
		if pending, ok := d.pendingCard(r, id); ok {
			cards = append(cards, pending)
		}
	}
	d.render(w, r, status, "connections", Page{Title: "Exchange connections", Nav: "connections", Viewer: v,
		Flash: connectionDone[r.URL.Query().Get("done")], Error: refusal,
		Data: connectionsData{Connections: cards, Form: form, Exchanges: exchangeChoices, CanCreate: d.o.APIs.Fleet != nil,
			Max: fleet.MaxConnections, LiveTrading: liveTrading(r)}})
}

// liveTrading reports whether the viewer's tier includes live trading.
func liveTrading(r *http.Request) bool { return viewerOf(r).User.Tier.Capabilities.AllowLiveTrading }

// connectionCards are the viewer's projected connections, by ID.
func (d *Dashboard) connectionCards(r *http.Request) ([]connectionCard, error) {
	ctx, owner := r.Context(), viewerOf(r).User.Email
	conns, err := credentials.NewConnections(d.o.Redis).ListByOwner(ctx, owner)
	if err != nil {
		return nil, err
	}
	bots, err := d.ownedBots(r)
	if err != nil {
		return nil, err
	}
	cards := make([]connectionCard, len(conns))
	for i, c := range conns {
		cards[i] = cardOf(c.View(), bots)
	}
	return cards, nil
}

func (d *Dashboard) ownedBots(r *http.Request) ([]registry.Bot, error) {
	owner := viewerOf(r).User.Email
	ids, err := d.bots.OwnerBots(r.Context(), owner)
	if err != nil {
		return nil, err
	}
	return d.bots.OwnedBots(r.Context(), owner, ids)
}

// pendingCard is the viewer's connection id that the controller has not projected yet, read
// from the API server through fleet (false when it is not the viewer's, or fleet is off).
func (d *Dashboard) pendingCard(r *http.Request, id string) (connectionCard, bool) {
	if d.o.APIs.Fleet == nil {
		return connectionCard{}, false
	}
	v := viewerOf(r)
	conn, err := d.o.APIs.Fleet.Connection(r.Context(), fleet.Caller{UserID: v.User.ID, Email: v.User.Email}, id)
	if err != nil {
		return connectionCard{}, false
	}
	return cardOf(credentials.View{ID: string(conn.UID), Namespace: conn.Namespace, Name: conn.Name,
		Exchange: string(conn.Spec.Exchange), Testnet: conn.Spec.Testnet, Status: credentials.StatusNotReady,
		Permissions: []string{}, Markets: []string{}}, nil), true
}

var errConnectionNotFound = errs.New(errs.NotFound, "exchange connection not found")

// card is the viewer's connection id: its projection, or while there is none yet the
// pending card; errConnectionNotFound for a missing or another user's connection.
func (d *Dashboard) card(r *http.Request, id string) (connectionCard, error) {
	c, err := credentials.NewConnections(d.o.Redis).OwnedBy(r.Context(), id, viewerOf(r).User.Email)
	if errors.Is(err, credentials.ErrNotFound) {
		if pending, ok := d.pendingCard(r, id); ok {
			return pending, nil
		}
		return connectionCard{}, errConnectionNotFound
	}
	if err != nil {
		return connectionCard{}, err
	}
	bots, err := d.ownedBots(r)
	if err != nil {
		return connectionCard{}, err
	}
	return cardOf(c.View(), bots), nil
}

// handleConnectionStatus is one connection's validation alone. While it is pending the
// fragment asks htmx to fetch it again every 2 s; once judged it no longer does, so polling
// stops by itself (connection changes are not announced on the live stream).
func (d *Dashboard) handleConnectionStatus(w http.ResponseWriter, r *http.Request) {
	c, err := d.card(r, chi.URLParam(r, "id"))
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	d.fragment(w, http.StatusOK, "connections", "connection-card-fragment", Page{Viewer: viewerOf(r), Data: c})
}

// handleCreateConnection stores a new API key: fleet makes the Secret and the
// ExchangeConnection in the viewer's namespace, and the controller validates the key. The
// key, secret and passphrase are read from the form and handed to fleet only: they are not
// logged, not journaled, and never rendered again (a refused form comes back without them).
func (d *Dashboard) handleCreateConnection(w http.ResponseWriter, r *http.Request) {
	form := connectionForm{Name: strings.TrimSpace(r.PostFormValue("name")), Exchange: r.PostFormValue("exchange"),
		Testnet: r.PostFormValue("testnet") != ""}
	creds := fleet.Credentials{APIKey: r.PostFormValue("api_key"), APISecret: r.PostFormValue("api_secret"),
		Passphrase: r.PostFormValue("passphrase")}
	if d.o.APIs.Fleet == nil {
		d.connectionsPage(w, r, http.StatusServiceUnavailable, form, "Adding exchange connections is not configured on this server.")
		return
	}
	var err error
	var added string
	switch {
	case form.Name == "":
		err = errs.New(errs.InvalidParameter, "name: give the connection a name (lower-case letters, digits and dashes)")
	case !slices.ContainsFunc(exchangeChoices, func(c exchangeChoice) bool { return c.Value == form.Exchange }):
		err = errs.New(errs.InvalidParameter, "exchange: choose Binance, Bybit or OKX")
	default:
		v := viewerOf(r)
		conn, cerr := d.o.APIs.Fleet.CreateConnection(r.Context(), fleet.Caller{UserID: v.User.ID, Email: v.User.Email}, form.Name,
			tradingv1.ExchangeConnectionSpec{Exchange: tradingv1.Exchange(form.Exchange), Testnet: form.Testnet}, creds)
		if err = cerr; err == nil {
			added = string(conn.UID)
		}
	}
	// The journal gets what identifies the connection, never a credential.
	d.recordAction(r, "create_exchange_connection", map[string]any{"name": form.Name, "exchange": form.Exchange, "testnet": form.Testnet}, err)
	if e, ok := errs.As(err); ok && e.Code == errs.InvalidParameter {
		d.connectionsPage(w, r, http.StatusBadRequest, form, ErrorInWords(e))
		return
	}
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	redirect(w, r, "/dashboard/connections?done=connection-added&added="+url.QueryEscape(added))
}

// handleConfirmDeleteConnection is the confirmation step of a deletion: what goes, and the
// bots that stop it.
func (d *Dashboard) handleConfirmDeleteConnection(w http.ResponseWriter, r *http.Request) {
	c, err := d.card(r, chi.URLParam(r, "id"))
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	data := connectionsData{Confirm: &c}
	if d.o.APIs.Fleet != nil {
		v := viewerOf(r)
		conn, err := d.o.APIs.Fleet.Connection(r.Context(), fleet.Caller{UserID: v.User.ID, Email: v.User.Email}, c.ID)
		if err != nil {
			d.failPage(w, r, err)
			return
		}
		data.GitOps = conn.Labels[fleet.LabelManagedBy] != fleet.ManagedBySigops
	}
	d.render(w, r, http.StatusOK, "connections", Page{Title: "Delete exchange connection", Nav: "connections", Viewer: viewerOf(r), Data: data})
}

// handleDeleteConnection deletes one of the viewer's connections and its stored key through
// fleet, which refuses a GitOps connection and one that bots trade on.
func (d *Dashboard) handleDeleteConnection(w http.ResponseWriter, r *http.Request) {
	id := chi.URLParam(r, "id")
	if d.o.APIs.Fleet == nil {
		d.errorPage(w, r, http.StatusServiceUnavailable, "Unavailable", "Managing exchange connections is not configured on this server.")
		return
	}
	v := viewerOf(r)
	err := d.o.APIs.Fleet.DeleteConnection(r.Context(), fleet.Caller{UserID: v.User.ID, Email: v.User.Email}, id)
	d.recordAction(r, "delete_exchange_connection", map[string]string{"connectionId": id}, err)
	if e, ok := errs.As(err); ok && e.Code == errs.ManagedByGitOps {
		// codeWords speaks of bots; the message says what to do with a connection.
		d.errorPage(w, r, http.StatusConflict, "Request refused", e.Message+" ("+string(e.Code)+")")
		return
	}
	if err != nil {
		d.failPage(w, r, err)
		return
	}
	redirect(w, r, "/dashboard/connections?done=connection-deleted")
}
