package executor

import (
	"context"
	"time"

	"github.com/sigops/sigops/runtime/archive"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/result"
)

// Late entries. With PostgreSQL, results and paper orders live in Redis only as long as
// the hot window (queue.SetResultTTL, paper.SetOrderTTL; at least 10 minutes), and the
// archive keeps them after. An entry is late when it is older than one of those lives: an
// earlier attempt of it (before an outage of every executor, or a dead letter replayed by
// hand) may have finished, or placed a paper order, whose Redis copy is gone. So:
//
//   - past the results' life, the entry's result is looked up in PostgreSQL first, then in
//     the archive stream that waits for PostgreSQL (down for longer than the life); found,
//     it is published again and nothing runs; PostgreSQL unreachable, the entry waits (an
//     error: retried), since running it could execute it twice;
//   - past the paper orders' life, the paper exchange looks each client order ID up in
//     PostgreSQL and in the account's archive stream too before it places anything under
//     it (paper.Recall).
//
// The age is counted from the intake's acceptance, before any attempt could store a result
// or place an order, less lateMargin for clocks that disagree: an entry younger than that
// finds in Redis whatever any attempt of it stored.

// lateMargin is how much sooner than the lives an entry is treated as late.
const lateMargin = time.Minute

// late answers, for an entry older than the results' life, its result as PostgreSQL holds
// it, and whether the entry is older than the paper orders' life. Without PostgreSQL (the
// lives are then the defaults) it answers nothing.
func (e *Executor) late(ctx context.Context, env queue.Envelope, now time.Time) (result.Stored, bool, error) {
	if e.archived == nil || env.ReceivedAt <= 0 {
		return result.Stored{}, false, nil
	}
	age := now.Sub(time.UnixMilli(env.ReceivedAt))
	if age > queue.ResultTTL()-lateMargin {
		stored, err := e.archived(ctx, env.SignalID)
		if err != nil || stored.Found {
			return stored, false, err
		}
		// Not copied yet: PostgreSQL was down for longer than the result's life in Redis.
		if stored, err = archive.WaitingResult(ctx, e.rdb, env.SignalID); err != nil || stored.Found {
			return stored, false, err
		}
	}
	return result.Stored{}, age > paper.OrderTTL()-lateMargin, nil
}
