package browser_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/approval"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
)

// The orders a connected app's policy holds reach the user's open page live (the header's
// badge, without a reload); on the Approvals page an approved one is queued under its
// signal ID and executes once, however often it is approved, and a rejected or expired one
// never executes.
func TestApprovalInTheBrowser(t *testing.T) {
	ctx := context.Background()
	u, err := users.Create(ctx, auth.NewUser{Email: "approvals@example.io", Name: "Approving Trader", Password: password, Tier: auth.TierPro})
	if err != nil {
		t.Fatal(err)
	}
	const botName = "approvals-btc"
	botID, _ := paperBot(t, u, botName)
	approvals := approval.New(env.RDB, apppolicy.NewPolicies(env.RDB, nil), nil)

	b := newTab(t)
	login(t, b, u)
	b.open("/dashboard")
	b.until(10*time.Second, "the live stream open", `document.body.dataset.live === "open"`)
	if badge := eval[string](b, `document.getElementById("approvals-badge").textContent.trim()`); badge != "" {
		t.Fatalf("the badge shows %q before any order is held", badge)
	}
	eval[bool](b, `window.__loaded = Date.now(); true`)
	loaded := eval[float64](b, `window.__loaded`)

	// The third expires while the first two are decided, which take longer than its life;
	// its life is still long enough for the page to list all three first.
	const amount = "0.001"
	approve := heldOrder(t, u, botID, botName, amount, 5*time.Minute)
	// The default policy re-admits the approved order only under its per-order cap: a
	// simulated price that drifted past it would fail the approval, not the test's subject.
	if approve.Notional.GreaterThan(apppolicy.DefaultOrderNotional) {
		t.Fatalf("%s BTC is %s USDT, above the default cap of %s: the amount no longer fits the simulated price",
			amount, approve.Notional, apppolicy.DefaultOrderNotional)
	}
	reject := heldOrder(t, u, botID, botName, amount, 5*time.Minute)
	expire := heldOrder(t, u, botID, botName, amount, 5*time.Second)

	b.until(5*time.Second, "the badge counting three orders on the open page",
		`document.getElementById("approvals-badge").textContent.trim() === "3 waiting for your approval"`)
	if got := eval[float64](b, `window.__loaded`); got != loaded {
		t.Fatalf("the page was reloaded (window.__loaded %v, was %v)", got, loaded)
	}

	b.open("/dashboard/approvals")
	type article struct{ ID, Text string }
	articles := func() []article {
		return eval[[]article](b, `Array.prototype.map.call(document.querySelectorAll("#approvals-list article.approval"),
			function (a) { return {ID: a.id, Text: a.textContent}; })`)
	}
	listed := articles()
	if len(listed) != 3 {
		t.Fatalf("the Approvals page lists %d orders, want 3: %+v", len(listed), listed)
	}
	// Held within the same millisecond, their order on the page is not the test's to check.
	shown := map[string]string{}
	for _, a := range listed {
		shown[a.ID] = a.Text
	}
	for _, a := range []approval.Approval{approve, reject, expire} {
		text, ok := shown["approval-"+a.SignalID]
		if !ok {
			t.Fatalf("the Approvals page does not list %s: %+v", a.SignalID, listed)
		}
		if !strings.Contains(text, "Desk agent on "+botName) || !strings.Contains(text, a.Legs[0].Amount.String()) {
			t.Errorf("%s does not show the app, the bot and the amount %s: %q", a.SignalID, a.Legs[0].Amount, text)
		}
	}

	// Approve: queued under its own signal ID, executed by the executor.
	b.clickLive(fmt.Sprintf(`form[action="/dashboard/approvals/%s/approve"] button`, approve.SignalID))
	b.until(10*time.Second, "the approval's flash",
		`location.search === "?done=approved" && document.getElementById("flash").textContent.indexOf("Approved") >= 0`)
	if eval[bool](b, fmt.Sprintf(`!!document.getElementById("approval-%s")`, approve.SignalID)) {
		t.Error("the approved order is still listed")
	}
	testkit.Eventually(t, 20*time.Second, "the approved order's result", func() error {
		r, err := queue.GetResult(ctx, env.RDB, approve.SignalID)
		switch {
		case err != nil:
			return err
		case !r.Found:
			return errNotYet
		case !r.Result.Success:
			t.Fatalf("the approved order failed: %+v", r.Result)
		}
		return nil
	})
	if a, err := approvals.Get(ctx, u.ID, approve.SignalID); err != nil || a.State != approval.Approved {
		t.Fatalf("the approved order is %q (%v), want %q", a.State, err, approval.Approved)
	}
	want := decimal.RequireFromString(amount)
	size := func() decimal.Decimal {
		t.Helper()
		pos, err := position.NewBook(env.RDB).Get(ctx, botID, "BTC/USDT")
		if err != nil {
			t.Fatal(err)
		}
		if pos == nil {
			return decimal.Zero
		}
		return pos.Size.Decimal
	}
	if got := size(); !got.Equal(want) {
		t.Fatalf("after the approval the bot holds %s BTC, want %s", got, want)
	}

	// Approved again, as a second click or a replayed form would: answered as approved,
	// and nothing queued again.
	type answer struct {
		Status int
		URL    string
	}
	again := eval[answer](b, fmt.Sprintf(`fetch("/dashboard/approvals/%s/approve", {method: "POST",
		headers: {"Content-Type": "application/x-www-form-urlencoded"},
		body: "csrf_token=" + encodeURIComponent(document.querySelector('meta[name="csrf-token"]').content)})
		.then(function (r) { return {Status: r.status, URL: r.url}; })`, approve.SignalID))
	if again.Status != 200 || trimBase(again.URL) != "/dashboard/approvals?done=approved" {
		t.Errorf("approving again answered %d at %s, want the Approvals page's approved flash", again.Status, again.URL)
	}

	// Reject, through its button.
	b.clickLive(fmt.Sprintf(`form[action="/dashboard/approvals/%s/reject"] button`, reject.SignalID))
	b.until(10*time.Second, "the rejection's flash",
		`location.search === "?done=rejected" && document.getElementById("flash").textContent.indexOf("Rejected") >= 0`)
	if a, err := approvals.Get(ctx, u.ID, reject.SignalID); err != nil || a.State != approval.Rejected {
		t.Fatalf("the rejected order is %q (%v), want %q", a.State, err, approval.Rejected)
	}

	// Time for a second execution of the approved order, or any of the rejected one, to
	// have happened: the executor placed the first within a second.
	time.Sleep(2 * time.Second)
	if got := size(); !got.Equal(want) {
		t.Errorf("after approving again the bot holds %s BTC, want %s: the order executed twice", got, want)
	}
	noResult(t, reject.SignalID, "the rejected order")

	// Expired: gone from the page and the badge, and approving it is refused as expired.
	if wait := time.Until(time.UnixMilli(expire.ExpiresAt)); wait > 0 {
		time.Sleep(wait + 100*time.Millisecond)
	}
	b.open("/dashboard/approvals")
	if listed := articles(); len(listed) != 0 {
		t.Errorf("after the expiry the Approvals page lists %+v, want none", listed)
	}
	if badge := eval[string](b, `document.getElementById("approvals-badge").textContent.trim()`); badge != "" {
		t.Errorf("after the expiry the badge shows %q, want none", badge)
	}
	_, err = approvals.Approve(ctx, u.ID, expire.SignalID)
	if e, ok := errs.As(err); !ok || e.Details["state"] != approval.Expired {
		t.Errorf("approving the expired order: %v, want a refusal naming state %q", err, approval.Expired)
	}
	noResult(t, expire.SignalID, "the expired order")
}

// heldOrder holds a market buy of amount for u's bot, as mcpd's place_order does for a
// connected app ("Desk agent") whose policy asks for the user's approval: drafted and sized
// by the executor's own preview, stored with its envelope until the user decides or it
// expires after expires.
func heldOrder(t *testing.T, u auth.User, botID, botName string, amount string, expires time.Duration) approval.Approval {
	t.Helper()
	ctx := context.Background()
	amt := decimal.RequireFromString(amount)
	draft, err := apis.Trading.Draft(ctx, botID, order.Request{Type: exchange.Market, Side: exchange.SideBuy, Symbol: "BTC/USDT", Amount: httpapi.NumOrNil(&amt)})
	if err != nil {
		t.Fatal(err)
	}
	pv, err := apis.Previews.Preview(ctx, draft)
	if err != nil {
		t.Fatal(err)
	}
	if pv.Refusal != nil || len(pv.Legs) != 1 {
		t.Fatalf("the executor's preview of a buy of %s BTC: refusal %v, legs %+v", amount, pv.Refusal, pv.Legs)
	}
	draft.Admitted = pv.Admitted()
	now := time.Now()
	call := apppolicy.Call{UserID: u.ID, ClientID: "desk-agent", BotID: botID, Live: true, Order: true, Notional: httpapi.Num(pv.EntryNotional())}
	a, err := approval.New(env.RDB, apppolicy.NewPolicies(env.RDB, nil), nil).Create(ctx, approval.Approval{
		SignalID: draft.SignalID, UserID: u.ID, ClientID: "desk-agent", ClientName: "Desk agent", BotID: botID, BotName: botName,
		Tool: "place_order", Legs: pv.Legs, Notional: httpapi.Num(pv.EntryNotional()), Reason: "the app's policy asks the user to approve every live entry",
		Envelope: draft, Call: call, CreatedAt: now.UnixMilli(), ExpiresAt: now.Add(expires).UnixMilli()}, "")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// noResult fails the test if signalID has a result: the order executed, or was tried.
func noResult(t *testing.T, signalID, what string) {
	t.Helper()
	r, err := queue.GetResult(context.Background(), env.RDB, signalID)
	if err != nil {
		t.Fatal(err)
	}
	if r.Found {
		t.Errorf("%s has a result, want none (never executed): %+v", what, r.Result)
	}
}
