package okx

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/restkit"
)

// Headers of the v5 API.
const (
	hdrKey        = "OK-ACCESS-KEY"
	hdrSign       = "OK-ACCESS-SIGN"
	hdrTimestamp  = "OK-ACCESS-TIMESTAMP"
	hdrPassphrase = "OK-ACCESS-PASSPHRASE"
	hdrSimulated  = "x-simulated-trading"
	hdrExpTime    = "expTime"
)

// TimestampLayout is OK-ACCESS-TIMESTAMP's form: ISO 8601 in UTC with milliseconds.
const TimestampLayout = "2006-01-02T15:04:05.000Z"

// maxBody bounds a response read (all SPOT instruments are about 1 MB).
const maxBody = 8 << 20

// rateLimitWait is the RetryAfter of a rate-limited call: OKX counts its limits per 2
// seconds and sends no reset header.
const rateLimitWait = 2 * time.Second

// clockOffsets is the learned server-minus-local clock offset per host (see restkit.Offsets).
var clockOffsets restkit.Offsets

// client is one OKX host with one key. It signs exactly the bytes it sends.
type client struct {
	base                    string // scheme://host, no trailing slash
	key, secret, passphrase string
	demo                    bool
	http                    *http.Client
	now                     func() time.Time
	offset                  *atomic.Int64
	// attemptCap bounds one HTTP attempt of a retryable call, so that a hung attempt
	// leaves time for another inside the method's budget.
	attemptCap time.Duration
}

func newClient(base string, creds exchange.Credentials, demo bool, hc *http.Client, now func() time.Time, budget time.Duration) *client {
	return &client{base: base, key: creds.APIKey, secret: creds.APISecret, passphrase: creds.Passphrase, demo: demo,
		http: hc, now: now, offset: clockOffsets.For(base), attemptCap: budget * 6 / 10}
}

// request is one call: the query string (GET) or JSON body (POST) is encoded once and used
// both on the wire and in the signature.
type request struct {
	method  string
	path    string
	query   string
	body    []byte
	private bool
	// expiry, when set, sends expTime = OKX's clock at the send + expiry (only
	// POST /api/v5/trade/order takes it).
	expiry time.Duration
}

// envelope is every v5 response: code and msg, and data, an array. Trade endpoints report
// each order's own result as sCode and sMsg in data.
type envelope struct {
	Code json.RawMessage `json:"code"`
	Msg  string          `json:"msg"`
	Data json.RawMessage `json:"data"`
}

// item is the per-order result of a trade endpoint.
type item struct {
	SCode string `json:"sCode"`
	SMsg  string `json:"sMsg"`
}

// apiError is an answer from OKX that is not success: an HTTP status other than 200, a code
// other than 0, or an order's sCode other than 0. Its message is cleaned of credentials.
type apiError struct {
	status int    // HTTP status
	code   int    // OKX's code (the order's sCode when there is one); 0 for HTTP-level failures
	msg    string // cleaned msg / sMsg, or the HTTP reason
}

func (e *apiError) Error() string {
	if e.code != 0 {
		return fmt.Sprintf("okx code %d: %s", e.code, e.msg)
	}
	return fmt.Sprintf("okx HTTP %d: %s", e.status, e.msg)
}

// netError is a request that got no complete answer: connection refused or reset, a
// time-out, a response cut short. For a write, OKX may or may not have applied it.
type netError struct{ err error }

func (e *netError) Error() string { return "okx: no answer: " + e.err.Error() }
func (e *netError) Unwrap() error { return e.err }

// transient reports a failure worth retrying for a read: no answer, a 5xx, or one of the
// codes by which OKX says its own back end failed, is busy or timed out. For an order
// placement the same set means "outcome unknown" (50004 says so in its message).
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
	case 50001, // service temporarily unavailable
		50004, // endpoint request timeout (does not mean that the request was successful or failed)
		50013, // systems are busy
		50026, // system error
		51054, // request timed out
		51149: // order timed out
		return true
	}
	return false
}

// Timestamp is OK-ACCESS-TIMESTAMP of an instant.
func Timestamp(t time.Time) string { return t.UTC().Format(TimestampLayout) }

// okxNow is the local clock corrected by the learned offset to OKX's.
func (c *client) okxNow() time.Time {
	return c.now().Add(time.Duration(c.offset.Load()) * time.Millisecond)
}

// once makes one HTTP attempt; it returns the data of a success.
func (c *client) once(ctx context.Context, r request) (json.RawMessage, error) {
	target := r.path
	if r.query != "" {
		target += "?" + r.query
	}
	var body io.Reader
	if r.method == http.MethodPost {
		body = bytes.NewReader(r.body)
	}
	hreq, err := http.NewRequestWithContext(ctx, r.method, c.base+target, body)
	if err != nil {
		return nil, fmt.Errorf("okx: building request: %w", err)
	}
	hreq.Header.Set("Accept", "application/json")
	if r.method == http.MethodPost {
		hreq.Header.Set("Content-Type", "application/json")
	}
	if c.demo {
		hreq.Header.Set(hdrSimulated, "1")
	}
	if r.private {
		now := c.okxNow()
		ts := Timestamp(now)
		hreq.Header.Set(hdrKey, c.key)
		hreq.Header.Set(hdrTimestamp, ts)
		hreq.Header.Set(hdrPassphrase, c.passphrase)
		hreq.Header.Set(hdrSign, Sign(c.secret, ts, r.method, target, string(r.body)))
		if r.expiry > 0 {
			hreq.Header.Set(hdrExpTime, strconv.FormatInt(now.Add(r.expiry).UnixMilli(), 10))
		}
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
	var env envelope
	if jerr := json.Unmarshal(data, &env); jerr != nil || len(env.Code) == 0 {
		switch {
		case resp.StatusCode == http.StatusTooManyRequests:
			return nil, &apiError{status: resp.StatusCode, msg: "too many requests"}
		case resp.StatusCode != http.StatusOK:
			return nil, &apiError{status: resp.StatusCode, msg: http.StatusText(resp.StatusCode)}
		}
		// A 200 whose body is not an envelope: treat like a server failure.
		return nil, &apiError{status: http.StatusBadGateway, msg: "malformed response"}
	}
	code, _ := strconv.Atoi(strings.Trim(string(env.Code), `"`))
	// The first refused order of a trade endpoint is the answer's reason (sigops sends one
	// order per request), whatever the batch-level code says ("1": operation failed).
	var items []item
	_ = json.Unmarshal(env.Data, &items)
	for _, it := range items {
		if sc, _ := strconv.Atoi(it.SCode); it.SCode != "" && sc != 0 {
			return nil, &apiError{status: resp.StatusCode, code: sc, msg: c.clean(it.SMsg)}
		}
	}
	if code != 0 || resp.StatusCode != http.StatusOK {
		msg := c.clean(env.Msg)
		if msg == "" {
			msg = http.StatusText(resp.StatusCode)
		}
		return nil, &apiError{status: resp.StatusCode, code: code, msg: msg}
	}
	return env.Data, nil
}

// call runs r, decoding data into out (if not nil). A timestamp OKX refuses as expired
// (50102) resynchronises the clock and is sent once more: OKX refused it before looking at
// it. When retry is set, transient failures are retried with bounded exponential backoff
// inside ctx's deadline (restkit.Attempts); attemptCap (0: the client's) bounds each attempt.
func (c *client) call(ctx context.Context, r request, retry bool, attemptCap time.Duration, out any) error {
	if attemptCap <= 0 {
		attemptCap = c.attemptCap
	}
	synced := false
	p := restkit.Retry{Cap: attemptCap, Resend: func(err error) bool {
		if codeOf(err) != 50102 || !r.private || synced {
			return false
		}
		synced = true
		return c.syncClock(ctx) == nil
	}}
	if retry {
		p.Transient = transient
	}
	data, err := restkit.Attempts(ctx, p, func(actx context.Context) (json.RawMessage, error) { return c.once(actx, r) })
	if err != nil {
		return err
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return &apiError{status: http.StatusBadGateway, msg: "malformed data: " + err.Error()}
	}
	return nil
}

// syncClock learns OKX's clock from /api/v5/public/time.
func (c *client) syncClock(ctx context.Context) error {
	t0 := c.now()
	actx, cancel := context.WithTimeout(ctx, c.attemptCap)
	defer cancel()
	data, err := c.once(actx, request{method: http.MethodGet, path: "/api/v5/public/time"})
	if err != nil {
		return err
	}
	var res []struct {
		TS string `json:"ts"`
	}
	if err := json.Unmarshal(data, &res); err != nil || len(res) == 0 {
		return fmt.Errorf("okx: malformed time")
	}
	ms, err := strconv.ParseInt(res[0].TS, 10, 64)
	if err != nil {
		return err
	}
	t1 := c.now()
	mid := t0.Add(t1.Sub(t0) / 2)
	c.offset.Store(ms - mid.UnixMilli())
	return nil
}

// clean removes credentials from a message OKX sends back and bounds its length.
func (c *client) clean(msg string) string {
	for _, s := range []string{c.secret, c.passphrase, c.key} {
		if s != "" {
			msg = strings.ReplaceAll(msg, s, "[redacted]")
		}
	}
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return msg
}

// Sign is the v5 signature: base64(HMAC-SHA256(secret, timestamp + method + requestPath +
// body)), requestPath being the path with its query string and body the JSON body as sent
// (empty for a GET).
func Sign(secret, timestamp, method, requestPath, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(timestamp))
	m.Write([]byte(method))
	m.Write([]byte(requestPath))
	m.Write([]byte(body))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}
