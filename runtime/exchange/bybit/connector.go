package bybit

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/restkit"
)

// Name is the exchange's name in ExchangeConnection.spec.exchange.
const Name = "bybit"

// Bybit's hosts: one host serves spot and linear alike.
const (
	MainnetURL = "https://api.bybit.com"
	TestnetURL = "https://api-testnet.bybit.com"
)

// DefaultTimeout bounds every Exchange call, retries included: the spec allows an exchange
// call up to 2000 ms.
const DefaultTimeout = 2 * time.Second

// DefaultRecvWindow is the X-BAPI-RECV-WINDOW sent with every signed request: Bybit refuses
// a request whose timestamp is older than that when it arrives.
const DefaultRecvWindow = 5 * time.Second

// DefaultClockMargin is added to the recv window before a request that got no answer is
// considered dead: Bybit takes timestamps up to 1 s ahead of its clock, and the client's
// offset to that clock is only an estimate.
const DefaultClockMargin = time.Second

// DefaultMarketsTTL is how long instruments-info stays cached.
const DefaultMarketsTTL = 5 * time.Minute

// ipBanWait is how long Bybit asks a client to stop after "403, access too frequent".
const ipBanWait = 10 * time.Minute

// ErrOrderUnconfirmed: PlaceOrder could not learn whether Bybit took the order (no answer,
// 5xx or a back-end time-out, and the order could not be looked up in time). It is
// deliberately not an *errs.Error: the executor records a typed error from PlaceOrder as a
// rejection, whereas this outcome must be resolved by looking the order up (GetOrder) or
// placing it again with the same ClientOrderID, which Bybit refuses as a duplicate if the
// first attempt did land. Its chain also holds exchange.ErrUnreachable.
var ErrOrderUnconfirmed = errors.New("bybit: the order's outcome is unknown")

// defaultHTTP is shared by accounts that bring no client: connections are pooled per host.
var defaultHTTP = restkit.PooledClient(DefaultTimeout)

// Connector makes Bybit accounts (unified trading account: spot and linear perpetuals).
// The zero value is ready to use.
type Connector struct {
	// HTTPClient sends the requests (nil: a shared pooled client). Its own Timeout, if
	// any, should not be below Timeout.
	HTTPClient *http.Client
	// Timeout bounds each Exchange call, retries included (0: DefaultTimeout).
	Timeout time.Duration
	// MarketsTTL is how long instruments-info stays cached (0: DefaultMarketsTTL).
	MarketsTTL time.Duration
	// Now is the local clock used for X-BAPI-TIMESTAMP (nil: time.Now); the offset to
	// Bybit's clock is learned when Bybit refuses a timestamp (retCode 10002).
	Now func() time.Time
	// RecvWindow is sent as X-BAPI-RECV-WINDOW, whole milliseconds (0: DefaultRecvWindow).
	RecvWindow time.Duration
	// ClockMargin: see DefaultClockMargin (0: DefaultClockMargin).
	ClockMargin time.Duration
	// ModeTTL is how long a linear symbol's position mode, once read, is used for orders
	// before it is read again (0: DefaultModeTTL).
	ModeTTL time.Duration
}

var _ exchange.Connector = Connector{}

// Name implements exchange.Connector.
func (Connector) Name() string { return Name }

// Connect implements exchange.Connector: no network call. The base URL is ep.Spot, else
// the testnet or mainnet host; linear calls use ep.Futures when set.
func (c Connector) Connect(creds exchange.Credentials, ep exchange.Endpoints) (exchange.Live, error) {
	return c.Open(creds, ep)
}

// Open is Connect returning the concrete account.
func (c Connector) Open(creds exchange.Credentials, ep exchange.Endpoints) (*Account, error) {
	if strings.TrimSpace(creds.APIKey) == "" || strings.TrimSpace(creds.APISecret) == "" {
		return nil, errs.Wrap(exchange.ErrInvalidCredentials, errs.ExchangeDisconnected, "bybit needs an API key and secret")
	}
	spotURL := ep.Spot
	if spotURL == "" {
		spotURL = MainnetURL
		if ep.Testnet {
			spotURL = TestnetURL
		}
	}
	linearURL := ep.Futures
	if linearURL == "" {
		linearURL = spotURL
	}
	var err error
	if spotURL, err = restkit.BaseURL(Name, spotURL); err != nil {
		return nil, err
	}
	if linearURL, err = restkit.BaseURL(Name, linearURL); err != nil {
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
	recv, margin := c.RecvWindow.Truncate(time.Millisecond), c.ClockMargin
	if recv <= 0 {
		recv = DefaultRecvWindow
	}
	if margin <= 0 {
		margin = DefaultClockMargin
	}
	recvMS := strconv.FormatInt(recv.Milliseconds(), 10)
	modeTTL := c.ModeTTL
	if modeTTL <= 0 {
		modeTTL = DefaultModeTTL
	}
	a := &Account{timeout: timeout, ttl: ttl, window: timeout + recv + margin, modes: &modes{ttl: modeTTL},
		spot: newClient(spotURL, creds.APIKey, creds.APISecret, recvMS, hc, now, timeout)}
	a.linear = a.spot
	if linearURL != spotURL {
		a.linear = newClient(linearURL, creds.APIKey, creds.APISecret, recvMS, hc, now, timeout)
	}
	return a, nil
}

// Account is one Bybit API key's unified trading account. It is safe for concurrent use.
type Account struct {
	spot, linear *client
	timeout      time.Duration
	ttl          time.Duration
	window       time.Duration // see RequestWindow
	// modes is the position mode of the linear symbols as read (see symbolMode): the
	// account lives as long as its connection is cached, and the mode rarely changes.
	modes *modes
}

var (
	_ exchange.Live          = (*Account)(nil)
	_ exchange.RequestWindow = (*Account)(nil)
	_ exchange.ModeReader    = (*Account)(nil)
)

// RequestWindow implements exchange.RequestWindow: Timeout + RecvWindow + ClockMargin (8 s
// with the defaults). PlaceOrder sends every create attempt within its budget (Timeout),
// each stamped no later than that, and Bybit takes a request only while its timestamp is
// less than the recv window old; the margin covers the clock error. After the window, an
// order Bybit does not list will not appear from that call. (Bybit also refuses a repeated
// orderLinkId, but the executor does not lean on how long Bybit remembers one.)
func (a *Account) RequestWindow() time.Duration { return a.window }

func (a *Account) client(kind exchange.Kind) *client {
	if kind == exchange.Futures {
		return a.linear
	}
	return a.spot
}

// bound is the budget of one Exchange call.
func (a *Account) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, a.timeout)
}

// category is Bybit's product category of a kind.
func category(kind exchange.Kind) (string, error) {
	switch kind {
	case exchange.Spot:
		return "spot", nil
	case exchange.Futures:
		return "linear", nil
	}
	return "", errs.New(errs.InvalidSymbol, "unknown market kind %q", kind)
}
