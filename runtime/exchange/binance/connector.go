package binance

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	binance "github.com/adshao/go-binance/v2"
	"github.com/adshao/go-binance/v2/futures"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange"
)

// Name is the exchange's name in ExchangeConnection.spec.exchange.
const Name = "binance"

// Defaults of the Connector's settings.
const (
	// DefaultTimeout bounds one HTTP call: the spec's "exchange call up to 2000 ms".
	DefaultTimeout = 2000 * time.Millisecond
	// DefaultMaxElapsed bounds one adapter method, retries and back-offs included.
	DefaultMaxElapsed = 6 * time.Second
	// DefaultAttempts is how often a call that got no answer is tried.
	DefaultAttempts = 3
	// DefaultBackoff is the first pause between attempts; it doubles each time.
	DefaultBackoff = 100 * time.Millisecond
	// DefaultRecvWindow is the recvWindow sent with every signed request.
	DefaultRecvWindow = 5000 * time.Millisecond
	// DefaultClockMargin is added to the recvWindow before an unanswered order request is
	// considered dead (it covers the error of the clock-offset estimate).
	DefaultClockMargin = time.Second
	// DefaultMarketsTTL is how long exchange information is served from the cache.
	DefaultMarketsTTL = 10 * time.Minute
	// DefaultModeTTL is how long the futures position mode read for placing orders is
	// trusted: an account is cached for a long time (connectors.Clients), and its owner can
	// switch the mode on Binance's site at any time.
	DefaultModeTTL = 60 * time.Second
	// MaxLeverage is Binance's highest USDⓈ-M leverage.
	MaxLeverage = 125
)

// Hosts of Binance Demo Trading, where Binance now sends API users who want to trade
// without funds (the spot Demo Mode page of the spot API docs; the USDⓈ-M demo URL of
// Binance's own connectors). One demo API key serves both, as one production key does,
// which the separate spot and futures testnets never allowed. Endpoints.Testnet uses them.
const (
	DemoSpotURL    = "https://demo-api.binance.com"
	DemoFuturesURL = "https://demo-fapi.binance.com"
)

// Fee rates used only to estimate "required" in INSUFFICIENT_BALANCE details (Binance's
// regular-tier taker fees); fills carry the real fee.
var (
	DefaultSpotFeeRate    = decimal.RequireFromString("0.001")
	DefaultFuturesFeeRate = decimal.RequireFromString("0.0005")
)

// Connector connects Binance accounts (spot and USDⓈ-M futures). The zero value is ready to
// use with the defaults above; every field overrides one of them.
type Connector struct {
	// Timeout bounds one HTTP call (DefaultTimeout).
	Timeout time.Duration
	// MaxElapsed bounds one method of the account, retries included (DefaultMaxElapsed).
	MaxElapsed time.Duration
	// Attempts is how often a call that got no answer (time-out, connection error, HTTP 5xx)
	// is tried (DefaultAttempts). Order placement is never blindly repeated: see PlaceOrder.
	Attempts int
	// Backoff is the first pause between attempts, doubled each time (DefaultBackoff).
	Backoff time.Duration
	// RecvWindow is sent with signed requests (DefaultRecvWindow); at most 60 s.
	RecvWindow time.Duration
	// ClockMargin: see DefaultClockMargin.
	ClockMargin time.Duration
	// MarketsTTL is the age at which exchange information is refreshed (DefaultMarketsTTL).
	MarketsTTL time.Duration
	// ModeTTL is the age at which the futures position mode is read again before an order
	// (DefaultModeTTL).
	ModeTTL time.Duration
	// SpotFeeRate and FuturesFeeRate estimate fees in INSUFFICIENT_BALANCE details.
	SpotFeeRate, FuturesFeeRate decimal.Decimal
	// Transport carries the requests (a proxy, tests); default a shared clone of
	// http.DefaultTransport.
	Transport http.RoundTripper
	// Logger receives warnings (stale exchange information served, clock re-synced). It
	// never receives credentials. Default: slog.Default().
	Logger *slog.Logger
}

var _ exchange.Connector = Connector{}

// Name is "binance".
func (Connector) Name() string { return Name }

// Connect opens the account of creds at the endpoints ep, without a network call.
func (c Connector) Connect(creds exchange.Credentials, ep exchange.Endpoints) (exchange.Live, error) {
	x, err := c.Open(creds, ep)
	if err != nil {
		return nil, err
	}
	return x, nil
}

// Open is Connect returning the concrete account (for ForKind).
func (c Connector) Open(creds exchange.Credentials, ep exchange.Endpoints) (*Account, error) {
	if strings.TrimSpace(creds.APIKey) == "" || strings.TrimSpace(creds.APISecret) == "" {
		return nil, fmt.Errorf("binance: API key and secret are required: %w", exchange.ErrInvalidCredentials)
	}
	spotURL, futURL := binance.BaseAPIMainURL, futures.BaseApiMainUrl
	if ep.Testnet {
		// Not go-binance's testnet constants: those are the older spot and futures testnets.
		spotURL, futURL = DemoSpotURL, DemoFuturesURL
	}
	if ep.Spot != "" {
		spotURL = ep.Spot
	}
	if ep.Futures != "" {
		futURL = ep.Futures
	}
	for _, u := range []*string{&spotURL, &futURL} {
		p, err := url.Parse(*u)
		if err != nil || (p.Scheme != "http" && p.Scheme != "https") || p.Host == "" {
			return nil, fmt.Errorf("binance: endpoint %q is not an http(s) URL", *u)
		}
		*u = strings.TrimRight(*u, "/")
	}
	cfg := c.withDefaults()
	if cfg.RecvWindow > 60*time.Second {
		return nil, fmt.Errorf("binance: recvWindow %s is above Binance's 60 s", cfg.RecvWindow)
	}
	cn := &client{
		creds: creds, spotURL: spotURL, futURL: futURL, testnet: ep.Testnet, cfg: cfg,
		http:     &http.Client{Transport: recorder{cfg.Transport}, Timeout: cfg.Timeout},
		log:      cfg.Logger.With("exchange", Name),
		leverage: map[string]int{},
	}
	return &Account{client: cn, kind: exchange.Spot}, nil
}

func (c Connector) withDefaults() Connector {
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.MaxElapsed <= 0 {
		c.MaxElapsed = DefaultMaxElapsed
	}
	if c.Attempts <= 0 {
		c.Attempts = DefaultAttempts
	}
	if c.Backoff <= 0 {
		c.Backoff = DefaultBackoff
	}
	if c.RecvWindow <= 0 {
		c.RecvWindow = DefaultRecvWindow
	}
	if c.ClockMargin <= 0 {
		c.ClockMargin = DefaultClockMargin
	}
	if c.MarketsTTL <= 0 {
		c.MarketsTTL = DefaultMarketsTTL
	}
	if c.ModeTTL <= 0 {
		c.ModeTTL = DefaultModeTTL
	}
	if !c.SpotFeeRate.IsPositive() {
		c.SpotFeeRate = DefaultSpotFeeRate
	}
	if !c.FuturesFeeRate.IsPositive() {
		c.FuturesFeeRate = DefaultFuturesFeeRate
	}
	if c.Transport == nil {
		c.Transport = sharedTransport
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// sharedTransport pools connections across accounts.
var sharedTransport http.RoundTripper = http.DefaultTransport.(*http.Transport).Clone()

// Account is one Binance account (API key), spot and USDⓈ-M futures. It is safe for
// concurrent use.
type Account struct {
	*client
	// kind is the wallet Balance reads.
	kind exchange.Kind
}

var (
	_ exchange.Live       = (*Account)(nil)
	_ exchange.ModeReader = (*Account)(nil)
)

// ForKind is the same account with Balance reading the wallet of kind: the spot wallet
// (the default of Connect) or the USDⓈ-M futures wallet. A futures bot's account must be
// this view, so that order sizing sees the futures balance; callers that hold an
// exchange.Live can reach it without importing this package:
//
//	if k, ok := live.(interface{ ForKind(exchange.Kind) exchange.Live }); ok {
//		live = k.ForKind(kind)
//	}
func (x *Account) ForKind(kind exchange.Kind) exchange.Live {
	return &Account{client: x.client, kind: kind}
}

// String never shows the credentials.
func (x *Account) String() string {
	return fmt.Sprintf("binance account (%s, %s)", x.spotURL, x.futURL)
}

// GoString never shows the credentials.
func (x *Account) GoString() string { return x.String() }
