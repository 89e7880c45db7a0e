package dashboard_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/registry"
)

// botsPaperForm is a create form of a paper bot on the default account.
func botsPaperForm(name string) url.Values {
	return url.Values{"name": {name}, "venue": {"paper"}, "market": {"spot"}, "pair": {"fixed"}, "symbol": {"BTC/USDT"},
		"reversals": {"on"}, "webhook_enabled": {"on"}}
}

// botsCreate posts form as u's browser and returns the created bot's ID once it is
// projected.
func botsCreate(t *testing.T, b *browser, u auth.User, form url.Values) string {
	t.Helper()
	resp, page := b.submit("/dashboard/bots", form)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("create: status %d\n%s", resp.StatusCode, page)
	}
	var bot tradingv1.SignalBot
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: fleet.NamespaceFor(u.ID), Name: form.Get("name")}, &bot); err != nil {
		t.Fatal(err)
	}
	id := string(bot.UID)
	testkit.Eventually(t, 20*time.Second, "bot projected", func() error {
		_, err := registry.New(env.RDB).Get(context.Background(), id)
		return err
	})
	return id
}

func TestCreateBotThroughTheForm(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	resp, page := b.get("/dashboard/bots/new")
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `action="/dashboard/bots"`) || !strings.Contains(page, "emaCrossover") {
		t.Fatalf("new bot form: status %d\n%s", resp.StatusCode, page)
	}
	form := botsPaperForm("trend-1")
	form.Set("symbol", "eth/usdt") // upper-cased by the form
	for k, v := range map[string]string{"position_size": "0.05", "stop_loss": "2%", "take_profit": "5%", "dca_enabled": "on",
		"dca_max_levels": "3", "daily_loss_limit": "150.25", "max_consecutive_losses": "4", "max_exposure": "0.5",
		"strategy": "emaCrossover", "timeframe": "1h", "p_emaCrossover_fastPeriod": "9", "p_emaCrossover_slowPeriod": "21",
		"copyable": "on", "per_minute": "30", "dedupe_window": "30s"} {
		form.Set(k, v)
	}
	resp, page = b.submit("/dashboard/bots", form)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/dashboard/bots?done=created" {
		t.Fatalf("create: status %d to %q\n%s", resp.StatusCode, resp.Header.Get("Location"), page)
	}
	var bot tradingv1.SignalBot
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: fleet.NamespaceFor(u.ID), Name: "trend-1"}, &bot); err != nil {
		t.Fatal(err)
	}
	s := bot.Spec
	if bot.Labels[fleet.LabelManagedBy] != fleet.ManagedBySigops || s.Owner != strings.ToLower(u.Email) ||
		s.PaperAccountRef == nil || s.PaperAccountRef.Name != fleet.DefaultPaperAccount || s.ExchangeConnectionRef != nil ||
		s.Symbol != "ETH/USDT" || s.PositionSize != "0.05" || s.StopLoss != "2%" || s.TakeProfit != "5%" ||
		!s.DCA.Enabled || s.DCA.MaxLevels != 3 || s.Risk.DailyLossLimit != "150.25" || s.Risk.MaxConsecutiveLosses != 4 ||
		s.Risk.MaxExposure != "0.5" || !s.Copyable || s.RateLimit.PerMinute != 30 || s.RateLimit.Burst != 10 ||
		s.DedupeWindow.Duration != 30*time.Second || s.Reversals == nil || !*s.Reversals || s.CopyFrom != nil {
		t.Fatalf("spec %+v", s)
	}
	if st := s.Strategy; st == nil || st.Family != "emaCrossover" || st.Timeframe != "1h" || st.EMACrossover == nil ||
		st.EMACrossover.FastPeriod != 9 || st.EMACrossover.SlowPeriod != 21 || st.RSIReversion != nil {
		t.Fatalf("strategy %+v", s.Strategy)
	}
	id := string(bot.UID)
	p, err := registry.New(env.RDB).Get(context.Background(), id)
	if err != nil || p.Symbol != "ETH/USDT" || p.Account.Kind != registry.AccountPaper {
		t.Fatalf("projection %+v %v", p, err)
	}
	_, page = b.get("/dashboard/bots?done=created")
	for _, want := range []string{"Bot created.", `href="/dashboard/bots/` + id + `"`, ">trend-1<", "ETH/USDT", "sigops",
		`href="/dashboard/bots/` + id + `/edit"`, `action="/dashboard/bots/` + id + `/pause"`, `data-live-bots="` + id + `"`} {
		if !strings.Contains(page, want) {
			t.Fatalf("list lacks %q:\n%s", want, page)
		}
	}
	if e := f.journal(u.ID); len(e) != 1 || e[0].Tool != "create_bot" || !e[0].Outcome.OK || e[0].Channel != audit.ChannelDashboard ||
		!strings.Contains(string(e[0].Arguments), `"positionSize":"0.05"`) {
		t.Fatalf("journal %+v", e)
	}
	// The edit form starts from the stored spec.
	_, page = b.get("/dashboard/bots/" + id + "/edit")
	for _, want := range []string{`name="p_emaCrossover_fastPeriod" value="9"`, `name="p_emaCrossover_slowPeriod" value="21"`,
		`<option value="emaCrossover" selected>`, `<option value="1h" selected>`, `name="daily_loss_limit" value="150.25"`,
		`name="dedupe_window" value="30s"`, `name="dca_enabled" checked`, `name="copyable" checked`, `name="per_minute" value="30"`,
		`value="ETH/USDT"`, `name="max_signal_age" value="1m0s"`} {
		if !strings.Contains(page, want) {
			t.Fatalf("edit form lacks %q:\n%s", want, page)
		}
	}
	// The live refresh serves the table alone, with the same live attributes.
	resp, frag := b.get("/dashboard/bots/table")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(frag, `<div id="bots-table" data-live-src="/dashboard/bots/table" data-live-bots="`+id+`"`) ||
		strings.Contains(frag, "<html") {
		t.Fatalf("table fragment: %d\n%s", resp.StatusCode, frag)
	}
}

// macdCrossover and supertrend go through the form like the first four families: their
// fields are offered with range and default, reach their own CRD block (the multiplier as the
// decimal text typed), and the edit form shows them again.
func TestCreateMACDAndSupertrendBotsThroughTheForm(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	_, page := b.get("/dashboard/bots/new")
	for _, want := range []string{`<option value="macdCrossover">`, `<option value="supertrend">`,
		`name="p_macdCrossover_signalPeriod" value="" placeholder="9"`, `id="bf-p_macdCrossover_signalPeriod-range">2 to 100<`,
		`name="p_supertrend_multiplier" value="" placeholder="3"`, `id="bf-p_supertrend_multiplier-range">0.5 to 10<`} {
		if !strings.Contains(page, want) {
			t.Fatalf("new bot form lacks %q:\n%s", want, page)
		}
	}
	cases := []struct {
		name   string
		fields map[string]string
		check  func(st *tradingv1.StrategySpec) bool
		edit   []string
	}{
		{"macd-1", map[string]string{"strategy": "macdCrossover", "timeframe": "4h", "p_macdCrossover_fastPeriod": "8",
			"p_macdCrossover_signalPeriod": "5", "p_emaCrossover_fastPeriod": "9"},
			func(st *tradingv1.StrategySpec) bool {
				return st.Family == "macdCrossover" && st.EMACrossover == nil && st.MACDCrossover != nil &&
					*st.MACDCrossover == tradingv1.MACDCrossoverParams{FastPeriod: 8, SlowPeriod: 26, SignalPeriod: 5}
			},
			[]string{`<option value="macdCrossover" selected>`, `name="p_macdCrossover_fastPeriod" value="8"`,
				`name="p_macdCrossover_slowPeriod" value="26"`, `name="p_macdCrossover_signalPeriod" value="5"`}},
		{"supertrend-1", map[string]string{"strategy": "supertrend", "timeframe": "1h", "p_supertrend_period": "7",
			"p_supertrend_multiplier": "2.5"},
			func(st *tradingv1.StrategySpec) bool {
				return st.Family == "supertrend" && st.Supertrend != nil &&
					*st.Supertrend == tradingv1.SupertrendParams{Period: 7, Multiplier: "2.5"}
			},
			[]string{`<option value="supertrend" selected>`, `name="p_supertrend_period" value="7"`,
				`name="p_supertrend_multiplier" value="2.5"`}},
	}
	for _, c := range cases {
		form := botsPaperForm(c.name)
		for k, v := range c.fields {
			form.Set(k, v)
		}
		id := botsCreate(t, b, u, form)
		var bot tradingv1.SignalBot
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: fleet.NamespaceFor(u.ID), Name: c.name}, &bot); err != nil {
			t.Fatal(err)
		}
		if st := bot.Spec.Strategy; st == nil || !c.check(st) {
			t.Fatalf("%s: strategy %+v", c.name, st)
		}
		_, page = b.get("/dashboard/bots/" + id + "/edit")
		for _, want := range c.edit {
			if !strings.Contains(page, want) {
				t.Fatalf("%s: edit form lacks %q:\n%s", c.name, want, page)
			}
		}
	}
	// Out of range: refused by the API server, named, and the value kept.
	form := botsPaperForm("supertrend-2")
	form.Set("strategy", "supertrend")
	form.Set("timeframe", "1h")
	form.Set("p_supertrend_multiplier", "12")
	resp, page := b.submit("/dashboard/bots", form)
	if resp.StatusCode == http.StatusSeeOther || !strings.Contains(page, "multiplier must be between 0.5 and 10") ||
		!strings.Contains(page, `name="p_supertrend_multiplier" value="12"`) {
		t.Fatalf("multiplier 12: status %d\n%s", resp.StatusCode, page)
	}
}

func TestBotFormRefusalsInWordsWithValuesKept(t *testing.T) {
	f := newFixture(t)
	u := f.user("free")
	b := f.loggedIn(u)
	form := botsPaperForm("keep-me")
	form.Set("leverage", "two")
	form.Set("symbol", "")
	form.Set("stop_loss", "3%")
	resp, page := b.submit("/dashboard/bots", form)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "must be a whole number") ||
		!strings.Contains(page, "give the pair the bot trades") || !strings.Contains(page, `value="keep-me"`) ||
		!strings.Contains(page, `value="3%"`) || !strings.Contains(page, "(INVALID_PARAMETER)") {
		t.Fatalf("form refusal: status %d\n%s", resp.StatusCode, page)
	}
	// The API server's refusal (the CRD's CEL rule) is shown next to its field.
	form = botsPaperForm("keep-me")
	form.Set("position_size", "150%")
	resp, page = b.submit("/dashboard/bots", form)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "a percentage must be above 0 and at most 100") ||
		!strings.Contains(page, `value="150%"`) || !strings.Contains(page, `aria-invalid="true"`) {
		t.Fatalf("API server refusal: status %d\n%s", resp.StatusCode, page)
	}
	// The free tier cannot trade live: the form says so, and refuses a live bot.
	_, page = b.get("/dashboard/bots/new")
	if !strings.Contains(page, "Your tier (Free) does not include live trading") || !strings.Contains(page, `value="live" disabled`) {
		t.Fatalf("free tier form:\n%s", page)
	}
	form = botsPaperForm("live-one")
	form.Set("venue", "live")
	form.Set("connection", "binance")
	resp, page = b.submit("/dashboard/bots", form)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "does not include live trading") {
		t.Fatalf("live bot on free tier: status %d\n%s", resp.StatusCode, page)
	}
	var list tradingv1.SignalBotList
	if err := k8s.List(context.Background(), &list, client.InNamespace(fleet.NamespaceFor(u.ID))); err != nil || len(list.Items) != 0 {
		t.Fatalf("refused forms made bots: %d %v", len(list.Items), err)
	}
	// Every refusal is in the journal.
	if e := f.journal(u.ID); len(e) != 3 || e[0].Outcome.OK || e[0].Outcome.Code != "INVALID_PARAMETER" {
		t.Fatalf("journal %+v", e)
	}
}

func TestBotFormShowsUserInputInert(t *testing.T) {
	f := newFixture(t)
	b := f.loggedIn(f.user("pro"))
	form := botsPaperForm(xssPayloads[0])
	form.Set("symbol", xssPayloads[1])
	form.Set("position_size", xssPayloads[1])
	form.Set("copy_master", xssPayloads[0])
	form.Set("p_rsiReversion_oversold", xssPayloads[0])
	resp, page := b.submit("/dashboard/bots", form)
	if resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("status %d\n%s", resp.StatusCode, page)
	}
	for _, p := range xssPayloads {
		assertInert(t, page, p)
	}
	// The flash is ours, never the query's.
	_, page = b.get("/dashboard/bots?done=" + url.QueryEscape(xssPayloads[0]))
	if strings.Contains(page, "alert(1)") {
		t.Fatalf("done query shown:\n%s", page)
	}
}

func TestEditAndDeleteWithConfirmation(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	form := botsPaperForm("edit-me")
	form.Set("position_size", "0.01")
	form.Set("take_profit", "4%")
	id := botsCreate(t, b, u, form)

	resp, page := b.get("/dashboard/bots/" + id + "/edit")
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, `action="/dashboard/bots/`+id+`/edit"`) ||
		!strings.Contains(page, `value="0.01"`) || !strings.Contains(page, `value="4%"`) || !strings.Contains(page, `value="BTC/USDT"`) {
		t.Fatalf("edit form: status %d\n%s", resp.StatusCode, page)
	}
	// Position size emptied (back to the default), a stop-loss added, any pair.
	edit := botsPaperForm("ignored")
	edit.Set("pair", "any")
	edit.Set("stop_loss", "1.5%")
	edit.Set("take_profit", "4%")
	resp, page = b.submit("/dashboard/bots/"+id+"/edit", edit)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/dashboard/bots?done=updated" {
		t.Fatalf("edit: status %d\n%s", resp.StatusCode, page)
	}
	var bot tradingv1.SignalBot
	key := client.ObjectKey{Namespace: fleet.NamespaceFor(u.ID), Name: "edit-me"}
	if err := k8s.Get(context.Background(), key, &bot); err != nil {
		t.Fatal(err)
	}
	if s := bot.Spec; s.PositionSize != "10%" || s.StopLoss != "1.5%" || s.TakeProfit != "4%" || s.Symbol != "" || bot.Name != "edit-me" {
		t.Fatalf("edited spec %+v", s)
	}
	// An edit the API server refuses keeps the values.
	edit.Set("leverage", "5")
	resp, page = b.submit("/dashboard/bots/"+id+"/edit", edit)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, "leverage above 1 needs market futures") ||
		!strings.Contains(page, `value="1.5%"`) || !strings.Contains(page, "Edit bot edit-me") {
		t.Fatalf("refused edit: status %d\n%s", resp.StatusCode, page)
	}

	// Delete asks first, and says what it does; nothing is deleted yet.
	resp, page = b.submit("/dashboard/bots/"+id+"/delete", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "Delete bot edit-me?") || !strings.Contains(page, "It closes nothing") ||
		!strings.Contains(page, `name="confirm" value="yes"`) {
		t.Fatalf("delete confirmation: status %d\n%s", resp.StatusCode, page)
	}
	if err := k8s.Get(context.Background(), key, &bot); err != nil || bot.DeletionTimestamp != nil {
		t.Fatalf("bot deleted before the confirmation: %v", err)
	}
	resp, _ = b.submit("/dashboard/bots/"+id+"/delete", url.Values{"confirm": {"yes"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/dashboard/bots?done=deleted" {
		t.Fatalf("delete: status %d", resp.StatusCode)
	}
	testkit.Eventually(t, 20*time.Second, "bot gone", func() error {
		err := k8s.Get(context.Background(), key, &bot)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %v", err)
	})
	var tools []string
	for _, e := range f.journal(u.ID) {
		tools = append(tools, fmt.Sprintf("%s:%v", e.Tool, e.Outcome.OK))
	}
	if got := strings.Join(tools, " "); got != "delete_bot:true update_bot:false update_bot:true create_bot:true" {
		t.Fatalf("journal %s", got)
	}
}

// botsGitOps applies a bot of u's as a platform team does: no managed-by label, in a
// namespace of its own, on a paper account there.
func botsGitOps(t *testing.T, u auth.User) (string, string) {
	t.Helper()
	ctx := context.Background()
	ns := fmt.Sprintf("team-%d-%d", time.Now().UnixNano()%1e6, serial.Add(1))
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	owner := strings.ToLower(u.Email)
	if err := k8s.Create(ctx, &tradingv1.PaperAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "desk"},
		Spec: tradingv1.PaperAccountSpec{Owner: owner}}); err != nil {
		t.Fatal(err)
	}
	bot := &tradingv1.SignalBot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "platform"},
		Spec: tradingv1.SignalBotSpec{Owner: owner, PaperAccountRef: &tradingv1.LocalObjectReference{Name: "desk"}, Symbol: "ETH/USDT"}}
	if err := k8s.Create(ctx, bot); err != nil {
		t.Fatal(err)
	}
	id := string(bot.UID)
	testkit.Eventually(t, 20*time.Second, "GitOps bot projected active", func() error {
		p, err := registry.New(env.RDB).Get(ctx, id)
		if err == nil && p.Availability != "active" {
			return fmt.Errorf("availability %s %s", p.Availability, p.DisabledReason)
		}
		return err
	})
	return id, ns
}

func TestGitOpsBotIsReadOnlyButPausesAndResumes(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	id, ns := botsGitOps(t, u)

	_, page := b.get("/dashboard/bots")
	if !strings.Contains(page, "GitOps") || strings.Contains(page, "/dashboard/bots/"+id+"/edit") ||
		strings.Contains(page, "/dashboard/bots/"+id+"/delete") || !strings.Contains(page, "/dashboard/bots/"+id+"/pause") {
		t.Fatalf("list of a GitOps bot:\n%s", page)
	}
	resp, page := b.get("/dashboard/bots/" + id + "/edit")
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "managed by your platform team") ||
		!strings.Contains(page, "(MANAGED_BY_GITOPS)") || !strings.Contains(page, `<fieldset class="plain" disabled>`) ||
		strings.Contains(page, "Save changes") || !strings.Contains(page, `value="ETH/USDT"`) {
		t.Fatalf("GitOps edit page: status %d\n%s", resp.StatusCode, page)
	}
	form := botsPaperForm("platform")
	resp, page = b.submit("/dashboard/bots/"+id+"/edit", form)
	if resp.StatusCode != http.StatusConflict || !strings.Contains(page, "(MANAGED_BY_GITOPS)") {
		t.Fatalf("GitOps edit: status %d\n%s", resp.StatusCode, page)
	}
	for _, confirm := range []string{"", "yes"} {
		resp, page = b.submit("/dashboard/bots/"+id+"/delete", url.Values{"confirm": {confirm}})
		if resp.StatusCode != http.StatusConflict || !strings.Contains(page, "change it there") {
			t.Fatalf("GitOps delete (confirm %q): status %d\n%s", confirm, resp.StatusCode, page)
		}
	}
	var bot tradingv1.SignalBot
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "platform"}, &bot); err != nil ||
		bot.DeletionTimestamp != nil || bot.Spec.Symbol != "ETH/USDT" {
		t.Fatalf("GitOps bot touched: %v %+v", err, bot.Spec)
	}

	reg := registry.New(env.RDB)
	resp, _ = b.submit("/dashboard/bots/"+id+"/pause", url.Values{"next": {"/dashboard/bots/" + id + "?tab=signals"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/dashboard/bots/"+id+"?done=paused&tab=signals" {
		t.Fatalf("pause: status %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if p, err := reg.ReadPause(context.Background(), id, time.Now()); err != nil || p == nil || p.Reason != registry.PauseManual {
		t.Fatalf("pause after pause: %+v %v", p, err)
	}
	_, page = b.get("/dashboard/bots")
	if !strings.Contains(page, `<span class="badge paused">paused</span> <span class="muted">(Manual)</span>`) ||
		!strings.Contains(page, "/dashboard/bots/"+id+"/resume") {
		t.Fatalf("list of the paused bot:\n%s", page)
	}
	resp, _ = b.submit("/dashboard/bots/"+id+"/resume", nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/dashboard/bots?done=resumed" {
		t.Fatalf("resume: status %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	if p, err := reg.ReadPause(context.Background(), id, time.Now()); err != nil || p != nil {
		t.Fatalf("pause after resume: %+v %v", p, err)
	}
	var tools []string
	for _, e := range f.journal(u.ID) {
		tools = append(tools, fmt.Sprintf("%s:%s", e.Tool, e.Outcome.Code))
	}
	if got := strings.Join(tools, " "); got != "resume_bot: pause_bot: delete_bot:MANAGED_BY_GITOPS update_bot:MANAGED_BY_GITOPS" {
		t.Fatalf("journal %s", got)
	}
}

// The next path of a pause goes back into the dashboard only.
func TestPauseNextStaysInTheDashboard(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	id := botsCreate(t, b, u, botsPaperForm("next-bot"))
	for next, want := range map[string]string{
		"/dashboard":                       "/dashboard?done=paused",
		"/dashboard/trade?bot=" + id:       "/dashboard/trade?bot=" + id + "&done=paused",
		"//evil.example/dashboard":         "/dashboard/bots?done=paused",
		"https://evil.example/dashboard":   "/dashboard/bots?done=paused",
		"/dashboard/../login":              "/dashboard/bots?done=paused",
		"/dashboardx":                      "/dashboard/bots?done=paused",
		"/\\evil.example":                  "/dashboard/bots?done=paused",
		"/dashboard\\..\\..\\evil.example": "/dashboard/bots?done=paused",
		"":                                 "/dashboard/bots?done=paused",
	} {
		resp, _ := b.submit("/dashboard/bots/"+id+"/pause", url.Values{"next": {next}})
		if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != want {
			t.Fatalf("next %q: status %d to %q, want %q", next, resp.StatusCode, resp.Header.Get("Location"), want)
		}
	}
	// htmx navigates with HX-Redirect instead.
	req, _ := http.NewRequest(http.MethodPost, b.url("/dashboard/bots/"+id+"/resume"), strings.NewReader(url.Values{"next": {"/dashboard"}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("HX-Request", "true")
	req.Header.Set("X-CSRF-Token", b.csrf)
	if resp, _ := b.do(req); resp.StatusCode != http.StatusNoContent || resp.Header.Get("HX-Redirect") != "/dashboard?done=resumed" {
		t.Fatalf("htmx resume: status %d, HX-Redirect %q", resp.StatusCode, resp.Header.Get("HX-Redirect"))
	}
}

// Another user's bot answers 404 on every route, exactly like a missing one, and changes
// nothing; a form without the CSRF token is refused before anything is read.
func TestAnotherUsersBotIsNotFound(t *testing.T) {
	f := newFixture(t)
	owner, other := f.user("pro"), f.user("pro")
	ob := f.loggedIn(owner)
	id := botsCreate(t, ob, owner, botsPaperForm("not-yours"))
	b := f.loggedIn(other)
	missing := "00000000-0000-4000-8000-000000000000"
	for _, bot := range []string{id, missing} {
		for _, c := range []struct {
			method, path string
			form         url.Values
		}{
			{http.MethodGet, "/dashboard/bots/" + bot + "/edit", nil},
			{http.MethodPost, "/dashboard/bots/" + bot + "/edit", botsPaperForm("not-yours")},
			{http.MethodPost, "/dashboard/bots/" + bot + "/delete", nil},
			{http.MethodPost, "/dashboard/bots/" + bot + "/delete", url.Values{"confirm": {"yes"}}},
			{http.MethodPost, "/dashboard/bots/" + bot + "/pause", nil},
			{http.MethodPost, "/dashboard/bots/" + bot + "/resume", nil},
			{http.MethodGet, "/dashboard/trade?bot=" + bot, nil},
			{http.MethodPost, "/dashboard/trade/order", url.Values{"bot": {bot}, "side": {"buy"}, "type": {"market"}, "amount": {"0.01"}, "key": {"k-1"}}},
			{http.MethodPost, "/dashboard/trade/close", url.Values{"bot": {bot}, "symbol": {"BTC/USDT"}, "key": {"k-2"}}},
			{http.MethodPost, "/dashboard/trade/close-all", url.Values{"bot": {bot}, "key": {"k-3"}}},
		} {
			var resp *http.Response
			var page string
			if c.method == http.MethodGet {
				resp, page = b.get(c.path)
			} else {
				resp, page = b.submit(c.path, c.form)
			}
			if resp.StatusCode != http.StatusNotFound || !strings.Contains(page, "Not found: it does not exist or is not yours.") {
				t.Fatalf("%s %s: status %d\n%s", c.method, c.path, resp.StatusCode, page)
			}
			if c.method == http.MethodPost {
				bare := url.Values{}
				for k, v := range c.form {
					if k != "csrf_token" {
						bare[k] = v
					}
				}
				if resp, _ := b.post(c.path, bare); resp.StatusCode != http.StatusForbidden {
					t.Fatalf("%s without CSRF: status %d", c.path, resp.StatusCode)
				}
			}
		}
	}
	if _, page := b.get("/dashboard/bots"); strings.Contains(page, id) {
		t.Fatal("another user's bot listed")
	}
	if p, err := registry.New(env.RDB).ReadPause(context.Background(), id, time.Now()); err != nil || p != nil {
		t.Fatalf("another user paused the bot: %+v %v", p, err)
	}
	var bot tradingv1.SignalBot
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: fleet.NamespaceFor(owner.ID), Name: "not-yours"}, &bot); err != nil || bot.DeletionTimestamp != nil {
		t.Fatalf("another user deleted the bot: %v", err)
	}
}

func TestBotPagesWithoutFleet(t *testing.T) {
	f := newFixture(t, withoutFleet)
	b := f.loggedIn(f.user("pro"))
	resp, page := b.get("/dashboard/bots")
	if resp.StatusCode != http.StatusOK || !strings.Contains(page, "Bot management is not configured on this server") ||
		strings.Contains(page, "/dashboard/bots/new") {
		t.Fatalf("bots without fleet: status %d\n%s", resp.StatusCode, page)
	}
	for _, path := range []string{"/dashboard/bots/new"} {
		if resp, page := b.get(path); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(page, "not configured") {
			t.Fatalf("%s: status %d\n%s", path, resp.StatusCode, page)
		}
	}
	for _, path := range []string{"/dashboard/bots", "/dashboard/bots/x/pause", "/dashboard/bots/x/edit", "/dashboard/bots/x/delete"} {
		if resp, page := b.submit(path, botsPaperForm("x")); resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(page, "not configured") {
			t.Fatalf("%s: status %d\n%s", path, resp.StatusCode, page)
		}
	}
}

// The Bots and Manual trading pages hold nothing the CSP forbids: no inline script, style
// or handler.
func TestBotAndTradePagesKeepToTheCSP(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	id := botsCreate(t, b, u, botsPaperForm("csp"))
	for _, path := range []string{"/dashboard/bots", "/dashboard/bots/new", "/dashboard/bots/" + id + "/edit",
		"/dashboard/trade", "/dashboard/trade?bot=" + id, "/dashboard/bots/table", "/dashboard/trade/panel?bot=" + id} {
		resp, page := b.get(path)
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Security-Policy") == "" {
			t.Fatalf("%s: status %d", path, resp.StatusCode)
		}
		noInlineScript(t, path, page)
	}
	resp, page := b.submit("/dashboard/bots/"+id+"/delete", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("delete confirmation: %d", resp.StatusCode)
	}
	noInlineScript(t, "delete confirmation", page)
}
