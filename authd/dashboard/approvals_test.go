package dashboard_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/approval"
	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
)

// heldOrder stores an order of u's app "agent" on bot held for u's approval, as mcpd does.
func heldOrder(t *testing.T, u string, bot registry.Bot, amount string) approval.Approval {
	t.Helper()
	now := time.Now()
	held := queue.Envelope{SignalID: queue.SignalIDFor(bot.ID, "m-"+uuid.NewString()), BotID: bot.ID, Priority: queue.PriorityStrategyEntry,
		Source: queue.SourceManual, Signal: json.RawMessage(`{"type":"market","side":"buy","symbol":"BTC/USDT","amount":` + amount + `}`),
		Admitted: map[string]httpapi.Number{"": httpapi.Num(testkit.D(amount))}}
	a := approval.Approval{SignalID: held.SignalID, UserID: u, ClientID: "agent", ClientName: "Desk agent", BotID: bot.ID, BotName: bot.Name,
		Tool: "place_order", Notional: httpapi.Num(testkit.D(amount).Mul(testkit.D("50000"))), Reason: "the app's policy asks the user to approve every live entry",
		Legs: []executor.PreviewLeg{{Op: "open", Symbol: "BTC/USDT", Side: "buy", Type: "market", Amount: httpapi.Num(testkit.D(amount)),
			ReferencePrice: httpapi.Num(testkit.D("50000")), Notional: httpapi.Num(testkit.D(amount).Mul(testkit.D("50000"))), Fee: httpapi.Num(testkit.D("0.1")), Margin: httpapi.Num(testkit.D("100"))}},
		Envelope: held, Call: apppolicy.Call{UserID: u, ClientID: "agent", BotID: bot.ID, Live: true, Order: true, Notional: httpapi.Num(testkit.D("100"))},
		CreatedAt: now.UnixMilli(), ExpiresAt: now.Add(approval.DefaultTTL).UnixMilli()}
	a, err := approval.New(env.RDB, apppolicy.NewPolicies(env.RDB, nil), nil).Create(context.Background(), a, "")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// The Approvals page lists what a held order would place and who asked; the header's badge
// counts them; Approve queues it once under its signal ID, Reject never does, both need
// the CSRF token and are journaled.
func TestApprovalsPage(t *testing.T) {
	f := newFixture(t)
	u := f.user("pro")
	b := f.loggedIn(u)
	bot := registry.Bot{ID: "appr-" + u.ID, Namespace: "ns", Name: "live-" + u.ID[:6], Owner: strings.ToLower(u.Email),
		Account: registry.Account{Kind: registry.AccountExchange, Name: "binance"}}
	if err := registry.New(env.RDB).Project(context.Background(), bot, "hash-"+bot.ID); err != nil {
		t.Fatal(err)
	}
	_, page := b.get("/dashboard")
	if strings.Contains(page, "waiting for your approval") {
		t.Fatal("a badge with nothing waiting")
	}
	one := heldOrder(t, u.ID, bot, "0.002")
	two := heldOrder(t, u.ID, bot, "0.001")
	_, page = b.get("/dashboard")
	if !strings.Contains(page, `2<span class="sr-only"> waiting for your approval`) {
		t.Fatalf("the header's badge:\n%s", page)
	}
	_, page = b.get("/dashboard/approvals")
	for _, want := range []string{"Desk agent on " + bot.Name, "place_order", "0.002", "50000", "100", "every live entry",
		`action="/dashboard/approvals/` + one.SignalID + `/approve"`} {
		if !strings.Contains(page, want) {
			t.Fatalf("approvals page lacks %q:\n%s", want, page)
		}
	}
	// Without the CSRF token nothing is decided.
	if resp, _ := b.post("/dashboard/approvals/"+one.SignalID+"/approve", nil); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("approve without CSRF: %d", resp.StatusCode)
	}
	if resp, _ := b.submit("/dashboard/approvals/"+one.SignalID+"/approve", nil); resp.StatusCode != http.StatusSeeOther ||
		resp.Header.Get("Location") != "/dashboard/approvals?done=approved" {
		t.Fatalf("approve: %d %s", resp.StatusCode, resp.Header.Get("Location"))
	}
	if resp, _ := b.submit("/dashboard/approvals/"+two.SignalID+"/reject", nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("reject: %d", resp.StatusCode)
	}
	msgs, err := env.RDB.XRange(context.Background(), queue.StreamOf(bot.ID, queue.PriorityStrategyEntry), "-", "+").Result()
	if err != nil || len(msgs) != 1 || !strings.Contains(msgs[0].Values[queue.EnvelopeField].(string), one.SignalID) {
		t.Fatalf("queued %v %v", msgs, err)
	}
	// Decided: approving again is refused for the rejected one, and the list is empty.
	if resp, _ := b.submit("/dashboard/approvals/"+two.SignalID+"/approve", nil); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("approving a rejected order: %d", resp.StatusCode)
	}
	if _, page = b.get("/dashboard/approvals/list"); !strings.Contains(page, "No order is waiting") {
		t.Fatalf("list after the decisions:\n%s", page)
	}
	if _, badge := b.get("/dashboard/approvals/badge"); strings.Contains(badge, "waiting") {
		t.Fatalf("badge after the decisions: %s", badge)
	}
	entries, _, err := audit.New(env.RDB, audit.Options{}).List(context.Background(), u.ID, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	var tools []string
	for _, e := range entries {
		tools = append(tools, e.Tool)
	}
	if got := strings.Join(tools, " "); !strings.Contains(got, "approve_order") || !strings.Contains(got, "reject_order") {
		t.Fatalf("journal %s", got)
	}
}
