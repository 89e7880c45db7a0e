package okx

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/restkit"
)

// What a code means to sigops. The codes are OKX's v5 REST error table
// (https://www.okx.com/docs-v5/en/#error-code-rest-api-public): the general class 500xx,
// the API class 501xx (authentication) and the trade class 51xxx.
type class int

const (
	classOther        class = iota
	classCredentials        // the key is refused: EXCHANGE_DISCONNECTED, ErrInvalidCredentials
	classClock              // the timestamp stays refused after a resync: EXCHANGE_DISCONNECTED
	classForbidden          // the key or account may not do this: EXCHANGE_DISCONNECTED
	classRateLimit          // RATE_LIMITED
	classInsufficient       // INSUFFICIENT_BALANCE
	classAmount             // INVALID_AMOUNT
	classPrice              // INVALID_PRICE
	classSymbol             // INVALID_SYMBOL
	classDuplicate          // clOrdId / algoClOrdId already used
	classGone               // the order is finished, cancelled or unknown (cancel)
	classNotFound           // no such order (reads)
	classMode               // the request's posSide does not fit the account's position mode
	classExpired            // refused for its expTime: never processed
)

var classes = map[int]class{
	50100: classCredentials, // API frozen
	50101: classCredentials, // APIKey does not match current environment (demo key on production or the reverse)
	50103: classCredentials, // OK-ACCESS-KEY cannot be empty
	50104: classCredentials, // OK-ACCESS-PASSPHRASE cannot be empty
	50105: classCredentials, // OK-ACCESS-PASSPHRASE incorrect
	50106: classCredentials, // OK-ACCESS-SIGN cannot be empty
	50107: classCredentials, // OK-ACCESS-TIMESTAMP cannot be empty
	50110: classCredentials, // IP not in the key's allow-list
	50111: classCredentials, // invalid OK-ACCESS-KEY
	50112: classCredentials, // invalid OK-ACCESS-TIMESTAMP
	50113: classCredentials, // invalid signature
	50114: classCredentials, // invalid authorization
	50119: classCredentials, // API key doesn't exist

	50102: classClock, // timestamp request expired (after a resync)

	50007: classForbidden, // user blocked
	50009: classForbidden, // account frozen due to stop-out
	50012: classForbidden, // account status invalid
	50027: classForbidden, // account restricted from trading
	50029: classForbidden, // risk control restriction
	50030: classForbidden, // no permission to use this endpoint
	50035: classForbidden, // endpoint requires an IP-bound key
	50120: classForbidden, // key lacks the permission (a read-only key trading)
	50121: classForbidden, // access from this IP refused
	51009: classForbidden, // order blocked
	51024: classForbidden, // trading account blocked

	50011: classRateLimit, // rate limit reached
	50040: classRateLimit, // too frequent operations
	50061: classRateLimit, // maximum order rate of the account
	51113: classRateLimit, // market-price liquidation requests too frequent

	51008: classInsufficient, // insufficient balance / margin
	51119: classInsufficient, // insufficient balance
	51127: classInsufficient, // available balance is 0
	51131: classInsufficient, // insufficient balance

	50122: classAmount, // order amount must exceed minimum amount
	51004: classAmount, // size beyond the maximum position under current leverage
	51005: classAmount, // order amount exceeds the max order amount
	51007: classAmount, // at least 1 contract
	51020: classAmount, // below the minimum order amount
	51101: classAmount, // sz above the maximum contracts
	51112: classAmount, // close size exceeds available size
	51120: classAmount, // order amount less than the minimum
	51121: classAmount, // not a multiple of the lot size
	51132: classAmount, // position below the minimum trading amount
	51150: classAmount, // precision of quantity or price beyond the limit
	51169: classAmount, // no position in this direction to reduce or close
	51170: classAmount, // reduce-only in the position's own direction
	51201: classAmount, // market order value above the maximum
	51202: classAmount, // market order amount above the maximum
	51203: classAmount, // order amount above the limit
	51252: classAmount, // algo order amount out of range

	51006: classPrice, // price outside the price limit
	51031: classPrice, // price outside the closing range
	51116: classPrice, // price or trigger price above the maximum
	51122: classPrice, // price below the minimum
	51135: classPrice, // closing price hit the limit (buy)
	51136: classPrice, // closing price hit the limit (sell)
	51137: classPrice, // highest buy price limit
	51138: classPrice, // lowest sell price limit
	51204: classPrice, // limit order without a price
	51250: classPrice, // algo order price out of range
	51277: classPrice, // TP trigger above the last price
	51278: classPrice, // SL trigger below the last price
	51279: classPrice, // TP trigger below the last price
	51280: classPrice, // SL trigger above the last price

	50033: classSymbol, // instrument blocked for the account
	51001: classSymbol, // instrument ID does not exist
	51002: classSymbol, // instrument ID doesn't match underlying
	51015: classSymbol, // instrument ID doesn't match instrument type
	51021: classSymbol, // not yet listed
	51022: classSymbol, // contract suspended
	51027: classSymbol, // contract expired
	51087: classSymbol, // listing canceled
	51155: classSymbol, // restricted by local compliance

	50071: classDuplicate, // {param} already exists (clOrdId)
	51016: classDuplicate, // client order ID already exists
	51065: classDuplicate, // algoClOrdId already exists
	51068: classDuplicate, // already exists within algoClOrdId and attachAlgoClOrdId

	51400: classGone, // filled, canceled or does not exist
	51401: classGone, // already canceled
	51402: classGone, // already completed
	51410: classGone, // already canceling
	51412: classGone, // triggered, cannot be canceled
	51416: classGone, // triggered, cannot be canceled

	51603: classNotFound, // order does not exist
	51063: classNotFound, // ordId does not exist

	50036: classExpired, // expTime earlier than the system time
	50037: classExpired, // order expired
}

// paramError reads 51000's "Parameter {param0} error".
var paramError = regexp.MustCompile(`(?i)parameter\s+(\w+)\s+error`)

// classify is what a failure means, from its code and, for the generic parameter error
// 51000, from the parameter OKX names.
func classify(ae *apiError) class {
	if ae.code == 0 {
		switch ae.status {
		case 401:
			return classCredentials
		case 429:
			return classRateLimit
		}
		return classOther
	}
	if c, ok := classes[ae.code]; ok {
		return c
	}
	if ae.code == 51000 {
		if m := paramError.FindStringSubmatch(ae.msg); m != nil {
			switch p := strings.ToLower(m[1]); {
			case p == "posside":
				return classMode
			case p == "sz":
				return classAmount
			case p == "px" || strings.HasSuffix(p, "px"):
				return classPrice
			case p == "instid":
				return classSymbol
			}
		}
	}
	return classOther
}

// typed turns a failure of a call into the spec's typed error. what names the call for the
// message ("place order", "balance", ...). An error already typed is returned as is.
func (c *client) typed(err error, what string) error {
	if err == nil {
		return nil
	}
	if _, ok := errs.As(err); ok {
		return err
	}
	var ne *netError
	if errors.As(err, &ne) {
		return restkit.Unreachable("okx", what, err)
	}
	var ae *apiError
	if !errors.As(err, &ae) {
		return errs.Wrap(err, errs.InternalError, "okx %s failed", what)
	}
	if transient(ae) {
		return errs.Wrap(fmt.Errorf("%w: %w", exchange.ErrUnreachable, ae), errs.ExchangeError,
			"okx is unavailable (%s): %s", what, ae.short())
	}
	switch classify(ae) {
	case classCredentials:
		hint := ""
		if ae.code == 50101 {
			hint = " (a demo trading key needs endpoints.testnet, a production key must not have it)"
		}
		return errs.Wrap(fmt.Errorf("%w: %w", exchange.ErrInvalidCredentials, ae), errs.ExchangeDisconnected,
			"okx refused the API key: %s%s", ae.short(), hint)
	case classClock:
		return errs.Wrap(ae, errs.ExchangeDisconnected, "okx refused the request's timestamp after a clock resync: %s", ae.short())
	case classForbidden:
		return errs.Wrap(ae, errs.ExchangeDisconnected, "okx refused the request for this API key: %s", ae.short())
	case classRateLimit:
		e := errs.Wrap(ae, errs.RateLimited, "okx rate limit: %s", ae.short())
		e.RetryAfter = rateLimitWait
		return e
	case classInsufficient:
		return errs.Wrap(ae, errs.InsufficientBalance, "okx: %s", ae.short())
	case classAmount:
		return errs.Wrap(ae, errs.InvalidAmount, "okx refused the amount: %s", ae.short())
	case classPrice:
		return errs.Wrap(ae, errs.InvalidPrice, "okx refused the price: %s", ae.short())
	case classSymbol:
		return errs.Wrap(ae, errs.InvalidSymbol, "okx refused the symbol: %s", ae.short())
	case classMode:
		return errs.Wrap(ae, errs.ExchangeError, "okx refused the order's position side: the account's position mode changed (%s)", ae.short())
	case classExpired:
		return errs.Wrap(ae, errs.ExchangeError, "okx refused the request unprocessed, past its expTime (%s): %s", what, ae.short())
	}
	return errs.Wrap(ae, errs.ExchangeError, "okx refused the request (%s): %s", what, ae.short())
}

// short is the message with its code, for the client.
func (e *apiError) short() string {
	if e.code != 0 {
		return fmt.Sprintf("%s (code %d)", e.msg, e.code)
	}
	return fmt.Sprintf("%s (HTTP %d)", e.msg, e.status)
}

// codeOf is the code of err (0 if none).
func codeOf(err error) int {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.code
	}
	return 0
}

// classOf is the class of err (classOther for no answer).
func classOf(err error) class {
	var ae *apiError
	if errors.As(err, &ae) {
		return classify(ae)
	}
	return classOther
}
