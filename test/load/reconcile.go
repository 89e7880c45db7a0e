package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// batch is how many commands one pipelined round trip carries.
const batch = 2000

// Checker reconciles what a load run was told with what the pipeline stored: every
// accepted signal must get exactly one result, and at most one order. It remembers every
// signal accepted since it was made, so that it can tell results and orders nobody was
// told about from earlier scenarios' own.
type Checker struct {
	rdb redis.UniversalClient
	// db, when set, is the archive's PostgreSQL: the book's orders that left Redis with the
	// hot window are read there (WithArchive).
	db    *pgxpool.Pool
	fleet *Fleet
	bots  map[string]int // bot ID -> index in fleet
	// since is when the checker was made: older results and orders of the fleet's bots
	// belong to earlier runs (hack/loadgen on a long-lived stack).
	since    time.Time
	accepted map[string]struct{}
	// orderSig caches client order ID -> signal ID of order records already read (a
	// record's signal never changes).
	orderSig map[string]orderInfo
	// placed is each signal's order's place in its bot's book (0: the bot's oldest listed
	// order); executedAt its result's timestamp (ms). Both say when it executed.
	placed     map[string]int
	executedAt map[string]int64
}

type orderInfo struct {
	signal  string
	created int64 // ms
	// filled: the book booked a fill (status filled); otherwise the exchange refused it or
	// it is still pending.
	filled bool
}

// NewChecker returns a Checker of the fleet's signals on rdb.
func NewChecker(rdb redis.UniversalClient, fleet *Fleet) *Checker {
	c := &Checker{rdb: rdb, fleet: fleet, bots: map[string]int{}, since: time.Now(),
		accepted: map[string]struct{}{}, orderSig: map[string]orderInfo{}, placed: map[string]int{}, executedAt: map[string]int64{}}
	for i, b := range fleet.Bots {
		c.bots[b.ID] = i
	}
	return c
}

// WithArchive makes the checker read the orders the book's hot window has moved out of
// Redis from the archive's PostgreSQL too, as every surface reads the history: without it a
// run longer than the executors' --history-retention would count their fills as missing.
func (c *Checker) WithArchive(db *pgxpool.Pool) *Checker {
	c.db = db
	return c
}

// Reconciliation is the outcome of one scenario's check.
type Reconciliation struct {
	// Accepted is how many signal IDs the scenario was answered with.
	Accepted int
	// Results is how many of them have a stored result; Lost how many had none when the
	// bound passed (LostIDs: a few of them).
	Results int
	Lost    int
	LostIDs []string
	// ResultCodes counts the stored results: "ok" or the failure's code.
	ResultCodes map[string]int
	// Waited is how long the results took to be complete after the scenario's last answer
	// (the executor draining its backlog), or the bound.
	Waited time.Duration
	// Orders is how many order records the book holds for the accepted signals; Fills how
	// many orders the paper exchange holds for them.
	Orders, Fills int
	// Duplicated counts accepted signals with more than one order record (each of these
	// signals plans at most one order), or with an order listed twice.
	Duplicated    int
	DuplicatedIDs []string
	// Mismatched counts orders on which the book and the paper exchange disagree: a booked
	// fill the exchange does not hold, a refused or pending order it does, or a difference
	// between an account's order count and its bot's booked fills.
	Mismatched int
	// RepeatedIDs counts answers that repeated a signal ID already accepted.
	RepeatedIDs int
	// UnknownResults and UnknownOrders count results and orders of the fleet's bots, made
	// since the checker started, for signals no answer ever named.
	UnknownResults, UnknownOrders int
	// OutOfOrder counts pairs of one bot's signals executed in the other order than they
	// arrived (OutOfOrderIDs: a few, "first>second").
	OutOfOrder    int
	OutOfOrderIDs []string
}

// OK reports whether every accepted signal produced exactly one result and at most one
// order, and nothing else was produced.
func (r *Reconciliation) OK() bool {
	return r.Lost == 0 && r.Duplicated == 0 && r.Mismatched == 0 && r.RepeatedIDs == 0 &&
		r.UnknownResults == 0 && r.UnknownOrders == 0 && r.OutOfOrder == 0
}

// DuplicatedTotal is everything that counts as a duplicate: signals with more than one
// order, IDs answered twice, and results or orders of signals never answered.
func (r *Reconciliation) DuplicatedTotal() int {
	return r.Duplicated + r.RepeatedIDs + r.UnknownResults + r.UnknownOrders
}

// Problems describes what is wrong, for an error message ("" when OK).
func (r *Reconciliation) Problems() string {
	var p []string
	if r.Lost > 0 {
		p = append(p, fmt.Sprintf("%d accepted signals without a result (e.g. %s)", r.Lost, strings.Join(r.LostIDs, ", ")))
	}
	if r.Duplicated > 0 {
		p = append(p, fmt.Sprintf("%d signals with more than one order (e.g. %s)", r.Duplicated, strings.Join(r.DuplicatedIDs, ", ")))
	}
	if r.Mismatched > 0 {
		p = append(p, fmt.Sprintf("%d orders on which the book and the paper exchange disagree", r.Mismatched))
	}
	if r.RepeatedIDs > 0 {
		p = append(p, fmt.Sprintf("%d answers repeated an accepted signal ID", r.RepeatedIDs))
	}
	if r.OutOfOrder > 0 {
		p = append(p, fmt.Sprintf("%d pairs of a bot's signals executed out of their arrival order (e.g. %s)", r.OutOfOrder, strings.Join(r.OutOfOrderIDs, ", ")))
	}
	if r.UnknownResults > 0 || r.UnknownOrders > 0 {
		p = append(p, fmt.Sprintf("%d results and %d orders of signals never accepted", r.UnknownResults, r.UnknownOrders))
	}
	return strings.Join(p, "; ")
}

// Reconcile waits up to bound for every signal res accepted to have a stored result, then
// counts the scenario's orders and looks for anything produced that no answer named.
func (c *Checker) Reconcile(ctx context.Context, res *Result, bound time.Duration) (*Reconciliation, error) {
	rec := &Reconciliation{Accepted: len(res.Accepted), ResultCodes: map[string]int{}, RepeatedIDs: res.RepeatedIDs}
	for _, id := range res.Accepted {
		c.accepted[id] = struct{}{}
	}
	began := time.Now()
	if err := c.waitResults(ctx, res.Accepted, bound, rec); err != nil {
		return nil, err
	}
	rec.Waited = time.Since(began)
	if err := c.checkOrders(ctx, res.Accepted, rec); err != nil {
		return nil, err
	}
	c.checkArrivalOrder(res, rec)
	var err error
	if rec.UnknownResults, err = c.unknownResults(ctx); err != nil {
		return nil, err
	}
	return rec, nil
}

// waitResults polls, with pipelined GETs, until each ID has a result or the bound passes.
func (c *Checker) waitResults(ctx context.Context, ids []string, bound time.Duration, rec *Reconciliation) error {
	pending := append([]string(nil), ids...)
	deadline := time.Now().Add(bound)
	for {
		var still []string
		for start := 0; start < len(pending); start += batch {
			part := pending[start:min(start+batch, len(pending))]
			reads := make([]func() (result.Stored, error), len(part))
			if _, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
				for i, id := range part {
					reads[i] = queue.GetResultLater(ctx, p, id)
				}
				return nil
			}); err != nil && !errors.Is(err, redis.Nil) {
				return fmt.Errorf("read results: %w", err)
			}
			found := make([]result.Stored, len(part))
			var gone []string
			for i, read := range reads {
				st, err := read()
				if err != nil {
					return fmt.Errorf("read result %s: %w", part[i], err)
				}
				found[i] = st
				if !st.Found {
					gone = append(gone, part[i])
				}
			}
			// With the archive, a result past its life in Redis is in PostgreSQL.
			archived, err := c.archivedResults(ctx, gone)
			if err != nil {
				return err
			}
			for i := range part {
				st := found[i]
				if !st.Found {
					st.Result, st.Found = archived[part[i]]
				}
				if !st.Found {
					still = append(still, part[i])
					continue
				}
				r := st.Result
				if r.SignalID != part[i] {
					return fmt.Errorf("the result stored under %s is signal %s's", part[i], r.SignalID)
				}
				c.executedAt[r.SignalID] = r.Timestamp
				rec.Results++
				if r.Success {
					rec.ResultCodes["ok"]++
				} else {
					rec.ResultCodes[string(r.Code)]++
				}
			}
		}
		pending = still
		if len(pending) == 0 || time.Now().After(deadline) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	rec.Lost = len(pending)
	rec.LostIDs = pending[:min(len(pending), 5)]
	return nil
}

// archivedResults reads the results of ids from the archive (none without it).
func (c *Checker) archivedResults(ctx context.Context, ids []string) (map[string]result.Result, error) {
	out := map[string]result.Result{}
	if c.db == nil || len(ids) == 0 {
		return out, nil
	}
	rows, err := c.db.Query(ctx, `SELECT signal_id, result FROM signal_results WHERE signal_id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("read archived results: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var raw []byte
		if err := rows.Scan(&id, &raw); err != nil {
			return nil, err
		}
		var r result.Result
		if err := json.Unmarshal(raw, &r); err != nil {
			return nil, fmt.Errorf("archived result %s: %w", id, err)
		}
		out[id] = r
	}
	return out, rows.Err()
}

// checkOrders counts the order records of each accepted signal in its bot's book (every
// bot's order list, read whole) and checks the book against the paper exchange, where each
// bot has its own account: every booked fill must be an order of the account (its key by
// client order ID) and every other record (refused, pending) must not; and the account
// must hold exactly as many orders as the book lists fills, so that an order placed but
// never booked shows too.
func (c *Checker) checkOrders(ctx context.Context, ids []string, rec *Reconciliation) error {
	bots := c.fleet.Bots
	lists := make([]*redis.StringSliceCmd, len(bots))
	if _, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, b := range bots {
			lists[i] = p.LRange(ctx, store.BookOrders(b.ID), 0, -1)
		}
		return nil
	}); err != nil {
		return fmt.Errorf("read order lists: %w", err)
	}
	held, err := c.paperOrderCounts(ctx)
	if err != nil {
		return err
	}
	type ref struct {
		bot int
		cid string
	}
	var unread, all []ref
	listed := map[string]int{} // client order ID -> times listed
	for i, cmd := range lists {
		for _, cid := range cmd.Val() {
			listed[cid]++
			if listed[cid] > 1 {
				continue
			}
			all = append(all, ref{i, cid})
			if _, ok := c.orderSig[cid]; !ok {
				unread = append(unread, ref{i, cid})
			}
		}
	}
	// Archived copies of listed orders: the list keeps an order's ID until the compactor's
	// next pass, after its record has left Redis with the window.
	archivedListed := map[string]orderInfo{}
	if c.db != nil {
		archived, err := c.archivedOrders(ctx)
		if err != nil {
			return err
		}
		for _, a := range archived {
			if listed[a.cid] > 0 {
				archivedListed[a.cid] = a.info // the Redis copy, read below, is the newer state
				continue
			}
			all = append(all, ref{c.bots[a.bot], a.cid})
			c.orderSig[a.cid] = a.info
		}
	}
	for start := 0; start < len(unread); start += batch {
		part := unread[start:min(start+batch, len(unread))]
		cmds := make([]*redis.StringCmd, len(part))
		if _, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, r := range part {
				cmds[i] = p.Get(ctx, store.BookOrder(bots[r.bot].ID, r.cid))
			}
			return nil
		}); err != nil && !errors.Is(err, redis.Nil) {
			return fmt.Errorf("read orders: %w", err)
		}
		for i, cmd := range cmds {
			data, err := cmd.Result()
			if errors.Is(err, redis.Nil) {
				if info, ok := archivedListed[part[i].cid]; ok {
					c.orderSig[part[i].cid] = info // left Redis, listed still
				}
				continue // else expired long ago; not this run's
			}
			if err != nil {
				return err
			}
			o, err := position.DecodeOrder(data)
			if err != nil {
				return fmt.Errorf("order %s: %w", part[i].cid, err)
			}
			// Read once the signal's result is stored, the record is final.
			c.orderSig[part[i].cid] = orderInfo{signal: o.SignalID, created: o.CreatedAt, filled: o.Status == exchange.StatusFilled}
		}
	}

	// Places are counted afresh: the book keeps the newest position.MaxOrders orders, so an
	// order's place changes as newer ones push the oldest out.
	clear(c.placed)
	for _, cmd := range lists {
		list := cmd.Val() // newest first
		for j, cid := range list {
			if info, ok := c.orderSig[cid]; ok {
				c.placed[info.signal] = len(list) - 1 - j
			}
		}
	}

	current := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		current[id] = struct{}{}
	}
	perSignal := map[string]int{}
	relisted := map[string]bool{}
	fillsOf := make([]int64, len(bots)) // booked fills per bot, all listed orders
	var mine []ref                      // this scenario's records
	sinceMs := c.since.UnixMilli()
	for _, r := range all {
		info, ok := c.orderSig[r.cid]
		if !ok {
			continue
		}
		if info.filled {
			fillsOf[r.bot]++
		}
		if _, ok := current[info.signal]; ok {
			perSignal[info.signal]++
			if listed[r.cid] > 1 {
				relisted[info.signal] = true
			}
			mine = append(mine, r)
		} else if _, known := c.accepted[info.signal]; !known && info.created >= sinceMs {
			rec.UnknownOrders++
		}
	}
	for _, id := range ids {
		n := perSignal[id]
		rec.Orders += n
		if n > 1 || relisted[id] {
			rec.Duplicated++
			if len(rec.DuplicatedIDs) < 5 {
				rec.DuplicatedIDs = append(rec.DuplicatedIDs, id)
			}
		}
	}

	// The exchange's side of this scenario's records, by client order ID.
	for start := 0; start < len(mine); start += batch {
		part := mine[start:min(start+batch, len(mine))]
		exists := make([]*redis.IntCmd, len(part))
		if _, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, r := range part {
				exists[i] = p.Exists(ctx, store.PaperOrder(bots[r.bot].AccountID, r.cid))
			}
			return nil
		}); err != nil {
			return fmt.Errorf("read exchange orders: %w", err)
		}
		// With the archive, a paper order past its life in Redis is in PostgreSQL.
		archived := map[string]bool{}
		if c.db != nil {
			var gone []string
			for i, r := range part {
				if exists[i].Val() == 0 {
					gone = append(gone, r.cid)
				}
			}
			if len(gone) > 0 {
				rows, err := c.db.Query(ctx, `SELECT client_order_id FROM paper_orders WHERE client_order_id = ANY($1)`, gone)
				if err != nil {
					return fmt.Errorf("read archived exchange orders: %w", err)
				}
				cids, err := pgx.CollectRows(rows, pgx.RowTo[string])
				if err != nil {
					return fmt.Errorf("read archived exchange orders: %w", err)
				}
				for _, cid := range cids {
					archived[cid] = true
				}
			}
		}
		for i, r := range part {
			onExchange := exists[i].Val() == 1 || archived[r.cid]
			if onExchange {
				rec.Fills++
			}
			if onExchange != c.orderSig[r.cid].filled {
				rec.Mismatched++
			}
		}
	}
	// Totals per account, while the bot's list still holds all its orders (the book keeps
	// the newest position.MaxOrders), or always with the archive, which holds every order.
	for i := range bots {
		if c.db != nil || len(lists[i].Val()) < position.MaxOrders {
			if d := held[bots[i].AccountID] - fillsOf[i]; d != 0 {
				rec.Mismatched += int(max(d, -d))
			}
		}
	}
	return nil
}

// archivedOrder is an order record as the archive holds it.
type archivedOrder struct {
	bot, cid string
	info     orderInfo
}

// archivedOrders reads the fleet's order records from the archive, those placed within the
// paper exchange's order life (paper.OrderTTL(): the exchange's side of older ones is gone).
func (c *Checker) archivedOrders(ctx context.Context) ([]archivedOrder, error) {
	ids := make([]string, len(c.fleet.Bots))
	for i, b := range c.fleet.Bots {
		ids[i] = b.ID
	}
	rows, err := c.db.Query(ctx, `SELECT bot_id, client_order_id, signal_id, status, created_at FROM orders
		WHERE bot_id = ANY($1) AND created_at > $2`, ids, time.Now().Add(-paper.OrderTTL()))
	if err != nil {
		return nil, fmt.Errorf("read archived orders: %w", err)
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (archivedOrder, error) {
		var a archivedOrder
		var status string
		var created time.Time
		err := row.Scan(&a.bot, &a.cid, &a.info.signal, &status, &created)
		a.info.created, a.info.filled = created.UnixMilli(), status == string(exchange.StatusFilled)
		return a, err
	})
}

// checkArrivalOrder counts pairs of one bot's signals that executed in the other order
// than they arrived. Arrival order is known for certain only when the first signal's answer
// came before the second was sent (webhookd had queued it); requests that overlapped are
// not compared. Executed first means an earlier place in the bot's book when both placed
// an order, otherwise an earlier result timestamp (equal milliseconds say nothing).
func (c *Checker) checkArrivalOrder(res *Result, rec *Reconciliation) {
	byBot := map[int][]Answer{}
	for _, a := range res.Answers {
		if a.SignalID != "" {
			byBot[a.Bot] = append(byBot[a.Bot], a)
		}
	}
	for _, as := range byBot {
		slices.SortFunc(as, func(a, b Answer) int { return a.Sent.Compare(b.Sent) })
		for i, first := range as {
			for _, second := range as[i+1:] {
				if first.Answered.Before(second.Sent) && c.executedBefore(second.SignalID, first.SignalID) {
					rec.OutOfOrder++
					if len(rec.OutOfOrderIDs) < 5 {
						rec.OutOfOrderIDs = append(rec.OutOfOrderIDs, first.SignalID+">"+second.SignalID)
					}
				}
			}
		}
	}
}

// ExecutedAt is when signal id's result was stored, as Reconcile read it.
func (c *Checker) ExecutedAt(id string) (time.Time, bool) {
	ms, ok := c.executedAt[id]
	return time.UnixMilli(ms), ok
}

// executedBefore reports whether signal x certainly executed before signal y.
func (c *Checker) executedBefore(x, y string) bool {
	px, okx := c.placed[x]
	py, oky := c.placed[y]
	if okx && oky {
		return px < py
	}
	tx, ty := c.executedAt[x], c.executedAt[y]
	return tx != 0 && ty != 0 && tx < ty
}

// paperOrderCounts counts the paper exchange's orders per account ID, in one scan of
// their keys (store.PaperOrder: one key per order) and, with the archive, those PostgreSQL
// holds (paper_orders), each client order ID once: a paper order leaves Redis after the
// executors' hot window.
func (c *Checker) paperOrderCounts(ctx context.Context) (map[string]int64, error) {
	seen := map[string]map[string]bool{}
	add := func(acct, cid string) {
		if seen[acct] == nil {
			seen[acct] = map[string]bool{}
		}
		seen[acct][cid] = true
	}
	pattern := store.PaperOrder("*", "*")
	head, _, _ := strings.Cut(pattern, "*")
	var mu sync.Mutex
	err := scanAll(ctx, c.rdb, pattern, func(keys []string) {
		mu.Lock()
		defer mu.Unlock()
		for _, k := range keys {
			if id, rest, ok := strings.Cut(strings.TrimPrefix(k, head), "}"); ok {
				add(id, rest)
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("scan paper orders: %w", err)
	}
	if c.db != nil {
		accts := make([]string, len(c.fleet.Bots))
		for i, b := range c.fleet.Bots {
			accts[i] = b.AccountID
		}
		rows, err := c.db.Query(ctx, `SELECT account_id, client_order_id FROM paper_orders WHERE account_id = ANY($1)`, accts)
		if err != nil {
			return nil, fmt.Errorf("read archived paper orders: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var acct, cid string
			if err := rows.Scan(&acct, &cid); err != nil {
				return nil, err
			}
			add(acct, ":order:"+cid)
		}
		if err := rows.Err(); err != nil {
			return nil, err
		}
	}
	out := make(map[string]int64, len(seen))
	for acct, cids := range seen {
		out[acct] = int64(len(cids))
	}
	return out, nil
}

// scanAll SCANs every master behind rdb (one server, or each node of a Cluster, where a
// SCAN sees only the node it reaches) for keys matching pattern, handing each batch to fn.
func scanAll(ctx context.Context, rdb redis.UniversalClient, pattern string, fn func(keys []string)) error {
	var mu sync.Mutex
	return storetest.ForEachNode(ctx, rdb, func(ctx context.Context, n *redis.Client) error {
		var cursor uint64
		for {
			keys, next, err := n.Scan(ctx, cursor, pattern, 5000).Result()
			if err != nil {
				return err
			}
			mu.Lock()
			fn(keys)
			mu.Unlock()
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	})
}

// unknownResults scans the stored results for ones of the fleet's bots, stored since the
// checker started, whose signal no answer named.
func (c *Checker) unknownResults(ctx context.Context) (int, error) {
	var candidates []string
	err := scanAll(ctx, c.rdb, store.SignalResultPattern(), func(keys []string) {
		for _, k := range keys {
			id, _ := store.SignalOfResult(k) // the pattern matches result keys only
			if _, ok := c.accepted[id]; !ok {
				candidates = append(candidates, k)
			}
		}
	})
	if err != nil {
		return 0, fmt.Errorf("scan results: %w", err)
	}
	unknown := 0
	sinceMs := c.since.UnixMilli()
	for start := 0; start < len(candidates); start += batch {
		part := candidates[start:min(start+batch, len(candidates))]
		cmds := make([]*redis.StringCmd, len(part))
		if _, err := c.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			for i, k := range part {
				cmds[i] = p.Get(ctx, k)
			}
			return nil
		}); err != nil && !errors.Is(err, redis.Nil) {
			return 0, err
		}
		for _, cmd := range cmds {
			var r struct {
				BotID     string `json:"botId"`
				Timestamp int64  `json:"timestamp"`
			}
			if data, err := cmd.Bytes(); err != nil || json.Unmarshal(data, &r) != nil {
				continue
			}
			if _, ours := c.bots[r.BotID]; ours && r.Timestamp >= sinceMs {
				unknown++
			}
		}
	}
	return unknown, nil
}
