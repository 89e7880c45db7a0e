package paper_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// prices is a pinned price source.
type prices map[string]decimal.Decimal

func (p prices) Price(_ context.Context, kind exchange.Kind, symbol string) (decimal.Decimal, error) {
	if v, ok := p[string(kind)+" "+symbol]; ok {
		return v, nil
	}
	return decimal.Zero, fmt.Errorf("no price for %s %s", kind, symbol)
}

func (p prices) set(kind exchange.Kind, symbol, v string) { p[string(kind)+" "+symbol] = testkit.D(v) }

func setup(t *testing.T) (context.Context, redis.UniversalClient, prices, *paper.Exchange) {
	t.Helper()
	_, rdb := storetest.New(t)
	ensureAccount(t, rdb, "10000")
	px := prices{}
	return context.Background(), rdb, px, paper.NewExchange(rdb, "acct", "bot-1", px)
}

// ensureAccount creates the paper account "acct" with initial USDT and a fee rate of 0.1 %.
func ensureAccount(tb testing.TB, rdb redis.UniversalClient, initial string) {
	tb.Helper()
	if _, err := paper.NewAccounts(rdb).Ensure(context.Background(), paper.Config{ID: "acct", Owner: "a@x.io",
		Currency: "USDT", InitialBalance: testkit.D(initial), FeeRate: testkit.D("0.001")}); err != nil {
		tb.Fatal(err)
	}
}

func balance(t *testing.T, x *paper.Exchange) decimal.Decimal {
	t.Helper()
	b, err := x.Balance(context.Background(), "USDT")
	if err != nil {
		t.Fatal(err)
	}
	return b.Free
}

func place(t *testing.T, x *paper.Exchange, r exchange.OrderRequest) exchange.Order {
	t.Helper()
	o, err := x.PlaceOrder(context.Background(), r)
	if err != nil {
		t.Fatalf("place %+v: %v", r, err)
	}
	return o
}

func TestSpotBuyThenSellToTheDecimal(t *testing.T) {
	ctx, _, px, x := setup(t)
	px.set(exchange.Spot, "BTC/USDT", "65000")
	// 10% of 10,000 USDT at 65,000: floor(1000 / 65000 = 0.0153846…, 5 dp) = 0.01538 BTC.
	// notional 0.01538 × 65000 = 999.70; fee 999.70 × 0.001 = 0.9997;
	// balance 10000 − 999.70 − 0.9997 = 8999.3003.
	buy := place(t, x, exchange.OrderRequest{ClientOrderID: "c-buy", Symbol: "BTC/USDT", Kind: exchange.Spot,
		Side: exchange.SideBuy, Type: exchange.Market, Amount: testkit.D("0.01538")})
	if buy.Status != exchange.StatusFilled || buy.FeeAsset != "USDT" {
		t.Fatalf("buy = %+v", buy)
	}
	testkit.EqualD(t, "avgPrice", buy.AvgPrice, "65000")
	testkit.EqualD(t, "filled", buy.FilledAmount, "0.01538")
	testkit.EqualD(t, "fee", buy.Fee, "0.9997")
	testkit.EqualD(t, "balance after buy", balance(t, x), "8999.3003")
	h, _ := x.Holding(ctx, "BTC")
	testkit.EqualD(t, "holding", h, "0.01538")

	// Sell at 66,000: notional 1015.08, fee 1.01508, credit 1014.06492;
	// balance 8999.3003 + 1014.06492 = 10013.36522 (realised net +13.36522 =
	// 15.38 gross − 0.9997 − 1.01508 fees).
	px.set(exchange.Spot, "BTC/USDT", "66000")
	sell := place(t, x, exchange.OrderRequest{ClientOrderID: "c-sell", Symbol: "BTC/USDT", Kind: exchange.Spot,
		Side: exchange.SideSell, Type: exchange.Market, Amount: testkit.D("0.01538")})
	testkit.EqualD(t, "sell fee", sell.Fee, "1.01508")
	testkit.EqualD(t, "final balance", balance(t, x), "10013.36522")
	h, _ = x.Holding(ctx, "BTC")
	testkit.EqualD(t, "holding after sell", h, "0")
}

func TestSameClientOrderIDMovesMoneyOnce(t *testing.T) {
	ctx, rdb, px, x := setup(t)
	px.set(exchange.Spot, "ETH/USDT", "3000")
	req := exchange.OrderRequest{ClientOrderID: "sg-1", Symbol: "ETH/USDT", Kind: exchange.Spot,
		Side: exchange.SideBuy, Type: exchange.Market, Amount: testkit.D("0.5")}
	first := place(t, x, req)
	px.set(exchange.Spot, "ETH/USDT", "3100") // a retry must not re-price
	second := place(t, x, req)
	if !sameOrder(first, second) {
		t.Fatalf("second placement = %+v, want the first %+v", second, first)
	}
	// 0.5 × 3000 = 1500 + 1.5 fee.
	testkit.EqualD(t, "balance", balance(t, x), "8498.5")
	got, err := x.GetOrder(ctx, exchange.Spot, "ETH/USDT", "sg-1")
	if err != nil || !sameOrder(got, first) {
		t.Fatalf("GetOrder = %+v, %v", got, err)
	}
	if _, err := x.GetOrder(ctx, exchange.Spot, "ETH/USDT", "sg-2"); !errors.Is(err, exchange.ErrOrderNotFound) {
		t.Fatalf("unknown order: %v", err)
	}
	// Another bot on the same account never sees (or reuses) this bot's order.
	other := paper.NewExchange(rdb, "acct", "bot-2", px)
	if _, err := other.GetOrder(ctx, exchange.Spot, "ETH/USDT", "sg-1"); !errors.Is(err, exchange.ErrOrderNotFound) {
		t.Fatalf("other bot's GetOrder: %v", err)
	}
	if _, err := other.PlaceOrder(ctx, req); errs.CodeOf(err) != errs.ExchangeError {
		t.Fatalf("other bot reusing the client ID: %v", err)
	}
}

func TestConcurrentPlacementsAreAtomic(t *testing.T) {
	_, _, px, x := setup(t)
	px.set(exchange.Spot, "SOL/USDT", "150")
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		for dup := 0; dup < 3; dup++ { // each order is sent three times at once
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				_, err := x.PlaceOrder(context.Background(), exchange.OrderRequest{ClientOrderID: fmt.Sprintf("c-%d", i),
					Symbol: "SOL/USDT", Kind: exchange.Spot, Side: exchange.SideBuy, Type: exchange.Market, Amount: testkit.D("1.001")})
				if err != nil {
					t.Error(err)
				}
			}(i)
		}
	}
	wg.Wait()
	// 20 orders × (1.001 × 150 = 150.15 + 0.15015 fee = 150.30015) = 3006.003.
	testkit.EqualD(t, "balance", balance(t, x), "6993.997")
	h, _ := x.Holding(context.Background(), "SOL")
	testkit.EqualD(t, "holding", h, "20.02")
}

func TestFuturesLongAndShortToTheDecimal(t *testing.T) {
	ctx, rdb, px, x := setup(t)
	px.set(exchange.Futures, "BTC/USDT", "65000")
	// Long 0.15384 BTC at 65,000, leverage 10: notional 9999.60, margin 999.96, fee 9.9996;
	// balance 10000 − 1009.9596 = 8990.0404, margin reserved 999.96.
	place(t, x, exchange.OrderRequest{ClientOrderID: "f1", Symbol: "BTC/USDT", Kind: exchange.Futures,
		Side: exchange.SideBuy, Type: exchange.Market, Amount: testkit.D("0.15384"), Leverage: 10})
	testkit.EqualD(t, "balance", balance(t, x), "8990.0404")
	st, _ := paper.NewAccounts(rdb).Get(ctx, "acct")
	testkit.EqualD(t, "margin", st.Margin, "999.96")
	testkit.EqualD(t, "equity", st.Equity, "9990.0004")
	p, _ := x.FuturesPosition(ctx, "BTC/USDT")
	if p == nil || p.Side != "long" || p.Leverage != 10 {
		t.Fatalf("position = %+v", p)
	}
	// An opposite order larger than the position would flip it: refused (one-way mode).
	_, err := x.PlaceOrder(ctx, exchange.OrderRequest{ClientOrderID: "f-flip", Symbol: "BTC/USDT", Kind: exchange.Futures,
		Side: exchange.SideSell, Type: exchange.Market, Amount: testkit.D("0.2"), Leverage: 10})
	if errs.CodeOf(err) != errs.InvalidAmount {
		t.Fatalf("flip: %v", err)
	}
	// Close at 66,000: notional 10153.44, fee 10.15344, gross +153.84;
	// credit 999.96 + 153.84 − 10.15344 = 1143.64656; balance 10133.68696.
	px.set(exchange.Futures, "BTC/USDT", "66000")
	place(t, x, exchange.OrderRequest{ClientOrderID: "f2", Symbol: "BTC/USDT", Kind: exchange.Futures,
		Side: exchange.SideSell, Type: exchange.Market, Amount: testkit.D("0.15384"), ReduceOnly: true})
	testkit.EqualD(t, "balance after close", balance(t, x), "10133.68696")
	st, _ = paper.NewAccounts(rdb).Get(ctx, "acct")
	testkit.EqualD(t, "margin after close", st.Margin, "0")
	if p, _ := x.FuturesPosition(ctx, "BTC/USDT"); p != nil {
		t.Fatalf("position left: %+v", p)
	}

	// Short 1 ETH at 3000, leverage 5: margin 600, fee 3 → 10133.68696 − 603 = 9530.68696.
	// Close at 3300: gross −300, fee 3.3, credit 600 − 300 − 3.3 = 296.7 → 9827.38696.
	px.set(exchange.Futures, "ETH/USDT", "3000")
	place(t, x, exchange.OrderRequest{ClientOrderID: "s1", Symbol: "ETH/USDT", Kind: exchange.Futures,
		Side: exchange.SideSell, Type: exchange.Market, Amount: testkit.D("1"), Leverage: 5})
	testkit.EqualD(t, "balance after short", balance(t, x), "9530.68696")
	px.set(exchange.Futures, "ETH/USDT", "3300")
	place(t, x, exchange.OrderRequest{ClientOrderID: "s2", Symbol: "ETH/USDT", Kind: exchange.Futures,
		Side: exchange.SideBuy, Type: exchange.Market, Amount: testkit.D("1"), ReduceOnly: true})
	testkit.EqualD(t, "balance after short close", balance(t, x), "9827.38696")
}

func TestFuturesLossIsCappedAtTheMargin(t *testing.T) {
	_, _, px, x := setup(t)
	px.set(exchange.Futures, "BTC/USDT", "50000")
	// 0.1 BTC at 50,000 ×10: margin 500, fee 5 → 9495.
	place(t, x, exchange.OrderRequest{ClientOrderID: "l1", Symbol: "BTC/USDT", Kind: exchange.Futures,
		Side: exchange.SideBuy, Type: exchange.Market, Amount: testkit.D("0.1"), Leverage: 10})
	// At 40,000 the loss (1000 + 4 fee) exceeds the 500 margin: the credit is 0, never negative.
	px.set(exchange.Futures, "BTC/USDT", "40000")
	place(t, x, exchange.OrderRequest{ClientOrderID: "l2", Symbol: "BTC/USDT", Kind: exchange.Futures,
		Side: exchange.SideSell, Type: exchange.Market, Amount: testkit.D("0.1"), ReduceOnly: true})
	testkit.EqualD(t, "balance", balance(t, x), "9495")
}

func TestLimitOrdersFillAtTheLimitPrice(t *testing.T) {
	_, _, px, x := setup(t)
	px.set(exchange.Spot, "BTC/USDT", "65000")
	o := place(t, x, exchange.OrderRequest{ClientOrderID: "lim", Symbol: "BTC/USDT", Kind: exchange.Spot,
		Side: exchange.SideBuy, Type: exchange.Limit, Amount: testkit.D("0.001"), Price: testkit.D("60000.5")})
	testkit.EqualD(t, "avgPrice", o.AvgPrice, "60000.5")
	testkit.EqualD(t, "fee", o.Fee, "0.0600005")
	testkit.EqualD(t, "balance", balance(t, x), "9939.9394995")
}

func TestMarketPriceRoundsToTheTick(t *testing.T) {
	_, _, px, x := setup(t)
	px.set(exchange.Spot, "DOGE/USDT", "0.123456789")
	o := place(t, x, exchange.OrderRequest{ClientOrderID: "doge", Symbol: "DOGE/USDT", Kind: exchange.Spot,
		Side: exchange.SideBuy, Type: exchange.Market, Amount: testkit.D("100")})
	testkit.EqualD(t, "avgPrice", o.AvgPrice, "0.12346")
}

func TestRefusals(t *testing.T) {
	_, _, px, x := setup(t)
	px.set(exchange.Spot, "BTC/USDT", "65000")
	px.set(exchange.Spot, "DOGE/USDT", "0.1")
	px.set(exchange.Futures, "BTC/USDT", "65000")
	cases := []struct {
		name    string
		req     exchange.OrderRequest
		code    errs.Code
		details map[string]string
	}{
		{"DOGE amount off the step", exchange.OrderRequest{Symbol: "DOGE/USDT", Kind: exchange.Spot, Side: exchange.SideBuy,
			Type: exchange.Market, Amount: testkit.D("100.5")}, errs.InvalidAmount, nil},
		{"below min notional", exchange.OrderRequest{Symbol: "BTC/USDT", Kind: exchange.Spot, Side: exchange.SideBuy,
			Type: exchange.Market, Amount: testkit.D("0.00007")}, errs.InvalidAmount, map[string]string{"notional": "4.55", "minNotional": "5"}},
		{"limit price off the tick", exchange.OrderRequest{Symbol: "BTC/USDT", Kind: exchange.Spot, Side: exchange.SideBuy,
			Type: exchange.Limit, Amount: testkit.D("0.001"), Price: testkit.D("60000.005")}, errs.InvalidPrice, nil},
		{"unknown symbol", exchange.OrderRequest{Symbol: "PEPE/USDT", Kind: exchange.Spot, Side: exchange.SideBuy,
			Type: exchange.Market, Amount: testkit.D("1")}, errs.InvalidSymbol, nil},
		// 1 × 65000 + 65 fee = 65065 needed, 10000 there.
		{"insufficient quote", exchange.OrderRequest{Symbol: "BTC/USDT", Kind: exchange.Spot, Side: exchange.SideBuy,
			Type: exchange.Market, Amount: testkit.D("1")}, errs.InsufficientBalance, map[string]string{"required": "65065", "available": "10000"}},
		{"sell more than held", exchange.OrderRequest{Symbol: "BTC/USDT", Kind: exchange.Spot, Side: exchange.SideSell,
			Type: exchange.Market, Amount: testkit.D("0.1")}, errs.InsufficientBalance, map[string]string{"required": "0.1", "available": "0"}},
		// margin 1.5 × 65000 / 10 = 9750 + fee 97.5 = 9847.5 fits; 2 BTC: 13000 + 130.
		{"insufficient futures margin", exchange.OrderRequest{Symbol: "BTC/USDT", Kind: exchange.Futures, Side: exchange.SideBuy,
			Type: exchange.Market, Amount: testkit.D("2"), Leverage: 10}, errs.InsufficientBalance, map[string]string{"required": "13130", "available": "10000"}},
		{"reduce-only without a position", exchange.OrderRequest{Symbol: "BTC/USDT", Kind: exchange.Futures, Side: exchange.SideSell,
			Type: exchange.Market, Amount: testkit.D("0.1"), ReduceOnly: true}, errs.PositionNotFound, nil},
		{"stop orders are not paper orders", exchange.OrderRequest{Symbol: "BTC/USDT", Kind: exchange.Spot, Side: exchange.SideSell,
			Type: exchange.StopLoss, Amount: testkit.D("0.1")}, errs.ExchangeError, nil},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.req.ClientOrderID = fmt.Sprintf("r-%d", i)
			_, err := x.PlaceOrder(context.Background(), c.req)
			e, ok := errs.As(err)
			if !ok || e.Code != c.code {
				t.Fatalf("err = %v, want %s", err, c.code)
			}
			for k, want := range c.details {
				got, ok := e.Details[k].(decimal.Decimal)
				if !ok || !got.Equal(testkit.D(want)) {
					t.Errorf("details[%s] = %v, want %s", k, e.Details[k], want)
				}
			}
		})
	}
	testkit.EqualD(t, "balance untouched", balance(t, x), "10000")
}

func TestDeleteRemovesExchangeState(t *testing.T) {
	ctx, rdb, px, x := setup(t)
	px.set(exchange.Spot, "BTC/USDT", "65000")
	place(t, x, exchange.OrderRequest{ClientOrderID: "c", Symbol: "BTC/USDT", Kind: exchange.Spot,
		Side: exchange.SideBuy, Type: exchange.Market, Amount: testkit.D("0.001")})
	if err := paper.NewAccounts(rdb).Delete(ctx, "acct"); err != nil {
		t.Fatal(err)
	}
	n, _ := rdb.Exists(ctx, store.PaperAccount("acct"), store.PaperOrders("acct"), store.PaperPositions("acct")).Result()
	if n != 0 {
		t.Fatalf("%d keys left", n)
	}
}

// sameOrder compares orders by value (decimals by Equal: a stored order decodes to an
// equal decimal with another internal representation).
func sameOrder(a, b exchange.Order) bool {
	return a.ID == b.ID && a.ClientOrderID == b.ClientOrderID && a.Status == b.Status &&
		a.Amount.Equal(b.Amount) && a.FilledAmount.Equal(b.FilledAmount) && a.AvgPrice.Equal(b.AvgPrice) &&
		a.Fee.Equal(b.Fee) && a.CreatedAt == b.CreatedAt
}

func TestCatalogue(t *testing.T) {
	if got := paper.Symbols(); len(got) != 6 || got[0] != "BTC/USDT" {
		t.Fatalf("symbols = %v", got)
	}
	want := map[string][2]string{"BTC/USDT": {"0.01", "0.00001"}, "ETH/USDT": {"0.01", "0.0001"}, "DOGE/USDT": {"0.00001", "1"}}
	for _, kind := range []exchange.Kind{exchange.Spot, exchange.Futures} {
		for sym, w := range want {
			m, ok := paper.Market(kind, sym)
			if !ok || !m.TickSize.Equal(testkit.D(w[0])) || !m.StepSize.Equal(testkit.D(w[1])) || !m.MinNotional.Equal(testkit.D("5")) {
				t.Errorf("%s %s = %+v", kind, sym, m)
			}
		}
	}
}

// BenchmarkPlaceOrder is one paper fill (spot market buy): price, the fill script with the
// order record (after the first, from the values the exchange's last fill wrote). It
// reports Redis round trips per fill and fails above one: the first fill's read and its
// script's loading (EVALSHA answered NOSCRIPT, then EVAL) aside, a fill is one script.
func BenchmarkPlaceOrder(b *testing.B) {
	ctx := context.Background()
	_, rdb := storetest.New(b)
	ensureAccount(b, rdb, "1000000000")
	px := prices{}
	px.set(exchange.Spot, "BTC/USDT", "65000")
	x := paper.NewExchange(rdb, "acct", "bot", px)
	trips := &storetest.Trips{}
	rdb.AddHook(trips)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := x.PlaceOrder(ctx, exchange.OrderRequest{ClientOrderID: fmt.Sprintf("b-%d", i), Symbol: "BTC/USDT",
			Kind: exchange.Spot, Side: exchange.SideBuy, Type: exchange.Market, Amount: testkit.D("0.001")}); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	n := len(trips.Take())
	b.ReportMetric(float64(n)/float64(b.N), "trips/op")
	if n > b.N+3 {
		b.Fatalf("%d Redis round trips for %d fills, want at most %d", n, b.N, b.N+3)
	}
}
