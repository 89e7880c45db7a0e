package executor_test

import (
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
)

// checkDays compares the bot's stored per-day aggregates with the ones computed again
// from its trade list, and the stored starting equity with start.
func checkDays(t *testing.T, h *harness, start string) {
	t.Helper()
	trades := h.trades()
	want := map[string]analytics.Day{}
	for _, tr := range trades {
		date := analytics.DateOfMS(tr.ClosedAt).String()
		d := want[date]
		d.Add(tr)
		want[date] = d
	}
	stored, err := h.rdb.HGetAll(h.ctx, store.BookDays(h.bot.ID)).Result()
	if err != nil {
		t.Fatal(err)
	}
	count, fields := stored["trades"], len(want)+1 // the days and the start
	if len(trades) > 0 {
		fields++ // the count, written with the first trade
	} else if count == "" {
		count = "0"
	}
	if stored["start"] != start || count != strconv.Itoa(len(trades)) || len(stored) != fields {
		t.Fatalf("days hash %v, want start %s, %d trades over %d days", stored, start, len(trades), len(want))
	}
	for date, w := range want {
		var got analytics.Day
		if err := json.Unmarshal([]byte(stored[date]), &got); err != nil {
			t.Fatalf("day %s: %v", date, err)
		}
		if g, w := jsonOf(got), jsonOf(w); g != w {
			t.Errorf("day %s stored %s, from the trades %s", date, g, w)
		}
	}
}

func jsonOf(v any) string {
	data, _ := json.Marshal(v)
	return string(data)
}

// Every booked trade is counted in its UTC day in the booking's own transaction, partial
// closes and reversals included, across midnight, and a booking repeated after a crash
// counts once.
func TestBookingKeepsTheDays(t *testing.T) {
	h := newHarness(t, func(b *registry.Bot) { b.Market, b.Leverage = "futures", 5 })
	h.now = time.Date(2026, 11, 21, 22, 0, 0, 0, time.UTC)
	h.px.set(exchange.Futures, "ETH/USDT", "3000")
	h.px.set(exchange.Futures, "BTC/USDT", "60000")
	// The first entry is sized from the whole free balance of 10,000: the starting equity.
	h.ok(h.send(`{"action":"sell","symbol":"ETHUSDT","size":"1"}`))
	checkDays(t, h, "10000")
	h.px.set(exchange.Futures, "ETH/USDT", "2900")
	h.ok(h.send(`{"action":"exit_short","symbol":"ETHUSDT","size":"50%"}`))
	h.now = h.now.Add(90 * time.Minute) // past midnight: the 22nd
	h.px.set(exchange.Futures, "ETH/USDT", "3100")
	h.ok(h.send(`{"action":"close_short","symbol":"ETHUSDT"}`))
	// Later entries leave the starting equity alone.
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT","size":"0.01"}`))
	checkDays(t, h, "10000")
	h.px.set(exchange.Futures, "BTC/USDT", "61000")
	// A reversal that dies after its close leg's fill, then runs again: one trade.
	executor.SetAfterPlace(h.ex, func(leg string) error { return errors.New("killed") })
	env := h.envelope(`{"action":"sell","symbol":"BTCUSDT"}`)
	if err := h.ex.Handle(h.ctx, env); err == nil {
		t.Fatal("the crash did not happen")
	}
	executor.SetAfterPlace(h.ex, nil)
	h.ok(h.run(env))
	if n := len(h.trades()); n != 3 { // the half, the rest, the reversal's close
		t.Fatalf("%d trades, want 3", n)
	}
	checkDays(t, h, "10000")

	// The report of both days reads the same figures as the trade list gives.
	q, err := analytics.ParseQuery("", "2026-11-21", "2026-11-22", "", h.now)
	if err != nil {
		t.Fatal(err)
	}
	r, err := analytics.New(h.rdb).Bot(h.ctx, h.bot, q)
	if err != nil {
		t.Fatal(err)
	}
	net := testkit.D("0")
	wins := 0
	for _, tr := range h.trades() {
		net = net.Add(tr.NetPnl.Decimal)
		if tr.NetPnl.IsPositive() {
			wins++
		}
	}
	if r.Metrics.TotalTrades != 3 || r.Metrics.WinningTrades != wins || !r.Metrics.TotalPnL.Equal(net) ||
		r.StartingEquity == nil || !r.StartingEquity.Equal(testkit.D("10000")) {
		t.Fatalf("report %+v, want 3 trades, %d wins, net %s", r.Metrics, wins, net)
	}
}
