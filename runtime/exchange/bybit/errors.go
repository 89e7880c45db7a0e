package bybit

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/restkit"
)

// What a retCode means to sigops. The codes are Bybit's v5 error table
// (https://bybit-exchange.github.io/docs/v5/error): UTA codes 1xxxx and 11xxxx, spot trade
// codes 17xxxx.
type class int

const (
	classOther        class = iota
	classCredentials        // the key is refused: EXCHANGE_DISCONNECTED, ErrInvalidCredentials
	classForbidden          // the key may not do this: EXCHANGE_DISCONNECTED
	classRateLimit          // RATE_LIMITED
	classInsufficient       // INSUFFICIENT_BALANCE
	classAmount             // INVALID_AMOUNT
	classPrice              // INVALID_PRICE
	classSymbol             // INVALID_SYMBOL
	classDuplicate          // orderLinkId already used
	classGone               // the order is finished, cancelled or unknown (cancel)
)

var classes = map[int]class{
	10003: classCredentials, // API key is invalid
	10004: classCredentials, // error sign
	10007: classCredentials, // user authentication failed
	10010: classCredentials, // unmatched IP: the key is bound to other IPs
	33004: classCredentials, // (derivatives) api key expired
	-2015: classCredentials, // (spot) api key expired

	10005: classForbidden, // permission denied for this key
	10008: classForbidden, // account banned / wrong account mode
	10027: classForbidden, // transactions banned
	10028: classForbidden, // unified accounts only

	10006:  classRateLimit, // too many visits (per UID)
	10018:  classRateLimit, // IP rate limit
	170005: classRateLimit, // spot: too many new orders
	170222: classRateLimit, // spot: too many requests in this time frame

	110004: classInsufficient, // wallet balance insufficient
	110006: classInsufficient, // cannot afford the estimated position margin
	110007: classInsufficient, // available balance insufficient
	110012: classInsufficient, // insufficient available balance
	110044: classInsufficient, // available margin insufficient
	110045: classInsufficient, // wallet balance insufficient
	110051: classInsufficient, // balance cannot cover the lowest market price
	110052: classInsufficient, // balance insufficient to set the price
	110053: classInsufficient, // balance cannot cover market and upper limit price
	170033: classInsufficient, // margin: insufficient account balance
	170131: classInsufficient, // spot: balance insufficient
	176015: classInsufficient, // spot margin: insufficient available balance

	110017: classAmount, // reduce-only rule not satisfied (qty beyond the position)
	110094: classAmount, // order notional below the lower limit
	170124: classAmount, // spot: order amount too large
	170135: classAmount, // spot: order quantity too large
	170136: classAmount, // spot: order quantity lower than the minimum
	170137: classAmount, // spot: order volume decimal too long
	170140: classAmount, // spot: transaction amount lower than the minimum
	170148: classAmount, // spot: market order amount decimal too long
	170228: classAmount, // spot: purchase amount above the estimated maximum
	170229: classAmount, // spot: sell quantity above the estimated maximum
	170341: classAmount, // spot: order quantity exceeds the maximum
	110013: classAmount, // cannot set leverage due to the risk limit level

	110003: classPrice, // order price out of the permissible range
	110092: classPrice, // trigger price not above the current price (rising)
	110093: classPrice, // trigger price not below the current price (falling)
	170132: classPrice, // spot: order price too high
	170133: classPrice, // spot: order price lower than the minimum
	170134: classPrice, // spot: order price decimal too long
	170192: classPrice, // spot: order price cannot be higher than %s
	170193: classPrice, // spot: buy price cannot be higher than %s
	170194: classPrice, // spot: sell price cannot be lower than %s
	170203: classPrice, // spot: trigger price above 110%
	170204: classPrice, // spot: trigger price below 90%
	170218: classPrice, // spot: LIMIT-MAKER price invalid

	170121: classSymbol, // spot: invalid symbol
	10029:  classSymbol, // symbol not in the key's whitelist
	170151: classSymbol, // spot: pair not open yet
	170157: classSymbol, // spot: pair not available for API trading

	110072: classDuplicate, // OrderLinkedID is duplicate
	170141: classDuplicate, // spot: duplicate clientOrderId

	110001: classGone, // order does not exist
	110008: classGone, // order finished or cancelled
	110010: classGone, // order already cancelled
	170139: classGone, // spot: order filled
	170142: classGone, // spot: order cancelled
	170213: classGone, // spot: order does not exist
}

// classify is what a failure means, from its retCode and, for the generic parameter error
// 10001, from Bybit's message (Bybit gives no finer code for a bad symbol or quantity).
func classify(ae *apiError) class {
	if ae.code == 0 {
		switch {
		case ae.status == 401:
			return classCredentials
		case ae.status == 403 || ae.status == 429:
			return classRateLimit
		}
		return classOther
	}
	if c, ok := classes[ae.code]; ok {
		return c
	}
	if ae.code == 10001 {
		m := strings.ToLower(ae.msg)
		switch {
		case strings.Contains(m, "symbol"):
			return classSymbol
		case strings.Contains(m, "trigger") || strings.Contains(m, "price"):
			return classPrice
		case strings.Contains(m, "qty") || strings.Contains(m, "quantity") || strings.Contains(m, "contracts") ||
			strings.Contains(m, "order value") || strings.Contains(m, "notional") || strings.Contains(m, "leverage"):
			return classAmount
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
		return restkit.Unreachable("bybit", what, err)
	}
	var ae *apiError
	if !errors.As(err, &ae) {
		return errs.Wrap(err, errs.InternalError, "bybit %s failed", what)
	}
	if transient(ae) {
		return errs.Wrap(fmt.Errorf("%w: %w", exchange.ErrUnreachable, ae), errs.ExchangeError,
			"bybit is unavailable (%s): %s", what, ae.short())
	}
	switch classify(ae) {
	case classCredentials:
		return errs.Wrap(fmt.Errorf("%w: %w", exchange.ErrInvalidCredentials, ae), errs.ExchangeDisconnected,
			"bybit refused the API key: %s", ae.short())
	case classForbidden:
		return errs.Wrap(ae, errs.ExchangeDisconnected, "bybit refused the request for this API key: %s", ae.short())
	case classRateLimit:
		e := errs.Wrap(ae, errs.RateLimited, "bybit rate limit: %s", ae.short())
		if ae.status == 403 {
			// An IP ban is the host being out of reach for a while.
			e = errs.Wrap(fmt.Errorf("%w: %w", exchange.ErrUnreachable, ae), errs.RateLimited, "bybit rate limit: %s", ae.short())
		}
		e.RetryAfter = ae.wait(c.now())
		return e
	case classInsufficient:
		return errs.Wrap(ae, errs.InsufficientBalance, "bybit: %s", ae.short())
	case classAmount:
		return errs.Wrap(ae, errs.InvalidAmount, "bybit refused the amount: %s", ae.short())
	case classPrice:
		return errs.Wrap(ae, errs.InvalidPrice, "bybit refused the price: %s", ae.short())
	case classSymbol:
		return errs.Wrap(ae, errs.InvalidSymbol, "bybit refused the symbol: %s", ae.short())
	}
	return errs.Wrap(ae, errs.ExchangeError, "bybit refused the request (%s): %s", what, ae.short())
}

// short is the message with its code, for the client.
func (e *apiError) short() string {
	if e.code != 0 {
		return fmt.Sprintf("%s (retCode %d)", e.msg, e.code)
	}
	return fmt.Sprintf("%s (HTTP %d)", e.msg, e.status)
}

// wait is how long a rate-limited caller should wait: until X-Bapi-Limit-Reset-Timestamp
// for the per-UID limit, Retry-After or Bybit's 10 minutes for HTTP 429 and 403, else 1 s.
func (e *apiError) wait(now time.Time) time.Duration {
	if e.retryAfter > 0 {
		return e.retryAfter
	}
	if e.resetAt > 0 {
		if d := time.UnixMilli(e.resetAt).Sub(now); d > 0 {
			// Whole milliseconds, at least 1 ms.
			return max(d.Round(time.Millisecond), time.Millisecond)
		}
	}
	return time.Second
}

// codeOf is the retCode of err (0 if none).
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
