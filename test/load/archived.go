package load

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// WaitArchived waits, up to within, until the PostgreSQL at url holds exactly results
// signal results and orders order rows of the fleet's bots: what the executors committed,
// each once, after whatever a run broke (an executor, the archiver with it, killed
// mid-stream). It returns the counts it last saw when they never match.
func WaitArchived(ctx context.Context, url string, fleet *Fleet, results, orders int, within time.Duration) error {
	db, err := pgxpool.New(ctx, url)
	if err != nil {
		return err
	}
	defer db.Close()
	bots := make([]string, len(fleet.Bots))
	for i, b := range fleet.Bots {
		bots[i] = b.ID
	}
	deadline := time.Now().Add(within)
	for {
		var gotResults, gotOrders int
		err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM signal_results WHERE bot_id = ANY($1)),
			(SELECT count(*) FROM orders WHERE bot_id = ANY($1))`, bots).Scan(&gotResults, &gotOrders)
		if err == nil && gotResults == results && gotOrders == orders {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("archive: %d results and %d orders (%v); want %d and %d", gotResults, gotOrders, err, results, orders)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}
