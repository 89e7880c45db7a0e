package dashboard_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/portfolio"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
)

// seeder writes a user's state through the Go APIs and keys the controllers and the
// executor write: a paper account (paper.Accounts.Ensure), bot projections
// (registry.Project: what the overview reads of a bot, whether sigops or GitOps applied
// it), open positions and trades in the book (position's staging, the booking's writes),
// the per-day aggregates (analytics.Rebuild) and stored signal results (queue.PublishResult).
type seeder struct {
	t     testing.TB
	rdb   redis.UniversalClient
	owner string
	acct  string
}

func newSeeder(t testing.TB, rdb redis.UniversalClient, owner, acct string, balance string) *seeder {
	t.Helper()
	if _, err := paper.NewAccounts(rdb).Ensure(context.Background(), paper.Config{ID: acct, Namespace: "ns-" + acct, Name: "main",
		Owner: owner, Currency: "USDT", InitialBalance: testkit.D(balance), FeeRate: decimal.Zero}); err != nil {
		t.Fatal(err)
	}
	return &seeder{t: t, rdb: rdb, owner: owner, acct: acct}
}

func (s *seeder) bot(id, namespace, name, symbol, market string) registry.Bot {
	s.t.Helper()
	b := registry.Bot{ID: id, Namespace: namespace, Name: name, Owner: s.owner, Market: market, Symbol: symbol,
		Account: registry.Account{Kind: registry.AccountPaper, ID: s.acct, Name: "main"}, PositionSize: "10%", Leverage: 1,
		Availability: "active", WebhookEnabled: true}
	if err := registry.New(s.rdb).Project(context.Background(), b, "hook-"+id); err != nil {
		s.t.Fatal(err)
	}
	return b
}

func (s *seeder) position(p position.Position) {
	s.t.Helper()
	if _, err := s.rdb.TxPipelined(context.Background(), func(tx redis.Pipeliner) error {
		return position.StagePosition(context.Background(), tx, p.BotID, p.Symbol, &p)
	}); err != nil {
		s.t.Fatal(err)
	}
}

// trades books realised trades of a bot and builds its per-day aggregates from them.
func (s *seeder) trades(botID string, trades ...position.Trade) {
	s.t.Helper()
	ctx := context.Background()
	if _, err := s.rdb.TxPipelined(ctx, func(tx redis.Pipeliner) error {
		for _, tr := range trades {
			tr.BotID = botID
			if err := position.StageTrade(ctx, tx, tr); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		s.t.Fatal(err)
	}
	if _, err := analytics.Rebuild(ctx, s.rdb, botID, false); err != nil {
		s.t.Fatal(err)
	}
}

func (s *seeder) signal(botID, sigID, action string, at time.Time, res result.Result) {
	s.t.Helper()
	body, _ := json.Marshal(map[string]string{"action": action})
	env := queue.Envelope{SignalID: sigID, BotID: botID, Source: "webhook", Signal: body, ReceivedAt: at.UnixMilli()}
	if err := queue.PublishResult(context.Background(), s.rdb, env, res); err != nil {
		s.t.Fatal(err)
	}
}

// pinnedPrices makes the fixture's portfolio value positions at fixed prices.
func pinnedPrices(t *testing.T, f *fixture, prices map[string]string) {
	t.Helper()
	sim := marketdata.NewSimulated(marketdata.SimulatedOptions{})
	for key, px := range prices {
		kind, sym, _ := strings.Cut(key, " ")
		if err := sim.SetPrice(exchange.Kind(kind), sym, testkit.D(px)); err != nil {
			t.Fatal(err)
		}
	}
	f.apis.Portfolio = portfolio.New(portfolio.Options{Redis: env.RDB, Prices: sim})
}

// ovUser is a user with two bots on a 10,000 USDT paper account:
//   - alpha: spot long 0.5 BTC/USDT at 60,000 (cost 30,000), stop-loss 58,000; trades
//     today +150.25 and three days ago −50.25;
//   - beta: futures short 2 ETH/USDT at 3,000 ×5 (cost 6,000, margin 1,200); a trade two
//     days ago +100;
//
// and marks BTC/USDT 62,000 (spot) and ETH/USDT 3,100 (futures).
type ovUser struct {
	u           auth.User
	alpha, beta registry.Bot
}

func seedOverviewUser(t *testing.T, f *fixture, alphaName string) ovUser {
	t.Helper()
	u := f.user("pro")
	s := newSeeder(t, env.RDB, u.Email, "pa-"+u.ID, "10000")
	o := ovUser{u: u}
	o.alpha = s.bot("alpha-"+u.ID, "ns-"+u.ID[:8], alphaName, "BTC/USDT", "spot")
	o.beta = s.bot("beta-"+u.ID, "ns-"+u.ID[:8], "beta", "ETH/USDT", "futures")
	now := time.Now()
	day := 24 * time.Hour
	long := position.Open("p-a-"+u.ID, o.alpha.ID, "BTC/USDT", exchange.Spot, position.Long, 1,
		position.Fill{Amount: testkit.D("0.5"), Price: testkit.D("60000"), At: now.UnixMilli()}, "s-a")
	long.StopLoss = &position.Exit{Price: httpapi.Num(testkit.D("58000")), ClosePercent: httpapi.Num(testkit.D("100"))}
	s.position(long)
	short := position.Open("p-b-"+u.ID, o.beta.ID, "ETH/USDT", exchange.Futures, position.Short, 5,
		position.Fill{Amount: testkit.D("2"), Price: testkit.D("3000"), At: now.UnixMilli()}, "s-b")
	s.position(short)
	s.trades(o.alpha.ID,
		position.Trade{ID: "t1", Symbol: "BTC/USDT", NetPnl: httpapi.Num(testkit.D("-50.25")), ClosedAt: now.Add(-3 * day).UnixMilli()},
		position.Trade{ID: "t2", Symbol: "BTC/USDT", NetPnl: httpapi.Num(testkit.D("150.25")), ClosedAt: now.UnixMilli()})
	s.trades(o.beta.ID, position.Trade{ID: "t3", Symbol: "ETH/USDT", NetPnl: httpapi.Num(testkit.D("100")), ClosedAt: now.Add(-2 * day).UnixMilli()})
	pinnedPrices(t, f, map[string]string{"spot BTC/USDT": "62000", "futures ETH/USDT": "3100"})
	return o
}

// plus is s as html/template writes it in text: a plus sign is escaped.
func plus(s string) string { return strings.ReplaceAll(s, "+", "&#43;") }

func mustContain(t *testing.T, page string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(page, w) {
			t.Errorf("page lacks %q", w)
		}
	}
	if t.Failed() {
		t.Fatalf("page:\n%s", page)
	}
}

func TestOverviewFigures(t *testing.T) {
	f := newFixture(t)
	o := seedOverviewUser(t, f, "alpha")
	b := f.loggedIn(o.u)
	resp, page := b.get("/dashboard")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d\n%s", resp.StatusCode, page)
	}
	mustContain(t, page,
		// Equity: the paper account's free balance, 10,000 (the book's positions are the
		// executor's; the paper exchange holds nothing here).
		`>10000.00 USDT<`,
		// Today: alpha's trade of today, +150.25.
		plus(`>+150.25 USDT<`),
		// Unrealised: alpha 0.5 × 62,000 − 30,000 = +1,000; beta 6,000 − 2 × 3,100 = −200;
		// together +800.
		plus(`>+800.00 USDT<`),
		// Realised: −50.25 + 150.25 + 100 = +200.
		plus(`>+200.00 USDT<`),
		// Total PnL: 200 + 800 = +1,000.
		plus(`>+1000.00 USDT<`),
		// The curve steps back from 10,000 by each day's realised result: after today's
		// trade 10,000, before it 9,849.75 (also after two days ago), before +100
		// 9,749.75, before −50.25 9,800. Largest fall 9,800 → 9,749.75 = 50.25, over the
		// peak 9,800 = 0.5127…%; now at the peak: drawdown 0.
		`0.00</span> / 50.25 USDT`, `0.00 % / 0.51 %`,
		`Total equity from 9800.00 to 10000.00 USDT; lowest 9749.75, highest 10000.00`,
		`<svg class="curve"`, `<path class="line" d="M0.0,`,
		// Positions: alpha +1,000 over its 30,000 margin (spot: cost) = +3.33 %; beta −200
		// over 1,200 = −16.67 %.
		plus(`+1000.00 (+3.33 %)`), `-200.00 (-16.67 %)`, `>58000<`, `>62000<`, `>3100<`,
		`href="/dashboard/bots/`+o.alpha.ID+`"`, `href="/dashboard/bots/`+o.beta.ID+`"`,
	)
	if strings.Contains(page, "<script>") || strings.Contains(page, "style=") {
		t.Fatalf("inline script or style:\n%s", page)
	}
}

// Another user's bots, positions and signals never reach the page, and the figures are
// the viewer's alone.
func TestOverviewShowsOwnStateOnly(t *testing.T) {
	f := newFixture(t)
	mine := seedOverviewUser(t, f, "alpha")
	theirs := seedOverviewUser(t, f, "someone-elses-bot")
	s := &seeder{t: t, rdb: env.RDB, owner: theirs.u.Email}
	s.signal(theirs.beta.ID, "sig-theirs-"+theirs.u.ID, "sell", time.Now(), result.Result{Success: true, Message: "theirs"})
	_, page := f.loggedIn(mine.u).get("/dashboard")
	for _, bad := range []string{theirs.alpha.ID, theirs.beta.ID, "someone-elses-bot", "sig-theirs", "theirs"} {
		if strings.Contains(page, bad) {
			t.Fatalf("another user's %q on the page:\n%s", bad, page)
		}
	}
	mustContain(t, page, `>10000.00 USDT<`, plus(`>+800.00 USDT<`))
	for _, name := range []string{"positions", "bots", "activity", "pnl"} {
		_, frag := f.loggedIn(mine.u).get("/dashboard/fragments/overview/" + name)
		if strings.Contains(frag, theirs.beta.ID) || strings.Contains(frag, "someone-elses-bot") {
			t.Fatalf("fragment %s shows another user's bot:\n%s", name, frag)
		}
	}
}

func TestOverviewBotsPauseResumeAndActivity(t *testing.T) {
	f := newFixture(t)
	o := seedOverviewUser(t, f, "alpha")
	ctx := context.Background()
	// beta is under a runtime pause (Risk); alpha, projected without fleet's label as a
	// bot applied by GitOps is, gets a pause form like any other.
	if _, err := registry.New(env.RDB).Pause(ctx, o.beta.ID, registry.Pause{Reason: registry.PauseRisk}, time.Now()); err != nil {
		t.Fatal(err)
	}
	s := &seeder{t: t, rdb: env.RDB, owner: o.u.Email}
	now := time.Now()
	s.signal(o.alpha.ID, "sig-old-"+o.u.ID, "buy", now.Add(-time.Minute), result.Result{Success: true,
		Order: &result.Order{Success: true, Status: "filled", Symbol: "BTC/USDT", Side: "buy", FilledAmount: httpapi.Num(testkit.D("0.5")), AvgPrice: httpapi.Num(testkit.D("60000"))}})
	s.signal(o.beta.ID, "sig-new-"+o.u.ID, "sell", now, result.Result{Code: "BOT_PAUSED", Error: "bot paused"})
	b := f.loggedIn(o.u)
	_, page := b.get("/dashboard")
	csrf := `<input type="hidden" name="csrf_token" value="` + b.csrf + `">`
	next := `<input type="hidden" name="next" value="/dashboard">`
	mustContain(t, page,
		`<form method="post" action="/dashboard/bots/`+o.alpha.ID+`/pause" class="inline">`+csrf+next,
		`<form method="post" action="/dashboard/bots/`+o.beta.ID+`/resume" class="inline">`+csrf+next,
		`<span class="badge paused">paused</span> <span class="muted">Risk</span>`,
		`<span class="badge active">active</span>`,
		`filled</span> buy 0.5 BTC/USDT @ 60000`, `BOT_PAUSED</span> bot paused`)
	// Newest first.
	if strings.Index(page, "BOT_PAUSED") > strings.Index(page, "filled</span> buy") {
		t.Fatalf("activity not newest first:\n%s", page)
	}
}

func TestOverviewEscapesUserText(t *testing.T) {
	f := newFixture(t)
	o := seedOverviewUser(t, f, xssScript)
	s := &seeder{t: t, rdb: env.RDB, owner: o.u.Email, acct: "pa-" + o.u.ID}
	s.bot("xss2-"+o.u.ID, "ns", xssAttr, "", "spot")
	s.signal(o.alpha.ID, "sig-x-"+o.u.ID, xssAttr, time.Now(), result.Result{Code: "EXCHANGE_ERROR", Error: xssScript})
	_, page := f.loggedIn(o.u).get("/dashboard")
	assertInert(t, page, xssScript)
	assertInert(t, page, xssAttr)
	// In the rows the overview writes itself: the position's bot, the bots' names and
	// their forms' labels.
	script, attr := html.EscapeString(xssScript), html.EscapeString(xssAttr)
	mustContain(t, page,
		`<td><a href="/dashboard/bots/`+o.alpha.ID+`">`+script+"</a></td>\n<td>BTC/USDT</td>",
		`<td><a href="/dashboard/bots/`+o.alpha.ID+`">`+script+`</a> <span class="muted">`,
		`aria-label="Pause `+script+`">Pause</button>`, `aria-label="Pause `+attr+`">Pause</button>`)
	for _, name := range []string{"positions", "bots"} {
		_, frag := f.loggedIn(o.u).get("/dashboard/fragments/overview/" + name)
		assertInert(t, frag, xssScript)
	}
}

func TestOverviewEmptyState(t *testing.T) {
	f := newFixture(t)
	resp, page := f.loggedIn(f.user("free")).get("/dashboard")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d", resp.StatusCode)
	}
	mustContain(t, page, `You have no bots yet`, `href="/dashboard/bots/new"`, `href="/dashboard/accounts"`,
		`No open positions.`, `No signals yet.`, `>0.00 USDT<`)
}

var liveRe = regexp.MustCompile(`<(\w+) id="(ov-[a-z]+)"[^>]*data-live-src="([^"]+)"`)

// Every live part of the page is served alone at its data-live-src, as the same element
// with the same attributes (dashboard.js swaps it by outerHTML), with the same figures.
func TestOverviewFragmentsKeepTheirLiveAttributes(t *testing.T) {
	f := newFixture(t)
	o := seedOverviewUser(t, f, "alpha")
	b := f.loggedIn(o.u)
	_, page := b.get("/dashboard?period=7d")
	parts := liveRe.FindAllStringSubmatch(page, -1)
	if len(parts) != 4 {
		t.Fatalf("%d live parts, want pnl, positions, bots, activity:\n%s", len(parts), page)
	}
	for _, p := range parts {
		src := html.UnescapeString(p[3])
		resp, frag := b.get(src)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: status %d", src, resp.StatusCode)
		}
		open := p[0]
		if !strings.HasPrefix(frag, open) {
			t.Fatalf("%s starts %q, want %q", src, frag[:min(len(frag), 200)], open)
		}
		if strings.Contains(frag, "<html") {
			t.Fatalf("%s is a whole page", src)
		}
		if p[2] == "ov-pnl" && (!strings.Contains(src, "period=7d") || !strings.Contains(frag, plus(`>+800.00 USDT<`))) {
			t.Fatalf("pnl fragment %s lost the period or the figures:\n%s", src, frag)
		}
		if p[2] == "ov-positions" && !strings.Contains(frag, plus(`+1000.00 (+3.33 %)`)) {
			t.Fatalf("positions fragment:\n%s", frag)
		}
	}
	resp, _ := b.get("/dashboard/fragments/overview/nothing")
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown fragment: status %d", resp.StatusCode)
	}
	resp, _ = f.browser().get("/dashboard/fragments/overview/pnl")
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("fragment without a session: status %d, want 303 to the login page", resp.StatusCode)
	}
}
