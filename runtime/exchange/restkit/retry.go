package restkit

import (
	"context"
	"time"

	"github.com/sigops/sigops/runtime/exchange"
)

// The bounds of a retried call, the same for both adapters: at most MaxAttempts, backoff
// doubling from BaseBackoff up to MaxBackoff (see Backoff).
const (
	MaxAttempts = 3
	BaseBackoff = 100 * time.Millisecond
	MaxBackoff  = 400 * time.Millisecond
)

// Backoff is the wait after attempt (0-based) failed.
func Backoff(attempt int) time.Duration { return min(BaseBackoff<<attempt, MaxBackoff) }

// Retry is how Attempts retries one call. What a venue counts as transient, and when it
// resends (a timestamp refused before the venue looked at the request), stay the adapter's.
type Retry struct {
	// Cap bounds each attempt, so that a hung attempt leaves time for another inside the
	// call's budget.
	Cap time.Duration
	// Transient reports a failure worth another attempt; nil: no failure is retried.
	Transient func(error) bool
	// Resend reports a failure after which the request is sent again at once, not counted
	// as an attempt (the adapter has resynchronised its clock); nil: none.
	Resend func(error) bool
}

// Attempts runs try until it succeeds, or its failure is neither resent nor transient, or
// MaxAttempts have failed, or ctx ends or would end during the next wait (the last
// failure is returned then). Both adapters' signed calls run through it, so a retry bound
// or backoff changes for both at once.
func Attempts[T any](ctx context.Context, p Retry, try func(context.Context) (T, error)) (T, error) {
	for attempt := 0; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, p.Cap)
		v, err := try(actx)
		cancel()
		if err == nil {
			return v, nil
		}
		if p.Resend != nil && p.Resend(err) {
			attempt--
			continue
		}
		if p.Transient == nil || !p.Transient(err) || attempt+1 >= MaxAttempts || ctx.Err() != nil {
			return v, err
		}
		if !exchange.Sleep(ctx, Backoff(attempt), 50*time.Millisecond) {
			return v, err
		}
	}
}
