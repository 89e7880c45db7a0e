package readapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/binance"
	"github.com/sigops/sigops/runtime/exchange/binance/binancefake"
	"github.com/sigops/sigops/runtime/exchange/connectors"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/portfolio"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/webhookd/readapi"
)

// prices is the market data of the paper accounts, by kind and symbol.
type prices map[string]decimal.Decimal

func (p prices) Price(_ context.Context, kind exchange.Kind, symbol string) (decimal.Decimal, error) {
	v, ok := p[string(kind)+" "+symbol]
	if !ok {
		return decimal.Zero, context.DeadlineExceeded
	}
	return v, nil
}

var portfolioKey = []byte("portfolio-test-master-key-32byte")

// portfolioBody is the answer's data as a client reads it.
type portfolioBody struct {
	Accounts []struct {
		ID, Name, Kind, Exchange, Currency string
		Balances                           []struct {
			Asset, Wallet       string
			Free, Locked, Total decimal.Decimal
		}
		Positions []struct {
			BotID, ID, Symbol, Side, CreatedAt              string
			Size, EntryPrice, CurrentPrice, Pnl, PnlPercent decimal.Decimal
			Margin                                          decimal.Decimal
			Leverage                                        int
			LiquidationPrice, StopLoss, TakeProfit          *decimal.Decimal
		}
		Equity, UnrealisedPnl, RealisedPnl *decimal.Decimal
		Excluded                           []string
		Error                              *struct{ Code, Message string }
	}
	Totals struct {
		Currency                           string
		Equity, UnrealisedPnl, RealisedPnl decimal.Decimal
		Complete                           bool
	}
	AsOf string
}

// portfolioFixture is alice with two paper accounts and a Binance connection served by
// binancefake, and bob with a paper account of his own.
type portfolioFixture struct {
	*fixture
	alice, bob cred
	exch       *binancefake.Server
}

func newPortfolioFixture(t *testing.T, withKeys bool) *portfolioFixture {
	t.Helper()
	px := prices{"spot BTC/USDT": testkit.D("65000"), "futures ETH/USDT": testkit.D("2900")}
	keys, err := credentials.NewRing(portfolioKey)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, func(o *readapi.Options) {
		po := portfolio.Options{Redis: o.Redis, Prices: px, Now: o.Now, CallTimeout: 2 * time.Second}
		if withKeys {
			po.Clients = &connectors.Clients{Keys: keys, Connectors: map[string]exchange.Connector{
				binance.Name: binance.Connector{Timeout: 500 * time.Millisecond, MaxElapsed: time.Second, Attempts: 1}}}
		}
		o.Portfolio = portfolio.New(po)
	})
	pf := &portfolioFixture{fixture: f, exch: binancefake.New()}
	t.Cleanup(pf.exch.Close)
	pf.alice, pf.bob = f.bearer(t, f.user(t, "Alice@Example.com")), f.bearer(t, f.user(t, "bob@example.com"))
	ctx, accts := t.Context(), paper.NewAccounts(f.rdb)
	opened := f.clk.Now().Add(-time.Hour).UnixMilli() // 2026-11-24T11:00:00Z

	// pa-1: 10,000 USDT, fee 0.1 %. Bot bot-spot buys 0.1 BTC at 60,000: notional 6,000,
	// fee 6, balance 10,000 − 6,006 = 3,994.
	ensure(t, accts, paper.Config{ID: "pa-1", Namespace: "trading", Name: "alice-main", Owner: "alice@example.com",
		Currency: "USDT", InitialBalance: testkit.D("10000"), FeeRate: testkit.D("0.001")})
	fill(t, f.rdb, "pa-1", "bot-spot", exchange.OrderRequest{ClientOrderID: "o-1", Symbol: "BTC/USDT", Kind: exchange.Spot,
		Side: exchange.SideBuy, Type: exchange.Limit, Price: testkit.D("60000"), Amount: testkit.D("0.1")})
	spot := position.Open("pos-spot", "bot-spot", "BTC/USDT", exchange.Spot, position.Long, 1,
		position.Fill{Amount: testkit.D("0.1"), Price: testkit.D("60000"), Fee: testkit.D("6"), At: opened}, "sig-1")
	spot.StopLoss = &position.Exit{Price: httpapi.Num(testkit.D("55000")), ClosePercent: httpapi.Num(testkit.D("100"))}
	book(t, f.rdb, spot, position.Trade{ID: "t-1", BotID: "bot-spot", Symbol: "BTC/USDT", Kind: exchange.Spot, NetPnl: httpapi.Num(testkit.D("12.5"))})
	f.projectOn(t, "bot-spot", "alice@example.com", registry.AccountPaper, "pa-1")

	// pa-2: 5,000 USDT. Bot bot-fut shorts 1 ETH at 3,000 with leverage 5: margin 600,
	// fee 3, balance 5,000 − 603 = 4,397, margin 600.
	ensure(t, accts, paper.Config{ID: "pa-2", Namespace: "trading", Name: "alice-futures", Owner: "alice@example.com",
		Currency: "USDT", InitialBalance: testkit.D("5000"), FeeRate: testkit.D("0.001")})
	fill(t, f.rdb, "pa-2", "bot-fut", exchange.OrderRequest{ClientOrderID: "o-2", Symbol: "ETH/USDT", Kind: exchange.Futures,
		Side: exchange.SideSell, Type: exchange.Limit, Price: testkit.D("3000"), Amount: testkit.D("1"), Leverage: 5})
	short := position.Open("pos-fut", "bot-fut", "ETH/USDT", exchange.Futures, position.Short, 5,
		position.Fill{Amount: testkit.D("1"), Price: testkit.D("3000"), Fee: testkit.D("3"), At: opened}, "sig-2")
	short.TakeProfit = &position.Exit{Price: httpapi.Num(testkit.D("2500")), ClosePercent: httpapi.Num(testkit.D("100"))}
	book(t, f.rdb, short)
	f.projectOn(t, "bot-fut", "alice@example.com", registry.AccountPaper, "pa-2")

	// xc-1: Binance, spot only. Wallet 1,000 USDT and 0.05 BTC; bot-live bought the 0.05
	// BTC at 64,000 (cost 3,200) and realised −7.25 before.
	pf.exch.SetSpotBalance("USDT", "1000")
	pf.exch.SetSpotBalance("BTC", "0.05")
	pf.exch.SetPrice("BTCUSDT", "65000")
	blob, err := keys.SealCredentials(exchange.Credentials{APIKey: binancefake.APIKey, APISecret: binancefake.APISecret}, credentials.AAD("xc-1"))
	if err != nil {
		t.Fatal(err)
	}
	if err := credentials.NewConnections(f.rdb).Save(ctx, credentials.Connection{UID: "xc-1", Namespace: "trading",
		Name: "alice-binance", Exchange: binance.Name, Owner: "alice@example.com", Ready: true, Reason: "Validated",
		Permissions: []string{"read", "spot"}, SpotEndpoint: pf.exch.URL(), FuturesEndpoint: pf.exch.URL(),
		Sealed: blob, KeyID: keys.CurrentKeyID()}); err != nil {
		t.Fatal(err)
	}
	book(t, f.rdb, position.Open("pos-live", "bot-live", "BTC/USDT", exchange.Spot, position.Long, 1,
		position.Fill{Amount: testkit.D("0.05"), Price: testkit.D("64000"), At: opened}, "sig-3"),
		position.Trade{ID: "t-2", BotID: "bot-live", Symbol: "BTC/USDT", Kind: exchange.Spot, NetPnl: httpapi.Num(testkit.D("-7.25"))})
	f.projectOn(t, "bot-live", "alice@example.com", registry.AccountExchange, "xc-1")

	// Bob's account, also listed in alice's index as a change of owner in progress would
	// leave it: it must not show.
	ensure(t, accts, paper.Config{ID: "pa-bob", Namespace: "trading", Name: "bob-main", Owner: "bob@example.com",
		Currency: "USDT", InitialBalance: testkit.D("777"), FeeRate: testkit.D("0.001")})
	if err := f.rdb.SAdd(ctx, store.OwnerPaperAccounts("alice@example.com"), "pa-bob").Err(); err != nil {
		t.Fatal(err)
	}
	return pf
}

func ensure(t *testing.T, a *paper.Accounts, c paper.Config) {
	t.Helper()
	if _, err := a.Ensure(t.Context(), c); err != nil {
		t.Fatal(err)
	}
}

// fill places an order on the paper exchange as bot scope.
func fill(t *testing.T, rdb redis.UniversalClient, account, scope string, req exchange.OrderRequest) {
	t.Helper()
	if _, err := paper.NewExchange(rdb, account, scope, nil).PlaceOrder(t.Context(), req); err != nil {
		t.Fatal(err)
	}
}

// book writes an open position and realised trades of its bot, as the executor's booking
// does.
func book(t *testing.T, rdb redis.UniversalClient, p position.Position, trades ...position.Trade) {
	t.Helper()
	if _, err := rdb.TxPipelined(t.Context(), func(tx redis.Pipeliner) error {
		for _, tr := range trades {
			if err := position.StageTrade(t.Context(), tx, tr); err != nil {
				return err
			}
		}
		return position.StagePosition(t.Context(), tx, p.BotID, p.Symbol, &p)
	}); err != nil {
		t.Fatal(err)
	}
}

// projectOn projects a bot of owner trading on an account.
func (f *fixture) projectOn(t *testing.T, id, owner, kind, accountID string) {
	t.Helper()
	bot := registry.Bot{ID: id, Namespace: "trading", Name: id, Owner: owner,
		Account: registry.Account{Kind: kind, Name: accountID, ID: accountID}, Market: "spot", Symbol: "BTC/USDT",
		PositionSize: "10%", Leverage: 1, Availability: "active", WebhookEnabled: true}
	if err := f.reg.Project(t.Context(), bot, "hash-"+id); err != nil {
		t.Fatal(err)
	}
}

func (f *portfolioFixture) portfolio(t *testing.T, c cred) portfolioBody {
	t.Helper()
	return okData[portfolioBody](t, f.get(t, readapi.PortfolioPath, c))
}

func TestPortfolio(t *testing.T) {
	f := newPortfolioFixture(t, true)
	p := f.portfolio(t, f.alice)
	if len(p.Accounts) != 3 {
		t.Fatalf("%d accounts, want alice's 3 (bob's must not show): %+v", len(p.Accounts), p.Accounts)
	}
	if p.AsOf != "2026-11-24T12:00:00.000Z" {
		t.Errorf("asOf %q", p.AsOf)
	}

	// By name: trading/alice-futures, trading/alice-main, then the connection.
	main := p.Accounts[1]
	if main.ID != "pa-1" || main.Name != "trading/alice-main" || main.Kind != "paper" || main.Exchange != "" ||
		main.Currency != "USDT" || main.Error != nil || len(main.Excluded) != 0 {
		t.Fatalf("second account %+v", main)
	}
	if len(main.Balances) != 2 {
		t.Fatalf("pa-1 balances %+v", main.Balances)
	}
	usdt, btc := main.Balances[0], main.Balances[1]
	if usdt.Asset != "USDT" || usdt.Wallet != "unified" || btc.Asset != "BTC" || btc.Wallet != "unified" {
		t.Fatalf("pa-1 balances %+v", main.Balances)
	}
	testkit.EqualD(t, "pa-1 USDT free", usdt.Free, "3994") // 10,000 − 0.1 × 60,000 − 6
	testkit.EqualD(t, "pa-1 USDT locked", usdt.Locked, "0")
	testkit.EqualD(t, "pa-1 USDT total", usdt.Total, "3994")
	testkit.EqualD(t, "pa-1 BTC free", btc.Free, "0.1")
	testkit.EqualD(t, "pa-1 BTC total", btc.Total, "0.1")
	testkit.EqualD(t, "pa-1 equity", *main.Equity, "10494")          // 3,994 + 0.1 × 65,000
	testkit.EqualD(t, "pa-1 unrealised", *main.UnrealisedPnl, "500") // 6,500 − 6,000
	testkit.EqualD(t, "pa-1 realised", *main.RealisedPnl, "12.5")
	if len(main.Positions) != 1 {
		t.Fatalf("pa-1 positions %+v", main.Positions)
	}
	sp := main.Positions[0]
	if sp.BotID != "bot-spot" || sp.ID != "pos-spot" || sp.Symbol != "BTC/USDT" || sp.Side != "long" || sp.Leverage != 1 ||
		sp.CreatedAt != "2026-11-24T11:00:00Z" || sp.LiquidationPrice != nil || sp.TakeProfit != nil || sp.StopLoss == nil {
		t.Fatalf("spot position %+v", sp)
	}
	testkit.EqualD(t, "spot size", sp.Size, "0.1")
	testkit.EqualD(t, "spot entry", sp.EntryPrice, "60000")
	testkit.EqualD(t, "spot current", sp.CurrentPrice, "65000")
	testkit.EqualD(t, "spot pnl", sp.Pnl, "500")
	testkit.EqualD(t, "spot pnl %", sp.PnlPercent, "8.33") // 500 × 100 / 6,000 margin (the cost on spot)
	testkit.EqualD(t, "spot margin", sp.Margin, "6000")
	testkit.EqualD(t, "spot stop-loss", *sp.StopLoss, "55000")

	fut := p.Accounts[0]
	if fut.ID != "pa-2" || fut.Name != "trading/alice-futures" || fut.Error != nil || len(fut.Balances) != 1 {
		t.Fatalf("first account %+v", fut)
	}
	testkit.EqualD(t, "pa-2 USDT free", fut.Balances[0].Free, "4397") // 5,000 − 3,000 / 5 − 3
	testkit.EqualD(t, "pa-2 USDT locked", fut.Balances[0].Locked, "600")
	testkit.EqualD(t, "pa-2 USDT total", fut.Balances[0].Total, "4997")
	testkit.EqualD(t, "pa-2 equity", *fut.Equity, "5097")           // 4,997 + (3,000 − 1 × 2,900)
	testkit.EqualD(t, "pa-2 unrealised", *fut.UnrealisedPnl, "100") // short: 3,000 − 2,900
	testkit.EqualD(t, "pa-2 realised", *fut.RealisedPnl, "0")
	sh := fut.Positions[0]
	if sh.BotID != "bot-fut" || sh.Side != "short" || sh.Leverage != 5 || sh.StopLoss != nil || sh.TakeProfit == nil || sh.LiquidationPrice == nil {
		t.Fatalf("futures position %+v", sh)
	}
	testkit.EqualD(t, "short current", sh.CurrentPrice, "2900")
	testkit.EqualD(t, "short pnl", sh.Pnl, "100")
	testkit.EqualD(t, "short pnl %", sh.PnlPercent, "16.67") // 100 × 100 / 600
	testkit.EqualD(t, "short margin", sh.Margin, "600")
	// (cost + margin) / (size × (1 + 0.005)) = 3,600 / 1.005, rounded down to 8 places.
	testkit.EqualD(t, "short liquidation", *sh.LiquidationPrice, "3582.08955223")
	testkit.EqualD(t, "short take-profit", *sh.TakeProfit, "2500")

	live := p.Accounts[2]
	if live.ID != "xc-1" || live.Name != "trading/alice-binance" || live.Kind != "exchange" || live.Exchange != "binance" || live.Error != nil {
		t.Fatalf("third account %+v", live)
	}
	if len(live.Balances) != 2 || live.Balances[0].Asset != "USDT" || live.Balances[0].Wallet != "spot" || live.Balances[1].Asset != "BTC" {
		t.Fatalf("xc-1 balances %+v", live.Balances)
	}
	testkit.EqualD(t, "xc-1 USDT", live.Balances[0].Total, "1000")
	testkit.EqualD(t, "xc-1 BTC", live.Balances[1].Total, "0.05")
	testkit.EqualD(t, "xc-1 equity", *live.Equity, "4250")          // 1,000 + 0.05 × 65,000
	testkit.EqualD(t, "xc-1 unrealised", *live.UnrealisedPnl, "50") // 3,250 − 3,200
	testkit.EqualD(t, "xc-1 realised", *live.RealisedPnl, "-7.25")
	if len(live.Positions) != 1 || live.Positions[0].BotID != "bot-live" {
		t.Fatalf("xc-1 positions %+v", live.Positions)
	}
	testkit.EqualD(t, "live current", live.Positions[0].CurrentPrice, "65000")

	if !p.Totals.Complete || p.Totals.Currency != "USDT" {
		t.Fatalf("totals %+v", p.Totals)
	}
	testkit.EqualD(t, "total equity", p.Totals.Equity, "19841")          // 10,494 + 5,097 + 4,250
	testkit.EqualD(t, "total unrealised", p.Totals.UnrealisedPnl, "650") // 500 + 100 + 50
	testkit.EqualD(t, "total realised", p.Totals.RealisedPnl, "5.25")    // 12.5 + 0 − 7.25

	// Bob sees his account only.
	b := f.portfolio(t, f.bob)
	if len(b.Accounts) != 1 || b.Accounts[0].ID != "pa-bob" || len(b.Accounts[0].Positions) != 0 {
		t.Fatalf("bob's portfolio %+v", b.Accounts)
	}
	testkit.EqualD(t, "bob equity", b.Totals.Equity, "777")

	t.Run("exchange down", func(t *testing.T) {
		f.exch.Close()
		// Within the cache's 10 s the last answer is served; after it the exchange is asked.
		f.clk.Advance(portfolio.DefaultCacheTTL)
		p := f.portfolio(t, f.alice)
		if len(p.Accounts) != 3 || p.Accounts[0].Error != nil || p.Accounts[1].Error != nil {
			t.Fatalf("accounts %+v", p.Accounts)
		}
		live := p.Accounts[2]
		if live.Error == nil || live.Error.Code != "EXCHANGE_ERROR" || live.Equity != nil || live.UnrealisedPnl != nil ||
			live.RealisedPnl != nil || len(live.Balances) != 0 || len(live.Positions) != 0 {
			t.Fatalf("unreachable exchange account %+v", live)
		}
		if p.Totals.Complete {
			t.Fatal("totals complete without an account")
		}
		testkit.EqualD(t, "total equity", p.Totals.Equity, "15591") // 10,494 + 5,097
		testkit.EqualD(t, "total unrealised", p.Totals.UnrealisedPnl, "600")
		testkit.EqualD(t, "total realised", p.Totals.RealisedPnl, "12.5")
	})
}

func TestPortfolioWithoutMasterKey(t *testing.T) {
	f := newPortfolioFixture(t, false)
	p := f.portfolio(t, f.alice)
	if len(p.Accounts) != 3 {
		t.Fatalf("accounts %+v", p.Accounts)
	}
	live := p.Accounts[2]
	if live.ID != "xc-1" || live.Error == nil || live.Error.Code != "EXCHANGE_DISCONNECTED" || live.Error.Message != "credentials unavailable" {
		t.Fatalf("connection without a master key %+v", live)
	}
	testkit.EqualD(t, "total equity", p.Totals.Equity, "15591")
}

func TestPortfolioCallers(t *testing.T) {
	f := newFixture(t)
	alice := f.user(t, "alice@example.com")
	tok, id := f.oauthToken(t, alice, "mcp:read", testAPI)
	if r := f.get(t, readapi.PortfolioPath, tok); r.status != http.StatusOK {
		t.Fatalf("OAuth mcp:read: status %d: %s", r.status, r.body)
	}
	if r := f.get(t, readapi.PortfolioPath, f.session(t, alice)); r.status != http.StatusOK {
		t.Fatalf("session: status %d: %s", r.status, r.body)
	}
	r := f.get(t, readapi.PortfolioPath)
	if r.status != http.StatusUnauthorized || r.header.Get("WWW-Authenticate") == "" {
		t.Fatalf("no credentials: status %d, WWW-Authenticate %q", r.status, r.header.Get("WWW-Authenticate"))
	}
	if err := f.oauth.RevokeAuthorization(t.Context(), alice.ID, id); err != nil {
		t.Fatal(err)
	}
	f.clk.Advance(2 * time.Second)
	if r := f.get(t, readapi.PortfolioPath, tok); r.status != http.StatusUnauthorized {
		t.Fatalf("revoked OAuth token: status %d", r.status)
	}
}
