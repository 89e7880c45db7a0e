package portfolio_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/portfolio"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

var booksNow = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// seedBooks gives owner a paper account with bots bots, each with an open BTC/USDT
// position of 0.01 at 60,000 and trades of +1.25 today and −0.5 two days ago (their days
// booked), and a bot without an account with a trade of +2.
func seedBooks(t *testing.T, rdb redis.UniversalClient, owner string, bots int) {
	t.Helper()
	ctx := context.Background()
	acct := "pa-" + owner
	if _, err := paper.NewAccounts(rdb).Ensure(ctx, paper.Config{ID: acct, Namespace: "ns", Name: "main", Owner: owner,
		Currency: "USDT", InitialBalance: decimal.NewFromInt(10000), FeeRate: decimal.Zero}); err != nil {
		t.Fatal(err)
	}
	for i := range bots + 1 {
		id := fmt.Sprintf("bot-%s-%d", owner, i)
		b := registry.Bot{ID: id, Name: id, Owner: owner, Account: registry.Account{Kind: registry.AccountPaper, ID: acct}}
		if i == bots {
			b.Account = registry.Account{Kind: registry.AccountPaper, Name: "gone"}
		}
		if err := registry.New(rdb).Project(ctx, b, "h-"+id); err != nil {
			t.Fatal(err)
		}
		trades := []position.Trade{{ID: "t1", BotID: id, Symbol: "BTC/USDT", NetPnl: httpapi.Num(decimal.RequireFromString("-0.5")),
			ClosedAt: booksNow.AddDate(0, 0, -2).UnixMilli()}, {ID: "t2", BotID: id, Symbol: "BTC/USDT",
			NetPnl: httpapi.Num(decimal.RequireFromString("1.25")), ClosedAt: booksNow.Add(-time.Hour).UnixMilli()}}
		if i == bots {
			trades = []position.Trade{{ID: "t1", BotID: id, Symbol: "BTC/USDT", NetPnl: httpapi.Num(decimal.NewFromInt(2)),
				ClosedAt: booksNow.Add(-time.Hour).UnixMilli()}}
		}
		p := position.Open("p-"+id, id, "BTC/USDT", exchange.Spot, position.Long, 1,
			position.Fill{Amount: decimal.RequireFromString("0.01"), Price: decimal.NewFromInt(60000), At: booksNow.UnixMilli()}, "s")
		if _, err := rdb.TxPipelined(ctx, func(tx redis.Pipeliner) error {
			for _, tr := range trades {
				if err := position.StageTrade(ctx, tx, tr); err != nil {
					return err
				}
			}
			if i == bots {
				return nil
			}
			return position.StagePosition(ctx, tx, id, p.Symbol, &p)
		}); err != nil {
			t.Fatal(err)
		}
		if _, err := analytics.Rebuild(ctx, rdb, id, false); err != nil {
			t.Fatal(err)
		}
	}
}

func newService(rdb redis.UniversalClient) *portfolio.Service {
	return portfolio.New(portfolio.Options{Redis: rdb, Prices: flat{}, Now: func() time.Time { return booksNow }})
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// The portfolio computed from books read once is the one Of reads for itself, and the
// books' combined history is the one analytics reads for the same bots.
func TestOfBooksIsOf(t *testing.T) {
	_, rdb := storetest.New(t)
	const owner = "books@example.io"
	seedBooks(t, rdb, owner, 3)
	s := newService(rdb)
	ctx := context.Background()
	want, err := s.Of(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	books, err := s.ReadBooks(ctx, "Books@Example.io")
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.OfBooks(ctx, books)
	if err != nil {
		t.Fatal(err)
	}
	if jsonOf(t, got) != jsonOf(t, want) {
		t.Fatalf("OfBooks %s\nOf %s", jsonOf(t, got), jsonOf(t, want))
	}
	// Three positions of 0.01 valued at 65,000 (+50 each); realised: three bots' 0.75, and
	// the bot without an account is in no account's figures.
	if n := len(got.Accounts[0].Positions); n != 3 || got.Totals.UnrealisedPnl.String() != "150" || got.Totals.RealisedPnl.String() != "2.25" {
		t.Fatalf("%d positions, totals %s", n, jsonOf(t, got.Totals))
	}
	bots := books.Bots()
	ids := make([]string, len(bots))
	for i, b := range bots {
		ids[i] = b.ID
	}
	if len(ids) != 4 || ids[3] != "bot-"+owner+"-3" {
		t.Fatalf("bots %v, want the 4 of the owner by ID", ids)
	}
	q, err := analytics.ParseQuery(analytics.Period7d, "", "", "true", booksNow)
	if err != nil {
		t.Fatal(err)
	}
	wantC, err := analytics.New(rdb).Combined(ctx, ids, q)
	if err != nil {
		t.Fatal(err)
	}
	gotC := books.Combined(q)
	// Every bot's trades, the one without an account too: 3 × 0.75 + 2.
	if !gotC.Realised.Equal(decimal.RequireFromString("4.25")) || !gotC.Today.Equal(wantC.Today) || gotC.Trades != wantC.Trades ||
		jsonOf(t, gotC.Curve(decimal.NewFromInt(1000))) != jsonOf(t, wantC.Curve(decimal.NewFromInt(1000))) {
		t.Fatalf("books' combined %+v, analytics' %+v", gotC, wantC)
	}
}

// The books cost three round trips for one bot as for twenty, and a bot listed in the
// owner's index but another owner's, or gone, is not among them.
func TestReadBooksRoundTrips(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	seedBooks(t, rdb, "one@example.io", 1)
	seedBooks(t, rdb, "twenty@example.io", 20)
	seedBooks(t, rdb, "other@example.io", 1)
	if err := rdb.SAdd(ctx, store.OwnerBots("one@example.io"), "bot-other@example.io-0", "bot-deleted").Err(); err != nil {
		t.Fatal(err)
	}
	s := newService(rdb)
	trips := &storetest.Trips{}
	rdb.AddHook(trips)
	for owner, n := range map[string]int{"one@example.io": 2, "twenty@example.io": 21} {
		_, _ = s.ReadBooks(ctx, owner) // the projections are decoded once, then cached
		trips.Take()
		books, err := s.ReadBooks(ctx, owner)
		if err != nil {
			t.Fatal(err)
		}
		if got := trips.Take(); len(got) != 3 {
			t.Fatalf("%s: %d round trips, want 3: %s", owner, len(got), strings.Join(got, " | "))
		}
		bots := books.Bots()
		if len(bots) != n {
			t.Fatalf("%s: %d bots, want %d", owner, len(bots), n)
		}
		for _, b := range bots {
			if b.Owner != owner {
				t.Fatalf("%s's books hold %s's bot %s", owner, b.Owner, b.ID)
			}
		}
		p, err := s.OfBooks(ctx, books)
		if err != nil || len(p.Accounts) != 1 || len(p.Accounts[0].Positions) != n-1 {
			t.Fatalf("%s: %+v, %v", owner, p, err)
		}
	}
}

// A corrupt position record fails the read, naming its key, as the book's own reads do.
func TestReadBooksCorruptPosition(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	const owner = "corrupt@example.io"
	seedBooks(t, rdb, owner, 1)
	key := store.BookPosition("bot-"+owner+"-0", "BTC/USDT")
	if err := rdb.Set(ctx, key, `{"size":`, 0).Err(); err != nil {
		t.Fatal(err)
	}
	_, err := newService(rdb).ReadBooks(ctx, owner)
	if err == nil || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "corrupt") {
		t.Fatalf("error %v, want one naming %s as corrupt", err, key)
	}
}
