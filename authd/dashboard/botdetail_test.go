package dashboard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/authd"
	"github.com/sigops/sigops/authd/dashboard"
	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/candles"
	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/signal"
)

// bdProjectBot writes a bot of owner straight into the registry, as the controller projects
// one: the page reads the projection only, and a projected bot may carry a name no
// Kubernetes object could (the XSS payloads).
func bdProjectBot(t *testing.T, owner string, mod func(*registry.Bot)) registry.Bot {
	t.Helper()
	bot := registry.Bot{ID: uuid.NewString(), Namespace: "ns", Name: "trend", Owner: emails.Canonical(owner),
		Account: registry.Account{Kind: registry.AccountPaper, Name: "paper"}, Market: "spot", Symbol: "BTC/USDT",
		PositionSize: "10%", Leverage: 1, Availability: "active", WebhookEnabled: true}
	if mod != nil {
		mod(&bot)
	}
	if err := registry.New(env.RDB).Project(context.Background(), bot, uuid.NewString()); err != nil {
		t.Fatal(err)
	}
	return bot
}

// publish stores a signal's result and its index entry as the executor does.
func bdPublish(t *testing.T, botID, id, source string, body string, receivedAt int64, res result.Result) {
	t.Helper()
	res.SignalID, res.BotID = id, botID
	e := queue.Envelope{SignalID: id, BotID: botID, Source: source, Signal: json.RawMessage(body), ReceivedAt: receivedAt}
	if err := queue.PublishResult(context.Background(), env.RDB, e, res); err != nil {
		t.Fatal(err)
	}
}

// bdAssertNoInline checks a page against what the CSP forbids.
func bdAssertNoInline(t *testing.T, page string) {
	t.Helper()
	for _, bad := range []string{"<script>", "style=", "<style", " onclick=", "javascript:"} {
		if strings.Contains(page, bad) {
			t.Fatalf("page holds %q", bad)
		}
	}
}

func TestBotDetailShowsTheOwnersFigures(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	bot := bdProjectBot(t, u.Email, nil)
	ctx := context.Background()
	now := time.Now()
	day := func(n int) int64 { return now.Add(-time.Duration(n) * 24 * time.Hour).UnixMilli() }

	// An open long of 0.5 BTC bought for 30000 USDT: entry 30000 / 0.5 = 60000, with its
	// stop-loss at 57000 and take-profit at 66000.
	pos := position.Position{ID: "pos-1", BotID: bot.ID, Symbol: "BTC/USDT", Kind: exchange.Spot, Side: position.Long,
		Size: httpapi.Num(testkit.D("0.5")), Cost: httpapi.Num(testkit.D("30000")), Margin: httpapi.Num(testkit.D("30000")), Leverage: 1,
		StopLoss:   &position.Exit{Price: httpapi.Num(testkit.D("57000")), ClosePercent: httpapi.Num(testkit.D("100"))},
		TakeProfit: &position.Exit{Price: httpapi.Num(testkit.D("66000")), ClosePercent: httpapi.Num(testkit.D("100"))},
		DCALevel:   1, CreatedAt: day(1), UpdatedAt: day(1)}
	// Two closed trades in the last 30 days: +150.5 and -40.25 net.
	win := position.Trade{ID: "t1", PositionID: "p0", BotID: bot.ID, Symbol: "BTC/USDT", Kind: exchange.Spot, Side: position.Long,
		Size: httpapi.Num(testkit.D("0.1")), EntryPrice: httpapi.Num(testkit.D("58000")), ExitPrice: httpapi.Num(testkit.D("59510")), Leverage: 1,
		Pnl: httpapi.Num(testkit.D("151")), Fees: httpapi.Num(testkit.D("0.5")), NetPnl: httpapi.Num(testkit.D("150.5")), Closed: true, Reason: "signal",
		OpenedAt: day(3), ClosedAt: day(2)}
	loss := position.Trade{ID: "t2", PositionID: "p1", BotID: bot.ID, Symbol: "BTC/USDT", Kind: exchange.Spot, Side: position.Long,
		Size: httpapi.Num(testkit.D("0.1")), EntryPrice: httpapi.Num(testkit.D("60000")), ExitPrice: httpapi.Num(testkit.D("59600")), Leverage: 1,
		Pnl: httpapi.Num(testkit.D("-40")), Fees: httpapi.Num(testkit.D("0.25")), NetPnl: httpapi.Num(testkit.D("-40.25")), Closed: true, Reason: "stop_loss",
		OpenedAt: day(2), ClosedAt: day(1)}
	if _, err := env.RDB.Pipelined(ctx, func(p redis.Pipeliner) error {
		if err := position.StagePosition(ctx, p, bot.ID, "BTC/USDT", &pos); err != nil {
			return err
		}
		if err := position.StageTrade(ctx, p, win); err != nil {
			return err
		}
		return position.StageTrade(ctx, p, loss)
	}); err != nil {
		t.Fatal(err)
	}
	// Two signals: a buy filled 37 ms after it was received, and a refused one.
	recv := now.Add(-time.Minute).UnixMilli()
	bdPublish(t, bot.ID, "sig-ok-"+bot.ID[:8], queue.SourceWebhook, `{"action":"buy"}`, recv, result.Result{Success: true,
		Message: "Order placed", Timestamp: recv + 37, Order: &result.Order{Success: true, OrderID: "o1", Status: "filled",
			Symbol: "BTC/USDT", Side: "buy", Type: "market", Amount: httpapi.Num(testkit.D("0.5")), FilledAmount: httpapi.Num(testkit.D("0.5")), AvgPrice: httpapi.Num(testkit.D("60000"))}})
	bdPublish(t, bot.ID, "sig-ko-"+bot.ID[:8], queue.SourceManual, `{"type":"market"}`, recv+1000, result.Result{Success: false,
		Code: errs.InsufficientBalance, Error: "needs 100 USDT, has 5", Timestamp: recv + 1000 + 1250})

	resp, page := b.get("/dashboard/bots/" + bot.ID)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d\n%s", resp.StatusCode, page)
	}
	bdAssertNoInline(t, page)
	for _, want := range []string{
		"<h1>trend</h1>", "Paper account", "BTC/USDT",
		`<td class="num">0.5</td><td class="num">60000</td>`,       // size, entry 30000 / 0.5
		`<td class="num">57000</td>`, `<td class="num">66000</td>`, // SL, TP
		// Analytics of 30 days: 2 trades, 1 won, 1 lost; 150.5 - 40.25 = 110.25; win rate
		// 1 / 2 = 50.0 %; profit factor 150.5 / 40.25 = 3.739... = 3.74.
		`Trades</div><div class="value num ">2</div>`, `Winning trades</div><div class="value num ">1</div>`,
		`Win rate</div><div class="value num ">50.0%</div>`, `Total P&amp;L</div><div class="value num up">110.25</div>`,
		`Average win</div><div class="value num up">150.5</div>`, `Average loss</div><div class="value num down">-40.25</div>`,
		`Profit factor</div><div class="value num ">3.74</div>`,
		// Signal log: the latency 37 ms; the refusal in words with its code.
		"37 ms", "1250 ms", "buy 0.5 BTC/USDT @ 60000 (filled)",
		html.EscapeString(dashboard.ErrorInWords(errs.New(errs.InsufficientBalance, "needs 100 USDT, has 5"))),
		// Live fragments.
		`data-live-src="/dashboard/bots/` + bot.ID + `/position" data-live-bots="` + bot.ID + `"`,
		`data-live-src="/dashboard/bots/` + bot.ID + `/signals" data-live-bots="` + bot.ID + `"`,
		`data-live-src="/dashboard/bots/` + bot.ID + `/status" data-live-bots="` + bot.ID + `"`,
		`data-chart="candles" data-chart-src="/api/dashboard/bots/` + bot.ID + `/chart?timeframe=1h"`,
		`data-chart="equity" data-chart-src="/api/dashboard/bots/` + bot.ID + `/equity"`,
		`action="/dashboard/bots/` + bot.ID + `/pause"`, `name="next" value="/dashboard/bots/` + bot.ID + `"`,
		"Reveal webhook URL",
		`<script src="/static/vendor/lightweight-charts.standalone.production.js" defer></script>`,
		`<script src="/static/chart.js" defer></script>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	// The newest signal first.
	if strings.Index(page, "1250 ms") > strings.Index(page, "37 ms") {
		t.Error("signal log not newest first")
	}
	// The risk panel shows the read API's figures.
	m, err := f.apis.Trading.RiskMetricsOf(ctx, bot)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf(`%d / 10 <span class="badge`, m.RiskScore); !strings.Contains(page, want) || !strings.Contains(page, ">"+m.RiskLevel+"</span>") {
		t.Errorf("risk %d %s not shown", m.RiskScore, m.RiskLevel)
	}
	// The webhook URL is not in the page until asked for.
	if strings.Contains(page, "/api/webhooks/trade/") || strings.Contains(page, `id="webhook-url"`) {
		t.Error("webhook URL in the page before Reveal")
	}

	if resp, js := b.get("/static/chart.js"); resp.StatusCode != http.StatusOK || !strings.Contains(js, "createSeriesMarkers") {
		t.Errorf("chart.js: %d", resp.StatusCode)
	}

	// The fragments answer alone with their live attributes.
	for _, frag := range []string{"position", "signals", "status"} {
		resp, body := b.get("/dashboard/bots/" + bot.ID + "/" + frag)
		if resp.StatusCode != http.StatusOK || strings.Contains(body, "<html") ||
			!strings.Contains(body, `data-live-src="/dashboard/bots/`+bot.ID+`/`+frag+`"`) {
			t.Errorf("fragment %s: status %d\n%s", frag, resp.StatusCode, body)
		}
	}
}

func TestBotDetailOfAnotherUserIsNotFound(t *testing.T) {
	f := newFixture(t)
	owner, other := f.user("pro"), f.user("pro")
	bot := bdProjectBot(t, owner.Email, nil)
	b := f.loggedIn(other)
	missing := uuid.NewString()
	_, missingPage := b.get("/dashboard/bots/" + missing)
	for _, path := range []string{"", "/position", "/signals", "/status", "/webhook"} {
		resp, body := b.get("/dashboard/bots/" + bot.ID + path)
		if resp.StatusCode != http.StatusNotFound || strings.Contains(body, "trend") {
			t.Errorf("another user's bot%s: status %d", path, resp.StatusCode)
		}
		respM, bodyM := b.get("/dashboard/bots/" + missing + path)
		if respM.StatusCode != http.StatusNotFound {
			t.Errorf("missing bot%s: status %d", path, respM.StatusCode)
		}
		if path == "" && strings.ReplaceAll(body, bot.ID, "X") != strings.ReplaceAll(bodyM, missing, "X") {
			t.Errorf("another user's bot and a missing one answer differently:\n%s\n---\n%s", body, missingPage)
		}
	}
	resp, _ := b.submit("/dashboard/bots/"+bot.ID+"/webhook/regenerate", url.Values{"confirm": {"yes"}})
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("regenerate another user's webhook: status %d", resp.StatusCode)
	}
	for _, api := range []string{"/chart", "/equity"} {
		resp, body := b.get("/api/dashboard/bots/" + bot.ID + api)
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(body, `"NOT_FOUND"`) {
			t.Errorf("API %s of another user's bot: %d %s", api, resp.StatusCode, body)
		}
	}
}

// bdChartJSON decodes a chart answer keeping numbers as their text.
func bdChartJSON(t *testing.T, body string, v any) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%v: %s", err, body)
	}
}

type bdChartAnswer struct {
	Symbol  string `json:"symbol"`
	Candles []struct {
		Time  int64       `json:"time"`
		Close json.Number `json:"close"`
	} `json:"candles"`
	Markers []dashboard.ChartMarker `json:"markers"`
	Lines   []struct {
		Price json.Number `json:"price"`
		Title string      `json:"title"`
	} `json:"lines"`
	Message string `json:"message"`
}

func TestBotChartData(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	bot := bdProjectBot(t, u.Email, nil)
	ctx := context.Background()
	series, err := f.apis.Candles.Get(ctx, candles.Request{Symbol: "BTC/USDT", ExchangeID: candles.Paper, Timeframe: "1h"})
	if err != nil {
		t.Fatal(err)
	}
	n := len(series.Candles)
	if n < 20 {
		t.Fatalf("%d candles", n)
	}
	// A buy filled 1234 ms into candle n-10, a sell in the last second of candle n-5, a
	// fill on another pair, a rejected order and a fill before the first candle: two markers.
	buyAt, sellAt := series.Candles[n-10].Time, series.Candles[n-5].Time
	orders := []position.OrderRecord{
		{ClientOrderID: "c-early", BotID: bot.ID, Symbol: "BTC/USDT", Side: exchange.SideBuy, Type: exchange.Market, Status: exchange.StatusFilled,
			Amount: httpapi.Num(testkit.D("1")), FilledAmount: httpapi.Num(testkit.D("1")), AvgPrice: httpapi.Num(testkit.D("1")), CreatedAt: (series.Candles[0].Time - 7200) * 1000, UpdatedAt: (series.Candles[0].Time - 7200) * 1000},
		{ClientOrderID: "c-buy", BotID: bot.ID, Symbol: "BTC/USDT", Side: exchange.SideBuy, Type: exchange.Market, Status: exchange.StatusFilled,
			Amount: httpapi.Num(testkit.D("0.5")), FilledAmount: httpapi.Num(testkit.D("0.5")), AvgPrice: httpapi.Num(testkit.D("60000")), CreatedAt: buyAt*1000 + 1000, UpdatedAt: buyAt*1000 + 1234},
		{ClientOrderID: "c-eth", BotID: bot.ID, Symbol: "ETH/USDT", Side: exchange.SideBuy, Type: exchange.Market, Status: exchange.StatusFilled,
			Amount: httpapi.Num(testkit.D("2")), FilledAmount: httpapi.Num(testkit.D("2")), AvgPrice: httpapi.Num(testkit.D("3000")), CreatedAt: buyAt * 1000, UpdatedAt: buyAt * 1000},
		{ClientOrderID: "c-rejected", BotID: bot.ID, Symbol: "BTC/USDT", Side: exchange.SideSell, Type: exchange.Market, Status: exchange.StatusRejected,
			Amount: httpapi.Num(testkit.D("0.5")), CreatedAt: buyAt * 1000, UpdatedAt: buyAt * 1000},
		{ClientOrderID: "c-sell", BotID: bot.ID, Symbol: "BTC/USDT", Side: exchange.SideSell, Type: exchange.Market, Status: exchange.StatusPartiallyFilled,
			Amount: httpapi.Num(testkit.D("0.5")), FilledAmount: httpapi.Num(testkit.D("0.25")), AvgPrice: httpapi.Num(testkit.D("61000.5")), CreatedAt: sellAt * 1000, UpdatedAt: sellAt*1000 + 3599_000},
	}
	pos := position.Position{ID: "pos-c", BotID: bot.ID, Symbol: "BTC/USDT", Kind: exchange.Spot, Side: position.Long,
		Size: httpapi.Num(testkit.D("0.25")), Cost: httpapi.Num(testkit.D("15000")), Margin: httpapi.Num(testkit.D("15000")), Leverage: 1,
		StopLoss:   &position.Exit{Price: httpapi.Num(testkit.D("57000.25")), ClosePercent: httpapi.Num(testkit.D("100"))},
		TakeProfit: &position.Exit{Price: httpapi.Num(testkit.D("66000.75")), ClosePercent: httpapi.Num(testkit.D("100"))}, DCALevel: 1}
	if _, err := env.RDB.Pipelined(ctx, func(p redis.Pipeliner) error {
		for _, o := range orders { // oldest first: the list is newest first
			if err := position.StageOrder(ctx, p, o, true); err != nil {
				return err
			}
		}
		return position.StagePosition(ctx, p, bot.ID, "BTC/USDT", &pos)
	}); err != nil {
		t.Fatal(err)
	}

	resp, body := b.get("/api/dashboard/bots/" + bot.ID + "/chart?timeframe=1h")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("chart: %d %s", resp.StatusCode, body)
	}
	var got bdChartAnswer
	bdChartJSON(t, body, &got)
	if got.Symbol != "BTC/USDT" || len(got.Candles) < n-1 {
		t.Fatalf("symbol %s, %d candles", got.Symbol, len(got.Candles))
	}
	want := []dashboard.ChartMarker{
		{Time: buyAt, Position: "belowBar", Shape: "arrowUp", Color: "#26a69a", Text: "Buy 0.5 @ 60000"},
		{Time: sellAt, Position: "aboveBar", Shape: "arrowDown", Color: "#ef5350", Text: "Sell 0.25 @ 61000.5"},
	}
	if fmt.Sprint(got.Markers) != fmt.Sprint(want) {
		t.Fatalf("markers %+v, want %+v", got.Markers, want)
	}
	if len(got.Lines) != 2 || got.Lines[0].Title != "Stop-loss" || got.Lines[0].Price != "57000.25" ||
		got.Lines[1].Title != "Take-profit" || got.Lines[1].Price != "66000.75" {
		t.Fatalf("lines %+v", got.Lines)
	}
	// Candle prices are the service's, to the digit.
	last := series.Candles[n-1]
	for _, c := range got.Candles {
		if c.Time == last.Time && c.Close.String() != last.Close.String() {
			t.Fatalf("close %s, service %s", c.Close, last.Close)
		}
	}

	resp, body = b.get("/api/dashboard/bots/" + bot.ID + "/chart?timeframe=2h")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "INVALID_PARAMETER") {
		t.Fatalf("bad timeframe: %d %s", resp.StatusCode, body)
	}

	// The internal API takes the session only, with its CSRF header.
	req, _ := http.NewRequest(http.MethodGet, b.url("/api/dashboard/bots/"+bot.ID+"/chart"), nil)
	req.Header.Set("Authorization", "Bearer x")
	req.Header.Set("X-CSRF-Token", b.csrf)
	if resp, _ := b.do(req); resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("bearer: %d", resp.StatusCode)
	}
	req, _ = http.NewRequest(http.MethodGet, b.url("/api/dashboard/bots/"+bot.ID+"/chart"), nil)
	if resp, body := b.do(req); resp.StatusCode != http.StatusForbidden || !strings.Contains(body, string(dashboard.CodeCSRF)) {
		t.Fatalf("no CSRF: %d %s", resp.StatusCode, body)
	}
}

// An any-pair bot charts the pair asked for, else its open position's, else its latest
// order's, and says so when it has none.
func TestAnyPairBotChartsItsPair(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	bot := bdProjectBot(t, u.Email, func(b *registry.Bot) { b.Symbol = "" })
	ctx := context.Background()
	var got bdChartAnswer
	_, body := b.get("/api/dashboard/bots/" + bot.ID + "/chart")
	bdChartJSON(t, body, &got)
	if got.Message == "" || len(got.Candles) != 0 {
		t.Fatalf("no pair yet: %s", body)
	}
	if _, page := b.get("/dashboard/bots/" + bot.ID); !strings.Contains(page, "any pair") || !strings.Contains(page, `id="bd-symbol"`) {
		t.Fatal("no pair picker")
	}
	o := position.OrderRecord{ClientOrderID: "c1", BotID: bot.ID, Symbol: "ETH/USDT", Side: exchange.SideBuy, Type: exchange.Market,
		Status: exchange.StatusFilled, Amount: httpapi.Num(testkit.D("1")), FilledAmount: httpapi.Num(testkit.D("1")), AvgPrice: httpapi.Num(testkit.D("3000")),
		CreatedAt: time.Now().UnixMilli(), UpdatedAt: time.Now().UnixMilli()}
	if _, err := env.RDB.Pipelined(ctx, func(p redis.Pipeliner) error { return position.StageOrder(ctx, p, o, true) }); err != nil {
		t.Fatal(err)
	}
	_, body = b.get("/api/dashboard/bots/" + bot.ID + "/chart")
	got = bdChartAnswer{}
	bdChartJSON(t, body, &got)
	if got.Symbol != "ETH/USDT" || len(got.Candles) == 0 {
		t.Fatalf("latest order's pair: %s", body)
	}
	// An open position's pair comes before the latest order's.
	pos := position.Position{ID: "pos-a", BotID: bot.ID, Symbol: "BTC/USDT", Kind: exchange.Spot, Side: position.Long,
		Size: httpapi.Num(testkit.D("1")), Cost: httpapi.Num(testkit.D("60000")), Margin: httpapi.Num(testkit.D("60000")), Leverage: 1, DCALevel: 1}
	if _, err := env.RDB.Pipelined(ctx, func(p redis.Pipeliner) error { return position.StagePosition(ctx, p, bot.ID, "BTC/USDT", &pos) }); err != nil {
		t.Fatal(err)
	}
	_, body = b.get("/api/dashboard/bots/" + bot.ID + "/chart")
	got = bdChartAnswer{}
	bdChartJSON(t, body, &got)
	if got.Symbol != "BTC/USDT" {
		t.Fatalf("open position's pair: %s", body)
	}
	// A pair asked for comes first, and the page keeps it in the chart's source.
	if _, page := b.get("/dashboard/bots/" + bot.ID + "?symbol=ethusdt"); !strings.Contains(page, `/chart?symbol=ETH%2FUSDT&amp;timeframe=1h"`) {
		t.Fatal("the pair picked is not kept in the chart's source")
	}
	_, body = b.get("/api/dashboard/bots/" + bot.ID + "/chart?symbol=ethusdt")
	got = bdChartAnswer{}
	bdChartJSON(t, body, &got)
	if got.Symbol != "ETH/USDT" {
		t.Fatalf("asked pair: %s", body)
	}
}

// Three trades, the middle one a big loss: the equity chart draws a point per trade, so
// the dip shows, and its lowest point is the max drawdown the page reports.
func TestBotEquityShowsTheDip(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	bot := bdProjectBot(t, u.Email, nil)
	ctx := context.Background()
	now := time.Now().Truncate(time.Second)
	days := map[analytics.Date]analytics.Day{}
	if _, err := env.RDB.TxPipelined(ctx, func(p redis.Pipeliner) error {
		analytics.StageStart(ctx, p, bot.ID, testkit.D("1000"))
		for i, net := range []string{"120.125", "-400.0625", "250.5"} {
			// Booked as the executor does: each trade with its day.
			tr := position.Trade{ID: fmt.Sprint("t", i), BotID: bot.ID, Symbol: "BTC/USDT", NetPnl: httpapi.Num(testkit.D(net)),
				ClosedAt: now.Add(time.Duration(i-3) * time.Second).UnixMilli()}
			if err := position.StageTrade(ctx, p, tr); err != nil {
				return err
			}
			date := analytics.DateOfMS(tr.ClosedAt)
			d := days[date]
			d.Add(tr)
			days[date] = d
			if err := analytics.StageDay(ctx, p, bot.ID, date, d); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	_, body := b.get("/api/dashboard/bots/" + bot.ID + "/equity?period=7d")
	var got struct {
		Series []struct {
			Points []struct {
				Time  int64       `json:"time"`
				Value json.Number `json:"value"`
			} `json:"points"`
		} `json:"series"`
	}
	bdChartJSON(t, body, &got)
	pts := got.Series[0].Points
	// The last four: the three trades (a second apart) and today's close.
	var tail []string
	for _, p := range pts[len(pts)-4:] {
		tail = append(tail, p.Value.String())
	}
	if strings.Join(tail, " ") != "1120.125 720.0625 970.5625 970.5625" || pts[len(pts)-4].Time != now.Unix()-3 {
		t.Fatalf("chart %s", body)
	}
	// Its lowest point is the peak less the page's max drawdown, to the last decimal.
	_, page := b.get("/dashboard/bots/" + bot.ID + "?period=7d")
	if !strings.Contains(page, `Max drawdown</div><div class="value num ">400.0625</div>`) {
		t.Fatalf("page's max drawdown:\n%s", page)
	}
	low := testkit.D(string(pts[0].Value))
	for _, p := range pts {
		low = decimal.Min(low, testkit.D(string(p.Value)))
	}
	testkit.EqualD(t, "lowest point", low, "720.0625") // 1120.125 − 400.0625
}

func TestBotEquityAndAnalyticsPeriods(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	bot := bdProjectBot(t, u.Email, nil)
	ctx := context.Background()
	now := time.Now()
	for i, net := range []string{"10", "-4", "2.5"} {
		tr := position.Trade{ID: fmt.Sprint("t", i), BotID: bot.ID, Symbol: "BTC/USDT", Kind: exchange.Spot, Side: position.Long,
			Size: httpapi.Num(testkit.D("1")), EntryPrice: httpapi.Num(testkit.D("100")), ExitPrice: httpapi.Num(testkit.D("100")), Leverage: 1, Pnl: httpapi.Num(testkit.D(net)),
			NetPnl: httpapi.Num(testkit.D(net)), Closed: true, Reason: "signal",
			OpenedAt: now.Add(-time.Duration(5-i) * 24 * time.Hour).UnixMilli(), ClosedAt: now.Add(-time.Duration(4-i) * 24 * time.Hour).UnixMilli()}
		if _, err := env.RDB.Pipelined(ctx, func(p redis.Pipeliner) error { return position.StageTrade(ctx, p, tr) }); err != nil {
			t.Fatal(err)
		}
	}
	resp, body := b.get("/api/dashboard/bots/" + bot.ID + "/equity?period=7d")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("equity: %d %s", resp.StatusCode, body)
	}
	var got struct {
		Series []struct {
			Name   string `json:"name"`
			Points []struct {
				Time  int64       `json:"time"`
				Value json.Number `json:"value"`
			} `json:"points"`
		} `json:"series"`
	}
	bdChartJSON(t, body, &got)
	q, err := analytics.ParseQuery("7d", "", "", "true", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := analytics.New(env.RDB).Bot(ctx, bot, q)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Series) != 1 || got.Series[0].Name != "Equity" || len(got.Series[0].Points) != len(rep.EquityCurve) || len(rep.EquityCurve) == 0 {
		t.Fatalf("series %+v, analytics curve %+v", got.Series, rep.EquityCurve)
	}
	for i, p := range rep.EquityCurve {
		g := got.Series[0].Points[i]
		if g.Time != p.Timestamp/1000 || g.Value.String() != p.Equity.String() {
			t.Fatalf("point %d: %+v, analytics %+v", i, g, p)
		}
	}
	resp, body = b.get("/api/dashboard/bots/" + bot.ID + "/equity?period=fortnight")
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(body, "INVALID_PARAMETER") {
		t.Fatalf("bad period: %d %s", resp.StatusCode, body)
	}

	// 7 days: 10 - 4 + 2.5 = 8.5 over 3 trades.
	resp, page := b.get("/dashboard/bots/" + bot.ID + "?period=7d")
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `Total P&amp;L</div><div class="value num up">8.5</div>`) ||
		!strings.Contains(page, `Trades</div><div class="value num ">3</div>`) ||
		!strings.Contains(page, `/equity?period=7d"`) || !strings.Contains(page, `aria-current="true">Last 7 days</a>`) {
		t.Fatalf("7d page: %d\n%s", resp.StatusCode, page)
	}
	// A bad period or range is refused in words, with the read API's message and code.
	for _, query := range []string{"period=fortnight", "period=7d&startDate=2026-01-01", "startDate=2026-13-40"} {
		resp, page := b.get("/dashboard/bots/" + bot.ID + "?" + query)
		vals, _ := url.ParseQuery(query)
		_, perr := analytics.ParseQuery(vals.Get("period"), vals.Get("startDate"), vals.Get("endDate"), "", time.Now())
		e, ok := errs.As(perr)
		if !ok {
			t.Fatalf("%s: ParseQuery accepted it", query)
		}
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, html.EscapeString(dashboard.ErrorInWords(e))) {
			t.Fatalf("%s: status %d, want 400 with %q\n%s", query, resp.StatusCode, dashboard.ErrorInWords(e), page)
		}
	}
}

func TestSignalLogPages(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	bot := bdProjectBot(t, u.Email, nil)
	base := time.Now().Add(-time.Hour).UnixMilli()
	for i := range 53 {
		bdPublish(t, bot.ID, fmt.Sprintf("s%02d-%s", i, bot.ID[:8]), queue.SourceWebhook, `{"action":"buy"}`, base+int64(i)*1000,
			result.Result{Success: true, Message: fmt.Sprintf("done %02d", i), Timestamp: base + int64(i)*1000 + 5})
	}
	_, page := b.get("/dashboard/bots/" + bot.ID)
	rows := regexp.MustCompile(`<td><span title="s(\d\d)-`).FindAllStringSubmatch(page, -1)
	if len(rows) != 50 || rows[0][1] != "52" || rows[49][1] != "03" {
		t.Fatalf("first page: %d rows", len(rows))
	}
	older := regexp.MustCompile(`<a href="([^"]+)">Older signals</a>`).FindStringSubmatch(page)
	if older == nil {
		t.Fatal("no link to older signals")
	}
	_, page = b.get(html.UnescapeString(older[1]))
	rows = regexp.MustCompile(`<td><span title="s(\d\d)-`).FindAllStringSubmatch(page, -1)
	if len(rows) != 3 || rows[0][1] != "02" || rows[2][1] != "00" || strings.Contains(page, "Older signals") || !strings.Contains(page, ">Newest</a>") {
		t.Fatalf("second page: %v", rows)
	}
}

// bdWebhookRe finds the revealed URL.
var bdWebhookRe = regexp.MustCompile(`id="webhook-url" type="text" readonly value="([^"]+)"`)

func TestWebhookRevealAndRegenerate(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	ctx := context.Background()
	c := fleet.Caller{UserID: u.ID, Email: emails.Canonical(u.Email)}
	obj, err := f.apis.Fleet.Create(ctx, c, "hooked", tradingv1.SignalBotSpec{Symbol: "BTC/USDT"})
	if err != nil {
		t.Fatal(err)
	}
	id := string(obj.UID)
	var old string
	testkit.Eventually(t, 30*time.Second, "webhook URL made", func() error {
		old, err = f.apis.Fleet.WebhookURL(ctx, c, id)
		return err
	})

	_, page := b.get("/dashboard/bots/" + id)
	if strings.Contains(page, old) {
		t.Fatal("URL in the page before Reveal")
	}
	resp, page := b.get("/dashboard/bots/" + id + "/webhook")
	if m := bdWebhookRe.FindStringSubmatch(page); resp.StatusCode != http.StatusOK || m == nil || html.UnescapeString(m[1]) != old {
		t.Fatalf("reveal: %d, want %s\n%s", resp.StatusCode, old, page)
	}
	if !strings.Contains(page, `data-copy="webhook-url"`) || !strings.Contains(page, `data-copy="tv-message"`) {
		t.Fatal("no copy buttons")
	}
	// htmx gets the section alone.
	req, _ := http.NewRequest(http.MethodGet, b.url("/dashboard/bots/"+id+"/webhook"), nil)
	req.Header.Set("HX-Request", "true")
	if resp, frag := b.do(req); resp.StatusCode != http.StatusOK || strings.Contains(frag, "<html") || !strings.Contains(frag, `id="webhook"`) || !bdWebhookRe.MatchString(frag) {
		t.Fatalf("htmx reveal: %d\n%s", resp.StatusCode, frag)
	}
	other := f.loggedIn(f.user("pro"))
	if resp, body := other.get("/dashboard/bots/" + id + "/webhook"); resp.StatusCode != http.StatusNotFound || strings.Contains(body, old) {
		t.Fatalf("another user's reveal: %d", resp.StatusCode)
	}

	// Without the CSRF token: refused. Without confirm: a confirmation, nothing changed.
	if resp, _ := b.post("/dashboard/bots/"+id+"/webhook/regenerate", url.Values{"confirm": {"yes"}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("no CSRF: %d", resp.StatusCode)
	}
	resp, page = b.submit("/dashboard/bots/"+id+"/webhook/regenerate", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `name="confirm" value="yes"`) || !strings.Contains(page, "Yes, regenerate") {
		t.Fatalf("confirmation step: %d\n%s", resp.StatusCode, page)
	}
	var still tradingv1.SignalBot
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), &still); err != nil || still.Annotations[tradingv1.AnnotationRegenerateWebhook] != "" {
		t.Fatalf("regenerated without confirmation: %v %v", err, still.Annotations)
	}
	resp, _ = b.submit("/dashboard/bots/"+id+"/webhook/regenerate", url.Values{"confirm": {"yes"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/dashboard/bots/"+id+"?done=webhook-regenerated#webhook" {
		t.Fatalf("regenerate: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	var fresh string
	testkit.Eventually(t, 30*time.Second, "new webhook URL", func() error {
		fresh, err = f.apis.Fleet.WebhookURL(ctx, c, id)
		if err == nil && fresh == old {
			return fmt.Errorf("still the old URL")
		}
		return err
	})
	_, page = b.get("/dashboard/bots/" + id + "/webhook")
	if m := bdWebhookRe.FindStringSubmatch(page); m == nil || html.UnescapeString(m[1]) != fresh {
		t.Fatalf("reveal after regenerate shows %v, want %s", m, fresh)
	}
	if _, page = b.get("/dashboard/bots/" + id + "?done=webhook-regenerated"); !strings.Contains(page, "A new webhook URL is being made") {
		t.Fatal("no flash after regenerate")
	}
	entries, _, err := f.apis.Audit.List(ctx, u.ID, "", 20)
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, e := range entries {
		if e.Channel == audit.ChannelDashboard && e.Outcome.OK && bytes.Contains(e.Arguments, []byte(id)) {
			tools = append(tools, e.Tool)
		}
	}
	if !strings.Contains(strings.Join(tools, " "), "regenerate_webhook") || !strings.Contains(strings.Join(tools, " "), "get_webhook_url") {
		t.Fatalf("audit journal: %v", tools)
	}
}

func TestGitOpsBotWebhookRegenerateRefused(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("team-bd-%d", serial.Add(1))}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	acc := &tradingv1.PaperAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "paper"}, Spec: tradingv1.PaperAccountSpec{Owner: u.Email}}
	if err := k8s.Create(ctx, acc); err != nil {
		t.Fatal(err)
	}
	obj := &tradingv1.SignalBot{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "platform"},
		Spec: tradingv1.SignalBotSpec{Owner: u.Email, PaperAccountRef: &tradingv1.LocalObjectReference{Name: "paper"}, Symbol: "ETH/USDT"}}
	if err := k8s.Create(ctx, obj); err != nil {
		t.Fatal(err)
	}
	id := string(obj.UID)
	testkit.Eventually(t, 30*time.Second, "GitOps bot projected", func() error {
		_, err := registry.New(env.RDB).Get(ctx, id)
		return err
	})
	resp, page := b.submit("/dashboard/bots/"+id+"/webhook/regenerate", url.Values{"confirm": {"yes"}})
	words := html.EscapeString("This bot is managed by your platform team's GitOps repository")
	if resp.StatusCode != errs.ManagedByGitOps.HTTPStatus() || !strings.Contains(page, words) || !strings.Contains(page, "MANAGED_BY_GITOPS") {
		t.Fatalf("GitOps regenerate: %d\n%s", resp.StatusCode, page)
	}
	var still tradingv1.SignalBot
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(obj), &still); err != nil || still.Annotations[tradingv1.AnnotationRegenerateWebhook] != "" {
		t.Fatalf("GitOps bot annotated: %v %v", err, still.Annotations)
	}
	entries, _, _ := f.apis.Audit.List(ctx, u.ID, "", 10)
	if len(entries) == 0 || entries[0].Tool != "regenerate_webhook" || entries[0].Outcome.Code != errs.ManagedByGitOps {
		t.Fatalf("audit: %+v", entries)
	}
}

var bdTVRe = regexp.MustCompile(`(?s)<pre id="tv-message">(.*?)</pre>`)

// The TradingView message, with TradingView's placeholders filled in as an alert fills
// them, is a signal webhookd accepts.
func TestTradingViewMessageIsAValidSignal(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	bot := bdProjectBot(t, u.Email, nil)
	_, page := b.get("/dashboard/bots/" + bot.ID)
	m := bdTVRe.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no TradingView message")
	}
	msg := html.UnescapeString(m[1])
	filled := strings.NewReplacer("{{strategy.order.action}}", "buy", "{{ticker}}", "BINANCE:BTCUSDT",
		"{{strategy.order.id}}", "Long entry", "{{close}}", "65000.5").Replace(msg)
	if strings.Contains(filled, "{{") {
		t.Fatalf("placeholder left: %s", filled)
	}
	sig, err := signal.Parse([]byte(filled))
	if err != nil {
		t.Fatalf("%s: %v", filled, err)
	}
	if sig.Action != signal.Buy || sig.Symbol != "BINANCE:BTCUSDT" || sig.Price != nil || sig.Size != nil || sig.Comment != "Long entry at 65000.5" {
		t.Fatalf("parsed %+v", sig)
	}
	sym, err := f.apis.Candles.Resolve(sig.Symbol)
	if err != nil || sym != "BTC/USDT" {
		t.Fatalf("ticker resolves to %q, %v", sym, err)
	}
	// A sell alert is a sell signal.
	sell := strings.NewReplacer("{{strategy.order.action}}", "sell", "{{ticker}}", "BTCUSDT", "{{strategy.order.id}}", "x", "{{close}}", "1").Replace(msg)
	if sig, err := signal.Parse([]byte(sell)); err != nil || sig.Action != signal.Sell {
		t.Fatalf("sell: %+v %v", sig, err)
	}
}

func TestBotDetailRendersUserTextInert(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	bot := bdProjectBot(t, u.Email, func(b *registry.Bot) {
		b.Name = "n" + xssScript + xssAttr
		b.Account = registry.Account{Kind: registry.AccountExchange, Name: "acct" + xssAttr + xssScript, ID: uuid.NewString()}
		b.Availability, b.DisabledReason = "disabled", "why"+xssScript
	})
	recv := time.Now().UnixMilli()
	bdPublish(t, bot.ID, "sig-x-"+bot.ID[:8], queue.SourceManual, `{"type":"`+strings.ReplaceAll(xssAttr, `"`, `\"`)+`"}`, recv,
		result.Result{Success: false, Code: errs.ExchangeError, Error: "exchange said " + xssScript, Timestamp: recv + 3})
	for _, path := range []string{"", "/status", "/signals"} {
		resp, page := b.get("/dashboard/bots/" + bot.ID + path)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%s: %d", path, resp.StatusCode)
		}
		for _, raw := range []string{xssScript, xssAttr, "<img"} {
			if strings.Contains(page, raw) {
				t.Fatalf("%s: raw %q in page", path, raw)
			}
		}
	}
	_, page := b.get("/dashboard/bots/" + bot.ID)
	for _, text := range []string{bot.Name, bot.Account.Name, bot.DisabledReason, "exchange said " + xssScript} {
		assertInert(t, page, text)
	}
	if !strings.Contains(page, `<span class="badge live">live</span>`) {
		t.Fatal("exchange bot not marked live")
	}
	bdAssertNoInline(t, page)
}

// Without bot management (authd without --bot-actions) the webhook actions say so.
func TestWebhookWithoutBotManagement(t *testing.T) {
	f := newFixture(t, func(o *authd.Options) {
		apis := *o.APIs
		apis.Fleet = nil
		o.APIs = &apis
	})
	u := f.user("pro")
	b := f.loggedIn(u)
	bot := bdProjectBot(t, u.Email, nil)
	words := "Bot management is not configured"
	if resp, page := b.get("/dashboard/bots/" + bot.ID + "/webhook"); resp.StatusCode != http.StatusOK || !strings.Contains(page, words) || bdWebhookRe.MatchString(page) {
		t.Fatalf("reveal: %d\n%s", resp.StatusCode, page)
	}
	if resp, page := b.submit("/dashboard/bots/"+bot.ID+"/webhook/regenerate", url.Values{"confirm": {"yes"}}); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(page, words) {
		t.Fatalf("regenerate: %d\n%s", resp.StatusCode, page)
	}
}
