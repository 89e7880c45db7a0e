package dashboard_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/credentials"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
)

// tradeExecutor runs an executor on the suite's Redis for the test, as the executor daemon
// does: a queue consumer over the partitions with the executor as its handler, filling
// paper orders at prices.
func tradeExecutor(t *testing.T, prices testkit.Prices) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	qrdb, err := queue.DedicatedClient(ctx, store.Options{Addr: env.Redis.Addr, ClusterAddrs: env.Redis.ClusterAddrs})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	quiet := slog.New(slog.DiscardHandler)
	ex := executor.New(executor.Deps{Redis: env.RDB, Prices: prices, Logger: quiet})
	c := queue.NewConsumer(qrdb, queue.Options{LeaseTTL: time.Second, Logger: quiet})
	done := make(chan struct{})
	go func() { defer close(done); _ = c.Run(ctx, ex.Handle) }()
	t.Cleanup(func() { cancel(); <-done; _ = qrdb.Close() })
}

var (
	orderKeyRe = regexp.MustCompile(`action="/dashboard/trade/order">.*?name="key" value="([^"]+)"`)
	closeKeyRe = regexp.MustCompile(`action="/dashboard/trade/close" class="inline">.*?name="key" value="([^"]+)">`)
	signalRe   = regexp.MustCompile(`Signal <code>(m-[^<]+)</code>`)
)

// tradeBot is a paper bot of u's made through the form, trading BTC/USDT, once its paper
// account is projected.
func tradeBot(t *testing.T, b *browser, u auth.User, name string) registry.Bot {
	t.Helper()
	id := botsCreate(t, b, u, botsPaperForm(name))
	var bot registry.Bot
	testkit.Eventually(t, 20*time.Second, "bot active on its paper account", func() error {
		var err error
		if bot, err = registry.New(env.RDB).Get(context.Background(), id); err != nil {
			return err
		}
		if bot.Availability != "active" || bot.Account.ID == "" {
			return fmt.Errorf("bot %s %s account %q", bot.Availability, bot.DisabledReason, bot.Account.ID)
		}
		_, err = paper.NewAccounts(env.RDB).Get(context.Background(), bot.Account.ID)
		return err
	})
	return bot
}

func TestManualOrderOnAPaperBotExecutesOnce(t *testing.T) {
	tradeExecutor(t, testkit.Prices{"BTC/USDT": testkit.D("60000")})
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	bot := tradeBot(t, b, u, "hand")

	resp, page := b.get("/dashboard/trade?bot=" + bot.ID)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "Order on hand") || !strings.Contains(page, "No open position.") {
		t.Fatalf("trade page: status %d\n%s", resp.StatusCode, page)
	}
	key := match(t, orderKeyRe, strings.ReplaceAll(page, "\n", " "))
	form := url.Values{"bot": {bot.ID}, "key": {key}, "side": {"buy"}, "type": {"market"}, "symbol": {"BTC/USDT"}, "amount": {"0.01"}}
	resp, page = b.submit("/dashboard/trade/order", form)
	// 0.01 BTC at 60000 costs 600; the paper fee is 0.1 %: 0.6.
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "Executed") ||
		!strings.Contains(page, "BUY 0.01 BTC/USDT at 60000 (filled), fee 0.6.") {
		t.Fatalf("buy: status %d\n%s", resp.StatusCode, page)
	}
	first := match(t, signalRe, page)
	// The same form sent again (a double click, a reload) answers the first order.
	resp, page = b.submit("/dashboard/trade/order", form)
	if resp.StatusCode != http.StatusOK || match(t, signalRe, page) != first || !strings.Contains(page, "this form had been sent already") {
		t.Fatalf("repeat: status %d\n%s", resp.StatusCode, page)
	}
	acct, err := paper.NewAccounts(env.RDB).Get(context.Background(), bot.Account.ID)
	// 10000 − 600 − 0.6 = 9399.4: one buy, not two.
	if err != nil || !acct.Balance.Equal(testkit.D("9399.4")) {
		t.Fatalf("balance %s %v, want 9399.4", acct.Balance, err)
	}
	views, err := f.apis.Trading.Positions(context.Background(), bot.ID)
	if err != nil || len(views) != 1 || !views[0].Size.Equal(testkit.D("0.01")) {
		t.Fatalf("positions %+v %v", views, err)
	}
	// The page shows the position with its Close button and the order in the recent list.
	_, page = b.get("/dashboard/trade?bot=" + bot.ID)
	flat := strings.ReplaceAll(page, "\n", " ")
	if !strings.Contains(page, `<td>BTC/USDT</td><td>long</td><td class="num">0.01</td><td class="num">60000</td>`) ||
		!strings.Contains(page, `<span class="badge active">filled</span> buy BTC/USDT</td><td class="num">0.01</td><td class="num">60000</td>`) {
		t.Fatalf("page after the buy:\n%s", page)
	}
	resp, page = b.submit("/dashboard/trade/close", url.Values{"bot": {bot.ID}, "key": {match(t, closeKeyRe, flat)}, "symbol": {"BTC/USDT"}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "SELL 0.01 BTC/USDT at 60000 (filled), fee 0.6.") || !strings.Contains(page, "No open position.") {
		t.Fatalf("close: status %d\n%s", resp.StatusCode, page)
	}
	// 9399.4 + 600 − 0.6 = 9998.8.
	if acct, err = paper.NewAccounts(env.RDB).Get(context.Background(), bot.Account.ID); err != nil || !acct.Balance.Equal(testkit.D("9998.8")) {
		t.Fatalf("balance after the close %s %v, want 9998.8", acct.Balance, err)
	}
	// Close-all with nothing open fails in its result, in words.
	b.get("/dashboard/trade?bot=" + bot.ID)
	resp, page = b.submit("/dashboard/trade/close-all", url.Values{"bot": {bot.ID}, "key": {"close-all-1"}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "Failed") ||
		!strings.Contains(page, "There is no open position to close.") || !strings.Contains(page, "(POSITION_NOT_FOUND 3002)") {
		t.Fatalf("close-all: status %d\n%s", resp.StatusCode, page)
	}
	var tools []string
	for _, e := range f.journal(u.ID) {
		tools = append(tools, fmt.Sprintf("%s:%v", e.Tool, e.Outcome.OK))
	}
	if got := strings.Join(tools, " "); got != "close_all_positions:true close_position:true place_order:true place_order:true create_bot:true" {
		t.Fatalf("journal %s", got)
	}
	if e := f.journal(u.ID)[3]; !strings.Contains(string(e.Arguments), `"amount":"0.01"`) || !strings.Contains(string(e.Arguments), `"idempotencyKey":"`+key+`"`) {
		t.Fatalf("place_order arguments %s", e.Arguments)
	}
}

// Without an executor the order is queued; refusals come in words with the form kept.
func TestManualOrderQueuedAndRefused(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	bot := tradeBot(t, b, u, "queued")
	resp, page := b.submit("/dashboard/trade/order", url.Values{"bot": {bot.ID}, "key": {"q-1"}, "side": {"sell"}, "type": {"limit"},
		"symbol": {"BTC/USDT"}, "amount": {"0.002"}, "price": {"70000.5"}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "Queued") || !strings.Contains(page, "not executed yet") {
		t.Fatalf("queued: status %d\n%s", resp.StatusCode, page)
	}
	for _, c := range []struct {
		form   url.Values
		status int
		words  string
	}{
		{url.Values{"amount": {"lots"}}, http.StatusUnprocessableEntity, "amount must be a number above 0 (INVALID_AMOUNT 1002)"},
		{url.Values{"type": {"limit"}}, http.StatusUnprocessableEntity, "(INVALID_PRICE 1003)"},
		{url.Values{"key": {""}}, http.StatusBadRequest, "reload the page"},
		{url.Values{"type": {"stop"}}, http.StatusBadRequest, "type must be market or limit"},
	} {
		form := url.Values{"bot": {bot.ID}, "key": {"r-" + c.words}, "side": {"buy"}, "type": {"market"}, "symbol": {"BTC/USDT"}, "amount": {"0.01"}}
		for k, v := range c.form {
			form[k] = v
		}
		resp, page := b.submit("/dashboard/trade/order", form)
		if resp.StatusCode != c.status || !strings.Contains(page, c.words) {
			t.Fatalf("%v: status %d, want %d with %q\n%s", c.form, resp.StatusCode, c.status, c.words, page)
		}
	}
	// A paused bot refuses entries (closing still works).
	if resp, _ := b.submit("/dashboard/bots/"+bot.ID+"/pause", url.Values{"next": {"/dashboard/trade?bot=" + bot.ID}}); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("pause: %d", resp.StatusCode)
	}
	resp, page = b.submit("/dashboard/trade/order", url.Values{"bot": {bot.ID}, "key": {"p-1"}, "side": {"buy"}, "type": {"market"}, "amount": {"0.01"}})
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(page, "The bot is paused: resume it to open positions") ||
		!strings.Contains(page, `<span class="badge paused">paused</span>`) {
		t.Fatalf("paused bot: status %d\n%s", resp.StatusCode, page)
	}
	resp, page = b.submit("/dashboard/trade/close", url.Values{"bot": {bot.ID}, "key": {"p-2"}, "symbol": {"BTC/USDT"}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "Queued") {
		t.Fatalf("close on a paused bot: status %d\n%s", resp.StatusCode, page)
	}
}

// A live bot's order is confirmed first, in words, and placed once with the same key.
func TestLiveOrderIsConfirmedFirst(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	owner := strings.ToLower(u.Email)
	uid := "xc-" + u.ID
	if err := credentials.NewConnections(env.RDB).Save(context.Background(), credentials.Connection{UID: uid,
		Namespace: fleet.NamespaceFor(u.ID), Name: "main-key", Exchange: "binance", Owner: owner, Ready: true}); err != nil {
		t.Fatal(err)
	}
	bot := registry.Bot{ID: "live-" + u.ID, Namespace: fleet.NamespaceFor(u.ID), Name: "real", Owner: owner, Market: "spot",
		PositionSize: "10%", Leverage: 1, Availability: "active", Account: registry.Account{Kind: registry.AccountExchange, Name: "main-key", ID: uid}}
	if err := registry.New(env.RDB).Project(context.Background(), bot, "hash-"+bot.ID); err != nil {
		t.Fatal(err)
	}
	_, page := b.get("/dashboard/trade?bot=" + bot.ID)
	if !strings.Contains(page, `<span class="badge live">live: binance</span>`) || !strings.Contains(page, "every order is confirmed first") {
		t.Fatalf("live trade page:\n%s", page)
	}
	// The stream is the bot's queue partition's, shared with the bots of earlier tests that
	// hash to the same partition (nothing consumes it here): count what this test adds.
	stream := queue.StreamOf(bot.ID, queue.PriorityStrategyEntry)
	queued := func() int64 {
		n, err := env.RDB.XLen(context.Background(), stream).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	before := queued()
	form := url.Values{"bot": {bot.ID}, "key": {"live-1"}, "side": {"buy"}, "type": {"market"}, "symbol": {"btc/usdt"}, "amount": {"0.01"}}
	resp, page := b.submit("/dashboard/trade/order", form)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "You are about to BUY 0.01 BTC/USDT at market on binance with real money.") ||
		!strings.Contains(page, `name="confirm" value="yes"`) || !strings.Contains(page, `name="key" value="live-1"`) {
		t.Fatalf("confirmation: status %d\n%s", resp.StatusCode, page)
	}
	if n := queued(); n != before {
		t.Fatalf("queued before the confirmation: %d entries, %d before", n, before)
	}
	form.Set("confirm", "yes")
	for i := 0; i < 2; i++ {
		resp, page = b.submit("/dashboard/trade/order", form)
		if resp.StatusCode != http.StatusOK || !strings.Contains(page, "Queued") {
			t.Fatalf("confirmed order %d: status %d\n%s", i, resp.StatusCode, page)
		}
	}
	if n := queued(); n != before+1 {
		t.Fatalf("confirmed twice with one key: %d entries, %d before; want one more", n, before)
	}
	// Close-all is confirmed too.
	resp, page = b.submit("/dashboard/trade/close-all", url.Values{"bot": {bot.ID}, "key": {"live-2"}})
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "You are about to CLOSE ALL open positions of real on binance with real money.") {
		t.Fatalf("close-all confirmation: status %d\n%s", resp.StatusCode, page)
	}
	// The list marks it live.
	if _, page = b.get("/dashboard/bots"); !strings.Contains(page, `<span class="badge live">live</span> <span class="muted">main-key</span>`) {
		t.Fatalf("list of a live bot:\n%s", page)
	}
	// The pro user's bot form offers the connection.
	_, page = b.get("/dashboard/bots/new")
	if !strings.Contains(page, `<option value="main-key">main-key (binance, not usable)</option>`) {
		t.Fatalf("bot form lacks the connection:\n%s", page)
	}
}

// A paper bot whose fills the viewer's exchange bot copies reaches real money: its orders
// are confirmed as a live bot's are (they were placed at once before). The symbol is
// taken in any form the webhook takes.
func TestOrderReachingALiveFollowerIsConfirmedFirst(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	owner := strings.ToLower(u.Email)
	reg := registry.New(env.RDB)
	master := registry.Bot{ID: "master-" + u.ID, Namespace: fleet.NamespaceFor(u.ID), Name: "signals", Owner: owner, Market: "spot",
		PositionSize: "10%", Leverage: 1, Availability: "active", Account: registry.Account{Kind: registry.AccountPaper, Name: "paper"}}
	follower := registry.Bot{ID: "follower-" + u.ID, Namespace: fleet.NamespaceFor(u.ID), Name: "copy", Owner: owner, Market: "spot",
		PositionSize: "10%", Leverage: 1, Availability: "active", Account: registry.Account{Kind: registry.AccountExchange, Name: "main-key", ID: "xc-" + u.ID},
		CopyFrom: &registry.CopyFrom{MasterID: master.ID, Ratio: "1"}}
	for _, bot := range []registry.Bot{master, follower} {
		if err := reg.Project(context.Background(), bot, "hash-"+bot.ID); err != nil {
			t.Fatal(err)
		}
	}
	stream := queue.StreamOf(master.ID, queue.PriorityStrategyEntry)
	before, err := env.RDB.XLen(context.Background(), stream).Result()
	if err != nil {
		t.Fatal(err)
	}
	form := url.Values{"bot": {master.ID}, "key": {"copy-1"}, "side": {"buy"}, "type": {"market"}, "symbol": {"BTCUSDT"}, "amount": {"0.01"}}
	resp, page := b.submit("/dashboard/trade/order", form)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "You are about to BUY 0.01 BTC/USDT at market on the paper bot signals, whose fills are copied to your bots on an exchange: real money.") ||
		!strings.Contains(page, `name="confirm" value="yes"`) {
		t.Fatalf("confirmation: status %d\n%s", resp.StatusCode, page)
	}
	if n, _ := env.RDB.XLen(context.Background(), stream).Result(); n != before {
		t.Fatalf("queued before the confirmation: %d entries, %d before", n, before)
	}
}

func TestTradePageShowsInputInert(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	form := botsPaperForm("anything")
	form.Set("pair", "any")
	id := botsCreate(t, b, u, form)
	resp, page := b.submit("/dashboard/trade/order", url.Values{"bot": {id}, "key": {"x-1"}, "side": {"buy"}, "type": {"market"},
		"symbol": {xssPayloads[0]}, "amount": {xssPayloads[1]}})
	if resp.StatusCode != http.StatusUnprocessableEntity {
		t.Fatalf("status %d\n%s", resp.StatusCode, page)
	}
	assertInert(t, page, strings.ToUpper(xssPayloads[0]))
	assertInert(t, page, xssPayloads[1])
	resp, page = b.submit("/dashboard/trade/order", url.Values{"bot": {id}, "key": {"x-2"}, "side": {"buy"}, "type": {"market"},
		"symbol": {xssPayloads[1]}})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "(INVALID_SYMBOL 1001)") {
		t.Fatalf("status %d\n%s", resp.StatusCode, page)
	}
	assertInert(t, page, strings.ToUpper(xssPayloads[1]))
	// The live fragment carries the same attributes as the page's.
	resp, frag := b.get("/dashboard/trade/panel?bot=" + id)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(frag, `<div id="trade-panel" data-live-src="/dashboard/trade/panel?bot=`+id+`" data-live-bots="`+id+`">`) {
		t.Fatalf("panel: status %d\n%s", resp.StatusCode, frag)
	}
}

// The Preview button shows what the order would do now, sized and checked by the
// executor's own code, and places, counts and journals nothing; a refused order shows
// the check that refuses it.
func TestTradePreviewPlacesNothing(t *testing.T) {
	tradeExecutor(t, testkit.Prices{"BTC/USDT": testkit.D("60000")})
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	bot := tradeBot(t, b, u, "peek")
	_, page := b.get("/dashboard/trade?bot=" + bot.ID)
	key := match(t, orderKeyRe, strings.ReplaceAll(page, "\n", " "))
	form := url.Values{"bot": {bot.ID}, "key": {key}, "side": {"buy"}, "type": {"limit"}, "symbol": {"BTCUSDT"},
		"amount": {"0.01"}, "price": {"50000"}, "preview": {"yes"}}
	resp, page := b.submit("/dashboard/trade/order", form)
	// 0.01 BTC at the limit 50000 is 500; the paper fee 0.1 % of it.
	for _, want := range []string{"Preview: nothing was placed", `<td class="num">0.01</td><td class="num">50000</td><td class="num">500</td><td class="num">0.5</td><td class="num">500</td>`,
		"bot: passes", "size: passes", "exposure: passes"} {
		if resp.StatusCode != http.StatusOK || !strings.Contains(page, want) {
			t.Fatalf("preview: status %d, lacks %q\n%s", resp.StatusCode, want, page)
		}
	}
	form.Set("amount", "0.0000001")
	if _, page = b.submit("/dashboard/trade/order", form); !strings.Contains(page, "size: refuses") {
		t.Fatalf("preview below the minimum:\n%s", page)
	}
	acct, err := paper.NewAccounts(env.RDB).Get(context.Background(), bot.Account.ID)
	if err != nil || !acct.Balance.Equal(testkit.D("10000")) {
		t.Fatalf("balance %s %v after previews", acct.Balance, err)
	}
	if recent, err := f.apis.Trading.RecentSignals(context.Background(), bot.ID); err != nil || len(recent) != 0 {
		t.Fatalf("signals after previews: %v %v", recent, err)
	}
	for _, e := range f.journal(u.ID) {
		if e.Tool == "place_order" {
			t.Fatalf("a preview was journaled as an order: %+v", e)
		}
	}
}
