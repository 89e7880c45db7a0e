package archive

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/bookstate"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/store"
)

// Paper accounts' changes are on each account's own stream (in the account's slot, where
// the fill script writes), not on a partition's. A step copies the streams of the accounts
// that the state facts it copies name (a bot's position and the paper holdings it stands
// on are then committed in one transaction), and every sweepEvery the streams of every
// account of the partitions it holds (a refill, a fill whose booking never came). Their
// positions are kept in archive_progress by stream name, as the partitions' are.

// sweepEvery is how often a step also copies every listed account's stream.
const sweepEvery = time.Minute

// paperAccounts are the accounts whose streams this step copies: those the state facts
// among msgs name, and at a sweep those listed for parts.
func (a *Archiver) paperAccounts(ctx context.Context, parts []int, msgs [][]redis.XMessage) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	add := func(id string) {
		if id != "" && !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for _, ms := range msgs {
		for _, m := range ms {
			if k, _ := m.Values["k"].(string); k != store.ArchiveState {
				continue
			}
			v, _ := m.Values["v"].(string)
			if f, err := bookstate.Decode(v); err == nil {
				add(f.Account)
			}
		}
	}
	if now := a.o.Now(); now.Sub(a.swept) >= sweepEvery {
		sets := make([]*redis.StringSliceCmd, len(parts))
		if _, err := a.o.Redis.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, part := range parts {
				sets[i] = p.SMembers(ctx, store.PaperAccountsOf(part))
			}
			return nil
		}); err != nil {
			return nil, fmt.Errorf("archive: list the paper accounts: %w", err)
		}
		for _, s := range sets {
			for _, id := range s.Val() {
				add(id)
			}
		}
		a.swept = now
	}
	return out, nil
}

// planPaper reads the streams of accounts after PostgreSQL's positions, at most Batch
// entries of each, and adds their rows and new positions to c.
func (a *Archiver) planPaper(ctx context.Context, accounts []string, c *copyPlan) error {
	if len(accounts) == 0 {
		return nil
	}
	if err := a.loadPaperProgress(ctx, accounts); err != nil {
		return err
	}
	reads := make([]*redis.XMessageSliceCmd, len(accounts))
	// As for the partitions' streams: the fence's WAIT covers every entry read before it.
	if _, err := store.AckPipelined(ctx, a.o.Redis, func(p redis.Pipeliner) error {
		for i, id := range accounts {
			reads[i] = p.XRangeN(ctx, store.PaperArchive(id), "("+a.paperDone[id].String(), "+", int64(a.o.Batch))
		}
		p.Set(ctx, store.ArchiveFence(), "1", time.Second)
		return nil
	}); err != nil {
		return fmt.Errorf("archive: read the paper streams: %w", err)
	}
	for i, id := range accounts {
		msgs := reads[i].Val()
		if len(msgs) == 0 {
			continue
		}
		c.full = c.full || len(msgs) == a.o.Batch
		for _, m := range msgs {
			ch, err := paper.ChangeOf(id, m.Values)
			if err != nil {
				return fmt.Errorf("archive: entry %s of %s: %w", m.ID, store.PaperArchive(id), err)
			}
			paper.QueueChange(c.batch, ch)
			c.rows[store.ArchivePaper]++
		}
		last, err := parseID(msgs[len(msgs)-1].ID)
		if err != nil {
			return err
		}
		first, _ := parseID(msgs[0].ID)
		if t := time.UnixMilli(first.ms); c.oldest.IsZero() || t.Before(c.oldest) {
			c.oldest = t
		}
		c.paperLast[id] = last
		c.copied += len(msgs)
		queueProgress(c.batch, store.PaperArchive(id), last)
	}
	return nil
}

// loadPaperProgress reads PostgreSQL's position of every account stream not cached yet.
func (a *Archiver) loadPaperProgress(ctx context.Context, accounts []string) error {
	byKey := map[string]string{}
	var keys []string
	for _, id := range accounts {
		if _, ok := a.paperDone[id]; !ok {
			byKey[store.PaperArchive(id)] = id
			keys = append(keys, store.PaperArchive(id))
		}
	}
	got, err := readProgress(ctx, a.o.DB, keys)
	if err != nil {
		return err
	}
	for key, id := range byKey {
		a.paperDone[id] = got[key]
	}
	return nil
}

// queueProgress records stream's new position (never moved back).
func queueProgress(b *pgx.Batch, stream string, id entryID) {
	b.Queue(`INSERT INTO archive_progress (stream, last_ms, last_seq, updated_at) VALUES ($1, $2, $3, now())
		ON CONFLICT (stream) DO UPDATE SET last_ms = EXCLUDED.last_ms, last_seq = EXCLUDED.last_seq, updated_at = now()
		WHERE (archive_progress.last_ms, archive_progress.last_seq) < (EXCLUDED.last_ms, EXCLUDED.last_seq)`,
		stream, id.ms, id.seq)
}
