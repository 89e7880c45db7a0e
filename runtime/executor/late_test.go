package executor_test

import (
	"errors"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// An entry delivered again after its result left Redis (an outage of every executor
// longer than the results' life, or a dead letter replayed by hand) finds its result in
// PostgreSQL and is not executed twice; while PostgreSQL cannot answer, it waits.
func TestALateEntryFindsItsResultInTheArchive(t *testing.T) {
	h := newHarness(t, nil)
	db := dbtest.New(t)
	h.ex.WithBookRecord(db)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	env := h.envelope(`{"action":"buy","symbol":"BTCUSDT"}`)
	first := h.ok(h.run(env))
	balance, size := h.balance(), h.position("BTC/USDT").Size
	archiveAll(t, h, db)

	// The result's Redis copy expires (the order record that holds it, and a key of its
	// own had it one); the entry comes back a day and an hour later.
	if err := h.rdb.Del(h.ctx, store.SignalResult(env.SignalID), store.BookOrder(h.bot.ID, position.ClientOrderID(env.SignalID, ""))).Err(); err != nil {
		t.Fatal(err)
	}
	h.now = h.now.Add(queue.ResultTTL() + time.Hour)

	// PostgreSQL unreachable: the entry waits rather than run again.
	down := dbtest.Pool(t, dbtest.NewURL(t))
	down.Close()
	blind := executor.New(executor.Deps{Redis: h.rdb, Prices: h.px, Logger: h.quiet, Now: func() time.Time { return h.now }}).
		WithBookRecord(down)
	if err := blind.Handle(h.ctx, env); err == nil {
		t.Fatal("a late entry ran while PostgreSQL could not say whether it had")
	}

	again := h.run(env)
	if again.Timestamp != first.Timestamp || again.Message != first.Message {
		t.Fatalf("the late entry's result %+v, want the first one %+v", again, first)
	}
	if !h.balance().Equal(balance) || !h.position("BTC/USDT").Size.Equal(size.Decimal) {
		t.Fatalf("the late entry filled again: balance %s (was %s), size %s (was %s)", h.balance(), balance,
			h.position("BTC/USDT").Size, size)
	}
}

// A paper fill whose booking never came, retried after its paper order left Redis: the
// order is found in PostgreSQL and booked, never filled a second time.
func TestALatePaperRetryBooksTheFillItMade(t *testing.T) {
	h := newHarness(t, nil)
	db := dbtest.New(t)
	h.ex.WithBookRecord(db)
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	h.ok(h.send(`{"action":"buy","symbol":"BTCUSDT"}`))
	h.ok(h.send(`{"action":"close","symbol":"BTCUSDT"}`))

	env := h.envelope(`{"action":"buy","symbol":"BTCUSDT"}`)
	crash := errors.New("the executor died after the fill")
	executor.SetAfterPlace(h.ex, func(string) error { return crash })
	if err := h.ex.Handle(h.ctx, env); !errors.Is(err, crash) {
		t.Fatalf("first attempt: %v", err)
	}
	executor.SetAfterPlace(h.ex, nil)
	filled := h.balance()
	if h.position("BTC/USDT") != nil {
		t.Fatal("booked before the crash")
	}
	archiveAll(t, h, db)

	// The paper order's Redis copy expires; every executor was down past its life.
	orders, err := storetest.Keys(h.ctx, h.rdb, store.PaperOrder("acct-1", "*"))
	if err != nil || len(orders) == 0 {
		t.Fatalf("paper orders %v %v", orders, err)
	}
	if err := h.rdb.Del(h.ctx, orders...).Err(); err != nil {
		t.Fatal(err)
	}
	h.now = h.now.Add(paper.OrderTTL() + time.Hour)

	h.ok(h.run(env))
	if !h.balance().Equal(filled) {
		t.Fatalf("the late retry filled again: balance %s, after the first fill %s", h.balance(), filled)
	}
	if p := h.position("BTC/USDT"); p == nil || !p.Size.IsPositive() {
		t.Fatalf("the fill was not booked: %+v", p)
	}
}

// The same, with PostgreSQL behind (down for longer than the lives): what the archive has
// not copied yet is found in the streams that wait for it, so a late entry still neither
// runs twice nor fills twice.
func TestALateEntryFindsWhatTheArchiveHasNotCopied(t *testing.T) {
	h := newHarness(t, nil)
	h.ex.WithBookRecord(dbtest.New(t)) // no archiver runs: everything waits in the streams
	h.px.set(exchange.Spot, "BTC/USDT", "65000")
	env := h.envelope(`{"action":"buy","symbol":"BTCUSDT"}`)
	first := h.ok(h.run(env))
	balance := h.balance()
	if err := h.rdb.Del(h.ctx, store.SignalResult(env.SignalID)).Err(); err != nil {
		t.Fatal(err)
	}
	h.now = h.now.Add(queue.ResultTTL() + time.Hour)
	if again := h.run(env); again.Timestamp != first.Timestamp {
		t.Fatalf("the late entry ran again: %+v, first %+v", again, first)
	}
	if !h.balance().Equal(balance) {
		t.Fatalf("the late entry filled again: balance %s, was %s", h.balance(), balance)
	}

	h.ok(h.send(`{"action":"close","symbol":"BTCUSDT"}`))
	late := h.envelope(`{"action":"buy","symbol":"BTCUSDT"}`)
	executor.SetAfterPlace(h.ex, func(string) error { return errors.New("died after the fill") })
	if err := h.ex.Handle(h.ctx, late); err == nil {
		t.Fatal("the crash was not reported")
	}
	executor.SetAfterPlace(h.ex, nil)
	filled := h.balance()
	orders, err := storetest.Keys(h.ctx, h.rdb, store.PaperOrder("acct-1", "*"))
	if err != nil || len(orders) == 0 {
		t.Fatalf("paper orders %v %v", orders, err)
	}
	if err := h.rdb.Del(h.ctx, orders...).Err(); err != nil {
		t.Fatal(err)
	}
	h.now = h.now.Add(paper.OrderTTL() + time.Hour)
	h.ok(h.run(late))
	if !h.balance().Equal(filled) || h.position("BTC/USDT") == nil {
		t.Fatalf("late paper retry: balance %s (after the fill %s), position %+v", h.balance(), filled, h.position("BTC/USDT"))
	}
}
