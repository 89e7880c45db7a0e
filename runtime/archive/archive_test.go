package archive_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/archive"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

const bot = "bot-archive"

func d(s string) decimal.Decimal { return decimal.RequireFromString(s) }

// facts writes n trades, n order records (each in two versions: pending, then filled) and
// n results of bot through the book's and the queue's own writers, as the executor does.
func facts(t *testing.T, rdb redis.UniversalClient, from, n int) {
	t.Helper()
	ctx := context.Background()
	for i := from; i < from+n; i++ {
		sig := queue.SignalIDFor(bot, fmt.Sprintf("sig-%d", i))
		rec := position.OrderRecord{ClientOrderID: fmt.Sprintf("cid-%d", i), SignalID: sig, BotID: bot, Leg: "entry",
			Symbol: "BTC/USDT", Kind: exchange.Spot, Side: exchange.SideBuy, Type: exchange.Market, Status: exchange.StatusPending,
			Amount: httpapi.Num(d("0.00012345")), CreatedAt: 1_800_000_000_000 + int64(i), UpdatedAt: 1_800_000_000_000 + int64(i)}
		filled := rec
		filled.Status, filled.OrderID, filled.FilledAmount, filled.AvgPrice, filled.Fee, filled.FeeAsset =
			exchange.StatusFilled, fmt.Sprint(9000+i), rec.Amount, httpapi.Num(d("65000.01")), httpapi.Num(d("0.00000012")), "BTC"
		filled.UpdatedAt += 5
		tr := position.Trade{ID: fmt.Sprintf("trade-%d", i), PositionID: "p", BotID: bot, SignalID: sig, Symbol: "BTC/USDT",
			Kind: exchange.Spot, Side: position.Long, Size: httpapi.Num(d("0.00012345")), EntryPrice: httpapi.Num(d("65000.01")), ExitPrice: httpapi.Num(d("65100.99")),
			Leverage: 1, Pnl: httpapi.Num(d("0.0124660")), Fees: httpapi.Num(d("0.0160000001")), NetPnl: httpapi.Num(d("-0.0035340001")), Closed: true, Reason: "signal",
			OpenedAt: 1_800_000_000_000, ClosedAt: 1_800_000_000_000 + int64(i)}
		if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
			if err := position.StageOrder(ctx, p, rec, true); err != nil {
				return err
			}
			if err := position.StageOrder(ctx, p, filled, false); err != nil {
				return err
			}
			return position.StageTrade(ctx, p, tr)
		}); err != nil {
			t.Fatal(err)
		}
		env := queue.Envelope{SignalID: sig, BotID: bot, Source: queue.SourceWebhook, ReceivedAt: 1_800_000_000_000 + int64(i),
			Signal: []byte(`{"action":"buy"}`)}
		res := result.Result{SignalID: sig, BotID: bot, Success: true, Message: "filled", Timestamp: 1_800_000_000_100 + int64(i)}
		if i%3 == 0 {
			res = result.Failure(sig, bot, errs.New(errs.InsufficientBalance, "not enough USDT"), 1_800_000_000_100+int64(i))
		}
		if err := queue.PublishResult(ctx, rdb, env, res); err != nil {
			t.Fatal(err)
		}
	}
}

func count(t *testing.T, db *pgxpool.Pool, sql string) int {
	t.Helper()
	var n int
	if err := db.QueryRow(context.Background(), sql).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

func streamLen(t *testing.T, rdb redis.UniversalClient) int64 {
	t.Helper()
	n, err := rdb.XLen(context.Background(), store.ArchiveOf(bot)).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// Every fact the writers commit reaches PostgreSQL once, exact to the last decimal, and the
// stream keeps nothing PostgreSQL has committed.
func TestEveryFactIsArchivedOnce(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	db := dbtest.New(t)
	facts(t, rdb, 0, 25)
	if n := streamLen(t, rdb); n != 25*4 {
		t.Fatalf("stream holds %d entries, want 100 (two order versions, a trade and a result per signal)", n)
	}
	a := archive.New(archive.Options{Redis: rdb, DB: db, Batch: 40})
	total := 0
	for {
		n, full, err := a.Step(ctx)
		if err != nil {
			t.Fatal(err)
		}
		total += n
		if !full {
			break
		}
	}
	if total != 100 {
		t.Fatalf("copied %d entries, want 100", total)
	}
	for table, want := range map[string]int{"trades": 25, "orders": 25, "signal_results": 25} {
		if n := count(t, db, "SELECT count(*) FROM "+table); n != want {
			t.Errorf("%s: %d rows, want %d", table, n, want)
		}
	}
	if n := streamLen(t, rdb); n > 1 {
		t.Errorf("stream keeps %d entries after the archive committed them all", n)
	}
	var net, size decimal.Decimal
	if err := db.QueryRow(ctx, "SELECT sum(net_pnl), sum(size) FROM trades").Scan(&net, &size); err != nil {
		t.Fatal(err)
	}
	if !net.Equal(d("-0.0883500025")) || !size.Equal(d("0.00308625")) {
		t.Errorf("sums: net %s size %s, want -0.0883500025 and 0.00308625", net, size)
	}
	// An order's row is its newest version, whatever order the versions arrive in.
	var status, fee string
	if err := db.QueryRow(ctx, "SELECT status, fee::text FROM orders WHERE client_order_id = 'cid-7'").Scan(&status, &fee); err != nil {
		t.Fatal(err)
	}
	if status != string(exchange.StatusFilled) || fee != "0.00000012" {
		t.Errorf("order cid-7: %s fee %s, want filled 0.00000012", status, fee)
	}
	var code, source string
	if err := db.QueryRow(ctx, "SELECT code, source FROM signal_results WHERE signal_id = $1",
		queue.SignalIDFor(bot, "sig-3")).Scan(&code, &source); err != nil {
		t.Fatal(err)
	}
	if code != string(errs.InsufficientBalance) || source != queue.SourceWebhook {
		t.Errorf("result of sig-3: code %q source %q", code, source)
	}
	// Nothing new: a step copies nothing.
	if n, _, err := a.Step(ctx); err != nil || n != 0 {
		t.Fatalf("idle step copied %d (%v)", n, err)
	}
}

// A crash after PostgreSQL committed and before the stream was trimmed: the next archiver
// (a restarted executor) starts from PostgreSQL's position, copies nothing twice and trims.
// A crash before the commit (PostgreSQL refusing) trims nothing and loses nothing.
func TestACrashAtEitherSideOfTheCommitLosesAndDuplicatesNothing(t *testing.T) {
	ctx := context.Background()
	srv, rdb := storetest.New(t)
	url := dbtest.NewURL(t)
	db, other := dbtest.Pool(t, url), dbtest.Pool(t, url)
	facts(t, rdb, 0, 10)

	crashing := srv.Client()
	t.Cleanup(func() { _ = crashing.Close() })
	crash := &storetest.Crash{}
	crashing.AddHook(crash)
	crash.At(func(c redis.Cmder) bool { return strings.EqualFold(c.Name(), "xtrim") })
	if _, _, err := archive.New(archive.Options{Redis: crashing, DB: db}).Step(ctx); err == nil {
		t.Fatal("the step whose trim crashed reported success")
	}
	if n := streamLen(t, rdb); n != 40 {
		t.Fatalf("stream holds %d entries after a crashed trim, want all 40", n)
	}
	facts(t, rdb, 10, 5)
	n, _, err := archive.New(archive.Options{Redis: rdb, DB: db}).Step(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n != 20 {
		t.Errorf("the restarted archiver copied %d entries, want only the 20 new ones", n)
	}
	if got := count(t, db, "SELECT count(*) FROM trades"); got != 15 {
		t.Errorf("trades: %d rows, want 15", got)
	}
	if n := streamLen(t, rdb); n > 1 {
		t.Errorf("stream keeps %d entries", n)
	}

	// PostgreSQL goes away between an archiver's read of its position and its commit:
	// nothing is trimmed.
	b := archive.New(archive.Options{Redis: rdb, DB: other})
	if _, _, err := b.Step(ctx); err != nil {
		t.Fatal(err)
	}
	facts(t, rdb, 15, 5)
	other.Close()
	if _, _, err := b.Step(ctx); err == nil {
		t.Fatal("a step whose database is gone reported success")
	}
	if n := streamLen(t, rdb); n < 20 {
		t.Fatalf("stream holds %d entries after a failed commit, want the 20 uncommitted", n)
	}
	if _, _, err := archive.New(archive.Options{Redis: rdb, DB: db}).Step(ctx); err != nil {
		t.Fatal(err)
	}
	if got := count(t, db, "SELECT count(*) FROM trades"); got != 20 {
		t.Errorf("trades: %d rows, want 20", got)
	}
}

// A result stored NX is archived only by the attempt that stored it: a second attempt's
// different outcome for the same signal reaches neither Redis nor PostgreSQL.
func TestOnlyTheStoredResultIsArchived(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	db := dbtest.New(t)
	sig := queue.SignalIDFor(bot, "twice")
	env := queue.Envelope{SignalID: sig, BotID: bot, Source: queue.SourceManual, ReceivedAt: 1_800_000_000_000}
	first := result.Result{SignalID: sig, BotID: bot, Success: true, Message: "first", Timestamp: 1_800_000_000_001}
	second := result.Failure(sig, bot, errs.New(errs.InsufficientBalance, "late"), 1_800_000_000_002)
	for _, r := range []result.Result{first, second} {
		if err := queue.PublishResult(ctx, rdb, env, r); err != nil {
			t.Fatal(err)
		}
	}
	if n := streamLen(t, rdb); n != 1 {
		t.Fatalf("stream holds %d results, want the stored one", n)
	}
	if _, _, err := archive.New(archive.Options{Redis: rdb, DB: db}).Step(ctx); err != nil {
		t.Fatal(err)
	}
	var success bool
	if err := db.QueryRow(ctx, "SELECT success FROM signal_results WHERE signal_id = $1", sig).Scan(&success); err != nil || !success {
		t.Fatalf("archived result success=%v (%v), want the first", success, err)
	}
}

// While notifyd reads, the archiver trims a stream no further than notifyd's position, so
// that every fact reaches a user; a notifyd silent for longer than NotifyFresh holds
// nothing back.
func TestTrimKeepsWhatNotifydHasNotRead(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	db := dbtest.New(t)
	facts(t, rdb, 0, 5)
	first, err := rdb.XRangeN(ctx, store.ArchiveOf(bot), "-", "+", 3).Result()
	if err != nil || len(first) != 3 {
		t.Fatal(first, err)
	}
	ms, seq, _ := store.SplitStreamID(first[2].ID)
	now := time.Now()
	if _, err := db.Exec(ctx, `INSERT INTO notify_progress (stream, last_ms, last_seq, updated_at) VALUES ($1, $2, $3, $4)`,
		store.ArchiveOf(bot), ms, seq, now); err != nil {
		t.Fatal(err)
	}
	a := archive.New(archive.Options{Redis: rdb, DB: db, Now: func() time.Time { return now }})
	if _, _, err := a.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if n := streamLen(t, rdb); n != 20-3 {
		t.Fatalf("stream keeps %d entries, want the 17 notifyd has not read", n)
	}
	// notifyd reads on: a step with nothing to copy trims what it read.
	all, err := rdb.XRange(ctx, store.ArchiveOf(bot), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	ms, seq, _ = store.SplitStreamID(all[9].ID)
	if _, err := db.Exec(ctx, `UPDATE notify_progress SET last_ms = $2, last_seq = $3 WHERE stream = $1`, store.ArchiveOf(bot), ms, seq); err != nil {
		t.Fatal(err)
	}
	if n, _, err := a.Step(ctx); err != nil || n != 0 {
		t.Fatalf("idle step: %d %v", n, err)
	}
	if n := streamLen(t, rdb); n != 17-10 {
		t.Fatalf("stream keeps %d entries after notifyd read on, want 7", n)
	}
	facts(t, rdb, 5, 1)
	now = now.Add(archive.NotifyFresh + time.Second)
	if _, _, err := a.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if n := streamLen(t, rdb); n != 0 {
		t.Fatalf("stream keeps %d entries for a notifyd silent for %s", n, archive.NotifyFresh)
	}
}
