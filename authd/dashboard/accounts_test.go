package dashboard_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/authd"
	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/store"
)

// xssPayloads are the strings every user-supplied field is tried with.
var xssPayloads = []string{`<script>alert(1)</script>`, `"><img src=x onerror=alert(1)>`}

func callerOf(u auth.User) fleet.Caller { return fleet.Caller{UserID: u.ID, Email: u.Email} }

// paperAccountOf makes paper account name of u through fleet and waits until the controller
// has opened its balance; it returns the account's ID.
func (f *fixture) paperAccountOf(u auth.User, name, initial string) string {
	f.t.Helper()
	acct, err := f.apis.Fleet.CreatePaperAccount(context.Background(), callerOf(u), name, tradingv1.PaperAccountSpec{InitialBalance: initial})
	if err != nil {
		f.t.Fatal(err)
	}
	id := string(acct.UID)
	testkit.Eventually(f.t, 20*time.Second, "paper account opened", func() error {
		_, err := paper.NewAccounts(env.RDB).Get(context.Background(), id)
		return err
	})
	return id
}

// noInlineScript fails when page holds what the CSP forbids.
func noInlineScript(t *testing.T, what, page string) {
	t.Helper()
	for _, bad := range []string{"<script>", "style=", "<style", " onclick=", "javascript:"} {
		if strings.Contains(page, bad) {
			t.Fatalf("%s holds %q", what, bad)
		}
	}
}

// toolJournal is u's audit entries for tool, newest first (journal: settings_test.go).
func (f *fixture) toolJournal(u auth.User, tool string) []audit.Entry {
	f.t.Helper()
	var out []audit.Entry
	for _, e := range f.journal(u.ID) {
		if e.Tool == tool {
			if e.Channel != audit.ChannelDashboard {
				f.t.Fatalf("%s journaled on channel %q", tool, e.Channel)
			}
			out = append(out, e)
		}
	}
	return out
}

func TestAccountsPageShowsBalancesEquityAndBots(t *testing.T) {
	f := newFixture(t)
	u := f.user("free")
	ctx := context.Background()
	// A bot made through fleet opens the default account "paper" (10,000 USDT).
	bot, err := f.apis.Fleet.Create(ctx, callerOf(u), "trend-follower", tradingv1.SignalBotSpec{Symbol: "BTC/USDT"})
	if err != nil {
		t.Fatal(err)
	}
	var id string
	testkit.Eventually(t, 20*time.Second, "account and bot projected", func() error {
		accts, err := paper.NewAccounts(env.RDB).ListByOwner(ctx, u.Email)
		if err != nil || len(accts) != 1 {
			return fmt.Errorf("accounts %v, %v", accts, err)
		}
		id = accts[0].ID
		b, err := f.apis.Fleet.Get(ctx, callerOf(u), string(bot.UID))
		if err != nil || b.Account.ID != id {
			return fmt.Errorf("bot account %+v, %v", b.Account, err)
		}
		return nil
	})
	// Trades moved the free balance: 10,000 − 123.45679 = 9,876.54321. With no holding and
	// no position, equity is the balance to the last digit.
	if err := env.RDB.HSet(ctx, store.PaperAccount(id), "balance", "9876.54321").Err(); err != nil {
		t.Fatal(err)
	}
	b := f.loggedIn(u)
	resp, page := b.get("/dashboard/accounts")
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d\n%s", resp.StatusCode, page)
	}
	noInlineScript(t, "accounts page", page)
	card := between(t, page, `id="account-`+id+`"`, "</section>")
	for _, want := range []string{
		`data-live-src="/dashboard/accounts/` + id + `/card"`,
		`data-live-bots="` + string(bot.UID) + `"`,
		`<td>USDT</td><td>unified</td><td class="num">9876.54321</td><td class="num">0</td><td class="num">9876.54321</td>`,
		`<div class="label">Equity (USDT)</div><div class="value">9876.54321</div>`,
		`<div class="value">10000 USDT</div>`,
		`<a href="/dashboard/bots/` + string(bot.UID) + `">trend-follower</a>`,
		"last refill never",
		// Never refilled: a refill is allowed now.
		`<button type="submit">Refill to 10000 USDT</button>`,
	} {
		if !strings.Contains(card, want) {
			t.Fatalf("card lacks %q:\n%s", want, card)
		}
	}
	// The live refresh returns the same card alone, with the same data-live attributes.
	resp, frag := b.get("/dashboard/accounts/" + id + "/card")
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(frag, `<section class="card account" id="account-`+id+`"`) ||
		!strings.Contains(frag, `data-live-bots="`+string(bot.UID)+`"`) || strings.Contains(frag, "<html") {
		t.Fatalf("card fragment: status %d\n%s", resp.StatusCode, frag)
	}

	// Another user sees neither the account nor its card.
	other := f.loggedIn(f.user("free"))
	if _, page := other.get("/dashboard/accounts"); strings.Contains(page, id) {
		t.Fatal("another user's page lists the account")
	}
	if resp, _ := other.get("/dashboard/accounts/" + id + "/card"); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("another user's card: status %d, want 404", resp.StatusCode)
	}
}

// The clock of authd stands still at now; the account's last refill is set around it, so
// each wait is worked out by hand.
func TestRefillAndItsCooldown(t *testing.T) {
	now := time.Now().UTC().Truncate(time.Second)
	clk := testkit.NewClock(now)
	f := newFixture(t, func(o *authd.Options) { o.Now = clk.Now })
	u := f.user("free")
	ctx := context.Background()
	id := f.paperAccountOf(u, "practice", "2500")
	key := store.PaperAccount(id)
	if err := env.RDB.HSet(ctx, key, "balance", "100").Err(); err != nil {
		t.Fatal(err)
	}
	b := f.loggedIn(u)

	// Without the CSRF token: refused, nothing refilled.
	if resp, _ := b.post("/dashboard/accounts/"+id+"/refill", nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("refill without CSRF: status %d, want 403", resp.StatusCode)
	}
	// Another user's account answers like a missing one.
	other := f.loggedIn(f.user("free"))
	if resp, _ := other.submit("/dashboard/accounts/"+id+"/refill", nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("another user's refill: status %d, want 404", resp.StatusCode)
	}
	if resp, _ := b.submit("/dashboard/accounts/no-such-account/refill", nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("missing account: status %d, want 404", resp.StatusCode)
	}
	if bal, _ := env.RDB.HGet(ctx, key, "balance").Result(); bal != "100" {
		t.Fatalf("balance %s after refused refills", bal)
	}

	// The first refill is always allowed: 100 → 2,500, last refill now.
	resp, _ := b.submit("/dashboard/accounts/"+id+"/refill", nil)
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/dashboard/accounts?done=refilled" {
		t.Fatalf("refill: status %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	st, err := paper.NewAccounts(env.RDB).Get(ctx, id)
	if err != nil || st.Balance.String() != "2500" || !st.LastRefillAt.Equal(now) {
		t.Fatalf("after refill: balance %s, last %s, %v", st.Balance, st.LastRefillAt, err)
	}
	_, page := b.get("/dashboard/accounts?done=refilled")
	card := between(t, page, `id="account-`+id+`"`, "</section>")
	// now + 24 h, to the minute: "24 h".
	if !strings.Contains(page, "refilled to its initial balance") ||
		!strings.Contains(card, `<button type="submit" disabled aria-describedby="refill-`+id+`">Refill to 2500 USDT</button>`) ||
		!strings.Contains(card, "Refill available in 24 h (at "+now.Add(24*time.Hour).Format("2006-01-02 15:04:05 UTC")+").") {
		t.Fatalf("after refill:\n%s", card)
	}

	setLast := func(ago time.Duration) {
		t.Helper()
		if err := env.RDB.HSet(ctx, key, "lastRefillAt", strconv.FormatInt(now.Add(-ago).UnixMilli(), 10)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	// Last refill 18 h 48 min ago: 24 h − 18 h 48 min = 5 h 12 min to wait.
	setLast(18*time.Hour + 48*time.Minute)
	_, page = b.get("/dashboard/accounts")
	if card := between(t, page, `id="account-`+id+`"`, "</section>"); !strings.Contains(card, "Refill available in 5 h 12 min") || !strings.Contains(card, " disabled ") {
		t.Fatalf("5 h 12 min to wait:\n%s", card)
	}
	if err := env.RDB.HSet(ctx, key, "balance", "7").Err(); err != nil {
		t.Fatal(err)
	}
	// The server refuses anyway (the button is only disabled): 429 in words, balance kept.
	resp, page = b.submit("/dashboard/accounts/"+id+"/refill", nil)
	if resp.StatusCode != http.StatusTooManyRequests || !strings.Contains(page, "at most once every 24 hours") ||
		!strings.Contains(page, "(in 5 h 12 min)") || !strings.Contains(page, "RATE_LIMITED") {
		t.Fatalf("refill inside the cooldown: status %d\n%s", resp.StatusCode, page)
	}
	if bal, _ := env.RDB.HGet(ctx, key, "balance").Result(); bal != "7" {
		t.Fatalf("refused refill changed the balance to %s", bal)
	}
	// 18 h 48 min 30 s ago: 5 h 11 min 30 s left, shown rounded up to 5 h 12 min, never
	// earlier than the server allows.
	setLast(18*time.Hour + 48*time.Minute + 30*time.Second)
	if _, page = b.get("/dashboard/accounts"); !strings.Contains(page, "Refill available in 5 h 12 min") {
		t.Fatal("5 h 11 min 30 s is not shown as 5 h 12 min")
	}
	// 23 h 59 min ago: 1 min.
	setLast(23*time.Hour + 59*time.Minute)
	if _, page = b.get("/dashboard/accounts"); !strings.Contains(page, "Refill available in 1 min") {
		t.Fatal("1 min left is not shown")
	}
	// Exactly 24 h ago: allowed again.
	setLast(24 * time.Hour)
	_, page = b.get("/dashboard/accounts")
	if card := between(t, page, `id="account-`+id+`"`, "</section>"); !strings.Contains(card, `<button type="submit">Refill to 2500 USDT</button>`) {
		t.Fatalf("cooldown over:\n%s", card)
	}
	if resp, _ = b.submit("/dashboard/accounts/"+id+"/refill", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("refill after the cooldown: status %d", resp.StatusCode)
	}

	// The journal holds each attempt of u with its outcome, newest first: ok, refused, ok,
	// not found (the missing account).
	entries := f.toolJournal(u, "refill_paper_account")
	var got []string
	for _, e := range entries {
		if e.Outcome.OK {
			got = append(got, "ok")
		} else {
			got = append(got, string(e.Outcome.Code))
		}
	}
	if strings.Join(got, " ") != "ok RATE_LIMITED ok NOT_FOUND" {
		t.Fatalf("journal outcomes %v", got)
	}
	if !strings.Contains(string(entries[0].Arguments), id) {
		t.Fatalf("journal arguments %s", entries[0].Arguments)
	}
}

func TestCreatePaperAccountFromTheDashboard(t *testing.T) {
	f := newFixture(t)
	u := f.user("free")
	b := f.loggedIn(u)
	ctx := context.Background()

	if resp, _ := b.post("/dashboard/accounts", url.Values{"name": {"no-token"}, "initial_balance": {"10"}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("without CSRF: status %d, want 403", resp.StatusCode)
	}
	resp, _ := b.submit("/dashboard/accounts", url.Values{"name": {"big-one"}, "initial_balance": {"2500.5"}})
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/dashboard/accounts?done=account-created" {
		t.Fatalf("create: status %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}
	var acct tradingv1.PaperAccount
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: fleet.NamespaceFor(u.ID), Name: "big-one"}, &acct); err != nil {
		t.Fatal(err)
	}
	if acct.Spec.Owner != u.Email || acct.Spec.InitialBalance != "2500.5" || acct.Labels[fleet.LabelManagedBy] != fleet.ManagedBySigops {
		t.Fatalf("created %+v labels %v", acct.Spec, acct.Labels)
	}
	testkit.Eventually(t, 20*time.Second, "account listed", func() error {
		_, page := b.get("/dashboard/accounts")
		if !strings.Contains(page, `<h2 id="account-`+string(acct.UID)+`-name">big-one`) || !strings.Contains(page, "2500.5 USDT") {
			return fmt.Errorf("not listed yet")
		}
		return nil
	})
	if no := f.toolJournal(u, "create_paper_account"); len(no) != 1 || !no[0].Outcome.OK {
		t.Fatalf("journal %+v", no)
	}

	// The CRD's limits, in words, with the form kept.
	for _, tc := range []struct{ balance, want string }{
		{"0", "initialBalance must be above 0"},
		{"1e9", "spec.initialBalance"},
		{strings.Repeat("9", 33), "spec.initialBalance"},
	} {
		resp, page := b.submit("/dashboard/accounts", url.Values{"name": {"refused"}, "initial_balance": {tc.balance}})
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(page, html.EscapeString(tc.want)) ||
			!strings.Contains(page, `value="`+tc.balance+`"`) || !strings.Contains(page, "INVALID_PARAMETER") {
			t.Fatalf("balance %s: status %d\n%s", tc.balance, resp.StatusCode, page)
		}
	}
	// Names are the user's own text: the API server refuses these, and the page shows them
	// back escaped, in the form and in the refusal.
	for _, x := range xssPayloads {
		resp, page := b.submit("/dashboard/accounts", url.Values{"name": {x}, "initial_balance": {"10"}})
		if resp.StatusCode != http.StatusBadRequest {
			t.Fatalf("name %s: status %d", x, resp.StatusCode)
		}
		if strings.Contains(page, x) || !strings.Contains(page, html.EscapeString(x)) {
			t.Fatalf("name %s is not escaped:\n%s", x, page)
		}
		noInlineScript(t, "refused create", page)
	}
}

// between is page from the first from to the first to after it.
func between(t *testing.T, page, from, to string) string {
	t.Helper()
	i := strings.Index(page, from)
	if i < 0 {
		t.Fatalf("page lacks %q:\n%s", from, page)
	}
	j := strings.Index(page[i:], to)
	if j < 0 {
		t.Fatalf("no %q after %q", to, from)
	}
	return page[i : i+j]
}
