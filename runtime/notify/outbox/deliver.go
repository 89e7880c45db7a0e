package outbox

import (
	"context"
	"encoding/json"
	"errors"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sigops/sigops/runtime/notify"
)

// Sender sends one message of a user's to a channel and returns the status to log.
// A *Wait error asks for no further message to the channel before its time.
type Sender interface {
	Send(ctx context.Context, user, channel string, m notify.Message) (status string, err error)
}

// Gone is a Sender's answer for a channel that no longer takes messages (a destination
// deleted or turned off, a chat unlinked): the rows are dropped with Status, not retried
// and not shown as sent.
type Gone struct{ Status string }

func (g *Gone) Error() string { return g.Status }

// Wait is a channel's refusal to take messages before Until (Telegram's 429 retry_after).
type Wait struct {
	Until time.Time
	Err   error
}

func (w *Wait) Error() string { return w.Err.Error() }

// Outcome is what a delivery step did, for metrics and the user's alerts.
type Outcome struct {
	Sent, Failed int
	// Dropped are the rows given up this step (older than MaxAge).
	Dropped []Row
	// Messages is how many messages were sent.
	Messages int
	// Discarded counts rows whose channel is gone (Gone).
	Discarded int
}

// Deliverer sends what is due. One deliverer runs at a time (notifyd holds a lock).
//
// Each burst (a channel's events of one bot and kind, or one urgent event) is a row of
// notify_bursts whose next_at says when it may go: at once for a new burst, at the end of
// the gathering window after a message, at the retry after a failure. So a step reads the
// due bursts by an index, and a channel that is down costs nothing while it waits,
// however many deliveries pile up behind it.
type Deliverer struct {
	DB     *pgxpool.Pool
	Sender Sender
	// Window is the burst window (notify.DefaultWindow when zero).
	Window time.Duration
	// Batch is how many due bursts a step reads (100 when zero).
	Batch int
}

// maxGathered bounds the events of one message; the rest go in the burst's next message.
const maxGathered = 1000

type group struct {
	channel, burst string
	seq            int64
	attempts       int
	rows           []Row
}

// Step sends every burst due at now as one message each.
func (d *Deliverer) Step(ctx context.Context, now time.Time) (Outcome, error) {
	groups, err := d.due(ctx, now)
	if err != nil {
		return Outcome{}, err
	}
	var out Outcome
	waiting := map[string]time.Time{} // channel → not before (a 429 this step)
	for _, g := range groups {
		if until, ok := waiting[g.channel]; ok && now.Before(until) {
			continue
		}
		if err := d.load(ctx, &g); err != nil {
			return out, err
		}
		if len(g.rows) == 0 {
			if err := d.settle(ctx, g, now, false); err != nil {
				return out, err
			}
			continue
		}
		if err := d.send(ctx, g, now, &out, waiting); err != nil {
			return out, err
		}
	}
	return out, nil
}

// due are the bursts with pending deliveries whose time has come, soonest first.
func (d *Deliverer) due(ctx context.Context, now time.Time) ([]group, error) {
	n := d.Batch
	if n <= 0 {
		n = 100
	}
	rows, err := d.DB.Query(ctx, `SELECT channel, burst, seq, attempts FROM notify_bursts
		WHERE has_pending AND next_at <= $1 ORDER BY next_at LIMIT $2`, now, n)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (group, error) {
		var g group
		return g, r.Scan(&g.channel, &g.burst, &g.seq, &g.attempts)
	})
}

// load reads g's pending deliveries, oldest first, at most maxGathered.
func (d *Deliverer) load(ctx context.Context, g *group) error {
	rows, err := d.DB.Query(ctx, `SELECT id, channel, user_id, event, attempts, created_at, state, sent_at, last_status, burst
		FROM notify_outbox WHERE channel = $1 AND burst = $2 AND state = 'pending' ORDER BY id LIMIT $3`, g.channel, g.burst, maxGathered)
	if err != nil {
		return err
	}
	g.rows, err = pgx.CollectRows(rows, scanRow)
	return err
}

func scanDue(r pgx.CollectableRow) (Row, string, error) {
	var row Row
	var ev []byte
	var burst string
	if err := r.Scan(&row.ID, &row.Channel, &row.User, &ev, &row.Attempts, &row.Created, &row.State, &row.SentAt, &row.Status, &burst); err != nil {
		return row, "", err
	}
	row.Event.User = row.User
	return row, burst, json.Unmarshal(ev, &row.Event)
}

func ids(rows []Row) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

// send sends g as one message and records the outcome on its rows and its burst.
func (d *Deliverer) send(ctx context.Context, g group, now time.Time, out *Outcome, waiting map[string]time.Time) error {
	m := notify.Message{Events: make([]notify.Event, len(g.rows))}
	for i, r := range g.rows {
		m.Events[i] = r.Event
	}
	sort.SliceStable(m.Events, func(i, j int) bool { return m.Events[i].At.Before(m.Events[j].At) })
	status, err := d.Sender.Send(ctx, g.rows[0].User, g.channel, m)
	if err == nil {
		out.Sent += len(g.rows)
		out.Messages++
		if err := d.mark(ctx, g.rows, now, status); err != nil {
			return err
		}
		if err := d.settle(ctx, g, now, len(g.rows) == maxGathered); err != nil {
			return err
		}
		return d.recovered(ctx, g, now)
	}
	var gone *Gone
	if errors.As(err, &gone) {
		out.Discarded += len(g.rows)
		if _, err := d.DB.Exec(ctx, `UPDATE notify_outbox SET state = 'dropped', last_status = $2 WHERE id = ANY($1)`,
			ids(g.rows), gone.Status); err != nil {
			return err
		}
		return d.settle(ctx, g, now, len(g.rows) == maxGathered)
	}
	out.Failed += len(g.rows)
	next := now.Add(Backoff(g.attempts + 1))
	var wait *Wait
	if errors.As(err, &wait) {
		waiting[g.channel] = wait.Until
		next = later(next, wait.Until)
	}
	var expired []Row
	for _, r := range g.rows {
		if now.Sub(r.Created) >= MaxAge {
			expired = append(expired, r)
		}
	}
	out.Dropped = append(out.Dropped, expired...)
	return pgx.BeginFunc(ctx, d.DB, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `UPDATE notify_outbox SET attempts = attempts + 1, last_status = $3,
			state = CASE WHEN id = ANY($2) THEN 'dropped' ELSE state END WHERE id = ANY($1)`, ids(g.rows), ids(expired), err.Error()); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `UPDATE notify_bursts SET attempts = attempts + 1, next_at = $3 WHERE channel = $1 AND burst = $2`,
			g.channel, g.burst, next)
		return err
	})
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// settle records that g's message went at now (sent) or that it had nothing left: its
// next message waits for the window's end, and it has nothing pending unless a delivery
// was queued since it was read (seq moved) or more wait than one message took (more).
func (d *Deliverer) settle(ctx context.Context, g group, now time.Time, more bool) error {
	w := d.Window
	if w <= 0 {
		w = notify.DefaultWindow
	}
	next := now.Add(w) // written only when a message went; otherwise the last one's stays
	_, err := d.DB.Exec(ctx, `UPDATE notify_bursts SET attempts = 0,
		next_at = CASE WHEN $4 THEN $3 ELSE next_at END,
		last_sent_at = CASE WHEN $4 THEN $5 ELSE last_sent_at END,
		has_pending = CASE WHEN seq = $6 AND NOT $7 THEN false ELSE true END
		WHERE channel = $1 AND burst = $2`, g.channel, g.burst, next, len(g.rows) > 0, now, g.seq, more)
	return err
}

// recovered brings forward the retries of the channel's other bursts once a message to it
// went through: they failed with it (Telegram's API, one destination), so they need not
// wait out their backoff, up to 10 minutes, now that it answers again. A burst that had not
// failed keeps its gathering window.
func (d *Deliverer) recovered(ctx context.Context, g group, now time.Time) error {
	if g.attempts == 0 {
		return nil
	}
	_, err := d.DB.Exec(ctx, `UPDATE notify_bursts SET next_at = $2 WHERE channel = $1 AND has_pending AND attempts > 0 AND next_at > $2`,
		g.channel, now)
	return err
}

// mark records rows sent at now: the first carries the message, the rest were gathered.
func (d *Deliverer) mark(ctx context.Context, rows []Row, now time.Time, status string) error {
	_, err := d.DB.Exec(ctx, `UPDATE notify_outbox SET attempts = attempts + 1, sent_at = $3, last_status = $4,
		state = CASE WHEN id = $2 THEN 'sent' ELSE 'merged' END WHERE id = ANY($1)`, ids(rows), rows[0].ID, now, status)
	return err
}

// Backoff is the wait before attempt n+1 of a message: 5 s doubling to 10 minutes, so a
// channel down for a day is tried about 150 times.
func Backoff(n int) time.Duration {
	d := 5 * time.Second
	for i := 1; i < n && d < 10*time.Minute; i++ {
		d *= 2
	}
	return min(d, 10*time.Minute)
}
