package executor_test

import (
	"context"
	"encoding/json"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/archive"
	"github.com/sigops/sigops/runtime/bookstate"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/history"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/risk"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// bookSnapshot is what a user reads of a bot's book: its analytics over every day (the
// equity curve drawing the trades Redis and the archive db keep, as the daemons do), its
// open positions and its risk counters, as JSON.
func bookSnapshot(t *testing.T, h *harness, db *pgxpool.Pool) string {
	t.Helper()
	q, err := analytics.ParseQuery("all", "", "", "true", h.now)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analytics.New(h.rdb).WithTrades(history.New(h.rdb, db, nil)).Bot(h.ctx, h.bot, q)
	if err != nil {
		t.Fatal(err)
	}
	pos, err := position.NewBook(h.rdb).List(h.ctx, h.bot.ID)
	if err != nil {
		t.Fatal(err)
	}
	cnt, err := risk.ReadCounters(h.ctx, h.rdb, h.bot.ID)
	if err != nil {
		t.Fatal(err)
	}
	watched, err := h.rdb.HLen(h.ctx, store.Watch(store.PartitionOf(h.bot.ID))).Result()
	if err != nil {
		t.Fatal(err)
	}
	acct, err := paper.NewAccounts(h.rdb).Get(h.ctx, "acct-1")
	if err != nil {
		t.Fatal(err)
	}
	holdings, err := h.rdb.HGetAll(h.ctx, store.PaperPositions("acct-1")).Result()
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(map[string]any{"analytics": rep, "positions": pos, "risk": cnt, "watched": watched,
		"paper": map[string]any{"balance": acct.Balance, "margin": acct.Margin, "holdings": holdings}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A Redis that lost everything gets each bot's book back from PostgreSQL: after FLUSHALL
// the executor restores the partition before it decides anything there, and the bot's
// analytics (every past day, to the last decimal), its open position with its watched
// stop-loss, its risk counters and its paper account's balance and holdings read as they
// did; the next signals book on them, and the position closes on the restored holding.
func TestALostRedisGetsTheBookBack(t *testing.T) {
	h := newHarness(t, func(b *registry.Bot) { b.DCA = registry.DCA{Enabled: true, MaxLevels: 3} })
	db := dbtest.New(t)
	h.ex.WithBookRecord(db)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	// Two days of trades, a losing one last (risk counters), then an open position with a
	// stop-loss the watcher follows.
	for i, px := range []string{"65500.5", "64321.12"} {
		h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT"}`))
		h.px.set(exchange.Spot, "BTC/USDT", px)
		h.ok(h.send(`{"action":"close","symbol":"BTCUSDT"}`))
		if i == 0 {
			h.now = h.now.Add(24 * time.Hour)
		}
	}
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","stopLoss":"3%"}`))
	if len(h.trades()) != 2 || h.position("BTC/USDT") == nil {
		t.Fatalf("setup: %d trades, position %v", len(h.trades()), h.position("BTC/USDT"))
	}
	before := bookSnapshot(t, h, db)
	prev := *h.position("BTC/USDT")
	archiveAll(t, h, db)

	// Restored by the partitions' restore (what the executor's restore loop runs on those it
	// holds): the bot's, and the paper account's (accounts are spread by their own ID).
	lose(t, h)
	r := bookstate.NewRestorer(h.rdb, db)
	if n, err := r.Partition(h.ctx, store.PartitionOf(h.bot.ID)); n != 1 || err != nil {
		t.Fatalf("restore: %d bots, %v", n, err)
	}
	if _, err := r.Partition(h.ctx, store.PartitionOf("acct-1")); err != nil {
		t.Fatal(err)
	}
	// The restore is counted (sigops_book_restored_*): an operator is told Redis lost data.
	if c := r.Collectors(); testutil.ToFloat64(c[0]) < 1 || testutil.ToFloat64(c[1]) != 1 || testutil.ToFloat64(c[2]) != 1 {
		t.Fatalf("restore metrics: partitions %v, bots %v, paper accounts %v", testutil.ToFloat64(c[0]),
			testutil.ToFloat64(c[1]), testutil.ToFloat64(c[2]))
	}
	if after := bookSnapshot(t, h, db); after != before {
		t.Fatalf("after FLUSHALL and the restore:\n%s\nbefore:\n%s", after, before)
	}

	// Restored by the next signal itself, before it decides: it adds to the position.
	lose(t, h)
	h.px.set(exchange.Spot, "BTC/USDT", "64000")
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","dca":true,"dcaLevel":2}`))
	got := h.position("BTC/USDT")
	if got == nil || got.ID != prev.ID || got.DCALevel != prev.DCALevel+1 || !got.Size.GreaterThan(prev.Size.Decimal) ||
		got.StopLoss == nil {
		t.Fatalf("the signal after FLUSHALL did not book on the restored position: %+v, was %+v", got, prev)
	}
	if n := len(h.trades()); n != 0 {
		t.Fatalf("%d trades in Redis after the loss; the archive holds them", n)
	}
	h.px.set(exchange.Spot, "BTC/USDT", "64500")
	h.ok(h.send(`{"action":"close","symbol":"BTCUSDT"}`))
	if p := h.position("BTC/USDT"); p != nil {
		t.Fatalf("still open after the close: %+v", p)
	}
	if holdings, _ := h.rdb.HGetAll(h.ctx, store.PaperPositions("acct-1")).Result(); len(holdings) != 0 {
		t.Fatalf("paper holdings left after closing the restored position: %v", holdings)
	}

	// A deleted bot's recorded state goes with it: no later restore brings it back.
	archiveAll(t, h, db)
	var rows int
	count := func() int {
		if err := db.QueryRow(h.ctx, `SELECT (SELECT count(*) FROM book_positions WHERE bot_id = $1) +
			(SELECT count(*) FROM book_days WHERE bot_id = $1) + (SELECT count(*) FROM book_bots WHERE bot_id = $1)`,
			h.bot.ID).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		return rows
	}
	if count() != 4 { // the position (closed), two days, the bot
		t.Fatalf("%d recorded rows before the purge, want 4", rows)
	}
	if err := bookstate.Purge(h.ctx, h.rdb, h.bot.ID); err != nil {
		t.Fatal(err)
	}
	archiveAll(t, h, db)
	if count() != 0 {
		t.Fatalf("%d recorded rows after the purge", rows)
	}
}

// lose empties Redis and projects the bot and its paper account again, as the manager
// does once it notices (controllers' re-projection).
func lose(t *testing.T, h *harness) {
	t.Helper()
	if err := storetest.FlushAll(h.ctx, h.rdb); err != nil {
		t.Fatal(err)
	}
	h.project()
	if _, err := paper.NewAccounts(h.rdb).Ensure(h.ctx, paper.Config{ID: "acct-1", Owner: "a@x.io", Currency: "USDT",
		InitialBalance: testkit.D("10000"), FeeRate: testkit.D("0.001")}); err != nil {
		t.Fatal(err)
	}
}

// The commit writes nothing on a partition Redis lost after the signal's first read: it
// answers so, the executor restores the partition and books on what it reads then.
func TestTheCommitRefusesALostPartition(t *testing.T) {
	h := newHarness(t, func(b *registry.Bot) { b.DCA = registry.DCA{Enabled: true, MaxLevels: 3} })
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT"}`))
	marker := store.BookRestored(store.PartitionOf(h.bot.ID))
	lost := 0
	executor.SetAfterPlace(h.ex, func(string) error {
		lost++
		return h.rdb.Del(h.ctx, marker).Err()
	})
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","dca":true,"dcaLevel":2}`))
	if lost != 1 {
		t.Fatalf("hook ran %d times", lost)
	}
	if n, _ := h.rdb.Exists(h.ctx, marker).Result(); n != 1 {
		t.Fatal("the partition was not marked again")
	}
	if p := h.position("BTC/USDT"); p == nil || p.DCALevel != 2 {
		t.Fatalf("position after the refused commit: %+v", p)
	}
}

// archiveAll runs the archiver until every fact the executor appended is in PostgreSQL.
func archiveAll(t *testing.T, h *harness, db *pgxpool.Pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(h.ctx, 30*time.Second)
	defer cancel()
	a := archive.New(archive.Options{Redis: h.rdb, DB: db})
	key := store.ArchiveOf(h.bot.ID)
	for {
		if _, _, err := a.Step(ctx); err != nil {
			t.Fatal(err)
		}
		n, err := h.rdb.XLen(ctx, key).Result()
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("the archive still holds %d entries", n)
		}
	}
}

// The daily-loss rule refuses at the same amount after Redis lost the bot's counters: a
// loss of 21.28 of a 30 limit, Redis emptied, then a second loss of 21.28 pauses the bot
// (42.56 ≥ 30) exactly as it would have without the loss. The counters come back from
// PostgreSQL's book record, and without a database from the record the manager keeps in
// the SignalBot's status (registry.Recorded, written back by the projection).
func TestTheDailyLossRuleGoesOnAfterALostRedis(t *testing.T) {
	for _, record := range []string{"postgres", "status"} {
		t.Run(record, func(t *testing.T) {
			h := newHarness(t, func(b *registry.Bot) { b.Risk.DailyLossLimit = "30" })
			var db *pgxpool.Pool
			if record == "postgres" {
				db = dbtest.New(t)
				h.ex.WithBookRecord(db)
			}
			h.loseOnce()
			c, err := risk.ReadCounters(h.ctx, h.rdb, h.bot.ID)
			if err != nil {
				t.Fatal(err)
			}
			testkit.EqualD(t, "daily loss used before the loss", c.DailyLossUsed(h.now), "21.28")
			if db != nil {
				archiveAll(t, h, db)
				lose(t, h)
			} else {
				rec := &registry.Recorded{}
				c.RecordInto(rec)
				lose(t, h)
				if err := h.reg.ProjectRecorded(h.ctx, h.bot, "hook-"+h.bot.ID, rec, h.now); err != nil {
					t.Fatal(err)
				}
			}
			if reason, _ := h.pauseFields(); reason != "" {
				t.Fatalf("paused by the loss itself: %s", reason)
			}
			h.loseOnce()
			reason, until := h.pauseFields()
			next := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC).UnixMilli()
			if reason != registry.PauseRisk || until != strconv.FormatInt(next, 10) {
				t.Fatalf("after the second loss: pause %q until %q, want Risk until the next UTC day", reason, until)
			}
			c, _ = risk.ReadCounters(h.ctx, h.rdb, h.bot.ID)
			testkit.EqualD(t, "daily loss used", c.DailyLossUsed(h.now), "42.56")
			h.fails(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01"}`), errs.BotPaused)
		})
	}
}

// The signals of many bots of one partition that find it lost at the same moment (a read of
// their entries runs them together) restore it once between them: none loses the restore
// to another.
func TestConcurrentRestoresOfAPartitionAllSucceed(t *testing.T) {
	h := newHarness(t, nil)
	part := store.PartitionOf(h.bot.ID)
	r := h.ex.BookRestorer()
	errs := make(chan error, 24)
	var wg sync.WaitGroup
	for range 24 {
		wg.Go(func() {
			_, err := r.Partition(h.ctx, part)
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n, err := h.rdb.Exists(h.ctx, store.BookRestored(part)).Result(); err != nil || n != 1 {
		t.Fatalf("partition not marked restored: %d %v", n, err)
	}
}
