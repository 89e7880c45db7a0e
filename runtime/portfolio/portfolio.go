// Package portfolio computes a user's portfolio: every paper account and exchange
// connection the user owns, with balances, the open positions of the user's bots on it
// valued now, equity, unrealised and realised PnL, and totals in USDT. The read API
// (GET /api/user/portfolio), mcpd's portfolio tool and the dashboard return its Portfolio.
//
// The accounts come from the owner indexes in Redis (runtime/exchange/paper,
// runtime/credentials), the positions and trades from runtime/position; an exchange
// connection's balances and prices come from the exchange itself, through a short
// in-process cache and a per-connection time bound, so that a slow exchange cannot hold
// the answer. Nothing here calls the Kubernetes API. The figures' definitions are in
// docs/decisions.md ("Portfolio").
package portfolio

import (
	"cmp"
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"
	"golang.org/x/sync/errgroup"
	"golang.org/x/sync/singleflight"

	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
)

// Currency of every total and of each account's equity and PnL figures.
const Currency = "USDT"

// Account kinds.
const (
	KindPaper    = "paper"
	KindExchange = "exchange"
)

// Wallets a balance is held in: "unified" where one wallet serves spot and futures (paper
// accounts, Bybit's unified account), "spot" and "futures" where they differ (Binance).
const (
	WalletUnified = "unified"
	WalletSpot    = "spot"
	WalletFutures = "futures"
)

// Defaults of Options.
const (
	// DefaultCacheTTL is how long an exchange connection's balances and prices are reused.
	DefaultCacheTTL = 10 * time.Second
	// DefaultCallTimeout bounds the reads of one exchange connection.
	DefaultCallTimeout = 3 * time.Second
)

// Portfolio is a user's accounts and their totals.
type Portfolio struct {
	// Accounts: paper accounts, then exchange connections, each by name then ID.
	Accounts []Account `json:"accounts"`
	Totals   Totals    `json:"totals"`
	// AsOf is when the figures were computed (ISO 8601, UTC).
	AsOf string `json:"asOf"`
}

// Account is one paper account or exchange connection.
type Account struct {
	// ID is the PaperAccount's or ExchangeConnection's Kubernetes UID (a bot's account ID).
	ID string `json:"id"`
	// Name is namespace/name.
	Name string `json:"name"`
	// Kind is paper or exchange.
	Kind string `json:"kind"`
	// Exchange is binance, bybit or okx (exchange connections only).
	Exchange string `json:"exchange,omitempty"`
	// Currency is the currency of Equity, UnrealisedPnl and RealisedPnl: USDT.
	Currency  string     `json:"currency"`
	Balances  []Balance  `json:"balances"`
	Positions []Position `json:"positions"`
	// Equity, UnrealisedPnl and RealisedPnl are null when Error is set.
	Equity        *httpapi.Number `json:"equity"`
	UnrealisedPnl *httpapi.Number `json:"unrealisedPnl"`
	RealisedPnl   *httpapi.Number `json:"realisedPnl"`
	// Excluded names the assets left out of the figures because no USDT price was found
	// for them (a balance without an ASSET/USDT market, a position or trade quoted in
	// another currency). Empty when nothing was left out.
	Excluded []string `json:"excluded,omitempty"`
	// Error says why the account could not be read; its figures are then null, its
	// balances and positions empty, and it is left out of the totals.
	Error *Error `json:"error,omitempty"`
}

// Balance is one asset of an account's wallet.
type Balance struct {
	Asset  string         `json:"asset"`
	Wallet string         `json:"wallet"`
	Free   httpapi.Number `json:"free"`
	// Locked is held by open orders or used as margin.
	Locked httpapi.Number `json:"locked"`
	Total  httpapi.Number `json:"total"`
}

// Position is an open position of one of the user's bots: the spec's Position valued now
// (position.View), with its bot.
type Position struct {
	BotID string `json:"botId"`
	position.View
}

// Error is why an account could not be read.
type Error struct {
	Code    errs.Code `json:"code"`
	Message string    `json:"message"`
}

// Totals are the sums over the accounts read without an error, in USDT.
type Totals struct {
	Currency      string         `json:"currency"`
	Equity        httpapi.Number `json:"equity"`
	UnrealisedPnl httpapi.Number `json:"unrealisedPnl"`
	RealisedPnl   httpapi.Number `json:"realisedPnl"`
	// Complete is false when an account has an error or excluded assets: the totals then
	// leave something out.
	Complete bool `json:"complete"`
}

// Clients connects exchange connections; *connectors.Clients is one.
type Clients interface {
	Client(c credentials.Connection) (exchange.Live, error)
}

// Options configure a Service.
type Options struct {
	Redis redis.UniversalClient
	// Prices values paper accounts (the market data the paper exchange fills at).
	Prices paper.PriceSource
	// Clients connects exchange connections; nil lists them with the error "credentials
	// unavailable" (a process without a master key).
	Clients Clients
	// CacheTTL and CallTimeout: zero means DefaultCacheTTL and DefaultCallTimeout.
	CacheTTL, CallTimeout time.Duration
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Service computes portfolios.
type Service struct {
	o     Options
	paper *paper.Accounts
	conns *credentials.Connections
	reg   *registry.Registry
	// decoded keeps the bots' projections as last decoded: a page shown again and again
	// decodes a bot's projection once per change of it.
	decoded registry.Decoded

	flight singleflight.Group
	mu     sync.Mutex
	cache  map[string]snapshot // by connection UID
}

// New returns the service.
func New(o Options) *Service {
	if o.CacheTTL <= 0 {
		o.CacheTTL = DefaultCacheTTL
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Service{o: o, paper: paper.NewAccounts(o.Redis), conns: credentials.NewConnections(o.Redis),
		reg: registry.New(o.Redis), cache: map[string]snapshot{}}
}

// Of is the portfolio of the owner (an e-mail, compared canonically). An account that
// cannot be read carries its Error; an error of Redis fails the whole call.
func (s *Service) Of(ctx context.Context, owner string) (Portfolio, error) {
	accts, err := s.Accounts(ctx, owner, Select{})
	if err != nil {
		return Portfolio{}, err
	}
	return s.portfolio(accts), nil
}

// OfBooks is Of computed from the owner's books as the caller read them (ReadBooks), for a
// page that shows more of the same bots than the portfolio does: every figure of the page
// then comes from one read of the bots.
func (s *Service) OfBooks(ctx context.Context, books Books) (Portfolio, error) {
	accts, conns, err := s.list(ctx, books.owner, Select{})
	if err != nil {
		return Portfolio{}, err
	}
	out, err := s.value(ctx, accts, conns, books)
	if err != nil {
		return Portfolio{}, err
	}
	return s.portfolio(out), nil
}

func (s *Service) portfolio(accts []Account) Portfolio {
	return Portfolio{Accounts: accts, Totals: totals(accts), AsOf: s.o.Now().UTC().Format("2006-01-02T15:04:05.000Z07:00")}
}

// Select narrows Accounts to some of the owner's accounts; the zero Select is all of them.
type Select struct {
	// Kind is KindPaper or KindExchange ("": both).
	Kind string
	// ID is one account's ID (a paper account's ID, a connection's UID; "": all).
	ID string
}

// Accounts are the owner's accounts sel picks, each read and valued exactly as Of reads
// it (paper accounts by name, then exchange connections by name); an exchange connection
// that is not picked is not asked. An ID the owner does not own picks nothing.
func (s *Service) Accounts(ctx context.Context, owner string, sel Select) ([]Account, error) {
	owner = emails.Canonical(owner)
	accts, conns, err := s.list(ctx, owner, sel)
	if err != nil {
		return nil, err
	}
	if len(accts)+len(conns) == 0 {
		return []Account{}, nil
	}
	books, err := s.ReadBooks(ctx, owner)
	if err != nil {
		return nil, err
	}
	return s.value(ctx, accts, conns, books)
}

// list reads the owner's (canonical) paper accounts and exchange connections sel picks,
// the two side by side.
func (s *Service) list(ctx context.Context, owner string, sel Select) ([]paper.Account, []credentials.Connection, error) {
	var accts []paper.Account
	var conns []credentials.Connection
	g, gctx := errgroup.WithContext(ctx)
	if sel.Kind != KindExchange {
		g.Go(func() error {
			var err error
			accts, err = s.paper.ListByOwner(gctx, owner)
			accts = slices.DeleteFunc(accts, func(a paper.Account) bool { return sel.ID != "" && a.ID != sel.ID })
			return err
		})
	}
	if sel.Kind != KindPaper {
		g.Go(func() error {
			var err error
			conns, err = s.conns.ListByOwner(gctx, owner)
			conns = slices.DeleteFunc(conns, func(c credentials.Connection) bool { return sel.ID != "" && c.UID != sel.ID })
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	return accts, conns, nil
}

// value reads and values the accounts with the bots' books (paper accounts by name, then
// exchange connections by name).
func (s *Service) value(ctx context.Context, accts []paper.Account, conns []credentials.Connection, books Books) ([]Account, error) {
	byAccount := books.byAccount()
	out := make([]Account, len(accts)+len(conns))
	slices.SortFunc(accts, func(a, b paper.Account) int {
		return cmp.Or(strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name), strings.Compare(a.ID, b.ID))
	})
	var err error
	for i, a := range accts {
		if out[i], err = s.paperAccount(ctx, a, byAccount[accountKey{registry.AccountPaper, a.ID}]); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(conns, func(a, b credentials.Connection) int {
		return cmp.Or(strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name), strings.Compare(a.UID, b.UID))
	})
	// Exchanges are asked side by side, each within its own bound.
	var wg sync.WaitGroup
	for i, c := range conns {
		wg.Go(func() {
			out[len(accts)+i] = s.exchangeAccount(ctx, c, byAccount[accountKey{registry.AccountExchange, c.UID}])
		})
	}
	wg.Wait()
	return out, nil
}

// PaperAccount is a paper account as the surfaces show it (mcpd's list_paper_accounts and
// get_paper_account, the dashboard's Paper accounts page): the paper exchange's settings
// and refill times joined with the valuation Accounts makes of it.
type PaperAccount struct {
	// State is the account as the paper exchange holds it (settings, last refill).
	State paper.Account
	// Valued is its balances and figures, as get_portfolio shows them.
	Valued Account
	// Currency is the account's quote currency (paper.Quote when unset).
	Currency string
	// NextRefillAt is when a refill is next allowed.
	NextRefillAt time.Time
}

// PaperAccounts are the owner's paper accounts (only id when it is set) in Accounts' order
// (by name, then ID), each joined with its valuation: the one join every surface shows.
func (s *Service) PaperAccounts(ctx context.Context, owner, id string, now time.Time) ([]PaperAccount, error) {
	states, err := s.paper.ListByOwner(ctx, emails.Canonical(owner))
	if err != nil {
		return nil, err
	}
	valued, err := s.Accounts(ctx, owner, Select{Kind: KindPaper, ID: id})
	if err != nil {
		return nil, err
	}
	byID := make(map[string]paper.Account, len(states))
	for _, st := range states {
		byID[st.ID] = st
	}
	out := make([]PaperAccount, 0, len(valued))
	for _, a := range valued {
		st, ok := byID[a.ID]
		if !ok {
			continue // deleted between the two reads
		}
		p := PaperAccount{State: st, Valued: a, Currency: st.Currency, NextRefillAt: st.NextRefillAt(now)}
		if p.Currency == "" {
			p.Currency = paper.Quote
		}
		out = append(out, p)
	}
	return out, nil
}

type accountKey struct {
	kind string
	id   string
}

// paperAccount reads a paper account: balances and holdings from the paper exchange's
// state, valued at the market data's prices.
func (s *Service) paperAccount(ctx context.Context, a paper.Account, books []*botBook) (Account, error) {
	out := Account{ID: a.ID, Name: a.Namespace + "/" + a.Name, Kind: KindPaper}
	h, err := s.paper.Holdings(ctx, a.ID)
	if err != nil {
		return Account{}, err
	}
	quote := cmp.Or(a.Currency, paper.Quote)
	v := newValuation()
	v.balance(Balance{Asset: quote, Wallet: WalletUnified, Free: httpapi.Num(a.Balance), Locked: httpapi.Num(a.Margin)})
	for _, base := range slices.Sorted(maps.Keys(h.Spot)) {
		v.balance(Balance{Asset: base, Wallet: WalletUnified, Free: httpapi.Num(h.Spot[base])})
	}
	price := func(kind exchange.Kind, symbol string) (decimal.Decimal, error) {
		if s.o.Prices == nil {
			return decimal.Zero, errs.New(errs.ExchangeError, "no market data to value paper accounts")
		}
		p, err := s.o.Prices.Price(ctx, kind, symbol)
		if err != nil {
			return decimal.Zero, errs.Wrap(err, errs.ExchangeError, "no market price for %s", symbol)
		}
		return p, nil
	}
	for _, f := range h.Futures {
		px, err := price(exchange.Futures, f.Symbol)
		if err != nil {
			return failed(out, err), nil
		}
		v.futures(f.Symbol, heldPosition(f).Unrealised(px))
	}
	if err := v.value(func(asset string) (decimal.Decimal, error) {
		return price(exchange.Spot, asset+"/"+Currency)
	}); err != nil {
		return failed(out, err), nil
	}
	if err := v.bots(books, price); err != nil {
		return failed(out, err), nil
	}
	return v.finish(out), nil
}

// heldPosition is the paper exchange's futures position as a book position, for its
// unrealised PnL (position.Position.Unrealised).
func heldPosition(f paper.HeldFutures) position.Position {
	return position.Position{Kind: exchange.Futures, Side: f.Side, Size: f.Size, Cost: f.Cost}
}

// exchangeAccount reads an exchange connection: balances and prices from the exchange
// (cached for CacheTTL, bounded by CallTimeout), futures PnL from the bots' positions.
func (s *Service) exchangeAccount(ctx context.Context, c credentials.Connection, books []*botBook) Account {
	out := Account{ID: c.UID, Name: c.Namespace + "/" + c.Name, Kind: KindExchange, Exchange: c.Exchange}
	if !c.Ready || c.Sealed == "" {
		return failed(out, errs.New(errs.ExchangeDisconnected, "exchange connection is not ready (%s)", c.Reason))
	}
	if s.o.Clients == nil {
		return failed(out, errs.New(errs.ExchangeDisconnected, "credentials unavailable"))
	}
	live, err := s.o.Clients.Client(c)
	if err != nil {
		return failed(out, err)
	}
	need := needsOf(c, live, books)
	snap := s.snapshot(ctx, c.UID, live, need)
	if snap.err != nil {
		return failed(out, snap.err)
	}
	v := newValuation()
	for _, wa := range need.balances {
		v.balance(snap.balances[wa])
	}
	price := func(kind exchange.Kind, symbol string) (decimal.Decimal, error) {
		r := snap.prices[priceKey{kind, symbol}]
		return r.price, r.err
	}
	if err := v.value(func(asset string) (decimal.Decimal, error) {
		return price(exchange.Spot, asset+"/"+Currency)
	}); err != nil {
		return failed(out, err)
	}
	if err := v.bots(books, price); err != nil {
		return failed(out, err)
	}
	for _, b := range books {
		for _, p := range b.positions {
			if p.Kind == exchange.Futures {
				px, _ := price(exchange.Futures, p.Symbol) // read by positions above
				v.futures(p.Symbol, p.Unrealised(px))
			}
		}
	}
	return v.finish(out)
}

// failed is the account with err: no figures, no balances, no positions.
func failed(a Account, err error) Account {
	e, ok := errs.As(err)
	switch {
	case ok:
		a.Error = &Error{Code: e.Code, Message: e.Message}
	case errors.Is(err, context.DeadlineExceeded):
		a.Error = &Error{Code: errs.ExchangeError, Message: "the exchange did not answer in time"}
	default:
		a.Error = &Error{Code: errs.ExchangeError, Message: "the account could not be read"}
	}
	a.Currency, a.Balances, a.Positions = Currency, []Balance{}, []Position{}
	a.Equity, a.UnrealisedPnl, a.RealisedPnl, a.Excluded = nil, nil, nil, nil
	return a
}

// totals sums the accounts read without an error.
func totals(accts []Account) Totals {
	t := Totals{Currency: Currency, Complete: true}
	for _, a := range accts {
		if a.Error != nil {
			t.Complete = false
			continue
		}
		if len(a.Excluded) > 0 {
			t.Complete = false
		}
		t.Equity = httpapi.Num(t.Equity.Add((*a.Equity).Decimal))
		t.UnrealisedPnl = httpapi.Num(t.UnrealisedPnl.Add((*a.UnrealisedPnl).Decimal))
		t.RealisedPnl = httpapi.Num(t.RealisedPnl.Add((*a.RealisedPnl).Decimal))
	}
	return t
}
