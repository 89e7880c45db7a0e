package e2e_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/shopspring/decimal"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrlclient "sigs.k8s.io/controller-runtime/pkg/client"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/exchange/binance/binancefake"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/lab"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/portfolio"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/risk"
)

// coverage records, per tool, whether a call succeeded and whether one was refused.
type coverage struct {
	ok, refused map[string]bool
}

// toolDay is one agent's MCP session with the coverage of its calls.
type toolDay struct {
	t   *testing.T
	cov *coverage
}

// answer calls tool on c and returns the result's text and whether it is an error result.
func (d *toolDay) answer(c *client.Client, tool string, args map[string]any) (string, bool) {
	d.t.Helper()
	req := mcp.CallToolRequest{}
	req.Params.Name, req.Params.Arguments = tool, args
	ctx, cancel := context.WithTimeout(d.t.Context(), 15*time.Second)
	defer cancel()
	res, err := c.CallTool(ctx, req)
	if err != nil {
		d.t.Fatalf("%s: %v", tool, err)
	}
	return res.Content[0].(mcp.TextContent).Text, res.IsError
}

// ok calls tool, which must succeed (for a trading tool: status executed with a successful
// result), and decodes its answer into v.
func (d *toolDay) ok(c *client.Client, tool string, args map[string]any, v any) {
	d.t.Helper()
	text, isErr := d.answer(c, tool, args)
	if isErr {
		d.t.Fatalf("%s %v: error result %s", tool, args, text)
	}
	var trade struct {
		Status string         `json:"status"`
		Result *result.Result `json:"result"`
	}
	if _, trading := tradeTools[tool]; trading {
		if err := json.Unmarshal([]byte(text), &trade); err != nil || trade.Status != "executed" || trade.Result == nil || !trade.Result.Success {
			d.t.Fatalf("%s %v: not executed: %s", tool, args, text)
		}
	}
	if v != nil {
		if err := json.Unmarshal([]byte(text), v); err != nil {
			d.t.Fatalf("%s: %v in %s", tool, err, text)
		}
	}
	d.cov.ok[tool] = true
}

// tradeTools answer a tradeAnswer: a refusal decided by the executor is in its result.
var tradeTools = map[string]struct{}{"place_order": {}, "set_stop_loss": {}, "set_take_profit": {},
	"close_position": {}, "close_all_positions": {}, "cancel_order": {}}

// refused calls tool, which must answer code: in an error result, or for a trading tool in
// the failed result the executor decided. It returns the answer's text.
func (d *toolDay) refused(c *client.Client, tool string, args map[string]any, code string) string {
	d.t.Helper()
	text, isErr := d.answer(c, tool, args)
	var got struct {
		Code   string `json:"code"`
		Status string `json:"status"`
		Result *struct {
			Code string `json:"code"`
		} `json:"result"`
	}
	_ = json.Unmarshal([]byte(text), &got)
	_, trading := tradeTools[tool]
	switch {
	case isErr && got.Code == code:
	case !isErr && trading && got.Status == "failed" && got.Result != nil && got.Result.Code == code:
	default:
		d.t.Fatalf("%s %v: want %s, got (error %v) %s", tool, args, code, isErr, text)
	}
	d.cov.refused[tool] = true
	return text
}

// scopeRefused posts tool with token to a replica, which must answer HTTP 403
// insufficient_scope naming scope.
func (d *toolDay) scopeRefused(token, tool string, args map[string]any, scope string) {
	d.t.Helper()
	res, body := postMCP(d.t, mcpReplicas[len(d.cov.refused)%2], token, callBody(tool, args))
	wantInsufficient(d.t, res, body, scope)
	d.cov.refused[tool] = true
}

// idRe matches a UUID, whole or cut short as some messages quote it.
var idRe = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f-]{1,27}`)

// sameAsMissing checks that tool answers another user's id exactly as it answers an id that
// does not exist: NOT_FOUND, with nothing but the id told apart.
func (d *toolDay) sameAsMissing(c *client.Client, tool, arg, theirs string, args map[string]any) {
	d.t.Helper()
	const none = "00000000-0000-0000-0000-000000000000"
	with := func(id string) map[string]any {
		out := map[string]any{arg: id}
		for k, v := range args {
			out[k] = v
		}
		return out
	}
	their := d.refused(c, tool, with(theirs), "NOT_FOUND")
	missing := d.refused(c, tool, with(none), "NOT_FOUND")
	if idRe.ReplaceAllString(their, "ID") != idRe.ReplaceAllString(missing, "ID") {
		d.t.Fatalf("%s: another user's %s answers %s, a missing one %s", tool, arg, their, missing)
	}
}

// unauthenticated posts tool with a token that is not one, which must answer HTTP 401
// invalid_token with the challenge naming the protected resource metadata.
func (d *toolDay) unauthenticated(tool string) {
	d.t.Helper()
	res, body := postMCP(d.t, mcpReplicas[0], "not-a-token", callBody(tool, nil))
	if h := res.Header.Get("WWW-Authenticate"); res.StatusCode != http.StatusUnauthorized ||
		!strings.Contains(h, `error="invalid_token"`) || !strings.Contains(h, `resource_metadata="`+mcpMetadata+`"`) {
		d.t.Fatalf("%s without a valid token: %d %q %s", tool, res.StatusCode, h, body)
	}
	d.cov.refused[tool] = true
}

// pollInterval spaces pollTool's calls: at most 5 a second keeps a day's calls well inside
// mcpd's per-client rate limit (mcpd.DefaultRateLimit a minute).
const pollInterval = 200 * time.Millisecond

// pollTool calls tool every pollInterval until check accepts its answer, for at most 10 s.
func (d *toolDay) pollTool(c *client.Client, what, tool string, args map[string]any, check func(text string, isErr bool) error) {
	d.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		text, isErr := d.answer(c, tool, args)
		err := check(text, isErr)
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("%s (not within 10s): %v", what, err)
		}
		time.Sleep(pollInterval)
	}
}

// userNamespace is fleet's namespace of u with a PaperAccount "paper" of u in it.
func userNamespace(t *testing.T, u auth.User) string {
	t.Helper()
	ns, err := fleet.New(fleet.Options{Client: k8s, Redis: rdb}).Namespace(t.Context(), fleet.Caller{UserID: u.ID, Email: u.Email})
	if err != nil {
		t.Fatal(err)
	}
	acct := &tradingv1.PaperAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "paper"},
		Spec: tradingv1.PaperAccountSpec{Owner: u.Email}}
	if err := k8s.Create(t.Context(), acct); err != nil {
		t.Fatal(err)
	}
	return ns
}

// apiLogin is authd's bearer JWT for u, as the dashboard's login answers it.
func apiLogin(t *testing.T, u auth.User) string {
	t.Helper()
	body, _ := json.Marshal(map[string]string{"email": u.Email, "password": agentPassword})
	resp, err := authdTS.Client().Post(authdTS.URL+"/api/auth/login", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Token string `json:"token"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusOK || out.Token == "" {
		t.Fatalf("login: %d %v %+v", resp.StatusCode, err, out)
	}
	return out.Token
}

// An agent's whole day through MCP: every one of the 45 tools called over HTTPS with
// mcp-go's client against the real pipeline (API server, manager, webhookd, executor on
// the pinned simulated market, fake Binance), each at least once answered and at least
// once refused, then the audit journal read back from authd.
func TestMCPAgentDayCallsEveryTool(t *testing.T) {
	ctx := t.Context()
	cov := &coverage{ok: map[string]bool{}, refused: map[string]bool{}}
	d := &toolDay{t: t, cov: cov}
	u := newAgentUser(t, "day@example.com")
	ns := userNamespace(t, u)
	live := signIn(t, u, auth.ScopeLive)
	paperTok := signIn(t, u, auth.ScopePaper)
	readTok := signIn(t, u, auth.ScopeRead)
	c, _ := mcpSession(t, live.tok.AccessToken)
	// The day is about the tools, not the app's policy (mcp_policy_test.go): its user lets
	// the agent trade live with no notional caps and no approvals, as Connected apps can,
	// so that the live bot it creates and the order it places are served, not held.
	uncapped := apppolicy.DefaultPolicy()
	uncapped.OrderNotional, uncapped.DayNotional, uncapped.Approve = httpapi.Num(decimal.Zero), httpapi.Num(decimal.Zero), false
	if err := apppolicy.NewPolicies(rdb, mcpClock.Now).Set(ctx, u.ID, live.cfg.ClientID, uncapped); err != nil {
		t.Fatal(err)
	}

	// Another user with a bot, a paper account and a Strategy Lab job: all of them answer
	// this user exactly as missing ones do.
	other := newAgentUser(t, "day-other@example.com")
	otherPath, otherBot := deployFor(t, other.Email, &tradingv1.SignalBot{ObjectMeta: metav1.ObjectMeta{Name: "theirs"},
		Spec: tradingv1.SignalBotSpec{Symbol: "BTC/USDT"}})
	pin(t, "BTC/USDT", "60000")
	otherSignal := send(t, otherPath, `{"action":"buy","size":"0.01"}`)
	if !otherSignal.Body.Success {
		t.Fatalf("other user's buy: %+v", otherSignal)
	}
	ob, err := registry.New(rdb).Get(ctx, otherBot)
	if err != nil {
		t.Fatal(err)
	}
	otherAccount := ob.Account.ID
	if _, err := users.Wallets.Credit(ctx, other.ID, decimal.RequireFromString("5")); err != nil {
		t.Fatal(err)
	}
	oc, _ := mcpSession(t, signIn(t, other, auth.ScopeLive).tok.AccessToken)
	strategyArgs := func(experiments int, ack bool) map[string]any {
		return map[string]any{"family": "emaCrossover", "symbol": "BTC/USDT", "timeframe": "1h",
			"from": "2026-01-01T00:00:00Z", "to": "2026-02-01T00:00:00Z", "experiments": experiments, "acknowledgeCost": ack}
	}
	var otherJob lab.Outcome
	call(t, oc, "generate_strategy", strategyArgs(2, true), &otherJob)
	if otherJob.Job == nil {
		t.Fatalf("other user's job: %+v", otherJob)
	}

	// Session tools: the bearer is the session.
	var st struct {
		Email string `json:"email"`
		Token struct {
			Scope string `json:"scope"`
		} `json:"token"`
	}
	d.ok(c, "check_auth", nil, &st)
	if st.Email != u.Email || st.Token.Scope != auth.ScopeLive {
		t.Fatalf("check_auth = %+v", st)
	}
	// Each with its own parameters: a key a tool does not list is refused.
	for tool, args := range map[string]map[string]any{"login": {"email": "x@example.com", "password": "p"},
		"authenticate": nil, "set_token": {"token": "t"}, "logout": nil} {
		var note struct{ Message string }
		d.ok(c, tool, args, &note)
		if !strings.Contains(note.Message, "bearer token") || !strings.Contains(note.Message, "nothing was changed") {
			t.Fatalf("%s = %q", tool, note.Message)
		}
	}
	// The session tools' refusal is the bearer's: without a valid token no tool runs, and
	// the 401 names the metadata to sign in by.
	for _, tool := range []string{"check_auth", "login", "authenticate", "set_token", "logout"} {
		d.unauthenticated(tool)
	}

	// create_bot on the paper account; the manager projects it.
	var created struct {
		ID    string        `json:"id"`
		State string        `json:"state"`
		Bot   *registry.Bot `json:"bot"`
	}
	d.ok(c, "create_bot", map[string]any{"name": "day", "account": map[string]any{"kind": "paper", "name": "paper"},
		"symbol": "BTC/USDT", "positionSize": "0.02"}, &created)
	botID := created.ID
	if botID == "" || (created.State != "ready" && created.State != "pending") {
		t.Fatalf("create_bot = %+v", created)
	}
	d.refused(c, "create_bot", map[string]any{"name": "day", "account": map[string]any{"kind": "paper", "name": "paper"}}, "INVALID_PARAMETER")
	d.scopeRefused(readTok.tok.AccessToken, "create_bot", map[string]any{"name": "nope", "account": map[string]any{"kind": "paper", "name": "paper"}}, auth.ScopePaper)

	var bot registry.Bot
	d.pollTool(c, "get_bot shows the new bot", "get_bot", map[string]any{"botId": botID}, func(text string, isErr bool) error {
		if isErr {
			return fmt.Errorf("%s", text)
		}
		return json.Unmarshal([]byte(text), &bot)
	})
	d.ok(c, "get_bot", map[string]any{"botId": botID}, &bot)
	if bot.Name != "day" || bot.Symbol != "BTC/USDT" || bot.Account.Kind != "paper" || bot.Availability != "active" {
		t.Fatalf("get_bot = %+v", bot)
	}
	d.sameAsMissing(c, "get_bot", "botId", otherBot, nil)
	var bots struct {
		Bots []registry.Bot `json:"bots"`
	}
	d.ok(c, "list_bots", nil, &bots)
	if len(bots.Bots) != 1 || bots.Bots[0].ID != botID {
		t.Fatalf("list_bots = %+v", bots)
	}
	d.refused(c, "list_bots", map[string]any{"limit": 0}, "INVALID_PARAMETER")

	// update_bot: the spec changes on the API server and the projection follows.
	d.ok(c, "update_bot", map[string]any{"botId": botID, "positionSize": "0.03"}, nil)
	d.refused(c, "update_bot", map[string]any{"botId": botID, "leverage": "many"}, "INVALID_PARAMETER")
	d.pollTool(c, "the update projected", "get_bot", map[string]any{"botId": botID}, func(text string, _ bool) error {
		if !strings.Contains(text, `"positionSize":"0.03"`) {
			return fmt.Errorf("%s", text)
		}
		return nil
	})

	// A GitOps bot of the same user: readable, pausable, never changed here.
	gitops := &tradingv1.SignalBot{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "from-git"},
		Spec: tradingv1.SignalBotSpec{Owner: u.Email, Symbol: "ETH/USDT", PaperAccountRef: &tradingv1.LocalObjectReference{Name: "paper"}}}
	if err := k8s.Create(ctx, gitops); err != nil {
		t.Fatal(err)
	}
	var gitopsID string
	testkit.Eventually(t, 10*time.Second, "GitOps bot ready", func() error {
		b := &tradingv1.SignalBot{}
		if err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(gitops), b); err != nil {
			return err
		}
		if r := meta.FindStatusCondition(b.Status.Conditions, tradingv1.ConditionReady); r == nil || r.Status != metav1.ConditionTrue {
			return fmt.Errorf("ready = %+v", r)
		}
		gitopsID = string(b.UID)
		return nil
	})
	d.refused(c, "update_bot", map[string]any{"botId": gitopsID, "positionSize": "0.05"}, "MANAGED_BY_GITOPS")
	d.refused(c, "delete_bot", map[string]any{"botId": gitopsID, "confirm": true}, "MANAGED_BY_GITOPS")
	d.refused(c, "regenerate_webhook", map[string]any{"botId": gitopsID}, "MANAGED_BY_GITOPS")
	var pause struct {
		Paused bool   `json:"paused"`
		Reason string `json:"reason"`
	}
	d.ok(c, "pause_bot", map[string]any{"botId": gitopsID}, &pause)
	if !pause.Paused || pause.Reason != "Manual" {
		t.Fatalf("pause_bot on the GitOps bot = %+v", pause)
	}
	d.ok(c, "resume_bot", map[string]any{"botId": gitopsID}, &pause)
	if pause.Paused {
		t.Fatalf("resume_bot on the GitOps bot = %+v", pause)
	}

	// pause_bot / resume_bot on the new bot: the registry's pause refuses send_signal.
	d.ok(c, "pause_bot", map[string]any{"botId": botID}, &pause)
	// The registry's runtime pause is the bot's state at once.
	d.ok(c, "get_bot", map[string]any{"botId": botID}, &bot)
	if bot.Availability != "paused" || bot.PausedReason != "Manual" {
		t.Fatalf("get_bot after pause_bot = %+v", bot)
	}
	d.refused(c, "send_signal", map[string]any{"botId": botID, "action": "buy", "wait": true}, "BOT_PAUSED")
	d.refused(c, "pause_bot", map[string]any{"botId": otherBot}, "NOT_FOUND")
	d.ok(c, "resume_bot", map[string]any{"botId": botID}, &pause)
	d.ok(c, "get_bot", map[string]any{"botId": botID}, &bot)
	if pause.Paused || bot.Availability != "active" {
		t.Fatalf("resume_bot = %+v, get_bot %+v", pause, bot)
	}
	d.refused(c, "resume_bot", map[string]any{"botId": otherBot}, "NOT_FOUND")
	d.scopeRefused(readTok.tok.AccessToken, "pause_bot", map[string]any{"botId": botID}, auth.ScopePaper)
	d.scopeRefused(readTok.tok.AccessToken, "resume_bot", map[string]any{"botId": botID}, auth.ScopePaper)

	// The webhook URL, regenerated: the old one is refused by webhookd.
	var hook struct {
		WebhookURL string `json:"webhookUrl"`
	}
	d.ok(c, "get_webhook_url", map[string]any{"botId": botID}, &hook)
	oldPath := strings.TrimPrefix(hook.WebhookURL, "https://sigops.test")
	if oldPath == hook.WebhookURL {
		t.Fatalf("webhook URL %q", hook.WebhookURL)
	}
	d.scopeRefused(readTok.tok.AccessToken, "get_webhook_url", map[string]any{"botId": botID}, auth.ScopePaper)
	d.refused(c, "get_webhook_url", map[string]any{"botId": otherBot}, "NOT_FOUND")
	d.ok(c, "regenerate_webhook", map[string]any{"botId": botID}, nil)
	d.pollTool(c, "a new webhook URL", "get_webhook_url", map[string]any{"botId": botID}, func(text string, isErr bool) error {
		if isErr || strings.Contains(text, oldPath) {
			return fmt.Errorf("%s", text)
		}
		return json.Unmarshal([]byte(text), &hook)
	})
	testkit.Eventually(t, 10*time.Second, "the old URL refused", func() error {
		if r := send(t, oldPath, `{"action":"buy"}`); r.Status != http.StatusUnauthorized || r.Body.Code != "INVALID_WEBHOOK" {
			return fmt.Errorf("%+v", r)
		}
		return nil
	})

	// send_signal with wait, twice with one idempotencyKey: one order. 0.02 BTC at 60,000 =
	// 1,200 + fee 0.1 % 1.2; balance 10,000 − 1,201.2 = 8,798.8.
	pin(t, "BTC/USDT", "60000")
	buy := map[string]any{"botId": botID, "action": "buy", "size": "0.02", "wait": true, "idempotencyKey": "day-buy-1"}
	var sent, again struct {
		Success  bool          `json:"success"`
		Message  string        `json:"message"`
		SignalID string        `json:"signalId"`
		Order    *result.Order `json:"order"`
	}
	d.ok(c, "send_signal", buy, &sent)
	if !sent.Success || sent.Order == nil {
		t.Fatalf("send_signal = %+v", sent)
	}
	mustEqual(t, "filled", sent.Order.FilledAmount.Decimal, "0.02")
	mustEqual(t, "avgPrice", sent.Order.AvgPrice.Decimal, "60000")
	mustEqual(t, "fee", sent.Order.Fee.Decimal, "1.2")
	d.ok(c, "send_signal", buy, &again)
	if again.SignalID != sent.SignalID || !again.Success {
		t.Fatalf("the same idempotencyKey answered signal %s, first %s", again.SignalID, sent.SignalID)
	}
	mustEqual(t, "balance", decimal.RequireFromString(balance(t, botID)), "8798.8")
	d.refused(c, "send_signal", map[string]any{"botId": botID, "action": "buy", "symbol": "NOPE/USDT"}, "INVALID_SYMBOL")
	d.refused(c, "send_signal", map[string]any{"botId": botID, "action": "buy", "size": "-1"}, "INVALID_AMOUNT")
	d.sameAsMissing(c, "send_signal", "botId", otherBot, map[string]any{"action": "buy"})
	d.scopeRefused(readTok.tok.AccessToken, "send_signal", map[string]any{"botId": botID, "action": "buy"}, auth.ScopePaper)

	// The reads at 61,000: the long of 0.02 from 60,000 is up 0.02 × 1,000 = 20 on the
	// 1,200 margin: 1.666…% → 1.67.
	pin(t, "BTC/USDT", "61000")
	var ps struct {
		Positions []position.View `json:"positions"`
	}
	d.ok(c, "list_positions", map[string]any{"botId": botID}, &ps)
	if len(ps.Positions) != 1 {
		t.Fatalf("list_positions = %+v", ps)
	}
	var p position.View
	d.ok(c, "get_position", map[string]any{"botId": botID, "symbol": "BTC/USDT"}, &p)
	for _, v := range []position.View{ps.Positions[0], p} {
		mustEqual(t, "size", v.Size.Decimal, "0.02")
		mustEqual(t, "entry", v.EntryPrice.Decimal, "60000")
		mustEqual(t, "current", v.CurrentPrice.Decimal, "61000")
		mustEqual(t, "pnl", v.Pnl.Decimal, "20")
		mustEqual(t, "pnlPercent", v.PnlPercent.Decimal, "1.67")
	}
	d.sameAsMissing(c, "list_positions", "botId", otherBot, nil)
	d.refused(c, "get_position", map[string]any{"botId": botID, "symbol": "ETH/USDT"}, "POSITION_NOT_FOUND")
	d.refused(c, "get_position", map[string]any{"botId": otherBot, "symbol": "BTC/USDT"}, "NOT_FOUND")

	var orders struct {
		Orders []position.OrderRecord `json:"orders"`
	}
	d.ok(c, "list_orders", map[string]any{"botId": botID}, &orders)
	if len(orders.Orders) != 1 || orders.Orders[0].Status != "filled" || orders.Orders[0].SignalID != sent.SignalID {
		t.Fatalf("list_orders after two sends with one key = %+v", orders)
	}
	first := orders.Orders[0]
	mustEqual(t, "order avgPrice", first.AvgPrice.Decimal, "60000")
	mustEqual(t, "order fee", first.Fee.Decimal, "1.2")
	d.refused(c, "list_orders", map[string]any{"botId": botID, "status": "bogus"}, "INVALID_PARAMETER")
	var got position.OrderRecord
	d.ok(c, "get_order", map[string]any{"botId": botID, "clientOrderId": first.ClientOrderID}, &got)
	mustEqual(t, "get_order filled", got.FilledAmount.Decimal, "0.02")
	d.refused(c, "get_order", map[string]any{"botId": botID, "clientOrderId": "no-such-order"}, "NOT_FOUND")
	// Another user's order, by their bot and its real client order ID: missing.
	d.sameAsMissing(c, "get_order", "botId", otherBot, map[string]any{"clientOrderId": order.ClientOrderID(otherSignal.Body.SignalID, "")})
	var open struct {
		Orders []position.OrderRecord `json:"orders"`
	}
	d.ok(c, "list_open_orders", map[string]any{"botId": botID}, &open)
	if len(open.Orders) != 0 {
		t.Fatalf("a paper order is open: %+v", open)
	}
	d.refused(c, "list_open_orders", map[string]any{"botId": otherBot}, "NOT_FOUND")
	var sig result.Result
	d.ok(c, "get_signal", map[string]any{"signalId": sent.SignalID}, &sig)
	if !sig.Success || sig.BotID != botID || sig.Order == nil {
		t.Fatalf("get_signal = %+v", sig)
	}
	d.sameAsMissing(c, "get_signal", "signalId", otherSignal.Body.SignalID, nil)
	var sigs struct {
		Signals []struct {
			SignalID string `json:"signalId"`
			Success  bool   `json:"success"`
		} `json:"signals"`
	}
	d.ok(c, "list_signals", map[string]any{"botId": botID}, &sigs)
	if len(sigs.Signals) != 1 || sigs.Signals[0].SignalID != sent.SignalID || !sigs.Signals[0].Success {
		t.Fatalf("list_signals = %+v", sigs)
	}
	d.refused(c, "list_signals", map[string]any{"botId": otherBot}, "NOT_FOUND")

	// place_order adds 0.01 at 61,000 to the long: 610 + fee 0.61; balance 8,798.8 −
	// 610.61 = 8,188.19; the position is 0.03 at (1,200 + 610) / 0.03 = 60,333.33….
	var placed, placedAgain struct {
		SignalID string         `json:"signalId"`
		Repeat   bool           `json:"repeat"`
		Result   *result.Result `json:"result"`
	}
	place := map[string]any{"botId": botID, "side": "buy", "type": "market", "amount": 0.01, "idempotencyKey": "day-place-1"}
	d.ok(c, "place_order", place, &placed)
	mustEqual(t, "place fee", placed.Result.Order.Fee.Decimal, "0.61")
	d.ok(c, "place_order", place, &placedAgain)
	if !placedAgain.Repeat || placedAgain.SignalID != placed.SignalID {
		t.Fatalf("place_order with the same key = %+v, first %+v", placedAgain, placed)
	}
	mustEqual(t, "balance after place_order", decimal.RequireFromString(balance(t, botID)), "8188.19")
	d.refused(c, "place_order", map[string]any{"botId": botID, "side": "buy", "type": "market", "amount": -1}, "INVALID_AMOUNT")
	d.scopeRefused(readTok.tok.AccessToken, "place_order", map[string]any{"botId": botID, "side": "buy", "type": "market"}, auth.ScopePaper)

	// Exits on the protecting and profitable sides of 61,000.
	d.ok(c, "set_stop_loss", map[string]any{"botId": botID, "symbol": "BTC/USDT", "price": 55000}, nil)
	d.ok(c, "set_take_profit", map[string]any{"botId": botID, "symbol": "BTC/USDT", "price": 70000}, nil)
	d.ok(c, "get_position", map[string]any{"botId": botID, "symbol": "BTC/USDT"}, &p)
	if p.StopLoss == nil || p.TakeProfit == nil {
		t.Fatalf("exits not set: %+v", p)
	}
	mustEqual(t, "stopLoss", (*p.StopLoss).Decimal, "55000")
	mustEqual(t, "takeProfit", (*p.TakeProfit).Decimal, "70000")
	mustEqual(t, "size after place_order", p.Size.Decimal, "0.03")
	d.refused(c, "set_stop_loss", map[string]any{"botId": botID, "symbol": "BTC/USDT", "price": 65000}, "INVALID_PRICE")
	d.refused(c, "set_take_profit", map[string]any{"botId": botID, "symbol": "BTC/USDT", "price": 50000}, "INVALID_PRICE")

	// close_position 50 % at 61,000: 0.015 sold for 915 − fee 0.915; balance 8,188.19 +
	// 914.085 = 9,102.275. The trade: 915 − half the 1,810 cost = 10 gross; fees half the
	// entry fees (1.81 / 2 = 0.905) + 0.915 = 1.82; net 8.18.
	d.ok(c, "close_position", map[string]any{"botId": botID, "symbol": "BTC/USDT", "percent": 50}, nil)
	mustEqual(t, "balance after the half close", decimal.RequireFromString(balance(t, botID)), "9102.275")
	d.refused(c, "close_position", map[string]any{"botId": botID, "symbol": "BTC/USDT", "percent": 150}, "INVALID_AMOUNT")

	// close_all_positions at 62,000: 0.015 for 930 − fee 0.93; balance 10,031.345. The
	// trade: 930 − 905 = 25 gross; fees 0.905 + 0.93 = 1.835; net 23.165.
	pin(t, "BTC/USDT", "62000")
	d.ok(c, "close_all_positions", map[string]any{"botId": botID}, nil)
	mustEqual(t, "balance after closing all", decimal.RequireFromString(balance(t, botID)), "10031.345")
	d.refused(c, "close_all_positions", map[string]any{"botId": botID}, "POSITION_NOT_FOUND")
	var trades struct {
		Trades []position.Trade `json:"trades"`
	}
	d.ok(c, "list_trades", map[string]any{"botId": botID}, &trades)
	if len(trades.Trades) != 2 {
		t.Fatalf("list_trades = %+v", trades)
	}
	for i, want := range [][3]string{{"10", "1.82", "8.18"}, {"25", "1.835", "23.165"}} {
		mustEqual(t, fmt.Sprint("trade ", i, " pnl"), trades.Trades[i].Pnl.Decimal, want[0])
		mustEqual(t, fmt.Sprint("trade ", i, " fees"), trades.Trades[i].Fees.Decimal, want[1])
		mustEqual(t, fmt.Sprint("trade ", i, " net"), trades.Trades[i].NetPnl.Decimal, want[2])
	}
	d.refused(c, "list_trades", map[string]any{"botId": otherBot}, "NOT_FOUND")

	// cancel_order on a paper bot: its orders are filled, never open.
	d.refused(c, "cancel_order", map[string]any{"botId": botID, "orderId": first.ClientOrderID}, "INVALID_ACTION")

	// Accounts and balances: the paper account after the day holds 10,031.345 USDT.
	var accounts struct {
		Accounts []struct {
			ID           string              `json:"id"`
			Name         string              `json:"name"`
			Balances     []portfolio.Balance `json:"balances"`
			RealisedPnl  *decimal.Decimal    `json:"realisedPnl"`
			LastRefillAt *time.Time          `json:"lastRefillAt"`
		} `json:"accounts"`
	}
	d.ok(c, "list_paper_accounts", nil, &accounts)
	if len(accounts.Accounts) != 1 || accounts.Accounts[0].Name != "paper" {
		t.Fatalf("list_paper_accounts = %+v", accounts)
	}
	accountID := accounts.Accounts[0].ID
	d.refused(c, "list_paper_accounts", map[string]any{"cursor": "not-a-cursor"}, "INVALID_PARAMETER")
	var acct struct {
		ID       string              `json:"id"`
		Balances []portfolio.Balance `json:"balances"`
	}
	d.ok(c, "get_paper_account", map[string]any{"accountId": accountID}, &acct)
	if len(acct.Balances) != 1 {
		t.Fatalf("get_paper_account = %+v", acct)
	}
	mustEqual(t, "paper USDT", acct.Balances[0].Total.Decimal, "10031.345")
	d.sameAsMissing(c, "get_paper_account", "accountId", otherAccount, nil)
	var bal struct {
		Accounts []struct {
			ID       string              `json:"id"`
			Balances []portfolio.Balance `json:"balances"`
		} `json:"accounts"`
	}
	d.ok(c, "get_balances", map[string]any{"botId": botID}, &bal)
	if len(bal.Accounts) != 1 || bal.Accounts[0].ID != accountID || len(bal.Accounts[0].Balances) != 1 {
		t.Fatalf("get_balances = %+v", bal)
	}
	mustEqual(t, "get_balances USDT", (bal.Accounts[0].Balances[0].Free).Decimal, "10031.345")
	d.refused(c, "get_balances", map[string]any{"accountId": accountID, "botId": botID}, "INVALID_PARAMETER")
	var pf portfolio.Portfolio
	d.ok(c, "get_portfolio", nil, &pf)
	if len(pf.Accounts) != 1 || pf.Accounts[0].ID != accountID || len(pf.Accounts[0].Positions) != 0 {
		t.Fatalf("get_portfolio = %+v", pf)
	}
	mustEqual(t, "portfolio equity", pf.Totals.Equity.Decimal, "10031.345")
	mustEqual(t, "portfolio realised", pf.Totals.RealisedPnl.Decimal, "31.345")
	d.scopeRefused(readTok.tok.AccessToken, "refill_paper_account", map[string]any{"accountId": accountID}, auth.ScopePaper)
	var refill struct {
		Balance decimal.Decimal `json:"balance"`
	}
	d.ok(c, "refill_paper_account", map[string]any{"accountId": accountID}, &refill)
	mustEqual(t, "refilled balance", refill.Balance, "10000")
	var refilled struct {
		Balances     []portfolio.Balance `json:"balances"`
		RealisedPnl  decimal.Decimal     `json:"realisedPnl"`
		LastRefillAt time.Time           `json:"lastRefillAt"`
		NextRefillAt time.Time           `json:"nextRefillAt"`
	}
	d.ok(c, "get_paper_account", map[string]any{"accountId": accountID}, &refilled)
	mustEqual(t, "balance after the refill", refilled.Balances[0].Total.Decimal, "10000")
	mustEqual(t, "realised P&L after the refill", refilled.RealisedPnl, "31.345")
	if !refilled.NextRefillAt.Equal(refilled.LastRefillAt.Add(24 * time.Hour)) {
		t.Fatalf("refill times %+v", refilled)
	}
	d.refused(c, "refill_paper_account", map[string]any{"accountId": accountID}, "RATE_LIMITED")
	d.refused(c, "refill_paper_account", map[string]any{"accountId": otherAccount}, "NOT_FOUND")
	// get_portfolio takes no argument and any scope reads it: its refusal is the bearer's.
	d.unauthenticated("get_portfolio")

	// Market data on the paper catalogue and the simulated market.
	var candles struct {
		Candles []json.RawMessage `json:"candles"`
	}
	d.ok(c, "get_candles", map[string]any{"exchangeId": "paper", "symbol": "BTC/USDT", "timeframe": "1h", "limit": 5}, &candles)
	if len(candles.Candles) != 5 {
		t.Fatalf("get_candles: %d candles, want 5", len(candles.Candles))
	}
	d.refused(c, "get_candles", map[string]any{"exchangeId": "paper", "symbol": "NOPE/USDT", "timeframe": "1h"}, "INVALID_SYMBOL")
	var ticker struct {
		Price decimal.Decimal `json:"price"`
	}
	d.ok(c, "get_ticker", map[string]any{"symbol": "BTC/USDT"}, &ticker)
	mustEqual(t, "ticker", ticker.Price, "62000")
	d.refused(c, "get_ticker", map[string]any{"symbol": "NOPE/USDT"}, "INVALID_SYMBOL")
	var syms struct {
		Symbols []string `json:"symbols"`
	}
	d.ok(c, "list_symbols", map[string]any{"exchangeId": "paper", "query": "btc"}, &syms)
	if !slices.Contains(syms.Symbols, "BTC/USDT") {
		t.Fatalf("list_symbols = %+v", syms)
	}
	d.refused(c, "list_symbols", map[string]any{"market": "options"}, "INVALID_PARAMETER")
	var info struct {
		StepSize decimal.Decimal `json:"stepSize"`
	}
	d.ok(c, "get_symbol_info", map[string]any{"symbol": "BTC/USDT"}, &info)
	mustEqual(t, "BTC step", info.StepSize, "0.00001")
	d.refused(c, "get_symbol_info", map[string]any{"symbol": "NOPE/USDT"}, "INVALID_SYMBOL")

	// Analytics and risk over the day's two trades.
	// Two winning trades, net 8.18 + 23.165 = 31.345 on the 10,000 starting equity:
	// 0.31345 %; the average win 31.345 / 2 = 15.6725.
	var an struct {
		Metrics struct {
			TotalTrades     int             `json:"totalTrades"`
			WinningTrades   int             `json:"winningTrades"`
			TotalPnL        decimal.Decimal `json:"totalPnL"`
			TotalPnLPercent decimal.Decimal `json:"totalPnLPercent"`
			AvgWin          decimal.Decimal `json:"avgWin"`
		} `json:"metrics"`
	}
	d.ok(c, "get_bot_analytics", map[string]any{"botId": botID, "period": "7d"}, &an)
	if an.Metrics.TotalTrades != 2 || an.Metrics.WinningTrades != 2 {
		t.Fatalf("get_bot_analytics = %+v", an)
	}
	mustEqual(t, "analytics totalPnL", an.Metrics.TotalPnL, "31.345")
	mustEqual(t, "analytics totalPnLPercent", an.Metrics.TotalPnLPercent, "0.31345")
	mustEqual(t, "analytics avgWin", an.Metrics.AvgWin, "15.6725")
	d.refused(c, "get_bot_analytics", map[string]any{"botId": botID, "period": "fortnight"}, "INVALID_PARAMETER")
	var rm risk.BotMetrics
	d.ok(c, "get_bot_risk", map[string]any{"botId": botID}, &rm)
	// Nothing open and no loss: every ratio 0, the lowest score.
	mustEqual(t, "exposure", rm.CurrentExposure.Decimal, "0")
	if rm.BotID != botID || rm.RiskScore != 1 || rm.RiskLevel != "low" {
		t.Fatalf("get_bot_risk = %+v", rm)
	}
	d.refused(c, "get_bot_risk", map[string]any{"botId": otherBot}, "NOT_FOUND")

	// Exchange connections: one on the fake Binance, validated by the manager.
	fake := binancefake.New()
	defer fake.Close()
	fake.SetPrice("BTCUSDT", "65000")
	fake.SetSpotBalance("USDT", "10000")
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "binance-key"},
		StringData: map[string]string{"apiKey": binancefake.APIKey, "apiSecret": binancefake.APISecret}}
	conn := &tradingv1.ExchangeConnection{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "binance"},
		Spec: tradingv1.ExchangeConnectionSpec{Owner: u.Email, Exchange: tradingv1.ExchangeBinance,
			CredentialsSecretRef: tradingv1.LocalObjectReference{Name: "binance-key"},
			Endpoints:            tradingv1.EndpointsSpec{Spot: fake.URL(), Futures: fake.URL()}}}
	for _, o := range []ctrlclient.Object{secret, conn} {
		if err := k8s.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	testkit.Eventually(t, 10*time.Second, "connection validated", func() error {
		got := &tradingv1.ExchangeConnection{}
		if err := k8s.Get(ctx, ctrlclient.ObjectKeyFromObject(conn), got); err != nil {
			return err
		}
		if r := meta.FindStatusCondition(got.Status.Conditions, tradingv1.ConditionReady); r == nil || r.Status != metav1.ConditionTrue {
			return fmt.Errorf("ready = %+v", r)
		}
		return nil
	})
	var conns struct {
		Connections []struct {
			ID       string `json:"id"`
			Exchange string `json:"exchange"`
			Status   string `json:"status"`
		} `json:"connections"`
	}
	d.ok(c, "list_exchange_connections", nil, &conns)
	if len(conns.Connections) != 1 || conns.Connections[0].Exchange != "binance" || conns.Connections[0].Status != "ready" {
		t.Fatalf("list_exchange_connections = %+v", conns)
	}
	if strings.Contains(fmt.Sprint(conns), binancefake.APISecret) {
		t.Fatal("a credential in list_exchange_connections")
	}
	connID := conns.Connections[0].ID
	d.refused(c, "list_exchange_connections", map[string]any{"limit": 1000}, "INVALID_PARAMETER")
	d.ok(c, "get_exchange_connection", map[string]any{"connectionId": connID}, nil)
	d.refused(c, "get_exchange_connection", map[string]any{"connectionId": "no-such-connection"}, "NOT_FOUND")

	// A live bot on it: a resting limit order is open on the exchange and cancel_order
	// cancels it. An mcp:paper token may not act on it.
	var liveBot struct {
		ID string `json:"id"`
	}
	d.scopeRefused(paperTok.tok.AccessToken, "create_bot", map[string]any{"name": "live",
		"account": map[string]any{"kind": "exchange", "name": "binance"}}, auth.ScopeLive)
	d.ok(c, "create_bot", map[string]any{"name": "live", "account": map[string]any{"kind": "exchange", "name": "binance"},
		"symbol": "BTC/USDT"}, &liveBot)
	d.pollTool(c, "the live bot projected", "get_bot", map[string]any{"botId": liveBot.ID}, func(text string, isErr bool) error {
		if isErr {
			return fmt.Errorf("%s", text)
		}
		return nil
	})
	d.scopeRefused(paperTok.tok.AccessToken, "place_order", map[string]any{"botId": liveBot.ID, "side": "buy", "type": "limit",
		"amount": 0.01, "price": 50000}, auth.ScopeLive)
	var rest struct {
		SignalID string         `json:"signalId"`
		Status   string         `json:"status"`
		Result   *result.Result `json:"result"`
	}
	d.ok(c, "place_order", map[string]any{"botId": liveBot.ID, "side": "buy", "type": "limit", "amount": 0.01, "price": 50000}, &rest)
	d.ok(c, "list_open_orders", nil, &open)
	if len(open.Orders) != 1 || open.Orders[0].BotID != liveBot.ID || open.Orders[0].Status != "open" {
		t.Fatalf("list_open_orders = %+v", open)
	}
	d.ok(c, "cancel_order", map[string]any{"botId": liveBot.ID, "orderId": open.Orders[0].ClientOrderID}, nil)
	d.ok(c, "get_order", map[string]any{"botId": liveBot.ID, "clientOrderId": open.Orders[0].ClientOrderID}, &got)
	if got.Status != "cancelled" {
		t.Fatalf("cancelled order = %+v", got)
	}
	d.refused(c, "cancel_order", map[string]any{"botId": otherBot, "orderId": open.Orders[0].ClientOrderID}, "NOT_FOUND")
	// The connection's balances are read from the exchange: the cancelled buy holds nothing.
	d.ok(c, "get_balances", map[string]any{"accountId": connID}, &bal)
	if len(bal.Accounts) != 1 || bal.Accounts[0].ID != connID {
		t.Fatalf("get_balances of the connection = %+v", bal)
	}
	usdt := slices.IndexFunc(bal.Accounts[0].Balances, func(b portfolio.Balance) bool { return b.Asset == "USDT" })
	if usdt < 0 {
		t.Fatalf("no USDT on the connection: %+v", bal)
	}
	mustEqual(t, "exchange USDT", (bal.Accounts[0].Balances[usdt].Total).Decimal, "10000")
	d.ok(c, "delete_bot", map[string]any{"botId": liveBot.ID, "confirm": true}, nil)

	// The Strategy Lab: the estimate is free and needs mcp:read; the job needs mcp:live and
	// the wallet: 2 experiments × 0.50 = 1.00 USD.
	var est lab.Outcome
	d.ok(c, "generate_strategy", strategyArgs(2, false), &est)
	if est.Estimate == nil || est.Job != nil {
		t.Fatalf("estimate = %+v", est)
	}
	mustEqual(t, "estimate", est.Estimate.TotalCostUsd.Decimal, "1")
	d.refused(c, "generate_strategy", strategyArgs(2, true), "INSUFFICIENT_BALANCE")
	if _, err := users.Wallets.Credit(ctx, u.ID, decimal.RequireFromString("1.5")); err != nil {
		t.Fatal(err)
	}
	d.scopeRefused(paperTok.tok.AccessToken, "generate_strategy", strategyArgs(2, true), auth.ScopeLive)
	var job lab.Outcome
	d.ok(c, "generate_strategy", strategyArgs(2, true), &job)
	if job.Job == nil {
		t.Fatalf("generate_strategy = %+v", job)
	}
	mustEqual(t, "job cost", job.Job.CostUsd.Decimal, "1")
	// The wallet: 1.50 credited − 1.00 charged = 0.50.
	var wallet struct {
		Balance decimal.Decimal `json:"strategyLabBalanceUsd"`
	}
	d.ok(c, "check_auth", nil, &wallet)
	mustEqual(t, "Strategy Lab wallet", wallet.Balance, "0.5")
	d.refused(c, "generate_strategy", strategyArgs(31, false), "INVALID_PARAMETER")
	var gotJob lab.Job
	d.ok(c, "get_strategy_job", map[string]any{"jobId": job.Job.ID}, &gotJob)
	if gotJob.ID != job.Job.ID || gotJob.Experiments != 2 {
		t.Fatalf("get_strategy_job = %+v", gotJob)
	}
	d.sameAsMissing(c, "get_strategy_job", "jobId", otherJob.Job.ID, nil)
	var jobs struct {
		Jobs []lab.Job `json:"jobs"`
	}
	d.ok(c, "list_strategy_jobs", nil, &jobs)
	if len(jobs.Jobs) != 1 || jobs.Jobs[0].ID != job.Job.ID {
		t.Fatalf("list_strategy_jobs = %+v", jobs)
	}
	d.refused(c, "list_strategy_jobs", map[string]any{"limit": 101}, "INVALID_PARAMETER")

	// delete_bot: confirm is required; then the bot is gone.
	d.refused(c, "delete_bot", map[string]any{"botId": botID, "confirm": false}, "INVALID_PARAMETER")
	d.ok(c, "delete_bot", map[string]any{"botId": botID, "confirm": true}, nil)
	d.pollTool(c, "the bot gone", "get_bot", map[string]any{"botId": botID}, func(text string, isErr bool) error {
		if !isErr || !strings.Contains(text, `"NOT_FOUND"`) {
			return fmt.Errorf("%s", text)
		}
		return nil
	})
	d.refused(c, "regenerate_webhook", map[string]any{"botId": botID}, "NOT_FOUND")

	// Coverage: every tool tools/list serves, answered and refused.
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var names, gaps []string
	for _, tool := range tools.Tools {
		if strings.HasPrefix(tool.Name, "e2e_") {
			continue
		}
		names = append(names, tool.Name)
		if !cov.ok[tool.Name] {
			gaps = append(gaps, tool.Name+" (no success)")
		}
		if !cov.refused[tool.Name] {
			gaps = append(gaps, tool.Name+" (no refusal)")
		}
	}
	if len(names) != 45 || len(gaps) > 0 {
		t.Errorf("%d tools listed; not covered: %s", len(names), strings.Join(gaps, ", "))
	}

	// The audit journal: the changing calls with their outcomes, no bearer token.
	resp, err := authdTS.Client().Do(func() *http.Request {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, authdTS.URL+"/api/user/audit?limit=100", nil)
		req.Header.Set("Authorization", "Bearer "+apiLogin(t, u))
		return req
	}())
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var journal struct {
		Entries []struct {
			Tool      string          `json:"tool"`
			ClientID  string          `json:"clientId"`
			Arguments json.RawMessage `json:"arguments"`
			OK        bool            `json:"ok"`
			Code      string          `json:"code"`
		} `json:"entries"`
	}
	raw := new(strings.Builder)
	if err := json.NewDecoder(resp.Body).Decode(&journal); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("audit: %d %v", resp.StatusCode, err)
	}
	seen := map[string]bool{}
	for _, e := range journal.Entries {
		raw.Write(e.Arguments)
		key := e.Tool + "/" + map[bool]string{true: "ok", false: e.Code}[e.OK]
		seen[key] = true
		if e.ClientID != live.cfg.ClientID && e.ClientID != paperTok.cfg.ClientID {
			t.Errorf("audit entry %s by client %q", e.Tool, e.ClientID)
		}
	}
	for _, want := range []string{"create_bot/ok", "create_bot/INVALID_PARAMETER", "update_bot/MANAGED_BY_GITOPS", "send_signal/ok",
		"send_signal/BOT_PAUSED", "place_order/ok", "close_position/ok", "cancel_order/ok", "refill_paper_account/ok",
		"refill_paper_account/RATE_LIMITED", "generate_strategy/ok", "delete_bot/ok", "pause_bot/ok", "regenerate_webhook/ok"} {
		if !seen[want] {
			t.Errorf("audit journal lacks %s", want)
		}
	}
	for _, tok := range []string{live.tok.AccessToken, paperTok.tok.AccessToken, readTok.tok.AccessToken} {
		if strings.Contains(raw.String(), tok) {
			t.Error("a bearer token in the audit journal's arguments")
		}
	}
	if !strings.Contains(raw.String(), `"idempotencyKey":"day-buy-1"`) {
		t.Errorf("send_signal's arguments not recorded: %s", raw)
	}
}
