package binance

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
)

// Binance codes by the spec code they map to (spot and USDⓈ-M futures lists).
var (
	// Balance or margin too small.
	insufficientCodes = map[int64]bool{
		-2018: true, // BALANCE_NOT_SUFFICIENT
		-2019: true, // MARGIN_NOT_SUFFICIEN(T)
		-4050: true, // CROSS_BALANCE_INSUFFICIENT
		-4051: true, // ISOLATED_BALANCE_INSUFFICIENT
	}
	// Quantity or notional outside the symbol's filters.
	amountCodes = map[int64]bool{
		-4003: true, // QTY_LESS_THAN_ZERO
		-4004: true, // QTY_LESS_THAN_MIN_QTY
		-4005: true, // QTY_GREATER_THAN_MAX_QTY
		-4023: true, // QTY_NOT_INCREASED_BY_STEP_SIZE
		-4028: true, // INVALID_LEVERAGE
		-4164: true, // MIN_NOTIONAL (futures)
	}
	// Price or trigger price outside the symbol's filters.
	priceCodes = map[int64]bool{
		-4001: true, // PRICE_LESS_THAN_ZERO
		-4002: true, // PRICE_GREATER_THAN_MAX_PRICE
		-4006: true, // STOP_PRICE_LESS_THAN_ZERO
		-4007: true, // STOP_PRICE_GREATER_THAN_MAX_PRICE
		-4013: true, // PRICE_LESS_THAN_MIN_PRICE
		-4014: true, // PRICE_NOT_INCREASED_BY_TICK_SIZE
		-4016: true, // PRICE_HIGHTER_THAN_MULTIPLIER_UP
		-4024: true, // PRICE_LOWER_THAN_MULTIPLIER_DOWN
		-2021: true, // ORDER_WOULD_IMMEDIATELY_TRIGGER (the stop price is already crossed)
	}
	// Filters named in "Filter failure: NAME" (-1013, sometimes -2010).
	amountFilters = map[string]bool{"LOT_SIZE": true, "MARKET_LOT_SIZE": true, "MIN_NOTIONAL": true,
		"NOTIONAL": true, "ICEBERG_PARTS": true, "MAX_POSITION": true}
	priceFilters = map[string]bool{"PRICE_FILTER": true, "PERCENT_PRICE": true, "PERCENT_PRICE_BY_SIDE": true}
)

var filterRE = regexp.MustCompile(`Filter failure: ([A-Z_]+)`)

// typed turns Binance's definitive answer into the spec's typed error. what names the
// action for the message ("order", "ticker", ...).
func typed(f *failure, what string) *errs.Error {
	details := map[string]any{"binanceCode": f.code}
	if f.code == 0 {
		details = map[string]any{"httpStatus": f.status}
	}
	switch {
	case f.authFailed():
		return errs.Wrap(fmt.Errorf("%w: %w", exchange.ErrInvalidCredentials, f), errs.ExchangeDisconnected,
			"Binance refused the API key (%s); check the key, its secret, its permissions and IP allow-list", f.msg).
			WithDetails(details)
	case f.rateLimited():
		e := errs.Wrap(f, errs.RateLimited, "Binance rate limit reached (%s); retry after %s", orStatus(f), f.retryAfter).
			WithDetails(details)
		e.RetryAfter = f.retryAfter
		return e
	case f.code == codeTimestamp:
		return errs.Wrap(f, errs.ExchangeError, "Binance refused the request's timestamp (%s): the clock is off by more than the recvWindow", f.msg).
			WithDetails(details)
	}
	code := classifyCode(f.code, f.msg)
	msg := fmt.Sprintf("Binance rejected the %s: %s", what, orStatus(f))
	if code == errs.PositionNotFound {
		msg = fmt.Sprintf("Binance rejected the reduce-only %s: no position to reduce in that direction (%s)", what, f.msg)
	}
	return errs.Wrap(f, code, "%s", msg).WithDetails(details)
}

func orStatus(f *failure) string {
	if f.msg != "" {
		return f.msg
	}
	return fmt.Sprintf("HTTP %d", f.status)
}

// classifyCode is the spec code of a Binance rejection.
func classifyCode(code int64, msg string) errs.Code {
	low := strings.ToLower(msg)
	if m := filterRE.FindStringSubmatch(msg); m != nil {
		switch {
		case amountFilters[m[1]]:
			return errs.InvalidAmount
		case priceFilters[m[1]]:
			return errs.InvalidPrice
		}
		return errs.ExchangeError
	}
	switch {
	case insufficientCodes[code], code == codeNewOrderRejected && strings.Contains(low, "insufficient balance"):
		return errs.InsufficientBalance
	case code == codePrecision:
		// Spot names the parameter ("Parameter 'price' has too much precision."); futures
		// does not ("Precision is over the maximum defined for this asset.").
		if strings.Contains(low, "price") {
			return errs.InvalidPrice
		}
		return errs.InvalidAmount
	case amountCodes[code]:
		return errs.InvalidAmount
	case priceCodes[code]:
		return errs.InvalidPrice
	case code == codeBadSymbol || code == codeSymbolStatus:
		return errs.InvalidSymbol
	case code == -2022: // REDUCE_ONLY_REJECT
		return errs.PositionNotFound
	case strings.Contains(low, "would trigger immediately"): // spot -2010 for a crossed stop
		return errs.InvalidPrice
	}
	return errs.ExchangeError
}

// modeChanged is the refusal of an order sent for a position mode the account no longer has
// (modeMismatch): EXCHANGE_ERROR, with Binance's code and message kept.
func modeChanged(f *failure, sentFor exchange.PositionMode) *errs.Error {
	return errs.Wrap(f, errs.ExchangeError,
		"Binance rejected the order: the account's position mode changed (the order was built for %s mode; %s); the mode is read again for the next order",
		sentFor, f.msg).WithDetails(map[string]any{"binanceCode": f.code})
}

// unreachable is the typed error of a read that got no answer: EXCHANGE_ERROR, and
// errors.Is(err, exchange.ErrUnreachable).
func unreachable(f *failure, what string) error {
	return errs.Wrap(fmt.Errorf("%w: %w", exchange.ErrUnreachable, f), errs.ExchangeError,
		"Binance did not answer the %s request in time; retry later", what)
}

// readError maps the failure of a call that changes nothing.
func readError(f *failure, what string) error {
	if f.noAnswer {
		return unreachable(f, what)
	}
	return typed(f, what)
}

// outcomeUnknown is the error of an order call whose effect is unknown (no answer, and
// Binance could not yet prove the order absent). It is deliberately not an *errs.Error:
// the executor records a typed error as the exchange's rejection, and this is not one;
// an untyped error makes it retry later, and the retry looks the order up first.
func outcomeUnknown(cid string, f error) error {
	return fmt.Errorf("binance: order %s: outcome unknown, look it up again later: %w: %w", cid, exchange.ErrUnreachable, f)
}
