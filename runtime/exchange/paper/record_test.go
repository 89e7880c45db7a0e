package paper_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/archive"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// archivePaper runs the archiver until the account's stream is copied (the sweep lists it:
// the first step of a new archiver sweeps).
func archivePaper(t *testing.T, rdb redis.UniversalClient, db *pgxpool.Pool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	a := archive.New(archive.Options{Redis: rdb, DB: db})
	if _, _, err := a.Step(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.XLen(ctx, store.PaperArchive("acct")).Result(); err != nil || n != 0 {
		t.Fatalf("the account's stream still holds %d entries (%v)", n, err)
	}
}

// A recorded paper account's money survives a lost Redis: after FLUSHALL the controller
// writes the account again at its initial balance, and the next fill first puts the
// recorded balance and holdings back, then fills on them, to the last decimal.
func TestAPaperAccountSurvivesALostRedis(t *testing.T) {
	_, rdb := storetest.New(t)
	db := dbtest.New(t)
	ctx := context.Background()
	ensureAccount(t, rdb, "10000")
	px := prices{}
	px.set(exchange.Spot, "BTC/USDT", "65000")
	records := paper.NewRecords(rdb, db)
	x := paper.NewExchange(rdb, "acct", "bot-1", px, paper.WithRecord(records))
	// As in TestSpotBuyThenSellToTheDecimal: 8999.3003 USDT and 0.01538 BTC after the buy.
	place(t, x, exchange.OrderRequest{ClientOrderID: "c-buy", Symbol: "BTC/USDT", Kind: exchange.Spot,
		Side: exchange.SideBuy, Type: exchange.Market, Amount: testkit.D("0.01538")})
	testkit.EqualD(t, "balance after buy", balance(t, x), "8999.3003")
	archivePaper(t, rdb, db)

	if err := storetest.FlushAll(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	ensureAccount(t, rdb, "10000")
	testkit.EqualD(t, "balance before the restore", balance(t, x), "10000")

	// The sell needs the BTC the buy left: the fill restores the account first.
	px.set(exchange.Spot, "BTC/USDT", "66000")
	place(t, x, exchange.OrderRequest{ClientOrderID: "c-sell", Symbol: "BTC/USDT", Kind: exchange.Spot,
		Side: exchange.SideSell, Type: exchange.Market, Amount: testkit.D("0.01538")})
	testkit.EqualD(t, "final balance", balance(t, x), "10013.36522")
	h, err := x.Holding(ctx, "BTC")
	if err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "holding after sell", h, "0")

	// A refill of a recorded account is recorded too: lost again, it is still refilled.
	if _, err := paper.NewAccounts(rdb).Refill(ctx, "acct", time.Now()); err != nil {
		t.Fatal(err)
	}
	archivePaper(t, rdb, db)
	if err := storetest.FlushAll(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	ensureAccount(t, rdb, "10000")
	if err := records.Account(ctx, "acct"); err != nil {
		t.Fatal(err)
	}
	st, err := paper.NewAccounts(rdb).Get(ctx, "acct")
	if err != nil {
		t.Fatal(err)
	}
	if !st.Balance.Equal(testkit.D("10000")) || st.LastRefillAt.IsZero() {
		t.Fatalf("after the refill and a loss: %+v", st)
	}
}

// An account that traded before it was recorded (an upgrade) records what Redis holds at
// its first recorded fill, so that its holdings survive the next loss too.
func TestAnAccountTradedBeforeTheRecordIsRecordedWhole(t *testing.T) {
	_, rdb := storetest.New(t)
	db := dbtest.New(t)
	ctx := context.Background()
	ensureAccount(t, rdb, "10000")
	px := prices{}
	px.set(exchange.Spot, "BTC/USDT", "65000")
	px.set(exchange.Spot, "ETH/USDT", "3000")
	before := paper.NewExchange(rdb, "acct", "bot-1", px)
	place(t, before, exchange.OrderRequest{ClientOrderID: "c-btc", Symbol: "BTC/USDT", Kind: exchange.Spot,
		Side: exchange.SideBuy, Type: exchange.Market, Amount: testkit.D("0.01538")})
	records := paper.NewRecords(rdb, db)
	x := paper.NewExchange(rdb, "acct", "bot-1", px, paper.WithRecord(records))
	place(t, x, exchange.OrderRequest{ClientOrderID: "c-eth", Symbol: "ETH/USDT", Kind: exchange.Spot,
		Side: exchange.SideBuy, Type: exchange.Market, Amount: testkit.D("0.1")})
	want := balance(t, x)
	archivePaper(t, rdb, db)
	if err := storetest.FlushAll(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	ensureAccount(t, rdb, "10000")
	if err := records.Account(ctx, "acct"); err != nil {
		t.Fatal(err)
	}
	testkit.EqualD(t, "balance", balance(t, x), want.String())
	for base, amount := range map[string]string{"BTC": "0.01538", "ETH": "0.1"} {
		h, err := x.Holding(ctx, base)
		if err != nil {
			t.Fatal(err)
		}
		testkit.EqualD(t, base, h, amount)
	}
}
