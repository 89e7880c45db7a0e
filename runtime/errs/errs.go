// Package errs is the one typed error that carries a spec error code from where a failure
// happens (parser, risk, exchange adapter) to the wire (webhookd, the API, MCP), so that no
// layer matches on message strings.
package errs

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	"github.com/shopspring/decimal"
)

// Code is an error code of the spec's Errors section.
type Code string

// Webhook, authentication and DCA codes, and the internal trading API's named codes.
const (
	InvalidJSON          Code = "INVALID_JSON"
	InvalidAction        Code = "INVALID_ACTION"
	MissingSymbol        Code = "MISSING_SYMBOL"
	InvalidSymbol        Code = "INVALID_SYMBOL"
	InvalidWebhook       Code = "INVALID_WEBHOOK"
	WebhookDisabled      Code = "WEBHOOK_DISABLED"
	BotPaused            Code = "BOT_PAUSED"
	BotDisabled          Code = "BOT_DISABLED"
	BotDeleted           Code = "BOT_DELETED"
	ExchangeDisconnected Code = "EXCHANGE_DISCONNECTED"
	RateLimited          Code = "RATE_LIMITED"
	ExchangeError        Code = "EXCHANGE_ERROR"
	InsufficientBalance  Code = "INSUFFICIENT_BALANCE"
	DCADisabled          Code = "DCA_DISABLED"
	DCAMaxLevels         Code = "DCA_MAX_LEVELS"
	DCAInvalidLevel      Code = "DCA_INVALID_LEVEL"
	DCANoPosition        Code = "DCA_NO_POSITION"
	InvalidAmount        Code = "INVALID_AMOUNT"
	InvalidPrice         Code = "INVALID_PRICE"
	Unauthorized         Code = "UNAUTHORIZED"
	PositionNotFound     Code = "POSITION_NOT_FOUND"
	InternalError        Code = "INTERNAL_ERROR"
	// SignalExpired: an entry waited longer than its bot's maxSignalAge and was not
	// executed (ours: the spec names no code for it).
	SignalExpired Code = "SIGNAL_EXPIRED"
	// InvalidParameter is a read API query parameter (or path segment) that is malformed or
	// out of range; the message names the parameter and what it accepts. The interface has
	// no code for it, and INVALID_JSON would mislead.
	InvalidParameter Code = "INVALID_PARAMETER"
	// NotFound is a resource of the read API that does not exist or is not the caller's
	// (both answer alike, so that nobody learns which IDs exist).
	NotFound Code = "NOT_FOUND"
	// TierNotAllowed: the caller's tier lacks the capability the call needs (the Strategy
	// Lab needs allowAIBuilder). Ours: the spec names no code for it; 403, like the bot's
	// TierNotAllowed disabled code, because the account is known and only its tier refuses.
	TierNotAllowed Code = "TIER_NOT_ALLOWED"
	// ManagedByGitOps: a change or deletion of a bot that was applied outside sigops (by a
	// platform team's GitOps tooling, without the managed-by label) and so belongs to its
	// repository; fleet refuses it. Ours: 409, because the bot exists and the caller owns it,
	// but its state is another writer's.
	ManagedByGitOps Code = "MANAGED_BY_GITOPS"
	// InsufficientScope: an OAuth token's scope does not cover the call (an MCP tool on a
	// live bot with an mcp:paper token). The HTTP answer is RFC 6750's 403
	// insufficient_scope; the code names the same refusal inside a tool result, for a
	// call whose bot changed venue between the scope check and the tool.
	InsufficientScope Code = "INSUFFICIENT_SCOPE"
	// PolicyLimit: the call is within the token's scope but the account's rules for
	// connected apps refuse it (the kill switch that suspends every app's trading). Ours:
	// 403 like INSUFFICIENT_SCOPE, because the caller is known and allowed the scope, and
	// the details name the limit, its value and when it resets, so that an agent can tell
	// the user what stopped it.
	PolicyLimit Code = "POLICY_LIMIT"
	// ServiceUnavailable: the service refuses new work for a moment and accepted nothing
	// (Redis above its memory watermark); the spec's 503, "retry after a delay", with
	// Retry-After. Ours: the spec gives 503 no code, and a sender that reads codes should
	// be able to tell "not accepted, retry" from an internal failure.
	ServiceUnavailable Code = "SERVICE_UNAVAILABLE"
)

type codeInfo struct {
	status  int // HTTP status on the webhook and API
	numeric int // the internal trading API's number; 0 where the spec gives none
}

// The HTTP statuses are the spec's table; where it ties none to a code, decision 2 (in
// docs/decisions.md) rules (INSUFFICIENT_BALANCE and DCA_* 422, EXCHANGE_ERROR 502), and the
// rest are ours:
// an order that is well-formed but cannot be executed (amount, price, no position) is 422.
var codes = map[Code]codeInfo{
	InvalidJSON:          {http.StatusBadRequest, 0},
	InvalidAction:        {http.StatusBadRequest, 0},
	MissingSymbol:        {http.StatusBadRequest, 0},
	InvalidSymbol:        {http.StatusBadRequest, 1001},
	InvalidWebhook:       {http.StatusUnauthorized, 0},
	WebhookDisabled:      {http.StatusUnauthorized, 0},
	BotPaused:            {http.StatusForbidden, 2002},
	BotDisabled:          {http.StatusForbidden, 0},
	BotDeleted:           {http.StatusForbidden, 0},
	ExchangeDisconnected: {http.StatusForbidden, 0},
	RateLimited:          {http.StatusTooManyRequests, 4001},
	ExchangeError:        {http.StatusBadGateway, 3003},
	InsufficientBalance:  {http.StatusUnprocessableEntity, 3001},
	DCADisabled:          {http.StatusUnprocessableEntity, 0},
	DCAMaxLevels:         {http.StatusUnprocessableEntity, 0},
	DCAInvalidLevel:      {http.StatusUnprocessableEntity, 0},
	DCANoPosition:        {http.StatusUnprocessableEntity, 0},
	InvalidAmount:        {http.StatusUnprocessableEntity, 1002},
	InvalidPrice:         {http.StatusUnprocessableEntity, 1003},
	Unauthorized:         {http.StatusUnauthorized, 2001},
	PositionNotFound:     {http.StatusUnprocessableEntity, 3002},
	InternalError:        {http.StatusInternalServerError, 5001},
	SignalExpired:        {http.StatusUnprocessableEntity, 0},
	InvalidParameter:     {http.StatusBadRequest, 0},
	NotFound:             {http.StatusNotFound, 0},
	TierNotAllowed:       {http.StatusForbidden, 0},
	ManagedByGitOps:      {http.StatusConflict, 0},
	InsufficientScope:    {http.StatusForbidden, 0},
	ServiceUnavailable:   {http.StatusServiceUnavailable, 0},
	PolicyLimit:          {http.StatusForbidden, 0},
}

// Codes are the known codes, sorted: the list a client may see, which the OpenAPI
// document's code lists are checked against.
func Codes() []Code {
	out := make([]Code, 0, len(codes))
	for c := range codes {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}

// HTTPStatus is the code's status on the wire; unknown codes are 500.
func (c Code) HTTPStatus() int {
	if i, ok := codes[c]; ok {
		return i.status
	}
	return http.StatusInternalServerError
}

// Numeric is the internal trading API's number (1001-5001), or 0 where the spec has none.
func (c Code) Numeric() int { return codes[c].numeric }

// Retry says whether a caller may retry, by the spec's categories: validation (1xxx) and
// authentication (2xxx) never, rate limits (4xxx) and server errors (5xxx) yes after a delay,
// exchange errors (3xxx) maybe, which callers treat as "not automatically".
func (c Code) Retry() bool {
	n := c.Numeric()
	return n >= 4000
}

// Error is a failure with its spec code.
type Error struct {
	Code    Code
	Message string
	// Details is extra data for the client, e.g. required and available for
	// INSUFFICIENT_BALANCE. Never put secrets here.
	Details map[string]any
	// RetryAfter is the delay a RATE_LIMITED or SERVICE_UNAVAILABLE caller should wait.
	RetryAfter time.Duration
	cause      error
}

func (e *Error) Error() string {
	if e.cause != nil {
		return string(e.Code) + ": " + e.Message + ": " + e.cause.Error()
	}
	return string(e.Code) + ": " + e.Message
}

// Unwrap exposes the cause to errors.Is and errors.As.
func (e *Error) Unwrap() error { return e.cause }

// New makes an error with a code and a client-facing message.
func New(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap keeps cause for logs; the client sees only Message.
func Wrap(cause error, code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), cause: cause}
}

// RecordRetry is the Retry-After of RecordUnavailable: PostgreSQL restarting or failing
// over takes seconds.
const RecordRetry = 5 * time.Second

// RecordUnavailable is a failure of the database that records what the caller changes
// (accounts, wallets, consents): SERVICE_UNAVAILABLE with message, retry after
// RecordRetry. The caller promises that nothing was changed.
func RecordUnavailable(cause error, message string) *Error {
	e := Wrap(cause, ServiceUnavailable, "%s", message)
	e.RetryAfter = RecordRetry
	return e
}

// WithDetails adds client-visible details.
func (e *Error) WithDetails(kv map[string]any) *Error {
	e.Details = kv
	return e
}

// JSONDetails is details as the wire carries them: a decimal value (shopspring/decimal, by
// value or by pointer) becomes a json.Number with the decimal's exact text, so that an
// amount (required, available, minQty, ...) is a JSON number to its last digit, as the
// spec's numbers are; every other value is kept. details itself is left as it is (nil stays
// nil), so that Go callers still read the decimals.
func JSONDetails(details map[string]any) map[string]any {
	var out map[string]any
	for k, v := range details {
		var n json.Number
		switch d := v.(type) {
		case decimal.Decimal:
			n = json.Number(d.String())
		case *decimal.Decimal:
			if d == nil {
				continue
			}
			n = json.Number(d.String())
		default:
			continue
		}
		if out == nil {
			out = maps.Clone(details)
		}
		out[k] = n
	}
	if out == nil {
		return details
	}
	return out
}

// CodeOf is the code carried by err, or INTERNAL_ERROR for an untyped error: an error
// nobody classified is our fault, not the client's.
func CodeOf(err error) Code {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return InternalError
}

// As returns the *Error in err's chain.
func As(err error) (*Error, bool) {
	var e *Error
	ok := errors.As(err, &e)
	return e, ok
}

// Object is the error object an MCP tool's error result carries as its text: the spec's
// code, its numeric code where the spec gives one, the message an agent can act on, and
// the details. The hosted server and the local stdio client answer the same shape.
type Object struct {
	Code        Code           `json:"code"`
	NumericCode int            `json:"numericCode,omitempty"`
	Message     string         `json:"message"`
	Details     map[string]any `json:"details,omitempty"`
}

// Object is e as an error object.
func (e *Error) Object() Object {
	return Object{Code: e.Code, NumericCode: e.Code.Numeric(), Message: e.Message, Details: JSONDetails(e.Details)}
}
