package binance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	binance "github.com/adshao/go-binance/v2"
	"github.com/adshao/go-binance/v2/common"
	"github.com/adshao/go-binance/v2/futures"

	"github.com/sigops/sigops/runtime/exchange"
)

// client is what the views of one account share: the key, the hosts and the calls to them.
type client struct {
	creds           exchange.Credentials
	spotURL, futURL string
	testnet         bool
	cfg             Connector
	http            *http.Client
	log             *slog.Logger

	levMu    sync.Mutex
	leverage map[string]int // futures symbol -> leverage last set through this account

	// The futures position mode last read (empty: none yet, or dropped after Binance said an
	// order's side did not match it) and when; shared by the account's views.
	modeMu sync.Mutex
	mode   exchange.PositionMode
	modeAt time.Time
}

// quiet silences go-binance's logger (it only logs in Debug mode, which stays off: its
// debug output shows full request URLs and bodies).
var quiet = stdlog.New(io.Discard, "", 0)

const userAgent = "sigops-binance/1"

// spot is a go-binance spot client for one call. A fresh client per call (a few words,
// no I/O) avoids go-binance's unsynchronised writes to client fields (TimeOffset,
// UsedWeight) under concurrent use.
func (c *client) spot() *binance.Client {
	return &binance.Client{
		APIKey: c.creds.APIKey, SecretKey: c.creds.APISecret, KeyType: common.KeyTypeHmac,
		BaseURL: c.spotURL, UserAgent: userAgent, HTTPClient: c.http,
		Logger: quiet, TimeOffset: offset(c.spotURL).Load(),
	}
}

// fut is a go-binance USDⓈ-M futures client for one call.
func (c *client) fut() *futures.Client {
	return &futures.Client{
		APIKey: c.creds.APIKey, SecretKey: c.creds.APISecret, KeyType: common.KeyTypeHmac,
		BaseURL: c.futURL, UserAgent: userAgent, HTTPClient: c.http,
		Logger: quiet, TimeOffset: offset(c.futURL).Load(),
	}
}

func (c *client) recvWindowMS() int64 { return c.cfg.RecvWindow.Milliseconds() }

// recorder notes the HTTP status and Retry-After of each answer in the request's
// callInfo: go-binance's APIError carries neither.
type recorder struct{ base http.RoundTripper }

type callInfoKey struct{}

type callInfo struct {
	status     int
	retryAfter string
}

func (t recorder) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(r)
	if resp != nil {
		if ci, ok := r.Context().Value(callInfoKey{}).(*callInfo); ok {
			ci.status = resp.StatusCode
			ci.retryAfter = resp.Header.Get("Retry-After")
		}
	}
	return resp, err
}

// Binance error codes the adapter acts on (spot and USDⓈ-M futures share them).
const (
	codeUnauthorized     = -1002
	codeTooManyRequests  = -1003
	codeTooManyOrders    = -1015
	codeTimestamp        = -1021
	codeSignature        = -1022
	codePrecision        = -1111
	codeBadSymbol        = -1121
	codeSymbolStatus     = -1122
	codeNewOrderRejected = -2010
	codeNoSuchOrder      = -2013
	codeBadAPIKeyFormat  = -2014
	codeRejectedKey      = -2015
	codeDuplicateFutures = -4116
	codeParamNotRequired = -1106
	codeSideMismatch     = -4061 // POSITION_SIDE_NOT_MATCH
)

// failure is how one call to Binance went wrong. Its Error never contains a URL (query
// strings carry signatures) nor a credential.
type failure struct {
	op         string        // "POST /api/v3/order"
	status     int           // HTTP status; 0 without an answer
	code       int64         // Binance's error code; 0 without one
	msg        string        // Binance's message
	retryAfter time.Duration // Retry-After of a 429 or 418
	noAnswer   bool          // time-out, connection error, HTTP 5xx: the outcome is unknown
	cause      error
}

func (f *failure) Error() string {
	switch {
	case f.code != 0:
		return fmt.Sprintf("%s: Binance error %d: %s", f.op, f.code, f.msg)
	case f.status != 0 && f.msg != "":
		return fmt.Sprintf("%s: HTTP %d: %s", f.op, f.status, f.msg)
	case f.status != 0:
		return fmt.Sprintf("%s: HTTP %d", f.op, f.status)
	case f.cause != nil:
		return f.op + ": " + f.cause.Error()
	}
	return f.op + ": failed"
}

func (f *failure) rateLimited() bool {
	return f.status == http.StatusTooManyRequests || f.status == http.StatusTeapot ||
		f.code == codeTooManyRequests || f.code == codeTooManyOrders
}

func (f *failure) authFailed() bool {
	switch f.code {
	case codeUnauthorized, codeSignature, codeBadAPIKeyFormat, codeRejectedKey:
		return true
	}
	return f.code == 0 && f.status == http.StatusUnauthorized
}

// notFound: Binance says the order does not exist.
func (f *failure) notFound() bool { return f.code == codeNoSuchOrder }

// modeMismatch: Binance refused an order for the account's position mode: -4061 "Order's
// position side does not match user's setting." (positionSide absent in hedge mode, or
// LONG/SHORT in one-way mode), or -1106 for reduceOnly, which hedge mode refuses ("Parameter
// 'reduceonly' sent when not required."): both mean the mode read is no longer the mode.
func (f *failure) modeMismatch() bool {
	return f.code == codeSideMismatch ||
		(f.code == codeParamNotRequired && strings.Contains(strings.ToLower(f.msg), "'reduceonly'"))
}

// duplicate: Binance refused a new order because its client ID is taken by an open order.
func (f *failure) duplicate() bool {
	return f.code == codeDuplicateFutures ||
		(f.code == codeNewOrderRejected && strings.Contains(strings.ToLower(f.msg), "duplicate"))
}

// api says which of the account's two APIs (and so hosts) a call goes to.
type api int

const (
	spotAPI api = iota
	futuresAPI
)

func (c *client) base(m api) string {
	if m == futuresAPI {
		return c.futURL
	}
	return c.spotURL
}

// budget bounds one method of the account.
func (c *client) budget(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, c.cfg.MaxElapsed)
}

// once makes one HTTP call through fn, bounded by Timeout.
func (c *client) once(ctx context.Context, op string, fn func(context.Context) error) *failure {
	ci := &callInfo{}
	actx, cancel := context.WithTimeout(context.WithValue(ctx, callInfoKey{}, ci), c.cfg.Timeout)
	defer cancel()
	err := fn(actx)
	if err == nil {
		return nil
	}
	return c.classify(ctx, actx, op, err, ci)
}

func (c *client) classify(ctx, actx context.Context, op string, err error, ci *callInfo) *failure {
	f := &failure{op: op, status: ci.status}
	var apiErr *common.APIError
	switch {
	case errors.As(err, &apiErr):
		f.code, f.msg = apiErr.Code, apiErr.Message
		if !apiErr.IsValid() {
			f.msg = snippet(apiErr.Response)
		}
		if f.status == 0 {
			f.status = http.StatusBadRequest
		}
		if f.status >= 500 {
			// Binance: "the execution status is UNKNOWN and could have been a success".
			f.noAnswer = true
		}
		if f.status == http.StatusTooManyRequests || f.status == http.StatusTeapot {
			f.retryAfter = parseRetryAfter(ci.retryAfter, f.status)
		}
	case actx.Err() != nil:
		f.noAnswer, f.status = true, 0
		switch {
		case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
			f.cause = errors.New("no answer before the call's deadline")
		case ctx.Err() != nil:
			f.cause = ctx.Err()
		default:
			f.cause = fmt.Errorf("no answer within %s", c.cfg.Timeout)
		}
	default:
		// Connection refused or reset, EOF, an unreadable body: the request may or may not
		// have been executed.
		f.noAnswer = true
		var uerr *url.Error
		if errors.As(err, &uerr) {
			err = uerr.Err // drop the URL: its query string carries the signature
		}
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		if errors.As(err, &syn) || errors.As(err, &typ) {
			err = fmt.Errorf("unreadable answer (HTTP %d): %w", ci.status, err)
		}
		f.cause = err
	}
	return f
}

func snippet(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}

// parseRetryAfter reads Retry-After (seconds or an HTTP date); Binance always sends it
// with 429 and 418, the defaults are for a proxy that does not.
func parseRetryAfter(v string, status int) time.Duration {
	if n, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && n >= 0 {
		return time.Duration(n) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := time.Until(t); d > 0 {
			return d.Round(time.Second)
		}
	}
	if status == http.StatusTeapot {
		return 2 * time.Minute // Binance's shortest IP ban
	}
	return time.Second
}

// do makes a call with retries: a call without an answer is tried again (up to Attempts,
// within the budget of ctx) when retryNoAnswer, and a call refused for its timestamp
// (-1021) is tried once more after re-syncing the clock offset. Both are safe: a read
// has no effect, and -1021 means Binance refused the request before looking at it.
func (c *client) do(ctx context.Context, m api, op string, retryNoAnswer bool, fn func(context.Context) error) *failure {
	resynced := false
	for i := 0; ; i++ {
		f := c.once(ctx, op, fn)
		if f == nil {
			return nil
		}
		if f.code == codeTimestamp && !resynced {
			resynced = true
			if err := c.syncTime(ctx, m); err == nil {
				i--
				continue
			}
			return f
		}
		if !f.noAnswer || !retryNoAnswer || i+1 >= c.cfg.Attempts {
			return f
		}
		if !pause(ctx, c.backoff(i)) {
			return f
		}
	}
}

// backoff is the pause after attempt i: Backoff × 2^i, ±10 %.
func (c *client) backoff(i int) time.Duration {
	d := c.cfg.Backoff << min(i, 10)
	jitter := time.Duration(rand.Int64N(int64(d)/5+1)) - d/10
	return d + jitter
}

// pause sleeps d unless ctx ends first or has no time left for a call after it.
func pause(ctx context.Context, d time.Duration) bool {
	return exchange.Sleep(ctx, d, 5*time.Millisecond)
}

// offsets holds the clock offset (local − Binance, ms) per base URL, shared by all
// accounts: go-binance subtracts it from every request's timestamp.
var offsets sync.Map // string -> *atomic.Int64

func offset(base string) *atomic.Int64 {
	if v, ok := offsets.Load(base); ok {
		return v.(*atomic.Int64)
	}
	v, _ := offsets.LoadOrStore(base, new(atomic.Int64))
	return v.(*atomic.Int64)
}

// syncTime measures the offset between the local clock and Binance's.
func (c *client) syncTime(ctx context.Context, m api) error {
	var server int64
	t0 := time.Now()
	op := "GET /api/v3/time"
	if m == futuresAPI {
		op = "GET /fapi/v1/time"
	}
	f := c.once(ctx, op, func(ctx context.Context) error {
		var err error
		if m == futuresAPI {
			server, err = c.fut().NewServerTimeService().Do(ctx)
		} else {
			server, err = c.spot().NewServerTimeService().Do(ctx)
		}
		return err
	})
	if f != nil {
		return f
	}
	mid := t0.Add(time.Since(t0) / 2).UnixMilli()
	off := mid - server
	offset(c.base(m)).Store(off)
	c.log.Warn("clock offset to Binance re-synced after a timestamp refusal", "api", c.base(m), "offsetMs", off)
	return nil
}

// keyed serialises the placement of one client order ID within the process, so that two
// concurrent PlaceOrder calls for the same ID cannot both see "does not exist" and both
// place (Binance only refuses a client ID that an *open* order holds).
type keyed struct {
	mu sync.Mutex
	m  map[string]*keyedEntry
}

type keyedEntry struct {
	ch chan struct{}
	n  int
}

var placing = &keyed{m: map[string]*keyedEntry{}}

func (k *keyed) lock(ctx context.Context, key string) (func(), error) {
	k.mu.Lock()
	e := k.m[key]
	if e == nil {
		e = &keyedEntry{ch: make(chan struct{}, 1)}
		k.m[key] = e
	}
	e.n++
	k.mu.Unlock()
	release := func() {
		k.mu.Lock()
		if e.n--; e.n == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
	select {
	case e.ch <- struct{}{}:
		return func() { <-e.ch; release() }, nil
	case <-ctx.Done():
		release()
		return nil, ctx.Err()
	}
}

// inflight remembers, per client order ID, until when an order request that got no
// answer may still be executed by Binance (its timestamp + recvWindow + ClockMargin).
// Until then "does not exist" is not proof that it never will, so no new request is sent.
var inflight sync.Map // string -> time.Time

func inflightUntil(key string) time.Time {
	if v, ok := inflight.Load(key); ok {
		t := v.(time.Time)
		if time.Now().Before(t) {
			return t
		}
		inflight.CompareAndDelete(key, v)
	}
	return time.Time{}
}
