package dashboard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	"k8s.io/apimachinery/pkg/types"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/lab"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/wallet"
)

// labServe runs a lab engine (an executor's job runner) for the rest of the test, serving
// the queue partitions of users only, so that a job stays queued until its test lets it
// run. Tests run one after the other, so one engine at a time owns a partition; one
// stopped leaves its entries pending, and the next claims them, as executors do.
func (f *fixture) labServe(users ...auth.User) {
	var parts []int
	for _, u := range users {
		parts = append(parts, store.PartitionOf(u.ID))
	}
	e := lab.NewEngine(lab.EngineOptions{Redis: env.RDB, History: marketdata.NewSimulated(marketdata.SimulatedOptions{}),
		Owned: func() []int { return parts }, Workers: 2, Poll: 20 * time.Millisecond, HistoryBackoff: time.Millisecond,
		Logger: slog.New(slog.DiscardHandler)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = e.Run(ctx) }()
	f.t.Cleanup(func() { cancel(); <-done })
}

// labUser is a user of tier with balance USD in the Strategy Lab wallet.
func (f *fixture) labUser(tier, balance string) auth.User {
	f.t.Helper()
	u := f.user(tier)
	if balance != "0" {
		if _, err := f.users.Wallets.Credit(context.Background(), u.ID, decimal.RequireFromString(balance)); err != nil {
			f.t.Fatal(err)
		}
	}
	return u
}

// labForm is a job of n experiments of the EMA crossover on 3000 one-minute candles of
// BTC/USDT ending at the last whole minute: enough candles for every parameter set the
// search draws (slowPeriod at most 400), few enough to run in moments.
func labForm(n int) url.Values {
	to := time.Now().UTC().Truncate(time.Minute)
	return url.Values{"family": {"emaCrossover"}, "symbol": {"BTC/USDT"}, "market": {"spot"}, "timeframe": {"1m"},
		"from": {to.Add(-3000 * time.Minute).Format("2006-01-02T15:04")}, "to": {to.Format("2006-01-02T15:04")},
		"experiments": {strconv.Itoa(n)}}
}

var (
	runFormRe = regexp.MustCompile(`(?s)<form method="post" action="/dashboard/lab/jobs">(.*?)</form>`)
	hiddenRe  = regexp.MustCompile(`<input type="hidden" name="([A-Za-z]+)" value="([^"]*)">`)
	jobPathRe = regexp.MustCompile(`^/dashboard/lab/jobs/([0-9a-f-]{36})\?done=queued$`)
)

// runForm is the reviewed page's run form, as the browser would send it.
func runForm(t *testing.T, page string) url.Values {
	t.Helper()
	m := runFormRe.FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no run form in page:\n%s", page)
	}
	form := url.Values{}
	for _, h := range hiddenRe.FindAllStringSubmatch(m[1], -1) {
		form.Set(h[1], html.UnescapeString(h[2]))
	}
	return form
}

// review posts the form to "Review cost" and submits the run button; it answers the job.
func (b *browser) labRun(form url.Values) lab.Job {
	t := b.f.t
	t.Helper()
	resp, page := b.submit("/dashboard/lab/estimate", form)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("estimate: status %d\n%s", resp.StatusCode, page)
	}
	resp, _ = b.submit("/dashboard/lab/jobs", runForm(t, page))
	m := jobPathRe.FindStringSubmatch(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || m == nil {
		t.Fatalf("run: status %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	return lab.Job{ID: m[1]}
}

func (f *fixture) labDone(u auth.User, id string) lab.Job {
	f.t.Helper()
	var j lab.Job
	testkit.Eventually(f.t, 60*time.Second, "job "+id+" finished", func() error {
		var err error
		if j, err = f.apis.Lab.Job(context.Background(), u.ID, id); err != nil {
			return err
		}
		if j.State != lab.StateDone && j.State != lab.StateFailed {
			return fmt.Errorf("state %s, %d of %d", j.State, j.Completed, j.Experiments)
		}
		return nil
	})
	return j
}

func (f *fixture) balance(u auth.User) decimal.Decimal {
	f.t.Helper()
	b, err := f.apis.Lab.Balance(context.Background(), u.ID)
	if err != nil {
		f.t.Fatal(err)
	}
	return b
}

// The cost is shown, with the balance, before anything runs; the run needs no
// acknowledgement from the dashboard and charges exactly the cost shown.
func TestLabShowsTheCostThenRunsAndChargesIt(t *testing.T) {
	f := newFixture(t)
	u := f.labUser(auth.TierPro, "10")
	b := f.loggedIn(u)

	resp, page := b.get("/dashboard/lab")
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `action="/dashboard/lab/estimate"`) ||
		!strings.Contains(page, "10.00 USD") || strings.Contains(page, "TIER_NOT_ALLOWED") {
		t.Fatalf("lab page: status %d\n%s", resp.StatusCode, page)
	}
	for _, fam := range []string{"emaCrossover", "rsiReversion", "donchianBreakout", "bollingerReversion", "macdCrossover", "supertrend"} {
		if !strings.Contains(page, `<option value="`+fam+`"`) {
			t.Fatalf("family %s not offered", fam)
		}
	}

	resp, page = b.submit("/dashboard/lab/estimate", labForm(3))
	// 3 experiments × 0.50 USD = 1.50 USD; the wallet holds 10.00.
	for _, want := range []string{"3 experiments × 0.50 USD = <strong class=\"lab-cost\">1.50 USD</strong>",
		"Your wallet holds 10.00 USD", "Run for $1.50"} {
		if !strings.Contains(page, want) {
			t.Fatalf("estimate: status %d, no %q in\n%s", resp.StatusCode, want, page)
		}
	}
	// The review charged and queued nothing.
	if got := f.balance(u); !got.Equal(decimal.RequireFromString("10")) {
		t.Fatalf("balance after the review: %s", got)
	}
	if jobs, _, _ := f.apis.Lab.Jobs(context.Background(), u.ID, "", 10); len(jobs) != 0 {
		t.Fatalf("the review queued %d jobs", len(jobs))
	}
	run := runForm(t, page)
	if run.Get("seed") == "" || run.Get("experiments") != "3" {
		t.Fatalf("run form %v", run)
	}

	resp, _ = b.submit("/dashboard/lab/jobs", run)
	m := jobPathRe.FindStringSubmatch(resp.Header.Get("Location"))
	if resp.StatusCode != http.StatusSeeOther || m == nil {
		t.Fatalf("run: status %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	job, err := f.apis.Lab.Job(context.Background(), u.ID, m[1])
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := strconv.ParseInt(run.Get("seed"), 10, 64)
	if *job.Request.Seed != seed || job.Experiments != 3 || !job.CostUsd.Equal(decimal.RequireFromString("1.5")) {
		t.Fatalf("job %+v", job)
	}
	// 10.00 - 1.50 = 8.50: the debit is the estimate, to the cent, in one ledger entry.
	entries, _, _ := f.apis.Lab.Ledger(context.Background(), u.ID, "", 10)
	if len(entries) != 2 || entries[0].Kind != wallet.Debit || !entries[0].Amount.Equal(decimal.RequireFromString("-1.5")) ||
		!entries[0].Balance.Equal(decimal.RequireFromString("8.5")) || entries[0].JobID != job.ID {
		t.Fatalf("ledger %+v", entries)
	}
	es := f.journal(u.ID)
	if len(es) != 1 || es[0].Tool != "generate_strategy" || es[0].Channel != audit.ChannelDashboard || !es[0].Outcome.OK ||
		!strings.Contains(string(es[0].Arguments), `"experiments":3`) {
		t.Fatalf("journal %+v", es)
	}

	// The page lists the job and the ledger's movements.
	_, page = b.get("/dashboard/lab")
	for _, want := range []string{`href="/dashboard/lab/jobs/` + job.ID + `"`, "8.50 USD", "Job charged", "-1.50", "Top-up", "&#43;10.00"} {
		if !strings.Contains(page, want) {
			t.Fatalf("lab page: no %q in\n%s", want, page)
		}
	}
}

func TestLabTierWithoutTheLabIsRefusedInWords(t *testing.T) {
	f := newFixture(t)
	u := f.labUser(auth.TierFree, "10")
	b := f.loggedIn(u)
	resp, page := b.get("/dashboard/lab")
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "Your subscription tier does not include this.") ||
		!strings.Contains(page, "The Free tier does not include the Strategy Lab") || !strings.Contains(page, "(TIER_NOT_ALLOWED") ||
		strings.Contains(page, `action="/dashboard/lab/estimate"`) {
		t.Fatalf("free tier: status %d\n%s", resp.StatusCode, page)
	}
	for _, path := range []string{"/dashboard/lab/estimate", "/dashboard/lab/jobs"} {
		resp, page = b.submit(path, labForm(2))
		if resp.StatusCode != http.StatusForbidden || !strings.Contains(page, "TIER_NOT_ALLOWED") {
			t.Fatalf("%s: status %d\n%s", path, resp.StatusCode, page)
		}
	}
	if got := f.balance(u); !got.Equal(decimal.RequireFromString("10")) {
		t.Fatalf("balance %s", got)
	}
}

func TestLabInsufficientWalletIsRefusedInWords(t *testing.T) {
	f := newFixture(t)
	u := f.labUser(auth.TierPro, "1")
	b := f.loggedIn(u)
	// 3 × 0.50 = 1.50 > 1.00: no run button, the shortfall in words.
	resp, page := b.submit("/dashboard/lab/estimate", labForm(3))
	if resp.StatusCode != http.StatusOK || runFormRe.MatchString(page) ||
		!strings.Contains(page, "it needs 1.50 USD and holds 1.00 USD") || !strings.Contains(page, "INSUFFICIENT_BALANCE 3001") {
		t.Fatalf("estimate: status %d\n%s", resp.StatusCode, page)
	}
	// A run sent anyway is refused, and nothing is charged or queued.
	resp, page = b.submit("/dashboard/lab/jobs", labForm(3))
	if resp.StatusCode != http.StatusUnprocessableEntity || !strings.Contains(page, "Your Strategy Lab wallet does not hold enough for this job") ||
		!strings.Contains(page, "(INSUFFICIENT_BALANCE 3001)") {
		t.Fatalf("run: status %d\n%s", resp.StatusCode, page)
	}
	if got := f.balance(u); !got.Equal(decimal.RequireFromString("1")) {
		t.Fatalf("balance %s", got)
	}
	if jobs, _, _ := f.apis.Lab.Jobs(context.Background(), u.ID, "", 10); len(jobs) != 0 {
		t.Fatalf("%d jobs queued", len(jobs))
	}
	if es := f.journal(u.ID); len(es) != 1 || es[0].Tool != "generate_strategy" || es[0].Outcome.Code != "INSUFFICIENT_BALANCE" {
		t.Fatalf("journal %+v", es)
	}
}

var (
	rankRowRe = regexp.MustCompile(`(?s)<tr class="lab-rank">\s*<td class="num">(\d+)</td>\s*<td class="num">(\d+)</td>`)
	finalRe   = regexp.MustCompile(`<td class="num lab-final">([0-9.]+)</td>`)
)

// While the job is queued the status fragment polls; once done it stops, tells htmx to
// reload, and the page shows the results in rank order with the Lab's own figures.
func TestLabJobProgressThenRankedResults(t *testing.T) {
	f := newFixture(t)
	u := f.labUser(auth.TierTeam, "10")
	b := f.loggedIn(u)
	job := b.labRun(labForm(4))

	// No engine serves the user's partition yet: the job waits, queued.
	resp, frag := b.get("/dashboard/lab/jobs/" + job.ID + "/progress")
	if resp.StatusCode != http.StatusOK || !strings.Contains(frag, `hx-trigger="every 1s"`) ||
		!strings.Contains(frag, `hx-get="/dashboard/lab/jobs/`+job.ID+`/progress"`) ||
		!strings.Contains(frag, `<progress class="lab-progress" max="4" value="0">`) || strings.Contains(frag, "<html") {
		t.Fatalf("queued fragment: status %d\n%s", resp.StatusCode, frag)
	}

	f.labServe(u)
	done := f.labDone(u, job.ID)
	if done.State != lab.StateDone {
		t.Fatalf("job %+v", done)
	}
	req, _ := http.NewRequest(http.MethodGet, b.url("/dashboard/lab/jobs/"+job.ID+"/progress"), nil)
	req.Header.Set("HX-Request", "true")
	resp, frag = b.do(req)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("HX-Refresh") != "true" || strings.Contains(frag, "hx-trigger") ||
		!strings.Contains(frag, `<progress class="lab-progress" max="4" value="4">`) {
		t.Fatalf("done fragment: status %d, HX-Refresh %q\n%s", resp.StatusCode, resp.Header.Get("HX-Refresh"), frag)
	}

	resp, page := b.get("/dashboard/lab/jobs/" + job.ID + "?done=queued")
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `<p class="ok">Job queued and its cost charged`) {
		t.Fatalf("job page: status %d\n%s", resp.StatusCode, page)
	}
	// Only the outcomes the page knows are shown: a link cannot put words on it.
	if _, other := b.get("/dashboard/lab/jobs/" + job.ID + "?done=Your+account+is+locked"); strings.Contains(other, "locked") {
		t.Fatal("the flash shows a link's text")
	}
	rows := rankRowRe.FindAllStringSubmatch(page, -1)
	if len(rows) != 4 {
		t.Fatalf("%d result rows\n%s", len(rows), page)
	}
	var finals []string
	for _, m := range finalRe.FindAllStringSubmatch(page, -1) {
		finals = append(finals, m[1])
	}
	var wantFinals []string
	for i, x := range done.Result.Experiments {
		if rows[i][1] != strconv.Itoa(i+1) || rows[i][2] != strconv.Itoa(x.Index) {
			t.Fatalf("row %d: rank %s experiment %s, want rank %d experiment %d", i, rows[i][1], rows[i][2], i+1, x.Index)
		}
		if x.Error == nil {
			wantFinals = append(wantFinals, x.FinalEquity.String())
			// The total PnL is the report's own display string, as the browser shows it
			// (html/template writes a gain's "+" as "&#43;").
			if want := x.Metrics.Formatted("USDT").TotalPnL; !strings.Contains(html.UnescapeString(page), want) {
				t.Fatalf("no total PnL %q", want)
			}
		}
	}
	// Every final equity is the backtest's decimal, to its last digit.
	if !slices.Equal(finals, wantFinals) || len(finals) == 0 {
		t.Fatalf("final equities %v, want %v", finals, wantFinals)
	}
	for _, want := range []string{`data-chart="equity"`, `data-chart-src="/api/dashboard/lab/jobs/` + job.ID + `/equity"`,
		"/static/vendor/lightweight-charts.standalone.production.js", "Apply as bot", "Win rate", "Sharpe", "Max drawdown"} {
		if !strings.Contains(page, want) {
			t.Fatalf("job page: no %q", want)
		}
	}

	// The chart data: the leaders' curves, in rank order, from the initial balance (10,000).
	resp, body := b.get("/api/dashboard/lab/jobs/" + job.ID + "/equity")
	var eq struct {
		Series []struct {
			Name   string
			Points []struct {
				Time  int64
				Value float64
			}
		}
	}
	if err := json.Unmarshal([]byte(body), &eq); err != nil || resp.StatusCode != http.StatusOK || len(eq.Series) == 0 || len(eq.Series) > 3 {
		t.Fatalf("equity: status %d %v\n%s", resp.StatusCode, err, body)
	}
	first := done.Result.Experiments[0]
	// The curve chains the in-sample and out-of-sample windows, each run from 10,000.
	end := decimal.NewFromInt(10000)
	for _, w := range first.Windows {
		end = end.Add(w.FinalEquity.Sub(decimal.NewFromInt(10000)))
	}
	if s := eq.Series[0]; s.Name != "#1 (experiment "+strconv.Itoa(first.Index)+")" || len(s.Points) < 2 || s.Points[0].Value != 10000 ||
		s.Points[len(s.Points)-1].Value != end.InexactFloat64() {
		t.Fatalf("series 1: %+v", s)
	}
	for _, s := range eq.Series {
		for i := 1; i < len(s.Points); i++ {
			if s.Points[i].Time <= s.Points[i-1].Time {
				t.Fatalf("%s: times not increasing at %d", s.Name, i)
			}
		}
	}
}

// "Apply as bot" creates a paper SignalBot in the user's namespace with the result's
// strategy and parameters, and goes to its page.
func TestLabApplyCreatesTheBot(t *testing.T) {
	f := newFixture(t)
	u := f.labUser(auth.TierPro, "5")
	b := f.loggedIn(u)
	f.labServe(u)
	job := f.labDone(u, b.labRun(labForm(2)).ID)
	x := job.Result.Experiments[0]
	resp, page := b.submit("/dashboard/lab/jobs/"+job.ID+"/apply", url.Values{"index": {strconv.Itoa(x.Index)}, "name": {"lab-winner"}})
	loc := resp.Header.Get("Location")
	if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/dashboard/bots/") {
		t.Fatalf("apply: status %d to %q\n%s", resp.StatusCode, loc, page)
	}
	uid := strings.TrimPrefix(loc[:strings.Index(loc, "?")], "/dashboard/bots/")
	var bot tradingv1.SignalBot
	if err := k8s.Get(context.Background(), types.NamespacedName{Namespace: fleet.NamespaceFor(u.ID), Name: "lab-winner"}, &bot); err != nil {
		t.Fatal(err)
	}
	s := bot.Spec.Strategy
	if string(bot.UID) != uid || bot.Spec.Symbol != "BTC/USDT" || bot.Spec.Market != tradingv1.MarketSpot || s == nil ||
		string(s.Family) != "emaCrossover" || s.Timeframe != "1m" || s.EMACrossover == nil ||
		int(s.EMACrossover.FastPeriod) != x.Params.FastPeriod || int(s.EMACrossover.SlowPeriod) != x.Params.SlowPeriod ||
		bot.Spec.PaperAccountRef == nil || bot.Spec.PaperAccountRef.Name != fleet.DefaultPaperAccount ||
		bot.Labels[fleet.LabelManagedBy] != fleet.ManagedBySigops {
		t.Fatalf("bot %s: %+v strategy %+v", bot.UID, bot.Spec, s)
	}
	es := f.journal(u.ID)
	if len(es) != 2 || es[0].Tool != "apply_strategy" || !es[0].Outcome.OK || !strings.Contains(string(es[0].Arguments), `"name":"lab-winner"`) {
		t.Fatalf("journal %+v", es)
	}
	// The same name again: refused in words, nothing else created.
	resp, page = b.submit("/dashboard/lab/jobs/"+job.ID+"/apply", url.Values{"index": {strconv.Itoa(x.Index)}, "name": {"lab-winner"}})
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "already exists") {
		t.Fatalf("second apply: status %d\n%s", resp.StatusCode, page)
	}
	// An experiment the job does not have.
	resp, _ = b.submit("/dashboard/lab/jobs/"+job.ID+"/apply", url.Values{"index": {"29"}})
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("experiment 29: status %d", resp.StatusCode)
	}
}

func TestLabAnotherUsersJobIsNotFound(t *testing.T) {
	f := newFixture(t)
	ada := f.labUser(auth.TierPro, "5")
	bob := f.labUser(auth.TierPro, "5")
	job := f.loggedIn(ada).labRun(labForm(1))
	bb := f.loggedIn(bob)
	for _, path := range []string{"/dashboard/lab/jobs/" + job.ID, "/dashboard/lab/jobs/" + job.ID + "/progress",
		"/dashboard/lab/jobs/no-such-job", "/api/dashboard/lab/jobs/" + job.ID + "/equity"} {
		if resp, page := bb.get(path); resp.StatusCode != http.StatusNotFound || strings.Contains(page, "BTC/USDT") {
			t.Fatalf("%s: status %d", path, resp.StatusCode)
		}
	}
	resp, page := bb.submit("/dashboard/lab/jobs/"+job.ID+"/apply", url.Values{"index": {"0"}})
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(page, "(NOT_FOUND") {
		t.Fatalf("apply: status %d\n%s", resp.StatusCode, page)
	}
	if es := f.journal(bob.ID); len(es) != 1 || es[0].Tool != "apply_strategy" || es[0].Outcome.Code != "NOT_FOUND" {
		t.Fatalf("journal %+v", es)
	}
	// bob's page lists none of ada's jobs.
	if _, page := bb.get("/dashboard/lab"); strings.Contains(page, job.ID) {
		t.Fatal("ada's job on bob's page")
	}
}

func TestLabFormsNeedTheCSRFToken(t *testing.T) {
	f := newFixture(t)
	u := f.labUser(auth.TierPro, "5")
	b := f.loggedIn(u)
	job := b.labRun(labForm(1))
	for _, path := range []string{"/dashboard/lab/estimate", "/dashboard/lab/jobs", "/dashboard/lab/jobs/" + job.ID + "/apply"} {
		form := labForm(1)
		form.Set("index", "0")
		if resp, _ := b.post(path, form); resp.StatusCode != http.StatusForbidden {
			t.Fatalf("%s without CSRF: status %d", path, resp.StatusCode)
		}
	}
	// Only the run above was charged: 5.00 - 0.50 = 4.50.
	if got := f.balance(u); !got.Equal(decimal.RequireFromString("4.5")) {
		t.Fatalf("balance %s", got)
	}
}

// What the user typed comes back escaped: the refused form, the Lab's message quoting the
// symbol, and a bot name the API server refuses.
func TestLabUserInputIsInert(t *testing.T) {
	f := newFixture(t)
	u := f.labUser(auth.TierPro, "5")
	b := f.loggedIn(u)
	const script, img = `<script>alert(1)</script>`, `"><img src=x onerror=alert(1)>`
	form := labForm(1)
	form.Set("symbol", script)
	form.Set("initialBalance", img)
	form.Set("positionSize", script)
	resp, page := b.submit("/dashboard/lab/estimate", form)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "INVALID_SYMBOL") ||
		!strings.Contains(page, `value="&#34;&gt;&lt;img src=x onerror=alert(1)&gt;"`) ||
		!strings.Contains(page, "&lt;SCRIPT&gt;ALERT(1)&lt;/SCRIPT&gt;") {
		t.Fatalf("refused form: status %d\n%s", resp.StatusCode, page)
	}
	f.labServe(u)
	job := f.labDone(u, b.labRun(labForm(1)).ID)
	resp, page = b.submit("/dashboard/lab/jobs/"+job.ID+"/apply", url.Values{"index": {"0"}, "name": {img}})
	if resp.StatusCode == http.StatusSeeOther {
		t.Fatalf("apply with name %q: created", img)
	}
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, `&#34;\&#34;&gt;&lt;img src=x onerror=alert(1)&gt;&#34;`) {
		t.Fatalf("apply with name %q: status %d\n%s", img, resp.StatusCode, page)
	}
	for _, p := range []string{page} {
		for _, raw := range []string{script, img, "<SCRIPT>", "<img"} {
			if strings.Contains(p, raw) {
				t.Fatalf("raw %q in page\n%s", raw, p)
			}
		}
	}
	_, page = b.get("/dashboard/lab/jobs/" + job.ID)
	if strings.Contains(page, "<img") || strings.Contains(page, "<script>") {
		t.Fatalf("job page holds raw markup\n%s", page)
	}
}

// Without a fleet the results show but cannot be applied, and the page says why.
func TestLabWithoutBotManagement(t *testing.T) {
	f := newFixture(t, withoutFleet)
	u := f.labUser(auth.TierPro, "5")
	b := f.loggedIn(u)
	f.labServe(u)
	job := f.labDone(u, b.labRun(labForm(1)).ID)
	_, page := b.get("/dashboard/lab/jobs/" + job.ID)
	if !strings.Contains(page, "Bot management is not configured") || strings.Contains(page, "Apply as bot</button>") ||
		!rankRowRe.MatchString(page) {
		t.Fatalf("job page without a fleet:\n%s", page)
	}
	resp, page := b.submit("/dashboard/lab/jobs/"+job.ID+"/apply", url.Values{"index": {"0"}})
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(page, "Bot management is not configured") {
		t.Fatalf("apply without a fleet: status %d\n%s", resp.StatusCode, page)
	}
}
