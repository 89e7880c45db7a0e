package executor_test

import (
	"context"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/archive"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/exchange"
)

// What the executor commits reaches PostgreSQL through the archive: after a run of fills,
// refusals and closes, the archived trades are the bot's trades (count and summed net PnL to
// the last decimal), every order record is there in its final state, and every signal has
// its one result.
func TestTheArchiveHoldsWhatTheExecutorCommitted(t *testing.T) {
	h := newHarness(t, nil)
	db := dbtest.New(t)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	signals := 0
	for i := range 12 {
		body := `{"action":"buy","symbol":"BTCUSDT"}`
		if i%2 == 1 {
			body = `{"action":"close","symbol":"BTCUSDT"}`
			h.px.set(exchange.Spot, "BTC/USDT", decimal.NewFromInt(65000+int64(i)*37).String())
		}
		h.send(body)
		signals++
	}
	h.send(`{"action":"buy","symbol":"BTCUSDT","amount":1000000}`) // refused: not enough USDT
	signals++

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	a := archive.New(archive.Options{Redis: h.rdb, DB: db})
	go func() { _ = a.Run(ctx) }()
	trades := h.trades()
	wantNet := decimal.Zero
	for _, tr := range trades {
		wantNet = wantNet.Add(tr.NetPnl.Decimal)
	}
	var rows, results int
	var net decimal.Decimal
	for ctx.Err() == nil {
		if err := db.QueryRow(ctx, `SELECT (SELECT count(*) FROM trades), coalesce((SELECT sum(net_pnl) FROM trades), 0),
			(SELECT count(*) FROM signal_results)`).Scan(&rows, &net, &results); err != nil {
			t.Fatal(err)
		}
		if rows == len(trades) && results == signals {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if rows != len(trades) || len(trades) != 6 || !net.Equal(wantNet) {
		t.Fatalf("archive: %d trades, net %s; the book: %d trades, net %s", rows, net, len(trades), wantNet)
	}
	if results != signals {
		t.Fatalf("archive: %d results, want %d", results, signals)
	}
	var open int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM orders WHERE status NOT IN ($1, $2)`,
		string(exchange.StatusFilled), string(exchange.StatusRejected)).Scan(&open); err != nil {
		t.Fatal(err)
	}
	if open != 0 {
		t.Errorf("%d archived orders are not in their final state", open)
	}
	var orders int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM orders`).Scan(&orders); err != nil || orders < 12 {
		t.Errorf("archive: %d orders (%v), want one per fill", orders, err)
	}
}
