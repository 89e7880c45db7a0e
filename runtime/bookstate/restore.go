package bookstate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/singleflight"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/risk"
	"github.com/sigops/sigops/runtime/store"
)

// restoringFor bounds a restore: a restorer that dies leaves its token to expire, and the
// next one starts over.
const restoringFor = 5 * time.Minute

// chunk is how many keys one pipeline of a restore writes.
const chunk = 500

// Each restore script writes only while the restore's token is still in place (a Redis
// lost again meanwhile is restored again, never marked half done) and only a key that is
// absent: the partition's commits are refused until the marker is written, so a key present
// was written by another restorer of the same rows.
var (
	// KEYS token, the position, the bot's set of open symbols, the partition's watch index;
	// ARGV token, then position.NewPositionWrite's arguments.
	restorePosition = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('SET', KEYS[2], ARGV[2])
redis.call('SADD', KEYS[3], ARGV[3])
if ARGV[5] ~= '' then redis.call('HSET', KEYS[4], ARGV[4], ARGV[5]) end
return 1
`)
	// KEYS token, a hash; ARGV token, then its field/value pairs.
	restoreHash = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
if redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
redis.call('HSET', KEYS[2], unpack(ARGV, 2))
return 1
`)
	// KEYS token, the risk counters; ARGV token, then store.VersionedHashArgs: written when
	// absent or older than the record (the projection may have written the SignalBot
	// status' copy back first, which the record may be ahead of or behind).
	restoreCounters = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
` + store.VersionedHashLua(2, 2) + `
return written
`)
	// KEYS token, marker; ARGV token.
	markRestored = redis.NewScript(`
if redis.call('GET', KEYS[1]) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[2], '1')
redis.call('DEL', KEYS[1])
return 1
`)
)

// Restorer puts partitions' book state back from PostgreSQL.
type Restorer struct {
	rdb redis.UniversalClient
	// db is nil without a database: a partition is then only marked (nothing to restore).
	db *pgxpool.Pool
	// papers restores the partition's paper accounts; waiting holds those whose hash the
	// PaperAccount controller has not written again yet, retried at each check (Run).
	papers  *paper.Records
	mu      sync.Mutex
	waiting map[string]bool
	m       *metrics
	// once joins this process's concurrent restores of one partition into one: the
	// signals of a partition's bots that find it lost at the same moment (a read of many
	// bots' entries runs them together) would otherwise each take the restore's token
	// from the one before, and could all lose it three times over.
	once singleflight.Group
}

// NewRestorer returns a Restorer on rdb from db (nil: none).
func NewRestorer(rdb redis.UniversalClient, db *pgxpool.Pool) *Restorer {
	return &Restorer{rdb: rdb, db: db, papers: paper.NewRecords(rdb, db), waiting: map[string]bool{}, m: newMetrics()}
}

// Partition restores partition part unless its marker is present, and returns how many
// bots it restored. Safe to run from several executors at once.
func (r *Restorer) Partition(ctx context.Context, part int) (int, error) {
	v, err, _ := r.once.Do(strconv.Itoa(part), func() (any, error) {
		// Not the first caller's context: its end must not fail the others' restore.
		return r.partition(context.WithoutCancel(ctx), part)
	})
	if err != nil {
		r.m.failures.Inc()
		return 0, err
	}
	return v.(int), nil
}

func (r *Restorer) partition(ctx context.Context, part int) (int, error) {
	marker, tokenKey := store.BookRestored(part), store.BookRestoring(part)
	for range 3 {
		if n, err := r.rdb.Exists(ctx, marker).Result(); err != nil || n == 1 {
			return 0, err
		}
		token := newToken()
		if err := r.rdb.Set(ctx, tokenKey, token, restoringFor).Err(); err != nil {
			return 0, err
		}
		bots, err := r.write(ctx, part, tokenKey, token)
		if err != nil {
			return 0, err
		}
		if err := r.restorePapers(ctx, part); err != nil {
			return 0, err
		}
		ok, err := markRestored.Run(ctx, r.rdb, []string{tokenKey, marker}, token).Int()
		if err != nil {
			return 0, err
		}
		if ok == 1 {
			r.m.partitions.Inc()
			r.m.bots.Add(float64(bots))
			return bots, nil
		}
		// The token is gone: Redis was lost again, or another restorer took over. Again.
	}
	return 0, fmt.Errorf("bookstate: partition %d: Redis kept losing the restore", part)
}

// write writes the partition's recorded state and returns how many bots it covered.
func (r *Restorer) write(ctx context.Context, part int, tokenKey, token string) (int, error) {
	if r.db == nil {
		return 0, nil
	}
	st, err := r.load(ctx, part)
	if err != nil {
		return 0, err
	}
	type write struct {
		script *redis.Script
		keys   []string
		args   []any
	}
	var writes []write
	for _, p := range st.positions {
		var pos position.Position
		if err := json.Unmarshal([]byte(p.text), &pos); err != nil {
			return 0, fmt.Errorf("bookstate: position %s %s: %w", p.bot, p.symbol, err)
		}
		w, err := position.NewPositionWrite(p.bot, p.symbol, &pos)
		if err != nil {
			return 0, err
		}
		writes = append(writes, write{restorePosition, append([]string{tokenKey}, w.Keys...), append([]any{token}, w.Args...)})
	}
	for bot, b := range st.bots {
		if len(b.days) > 0 || b.start != "" {
			fields, err := analytics.RestoredFields(bot, b.days, b.start)
			if err != nil {
				return 0, err
			}
			writes = append(writes, write{restoreHash, []string{tokenKey, store.BookDays(bot)}, append([]any{token}, fields...)})
		}
		if len(b.risk) > 0 {
			fields := make([]any, len(b.risk))
			var version int64
			for i, v := range b.risk {
				fields[i] = v
				if i%2 == 1 && b.risk[i-1] == risk.FieldTrades {
					version, _ = strconv.ParseInt(v, 10, 64)
				}
			}
			args := append([]any{token}, store.VersionedHashArgs(risk.FieldTrades, version, fields)...)
			writes = append(writes, write{restoreCounters, []string{tokenKey, store.RiskCounters(bot)}, args})
		}
	}
	for from := 0; from < len(writes); from += chunk {
		part := writes[from:min(from+chunk, len(writes))]
		if _, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for _, w := range part {
				w.script.Eval(ctx, p, w.keys, w.args...)
			}
			return nil
		}); err != nil {
			return 0, fmt.Errorf("bookstate: restore: %w", err)
		}
	}
	return len(st.bots), nil
}

// restorePapers restores the recorded paper accounts of partition part (by the account's
// ID). One whose hash is not back yet waits for the next check; a fill on it restores it
// too, whichever comes first.
func (r *Restorer) restorePapers(ctx context.Context, part int) error {
	ids, err := r.papers.Partition(ctx, part)
	if err != nil {
		return err
	}
	r.mu.Lock()
	for _, id := range ids {
		r.waiting[id] = true
	}
	r.mu.Unlock()
	return r.retryPapers(ctx)
}

// retryPapers restores the accounts waiting for their hash.
func (r *Restorer) retryPapers(ctx context.Context) error {
	r.mu.Lock()
	ids := make([]string, 0, len(r.waiting))
	for id := range r.waiting {
		ids = append(ids, id)
	}
	r.mu.Unlock()
	for _, id := range ids {
		err := r.papers.Account(ctx, id)
		if errors.Is(err, paper.ErrNotProjected) {
			continue
		}
		if err != nil {
			return err
		}
		r.m.papers.Inc()
		r.mu.Lock()
		delete(r.waiting, id)
		r.mu.Unlock()
	}
	return nil
}

// recorded is a partition's state as PostgreSQL holds it.
type recorded struct {
	positions []recordedPosition
	bots      map[string]*recordedBot
}

type recordedPosition struct{ bot, symbol, text string }

type recordedBot struct {
	days  map[string]string
	start string
	risk  []string
}

func (st *recorded) bot(id string) *recordedBot {
	b := st.bots[id]
	if b == nil {
		b = &recordedBot{days: map[string]string{}}
		st.bots[id] = b
	}
	return b
}

// load reads partition part's recorded state in one transaction (one snapshot).
func (r *Restorer) load(ctx context.Context, part int) (recorded, error) {
	st := recorded{bots: map[string]*recordedBot{}}
	tx, err := r.db.Begin(ctx)
	if err != nil {
		return st, err
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if _, err := tx.Exec(ctx, `SET TRANSACTION ISOLATION LEVEL REPEATABLE READ READ ONLY`); err != nil {
		return st, err
	}
	rows, err := tx.Query(ctx, `SELECT bot_id, symbol, position FROM book_positions WHERE part = $1 AND position IS NOT NULL`, part)
	if err != nil {
		return st, err
	}
	for rows.Next() {
		var p recordedPosition
		if err := rows.Scan(&p.bot, &p.symbol, &p.text); err != nil {
			rows.Close()
			return st, err
		}
		st.positions = append(st.positions, p)
		st.bot(p.bot)
	}
	if err := rows.Err(); err != nil {
		return st, err
	}
	rows, err = tx.Query(ctx, `SELECT bot_id, to_char(day, 'YYYY-MM-DD'), value FROM book_days WHERE part = $1`, part)
	if err != nil {
		return st, err
	}
	for rows.Next() {
		var bot, day, value string
		if err := rows.Scan(&bot, &day, &value); err != nil {
			rows.Close()
			return st, err
		}
		st.bot(bot).days[day] = value
	}
	if err := rows.Err(); err != nil {
		return st, err
	}
	rows, err = tx.Query(ctx, `SELECT bot_id, coalesce(start::text, ''), risk FROM book_bots WHERE part = $1`, part)
	if err != nil {
		return st, err
	}
	for rows.Next() {
		var bot, start string
		var risk []string
		if err := rows.Scan(&bot, &start, &risk); err != nil {
			rows.Close()
			return st, err
		}
		b := st.bot(bot)
		b.start, b.risk = start, risk
	}
	return st, rows.Err()
}

func newToken() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// DefaultCheckEvery is how often Run looks for lost partitions.
const DefaultCheckEvery = time.Second

// Run restores, every interval, each of the partitions owned returns that Redis lost, until
// ctx ends (one pipelined EXISTS per check when nothing was lost): reads (the read API, the
// dashboard, MCP) find a bot's book again within about a second of a loss, without waiting
// for its next signal, which would restore its partition itself.
func (r *Restorer) Run(ctx context.Context, owned func() []int, interval time.Duration, log *slog.Logger) error {
	if interval <= 0 {
		interval = DefaultCheckEvery
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		if err := r.check(ctx, owned(), log); err != nil && ctx.Err() == nil {
			log.Warn("book state: restoring a lost partition failed; retrying", "error", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// check restores those of parts whose marker is absent, and the paper accounts still
// waiting for their hash.
func (r *Restorer) check(ctx context.Context, parts []int, log *slog.Logger) error {
	if err := r.retryPapers(ctx); err != nil {
		return err
	}
	if len(parts) == 0 {
		return nil
	}
	cmds := make([]*redis.IntCmd, len(parts))
	if _, err := r.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, part := range parts {
			cmds[i] = p.Exists(ctx, store.BookRestored(part))
		}
		return nil
	}); err != nil {
		return err
	}
	for i, part := range parts {
		if cmds[i].Val() == 1 {
			continue
		}
		n, err := r.Partition(ctx, part)
		if err != nil {
			return err
		}
		if n > 0 {
			log.Warn("Redis had lost a partition's book state; restored from PostgreSQL", "partition", part, "bots", n)
		}
	}
	return nil
}
