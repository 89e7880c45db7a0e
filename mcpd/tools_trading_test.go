package mcpd_test

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/mcpd"
	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/lab"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/trading"
)

// tradeFixture is mcpd with the trading tools and the Strategy Lab on the fixture, an
// executor running bot-p's signals in the background, ada (owner of the paper bot bot-p on
// acct-ada, the exchange bot bot-x and a 10 USD Strategy Lab wallet) with mcp:read,
// mcp:paper and mcp:live OAuth tokens, and bob (bearer JWT, owner of nothing).
type tradeFixture struct {
	*fixture
	ts                    *httptest.Server
	trading               *trading.API
	journal               *audit.Journal
	lab                   *lab.Lab
	ada                   auth.User
	readTok, paperTok     string
	read, paper, live, bo *client.Client
}

func newTradeFixture(t *testing.T) *tradeFixture {
	t.Helper()
	f := &tradeFixture{fixture: newFixture(t)}
	market := prices{"BTC/USDT": testkit.D("60000"), "ETH/USDT": testkit.D("3000")}
	f.trading = trading.New(f.rdb, nil, market)
	f.trading.Now = f.clk.Now
	f.journal = audit.New(f.rdb, audit.Options{Now: f.clk.Now})
	f.lab = lab.New(lab.Options{Redis: f.rdb, Users: f.users, Now: f.clk.Now})
	f.ts = f.serve(t, func(o *mcpd.Options) {
		o.Trading, o.Audit, o.Lab, o.ResultWait = f.trading, f.journal, f.lab, 20*time.Second
	})
	var err error
	if f.ada, err = f.users.Create(t.Context(), auth.NewUser{Email: "Ada@Example.com", Name: "Ada",
		Password: "correct horse battery", Tier: auth.TierPro, Wallet: testkit.D("10")}); err != nil {
		t.Fatal(err)
	}
	bob := f.user(t, "bob@example.com", auth.TierPro)
	if _, err := paper.NewAccounts(f.rdb).Ensure(t.Context(), paper.Config{ID: "acct-ada", Owner: "ada@example.com",
		Currency: "USDT", InitialBalance: testkit.D("10000"), FeeRate: testkit.D("0.001")}); err != nil {
		t.Fatal(err)
	}
	reg := registry.New(f.rdb)
	for _, b := range []registry.Bot{
		{ID: "bot-p", Account: registry.Account{Kind: registry.AccountPaper, Name: "main", ID: "acct-ada"}},
		{ID: "bot-x", Account: registry.Account{Kind: registry.AccountExchange, Name: "binance", ID: "xc-1"}},
	} {
		b.Namespace, b.Name, b.Owner, b.Market, b.PositionSize, b.Leverage, b.Availability =
			"trading", b.ID, "ada@example.com", "spot", "10%", 1, "active"
		if err := reg.Project(t.Context(), b, "hash-"+b.ID); err != nil {
			t.Fatal(err)
		}
	}
	read, _ := f.oauthToken(t, f.ada, "agent", auth.ScopeRead, testResource)
	paperTok, _ := f.oauthToken(t, f.ada, "agent", auth.ScopePaper, testResource)
	live, _ := f.oauthToken(t, f.ada, "agent", auth.ScopeLive, testResource)
	f.readTok, f.paperTok = read.Token, paperTok.Token
	f.read, _ = mcpClient(t, read.Token, "", f.ts)
	f.paper, _ = mcpClient(t, paperTok.Token, "", f.ts)
	f.live, _ = mcpClient(t, live.Token, "", f.ts)
	f.bo, _ = mcpClient(t, f.bearer(t, bob).Token, "", f.ts)

	// The executor runs bot-p's queued signals as the executor daemon would.
	ex := executor.New(executor.Deps{Redis: f.rdb, Prices: market, Logger: slog.New(slog.DiscardHandler), Now: f.clk.Now})
	done := make(chan struct{})
	go func() {
		defer close(done)
		ctx := t.Context()
		for ctx.Err() == nil {
			for _, p := range []queue.Priority{queue.PriorityManualClose, queue.PriorityStrategyEntry} {
				msgs, err := f.rdb.XRange(ctx, queue.StreamOf("bot-p", p), "-", "+").Result()
				if err != nil {
					return
				}
				for _, m := range msgs {
					var env queue.Envelope
					if err := json.Unmarshal([]byte(m.Values[queue.EnvelopeField].(string)), &env); err != nil {
						t.Error(err)
						return
					}
					if err := ex.Handle(ctx, env); err != nil {
						return
					}
					f.rdb.XDel(ctx, queue.StreamOf("bot-p", p), m.ID)
				}
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { <-done })
	return f
}

// clients are new clients for ada (mcp:paper) and bob (bearer JWT), with tokens issued now;
// ada's mcp:paper and mcp:read tokens are replaced too.
func (f *tradeFixture) clients(t *testing.T) (adaPaper, bob *client.Client) {
	t.Helper()
	tok, _ := f.oauthToken(t, f.ada, "agent", auth.ScopePaper, testResource)
	read, _ := f.oauthToken(t, f.ada, "agent", auth.ScopeRead, testResource)
	f.paperTok, f.readTok = tok.Token, read.Token
	adaPaper, _ = mcpClient(t, tok.Token, "", f.ts)
	bobUser, err := f.users.ByEmail(t.Context(), "bob@example.com")
	if err != nil {
		t.Fatal(err)
	}
	bob, _ = mcpClient(t, f.bearer(t, bobUser).Token, "", f.ts)
	return adaPaper, bob
}

// trade is a trading tool's answer as the tests read it.
type trade struct {
	SignalID string         `json:"signalId"`
	Status   string         `json:"status"`
	Repeat   bool           `json:"repeat"`
	Result   *result.Result `json:"result"`
}

func (f *tradeFixture) positions(t *testing.T) []position.View {
	t.Helper()
	pos, err := f.trading.Positions(t.Context(), "bot-p")
	if err != nil {
		t.Fatal(err)
	}
	return pos
}

// forbidden posts a raw tools/call with token and checks the HTTP 403 naming scope.
func (f *tradeFixture) forbidden(t *testing.T, token, tool, args, scope string) {
	t.Helper()
	res, body := post(t, f.ts, token, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"`+tool+`","arguments":`+args+`}}`)
	if res.StatusCode != http.StatusForbidden || !strings.Contains(res.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`) ||
		!strings.Contains(res.Header.Get("WWW-Authenticate"), `scope="`+scope+`"`) {
		t.Fatalf("%s %s: %d %s %q", tool, args, res.StatusCode, body, res.Header.Get("WWW-Authenticate"))
	}
}

func TestTradingTools(t *testing.T) {
	f := newTradeFixture(t)

	// A market buy with its exits fills on the paper exchange at the market price:
	// 0.5 ETH × 3000 = 1500 USDT, fee 1500 × 0.001 = 1.5.
	buy := toolOK[trade](t, f.paper, "place_order", map[string]any{"botId": "bot-p", "side": "buy", "type": "market",
		"symbol": "ETH/USDT", "amount": 0.5, "stopLoss": 2700, "takeProfit": "3300"})
	if buy.Status != "executed" || buy.Repeat || buy.Result == nil || !buy.Result.Success || buy.Result.SignalID != buy.SignalID ||
		!buy.Result.Order.FilledAmount.Equal(testkit.D("0.5")) || !buy.Result.Order.AvgPrice.Equal(testkit.D("3000")) ||
		!buy.Result.Order.Fee.Equal(testkit.D("1.5")) {
		t.Fatalf("buy: %+v %+v", buy, buy.Result)
	}
	if p := f.positions(t); len(p) != 1 || !p[0].Size.Equal(testkit.D("0.5")) || !p[0].StopLoss.Equal(testkit.D("2700")) ||
		!p[0].TakeProfit.Equal(testkit.D("3300")) {
		t.Fatalf("position after the buy: %+v", p)
	}

	// The same idempotency key twice: one order, the same answer.
	add := map[string]any{"botId": "bot-p", "side": "buy", "type": "market", "symbol": "ETH/USDT", "amount": 0.1, "idempotencyKey": "k-1"}
	first := toolOK[trade](t, f.paper, "place_order", add)
	again := toolOK[trade](t, f.paper, "place_order", add)
	if first.Status != "executed" || first.Repeat || again.SignalID != first.SignalID || !again.Repeat || again.Status != "executed" {
		t.Fatalf("idempotent calls: %+v then %+v", first, again)
	}
	orders, err := f.trading.Orders(t.Context(), "bot-p", 0)
	if err != nil || len(orders) != 2 {
		t.Fatalf("%d orders, want 2 (the buy and one add): %v", len(orders), err)
	}
	// 0.5 + 0.1 = 0.6 ETH.
	if p := f.positions(t); !p[0].Size.Equal(testkit.D("0.6")) {
		t.Fatalf("position after the add: %+v", p)
	}
	add["amount"] = 0.2
	if text := toolErr(t, f.paper, "place_order", add); !strings.Contains(text, `"code":"INVALID_PARAMETER"`) ||
		!strings.Contains(text, `"signalId":"`+first.SignalID+`"`) {
		t.Fatalf("reused key: %s", text)
	}

	// Every tool takes the symbol in any form the webhook accepts, and answers BASE/QUOTE
	// (get_position refused ETHUSDT with POSITION_NOT_FOUND before).
	for _, sym := range []string{"ETHUSDT", "eth-usdt", "BINANCE:ETHUSDT"} {
		if pos := toolOK[map[string]any](t, f.paper, "get_position", map[string]any{"botId": "bot-p", "symbol": sym}); pos["symbol"] != "ETH/USDT" {
			t.Fatalf("get_position %s: %v", sym, pos)
		}
	}

	// Exits of the open position.
	if sl := toolOK[trade](t, f.paper, "set_stop_loss", map[string]any{"botId": "bot-p", "symbol": "ETH/USDT", "price": 2800}); sl.Status != "executed" {
		t.Fatalf("set_stop_loss: %+v %+v", sl, sl.Result)
	}
	if tp := toolOK[trade](t, f.paper, "set_take_profit", map[string]any{"botId": "bot-p", "symbol": "ETH/USDT", "price": 3400}); tp.Status != "executed" {
		t.Fatalf("set_take_profit: %+v %+v", tp, tp.Result)
	}
	if p := f.positions(t); !p[0].StopLoss.Equal(testkit.D("2800")) || !p[0].TakeProfit.Equal(testkit.D("3400")) {
		t.Fatalf("exits: %+v", p)
	}
	// A stop-loss above the market is refused by the executor, in the result.
	if bad := toolOK[trade](t, f.paper, "set_stop_loss", map[string]any{"botId": "bot-p", "symbol": "ETH/USDT", "price": 3100}); bad.Status != "failed" ||
		bad.Result.Code != errs.InvalidPrice {
		t.Fatalf("stop above the market: %+v %+v", bad, bad.Result)
	}

	// Half of 0.6 closed: 0.3 left.
	half := toolOK[trade](t, f.paper, "close_position", map[string]any{"botId": "bot-p", "symbol": "ETH/USDT", "percent": 50})
	if half.Status != "executed" || !half.Result.Order.FilledAmount.Equal(testkit.D("0.3")) {
		t.Fatalf("close 50%%: %+v %+v", half, half.Result)
	}
	if p := f.positions(t); !p[0].Size.Equal(testkit.D("0.3")) {
		t.Fatalf("after closing half: %+v", p)
	}
	if all := toolOK[trade](t, f.paper, "close_all_positions", map[string]any{"botId": "bot-p"}); all.Status != "executed" {
		t.Fatalf("close all: %+v %+v", all, all.Result)
	}
	if p := f.positions(t); len(p) != 0 {
		t.Fatalf("positions after close-all: %+v", p)
	}
	if none := toolOK[trade](t, f.paper, "close_all_positions", map[string]any{"botId": "bot-p"}); none.Status != "failed" ||
		none.Result.Code != errs.PositionNotFound {
		t.Fatalf("close all with nothing open: %+v %+v", none, none.Result)
	}

	// A paper order filled at once: nothing to cancel.
	cancel := toolOK[trade](t, f.paper, "cancel_order", map[string]any{"botId": "bot-p", "orderId": buy.Result.Order.OrderID})
	if cancel.Status != "failed" || cancel.Result.Code != errs.NotFound {
		// The exchange's order ID is not the client order ID the book keys orders by.
		t.Fatalf("cancel by exchange id: %+v %+v", cancel, cancel.Result)
	}
	cid := orders[len(orders)-1].ClientOrderID
	cancel = toolOK[trade](t, f.paper, "cancel_order", map[string]any{"botId": "bot-p", "orderId": cid})
	if cancel.Status != "failed" || cancel.Result.Code != errs.InvalidAction || !strings.Contains(cancel.Result.Error, "is filled") {
		t.Fatalf("cancel of a paper order: %+v %+v", cancel, cancel.Result)
	}

	// Refusals: another user's bot, bad input, scope.
	for tool, args := range map[string]map[string]any{
		"place_order":         {"botId": "bot-p", "side": "buy", "type": "market", "symbol": "ETH/USDT", "amount": 1},
		"close_position":      {"botId": "bot-p", "symbol": "ETH/USDT"},
		"close_all_positions": {"botId": "bot-p"},
		"cancel_order":        {"botId": "bot-p", "orderId": "x"},
		"set_stop_loss":       {"botId": "bot-p", "symbol": "ETH/USDT", "price": 1},
	} {
		if text := toolErr(t, f.bo, tool, args); !strings.Contains(text, `{"code":"NOT_FOUND","message":"bot not found"}`) {
			t.Fatalf("bob's %s on ada's bot: %s", tool, text)
		}
	}
	for _, c := range []struct {
		args map[string]any
		code string
	}{
		{map[string]any{"side": "buy", "type": "market", "amount": 0}, "INVALID_AMOUNT"},
		{map[string]any{"side": "buy", "type": "market", "amount": "lots"}, "INVALID_AMOUNT"},
		{map[string]any{"side": "buy", "type": "stop", "amount": 1}, "INVALID_PARAMETER"},
		{map[string]any{"side": "buy", "type": "market", "symbol": "NOPEUSDT", "amount": 1}, "INVALID_SYMBOL"},
		{map[string]any{"side": "buy", "type": "limit", "symbol": "ETH/USDT", "amount": 1}, "INVALID_PRICE"},
	} {
		c.args["botId"] = "bot-p"
		if text := toolErr(t, f.paper, "place_order", c.args); !strings.Contains(text, `"code":"`+c.code+`"`) {
			t.Fatalf("place_order %v: %s, want %s", c.args, text, c.code)
		}
	}
	if text := toolErr(t, f.paper, "close_position", map[string]any{"botId": "bot-p", "symbol": "ETH/USDT", "percent": 150}); !strings.Contains(text, `"code":"INVALID_AMOUNT"`) {
		t.Fatalf("close 150%%: %s", text)
	}
	f.forbidden(t, f.readTok, "place_order", `{"botId":"bot-p","side":"buy","type":"market","amount":1}`, auth.ScopePaper)
	f.forbidden(t, f.paperTok, "close_all_positions", `{"botId":"bot-x"}`, auth.ScopeLive)
	f.forbidden(t, f.paperTok, "cancel_order", `{"botId":"bot-x","orderId":"x"}`, auth.ScopeLive)

	// Every call that reached a tool is in ada's journal, refusals with their code.
	entries, _, err := f.journal.List(t.Context(), f.ada.ID, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	byTool := map[string]int{}
	for _, e := range entries {
		byTool[e.Tool]++
	}
	// place_order: buy, 2 keyed, reused key, 5 bad inputs; set_stop_loss 2, set_take_profit 1,
	// close_position 2, close_all_positions 2, cancel_order 2.
	want := map[string]int{"place_order": 9, "set_stop_loss": 2, "set_take_profit": 1, "close_position": 2,
		"close_all_positions": 2, "cancel_order": 2}
	for tool, n := range want {
		if byTool[tool] != n {
			t.Fatalf("journal: %v, want %v", byTool, want)
		}
	}
	if e := entries[len(entries)-1]; e.Tool != "place_order" || !e.Outcome.OK || !strings.Contains(string(e.Arguments), `"stopLoss":2700`) {
		t.Fatalf("oldest entry %+v %s", e, e.Arguments)
	}
}

// A call that the executor does not answer within ResultWait answers queued with the
// signal ID, and get_signal reads the result later.
func TestTradingToolQueued(t *testing.T) {
	f := newFixture(t)
	api := trading.New(f.rdb, nil, nil)
	ts := f.serve(t, func(o *mcpd.Options) { o.Trading, o.ResultWait = api, -1 })
	ada := f.user(t, "ada@example.com", auth.TierPro)
	if err := registry.New(f.rdb).Project(t.Context(), registry.Bot{ID: "bot-q", Owner: "ada@example.com", Market: "spot",
		Account: registry.Account{Kind: registry.AccountPaper, Name: "p", ID: "acct"}, Availability: "active"}, "hash-q"); err != nil {
		t.Fatal(err)
	}
	c, _ := mcpClient(t, f.bearer(t, ada).Token, "", ts)
	q := toolOK[trade](t, c, "close_position", map[string]any{"botId": "bot-q", "symbol": "BTC/USDT", "percent": "12.5"})
	if q.Status != "queued" || q.Result != nil || !strings.HasPrefix(q.SignalID, "m-") {
		t.Fatalf("queued answer %+v", q)
	}
	msgs, err := f.rdb.XRange(t.Context(), queue.StreamOf("bot-q", queue.PriorityManualClose), "-", "+").Result()
	if err != nil || len(msgs) != 1 || !strings.Contains(msgs[0].Values[queue.EnvelopeField].(string), `"closePercent":12.5`) {
		t.Fatalf("queued %v %v", msgs, err)
	}
	if text := toolErr(t, c, "get_signal", map[string]any{"signalId": q.SignalID}); !strings.Contains(text, `"code":"NOT_FOUND"`) {
		t.Fatalf("get_signal before execution: %s", text)
	}
}

func TestRefillPaperAccountTool(t *testing.T) {
	f := newTradeFixture(t)
	// A buy of 0.5 ETH at 3000 spends 1500 and a fee of 1.5: 10000 − 1500 − 1.5 = 8498.5.
	toolOK[trade](t, f.paper, "place_order", map[string]any{"botId": "bot-p", "side": "buy", "type": "market", "symbol": "ETH/USDT", "amount": 0.5})
	st, err := paper.NewAccounts(f.rdb).Get(t.Context(), "acct-ada")
	if err != nil || !st.Balance.Equal(testkit.D("8498.5")) {
		t.Fatalf("balance before the refill %s %v", st.Balance, err)
	}
	type refill struct {
		AccountID, Currency        string
		Balance, InitialBalance    json.Number
		LastRefillAt, NextRefillAt time.Time
	}
	now := f.clk.Now().UTC()
	r := toolOK[refill](t, f.paper, "refill_paper_account", map[string]any{"accountId": "acct-ada"})
	if r.AccountID != "acct-ada" || r.Balance != "10000" || r.InitialBalance != "10000" || r.Currency != "USDT" ||
		!r.LastRefillAt.Equal(now) || !r.NextRefillAt.Equal(now.Add(24*time.Hour)) {
		t.Fatalf("refill %+v", r)
	}
	// An order without an amount is sized as the bot sizes signals, from the refilled
	// balance: 10 % of 10000 = 1000 USDT at 3000 = 0.3333… ETH, down to the 0.0001 step:
	// 0.3333, fee 0.3333 × 3000 × 0.001 = 0.9999.
	sized := toolOK[trade](t, f.paper, "place_order", map[string]any{"botId": "bot-p", "side": "buy", "type": "market", "symbol": "ETH/USDT"})
	if sized.Status != "executed" || !sized.Result.Order.FilledAmount.Equal(testkit.D("0.3333")) ||
		!sized.Result.Order.Fee.Equal(testkit.D("0.9999")) {
		t.Fatalf("buy without an amount: %+v %+v", sized, sized.Result)
	}
	// A reduce without an amount is refused: nobody chose how much to sell.
	if sell := toolOK[trade](t, f.paper, "place_order", map[string]any{"botId": "bot-p", "side": "sell", "type": "market",
		"symbol": "ETH/USDT"}); sell.Status != "failed" || sell.Result.Code != errs.InvalidAmount {
		t.Fatalf("sell without an amount: %+v %+v", sell, sell.Result)
	}
	// Inside the 24 h cooldown: refused, saying when. (Tokens are issued again: a day
	// outlives them.)
	f.clk.Advance(23 * time.Hour)
	f.paper, f.bo = f.clients(t)
	text := toolErr(t, f.paper, "refill_paper_account", map[string]any{"accountId": "acct-ada"})
	if !strings.Contains(text, `"code":"RATE_LIMITED"`) || !strings.Contains(text, `"nextRefillAt":"2026-11-25T12:00:00Z"`) {
		t.Fatalf("refill inside the cooldown: %s", text)
	}
	f.clk.Advance(time.Hour)
	f.paper, f.bo = f.clients(t)
	if r := toolOK[refill](t, f.paper, "refill_paper_account", map[string]any{"accountId": "acct-ada"}); !r.LastRefillAt.Equal(now.Add(24 * time.Hour)) {
		t.Fatalf("refill after the cooldown %+v", r)
	}
	// Another user's account answers as a missing one; mcp:read may not refill.
	for _, id := range []string{"acct-ada", "acct-none"} {
		if text := toolErr(t, f.bo, "refill_paper_account", map[string]any{"accountId": id}); !strings.Contains(text,
			`{"code":"NOT_FOUND","message":"paper account not found"}`) {
			t.Fatalf("bob refills %s: %s", id, text)
		}
	}
	f.forbidden(t, f.readTok, "refill_paper_account", `{"accountId":"acct-ada"}`, auth.ScopePaper)
	entries, _, err := f.journal.List(t.Context(), f.ada.ID, "", 10)
	if err != nil || len(entries) != 6 || entries[0].Tool != "refill_paper_account" || !entries[0].Outcome.OK ||
		entries[1].Outcome.Code != errs.RateLimited || entries[2].Tool != "place_order" {
		t.Fatalf("journal %+v %v", entries, err)
	}
}

func TestGenerateStrategyTool(t *testing.T) {
	f := newTradeFixture(t)
	args := map[string]any{"family": "emaCrossover", "symbol": "BTC/USDT", "timeframe": "1h",
		"from": "2026-10-01T00:00:00Z", "to": "2026-10-08T00:00:00Z", "experiments": 3, "seed": 42}
	type outcome struct {
		Estimate *struct {
			Experiments                           int
			UnitCostUsd, TotalCostUsd, BalanceUsd json.Number
			Sufficient                            bool
			Proceed                               lab.Request
		}
		Job *struct {
			ID, State   string
			Experiments int
			CostUsd     json.Number
			Request     lab.Request
		}
	}
	// The estimate needs mcp:read and charges nothing: 3 × 0.50 = 1.50 of a 10 balance.
	est := toolOK[outcome](t, f.read, "generate_strategy", args)
	if est.Job != nil || est.Estimate == nil || est.Estimate.Experiments != 3 || est.Estimate.UnitCostUsd != "0.5" ||
		est.Estimate.TotalCostUsd != "1.5" || est.Estimate.BalanceUsd != "10" || !est.Estimate.Sufficient ||
		!est.Estimate.Proceed.AcknowledgeCost || *est.Estimate.Proceed.Seed != 42 {
		t.Fatalf("estimate %+v", est.Estimate)
	}
	// The split and the cost model: the proceed request carries them with their defaults
	// filled in, and a venue the Lab has no fee schedule for is refused by name.
	wf := map[string]any{"walkForwardFolds": 3, "costs": map[string]any{"venue": "bybit", "slippage": false}}
	for k, v := range args {
		wf[k] = v
	}
	p := toolOK[outcome](t, f.read, "generate_strategy", wf).Estimate.Proceed
	if p.WalkForwardFolds != 3 || p.OutOfSamplePercent != 0 || p.Costs == nil || p.Costs.Venue != "bybit" || p.Costs.FeeTier != "vip0" ||
		!*p.Costs.Fees || *p.Costs.Slippage || *p.Costs.Funding {
		t.Fatalf("proceed %+v costs %+v: want 3 folds, bybit vip0 fees, no slippage, no funding on spot", p, p.Costs)
	}
	if dflt := est.Estimate.Proceed; dflt.OutOfSamplePercent != lab.DefaultOutOfSamplePercent || dflt.Costs == nil || dflt.Costs.Venue != "binance" {
		t.Fatalf("default proceed %+v: want the 30 %% holdout and binance's fees", dflt)
	}
	wf["costs"] = map[string]any{"venue": "kraken"}
	if text := toolErr(t, f.read, "generate_strategy", wf); !strings.Contains(text, `"parameter":"venue"`) {
		t.Fatalf("an unknown venue: %s", text)
	}
	if jobs, _, err := f.lab.Jobs(t.Context(), f.ada.ID, "", 10); err != nil || len(jobs) != 0 {
		t.Fatalf("jobs after the estimate: %v %v", jobs, err)
	}
	// Charging needs mcp:live.
	f.forbidden(t, f.readTok, "generate_strategy", `{"family":"emaCrossover","symbol":"BTC/USDT","timeframe":"1h",`+
		`"from":"2026-10-01T00:00:00Z","to":"2026-10-08T00:00:00Z","experiments":3,"acknowledgeCost":true}`, auth.ScopeLive)
	args["acknowledgeCost"] = true
	job := toolOK[outcome](t, f.live, "generate_strategy", args)
	if job.Estimate != nil || job.Job == nil || job.Job.State != "queued" || job.Job.Experiments != 3 || job.Job.CostUsd != "1.5" ||
		job.Job.Request.Timeframe != "1h" {
		t.Fatalf("job %+v", job.Job)
	}
	// 10 − 1.5 = 8.5 left.
	if bal, err := f.lab.Balance(t.Context(), f.ada.ID); err != nil || !bal.Equal(testkit.D("8.5")) {
		t.Fatalf("wallet after the job %s %v", bal, err)
	}
	// The charge is money the app spent: it counts against the app's day cap (1.5 of the
	// default 500 committed), and a cap of 2 refuses the next 1.5 before anything is charged.
	ps := apppolicy.NewPolicies(f.rdb, f.clk.Now)
	if got, err := ps.DayCommitted(t.Context(), f.ada.ID, "agent"); err != nil || !got.Equal(testkit.D("1.5")) {
		t.Fatalf("committed by the charge: %s %v", got, err)
	}
	capped := apppolicy.DefaultPolicy()
	capped.DayNotional = httpapi.Num(testkit.D("2"))
	if err := ps.Set(t.Context(), f.ada.ID, "agent", capped); err != nil {
		t.Fatal(err)
	}
	if text := toolErr(t, f.live, "generate_strategy", args); !strings.Contains(text, `"limit":"dayNotional"`) ||
		!strings.Contains(text, `"used":"1.5"`) || !strings.Contains(text, `"requested":"1.5"`) {
		t.Fatalf("a charge past the day cap: %s", text)
	}
	if err := ps.Set(t.Context(), f.ada.ID, "agent", apppolicy.DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	args["experiments"] = 31
	if text := toolErr(t, f.live, "generate_strategy", args); !strings.Contains(text, `"code":"INVALID_PARAMETER"`) ||
		!strings.Contains(text, `"parameter":"experiments"`) {
		t.Fatalf("31 experiments: %s", text)
	}
	args["experiments"], args["from"] = 3, "last week"
	if text := toolErr(t, f.live, "generate_strategy", args); !strings.Contains(text, `"code":"INVALID_PARAMETER"`) {
		t.Fatalf("bad from: %s", text)
	}
	if bal, _ := f.lab.Balance(t.Context(), f.ada.ID); !bal.Equal(testkit.D("8.5")) {
		t.Fatalf("a refused call charged: %s", bal)
	}
	free := f.user(t, "free@example.com", auth.TierFree)
	c, _ := mcpClient(t, f.bearer(t, free).Token, "", f.ts)
	if text := toolErr(t, c, "generate_strategy", map[string]any{"family": "emaCrossover"}); !strings.Contains(text, `"code":"TIER_NOT_ALLOWED"`) {
		t.Fatalf("free tier: %s", text)
	}
	entries, _, err := f.journal.List(t.Context(), f.ada.ID, "", 10)
	if err != nil || len(entries) != 7 || entries[6].Tool != "generate_strategy" || !entries[6].Outcome.OK ||
		entries[4].Outcome.Code != errs.InvalidParameter || entries[2].Outcome.Code != errs.PolicyLimit ||
		entries[0].Outcome.Code != errs.InvalidParameter {
		t.Fatalf("journal %+v %v", entries, err)
	}
}

// Without a Lab, generate_strategy is not served.
func TestGenerateStrategyNeedsLab(t *testing.T) {
	f := newFixture(t)
	ts := f.serve(t)
	c, _ := mcpClient(t, f.bearer(t, f.user(t, "ada@example.com", auth.TierPro)).Token, "", ts)
	tools, err := c.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range tools.Tools {
		if tool.Name == "generate_strategy" {
			t.Fatal("generate_strategy listed without a Lab")
		}
	}
}

// The changing tools say so in their annotations: the trading tools may reach a real
// exchange, the closes and the cancel destroy, and every tool declares what it answers.
func TestTradingToolDefinitions(t *testing.T) {
	f := newTradeFixture(t)
	res, err := f.read.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][3]bool{ // destructive, idempotent, open world
		"place_order": {false, false, true}, "set_stop_loss": {false, true, true}, "set_take_profit": {false, true, true},
		"close_position": {true, false, true}, "close_all_positions": {true, false, true}, "cancel_order": {true, true, true},
		"refill_paper_account": {true, false, false}, "generate_strategy": {false, false, false},
	}
	seen := 0
	for _, tool := range res.Tools {
		w, ok := want[tool.Name]
		if !ok {
			continue
		}
		seen++
		a := tool.Annotations
		if a.ReadOnlyHint == nil || *a.ReadOnlyHint || *a.DestructiveHint != w[0] || *a.IdempotentHint != w[1] ||
			*a.OpenWorldHint != w[2] || tool.OutputSchema.Type != "object" || !strings.Contains(tool.Description, "mcp:") {
			t.Errorf("%s: annotations %+v, output %+v", tool.Name, a, tool.OutputSchema)
		}
	}
	if seen != len(want) {
		t.Fatalf("%d of the %d tools listed", seen, len(want))
	}
}
