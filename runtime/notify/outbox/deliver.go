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
}

// Deliverer sends due rows. One deliverer runs at a time (notifyd holds a lock): a
// burst's rows are gathered by reading what its channel was last sent.
type Deliverer struct {
	DB     *pgxpool.Pool
	Sender Sender
	// Window is the burst window (notify.DefaultWindow when zero).
	Window time.Duration
	// Batch is how many due rows a step reads (1000 when zero).
	Batch int
}

// maxGathered bounds the events of one message; the rest go in the burst's next message.
const maxGathered = 1000

type group struct {
	channel, burst string
	rows           []Row
}

// Step sends what is due at now: each burst's due rows as one message, unless its channel
// was sent a message of the same burst within the window (then they wait for its end).
func (d *Deliverer) Step(ctx context.Context, now time.Time) (Outcome, error) {
	groups, err := d.due(ctx, now)
	if err != nil {
		return Outcome{}, err
	}
	var out Outcome
	waiting := map[string]time.Time{} // channel → not before
	for _, g := range groups {
		if until, ok := waiting[g.channel]; ok && now.Before(until) {
			continue
		}
		if held, err := d.hold(ctx, g, now); err != nil || held {
			if err != nil {
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

// due reads the due bursts' rows, grouped by channel and burst, oldest group first.
func (d *Deliverer) due(ctx context.Context, now time.Time) ([]group, error) {
	n := d.Batch
	if n <= 0 {
		n = 1000
	}
	// A burst that has one row due goes with all its pending rows: after an outage, rows
	// queued at different times wait out different backoffs, and go together all the same.
	rows, err := d.DB.Query(ctx, `SELECT id, channel, user_id, event, attempts, created_at, state, sent_at, last_status, burst
		FROM notify_outbox WHERE state = 'pending' AND (channel, burst) IN (
			SELECT channel, burst FROM notify_outbox WHERE state = 'pending' AND next_at <= $1 ORDER BY id LIMIT $2)
		ORDER BY id LIMIT $3`, now, n, n*maxGathered/10)
	if err != nil {
		return nil, err
	}
	var bursts []string
	all, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Row, error) {
		row, burst, err := scanDue(r)
		bursts = append(bursts, burst)
		return row, err
	})
	if err != nil {
		return nil, err
	}
	index := map[[2]string]int{}
	var groups []group
	for i, r := range all {
		k := [2]string{r.Channel, bursts[i]}
		at, ok := index[k]
		if !ok {
			at = len(groups)
			index[k] = at
			groups = append(groups, group{channel: r.Channel, burst: bursts[i]})
		}
		if len(groups[at].rows) < maxGathered {
			groups[at].rows = append(groups[at].rows, r)
		}
	}
	return groups, nil
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

// hold makes g wait for the end of its burst's window when its channel was sent a message
// of the burst within it.
func (d *Deliverer) hold(ctx context.Context, g group, now time.Time) (bool, error) {
	if g.rows[0].Event.Kind.Urgent() {
		return false, nil
	}
	w := d.Window
	if w <= 0 {
		w = notify.DefaultWindow
	}
	var last *time.Time
	if err := d.DB.QueryRow(ctx, `SELECT max(sent_at) FROM notify_outbox WHERE channel = $1 AND burst = $2 AND state = 'sent'`,
		g.channel, g.burst).Scan(&last); err != nil {
		return false, err
	}
	if last == nil || !now.Before(last.Add(w)) {
		return false, nil
	}
	_, err := d.DB.Exec(ctx, `UPDATE notify_outbox SET next_at = $2 WHERE id = ANY($1) AND next_at < $2`, ids(g.rows), last.Add(w))
	return true, err
}

func ids(rows []Row) []int64 {
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r.ID
	}
	return out
}

// send sends g as one message and records the outcome on its rows.
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
		return d.mark(ctx, g.rows, now, status)
	}
	out.Failed += len(g.rows)
	next := now.Add(Backoff(g.rows[0].Attempts + 1))
	var wait *Wait
	if errors.As(err, &wait) {
		waiting[g.channel] = wait.Until
		if wait.Until.After(next) {
			next = wait.Until
		}
	}
	var expired []Row
	for _, r := range g.rows {
		if now.Sub(r.Created) >= MaxAge {
			expired = append(expired, r)
		}
	}
	out.Dropped = append(out.Dropped, expired...)
	_, dbErr := d.DB.Exec(ctx, `UPDATE notify_outbox SET attempts = attempts + 1, last_status = $3,
		state = CASE WHEN id = ANY($2) THEN 'dropped' ELSE state END,
		next_at = $4 WHERE id = ANY($1)`, ids(g.rows), ids(expired), err.Error(), next)
	return dbErr
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
