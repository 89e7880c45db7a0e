// Package keymigration carries the Redis data of a sigops installation whose keys carry no
// Redis Cluster hash tags over to the names runtime/store gives them, on the single Redis
// server that holds them: `queuectl migrate-keys` runs it during an upgrade, with the
// executors, webhookd and the manager stopped (docs/operations.md).
//
// Most families are renamed key by key (RENAMENX, so TTLs stay and a key the new version
// already wrote is never overwritten). Keys named by a signal ID alone (progress records,
// attempt counts) need the bot the signal was queued for: it is read from the entries still
// in the queue streams and the dead letters, the only signals whose progress can be read
// again; the others are left under their old names, where they expire. The price watcher's
// index and the dead-letter stream are split by partition. Last, a bot whose trades were
// booked before the per-day aggregates existed gets them built from its trade list
// (runtime/analytics), and every account's Strategy Lab balance moves from its user hash
// into its wallet (runtime/wallet; Wallets, which also runs alone on a Cluster), every
// paper account's orders hash is drained into per-order keys (PaperOrders, likewise), and
// every order record named with its bot takes the name without it (BookOrderNames,
// likewise).
// Running it again does nothing more: a key already carrying its tag is not of the old
// layout, aggregates that count every trade are left alone, a moved balance leaves no
// field and a drained orders hash is gone.
package keymigration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/store"
)

// Old names of the keys that are split rather than renamed.
const (
	oldWatch       = "sigops:watch"
	oldDeadLetters = "sigops:q:deadletter"
)

// Family is what the migration did (or, dry, would do) with one family of keys.
type Family struct {
	Name string
	// Moved: keys (or entries, for a split) given their new names.
	Moved int
	// Kept: old keys left in place, because the new name is taken (the new version wrote
	// it) or the key's bot is unknown (it expires under its old name).
	Kept int
}

// Report lists the families in the order they were migrated.
type Report []Family

// Moved is the number of keys (or entries) moved in every family.
func (r Report) Moved() int {
	n := 0
	for _, f := range r {
		n += f.Moved
	}
	return n
}

func (r Report) String() string {
	var b strings.Builder
	for _, f := range r {
		fmt.Fprintf(&b, "%-22s moved %6d  kept %6d\n", f.Name, f.Moved, f.Kept)
	}
	return b.String()
}

// ErrCluster: the migration runs on the single server that holds the old layout, before any
// move to a Redis Cluster (whose slots the old names would not respect anyway).
var ErrCluster = errors.New("keymigration: run it on the single Redis server that holds the data, not on a cluster")

// Run migrates every family; dry reports what it would do without writing anything.
func Run(ctx context.Context, c redis.UniversalClient, dry bool) (Report, error) {
	rdb, ok := c.(*redis.Client)
	if !ok {
		return nil, ErrCluster
	}
	m := &migration{rdb: rdb, dry: dry}
	bots, err := m.signalBots(ctx)
	if err != nil {
		return nil, err
	}
	var report Report
	add := func(f Family, err error) error {
		report = append(report, f)
		return err
	}
	if err := add(m.splitWatch(ctx)); err != nil {
		return report, err
	}
	if err := add(m.splitDeadLetters(ctx)); err != nil {
		return report, err
	}
	for _, f := range renames(bots) {
		if err := add(m.rename(ctx, f)); err != nil {
			return report, err
		}
	}
	if err := add(Wallets(ctx, rdb, dry)); err != nil {
		return report, err
	}
	if err := add(PaperOrders(ctx, rdb, dry)); err != nil {
		return report, err
	}
	if err := add(BookOrderNames(ctx, rdb, dry)); err != nil {
		return report, err
	}
	if err := add(m.tradeDays(ctx)); err != nil {
		return report, err
	}
	return report, nil
}

// tradeDays builds the per-day aggregates of every bot whose trades were booked before
// they were kept (analytics.Rebuild), after the books got their new names. A dry run,
// which renames nothing, counts the old layout's trade lists too: each would be renamed,
// then aggregated.
func (m *migration) tradeDays(ctx context.Context) (Family, error) {
	out := Family{Name: "trade days"}
	keys, err := m.scan(ctx, "sigops:book:*:trades")
	if err != nil {
		return out, err
	}
	for _, k := range keys {
		rest := strings.TrimSuffix(strings.TrimPrefix(k, "sigops:book:"), ":trades")
		if _, bot, tagged := strings.Cut(rest, "}:"); tagged {
			if k != store.BookTrades(bot) {
				continue // not a key of this layout
			}
			wrote, err := analytics.Rebuild(ctx, m.rdb, bot, m.dry)
			if err != nil {
				return out, err
			}
			if wrote {
				out.Moved++
			}
		} else if m.dry && !strings.Contains(rest, ":") && m.rdb.Exists(ctx, store.BookTrades(rest)).Val() == 0 {
			out.Moved++
		}
	}
	return out, nil
}

type migration struct {
	rdb *redis.Client
	dry bool
}

// renamed is a family renamed key by key: the keys named prefix + rest, and the new name of
// each from its rest (false: its bot is unknown). Keys with a hash tag have their new names
// already; keys whose rest starts with other belong to another family.
type renamed struct {
	name    string
	prefix  string
	other   string
	newName func(rest string) (string, bool)
}

// renames are the families renamed key by key; bots maps signal IDs to their bots.
func renames(bots map[string]string) []renamed {
	botAndHash := func(name func(bot, hash string) string) func(string) (string, bool) {
		return func(rest string) (string, bool) {
			i := strings.LastIndexByte(rest, ':')
			if i <= 0 {
				return "", false
			}
			return name(rest[:i], rest[i+1:]), true
		}
	}
	bySignal := func(name func(bot, signal string) string) func(string) (string, bool) {
		return func(signal string) (string, bool) {
			bot, ok := bots[signal]
			if !ok {
				return "", false
			}
			return name(bot, signal), true
		}
	}
	bySuffix := func(base func(string) string, suffixes map[string]func(string) string) func(string) (string, bool) {
		return func(rest string) (string, bool) {
			for suffix, name := range suffixes {
				if id, ok := strings.CutSuffix(rest, suffix); ok {
					return name(id), true
				}
			}
			return base(rest), true
		}
	}
	whole := func(name func(string) string) func(string) (string, bool) {
		return func(rest string) (string, bool) { return name(rest), true }
	}
	return []renamed{
		{name: "bots", prefix: "sigops:bot:", newName: whole(store.Bot)},
		{name: "rate limits", prefix: "sigops:rl:bot:", newName: whole(store.RateLimit)},
		{name: "idempotency keys", prefix: "sigops:idem:", newName: botAndHash(store.Idempotency)},
		{name: "dedupe records", prefix: "sigops:dedupe:", newName: botAndHash(store.Dedupe)},
		{name: "books", prefix: "sigops:book:", newName: bookKey},
		{name: "risk counters", prefix: "sigops:risk:", newName: whole(store.RiskCounters)},
		{name: "signal progress", prefix: "sigops:sig:", newName: bySignal(store.SignalProgress)},
		{name: "attempt counts", prefix: "sigops:q:attempts:", newName: bySignal(store.SignalAttempts)},
		{name: "paper accounts", prefix: "sigops:paper:", newName: bySuffix(store.PaperAccount,
			map[string]func(string) string{":orders": store.PaperOrders, ":pos": store.PaperPositions})},
		// The email index (sigops:user:email:...) keeps its name.
		{name: "users", prefix: "sigops:user:", other: "email:", newName: bySuffix(store.User,
			map[string]func(string) string{":sessions": store.UserSessions, ":oauth": store.UserAuthorizations})},
	}
}

// bookKey renames "<bot>:pos:<symbol>", "<bot>:positions", "<bot>:order:<clientId>",
// "<bot>:orders" and "<bot>:trades" (bot IDs hold no colon; symbols and client order IDs
// may).
func bookKey(rest string) (string, bool) {
	bot, tail, ok := strings.Cut(rest, ":")
	if !ok || bot == "" {
		return "", false
	}
	switch {
	case tail == "positions":
		return store.BookPositions(bot), true
	case tail == "orders":
		return store.BookOrders(bot), true
	case tail == "trades":
		return store.BookTrades(bot), true
	}
	if sym, ok := strings.CutPrefix(tail, "pos:"); ok {
		return store.BookPosition(bot, sym), true
	}
	if cid, ok := strings.CutPrefix(tail, "order:"); ok {
		return store.BookOrder(bot, cid), true
	}
	return "", false
}

// scanBatch is SCAN's COUNT and the size of a pipeline of renames.
const scanBatch = 1000

// rename moves every key of family f to its new name.
func (m *migration) rename(ctx context.Context, f renamed) (Family, error) {
	out := Family{Name: f.name}
	keys, err := m.scan(ctx, f.prefix+"*")
	if err != nil {
		return out, err
	}
	type move struct{ from, to string }
	var moves []move
	for _, k := range keys {
		rest := strings.TrimPrefix(k, f.prefix)
		if rest == "" || strings.Contains(k, "{") || (f.other != "" && strings.HasPrefix(rest, f.other)) {
			continue
		}
		if to, ok := f.newName(rest); ok {
			moves = append(moves, move{k, to})
		} else {
			out.Kept++ // its bot is unknown
		}
	}
	for len(moves) > 0 {
		batch := moves[:min(len(moves), scanBatch)]
		moves = moves[len(batch):]
		if m.dry {
			exists := make([]*redis.IntCmd, len(batch))
			if _, err := m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i, mv := range batch {
					exists[i] = p.Exists(ctx, mv.to)
				}
				return nil
			}); err != nil {
				return out, err
			}
			for _, e := range exists {
				if e.Val() == 0 {
					out.Moved++
				} else {
					out.Kept++
				}
			}
			continue
		}
		cmds := make([]*redis.BoolCmd, len(batch))
		// Each command's own error is read below (a key expired since the scan is fine).
		_, _ = m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, mv := range batch {
				cmds[i] = p.RenameNX(ctx, mv.from, mv.to)
			}
			return nil
		})
		for i, cmd := range cmds {
			ok, err := cmd.Result()
			switch {
			case store.IsNoSuchKey(err):
			case err != nil:
				return out, fmt.Errorf("rename %s to %s: %w", batch[i].from, batch[i].to, err)
			case ok:
				out.Moved++
			default:
				out.Kept++ // the new version wrote the new name already
			}
		}
	}
	return out, nil
}

// scan lists the keys matching pattern, sorted and without repeats.
func (m *migration) scan(ctx context.Context, pattern string) ([]string, error) {
	seen := map[string]bool{}
	var cursor uint64
	for {
		keys, next, err := m.rdb.Scan(ctx, cursor, pattern, scanBatch).Result()
		if err != nil {
			return nil, err
		}
		for _, k := range keys {
			seen[k] = true
		}
		if cursor = next; cursor == 0 {
			break
		}
	}
	out := make([]string, 0, len(seen))
	for k := range seen {
		out = append(out, k)
	}
	sort.Strings(out)
	return out, nil
}

// signalBots maps the signal IDs of the entries in the queue streams and the dead letters
// (old and new) to their bots.
func (m *migration) signalBots(ctx context.Context) (map[string]string, error) {
	bots := map[string]string{}
	streams := []string{oldDeadLetters}
	for p := range store.Partitions {
		for _, prio := range queue.Priorities {
			streams = append(streams, store.QueueStream(p, int(prio)))
		}
		streams = append(streams, store.QueueDeadLetters(p))
	}
	for _, s := range streams {
		err := m.eachEntry(ctx, s, func(msg redis.XMessage) error {
			if env, ok := msg.Values[queue.EnvelopeField].(string); ok {
				var e queue.Envelope
				if json.Unmarshal([]byte(env), &e) == nil && e.SignalID != "" && e.BotID != "" {
					bots[e.SignalID] = e.BotID
				}
				return nil
			}
			// A dead letter: its fields name the signal and the bot.
			sig, _ := msg.Values["signalId"].(string)
			bot, _ := msg.Values["botId"].(string)
			if sig != "" && bot != "" {
				bots[sig] = bot
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return bots, nil
}

// eachEntry calls fn for every entry of stream, oldest first.
func (m *migration) eachEntry(ctx context.Context, stream string, fn func(redis.XMessage) error) error {
	start := "-"
	for {
		msgs, err := m.rdb.XRangeN(ctx, stream, start, "+", scanBatch).Result()
		if err != nil {
			return err
		}
		for _, msg := range msgs {
			if err := fn(msg); err != nil {
				return err
			}
		}
		if len(msgs) < scanBatch {
			return nil
		}
		start = "(" + msgs[len(msgs)-1].ID
	}
}

// splitWatch moves the fields of the single watch index into their partitions' indexes and
// deletes it, in one transaction.
func (m *migration) splitWatch(ctx context.Context) (Family, error) {
	out := Family{Name: "watch index"}
	all, err := m.rdb.HGetAll(ctx, oldWatch).Result()
	if err != nil || len(all) == 0 {
		return out, err
	}
	parts := map[int][]any{}
	for field, v := range all {
		var w position.WatchItem
		if err := json.Unmarshal([]byte(v), &w); err != nil || w.BotID == "" {
			out.Kept++ // unreadable: the new watcher could not use it either
			continue
		}
		p := store.PartitionOf(w.BotID)
		parts[p] = append(parts[p], field, v)
		out.Moved++
	}
	if m.dry {
		return out, nil
	}
	_, err = m.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for part, fv := range parts {
			p.HSet(ctx, store.Watch(part), fv...)
		}
		p.Del(ctx, oldWatch)
		return nil
	})
	return out, err
}

// splitDeadLetters moves the single dead-letter stream's entries into their partitions'
// streams, keeping their entry IDs where the target stream is new (an operator's list keeps
// its order), and deletes it, in one transaction.
func (m *migration) splitDeadLetters(ctx context.Context) (Family, error) {
	out := Family{Name: "dead letters"}
	var entries []redis.XMessage
	if err := m.eachEntry(ctx, oldDeadLetters, func(msg redis.XMessage) error {
		entries = append(entries, msg)
		return nil
	}); err != nil || len(entries) == 0 {
		return out, err
	}
	targets := map[int]bool{}
	for _, e := range entries {
		targets[deadLetterPartition(e)] = true
	}
	fresh := map[int]*redis.IntCmd{}
	if _, err := m.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for part := range targets {
			fresh[part] = p.Exists(ctx, store.QueueDeadLetters(part))
		}
		return nil
	}); err != nil {
		return out, err
	}
	out.Moved = len(entries)
	if m.dry {
		return out, nil
	}
	_, err := m.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		for _, e := range entries {
			part := deadLetterPartition(e)
			id := "*"
			if fresh[part].Val() == 0 {
				id = e.ID
			}
			values := make([]any, 0, 2*len(e.Values))
			for k, v := range e.Values {
				values = append(values, k, v)
			}
			p.XAdd(ctx, &redis.XAddArgs{Stream: store.QueueDeadLetters(part), ID: id, Values: values})
		}
		p.Del(ctx, oldDeadLetters)
		return nil
	})
	return out, err
}

// deadLetterPartition is the partition a dead letter was recorded with (its bot's).
func deadLetterPartition(e redis.XMessage) int {
	if s, ok := e.Values["partition"].(string); ok {
		if p, err := strconv.Atoi(s); err == nil && p >= 0 && p < store.Partitions {
			return p
		}
	}
	bot, _ := e.Values["botId"].(string)
	return store.PartitionOf(bot)
}
