package feed

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/notify"
	"github.com/sigops/sigops/runtime/notify/outbox"
	"github.com/sigops/sigops/runtime/store"
)

// DefaultBatch is how many entries of one stream a step reads at most.
const DefaultBatch = 500

// Router turns an event into the rows to queue: its user's channels that want it (none,
// when no one does).
type Router interface {
	Route(ctx context.Context, e notify.Event) ([]outbox.Row, error)
}

// Reader reads every partition's archive and dead-letter streams from its saved positions
// and queues the events they tell. One reader runs at a time (notifyd holds a lock).
type Reader struct {
	Redis  redis.UniversalClient
	DB     *pgxpool.Pool
	Router Router
	Batch  int

	// read is where the next step reads from in each stream; saved is what PostgreSQL
	// holds (behind read while a signal's trades wait for its result).
	read     map[string]string
	decoders map[string]*Decoder
	// beat is when the positions were last all saved (heartbeat).
	beat time.Time
}

// Heartbeat is how often the reader saves every stream's position, moved or not: the
// archiver holds a stream back only while notifyd's saved positions are fresh
// (archive.NotifyFresh), so an idle notifyd must still say it is reading, and a stream
// it has not read yet must have a position (the stream's start) to hold it at.
const Heartbeat = time.Minute

// Streams are the streams a reader reads.
func Streams() []string {
	out := make([]string, 0, 2*store.Partitions)
	for p := 0; p < store.Partitions; p++ {
		out = append(out, store.Archive(p), store.QueueDeadLetters(p))
	}
	return out
}

// Step reads what was appended since the last step, queues its events and saves the new
// positions in one transaction. It returns how many events it queued rows for.
func (r *Reader) Step(ctx context.Context, now time.Time) (int, error) {
	if r.read == nil {
		pos, err := outbox.Positions(ctx, r.DB, Streams())
		if err != nil {
			return 0, fmt.Errorf("feed: read the positions: %w", err)
		}
		r.read, r.decoders = pos, map[string]*Decoder{}
	}
	n := r.Batch
	if n <= 0 {
		n = DefaultBatch
	}
	streams := Streams()
	cmds := make([]*redis.XMessageSliceCmd, len(streams))
	if _, err := r.Redis.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, s := range streams {
			cmds[i] = p.XRangeN(ctx, s, "("+r.read[s], "+", int64(n))
		}
		return nil
	}); err != nil {
		return 0, fmt.Errorf("feed: read the streams: %w", err)
	}
	var rows []outbox.Row
	events := 0
	moved := map[string]string{}
	for i, s := range streams {
		msgs := cmds[i].Val()
		if len(msgs) == 0 {
			continue
		}
		for _, m := range msgs {
			e, ok := r.event(s, i, m)
			if !ok {
				continue
			}
			got, err := r.Router.Route(ctx, e)
			if err != nil {
				return 0, err
			}
			rows = append(rows, got...)
			events++
		}
		moved[s] = msgs[len(msgs)-1].ID
	}
	beat := now.Sub(r.beat) >= Heartbeat
	if len(moved) == 0 && !beat {
		return 0, nil
	}
	save := moved
	if beat {
		save = make(map[string]string, len(r.read))
		for s, id := range r.read {
			save[s] = id
		}
		for s, id := range moved {
			save[s] = id
		}
	}
	if err := outbox.Queue(ctx, r.DB, rows, r.saved(save), now); err != nil {
		return 0, fmt.Errorf("feed: queue: %w", err)
	}
	for s, id := range moved {
		r.read[s] = id
	}
	if beat {
		r.beat = now
	}
	return events, nil
}

// event decodes entry m of stream s (the i-th of Streams: even archive, odd dead letters).
func (r *Reader) event(s string, i int, m redis.XMessage) (notify.Event, bool) {
	if i%2 == 1 {
		return DeadLetter(m)
	}
	d := r.decoders[s]
	if d == nil {
		d = NewDecoder()
		r.decoders[s] = d
	}
	return d.Archive(m)
}

// saved are the positions to save: each stream's last read entry, or just before the
// earliest entry whose signal still waits for its result.
func (r *Reader) saved(moved map[string]string) map[string]string {
	out := make(map[string]string, len(moved))
	for s, id := range moved {
		out[s] = id
		if d := r.decoders[s]; d != nil {
			if p := d.Pending(); p != "" && Before(p, id) {
				out[s] = justBefore(p)
			}
		}
	}
	return out
}

// justBefore is the greatest entry ID before id.
func justBefore(id string) string {
	ms, seq, _ := store.SplitStreamID(id)
	if seq > 0 {
		return strconv.FormatInt(ms, 10) + "-" + strconv.FormatInt(seq-1, 10)
	}
	return strconv.FormatInt(ms-1, 10) + "-" + strconv.FormatUint(math.MaxUint64, 10)
}
