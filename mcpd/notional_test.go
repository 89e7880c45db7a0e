package mcpd_test

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/mcpd"
	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/approval"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// standIn opens every exchange bot on the paper account acct-x: the exchange, which tests
// cannot reach, replaced by a venue that sizes alike (a balance, prices, a fee rate).
type standIn struct{ paper *executor.Paper }

func (v standIn) Open(ctx context.Context, bot registry.Bot) (executor.Account, error) {
	bot.Account = registry.Account{Kind: registry.AccountPaper, Name: "stand-in", ID: "acct-x"}
	return v.paper.Open(ctx, bot)
}

// notionalFixture is mcpd whose previews size ada's exchange bot bot-x (spot BTC/USDT at
// 50,000, 10,000 USDT free, fee 0.1 %) and paper bot bot-p, with a live app's and a
// read-only app's clients and her own bearer JWT's.
type notionalFixture struct {
	*fixture
	ada             auth.User
	live, read, own *client.Client
	policies        *apppolicy.Policies
	ts              *httptest.Server
}

func newNotionalFixture(t *testing.T) *notionalFixture {
	t.Helper()
	f := &notionalFixture{fixture: newFixture(t)}
	market := prices{"BTC/USDT": testkit.D("50000")}
	quiet := slog.New(slog.DiscardHandler)
	venues := &executor.Paper{Redis: f.rdb, Prices: market, Live: standIn{&executor.Paper{Redis: f.rdb, Prices: market}}}
	ts := f.serve(t, func(o *mcpd.Options) {
		o.Previews = executor.New(executor.Deps{Redis: f.rdb, Prices: market, Venues: venues, Logger: quiet, Now: f.clk.Now})
		o.RateLimit = 1000
	})
	f.ts = ts
	f.ada = f.user(t, "ada@example.com", auth.TierPro)
	f.policies = apppolicy.NewPolicies(f.rdb, f.clk.Now)
	for _, id := range []string{"acct-x", "acct-p"} {
		if _, err := paper.NewAccounts(f.rdb).Ensure(t.Context(), paper.Config{ID: id, Owner: "ada@example.com", Currency: "USDT",
			InitialBalance: testkit.D("10000"), FeeRate: testkit.D("0.001")}); err != nil {
			t.Fatal(err)
		}
	}
	reg := registry.New(f.rdb)
	for _, b := range []registry.Bot{
		{ID: "bot-x", Account: registry.Account{Kind: registry.AccountExchange, Name: "binance", ID: "xc-1"}},
		{ID: "bot-p", Account: registry.Account{Kind: registry.AccountPaper, Name: "main", ID: "acct-p"}},
	} {
		b.Namespace, b.Name, b.Owner, b.Market, b.PositionSize, b.Leverage, b.Availability, b.WebhookEnabled =
			"trading", b.ID, "ada@example.com", "spot", "10%", 1, "active", true
		b.RateLimit = registry.Limit{PerMinute: 600, Burst: 100}
		if err := reg.Project(t.Context(), b, "hash-"+b.ID); err != nil {
			t.Fatal(err)
		}
	}
	liveTok, _ := f.oauthToken(t, f.ada, "agent", auth.ScopeLive, testResource)
	readTok, _ := f.oauthToken(t, f.ada, "reader", auth.ScopeRead, testResource)
	f.live, _ = mcpClient(t, liveTok.Token, "", ts)
	f.read, _ = mcpClient(t, readTok.Token, "", ts)
	f.own, _ = mcpClient(t, f.fixture.bearer(t, f.ada).Token, "", ts)
	return f
}

// entry is a limit buy of amount BTC at price on bot-x.
func entry(amount, price, key string) map[string]any {
	return map[string]any{"botId": "bot-x", "action": "buy", "symbol": "BTCUSDT", "size": amount, "price": price, "idempotencyKey": key}
}

// An app's live entries are sized by the executor's own code and admitted against its
// per-order and per-day notional caps exactly at the boundary, under 20 concurrent calls;
// each is queued with the amount admitted; exits pass; the account's own token is not an
// app.
func TestNotionalCapsOnLiveEntries(t *testing.T) {
	f := newNotionalFixture(t)
	// The default caps, 100 USDT an order and 500 a day, with no approval asked for (an app's
	// held entries are TestApprovals'). 0.002 BTC at 50,000.01 is 100.00002.
	noApproval := apppolicy.DefaultPolicy()
	noApproval.Approve = false
	if err := f.policies.Set(t.Context(), f.ada.ID, "agent", noApproval); err != nil {
		t.Fatal(err)
	}
	text := toolErr(t, f.live, "send_signal", entry("0.002", "50000.01", "over"))
	for _, want := range []string{`"code":"POLICY_LIMIT"`, `"limit":"orderNotional"`, `"value":"100"`, `"used":"100.00002"`} {
		if !strings.Contains(text, want) {
			t.Fatalf("an order of 100.00002 USDT: %s lacks %s", text, want)
		}
	}
	// 20 entries of exactly 100 at once: 5 fill the day to 500.
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted, refused := 0, 0
	for i := range 20 {
		wg.Go(func() {
			res, text := toolResult(t, f.live, "send_signal", entry("0.002", "50000", "k-"+string(rune('a'+i))))
			mu.Lock()
			defer mu.Unlock()
			switch {
			case !res.IsError:
				admitted++
			case strings.Contains(text, `"limit":"dayNotional"`) && strings.Contains(text, `"value":"500"`) &&
				strings.Contains(text, `"resetsAt":"2026-11-25T00:00:00Z"`):
				refused++
			default:
				t.Errorf("entry %d: %s", i, text)
			}
		})
	}
	wg.Wait()
	if admitted != 5 || refused != 15 {
		t.Fatalf("%d admitted and %d refused, want 5 and 15", admitted, refused)
	}
	if got, _ := f.policies.DayCommitted(t.Context(), f.ada.ID, "agent"); !got.Equal(testkit.D("500")) {
		t.Fatalf("committed %s, want 500", got)
	}
	// What was queued carries the amount admitted.
	msgs, err := f.rdb.XRange(t.Context(), queue.StreamOf("bot-x", queue.PriorityWebhook), "-", "+").Result()
	if err != nil || len(msgs) != 5 {
		t.Fatalf("%d queued (%v), want 5", len(msgs), err)
	}
	for _, m := range msgs {
		var env queue.Envelope
		if err := json.Unmarshal([]byte(m.Values[queue.EnvelopeField].(string)), &env); err != nil {
			t.Fatal(err)
		}
		if a, ok := env.Admitted[""]; !ok || !a.Equal(testkit.D("0.002")) {
			t.Fatalf("queued with admitted %v", env.Admitted)
		}
	}
	// Exits pass the caps; the user's own token is not limited by an app's.
	type answer struct{ Message string }
	if a := toolOK[answer](t, f.live, "send_signal", map[string]any{"botId": "bot-x", "action": "close", "symbol": "BTCUSDT"}); a.Message != "Signal queued" {
		t.Fatalf("exit at the cap: %+v", a)
	}
	if a := toolOK[answer](t, f.own, "send_signal", entry("0.01", "50000", "own")); a.Message != "Signal queued" {
		t.Fatalf("the account's own order: %+v", a)
	}
	// A lower cap set in Connected apps applies to the next call.
	p := noApproval
	p.DayNotional = httpapi.Num(testkit.D("0"))
	p.OrderNotional = httpapi.Num(testkit.D("50"))
	if err := f.policies.Set(t.Context(), f.ada.ID, "agent", p); err != nil {
		t.Fatal(err)
	}
	if text := toolErr(t, f.live, "send_signal", entry("0.001", "50000.01", "p1")); !strings.Contains(text, `"limit":"orderNotional"`) {
		t.Fatalf("50.00001 under a 50 cap: %s", text)
	}
	if a := toolOK[answer](t, f.live, "send_signal", entry("0.001", "50000", "p2")); a.Message != "Signal queued" {
		t.Fatalf("50 under a 50 cap and no day cap: %+v", a)
	}
}

// dryRun is a dry run's answer.
type dryRun struct {
	DryRun, WouldExecute bool
	Legs                 []struct {
		Op, Symbol, Side                              string
		Amount, ReferencePrice, Notional, Fee, Margin json.Number
	}
	Checks []struct {
		Name   string
		Passed bool
		Code   string
	}
	Policy struct {
		Passed         bool
		Code, Approval string
		Details        map[string]any
	}
}

// A dry run answers the sized order, the executor's checks and the app's policy with
// mcp:read, and changes nothing in Redis that a plain read does not (the request's rate
// limit count), byte for byte.
func TestDryRunsChangeNothing(t *testing.T) {
	f := newNotionalFixture(t)
	snap := func() map[string]string {
		s, err := storetest.Snapshot(t.Context(), f.rdb)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	// A rate-limit key that leaves between two snapshots has expired (its count ran out):
	// no call removes one, so its leaving is not a change a call made.
	changed := func(a, b map[string]string) []string {
		var out []string
		for _, k := range storetest.Changed(a, b) {
			if _, still := b[k]; still || !strings.HasPrefix(k, "sigops:ratelimit:") {
				out = append(out, k)
			}
		}
		return out
	}
	s0 := snap()
	toolOK[map[string]any](t, f.read, "list_bots", nil)
	s1 := snap()
	byRead := changed(s0, s1)
	args := entry("0.002", "50000", "dry")
	args["dryRun"] = true
	d := toolOK[dryRun](t, f.read, "send_signal", args)
	if got := changed(s1, snap()); len(got) > len(byRead) || len(got) > 0 && !strings.Contains(strings.Join(byRead, " "), got[0]) {
		t.Fatalf("the dry run changed %v; a read changes %v", got, byRead)
	}
	if !d.DryRun || d.WouldExecute || len(d.Legs) != 1 || d.Legs[0].Amount != "0.002" || d.Legs[0].Notional != "100" ||
		d.Legs[0].Fee != "0.1" || d.Legs[0].ReferencePrice != "50000" || len(d.Checks) != 5 || d.Policy.Passed || d.Policy.Code != "INSUFFICIENT_SCOPE" {
		t.Fatalf("read-only app's dry run of a live entry: %+v", d)
	}
	// The live app's dry run passes its policy, which would hold the entry for the user's
	// approval (the default), and counts nothing.
	if d := toolOK[dryRun](t, f.live, "send_signal", args); d.WouldExecute || !d.Policy.Passed ||
		!strings.Contains(d.Policy.Approval, "every live entry") {
		t.Fatalf("live app's dry run: %+v", d)
	}
	if got, _ := f.policies.DayCommitted(t.Context(), f.ada.ID, "agent"); !got.IsZero() {
		t.Fatalf("a dry run committed %s", got)
	}
	// place_order: the policy's verdict names the cap that would refuse.
	d = toolOK[dryRun](t, f.live, "place_order", map[string]any{"botId": "bot-x", "side": "buy", "type": "limit", "symbol": "BTC-USDT",
		"amount": "0.003", "price": 50000, "dryRun": true})
	if d.WouldExecute || d.Policy.Code != "POLICY_LIMIT" || d.Policy.Details["limit"] != "orderNotional" || d.Legs[0].Notional != "150" {
		t.Fatalf("place_order dry run over the cap: %+v", d)
	}
	// close_position with nothing open: the plan check refuses, nothing after it runs.
	d = toolOK[dryRun](t, f.read, "close_position", map[string]any{"botId": "bot-p", "symbol": "BTCUSDT", "dryRun": true})
	if last := d.Checks[len(d.Checks)-1]; d.WouldExecute || last.Name != "plan" || last.Code != "POSITION_NOT_FOUND" || len(d.Legs) != 0 {
		t.Fatalf("close_position dry run with nothing open: %+v", d)
	}
	// Without dryRun the read-only token is refused at the transport (the step-up 403), as
	// before.
	delete(args, "dryRun")
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = "send_signal", args
	if _, err := f.read.CallTool(t.Context(), req); err == nil || !strings.Contains(err.Error(), "insufficient_scope") {
		t.Fatalf("read token, no dry run: %v", err)
	}
	// Another user's bot stays NOT_FOUND in a dry run.
	bob := f.user(t, "bob@example.com", auth.TierPro)
	bobc, _ := mcpClient(t, f.fixture.bearer(t, bob).Token, "", f.ts)
	args["dryRun"] = true
	if text := toolErr(t, bobc, "send_signal", args); !strings.Contains(text, "NOT_FOUND") {
		t.Fatalf("another user's dry run: %s", text)
	}
}

// queued is the envelopes queued for bot-x.
func (f *notionalFixture) queued(t *testing.T) []queue.Envelope {
	t.Helper()
	msgs, err := f.rdb.XRange(t.Context(), queue.StreamOf("bot-x", queue.PriorityWebhook), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	more, err := f.rdb.XRange(t.Context(), queue.StreamOf("bot-x", queue.PriorityStrategyEntry), "-", "+").Result()
	if err != nil {
		t.Fatal(err)
	}
	var out []queue.Envelope
	for _, m := range append(msgs, more...) {
		var env queue.Envelope
		if err := json.Unmarshal([]byte(m.Values[queue.EnvelopeField].(string)), &env); err != nil {
			t.Fatal(err)
		}
		out = append(out, env)
	}
	return out
}

// A live entry the app's policy holds (the default: every one) answers awaiting_approval
// at once and is neither queued nor counted; approved, it is admitted, counted and queued
// once under its signal ID with the amount shown; rejected or expired, it never executes.
func TestApprovals(t *testing.T) {
	f := newNotionalFixture(t)
	approvals := approval.New(f.rdb, f.policies, f.clk.Now)
	type held struct {
		Success  bool
		Message  string
		SignalID string
		Status   string
		Approval struct{ State, ExpiresAt, Reason string }
	}
	first := toolOK[held](t, f.live, "send_signal", entry("0.002", "50000", "one"))
	if !first.Success || first.Message != "Awaiting approval" || first.Approval.State != approval.AwaitingApproval ||
		first.Approval.ExpiresAt != f.clk.Now().Add(5*time.Minute).UTC().Format(time.RFC3339) || !strings.Contains(first.Approval.Reason, "every live entry") {
		t.Fatalf("held: %+v", first)
	}
	// A retry with the same key answers the same approval.
	if again := toolOK[held](t, f.live, "send_signal", entry("0.002", "50000", "one")); again.SignalID != first.SignalID {
		t.Fatalf("retry: %+v, first %s", again, first.SignalID)
	}
	second := toolOK[held](t, f.live, "place_order", map[string]any{"botId": "bot-x", "side": "buy", "type": "limit",
		"symbol": "BTCUSDT", "amount": 0.001, "price": 50000})
	third := toolOK[held](t, f.live, "send_signal", entry("0.001", "50000", "three"))
	if second.Status != "awaiting_approval" || second.Approval.State != approval.AwaitingApproval {
		t.Fatalf("place_order held: %+v", second)
	}
	if q := f.queued(t); len(q) != 0 {
		t.Fatalf("queued before any approval: %+v", q)
	}
	if got, _ := f.policies.DayCommitted(t.Context(), f.ada.ID, "agent"); !got.IsZero() {
		t.Fatalf("held entries committed %s", got)
	}
	pending, err := approvals.Pending(t.Context(), f.ada.ID)
	if err != nil || len(pending) != 3 {
		t.Fatalf("pending %+v %v", pending, err)
	}
	a, err := approvals.Get(t.Context(), f.ada.ID, first.SignalID)
	if err != nil || a.ClientID != "agent" || a.BotName != "bot-x" || a.Tool != "send_signal" || len(a.Legs) != 1 ||
		!a.Legs[0].Amount.Equal(testkit.D("0.002")) || !a.Notional.Equal(testkit.D("100")) || !a.Legs[0].Fee.Equal(testkit.D("0.1")) {
		t.Fatalf("the first approval %+v %v", a, err)
	}
	type state struct{ State, Code string }
	if s := toolOK[state](t, f.live, "get_signal", map[string]any{"signalId": first.SignalID}); s.State != approval.AwaitingApproval {
		t.Fatalf("get_signal while held: %+v", s)
	}

	// Approved (twice, as two clicks would): counted and queued once, with the amount shown.
	for range 2 {
		if _, err := approvals.Approve(t.Context(), f.ada.ID, first.SignalID); err != nil {
			t.Fatal(err)
		}
	}
	q := f.queued(t)
	if len(q) != 1 || q[0].SignalID != first.SignalID || !q[0].Admitted[""].Equal(testkit.D("0.002")) {
		t.Fatalf("queued after the approval: %+v", q)
	}
	if got, _ := f.policies.DayCommitted(t.Context(), f.ada.ID, "agent"); !got.Equal(testkit.D("100")) {
		t.Fatalf("committed %s after the approval", got)
	}
	if s := toolOK[state](t, f.live, "get_signal", map[string]any{"signalId": first.SignalID}); s.State != "queued" {
		t.Fatalf("get_signal after approval: %+v", s)
	}
	// Rejected: never queued.
	if _, err := approvals.Reject(t.Context(), f.ada.ID, second.SignalID); err != nil {
		t.Fatal(err)
	}
	if _, err := approvals.Approve(t.Context(), f.ada.ID, second.SignalID); err == nil {
		t.Fatal("a rejected order approved")
	}
	if s := toolOK[state](t, f.live, "get_signal", map[string]any{"signalId": second.SignalID}); s.State != approval.Rejected {
		t.Fatalf("get_signal after rejection: %+v", s)
	}
	// Expired: after 5 minutes it answers expired and cannot be approved.
	f.clk.Advance(5 * time.Minute)
	if s := toolOK[state](t, f.live, "get_signal", map[string]any{"signalId": third.SignalID}); s.State != approval.Expired {
		t.Fatalf("get_signal after expiry: %+v", s)
	}
	_, err = approvals.Approve(t.Context(), f.ada.ID, third.SignalID)
	if e, ok := errs.As(err); !ok || e.Details["state"] != approval.Expired {
		t.Fatalf("approving an expired order: %v", err)
	}
	if q := f.queued(t); len(q) != 1 {
		t.Fatalf("%d queued, want the one approved", len(q))
	}
	if n, _ := approvals.PendingCount(t.Context(), f.ada.ID); n != 0 {
		t.Fatalf("%d pending", n)
	}
	// Approved under the kill switch: refused by the policy, nothing queued.
	fourth := toolOK[held](t, f.live, "send_signal", entry("0.001", "50000", "four"))
	if _, err := f.policies.Suspend(t.Context(), f.ada.ID); err != nil {
		t.Fatal(err)
	}
	_, err = approvals.Approve(t.Context(), f.ada.ID, fourth.SignalID)
	if e, ok := errs.As(err); !ok || e.Code != errs.PolicyLimit {
		t.Fatalf("approved under the kill switch: %v", err)
	}
	if s := toolOK[state](t, f.read, "get_signal", map[string]any{"signalId": fourth.SignalID}); s.State != approval.Refused || s.Code != "POLICY_LIMIT" {
		t.Fatalf("get_signal of a refused approval: %+v", s)
	}
	if q := f.queued(t); len(q) != 1 {
		t.Fatalf("%d queued, want the one approved", len(q))
	}
}
