package executor_test

import (
	"context"
	"net/url"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/archive"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/retention"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// PostgreSQL unreachable while signals flow: every signal still fills and is answered at
// once, the facts wait in the archive stream, the compactor removes nothing from Redis, and
// when the database is back the archive catches up by itself: the same trades, to the
// decimal, in PostgreSQL as in the book.
func TestSignalsFillWhilePostgreSQLIsDown(t *testing.T) {
	h := newHarness(t, nil)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	direct := dbtest.NewURL(t)
	u, err := url.Parse(direct)
	if err != nil {
		t.Fatal(err)
	}
	proxy := storetest.NewProxy(t, u.Host)
	u.Host = proxy.Addr
	viaProxy, db := dbtest.Pool(t, u.String()), dbtest.Pool(t, direct)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a := archive.New(archive.Options{Redis: h.rdb, DB: viaProxy, Interval: 20 * time.Millisecond})
	go func() { _ = a.Run(ctx) }()

	proxy.Switch("127.0.0.1:1") // PostgreSQL is gone
	// Longer than the archiver's longest pause between tries (5 s): it is at its slowest
	// when the database comes back.
	const signals, every = 60, 100 * time.Millisecond
	for i := range signals {
		time.Sleep(every)
		body := `{"action":"buy","symbol":"BTCUSDT"}`
		if i%2 == 1 {
			body = `{"action":"close","symbol":"BTCUSDT"}`
		}
		began := time.Now()
		h.ok(h.send(body))
		if d := time.Since(began); d > 2*time.Second {
			t.Fatalf("signal %d took %s with PostgreSQL down", i, d)
		}
	}
	backlog, err := h.rdb.XLen(h.ctx, store.ArchiveOf(h.bot.ID)).Result()
	if err != nil || backlog < signals*2 {
		t.Fatalf("the archive stream holds %d entries (%v), want every fact of %d signals", backlog, err, signals)
	}
	// The compactor (a window of 10 minutes, run an hour later) cannot write PostgreSQL:
	// nothing leaves Redis.
	later := time.Now().Add(time.Hour)
	c, err := retention.New(retention.Options{Redis: h.rdb, Archive: archive.Keeper{DB: viaProxy}, Retention: 10 * time.Minute,
		Now: func() time.Time { return later }})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.Bot(h.ctx, h.bot.ID, c.Cutoff(later)); err == nil || r.Trades != 0 {
		t.Fatalf("compaction with PostgreSQL down: removed %+v (%v), want an error and nothing removed", r, err)
	}

	proxy.Switch(mustHost(t, direct)) // PostgreSQL is back
	trades := h.trades()
	want := decimal.Zero
	for _, tr := range trades {
		want = want.Add(tr.NetPnl.Decimal)
	}
	if len(trades) != signals/2 {
		t.Fatalf("the book holds %d trades, want %d", len(trades), signals/2)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		var n int
		var net decimal.Decimal
		err := db.QueryRow(h.ctx, `SELECT count(*), coalesce(sum(net_pnl), 0) FROM trades`).Scan(&n, &net)
		if err == nil && n == len(trades) && net.Equal(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the outage PostgreSQL holds %d trades (net %s, %v); the book %d (net %s)", n, net, err, len(trades), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The archiver trims its stream after the commit the rows above came with (reading
	// notifyd's position in between): wait for that trim, not only the commit.
	for trimmed := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		n := h.rdb.XLen(h.ctx, store.ArchiveOf(h.bot.ID)).Val()
		if n <= 1 {
			break
		}
		if time.Now().After(trimmed) {
			t.Errorf("the archive stream still holds %d entries after catching up", n)
			break
		}
	}
}

func mustHost(t *testing.T, raw string) string {
	t.Helper()
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}
