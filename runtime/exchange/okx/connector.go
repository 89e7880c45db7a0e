package okx

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/restkit"
)

// Name is the exchange's name in ExchangeConnection.spec.exchange.
const Name = "okx"

// ProductionURL is OKX's REST host. Demo trading uses the same host with the
// x-simulated-trading header: OKX has no separate testnet host.
const ProductionURL = "https://www.okx.com"

// DefaultTimeout bounds every Exchange call, retries included: the spec allows an exchange
// call up to 2000 ms.
const DefaultTimeout = 2 * time.Second

// DefaultExpiry is how long after it is sent a POST /api/v5/trade/order may still be
// processed: the request carries the expTime header (OKX's clock + DefaultExpiry), after
// which OKX refuses it unprocessed.
const DefaultExpiry = 5 * time.Second

// TimestampWindow is how far OK-ACCESS-TIMESTAMP may be from OKX's clock when a signed
// request arrives (50102 "Timestamp request expired" beyond it). It is OKX's, not
// settable: it bounds the requests that take no expTime (algo orders).
const TimestampWindow = 30 * time.Second

// DefaultClockMargin is added to a request's deadline before a request that got no answer
// is considered dead: the client's offset to OKX's clock is only an estimate.
const DefaultClockMargin = time.Second

// DefaultMarketsTTL is how long the instruments stay cached.
const DefaultMarketsTTL = 5 * time.Minute

// DefaultModeTTL is how long the account's position mode read from /api/v5/account/config
// is trusted before it is read again.
const DefaultModeTTL = 60 * time.Second

// ErrOrderUnconfirmed: PlaceOrder could not learn whether OKX took the order (no answer,
// 5xx or a back-end time-out, and the order could not be found in time). It is deliberately
// not an *errs.Error: the executor records a typed error from PlaceOrder as a rejection,
// whereas this outcome must be resolved by looking the order up (GetOrder) once the request
// window has passed. Its chain also holds exchange.ErrUnreachable.
var ErrOrderUnconfirmed = errors.New("okx: the order's outcome is unknown")

// defaultHTTP is shared by accounts that bring no client: connections are pooled per host.
var defaultHTTP = restkit.PooledClient(DefaultTimeout)

// Connector makes OKX accounts (trading account: spot and USDT-margined perpetual swaps).
// The zero value is ready to use.
type Connector struct {
	// HTTPClient sends the requests (nil: a shared pooled client). Its own Timeout, if
	// any, should not be below Timeout.
	HTTPClient *http.Client
	// Timeout bounds each Exchange call, retries included (0: DefaultTimeout).
	Timeout time.Duration
	// MarketsTTL is how long the instruments stay cached (0: DefaultMarketsTTL).
	MarketsTTL time.Duration
	// Now is the local clock used for OK-ACCESS-TIMESTAMP and expTime (nil: time.Now); the
	// offset to OKX's clock is learned when OKX refuses a timestamp (50102).
	Now func() time.Time
	// Expiry: see DefaultExpiry (0: DefaultExpiry).
	Expiry time.Duration
	// ClockMargin: see DefaultClockMargin (0: DefaultClockMargin).
	ClockMargin time.Duration
	// ModeTTL: see DefaultModeTTL (0: DefaultModeTTL).
	ModeTTL time.Duration
}

var _ exchange.Connector = Connector{}

// Name implements exchange.Connector.
func (Connector) Name() string { return Name }

// Connect implements exchange.Connector: no network call. The base URL is ep.Spot, else
// ProductionURL; swap calls use ep.Futures when set. ep.Testnet selects OKX's demo trading
// (the x-simulated-trading header on every request).
func (c Connector) Connect(creds exchange.Credentials, ep exchange.Endpoints) (exchange.Live, error) {
	return c.Open(creds, ep)
}

// Open is Connect returning the concrete account. OKX keys come with a passphrase, which
// every signed request carries: a key without one is refused here.
func (c Connector) Open(creds exchange.Credentials, ep exchange.Endpoints) (*Account, error) {
	if strings.TrimSpace(creds.APIKey) == "" || strings.TrimSpace(creds.APISecret) == "" {
		return nil, errs.Wrap(exchange.ErrInvalidCredentials, errs.ExchangeDisconnected, "okx needs an API key and secret")
	}
	if creds.Passphrase == "" {
		return nil, errs.Wrap(exchange.ErrInvalidCredentials, errs.ExchangeDisconnected, "okx needs the API key's passphrase")
	}
	spotURL := ep.Spot
	if spotURL == "" {
		spotURL = ProductionURL
	}
	swapURL := ep.Futures
	if swapURL == "" {
		swapURL = spotURL
	}
	var err error
	if spotURL, err = restkit.BaseURL(Name, spotURL); err != nil {
		return nil, err
	}
	if swapURL, err = restkit.BaseURL(Name, swapURL); err != nil {
		return nil, err
	}
	hc := c.HTTPClient
	if hc == nil {
		hc = defaultHTTP
	}
	now := c.Now
	if now == nil {
		now = time.Now
	}
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	ttl := c.MarketsTTL
	if ttl <= 0 {
		ttl = DefaultMarketsTTL
	}
	expiry, margin, modeTTL := c.Expiry.Truncate(time.Millisecond), c.ClockMargin, c.ModeTTL
	if expiry <= 0 {
		expiry = DefaultExpiry
	}
	if margin <= 0 {
		margin = DefaultClockMargin
	}
	if modeTTL <= 0 {
		modeTTL = DefaultModeTTL
	}
	a := &Account{timeout: timeout, ttl: ttl, expiry: expiry, margin: margin, modeTTL: modeTTL, now: now,
		leverage: map[string]int{},
		spot:     newClient(spotURL, creds, ep.Testnet, hc, now, timeout)}
	a.swap = a.spot
	if swapURL != spotURL {
		a.swap = newClient(swapURL, creds, ep.Testnet, hc, now, timeout)
	}
	return a, nil
}

// Account is one OKX API key's trading account. It is safe for concurrent use.
type Account struct {
	spot, swap *client
	timeout    time.Duration
	ttl        time.Duration
	expiry     time.Duration // expTime of POST /api/v5/trade/order, after the send
	margin     time.Duration
	modeTTL    time.Duration
	now        func() time.Time

	mu       sync.Mutex
	mode     exchange.PositionMode // "" until read
	modeAt   time.Time
	leverage map[string]int // instId → leverage set through this account
}

var (
	_ exchange.Live          = (*Account)(nil)
	_ exchange.RequestWindow = (*Account)(nil)
	_ exchange.ModeReader    = (*Account)(nil)
)

// RequestWindow implements exchange.RequestWindow: Timeout + 30 s + ClockMargin (33 s with
// the defaults), the window of the slowest request PlaceOrder sends. A market or limit
// order (POST /api/v5/trade/order) carries expTime, after which OKX refuses it, so its
// window is RequestWindowFor's Timeout + Expiry + ClockMargin (8 s); but a stop_loss or
// take_profit is an algo order (POST /api/v5/trade/order-algo), which takes no expTime and
// is bounded only by OKX's check of the request's timestamp on arrival (TimestampWindow,
// 30 s). The interface gives one window per account, so it is the longer one.
// (OKX also refuses a clOrdId already held by a pending order, but not one of a filled or
// cancelled order: a lost market order that filled does not stop a second one.)
func (a *Account) RequestWindow() time.Duration {
	return a.timeout + max(a.expiry, TimestampWindow) + a.margin
}

// RequestWindowFor is the window of one request: Timeout + Expiry + ClockMargin for market
// and limit orders, Timeout + TimestampWindow + ClockMargin for stop_loss and take_profit
// (see RequestWindow). A caller that knows the request can wait the shorter window.
func (a *Account) RequestWindowFor(req exchange.OrderRequest) time.Duration {
	if conditional(req.Type) {
		return a.timeout + TimestampWindow + a.margin
	}
	return a.timeout + a.expiry + a.margin
}

func (a *Account) client(kind exchange.Kind) *client {
	if kind == exchange.Futures {
		return a.swap
	}
	return a.spot
}

// bound is the budget of one Exchange call.
func (a *Account) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, a.timeout)
}

// instType is OKX's instrument type of a kind: spot, or perpetual swaps for futures.
func instType(kind exchange.Kind) (string, error) {
	switch kind {
	case exchange.Spot:
		return "SPOT", nil
	case exchange.Futures:
		return "SWAP", nil
	}
	return "", errs.New(errs.InvalidSymbol, "unknown market kind %q", kind)
}
