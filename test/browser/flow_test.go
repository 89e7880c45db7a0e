package browser_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/test/stack"
)

const password = "correct horse battery staple"

// screenshotDir is where SIGOPS_SCREENSHOTS asks for the pages' PNGs (relative to the
// repository root), or "" for none.
func screenshotDir(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SIGOPS_SCREENSHOTS")
	if dir == "" {
		return ""
	}
	if !filepath.IsAbs(dir) {
		root, err := stack.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, dir)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A trader's session in the browser, through every kind of page: log in, make a paper bot
// with the form, reveal its webhook, watch a webhook's fill arrive on the open Overview
// without a reload, read the chart, pause the bot, run a Strategy Lab job and apply its best
// result as a bot, log out.
func TestTraderSession(t *testing.T) {
	ctx := context.Background()
	u, err := users.Create(ctx, auth.NewUser{Email: "browser@example.io", Name: "Browser Trader", Password: password,
		Tier: auth.TierPro, Wallet: decimal.NewFromInt(25)})
	if err != nil {
		t.Fatal(err)
	}
	b := newTab(t)
	shots := screenshotDir(t)

	// Log in through the login page; the dashboard asks for it and comes back.
	login(t, b, u)

	// A paper bot made through the Bots page's form, trading BTC/USDT 0.01 at a time.
	const botName = "browser-btc"
	b.open("/dashboard/bots/new")
	b.do(chromedp.SendKeys(chromedp.CSS(`#bf-name`), botName), chromedp.Click(chromedp.CSS(`#bf-venue-paper`)),
		chromedp.Click(chromedp.CSS(`#bf-pair-fixed`)), chromedp.SendKeys(chromedp.CSS(`#bf-symbol`), "BTC/USDT"),
		chromedp.SendKeys(chromedp.CSS(`#bf-size`), "0.01"),
		chromedp.Click(chromedp.CSS(`form[action="/dashboard/bots"] button[type="submit"]`)))
	b.until(20*time.Second, "the form's answer", `location.pathname !== "/dashboard/bots/new"`)
	if refused := eval[string](b, `Array.prototype.map.call(document.querySelectorAll(".field-error, main .error"), function (e) { return e.textContent; }).join("; ")`); refused != "" {
		t.Fatalf("the bot form refused: %s", refused)
	}
	botID := projected(t, u.Email, botName)
	// A connected app's order held for the user, for the Approvals page's screenshot: held
	// now, as the executor's preview would refuse it later (the bot paused, a position open).
	heldOrder(t, u, botID, botName, "0.001", 5*time.Minute)

	// Its webhook URL, revealed on the Bot detail page.
	b.open("/dashboard/bots/" + botID)
	b.do(chromedp.Click(chromedp.CSS(`#webhook a[href*="/webhook"]`)), chromedp.WaitVisible(chromedp.CSS(`#webhook-url`)))
	hookURL, err := chromedp.Run(b.ctx, chromedp.Value(chromedp.CSS(`#webhook-url`)))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(hookURL, base+"/api/webhooks/trade/") {
		t.Fatalf("webhook URL = %q, want one under %s/api/webhooks/trade/", hookURL, base)
	}

	// The Overview open and live; a webhook's buy fills and shows there without a reload.
	latency := fillOnOverview(t, b, hookURL)
	t.Logf("webhook 200 → Overview DOM: %d ms", latency.Milliseconds())
	if latency > 500*time.Millisecond {
		t.Errorf("webhook 200 → Overview DOM took %s, the target is under 500 ms", latency)
	}

	// Bot detail: the candle chart is drawn, with the buy's marker.
	b.open("/dashboard/bots/" + botID)
	b.until(20*time.Second, "the candle chart drawn with the fill's marker",
		`(function () { var c = document.querySelector('.chart[data-chart="candles"]');
		  return c && c.dataset.drawn === "true" && Number(c.dataset.markers) >= 1; })()`)
	if n := eval[int](b, paintedPixels); n < 2000 {
		t.Errorf("the candle chart painted %d pixels other than its background, want a drawn chart", n)
	}

	// Pause from the page: the page shows the bot paused, with a resume button.
	b.do(chromedp.Click(chromedp.CSS(fmt.Sprintf(`form[action="/dashboard/bots/%s/pause"] button`, botID))))
	b.until(20*time.Second, "the bot shown paused",
		fmt.Sprintf(`!!document.querySelector('form[action="/dashboard/bots/%s/resume"]')`, botID))
	testkit.Eventually(t, 20*time.Second, "the bot paused in the registry", func() error {
		pause, err := registry.New(env.RDB).ReadPause(ctx, botID, time.Now())
		if err == nil && pause == nil {
			err = errNotYet
		}
		return err
	})

	// A Strategy Lab job: review its cost, run it, apply the best result as a bot.
	jobPath, labBot := runLab(t, b)
	if labBot == "" || labBot == botID {
		t.Fatalf("applying the lab's result opened bot %q", labBot)
	}

	// At phone width the Overview scrolls only vertically; the theme toggle switches.
	phone(t, b)
	theme(t, b)

	// A connected app with limits, so that Connected apps shows them.
	if _, err := auth.NewOAuth(env.RDB, auth.OAuthOptions{}).CreateAuthorization(ctx, auth.Authorization{ID: "browser-app",
		UserID: u.ID, ClientID: "desk-agent", ClientName: "Desk agent", Scope: auth.ScopeLive, Resource: "https://mcp.sigops.test/mcp",
		Gen: u.Generation}); err != nil {
		t.Fatal(err)
	}
	if err := apppolicy.NewPolicies(env.RDB, nil).Set(ctx, u.ID, "desk-agent",
		apppolicy.Policy{Bots: []string{botID}, OrdersPerHour: 20}); err != nil {
		t.Fatal(err)
	}

	screenshots(t, b, shots, strings.NewReplacer("{bot}", botID, "{job}", jobPath))

	// Log out: the dashboard asks for a login again.
	b.open("/dashboard")
	b.do(chromedp.Click(chromedp.CSS(`form[action="/logout"] button`)))
	b.until(10*time.Second, "logged out", `location.pathname !== "/dashboard"`)
	b.open("/dashboard")
	if p := b.path(); !strings.HasPrefix(p, "/login") {
		t.Fatalf("after logout /dashboard is at %s, want the login page", p)
	}
}

// login logs u in through the login page, asked for by the dashboard, which it comes back to.
func login(t *testing.T, b *tab, u auth.User) {
	t.Helper()
	b.open("/dashboard")
	if p := b.path(); !strings.HasPrefix(p, "/login") {
		t.Fatalf("without a session /dashboard is at %s, want the login page", p)
	}
	b.do(chromedp.SendKeys(chromedp.CSS("#email"), u.Email), chromedp.SendKeys(chromedp.CSS("#password"), password),
		chromedp.Click(chromedp.CSS(`form[action="/login"] button[type="submit"]`)))
	b.until(10*time.Second, "the dashboard after login", `location.pathname === "/dashboard" && !!document.querySelector("main")`)
}

// buy posts a buy signal to a bot's webhook URL as curl would (the bot's own size), checks
// that it filled, and returns when the 200 arrived.
func buy(t *testing.T, hookURL string) time.Time { t.Helper(); return signal(t, hookURL, "buy") }

// signal posts action (buy, sell) for BTCUSDT to a bot's webhook URL, checks that it
// filled, and returns when the 200 arrived.
func signal(t *testing.T, hookURL, action string) time.Time {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, hookURL, strings.NewReader(`{"action":"`+action+`","symbol":"BTCUSDT"}`))
	req.Header.Set("Content-Type", "application/json")
	resp, err := front.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	okAt := time.Now()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"filled"`) {
		t.Fatalf("webhook: %d %s", resp.StatusCode, body)
	}
	return okAt
}

// projected waits until the user's bot named name is in the registry (the controllers have
// reconciled it and its webhook) and returns its ID.
func projected(t *testing.T, owner, name string) string {
	t.Helper()
	bots := registry.New(env.RDB)
	var id string
	testkit.Eventually(t, 30*time.Second, "bot "+name+" projected", func() error {
		ids, err := bots.OwnerBots(context.Background(), owner)
		if err != nil {
			return err
		}
		for _, bid := range ids {
			b, err := bots.Get(context.Background(), bid)
			if err == nil && b.Name == name && b.Availability == "active" {
				id = bid
				return nil
			}
		}
		return fmt.Errorf("owner's bots: %v", ids)
	})
	return id
}

// fillOnOverview opens the Overview, waits for its live stream, posts a buy to hookURL as
// curl would, and returns the time from the webhook's 200 to the Overview showing the
// position and the fill. The page is never reloaded: a value set at load survives.
func fillOnOverview(t *testing.T, b *tab, hookURL string) time.Duration {
	t.Helper()
	b.open("/dashboard")
	b.until(10*time.Second, "the live stream open", `document.body.dataset.live === "open"`)
	const shown = `(function () {
		var p = document.getElementById("ov-positions"), a = document.getElementById("ov-activity");
		return !!p && p.textContent.indexOf("BTC/USDT") >= 0 && !!a && a.textContent.indexOf("filled") >= 0; })()`
	if eval[bool](b, shown) {
		t.Fatal("the Overview shows the position before the webhook")
	}
	// The observer stamps the first DOM change that shows both, with the page's clock
	// (the machine's, as the Go side's).
	eval[bool](b, fmt.Sprintf(`window.__loaded = Date.now(); window.__shownAt = 0;
		new MutationObserver(function () { if (!window.__shownAt && %s) window.__shownAt = performance.timeOrigin + performance.now(); })
			.observe(document.body, {subtree: true, childList: true, characterData: true}); true`, shown))
	loaded := eval[float64](b, `window.__loaded`)

	okAt := buy(t, hookURL)
	b.until(10*time.Second, "the fill and the position on the open Overview", `window.__shownAt > 0`)
	if got := eval[float64](b, `window.__loaded`); got != loaded {
		t.Fatalf("the Overview was reloaded (window.__loaded %v, was %v)", got, loaded)
	}
	return time.Duration(eval[float64](b, `window.__shownAt`)*float64(time.Millisecond)) - time.Duration(okAt.UnixNano())
}

// paintedPixels counts the pixels of the candle chart's canvases that differ from each
// canvas's top-left (background) pixel.
const paintedPixels = `(function () {
	var n = 0;
	document.querySelectorAll('.chart[data-chart="candles"] canvas').forEach(function (c) {
		if (!c.width || !c.height) return;
		var g = c.getContext("2d"); if (!g) return;
		var d = g.getImageData(0, 0, c.width, c.height).data;
		for (var i = 0; i < d.length; i += 4)
			if (d[i] !== d[0] || d[i+1] !== d[1] || d[i+2] !== d[2] || d[i+3] !== d[3]) n++;
	});
	return n; })()`

var botPathRe = regexp.MustCompile(`^/dashboard/bots/([^/?#]+)$`)

// runLab reviews a Strategy Lab job's cost, runs it, waits for its results and applies the
// best as a bot; it returns the job page's path and the new bot's ID (from the page it
// lands on).
func runLab(t *testing.T, b *tab) (jobPath, botID string) {
	t.Helper()
	b.open("/dashboard/lab")
	// Thirty days of hourly candles in two walk-forward folds: enough days for the
	// overfitting estimate, and the folds' table on the job's page.
	from := time.Now().UTC().Truncate(time.Hour).AddDate(0, 0, -30).Format("2006-01-02T15:04")
	b.do(chromedp.SetValue(chromedp.CSS(`#lab-experiments`), "6"), chromedp.SetValue(chromedp.CSS(`#lab-from`), from),
		chromedp.SetValue(chromedp.CSS(`#lab-folds`), "2"),
		chromedp.Click(chromedp.CSS(`form[action="/dashboard/lab/estimate"] button[type="submit"]`)))
	b.until(20*time.Second, "the cost before running", `!!document.querySelector('form[action="/dashboard/lab/jobs"] button[type="submit"]')`)
	b.do(chromedp.Click(chromedp.CSS(`form[action="/dashboard/lab/jobs"] button[type="submit"]`)))
	b.until(20*time.Second, "the job's page", `/^\/dashboard\/lab\/jobs\/[^\/]+$/.test(location.pathname)`)
	jobPath = eval[string](b, `location.pathname`)
	b.until(90*time.Second, "the job's results", `!!document.querySelector('form[action$="/apply"] button')`)
	if !eval[bool](b, `!!document.getElementById("lab-folds") && !!document.getElementById("lab-overfitting")`) {
		t.Fatal("the job's page shows no walk-forward folds or overfitting reading")
	}
	// A high overfitting estimate asks for the confirmation before applying.
	eval[bool](b, `document.querySelectorAll('input[name="confirmOverfitting"]').forEach(function (c) { c.checked = true; }) || true`)
	b.do(chromedp.Click(chromedp.CSS(`form[action$="/apply"] button`)))
	b.until(30*time.Second, "the applied bot's page", `/^\/dashboard\/bots\/[^\/]+$/.test(location.pathname)`)
	m := botPathRe.FindStringSubmatch(eval[string](b, `location.pathname`))
	if m == nil {
		t.Fatalf("after apply the browser is at %s", b.path())
	}
	return jobPath, m[1]
}

// phone checks the Overview at 390 px: no horizontal scroll of the page.
func phone(t *testing.T, b *tab) {
	t.Helper()
	b.do(chromedp.EmulateViewport(390, 844, chromedp.EmulateScale(1)))
	defer b.do(chromedp.EmulateViewport(1280, 800))
	b.open("/dashboard")
	if !eval[bool](b, `document.documentElement.scrollWidth <= window.innerWidth`) {
		t.Errorf("at 390 px the Overview scrolls sideways: scrollWidth %v > innerWidth %v",
			eval[float64](b, `document.documentElement.scrollWidth`), eval[float64](b, `window.innerWidth`))
	}
}

// theme checks that the toggle switches data-theme both ways and that the choice is kept.
func theme(t *testing.T, b *tab) {
	t.Helper()
	b.open("/dashboard")
	b.until(5*time.Second, "dashboard.js loaded", `!!window.htmx`)
	before := eval[string](b, `document.documentElement.dataset.theme || (matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light")`)
	b.do(chromedp.Click(chromedp.CSS(`[data-theme-toggle]`)))
	after := eval[string](b, `document.documentElement.dataset.theme || ""`)
	if after == before || (after != "dark" && after != "light") {
		t.Fatalf("theme toggle: %q → %q", before, after)
	}
	b.open("/dashboard")
	if kept := eval[string](b, `document.documentElement.dataset.theme || ""`); kept != after {
		t.Fatalf("theme after reload = %q, want %q kept", kept, after)
	}
	b.do(chromedp.Click(chromedp.CSS(`[data-theme-toggle]`)))
	if back := eval[string](b, `document.documentElement.dataset.theme || ""`); back != before {
		t.Fatalf("theme toggled back = %q, want %q", back, before)
	}
	// The system's scheme again for what follows.
	eval[bool](b, `localStorage.removeItem("sigops-theme"); delete document.documentElement.dataset.theme; true`)
}

// pages are the dashboard's pages the screenshots show, by file name; {bot} is the bot's
// ID, {job} the Strategy Lab job's page.
var pages = []struct{ name, path string }{
	{"overview", "/dashboard"},
	{"bots", "/dashboard/bots"},
	{"bot-detail", "/dashboard/bots/{bot}"},
	{"bot-form", "/dashboard/bots/new"},
	{"manual-trading", "/dashboard/trade"},
	{"paper-accounts", "/dashboard/accounts"},
	{"exchange-connections", "/dashboard/connections"},
	{"strategy-lab", "/dashboard/lab"},
	{"lab-job", "{job}"},
	{"settings", "/dashboard/settings"},
	{"connected-apps", "/dashboard/settings/connected-apps"},
	{"notifications", "/dashboard/settings/notifications"},
	{"approvals", "/dashboard/approvals"},
	{"audit", "/dashboard/settings/audit"},
}

// screenshots saves every page at desktop and phone width in the light theme, and the
// Overview in the dark one, when asked for.
func screenshots(t *testing.T, b *tab, dir string, ids *strings.Replacer) {
	t.Helper()
	if dir == "" {
		return
	}
	for _, size := range []struct {
		suffix string
		w, h   int64
	}{{"desktop", 1280, 800}, {"phone", 390, 844}} {
		b.do(chromedp.EmulateViewport(size.w, size.h))
		for _, p := range pages {
			b.open(ids.Replace(p.path))
			// Charts draw after their data arrives.
			b.until(20*time.Second, p.name+" charts drawn",
				`Array.prototype.every.call(document.querySelectorAll(".chart[data-chart]"), function (c) { return c.dataset.drawn === "true"; })`)
			b.shot(dir, p.name+"-"+size.suffix)
		}
	}
	b.do(chromedp.EmulateViewport(1280, 800))
	b.scheme("dark")
	b.open("/dashboard")
	b.shot(dir, "overview-dark-desktop")
	b.scheme("light")
}
