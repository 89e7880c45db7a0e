package restkit

import (
	"context"
	"errors"
	"fmt"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
)

// Unreachable is the typed error of a call to venue that got no answer (what names the
// call): EXCHANGE_ERROR whose chain holds exchange.ErrUnreachable, which the executor reads
// as "outcome unknown". Both adapters must say it the same way, as the executor and the
// operator's status tell the two cases (not reached, too slow) apart by it alone.
func Unreachable(venue, what string, err error) *errs.Error {
	msg := venue + " cannot be reached"
	if errors.Is(err, context.DeadlineExceeded) {
		msg = venue + " did not answer in time"
	}
	return errs.Wrap(fmt.Errorf("%w: %w", exchange.ErrUnreachable, err), errs.ExchangeError, "%s (%s)", msg, what)
}

// Shortfall completes an INSUFFICIENT_BALANCE refusal with the spec's details: the asset,
// and what is available and required when known (nil: unknown). source ends the message
// ("bybit retCode 110007"). How an adapter finds the asset and estimates the requirement is
// its own; the details and the message are the spec's, shared so that both venues report
// a short balance alike.
func Shortfall(e *errs.Error, asset string, required, available *decimal.Decimal, source string) {
	details := map[string]any{"asset": asset}
	if available != nil {
		details["available"] = *available
	}
	if required != nil {
		details["required"] = *required
	}
	e.Details = details
	switch {
	case required != nil && available != nil:
		e.Message = fmt.Sprintf("insufficient %s balance: %s required, %s available (%s)", asset, required, available, source)
	case available != nil:
		e.Message = fmt.Sprintf("insufficient %s balance: %s available (%s)", asset, available, source)
	}
}
