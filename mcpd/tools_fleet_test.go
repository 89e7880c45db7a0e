package mcpd_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	"github.com/shopspring/decimal"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crclient "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/mcpd"
	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/test/testenv"
)

// The bot action tools change SignalBots through a real API server (test/testenv's control
// plane, started once on first use, with the CRDs and their validation). No controller
// runs here: a test projects a bot into Redis itself, as the controller would, so what the
// tools answer before and after a projection is decided by the test.
var (
	k8sOnce sync.Once
	k8sEnv  *testenv.Env
	k8sCli  crclient.Client
	k8sErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if k8sEnv != nil {
		_ = k8sEnv.Stop()
	}
	os.Exit(code)
}

func kube(t *testing.T) crclient.Client {
	t.Helper()
	k8sOnce.Do(func() {
		if k8sEnv, k8sErr = testenv.Start(); k8sErr == nil {
			k8sCli, k8sErr = k8sEnv.Client()
		}
	})
	if k8sErr != nil {
		t.Fatalf("control plane: %v", k8sErr)
	}
	return k8sCli
}

// fleetFixture is the bot fixture with Options.Fleet on the control plane.
type fleetFixture struct {
	*botFixture
	k8s     crclient.Client
	journal *audit.Journal
}

func newFleetFixture(t *testing.T) *fleetFixture {
	t.Helper()
	k := kube(t)
	f := &fleetFixture{k8s: k}
	f.botFixture = newBotFixture(t, func(o *mcpd.Options) {
		o.Fleet = fleet.New(fleet.Options{Client: k, Redis: o.Redis, Now: o.Now})
	})
	f.journal = audit.New(f.rdb, audit.Options{Now: f.clk.Now})
	return f
}

// token is an OAuth token of u with scope, as an MCP client.
func (f *fleetFixture) token(t *testing.T, u auth.User, scope string) (string, *client.Client) {
	t.Helper()
	tok, _ := f.oauthToken(t, u, "agent-"+strings.ReplaceAll(scope, ":", "-"), scope, testResource)
	c, _ := mcpClient(t, tok.Token, "", f.ts)
	return tok.Token, c
}

// projectObject projects bot as the controller would: its UID is the ID, its owner and
// venue are the spec's.
func (f *fleetFixture) projectObject(t *testing.T, bot *tradingv1.SignalBot) registry.Bot {
	t.Helper()
	acc := registry.Account{Kind: registry.AccountPaper}
	if r := bot.Spec.PaperAccountRef; r != nil {
		acc.Name = r.Name
	}
	if r := bot.Spec.ExchangeConnectionRef; r != nil {
		acc = registry.Account{Kind: registry.AccountExchange, Name: r.Name}
	}
	b := registry.Bot{ID: string(bot.UID), Namespace: bot.Namespace, Name: bot.Name, Owner: "ada@example.com", Account: acc,
		Market: string(bot.Spec.Market), Symbol: bot.Spec.Symbol, PositionSize: bot.Spec.PositionSize, Leverage: bot.Spec.Leverage,
		Availability: "active", WebhookEnabled: true}
	if err := f.reg.Project(t.Context(), b, "hash-"+b.ID); err != nil {
		t.Fatal(err)
	}
	return b
}

// object reads the SignalBot behind a botChange answer.
func (f *fleetFixture) object(t *testing.T, ns, name string) *tradingv1.SignalBot {
	t.Helper()
	var bot tradingv1.SignalBot
	if err := f.k8s.Get(t.Context(), crclient.ObjectKey{Namespace: ns, Name: name}, &bot); err != nil {
		t.Fatal(err)
	}
	return &bot
}

type botChangeT struct {
	ID, Name, Namespace, State, Message string
	Spec                                tradingv1.SignalBotSpec
	Bot                                 *registry.Bot
}

type pauseT struct {
	BotID   string
	Paused  bool
	Reason  string
	Message string
}

// forbidden posts a tools/call of tool with args and wants the HTTP 403 naming scope.
func (f *fleetFixture) forbidden(t *testing.T, token, tool, args, scope string) {
	t.Helper()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"` + tool + `","arguments":` + args + `}}`
	res, b := post(t, f.ts, token, body)
	if res.StatusCode != http.StatusForbidden || !strings.Contains(res.Header.Get("WWW-Authenticate"), `error="insufficient_scope"`) ||
		!strings.Contains(res.Header.Get("WWW-Authenticate"), `scope="`+scope+`"`) {
		t.Fatalf("%s %s: %d %s %q, want 403 scope %s", tool, args, res.StatusCode, b, res.Header.Get("WWW-Authenticate"), scope)
	}
}

func TestCreateBot(t *testing.T) {
	f := newFleetFixture(t)
	paperTok, paper := f.token(t, f.adaUser, auth.ScopePaper)
	ns := fleet.NamespaceFor(f.adaUser.ID)

	// tools/list carries the settings schema whole (mcp-go refuses a tool with two schemas).
	list, err := paper.ListTools(t.Context(), mcp.ListToolsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var schema string
	for _, tool := range list.Tools {
		if tool.Name == "create_bot" {
			b, _ := json.Marshal(tool.InputSchema)
			schema = string(b)
		}
	}
	if !strings.Contains(schema, `"required":["name","account"]`) || !strings.Contains(schema, `"maxExposure"`) {
		t.Fatalf("create_bot input schema %s", schema)
	}

	// The controller's part, played by the test: project the bot once the API server has it,
	// so that create_bot answers it ready.
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 200 {
			var bot tradingv1.SignalBot
			if f.k8s.Get(t.Context(), crclient.ObjectKey{Namespace: ns, Name: "btc-swing"}, &bot) == nil {
				f.projectObject(t, &bot)
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	got := toolOK[botChangeT](t, paper, "create_bot", map[string]any{
		"name": "btc-swing", "account": map[string]any{"kind": "paper", "name": "main"}, "symbol": "BTC/USDT",
		"positionSize": "5%", "stopLoss": "2%", "risk": map[string]any{"maxExposure": "0.5", "dailyLossLimit": "250.50"},
		"dca": map[string]any{"enabled": true}})
	<-done
	if got.State != mcpd.StateReady || got.Bot == nil || got.Bot.ID != got.ID || got.Namespace != ns || got.Name != "btc-swing" {
		t.Fatalf("create: %+v", got)
	}
	// The spec as the API server stored it: the caller as owner, the CRD's defaults filled in
	// (market spot, leverage 1, dca.maxLevels 5, rate limit 60/min burst 10), the amounts as written.
	s := got.Spec
	if s.Owner != "ada@example.com" || s.PaperAccountRef == nil || s.PaperAccountRef.Name != "main" || s.ExchangeConnectionRef != nil ||
		s.Market != tradingv1.MarketSpot || s.Leverage != 1 || s.PositionSize != "5%" || s.StopLoss != "2%" ||
		s.Risk.MaxExposure != "0.5" || s.Risk.DailyLossLimit != "250.50" || !s.DCA.Enabled || s.DCA.MaxLevels != 5 ||
		s.RateLimit.PerMinute != 60 || s.RateLimit.Burst != 10 {
		t.Fatalf("spec %+v", s)
	}
	obj := f.object(t, ns, "btc-swing")
	if obj.Labels[fleet.LabelManagedBy] != fleet.ManagedBySigops || string(obj.UID) != got.ID {
		t.Fatalf("object labels %v uid %s", obj.Labels, obj.UID)
	}
	if b := toolOK[registry.Bot](t, paper, "get_bot", map[string]any{"botId": got.ID}); b.Name != "btc-swing" {
		t.Fatalf("get_bot after create: %+v", b)
	}

	// Nobody projects this one: after CreateWait it answers pending with the object's identity.
	pending := toolOK[botChangeT](t, paper, "create_bot", map[string]any{"name": "eth-later", "account": map[string]any{"kind": "paper", "name": "main"}})
	if pending.State != mcpd.StatePending || pending.Bot != nil || pending.ID == "" || pending.Namespace != ns || pending.Spec.PositionSize != "10%" {
		t.Fatalf("unprojected create: %+v", pending)
	}

	// Refusals: INVALID_PARAMETER naming the field, from the decoder, the schema or the API server.
	for _, c := range []struct {
		args map[string]any
		want string
	}{
		{map[string]any{"name": "x1", "account": map[string]any{"kind": "paper", "name": "main"}, "positionSize": "150%"},
			`spec.positionSize: Invalid value: \"150%\": a percentage must be above 0 and at most 100`},
		{map[string]any{"name": "x2", "account": map[string]any{"kind": "paper", "name": "main"}, "leverage": 3},
			"leverage above 1 needs market futures"},
		{map[string]any{"name": "x3", "account": map[string]any{"kind": "paper", "name": "main"}, "leverage": "high"},
			"leverage: must be integer, not string"},
		{map[string]any{"name": "x4", "account": map[string]any{"kind": "paper", "name": "main"}, "colour": "red"},
			"colour: not a parameter of create_bot"},
		{map[string]any{"name": "x5", "account": map[string]any{"kind": "margin", "name": "main"}}, "account.kind: paper or exchange"},
		{map[string]any{"name": "x6"}, "account: required"},
		{map[string]any{"name": "btc-swing", "account": map[string]any{"kind": "paper", "name": "main"}}, `name: a bot named \"btc-swing\" already exists`},
		{map[string]any{"name": "Bad_Name", "account": map[string]any{"kind": "paper", "name": "main"}}, "INVALID_PARAMETER"},
	} {
		text := toolErr(t, paper, "create_bot", c.args)
		if !strings.Contains(text, `"code":"INVALID_PARAMETER"`) || !strings.Contains(text, c.want) {
			t.Errorf("create %v: %s, want %s", c.args, text, c.want)
		}
	}
	// An exchange account needs mcp:live; mcp:read may create nothing.
	f.forbidden(t, paperTok, "create_bot", `{"name":"live1","account":{"kind":"exchange","name":"binance"}}`, auth.ScopeLive)
	readTok, _ := f.token(t, f.adaUser, auth.ScopeRead)
	f.forbidden(t, readTok, "create_bot", `{"name":"p1","account":{"kind":"paper","name":"main"}}`, auth.ScopePaper)

	// Every call that reached the tool is audited: 2 creates, 6 refusals (the wrong type and
	// the unknown key are refused by the argument check before the tool, like a scope).
	entries, _, err := f.journal.List(t.Context(), f.adaUser.ID, "", 50)
	if err != nil {
		t.Fatal(err)
	}
	okCount, failed := 0, 0
	for _, e := range entries {
		if e.Tool != "create_bot" {
			t.Fatalf("entry %+v", e)
		}
		if e.Outcome.OK {
			okCount++
		} else {
			failed++
		}
	}
	if okCount != 2 || failed != 6 {
		t.Fatalf("audit: %d ok, %d failed, want 2 and 6", okCount, failed)
	}

	// An app whose policy names chosen bots creates none.
	if err := apppolicy.NewPolicies(f.rdb, nil).Set(t.Context(), f.adaUser.ID, "agent-mcp-paper",
		apppolicy.Policy{Bots: []string{"some-bot"}, OrdersPerHour: 60}); err != nil {
		t.Fatal(err)
	}
	if text := toolErr(t, paper, "create_bot", map[string]any{"name": "x9", "account": map[string]any{"kind": "paper", "name": "main"}}); !strings.Contains(text, `"code":"POLICY_LIMIT"`) || !strings.Contains(text, `"limit":"bots"`) {
		t.Fatalf("create by an app limited to chosen bots: %s", text)
	}
}

// gitopsBot applies a bot of ada's without the managed-by label, as a repository would,
// and projects it.
func (f *fleetFixture) gitopsBot(t *testing.T, name string, exchange bool) registry.Bot {
	t.Helper()
	bot := &tradingv1.SignalBot{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name},
		Spec: tradingv1.SignalBotSpec{Owner: "ada@example.com", PaperAccountRef: &tradingv1.LocalObjectReference{Name: "main"}}}
	if exchange {
		bot.Spec.PaperAccountRef, bot.Spec.ExchangeConnectionRef = nil, &tradingv1.LocalObjectReference{Name: "binance"}
	}
	if err := f.k8s.Create(t.Context(), bot); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.k8s.Delete(t.Context(), bot) })
	return f.projectObject(t, bot)
}

func TestUpdateDeleteRegenerate(t *testing.T) {
	f := newFleetFixture(t)
	paperTok, paper := f.token(t, f.adaUser, auth.ScopePaper)
	created := toolOK[botChangeT](t, paper, "create_bot", map[string]any{"name": "managed", "account": map[string]any{"kind": "paper", "name": "main"}})
	f.projectObject(t, f.object(t, created.Namespace, "managed"))
	id := created.ID

	// update_bot: a merge patch of the named settings; the rest stays.
	up := toolOK[botChangeT](t, paper, "update_bot", map[string]any{"botId": id, "positionSize": "7.5%", "takeProfit": "4%"})
	if up.ID != id || up.Spec.PositionSize != "7.5%" || up.Spec.TakeProfit != "4%" || up.Spec.PaperAccountRef.Name != "main" || up.Spec.Market != "spot" {
		t.Fatalf("update: %+v", up)
	}
	if obj := f.object(t, created.Namespace, "managed"); obj.Spec.PositionSize != "7.5%" || obj.Spec.TakeProfit != "4%" {
		t.Fatalf("object after update: %+v", obj.Spec)
	}
	if text := toolErr(t, paper, "update_bot", map[string]any{"botId": id, "positionSize": "0%"}); !strings.Contains(text, "spec.positionSize") ||
		!strings.Contains(text, "INVALID_PARAMETER") {
		t.Fatalf("update to 0%%: %s", text)
	}
	if text := toolErr(t, paper, "update_bot", map[string]any{"botId": id}); !strings.Contains(text, "at least one setting") {
		t.Fatalf("empty update: %s", text)
	}
	// Moving the bot to an exchange connection needs mcp:live, though the bot is paper now.
	f.forbidden(t, paperTok, "update_bot", `{"botId":"`+id+`","account":{"kind":"exchange","name":"binance"}}`, auth.ScopeLive)
	_, live := f.token(t, f.adaUser, auth.ScopeLive)
	// Under a per-order cap (the default policy's 100 USDT) an app may not move a bot onto
	// real money, nor create one there: the bot's webhook entries are sized where no cap of
	// the app's holds them.
	toExchange := map[string]any{"botId": id, "account": map[string]any{"kind": "exchange", "name": "binance"}}
	for tool, args := range map[string]map[string]any{"update_bot": toExchange,
		"create_bot": {"name": "live-one", "account": map[string]any{"kind": "exchange", "name": "binance"}}} {
		if text := toolErr(t, live, tool, args); !strings.Contains(text, `"limit":"orderNotional"`) || !strings.Contains(text, `"used":"settings"`) {
			t.Fatalf("%s onto an exchange under a cap: %s", tool, text)
		}
	}
	policies := apppolicy.NewPolicies(f.rdb, nil)
	uncapped := apppolicy.DefaultPolicy()
	uncapped.OrderNotional = httpapi.Num(decimal.Zero)
	if err := policies.Set(t.Context(), f.adaUser.ID, "agent-mcp-live", uncapped); err != nil {
		t.Fatal(err)
	}
	moved := toolOK[botChangeT](t, live, "update_bot", toExchange)
	if moved.Spec.ExchangeConnectionRef == nil || moved.Spec.ExchangeConnectionRef.Name != "binance" || moved.Spec.PaperAccountRef != nil {
		t.Fatalf("moved: %+v", moved.Spec)
	}
	// With the cap back, the app may lower the live bot's size, not raise it or its leverage.
	if err := policies.Set(t.Context(), f.adaUser.ID, "agent-mcp-live", apppolicy.DefaultPolicy()); err != nil {
		t.Fatal(err)
	}
	if up := toolOK[botChangeT](t, live, "update_bot", map[string]any{"botId": id, "positionSize": "5%"}); up.Spec.PositionSize != "5%" {
		t.Fatalf("lowered: %+v", up.Spec)
	}
	for _, args := range []map[string]any{{"botId": id, "positionSize": "20%"}, {"botId": id, "positionSize": "0.01"}, {"botId": id, "leverage": 3}} {
		if text := toolErr(t, live, "update_bot", args); !strings.Contains(text, `"limit":"orderNotional"`) {
			t.Fatalf("raising %v under a cap: %s", args, text)
		}
	}
	// The projection still says paper until the controller projects the move; the venue is
	// taken from the SignalBot, so mcp:paper may no longer act on it (it could before the
	// fix: the scope came from the projection alone).
	for tool, args := range map[string]string{
		"update_bot":         `{"botId":"` + id + `","positionSize":"5%"}`,
		"send_signal":        `{"botId":"` + id + `","action":"buy"}`,
		"pause_bot":          `{"botId":"` + id + `"}`,
		"regenerate_webhook": `{"botId":"` + id + `"}`,
		"delete_bot":         `{"botId":"` + id + `"}`,
	} {
		f.forbidden(t, paperTok, tool, args, auth.ScopeLive)
	}
	// bob's bearer JWT may do anything, but not to ada's bot: NOT_FOUND as for a missing one.
	for _, tool := range []string{"update_bot", "delete_bot", "pause_bot", "regenerate_webhook"} {
		if text := toolErr(t, f.bob, tool, argsFor(tool, id)); !strings.Contains(text, `"code":"NOT_FOUND"`) {
			t.Fatalf("bob %s: %s", tool, text)
		}
	}

	// regenerate_webhook writes a new regenerate annotation value each time (mcp:live: the
	// bot is on an exchange now).
	toolOK[map[string]any](t, live, "regenerate_webhook", map[string]any{"botId": id})
	first := f.object(t, created.Namespace, "managed").Annotations[tradingv1.AnnotationRegenerateWebhook]
	toolOK[map[string]any](t, live, "regenerate_webhook", map[string]any{"botId": id})
	second := f.object(t, created.Namespace, "managed").Annotations[tradingv1.AnnotationRegenerateWebhook]
	if first == "" || second == first {
		t.Fatalf("regenerate annotations %q then %q", first, second)
	}

	// delete_bot needs confirm true.
	if text := toolErr(t, live, "delete_bot", map[string]any{"botId": id}); !strings.Contains(text, "confirm must be true") {
		t.Fatalf("delete without confirm: %s", text)
	}
	if f.object(t, created.Namespace, "managed") == nil {
		t.Fatal("deleted without confirm")
	}
	toolOK[map[string]any](t, live, "delete_bot", map[string]any{"botId": id, "confirm": true})
	var gone tradingv1.SignalBot
	if err := f.k8s.Get(t.Context(), crclient.ObjectKey{Namespace: created.Namespace, Name: "managed"}, &gone); err == nil && gone.DeletionTimestamp == nil {
		t.Fatalf("bot still there after delete_bot: %+v", gone.ObjectMeta)
	}

	// A GitOps bot: no update, delete or regenerate (MANAGED_BY_GITOPS, 409, with the reason).
	g := f.gitopsBot(t, "repo-bot", false)
	for _, tool := range []string{"update_bot", "delete_bot", "regenerate_webhook"} {
		text := toolErr(t, paper, tool, argsFor(tool, g.ID))
		if !strings.Contains(text, `"code":"MANAGED_BY_GITOPS"`) || !strings.Contains(text, "change or delete it in its repository") {
			t.Fatalf("%s on a GitOps bot: %s", tool, text)
		}
	}
	if obj := f.object(t, "default", "repo-bot"); obj.Spec.PositionSize != "10%" || obj.Annotations[tradingv1.AnnotationRegenerateWebhook] != "" {
		t.Fatalf("GitOps bot changed: %+v %v", obj.Spec, obj.Annotations)
	}
}

// argsFor are arguments of tool on bot id that would succeed on a bot of the caller's.
func argsFor(tool, id string) map[string]any {
	switch tool {
	case "update_bot":
		return map[string]any{"botId": id, "positionSize": "1%"}
	case "delete_bot":
		return map[string]any{"botId": id, "confirm": true}
	}
	return map[string]any{"botId": id}
}

func TestPauseResume(t *testing.T) {
	f := newFleetFixture(t)
	paperTok, paper := f.token(t, f.adaUser, auth.ScopePaper)
	readTok, _ := f.token(t, f.adaUser, auth.ScopeRead)
	g := f.gitopsBot(t, "pausable", false)
	live := f.gitopsBot(t, "live-bot", true)

	// Scopes: mcp:read may not pause a paper bot; mcp:paper may not pause a live one.
	f.forbidden(t, readTok, "pause_bot", `{"botId":"`+g.ID+`"}`, auth.ScopePaper)
	f.forbidden(t, paperTok, "pause_bot", `{"botId":"`+live.ID+`"}`, auth.ScopeLive)
	f.forbidden(t, paperTok, "resume_bot", `{"botId":"`+live.ID+`"}`, auth.ScopeLive)

	// A GitOps bot pauses and resumes: the runtime pause, reason Manual, no end.
	p := toolOK[pauseT](t, paper, "pause_bot", map[string]any{"botId": g.ID})
	if !p.Paused || p.Reason != registry.PauseManual || p.BotID != g.ID {
		t.Fatalf("pause: %+v", p)
	}
	if rp, err := f.reg.ReadPause(t.Context(), g.ID, f.clk.Now()); err != nil || rp == nil || rp.Reason != registry.PauseManual || !rp.Until.IsZero() {
		t.Fatalf("registry pause after pause_bot: %+v %v", rp, err)
	}
	r := toolOK[pauseT](t, paper, "resume_bot", map[string]any{"botId": g.ID})
	if r.Paused || r.Reason != "" {
		t.Fatalf("resume: %+v", r)
	}
	if rp, err := f.reg.ReadPause(t.Context(), g.ID, f.clk.Now()); err != nil || rp != nil {
		t.Fatalf("registry pause after resume_bot: %+v %v", rp, err)
	}
	if text := toolErr(t, paper, "pause_bot", map[string]any{"botId": "no-such-bot"}); !strings.Contains(text, `"code":"NOT_FOUND"`) {
		t.Fatalf("pause of a missing bot: %s", text)
	}

	// The journal holds the calls that reached the tools, newest first.
	entries, _, err := f.journal.List(t.Context(), f.adaUser.ID, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	for _, e := range entries {
		seen = append(seen, fmt.Sprintf("%s:%v", e.Tool, e.Outcome.OK))
	}
	if got := strings.Join(seen, ","); got != "pause_bot:false,resume_bot:true,pause_bot:true" {
		t.Fatalf("audit %s", got)
	}
	var args map[string]any
	if err := json.Unmarshal(entries[2].Arguments, &args); err != nil || args["botId"] != g.ID {
		t.Fatalf("audit arguments %s", entries[2].Arguments)
	}
}

// TestBotSpecSchemaMatchesCRD holds create_bot's and update_bot's settings to the CRD: every
// spec field (but owner and the account references, which account stands for) is there
// with the CRD's type, pattern, bounds, enum, default and required fields.
func TestBotSpecSchemaMatchesCRD(t *testing.T) {
	raw, err := os.ReadFile("../config/crd/bases/trading.sigops.dev_signalbots.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Versions []struct {
				Schema struct {
					OpenAPIV3Schema struct {
						Properties map[string]map[string]any `json:"properties"`
					} `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(raw, &crd); err != nil {
		t.Fatal(err)
	}
	spec := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]["properties"].(map[string]any)
	var mine map[string]any
	if err := json.Unmarshal(mcpd.BotSpecProperties(), &mine); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"owner", "paperAccountRef", "exchangeConnectionRef"} {
		delete(spec, k)
	}
	delete(mine, "account")
	compareSchema(t, "spec", spec, mine)
}

func compareSchema(t *testing.T, path string, crd, mine map[string]any) {
	t.Helper()
	for name, c := range crd {
		m, ok := mine[name].(map[string]any)
		if !ok {
			t.Errorf("%s.%s: in the CRD, not in the tools' schema", path, name)
			continue
		}
		cs := c.(map[string]any)
		for _, kw := range []string{"type", "pattern", "minimum", "maximum", "minLength", "maxLength", "enum", "default", "required"} {
			cj, _ := json.Marshal(cs[kw])
			mj, _ := json.Marshal(m[kw])
			if string(cj) != string(mj) {
				t.Errorf("%s.%s: %s is %s in the CRD, %s in the tools' schema", path, name, kw, cj, mj)
			}
		}
		if sub, ok := cs["properties"].(map[string]any); ok {
			msub, _ := m["properties"].(map[string]any)
			compareSchema(t, path+"."+name, sub, msub)
		}
	}
	for name := range mine {
		if _, ok := crd[name]; !ok {
			t.Errorf("%s.%s: in the tools' schema, not in the CRD", path, name)
		}
	}
}
