package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/shopspring/decimal"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/approval"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/exchange/binance/binancefake"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// policyWorld is one user's bots on the fake Binance and on paper, for the app policies.
type policyWorld struct {
	u    auth.User
	fake *binancefake.Server
	// live is a spot bot on the fake exchange (positionSize 0.001 BTC) and liveHook its
	// webhook path; paper a paper bot; master a paper bot copied by follower, a bot on
	// the exchange: an entry on master reaches real money.
	live, paper, master, follower string
	liveHook                      string
}

// newPolicyWorld creates the user, the fake exchange (BTCUSDT at 50,000, 10,000 USDT) with
// a validated ExchangeConnection, and the four bots, and waits until the master's
// projected reach includes its follower on the exchange: what mcpd's scope and policy read.
func newPolicyWorld(t *testing.T) *policyWorld {
	t.Helper()
	ctx := t.Context()
	// An e-mail of its own per run, so that -count=N runs it again on the same stack.
	email := fmt.Sprintf("policies-%d@example.com", time.Now().UnixNano())
	w := &policyWorld{u: newAgentUser(t, email), fake: binancefake.New()}
	t.Cleanup(w.fake.Close)
	w.fake.SetPrice("BTCUSDT", "50000")
	w.fake.SetSpotBalance("USDT", "10000")
	pin(t, "BTC/USDT", "50000")

	ns := userNamespace(t, w.u)
	onExchange := &tradingv1.LocalObjectReference{Name: "binance"}
	onPaper := &tradingv1.LocalObjectReference{Name: "paper"}
	bot := func(name string, spec tradingv1.SignalBotSpec) *tradingv1.SignalBot {
		spec.Owner, spec.Symbol = w.u.Email, "BTC/USDT"
		return &tradingv1.SignalBot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	}
	for _, o := range []ctrlclient.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "binance-key"},
			StringData: map[string]string{"apiKey": binancefake.APIKey, "apiSecret": binancefake.APISecret}},
		&tradingv1.ExchangeConnection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "binance"},
			Spec: tradingv1.ExchangeConnectionSpec{Owner: w.u.Email, Exchange: tradingv1.ExchangeBinance,
				CredentialsSecretRef: tradingv1.LocalObjectReference{Name: "binance-key"},
				Endpoints:            tradingv1.EndpointsSpec{Spot: w.fake.URL(), Futures: w.fake.URL()}}},
		bot("live", tradingv1.SignalBotSpec{PositionSize: "0.001", ExchangeConnectionRef: onExchange}),
		bot("paper", tradingv1.SignalBotSpec{PaperAccountRef: onPaper}),
		bot("master", tradingv1.SignalBotSpec{PaperAccountRef: onPaper}),
		bot("follower", tradingv1.SignalBotSpec{ExchangeConnectionRef: onExchange,
			CopyFrom: &tradingv1.CopyFromSpec{BotRef: tradingv1.BotReference{Name: "master"}}}),
	} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	id := func(name string) (string, string) {
		b, path := readyBot(t, ctrlclient.ObjectKey{Namespace: ns, Name: name}, 20*time.Second)
		return string(b.UID), path
	}
	w.live, w.liveHook = id("live")
	w.paper, _ = id("paper")
	w.master, _ = id("master")
	w.follower, _ = id("follower")
	reg := registry.New(rdb)
	eventually(t, "the master's entries reach the follower's exchange", func() error {
		m, err := reg.Get(ctx, w.master)
		if err != nil {
			return err
		}
		reach, err := reg.Reach(ctx, m)
		if err != nil {
			return err
		}
		if !registry.OnExchange(reach) {
			return fmt.Errorf("the master reaches %d bots, none on an exchange", len(reach))
		}
		return nil
	})
	return w
}

// ask calls tool on c and returns the answer's text and whether it is an error result; an
// error of the transport is returned as err (safe from any goroutine).
func ask(ctx context.Context, c *client.Client, tool string, args map[string]any) (string, bool, error) {
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", tool, err)
	}
	return res.Content[0].(mcp.TextContent).Text, res.IsError, nil
}

// askReplica posts one tools/call with token straight to mcpReplicas[i], without a
// session, and returns the answer's text and whether it is an error result.
func askReplica(t *testing.T, i int, token, tool string, args map[string]any) (string, bool) {
	t.Helper()
	res, body := postMCP(t, mcpReplicas[i], token, callBody(tool, args))
	var rpc struct {
		Result struct {
			Content []struct {
				Text string `json:"text"`
			} `json:"content"`
			IsError bool `json:"isError"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &rpc); res.StatusCode != http.StatusOK || err != nil || len(rpc.Result.Content) == 0 {
		t.Fatalf("%s on replica %d: %d %s", tool, i, res.StatusCode, body)
	}
	return rpc.Result.Content[0].Text, rpc.Result.IsError
}

// refusal is a tool's error answer.
type refusal struct {
	Code    string         `json:"code"`
	Message string         `json:"message"`
	Details map[string]any `json:"details"`
}

// limitOf is the limit a POLICY_LIMIT answer names, "" for any other answer.
func limitOf(text string, isErr bool) (string, refusal) {
	var r refusal
	if !isErr || json.Unmarshal([]byte(text), &r) != nil || r.Code != "POLICY_LIMIT" {
		return "", r
	}
	limit, _ := r.Details["limit"].(string)
	return limit, r
}

// wantLimit calls tool on c, which must be refused with POLICY_LIMIT naming limit; it
// returns the refusal.
func wantLimit(t *testing.T, c *client.Client, tool string, args map[string]any, limit string) refusal {
	t.Helper()
	text, isErr, err := ask(t.Context(), c, tool, args)
	if err != nil {
		t.Fatal(err)
	}
	got, r := limitOf(text, isErr)
	if got != limit {
		t.Fatalf("%s %v: want POLICY_LIMIT %s, got (error %v) %s", tool, args, limit, isErr, text)
	}
	return r
}

// sent is send_signal's answer.
type sent struct {
	Success  bool   `json:"success"`
	Message  string `json:"message"`
	SignalID string `json:"signalId"`
	Order    *struct {
		Status       string          `json:"status"`
		Side         string          `json:"side"`
		FilledAmount decimal.Decimal `json:"filledAmount"`
	} `json:"order"`
	Approval *struct {
		State  string `json:"state"`
		Reason string `json:"reason"`
	} `json:"approval"`
}

// wantSent calls send_signal on c, which must succeed, and returns its answer.
func wantSent(t *testing.T, c *client.Client, args map[string]any) sent {
	t.Helper()
	text, isErr, err := ask(t.Context(), c, "send_signal", args)
	if err != nil {
		t.Fatal(err)
	}
	var s sent
	if isErr || json.Unmarshal([]byte(text), &s) != nil || !s.Success {
		t.Fatalf("send_signal %v: %s", args, text)
	}
	return s
}

// limitBuy is a limit buy of amount BTC at price on bot, with an idempotency key (an
// entry retried with it is one entry).
func limitBuy(bot, amount, price, key string) map[string]any {
	return map[string]any{"botId": bot, "action": "buy", "symbol": "BTCUSDT", "size": amount, "price": price, "idempotencyKey": key}
}

// ordersPlaced is how many orders the fake exchange was sent.
func ordersPlaced(f *binancefake.Server) int { return f.Count(http.MethodPost, "/api/v3/order") }

// Connected apps' policies through the whole stack: two apps of one user signed in by the
// real OAuth flow, their calls spread over both mcpd replicas, the executor placing what
// the policy admitted on the fake Binance. A paper-only app is kept off the exchange, also
// through a copy relation; a live app's entries are held to the per-order and per-day
// caps exactly at the boundary under 20 concurrent calls, and its exits pass the caps;
// the kill switch stops both apps on both replicas at once and reads go on; dry runs
// change nothing in Redis; a held entry reaches the exchange once approved, never when
// rejected.
func TestMCPAppPoliciesEndToEnd(t *testing.T) {
	ctx := t.Context()
	w := newPolicyWorld(t)
	// The policies as mcpd reads them, on its clock: the day and hour counters are keyed by
	// mcpd's UTC day and hour, and mcpClock may have been moved on by other tests.
	policies := apppolicy.NewPolicies(rdb, mcpClock.Now)

	// The consent to mcp:live is the choice of live; the user then keeps one app on paper
	// and lets the other trade live within the default caps (100 USDT an order, 500 a
	// day) without asking for approval, as Connected apps can.
	paperApp := signIn(t, w.u, auth.ScopeLive)
	paperOnly := apppolicy.DefaultPolicy()
	paperOnly.Live = false
	if err := policies.Set(ctx, w.u.ID, paperApp.cfg.ClientID, paperOnly); err != nil {
		t.Fatal(err)
	}
	liveApp := signIn(t, w.u, auth.ScopeLive)
	capped := apppolicy.DefaultPolicy()
	capped.Approve = false
	if err := policies.Set(ctx, w.u.ID, liveApp.cfg.ClientID, capped); err != nil {
		t.Fatal(err)
	}
	pc, _ := mcpSession(t, paperApp.tok.AccessToken)
	lc, _ := mcpSession(t, liveApp.tok.AccessToken)
	committed := func(t *testing.T) decimal.Decimal {
		t.Helper()
		d, err := policies.DayCommitted(ctx, w.u.ID, liveApp.cfg.ClientID)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	step := func(name string, f func(t *testing.T)) {
		if !t.Run(name, f) {
			t.FailNow() // each step builds on the state the one before left
		}
	}

	step("paper-only app kept off the exchange", func(t *testing.T) {
		r := wantLimit(t, pc, "send_signal", map[string]any{"botId": w.live, "action": "buy"}, apppolicy.LimitVenue)
		if r.Details["value"] != "paper" || r.Details["used"] != "live" {
			t.Fatalf("venue refusal details %v", r.Details)
		}
		// The master is a paper bot, but its entries are copied to the follower's exchange.
		wantLimit(t, pc, "send_signal", map[string]any{"botId": w.master, "action": "buy", "size": "0.001"}, apppolicy.LimitVenue)
		// On paper the same app trades: the refusals are the venue's, not the app's.
		s := wantSent(t, pc, map[string]any{"botId": w.paper, "action": "buy", "size": "0.001", "wait": true})
		if s.Order == nil || s.Order.Status != "filled" || !s.Order.FilledAmount.Equal(testkit.D("0.001")) {
			t.Fatalf("paper buy: %+v", s)
		}
		if n := ordersPlaced(w.fake); n != 0 {
			t.Fatalf("the exchange was sent %d orders", n)
		}
	})

	step("per-order cap", func(t *testing.T) {
		// 0.002 BTC at 50,000.01 is 100.00002 USDT: over the 100 by 2e-5.
		r := wantLimit(t, lc, "send_signal", limitBuy(w.live, "0.002", "50000.01", "over"), apppolicy.LimitOrderNotional)
		if r.Details["value"] != "100" || r.Details["requested"] != "100.00002" {
			t.Fatalf("orderNotional details %v", r.Details)
		}
		if d := committed(t); !d.IsZero() {
			t.Fatalf("a refused order committed %s", d)
		}
	})

	step("dry runs change nothing", func(t *testing.T) {
		dryRunsChangeNothing(t, w, lc)
		if d := committed(t); !d.IsZero() {
			t.Fatalf("dry runs committed %s", d)
		}
		if n, err := policies.HourUsed(ctx, w.u.ID, liveApp.cfg.ClientID); err != nil || n != 0 {
			t.Fatalf("dry runs counted %d orders (%v)", n, err)
		}
		if n := ordersPlaced(w.fake); n != 0 {
			t.Fatalf("the exchange was sent %d orders", n)
		}
	})

	step("per-day cap under 20 concurrent calls", func(t *testing.T) {
		// The entries the policy admits are executed while the others are still being
		// sized, and an entry is sized against the bot's book: had the admitted ones
		// filled, a later call's sizing would see the position open and answer
		// INVALID_ACTION before its notional is known, and the count of dayNotional
		// refusals would depend on timing. Moved a cent above their limit price, the
		// exchange keeps the admitted buys resting: the book stays flat, every call is
		// sized alike (exactly 100 USDT), and what decides is the policy alone.
		w.fake.SetPrice("BTCUSDT", "50000.01")
		type outcome struct {
			text  string
			isErr bool
			err   error
		}
		outs := make([]outcome, 20)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range outs {
			wg.Go(func() {
				<-start
				text, isErr, err := ask(ctx, lc, "send_signal", limitBuy(w.live, "0.002", "50000", fmt.Sprintf("day-%02d", i)))
				outs[i] = outcome{text, isErr, err}
			})
		}
		close(start)
		wg.Wait()
		var admitted []string
		for i, o := range outs {
			if o.err != nil {
				t.Fatalf("entry %d: %v", i, o.err)
			}
			if limit, r := limitOf(o.text, o.isErr); limit != "" {
				if limit != apppolicy.LimitDayNotional || r.Details["value"] != "500" || r.Details["used"] != "500" ||
					r.Details["requested"] != "100" {
					t.Fatalf("entry %d: %s", i, o.text)
				}
				continue
			}
			var s sent
			if o.isErr || json.Unmarshal([]byte(o.text), &s) != nil || s.Message != "Signal queued" {
				t.Fatalf("entry %d: %s", i, o.text)
			}
			admitted = append(admitted, s.SignalID)
		}
		if len(admitted) != 5 {
			t.Fatalf("%d of 20 entries of 100 USDT admitted under a 500 USDT day", len(admitted))
		}
		if d := committed(t); !d.Equal(testkit.D("500")) {
			t.Fatalf("committed %s, want 500", d)
		}
		// The executor placed what was admitted, each once, and nothing else.
		eventually(t, "the admitted entries on the exchange", func() error {
			for _, id := range admitted {
				if n := w.fake.Placed(order.ClientOrderID(id, "")); n != 1 {
					return fmt.Errorf("signal %s placed %d times", id, n)
				}
			}
			return nil
		})
		if n := ordersPlaced(w.fake); n != 5 {
			t.Fatalf("the exchange was sent %d orders, want the 5 admitted", n)
		}
		if _, locked := w.fake.SpotBalance("USDT"); !locked.Equal(testkit.D("500")) {
			t.Fatalf("%s USDT held by resting buys, want 5 × 100", locked)
		}
	})

	step("exits pass the caps", func(t *testing.T) {
		// A position opened by the bot's own webhook: the user's channel, which no app
		// policy limits. 0.01 BTC bought, 0.00999 held (the fee is taken in BTC).
		if r := send(t, w.liveHook, `{"action":"buy","size":"0.01"}`); r.Status != http.StatusOK || !r.Body.Success ||
			r.Body.Order == nil || r.Body.Order.Status != "filled" {
			t.Fatalf("webhook buy: %+v", r)
		}
		hour := func() int {
			n, err := policies.HourUsed(ctx, w.u.ID, liveApp.cfg.ClientID)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		before := hour()
		s := wantSent(t, lc, map[string]any{"botId": w.live, "action": "close", "wait": true})
		if s.Order == nil || s.Order.Side != "sell" || s.Order.Status != "filled" || !s.Order.FilledAmount.Equal(testkit.D("0.00999")) {
			t.Fatalf("close at the day's cap: %+v", s)
		}
		// Counted as an order of the hour, and nothing against the day's notional.
		if after := hour(); after != before+1 {
			t.Fatalf("orders this hour %d, then %d after the close", before, after)
		}
		if d := committed(t); !d.Equal(testkit.D("500")) {
			t.Fatalf("committed %s after an exit", d)
		}
		if pos, err := api.Positions(ctx, w.live); err != nil || len(pos) != 0 {
			t.Fatalf("positions after the close: %+v %v", pos, err)
		}
	})

	step("kill switch on both replicas within a second", func(t *testing.T) {
		calls := []struct {
			app  *agent
			args map[string]any
		}{
			// Even an exit: the switch stops every trading call of every app.
			{paperApp, map[string]any{"botId": w.paper, "action": "close"}},
			{liveApp, limitBuy(w.live, "0.001", "50000", "suspended")},
		}
		since, err := policies.Suspend(ctx, w.u.ID)
		if err != nil {
			t.Fatal(err)
		}
		suspended := time.Now()
		for i := range mcpReplicas {
			for _, c := range calls {
				text, isErr := askReplica(t, i, c.app.tok.AccessToken, "send_signal", c.args)
				if limit, r := limitOf(text, isErr); limit != apppolicy.LimitKillSwitch || r.Details["since"] != since.Format(time.RFC3339) {
					t.Fatalf("replica %d, app %s: %s", i, c.app.cfg.ClientID, text)
				}
			}
		}
		if d := time.Since(suspended); d >= time.Second {
			t.Fatalf("the kill switch held on both replicas %v after it was turned on", d)
		}
		// Reads go on.
		for i := range mcpReplicas {
			for _, c := range calls {
				if text, isErr := askReplica(t, i, c.app.tok.AccessToken, "list_bots", nil); isErr {
					t.Fatalf("list_bots on replica %d under the kill switch: %s", i, text)
				}
			}
		}
		if err := policies.Lift(ctx, w.u.ID); err != nil {
			t.Fatal(err)
		}
		s := wantSent(t, pc, map[string]any{"botId": w.paper, "action": "close", "wait": true})
		if s.Order == nil || s.Order.Side != "sell" || s.Order.Status != "filled" {
			t.Fatalf("paper close after the switch was lifted: %+v", s)
		}
	})

	step("held entries wait for the user", func(t *testing.T) {
		// Back to the default: every live entry waits for the user's approval. The day's
		// 500 USDT were spent above, and the day cap is checked before approval is asked
		// for, so this day allows 1,000.
		held := apppolicy.DefaultPolicy()
		held.DayNotional = httpapi.Num(testkit.D("1000"))
		if err := policies.Set(ctx, w.u.ID, liveApp.cfg.ClientID, held); err != nil {
			t.Fatal(err)
		}
		approvals := approval.New(rdb, policies, mcpClock.Now)
		// The user decides from their phone: the requests reach their linked Telegram chat.
		p := startPhone(t, w.u.ID, 9001, approvals)
		placed := ordersPlaced(w.fake)
		yes := wantSent(t, lc, limitBuy(w.live, "0.001", "50000", "approve-me"))
		no := wantSent(t, lc, limitBuy(w.live, "0.002", "50000", "reject-me"))
		for _, s := range []sent{yes, no} {
			if s.Message != "Awaiting approval" || s.Approval == nil || s.Approval.State != approval.AwaitingApproval {
				t.Fatalf("held entry: %+v", s)
			}
		}
		pending, err := approvals.Pending(ctx, w.u.ID)
		if err != nil || len(pending) != 2 || pending[0].SignalID != yes.SignalID || pending[1].SignalID != no.SignalID {
			t.Fatalf("pending %+v %v", pending, err)
		}
		if d := committed(t); !d.Equal(testkit.D("500")) {
			t.Fatalf("held entries committed %s", d)
		}
		yesMsg, noMsg := p.request(t, "buy 0.001 BTC/USDT"), p.request(t, "buy 0.002 BTC/USDT")
		// A press from another chat (a forwarded message) decides nothing.
		if got := p.press(t, 9002, yesMsg, 0); !strings.Contains(got, "not for this chat") {
			t.Fatalf("a press from another chat: %q", got)
		}
		if a, _ := approvals.Get(ctx, w.u.ID, yes.SignalID); a.State != approval.AwaitingApproval {
			t.Fatalf("after a stranger's press: %s", a.State)
		}
		if got := p.press(t, 9001, noMsg, 1); !strings.Contains(got, "Rejected") {
			t.Fatalf("reject: %q", got)
		}
		if got := p.press(t, 9001, yesMsg, 0); !strings.Contains(got, "Approved") {
			t.Fatalf("approve: %q", got)
		}
		eventually(t, "the approved entry on the exchange", func() error {
			if n := w.fake.Placed(order.ClientOrderID(yes.SignalID, "")); n != 1 {
				return fmt.Errorf("placed %d times", n)
			}
			return nil
		})
		// A second press changes nothing.
		if got := p.press(t, 9001, yesMsg, 0); !strings.Contains(got, "already decided") {
			t.Fatalf("a second press: %q", got)
		}
		// Counted once approved: 500 + 0.001 × 50,000.
		if d := committed(t); !d.Equal(testkit.D("550")) {
			t.Fatalf("committed %s after the approval", d)
		}
		if n := w.fake.Placed(order.ClientOrderID(no.SignalID, "")); n != 0 || ordersPlaced(w.fake) != placed+1 ||
			w.fake.Placed(order.ClientOrderID(yes.SignalID, "")) != 1 {
			t.Fatalf("the rejected entry placed %d times; %d orders since the two were held", n, ordersPlaced(w.fake)-placed)
		}
		if _, err := approvals.Approve(ctx, w.u.ID, no.SignalID); err == nil {
			t.Fatal("a rejected entry was approved")
		}
		var st struct{ State string }
		call(t, lc, "get_signal", map[string]any{"signalId": no.SignalID}, &st)
		if st.State != approval.Rejected {
			t.Fatalf("get_signal of the rejected entry: %+v", st)
		}
	})
}

// dryRunsChangeNothing shows that the live app's dry runs of a send_signal and a
// place_order on the live bot answer the sized order and the policy's verdict and leave
// Redis byte for byte as it was, but for what a plain read call changes too (the app's
// rate-limit bucket, the authorization's last-used stamp) and what changes with no call
// at all. This stack is alive while the test looks: the executors' heartbeat is written
// every few milliseconds, and the rate-limit buckets of earlier calls (other apps', the
// bots' webhook limits) expire on their own. Both are measured rather than listed: the
// keys that change across idle intervals with no call, and the keys due to expire within
// the dry runs' interval that are gone after it.
func dryRunsChangeNothing(t *testing.T, w *policyWorld, c *client.Client) {
	t.Helper()
	ctx := t.Context()
	snap := func() map[string]string {
		s, err := storetest.Snapshot(ctx, rdb)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	idle := map[string]bool{}
	prev := snap()
	for range 3 {
		time.Sleep(200 * time.Millisecond)
		next := snap()
		for _, k := range storetest.Changed(prev, next) {
			idle[k] = true
		}
		prev = next
	}
	// A read on each replica (the session's requests alternate): each replica stamps an
	// authorization's last use at most once a minute, so a stamp due now is made here.
	for range 2 {
		if text, isErr, err := ask(ctx, c, "list_bots", nil); err != nil || isErr {
			t.Fatalf("list_bots: %s %v", text, err)
		}
	}
	before := snap()
	byRead := storetest.Changed(prev, before)
	// Keys whose expiry falls within the dry runs (storetest.Snapshot marks the ones that
	// expire): one gone after them was expired by Redis, not deleted by a call.
	const window = 5 * time.Second
	expiring := map[string]bool{}
	for k, v := range before {
		if strings.HasSuffix(v, "expires=true") {
			if ttl, err := rdb.PTTL(ctx, k).Result(); err == nil && ttl < window {
				expiring[k] = true
			}
		}
	}
	began := time.Now()

	args := limitBuy(w.live, "0.002", "50000", "dry")
	args["dryRun"] = true
	var exact dryAnswer
	call(t, c, "send_signal", args, &exact)
	if !exact.DryRun || !exact.WouldExecute || len(exact.Legs) != 1 || exact.Legs[0].Op != "open" ||
		!exact.Legs[0].Amount.Equal(testkit.D("0.002")) || !exact.Legs[0].Notional.Equal(testkit.D("100")) || !exact.Policy.Passed {
		t.Fatalf("send_signal dry run of exactly the cap: %+v", exact)
	}
	var over dryAnswer
	call(t, c, "place_order", map[string]any{"botId": w.live, "side": "buy", "type": "limit", "symbol": "BTCUSDT",
		"amount": 0.003, "price": 50000, "dryRun": true}, &over)
	if !over.DryRun || over.WouldExecute || over.Policy.Passed || over.Policy.Code != "POLICY_LIMIT" ||
		over.Policy.Details["limit"] != apppolicy.LimitOrderNotional || len(over.Legs) != 1 || !over.Legs[0].Notional.Equal(testkit.D("150")) {
		t.Fatalf("place_order dry run over the cap: %+v", over)
	}

	after := snap()
	if took := time.Since(began); took >= window {
		t.Fatalf("the dry runs took %v, longer than the %v the expiring keys were read for", took, window)
	}
	var changed []string
	for _, k := range storetest.Changed(before, after) {
		_, stays := after[k]
		if idle[k] || slices.Contains(byRead, k) || expiring[k] && !stays {
			continue
		}
		changed = append(changed, k)
	}
	if len(changed) > 0 {
		t.Fatalf("the dry runs changed %v; a read changes %v, and with no call %v change", changed, byRead, idle)
	}
}

// dryAnswer is a dry run's answer.
type dryAnswer struct {
	DryRun, WouldExecute bool
	Legs                 []struct {
		Op               string
		Amount, Notional decimal.Decimal
	}
	Policy struct {
		Passed  bool
		Code    string
		Details map[string]any
	}
}
