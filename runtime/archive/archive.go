// Package archive copies trading history from Redis to PostgreSQL. Every script that
// commits a fact (a trade, a version of an order record, a signal's result) appends it, in
// the same script, to its partition's archive stream (store.Archive); the archiver reads
// each stream from where PostgreSQL says it stopped, writes the rows and its new position in
// one transaction, and only then trims the stream up to that position. So:
//
//   - a fact is in PostgreSQL at least once: a crash before the commit leaves the stream and
//     the position as they were, and the next run reads the same entries again;
//   - never twice: every row has its natural key (a trade's ID, a bot's client order ID, a
//     signal ID), and a second copy of an entry writes what the first wrote;
//   - the stream holds only what PostgreSQL has not committed, so Redis carries the
//     archive's backlog and nothing more (bounded while PostgreSQL is down by the intake's
//     memory watermark, and measured by the backlog metrics).
//
// The archiver is a role of the executor: it archives the partitions whose queue lease the
// executor holds, the ones it writes, so replicas share the work without coordinating. Two
// archivers on one partition (a lease changing hands) write the same rows.
package archive

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/bookstate"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/store"
)

const (
	// DefaultBatch is how many entries of one stream a step copies at most.
	DefaultBatch = 1000
	// DefaultInterval is the pause between steps that found nothing to copy.
	DefaultInterval = 200 * time.Millisecond
	// maxBackoff bounds the pause after a failed step (PostgreSQL down).
	maxBackoff = 5 * time.Second
	// stepTimeout bounds one step: a database that accepts connections and never answers
	// (a frozen server, a partition) fails the step instead of stalling the archive.
	stepTimeout = 30 * time.Second
)

// Ownership says which queue partitions this executor holds; queue.Consumer implements it.
type Ownership interface {
	Owned() []int
}

// Options configure an Archiver.
type Options struct {
	Redis redis.UniversalClient
	DB    *pgxpool.Pool
	// Owner gives the partitions to archive; nil archives all of them (a test, a one-off
	// drain with queuectl).
	Owner Ownership
	// Batch (DefaultBatch) and Interval (DefaultInterval).
	Batch    int
	Interval time.Duration
	Now      func() time.Time
	Logger   *slog.Logger
	// Migrate, when set, prepares the schema before the first step, waiting for
	// PostgreSQL to answer (database.MigrateWhenUp).
	Migrate func(context.Context, *pgxpool.Pool, *slog.Logger) error
}

// Archiver copies archive streams to PostgreSQL. See the package comment.
type Archiver struct {
	o Options
	// done is, per partition, the last entry PostgreSQL has committed, as read from
	// archive_progress or written by this archiver.
	done map[int]entryID
	// paperDone is the same for the paper accounts' streams, by account ID; swept is when
	// the last step copied every listed account's stream (paper.go).
	paperDone map[string]entryID
	swept     time.Time
	// held are the partitions whose last trim stopped at notifyd's position, short of
	// done: an idle step trims them again once notifyd has read on (heldBack).
	held map[int]bool
	m    *metrics
}

// New builds an Archiver; its metrics are in Collectors.
func New(o Options) *Archiver {
	if o.Batch <= 0 {
		o.Batch = DefaultBatch
	}
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	return &Archiver{o: o, done: map[int]entryID{}, paperDone: map[string]entryID{}, held: map[int]bool{}, m: newMetrics()}
}

// Disabled is an archiver that copies nothing (no database configured): Run waits for the
// end, and the metrics stay at zero.
func Disabled() *Archiver { return &Archiver{m: newMetrics()} }

// Run copies until ctx ends. A failed step (PostgreSQL or Redis unreachable) is logged,
// counted and tried again after a growing pause; it never stops the executor.
func (a *Archiver) Run(ctx context.Context) error {
	if a.o.DB == nil {
		<-ctx.Done()
		return nil
	}
	if a.o.Migrate != nil {
		if err := a.o.Migrate(ctx, a.o.DB, a.o.Logger); err != nil {
			return nil // ctx ended first
		}
	}
	backoff := a.o.Interval
	for {
		sctx, cancel := context.WithTimeout(ctx, stepTimeout)
		n, full, err := a.Step(sctx)
		cancel()
		wait := a.o.Interval
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			a.m.failures.Inc()
			a.o.Logger.Warn("archive: copy to PostgreSQL failed; the stream keeps the entries", "error", err, "retryIn", backoff)
			wait, backoff = backoff, min(2*backoff, maxBackoff)
			// The cached positions may be ahead of a database restored from a backup.
			a.done, a.paperDone = map[int]entryID{}, map[string]entryID{}
		case full:
			wait, backoff = 0, a.o.Interval
		case n > 0:
			backoff = a.o.Interval
		}
		if wait == 0 {
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
	}
}

// Step copies what the owned streams hold past PostgreSQL's position, at most Batch entries
// of each, and trims them. It returns how many entries it copied and whether a stream had
// more than a batch.
func (a *Archiver) Step(ctx context.Context) (copied int, full bool, err error) {
	parts := a.partitions()
	if len(parts) == 0 {
		a.m.backlog.Set(0)
		a.m.lag.Set(0)
		return 0, false, nil
	}
	if err := a.loadProgress(ctx, parts); err != nil {
		return 0, false, err
	}
	msgs, backlog, err := a.read(ctx, parts)
	if err != nil {
		return 0, false, err
	}
	c, err := a.plan(parts, msgs)
	if err != nil {
		return 0, false, err
	}
	accounts, err := a.paperAccounts(ctx, parts, msgs)
	if err != nil {
		return 0, false, err
	}
	if err := a.planPaper(ctx, accounts, &c); err != nil {
		return 0, false, err
	}
	a.m.backlog.Set(float64(backlog))
	if c.copied == 0 {
		a.m.lag.Set(0)
		return 0, false, a.heldBack(ctx)
	}
	a.m.lag.Set(max(0, a.o.Now().Sub(c.oldest).Seconds()))
	if err := commit(ctx, a.o.DB, c.batch); err != nil {
		return 0, false, fmt.Errorf("archive: write to PostgreSQL: %w", err)
	}
	for kind, n := range c.rows {
		a.m.rows.WithLabelValues(kind).Add(n)
	}
	if err := a.trim(ctx, c.last, c.paperLast); err != nil {
		return c.copied, c.full, err
	}
	a.m.backlog.Set(float64(max(0, backlog-int64(c.copied))))
	a.m.lag.Set(0)
	return c.copied, c.full, nil
}

// read reads, for each of parts, at most Batch entries after PostgreSQL's position, and the
// streams' lengths summed (the backlog).
//
// Only what the replicas hold is copied: an entry read from a master that then fails over
// before replicating it would be a fact the system lost but the archive kept. The fence
// write after the reads, with the WAIT that AckPipelined adds on the same connection,
// covers every entry written before it (with --redis-min-replicas-ack).
func (a *Archiver) read(ctx context.Context, parts []int) ([][]redis.XMessage, int64, error) {
	reads := make([]*redis.XMessageSliceCmd, len(parts))
	lens := make([]*redis.IntCmd, len(parts))
	if _, err := store.AckPipelined(ctx, a.o.Redis, func(p redis.Pipeliner) error {
		for i, part := range parts {
			key := store.Archive(part)
			reads[i] = p.XRangeN(ctx, key, "("+a.done[part].String(), "+", int64(a.o.Batch))
			lens[i] = p.XLen(ctx, key)
		}
		p.Set(ctx, store.ArchiveFence(), "1", time.Second)
		return nil
	}); err != nil {
		return nil, 0, fmt.Errorf("archive: read the streams: %w", err)
	}
	msgs := make([][]redis.XMessage, len(parts))
	var backlog int64
	for i := range parts {
		msgs[i], backlog = reads[i].Val(), backlog+lens[i].Val()
	}
	return msgs, backlog, nil
}

// copyPlan is one step's copy: the rows and new positions to commit together, and what the
// metrics need of it.
type copyPlan struct {
	batch *pgx.Batch
	// last is each copied stream's new position; paperLast each paper account's.
	last      map[int]entryID
	paperLast map[string]entryID
	// rows counts the entries by kind; copied is their total, full whether a stream had
	// more than a batch, oldest the time of the oldest entry.
	rows   map[string]float64
	copied int
	full   bool
	oldest time.Time
}

// plan turns the entries read from each of parts into rows and positions.
func (a *Archiver) plan(parts []int, msgs [][]redis.XMessage) (copyPlan, error) {
	c := copyPlan{batch: &pgx.Batch{}, last: map[int]entryID{}, paperLast: map[string]entryID{}, rows: map[string]float64{}}
	for i, part := range parts {
		if len(msgs[i]) == 0 {
			continue
		}
		c.full = c.full || len(msgs[i]) == a.o.Batch
		for _, msg := range msgs[i] {
			kind, err := queueRow(c.batch, msg)
			if err != nil {
				// An entry this version cannot read is kept in the stream (never trimmed
				// past) and reported: copying around it would lose it.
				return copyPlan{}, fmt.Errorf("archive: entry %s of %s: %w", msg.ID, store.Archive(part), err)
			}
			c.rows[kind]++
		}
		id, err := parseID(msgs[i][len(msgs[i])-1].ID)
		if err != nil {
			return copyPlan{}, err
		}
		first, _ := parseID(msgs[i][0].ID)
		if t := time.UnixMilli(first.ms); c.oldest.IsZero() || t.Before(c.oldest) {
			c.oldest = t
		}
		c.last[part] = id
		c.copied += len(msgs[i])
		queueProgress(c.batch, store.Archive(part), id)
	}
	return c, nil
}

// trim records the committed positions and trims each stream up to its own, or up to
// notifyd's when notifyd is reading and behind (notifyHold). A failure leaves entries that
// the next step skips (they are before the position) and trims.
func (a *Archiver) trim(ctx context.Context, last map[int]entryID, paperLast map[string]entryID) error {
	hold, err := a.notifyHold(ctx, last)
	if err != nil {
		return err
	}
	if _, err := a.o.Redis.Pipelined(ctx, func(p redis.Pipeliner) error {
		for part, id := range last {
			a.done[part] = id
			upTo := id.next()
			a.held[part] = false
			if h, ok := hold[store.Archive(part)]; ok && h.next().before(upTo) {
				upTo, a.held[part] = h.next(), true
			}
			p.XTrimMinID(ctx, store.Archive(part), upTo.String())
		}
		for acct, id := range paperLast {
			a.paperDone[acct] = id
			p.XTrimMinID(ctx, store.PaperArchive(acct), id.next().String())
		}
		return nil
	}); err != nil {
		return fmt.Errorf("archive: trim the streams: %w", err)
	}
	return nil
}

// commit sends a batch of rows in one transaction: all of it is written, or none.
func commit(ctx context.Context, db *pgxpool.Pool, b *pgx.Batch) error {
	if b.Len() == 0 {
		return nil
	}
	return pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error { return tx.SendBatch(ctx, b).Close() })
}

// partitions are the partitions to archive now.
func (a *Archiver) partitions() []int {
	if a.o.Owner != nil {
		return a.o.Owner.Owned()
	}
	all := make([]int, store.Partitions)
	for i := range all {
		all[i] = i
	}
	return all
}

// loadProgress reads PostgreSQL's position of every partition not cached yet.
func (a *Archiver) loadProgress(ctx context.Context, parts []int) error {
	byKey := map[string]int{}
	var keys []string
	for _, p := range parts {
		if _, ok := a.done[p]; !ok {
			byKey[store.Archive(p)] = p
			keys = append(keys, store.Archive(p))
		}
	}
	got, err := readProgress(ctx, a.o.DB, keys)
	if err != nil {
		return err
	}
	for key, p := range byKey {
		a.done[p] = got[key]
	}
	return nil
}

// readProgress reads PostgreSQL's positions of streams (one absent has copied nothing yet).
func readProgress(ctx context.Context, db *pgxpool.Pool, streams []string) (map[string]entryID, error) {
	if len(streams) == 0 {
		return map[string]entryID{}, nil
	}
	out, err := positions(ctx, db, `SELECT stream, last_ms, last_seq FROM archive_progress WHERE stream = ANY($1)`, streams)
	if err != nil {
		return nil, fmt.Errorf("archive: read the position: %w", err)
	}
	return out, nil
}

// positions runs sql, which selects a stream and an entry ID's two numbers per row.
func positions(ctx context.Context, db *pgxpool.Pool, sql string, args ...any) (map[string]entryID, error) {
	out := map[string]entryID{}
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var key string
		var id entryID
		if err := rows.Scan(&key, &id.ms, &id.seq); err != nil {
			return nil, err
		}
		out[key] = id
	}
	return out, rows.Err()
}

// queueRow adds the write of one entry's fact to batch and returns its kind.
func queueRow(b *pgx.Batch, msg redis.XMessage) (string, error) {
	kind, _ := msg.Values["k"].(string)
	v, _ := msg.Values["v"].(string)
	switch kind {
	case store.ArchiveTrade:
		t, err := position.DecodeTrade(v)
		if err != nil {
			return "", err
		}
		queueTrade(b, t)
	case store.ArchiveOrder:
		r, err := position.DecodeOrder(v)
		if err != nil {
			return "", err
		}
		queueOrder(b, r)
	case store.ArchiveResult:
		var r result.Result
		if err := json.Unmarshal([]byte(v), &r); err != nil {
			return "", err
		}
		member, _ := msg.Values["s"].(string)
		at, _ := msg.Values["at"].(string)
		if err := queueResult(b, r, v, member, at); err != nil {
			return "", err
		}
	case store.ArchiveState:
		f, err := bookstate.Decode(v)
		if err != nil {
			return "", err
		}
		ms, seq, ok := store.SplitStreamID(msg.ID)
		if !ok {
			return "", errors.New("bad stream entry ID " + msg.ID)
		}
		bookstate.QueueFact(b, f, ms, seq)
	case store.ArchivePurge:
		if v == "" {
			return "", errors.New("a purge without its bot")
		}
		bookstate.QueuePurge(b, v)
	case store.ArchivePaperGone:
		if v == "" {
			return "", errors.New("a deleted paper account without its ID")
		}
		paper.QueueForget(b, v)
	case store.ArchivePause, store.ArchiveResume, store.ArchiveUserFact:
		// facts to tell a user (notifyd reads them); the record keeps no row of them
	case store.ArchiveAudit:
		var e audit.Archived
		if err := json.Unmarshal([]byte(v), &e); err != nil {
			return "", err
		}
		if err := queueAudit(b, e); err != nil {
			return "", err
		}
	default:
		return "", fmt.Errorf("unknown kind %q", kind)
	}
	return kind, nil
}

// entryID is a stream entry ID: milliseconds and a sequence number.
type entryID struct{ ms, seq int64 }

func parseID(s string) (entryID, error) {
	ms, seq, ok := store.SplitStreamID(s)
	if !ok {
		return entryID{}, errors.New("archive: bad stream entry ID " + s)
	}
	return entryID{ms, seq}, nil
}

func (id entryID) String() string {
	return strconv.FormatInt(id.ms, 10) + "-" + strconv.FormatInt(id.seq, 10)
}

// next is the smallest ID after id: XTRIM MINID keeps it and everything after.
func (id entryID) next() entryID { return entryID{id.ms, id.seq + 1} }

func (id entryID) before(o entryID) bool { return id.ms < o.ms || id.ms == o.ms && id.seq < o.seq }

// heldBack trims again, on a step that copied nothing, the streams whose last trim
// stopped at notifyd's position: what notifyd has read since goes, without waiting for the
// partition's next fact.
func (a *Archiver) heldBack(ctx context.Context) error {
	last := map[int]entryID{}
	for part, held := range a.held {
		if held {
			last[part] = a.done[part]
		}
	}
	if len(last) == 0 {
		return nil
	}
	return a.trim(ctx, last, nil)
}

// NotifyFresh is how recently notifyd must have saved its position for the archiver to keep
// what it has not read: a notifyd stopped for longer no longer holds the streams, so that
// Redis never keeps more than this much history for it.
const NotifyFresh = 10 * time.Minute

// notifyHold is notifyd's position in the streams of last, where notifyd has saved one
// within NotifyFresh (runtime/notify/outbox keeps them in notify_progress): the archive
// stream carries the facts notifyd tells users, so it is trimmed no further.
func (a *Archiver) notifyHold(ctx context.Context, last map[int]entryID) (map[string]entryID, error) {
	streams := make([]string, 0, len(last))
	for part := range last {
		streams = append(streams, store.Archive(part))
	}
	out, err := positions(ctx, a.o.DB, `SELECT stream, last_ms, last_seq FROM notify_progress
		WHERE stream = ANY($1) AND updated_at > $2`, streams, a.o.Now().Add(-NotifyFresh))
	if err != nil {
		return nil, fmt.Errorf("archive: read notifyd's position: %w", err)
	}
	return out, nil
}

// Keeper writes facts straight to PostgreSQL, as the archiver would, for the retention
// compactor: a fact leaves Redis only after this write, whether or not its archive entry
// was copied yet (it may never have had one: history booked before the archive existed).
// The rows are the archiver's, so the two writes of one fact agree.
type Keeper struct {
	DB *pgxpool.Pool
}

// Trades writes trades.
func (k Keeper) Trades(ctx context.Context, trades []position.Trade) error {
	b := &pgx.Batch{}
	for _, t := range trades {
		queueTrade(b, t)
	}
	return commit(ctx, k.DB, b)
}

// Orders writes order records (a row newer than a record stays).
func (k Keeper) Orders(ctx context.Context, recs []position.OrderRecord) error {
	b := &pgx.Batch{}
	for _, r := range recs {
		queueOrder(b, r)
	}
	return commit(ctx, k.DB, b)
}

// WaitingResult is a signal's result still in the archive stream of its slot (not copied
// to PostgreSQL yet), for the executor's check of a late entry whose result left Redis
// while PostgreSQL was down.
func WaitingResult(ctx context.Context, rdb redis.UniversalClient, signalID string) (result.Stored, error) {
	var res result.Result
	_, ok, err := store.FindInStream(ctx, rdb, store.Archive(store.SignalPartition(signalID)), func(m redis.XMessage) bool {
		if k, _ := m.Values["k"].(string); k != store.ArchiveResult {
			return false
		}
		v, _ := m.Values["v"].(string)
		if !strings.Contains(v, signalID) {
			return false
		}
		var r result.Result
		if json.Unmarshal([]byte(v), &r) != nil || r.SignalID != signalID {
			return false
		}
		res = r
		return true
	})
	if err != nil || !ok {
		return result.Stored{}, err
	}
	return result.Stored{Result: res, Found: true}, nil
}
