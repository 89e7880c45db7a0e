package bybit

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sigops/sigops/runtime/exchange/restkit"
)

// Signing headers of the v5 API.
const (
	hdrKey        = "X-BAPI-API-KEY"
	hdrSign       = "X-BAPI-SIGN"
	hdrTimestamp  = "X-BAPI-TIMESTAMP"
	hdrRecvWindow = "X-BAPI-RECV-WINDOW"
	hdrLimitReset = "X-Bapi-Limit-Reset-Timestamp"
)

// maxBody bounds a response read (a page of 1000 linear instruments is about 1 MB).
const maxBody = 8 << 20

// clockOffsets is the learned server-minus-local clock offset per host (see restkit.Offsets).
var clockOffsets restkit.Offsets

// client is one Bybit host with one key. It signs exactly the bytes it sends.
type client struct {
	base        string // scheme://host, no trailing slash
	key, secret string
	http        *http.Client
	now         func() time.Time
	offset      *atomic.Int64
	recvWindow  string // X-BAPI-RECV-WINDOW, ms
	// attemptCap bounds one HTTP attempt of a retryable call, so that a hung attempt
	// leaves time for another inside the method's budget.
	attemptCap time.Duration
}

func newClient(base, key, secret, recvWindow string, hc *http.Client, now func() time.Time, budget time.Duration) *client {
	return &client{base: base, key: key, secret: secret, recvWindow: recvWindow, http: hc, now: now,
		offset: clockOffsets.For(base), attemptCap: budget * 6 / 10}
}

// request is one call: the query string (GET) or JSON body (POST) is encoded once and used
// both on the wire and in the signature.
type request struct {
	method  string
	path    string
	query   string
	body    []byte
	private bool
}

// envelope is every v5 response.
type envelope struct {
	RetCode int             `json:"retCode"`
	RetMsg  string          `json:"retMsg"`
	Result  json.RawMessage `json:"result"`
	Time    int64           `json:"time"`
}

// apiError is an answer from Bybit that is not success: an HTTP status other than 200, or a
// retCode other than 0. Its message is cleaned of credentials.
type apiError struct {
	status     int    // HTTP status
	code       int    // retCode; 0 for HTTP-level failures
	msg        string // cleaned retMsg or HTTP reason
	resetAt    int64  // X-Bapi-Limit-Reset-Timestamp (ms), 0 if absent
	retryAfter time.Duration
}

func (e *apiError) Error() string {
	if e.code != 0 {
		return fmt.Sprintf("bybit retCode %d: %s", e.code, e.msg)
	}
	return fmt.Sprintf("bybit HTTP %d: %s", e.status, e.msg)
}

// netError is a request that got no complete answer: connection refused or reset, a
// time-out, a response cut short. For a write, Bybit may or may not have applied it.
type netError struct{ err error }

func (e *netError) Error() string { return "bybit: no answer: " + e.err.Error() }
func (e *netError) Unwrap() error { return e.err }

// transient reports a failure worth retrying: no answer, a 5xx, or one of the retCodes by
// which Bybit says its own back end failed or timed out. For order/create the same set
// means "outcome unknown".
func transient(err error) bool {
	var ne *netError
	if errors.As(err, &ne) {
		return true
	}
	var ae *apiError
	if !errors.As(err, &ae) {
		return false
	}
	if ae.status >= 500 {
		return true
	}
	switch ae.code {
	case 10000, // server timeout
		10016,  // internal error / service restarting
		170001, // spot: internal error
		170007, // spot: timeout waiting for the back end
		170032, // spot: network error
		170146: // spot: order creation timeout
		return true
	}
	return false
}

// once makes one HTTP attempt.
func (c *client) once(ctx context.Context, r request) (*envelope, error) {
	u := c.base + r.path
	if r.query != "" {
		u += "?" + r.query
	}
	var body io.Reader
	if r.method == http.MethodPost {
		body = bytes.NewReader(r.body)
	}
	hreq, err := http.NewRequestWithContext(ctx, r.method, u, body)
	if err != nil {
		return nil, fmt.Errorf("bybit: building request: %w", err)
	}
	if r.method == http.MethodPost {
		hreq.Header.Set("Content-Type", "application/json")
	}
	if r.private {
		ts := strconv.FormatInt(c.now().UnixMilli()+c.offset.Load(), 10)
		payload := r.query
		if r.method == http.MethodPost {
			payload = string(r.body)
		}
		hreq.Header.Set(hdrKey, c.key)
		hreq.Header.Set(hdrTimestamp, ts)
		hreq.Header.Set(hdrRecvWindow, c.recvWindow)
		hreq.Header.Set(hdrSign, Sign(c.secret, ts, c.key, c.recvWindow, payload))
	}
	resp, err := c.http.Do(hreq)
	if err != nil {
		return nil, &netError{err: err}
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, &netError{err: err}
	}
	var resetAt int64
	if v := resp.Header.Get(hdrLimitReset); v != "" {
		resetAt, _ = strconv.ParseInt(v, 10, 64)
	}
	switch {
	case resp.StatusCode == http.StatusForbidden:
		// The IP limit ("403, access too frequent"): Bybit asks to stop for at least
		// 10 minutes.
		return nil, &apiError{status: resp.StatusCode, msg: "access too frequent (IP rate limit)", retryAfter: ipBanWait}
	case resp.StatusCode == http.StatusTooManyRequests:
		wait := time.Second
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
			wait = time.Duration(s) * time.Second
		}
		return nil, &apiError{status: resp.StatusCode, msg: "system-level frequency protection", retryAfter: wait}
	case resp.StatusCode >= 500:
		return nil, &apiError{status: resp.StatusCode, msg: http.StatusText(resp.StatusCode)}
	}
	var env envelope
	if err := json.Unmarshal(data, &env); err != nil {
		if resp.StatusCode != http.StatusOK {
			return nil, &apiError{status: resp.StatusCode, msg: http.StatusText(resp.StatusCode)}
		}
		// A 200 whose body is not an envelope: treat like a server failure.
		return nil, &apiError{status: http.StatusBadGateway, msg: "malformed response"}
	}
	if env.RetCode != 0 || resp.StatusCode != http.StatusOK {
		code := env.RetCode
		msg := c.clean(env.RetMsg)
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		return &env, &apiError{status: resp.StatusCode, code: code, msg: msg, resetAt: resetAt}
	}
	return &env, nil
}

// call runs r, decoding the result into out (if not nil). A timestamp refused for the recv
// window (10002) resynchronises the clock and is sent again once: Bybit refused it before
// looking at it. When retry is set, transient failures are retried with bounded exponential
// backoff inside ctx's deadline (restkit.Attempts); attemptCap (0: the client's) bounds each attempt.
func (c *client) call(ctx context.Context, r request, retry bool, attemptCap time.Duration, out any) error {
	if attemptCap <= 0 {
		attemptCap = c.attemptCap
	}
	synced := false
	p := restkit.Retry{Cap: attemptCap, Resend: func(err error) bool {
		var ae *apiError
		if !errors.As(err, &ae) || ae.code != 10002 || !r.private || synced {
			return false
		}
		synced = true
		return c.syncClock(ctx) == nil
	}}
	if retry {
		p.Transient = transient
	}
	env, err := restkit.Attempts(ctx, p, func(actx context.Context) (*envelope, error) { return c.once(actx, r) })
	if err != nil {
		return err
	}
	if out == nil || len(env.Result) == 0 {
		return nil
	}
	if err := json.Unmarshal(env.Result, out); err != nil {
		return &apiError{status: http.StatusBadGateway, msg: "malformed result: " + err.Error()}
	}
	return nil
}

// syncClock learns the server's clock from /v5/market/time.
func (c *client) syncClock(ctx context.Context) error {
	t0 := c.now()
	var res struct {
		TimeNano string `json:"timeNano"`
	}
	actx, cancel := context.WithTimeout(ctx, c.attemptCap)
	defer cancel()
	env, err := c.once(actx, request{method: http.MethodGet, path: "/v5/market/time"})
	if err != nil {
		return err
	}
	if err := json.Unmarshal(env.Result, &res); err != nil {
		return err
	}
	ns, err := strconv.ParseInt(res.TimeNano, 10, 64)
	if err != nil {
		return err
	}
	t1 := c.now()
	mid := t0.Add(t1.Sub(t0) / 2)
	c.offset.Store(ns/int64(time.Millisecond) - mid.UnixMilli())
	return nil
}

// clean removes credentials from a message Bybit sends back: the 10004 answer echoes the
// signed string ("origin_string[...]"), which holds the API key.
func (c *client) clean(msg string) string {
	if i := strings.Index(strings.ToLower(msg), "origin_string"); i >= 0 {
		msg = strings.TrimRight(strings.TrimSpace(msg[:i]), ",;:")
	}
	for _, s := range []string{c.secret, c.key} {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "[redacted]")
		}
	}
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return msg
}

// Sign is the v5 signature: hex(HMAC-SHA256(secret, timestamp + apiKey + recvWindow +
// payload)), where payload is the query string of a GET or the JSON body of a POST, exactly
// as sent.
func Sign(secret, timestamp, apiKey, recvWindow, payload string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp))
	m.Write([]byte(apiKey))
	m.Write([]byte(recvWindow))
	m.Write([]byte(payload))
	return hex.EncodeToString(m.Sum(nil))
}
