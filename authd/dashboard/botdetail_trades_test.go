package dashboard_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/authd"
	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/archive"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/history"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/store"
)

// The Bot detail page lists the bot's trades newest first and exports every one of them as
// CSV, oldest first, exact to the last decimal: those past Redis's hot window from the
// archive, the recent ones from Redis, each once.
func TestTradesPageAndCSVExportCoverTheArchive(t *testing.T) {
	ctx := context.Background()
	db := dbtest.New(t)
	f := newFixture(t, func(o *authd.Options) { o.APIs.Trading.WithHistory(history.New(env.RDB, db, nil)) })
	u := f.user("pro")
	b := f.loggedIn(u)
	bot := bdProjectBot(t, u.Email, nil)
	stage := func(from, to int) {
		for i := from; i < to; i++ {
			tr := position.Trade{ID: fmt.Sprintf("tr-%d", i), PositionID: "p", BotID: bot.ID, SignalID: fmt.Sprintf("s-%d", i),
				Symbol: "BTC/USDT", Kind: exchange.Spot, Side: position.Long, Size: httpapi.Num(testkit.D("0.00012345")),
				EntryPrice: httpapi.Num(testkit.D("65000.01")), ExitPrice: httpapi.Num(testkit.D("64900")), Leverage: 1, Pnl: httpapi.Num(testkit.D("-0.012346234")),
				Fees: httpapi.Num(testkit.D("0.016")), NetPnl: httpapi.Num(testkit.D("-0.028346234")), Closed: true, Reason: "signal",
				OpenedAt: 1_790_000_000_000, ClosedAt: 1_790_000_000_000 + int64(i)*60_000}
			if i == 1 {
				tr.Reason = "=HYPERLINK(\"x\")" // a text cell a spreadsheet must not run
			}
			if _, err := env.RDB.TxPipelined(ctx, func(p redis.Pipeliner) error { return position.StageTrade(ctx, p, tr) }); err != nil {
				t.Fatal(err)
			}
		}
	}
	stage(0, 5)
	a := archive.New(archive.Options{Redis: env.RDB, DB: db})
	for {
		if _, full, err := a.Step(ctx); err != nil {
			t.Fatal(err)
		} else if !full {
			break
		}
	}
	// The three oldest leave the hot window; two more are booked and not archived yet.
	if err := env.RDB.LTrim(ctx, store.BookTrades(bot.ID), 3, -1).Err(); err != nil {
		t.Fatal(err)
	}
	stage(5, 7)

	res, page := b.get("/dashboard/bots/" + bot.ID)
	if res.StatusCode != http.StatusOK {
		t.Fatalf("page: %d", res.StatusCode)
	}
	if !strings.Contains(page, `title="tr-6"`) || !strings.Contains(page, `title="tr-0"`) || !strings.Contains(page, "-0.028346234") {
		t.Fatalf("the page's trades lack the newest, the archived or the exact net P&L")
	}
	if strings.Index(page, `title="tr-6"`) > strings.Index(page, `title="tr-0"`) {
		t.Fatal("trades are not newest first")
	}

	res, body := b.get("/dashboard/bots/" + bot.ID + "/trades.csv")
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/csv") ||
		!strings.Contains(res.Header.Get("Content-Disposition"), "trend-trades.csv") {
		t.Fatalf("export: %d %q %q", res.StatusCode, res.Header.Get("Content-Type"), res.Header.Get("Content-Disposition"))
	}
	rows, err := csv.NewReader(strings.NewReader(body)).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 8 || rows[0][0] != "closed_at" {
		t.Fatalf("export: %d rows, want a header and 7 trades:\n%s", len(rows), body)
	}
	for i, row := range rows[1:] {
		if row[2] != fmt.Sprintf("tr-%d", i) || row[8] != "0.00012345" || row[14] != "-0.028346234" || row[9] != "65000.01" {
			t.Fatalf("row %d: %v", i+1, row)
		}
	}
	if rows[2][16] != `'=HYPERLINK("x")` {
		t.Fatalf("a formula-like cell is written as %q", rows[2][16])
	}
	if rows[1][0] != "2026-09-21T14:13:20.000Z" {
		t.Fatalf("closed_at %q, want UTC with milliseconds", rows[1][0])
	}

	// Another user's bot is not theirs to export.
	other := f.loggedIn(f.user("pro"))
	if res, _ := other.get("/dashboard/bots/" + bot.ID + "/trades.csv"); res.StatusCode != http.StatusNotFound {
		t.Fatalf("another user's export: %d", res.StatusCode)
	}
}
