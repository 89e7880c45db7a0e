package service_test

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/approval"
	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/egress"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/executor"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/notify"
	"github.com/sigops/sigops/runtime/notify/channels"
	"github.com/sigops/sigops/runtime/notify/chatbot"
	"github.com/sigops/sigops/runtime/notify/feed"
	"github.com/sigops/sigops/runtime/notify/outbox"
	"github.com/sigops/sigops/runtime/notify/route"
	"github.com/sigops/sigops/runtime/notify/service"
	"github.com/sigops/sigops/runtime/notify/settings"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
	"github.com/sigops/sigops/runtime/telegram"
	"github.com/sigops/sigops/runtime/telegram/telegramfake"
)

const (
	token = "123:secret-bot-token"
	user  = "user-1"
	bot   = "bot-uid-1"
	chat  = int64(4242)
)

// stack is a notifyd on real Redis and PostgreSQL, Telegram's stand-in and a receiver.
type stack struct {
	rdb       redis.UniversalClient
	db        *pgxpool.Pool
	tg        *telegramfake.Server
	set       *settings.Store
	linked    sync.Map
	approvals *approval.Store
	cancel    context.CancelFunc
	done      chan struct{}
}

// everything is every message and webhook body any test of the package sent, which
// TestMain searches for secrets once they have all run.
var everything struct {
	sync.Mutex
	texts []string
}

func keep(texts ...string) {
	everything.Lock()
	defer everything.Unlock()
	everything.texts = append(everything.texts, texts...)
}

// TestMain runs the tests, then checks that no message they caused carried a secret: the
// bot's token, a webhook secret, a URL, a user's ID or the credential text a refused
// order's error held.
func TestMain(m *testing.M) {
	code := m.Run()
	// A full run sends messages; one that sent none searched nothing (a run of some tests
	// with -run may send none).
	all := flag.Lookup("test.run").Value.String() == ""
	if code == 0 {
		if n, bad := len(everything.texts), leaks(everything.texts); all && n == 0 || bad != "" {
			fmt.Fprintf(os.Stderr, "secrets in messages (%d messages searched): %s\n", n, bad)
			code = 1
		}
	}
	os.Exit(code)
}

func leaks(texts []string) string {
	for _, text := range texts {
		for _, secret := range []string{token, "whsec_", "http://", "https://", user, "SECRET", "abc-"} {
			if strings.Contains(text, secret) {
				return fmt.Sprintf("%q in %q", secret, text)
			}
		}
	}
	return ""
}

func newStack(t *testing.T) *stack {
	_, rdb := storetest.New(t)
	s := &stack{rdb: rdb, db: dbtest.New(t), tg: telegramfake.Start(token)}
	t.Cleanup(func() {
		for _, m := range s.tg.Messages() {
			keep(m.Text)
		}
		s.tg.Close()
	})
	s.set = &settings.Store{DB: s.db}
	s.start(t)
	return s
}

// start runs a notifyd (again, after stop: a restart).
func (s *stack) start(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s.approvals = approval.New(s.rdb, apppolicy.NewPolicies(s.rdb, nil), nil)
	acct := &account{Runtime: chatbot.Runtime{Approvals: s.approvals, Audit: audit.New(s.rdb, audit.Options{})}, linked: &s.linked}
	cb := &chatbot.Bot{Settings: s.set, Account: acct, Logger: slog.New(slog.DiscardHandler)}
	tc, err := telegram.New(telegram.Options{Token: token, APIURL: s.tg.URL, OnUpdate: cb.Handle, PollTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cb.Chat = tc
	ch := &channels.Channels{Settings: s.set, Telegram: tc, Egress: egress.New(egress.Options{LoopbackHTTP: true})}
	r := &route.Router{Settings: s.set, Owner: func(_ context.Context, id string) (string, string, bool, error) {
		return user, "grid-btc", id == bot, nil
	}}
	svc := service.New(service.Options{Redis: s.rdb, DB: s.db, Router: r, Poll: tc.Poll, Interval: 20 * time.Millisecond,
		Deliverer: &outbox.Deliverer{DB: s.db, Sender: ch, Window: 2 * time.Second}, Logger: slog.New(slog.DiscardHandler)})
	s.cancel, s.done = cancel, make(chan struct{})
	go func() { defer close(s.done); _ = svc.Run(ctx) }()
	t.Cleanup(s.stop)
}

// account is the chat bot's account on the test's stores; it records links instead of
// writing an account that does not exist.
type account struct {
	chatbot.Runtime
	linked *sync.Map
}

func (a *account) Linked(_ context.Context, u string, on bool) error {
	a.linked.Store(u, on)
	return nil
}

func (s *stack) stop() {
	s.cancel()
	<-s.done
}

// link links chat to user through the bot, as a person pressing Start does.
func (s *stack) link(t *testing.T) {
	t.Helper()
	code, _, err := s.set.NewLinkCode(context.Background(), user)
	if err != nil {
		t.Fatal(err)
	}
	s.tg.PostStart(chat, "/start "+code)
	testkit.EventuallyTrue(t, 5*time.Second, "the chat is linked", func() bool {
		on, _ := s.linked.Load(user)
		return on == true
	})
}

// messages are the texts the bot sent to chat, oldest first.
func (s *stack) messages() []string {
	var out []string
	for _, m := range s.tg.Messages() {
		if m.Chat == chat {
			out = append(out, m.Text)
		}
	}
	return out
}

func (s *stack) waitMessages(t *testing.T, n int) []string {
	t.Helper()
	testkit.EventuallyTrue(t, 10*time.Second, fmt.Sprintf("%d messages", n), func() bool { return len(s.messages()) >= n })
	return s.messages()
}

// fill appends a signal's result (and for an exit its trade) as the executor's commit does.
func fill(t *testing.T, rdb redis.UniversalClient, i int, exit bool) {
	t.Helper()
	ctx := context.Background()
	sig := queue.SignalIDFor(bot, fmt.Sprintf("sig-%d", i))
	side := "buy"
	if exit {
		side = "sell"
		tr := position.Trade{ID: fmt.Sprintf("trade-%d", i), PositionID: "p", BotID: bot, SignalID: sig, Symbol: "BTC/USDT",
			Kind: exchange.Spot, Side: position.Long, Size: httpapi.Num(testkit.D("0.5")), EntryPrice: httpapi.Num(testkit.D("60000")),
			ExitPrice: httpapi.Num(testkit.D("61000")), Leverage: 1, Pnl: httpapi.Num(testkit.D("500")), Fees: httpapi.Num(testkit.D("12.25")),
			NetPnl: httpapi.Num(testkit.D("487.75")), Closed: true, Reason: "signal"}
		if _, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error { return position.StageTrade(ctx, p, tr) }); err != nil {
			t.Fatal(err)
		}
	}
	res := result.Result{SignalID: sig, BotID: bot, Success: true, Message: "filled", Timestamp: time.Now().UnixMilli(),
		Order: &result.Order{Success: true, OrderID: "1", Status: "filled", Symbol: "BTC/USDT", Side: side, Type: "market",
			Amount: httpapi.Num(testkit.D("0.5")), FilledAmount: httpapi.Num(testkit.D("0.5")), AvgPrice: httpapi.Num(testkit.D("61000"))}}
	env := queue.Envelope{SignalID: sig, BotID: bot, Source: queue.SourceWebhook, ReceivedAt: time.Now().UnixMilli(), Signal: []byte(`{}`)}
	if err := queue.PublishResult(ctx, rdb, env, res); err != nil {
		t.Fatal(err)
	}
}

func refuse(t *testing.T, rdb redis.UniversalClient, i int) {
	t.Helper()
	sig := queue.SignalIDFor(bot, fmt.Sprintf("refused-%d", i))
	env := queue.Envelope{SignalID: sig, BotID: bot, Source: queue.SourceWebhook, ReceivedAt: time.Now().UnixMilli(), Signal: []byte(`{}`)}
	res := result.Failure(sig, bot, errs.New(errs.InsufficientBalance, "not enough USDT: api key abc-SECRET"), time.Now().UnixMilli())
	if err := queue.PublishResult(context.Background(), rdb, env, res); err != nil {
		t.Fatal(err)
	}
}

func pause(t *testing.T, rdb redis.UniversalClient) {
	t.Helper()
	ctx := context.Background()
	if err := rdb.HSet(ctx, store.Bot(bot), "name", "grid-btc").Err(); err != nil {
		t.Fatal(err)
	}
	if ok, err := registry.New(rdb).Pause(ctx, bot, registry.Pause{Reason: registry.PauseRisk, Until: time.Now().Add(time.Hour)}, time.Now()); err != nil || !ok {
		t.Fatalf("pause: %v %v", ok, err)
	}
}

// A linked user hears of a pause, a refusal and (fills turned on) a fill exactly once each,
// and nothing that could be a secret reaches a message.
func TestLinkedUserHearsEachFactOnce(t *testing.T) {
	s := newStack(t)
	s.link(t)
	ctx := context.Background()
	if err := s.set.SetPrefs(ctx, user, notify.Prefs{Events: map[notify.Kind]bool{notify.Fill: true}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(route.Fresh) // the router's cached settings expire
	pause(t, s.rdb)
	refuse(t, s.rdb, 1)
	fill(t, s.rdb, 1, true)
	s.waitMessages(t, 4) // the link's reply, then the three
	time.Sleep(500 * time.Millisecond)
	got := s.messages()
	if len(got) != 4 {
		t.Fatalf("want 4 messages, got %d: %q", len(got), got)
	}
	// Every stream has a saved position from the first step on (the heartbeat), so the
	// archiver holds back what notifyd has not read, even in a stream it never read.
	var streams int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FROM notify_progress`).Scan(&streams); err != nil || streams != len(feed.Streams()) {
		t.Errorf("%d streams with a saved position (%v), want %d", streams, err, len(feed.Streams()))
	}
	all := strings.Join(got[1:], "\n")
	for _, want := range []string{"grid-btc", "paused", "INSUFFICIENT_BALANCE", "487.75"} {
		if !strings.Contains(strings.ToLower(all), strings.ToLower(want)) {
			t.Errorf("messages lack %q:\n%s", want, all)
		}
	}
	for _, secret := range []string{token, "SECRET", user, "abc-"} {
		if strings.Contains(all, secret) {
			t.Errorf("a message carries %q:\n%s", secret, all)
		}
	}
}

// With the channel down while fills keep coming, nothing is lost: once it is back, the
// queued fills arrive gathered into one message with their count, each event once, and a
// notifyd killed and started again sends nothing twice.
func TestOutageGathersAndRestartRepeatsNothing(t *testing.T) {
	s := newStack(t)
	s.link(t)
	ctx := context.Background()
	if err := s.set.SetPrefs(ctx, user, notify.Prefs{Events: map[notify.Kind]bool{notify.Fill: true}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(route.Fresh)
	s.tg.SetDown(true)
	for i := range 40 {
		fill(t, s.rdb, 100+i, i%2 == 1)
	}
	testkit.EventuallyTrue(t, 10*time.Second, "40 deliveries queued", func() bool {
		var n int
		_ = s.db.QueryRow(ctx, `SELECT count(*) FROM notify_outbox WHERE state = 'pending'`).Scan(&n)
		return n == 40
	})
	s.stop()
	s.tg.SetDown(false)
	s.start(t)
	s.waitMessages(t, 2)
	time.Sleep(3 * time.Second) // past the burst window: nothing more may come
	got := s.messages()
	if len(got) != 2 {
		t.Fatalf("want the link's reply and one gathered message, got %d: %q", len(got), got)
	}
	if !strings.Contains(got[1], "40") {
		t.Errorf("the gathered message does not count 40 fills: %q", got[1])
	}
	var sent, merged int
	if err := s.db.QueryRow(ctx, `SELECT count(*) FILTER (WHERE state = 'sent'), count(*) FILTER (WHERE state = 'merged') FROM notify_outbox`).Scan(&sent, &merged); err != nil {
		t.Fatal(err)
	}
	if sent != 1 || merged != 39 {
		t.Errorf("sent %d merged %d, want 1 and 39", sent, merged)
	}
}

// A JSON destination gets a signed delivery that verifies with the documented recipe; a
// Slack one gets Slack's body.
func TestWebhookDeliveryIsSigned(t *testing.T) {
	s := newStack(t)
	ctx := context.Background()
	type got struct {
		header string
		body   []byte
	}
	deliveries := make(chan got, 10)
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		keep(string(b))
		deliveries <- got{r.Header.Get(egress.SignatureHeader), b}
	}))
	defer recv.Close()
	eg := egress.New(egress.Options{LoopbackHTTP: true})
	w, err := s.set.CreateWebhook(ctx, user, recv.URL+"/hook", settings.FormatJSON, []notify.Kind{notify.OrderRefused}, eg.Check)
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(route.Fresh)
	refuse(t, s.rdb, 7)
	select {
	case d := <-deliveries:
		if err := egress.Verify([]byte(w.Secret), d.header, d.body, time.Now(), 5*time.Minute); err != nil {
			t.Fatalf("the signature does not verify: %v (%s)", err, d.header)
		}
		var m struct {
			Events []notify.Event `json:"events"`
		}
		if err := json.Unmarshal(d.body, &m); err != nil || len(m.Events) != 1 || m.Events[0].Kind != notify.OrderRefused {
			t.Fatalf("body %s: %v", d.body, err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no delivery")
	}
	testkit.Eventually(t, 5*time.Second, "the delivery log shows it sent", func() error {
		rows, err := outbox.Log(ctx, s.db, user, outbox.WebhookChannel(w.ID), 10)
		if err != nil || len(rows) != 1 || rows[0].State != outbox.Sent || rows[0].Status != "HTTP 200" {
			return fmt.Errorf("delivery log %+v %v", rows, err)
		}
		return nil
	})
}

// An agent's order waiting for approval reaches the linked chat with Approve and Reject
// buttons. A press from another chat and a forged token change nothing; the owner's press
// approves it (the order is queued once) and edits the message; a second press changes
// nothing.
func TestApprovalByButton(t *testing.T) {
	s := newStack(t)
	s.link(t)
	ctx := context.Background()
	env := queue.Envelope{SignalID: queue.SignalIDFor(bot, "m-00000000-0000-4000-8000-0000000000aa"), BotID: bot,
		Priority: queue.PriorityStrategyEntry, Source: queue.SourceManual,
		Signal:   json.RawMessage(`{"type":"market","side":"buy","symbol":"BTC/USDT","amount":0.002}`),
		Admitted: map[string]httpapi.Number{"": httpapi.Num(testkit.D("0.002"))}}
	now := time.Now()
	if _, err := s.approvals.Create(ctx, approval.Approval{SignalID: env.SignalID, UserID: user, ClientID: "c1", ClientName: "Desk agent",
		BotID: bot, BotName: "grid-btc", Tool: "place_order", Notional: httpapi.Num(testkit.D("90")), Envelope: env,
		Legs: []executor.PreviewLeg{{Op: "open", Symbol: "BTC/USDT", Side: exchange.SideBuy, Amount: httpapi.Num(testkit.D("0.002")),
			ReferencePrice: httpapi.Num(testkit.D("65000"))}},
		Call:      apppolicy.Call{UserID: user, ClientID: "c1", BotID: bot, Order: true, Notional: httpapi.Num(testkit.D("90"))},
		CreatedAt: now.UnixMilli(), ExpiresAt: now.Add(time.Minute).UnixMilli()}, ""); err != nil {
		t.Fatal(err)
	}
	var msg telegramfake.Sent
	testkit.EventuallyTrue(t, 10*time.Second, "the approval request with buttons", func() bool {
		for _, m := range s.tg.Messages() {
			if m.Chat == chat && len(m.Buttons) == 1 && len(m.Buttons[0]) == 2 {
				msg = m
				return true
			}
		}
		return false
	})
	if !strings.Contains(msg.Text, "Desk agent wants to buy 0.002 BTC/USDT") {
		t.Errorf("request text %q", msg.Text)
	}
	approve := msg.Buttons[0][0].Data
	if strings.Contains(approve, env.SignalID) || len(approve) > 64 {
		t.Fatalf("the button's data %q carries the signal or is too long", approve)
	}
	queued := func() int64 {
		n, err := s.rdb.XLen(ctx, queue.StreamOf(bot, queue.PriorityStrategyEntry)).Result()
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	answered := func(id string) string {
		text, ok := s.tg.AnswerTo(id, 5*time.Second)
		if !ok {
			t.Fatal("a press was not answered")
		}
		return text
	}
	if got := answered(s.tg.PressButton(chat+1, msg.ID, approve)); !strings.Contains(got, "not for this chat") || queued() != 0 {
		t.Fatalf("a press from another chat: %q, %d queued", got, queued())
	}
	if got := answered(s.tg.PressButton(chat, msg.ID, "a:forged-token")); !strings.Contains(got, "not known") || queued() != 0 {
		t.Fatalf("a forged press: %q, %d queued", got, queued())
	}
	if got := answered(s.tg.PressButton(chat, msg.ID, approve)); !strings.Contains(got, "Approved") || queued() != 1 {
		t.Fatalf("the owner's press: %q, %d queued", got, queued())
	}
	if got := answered(s.tg.PressButton(chat, msg.ID, msg.Buttons[0][1].Data)); !strings.Contains(got, "already decided") || queued() != 1 {
		t.Fatalf("a second press: %q, %d queued", got, queued())
	}
	a, err := s.approvals.Get(ctx, user, env.SignalID)
	if err != nil || a.State != approval.Approved {
		t.Fatalf("approval %+v %v", a, err)
	}
	testkit.Eventually(t, 5*time.Second, "the request's message shows the outcome", func() error {
		for _, m := range s.tg.Messages() {
			if m.ID == msg.ID && (m.Edited != 1 || len(m.Buttons) != 0 || !strings.Contains(m.Text, "Approved")) {
				return fmt.Errorf("the request's message after the press: %+v", m)
			}
		}
		return nil
	})
}

// The search TestMain makes finds what it looks for.
func TestLeaksFindsEachSecret(t *testing.T) {
	for _, s := range []string{token, "whsec_abc", "see https://hooks.slack.com/x", user, "api key abc-SECRET"} {
		if leaks([]string{"Bot grid-btc bought 0.5 BTC/USDT", "x " + s + " y"}) == "" {
			t.Errorf("%q not found", s)
		}
	}
	if got := leaks([]string{"Bot grid-btc bought 0.5 BTC/USDT at 61000"}); got != "" {
		t.Errorf("a clean message flagged: %s", got)
	}
}

// Telegram's 429 is honoured: nothing goes to Telegram before its retry_after has passed,
// and the message then arrives once.
func TestTelegram429IsHonoured(t *testing.T) {
	s := newStack(t)
	s.link(t)
	time.Sleep(1100 * time.Millisecond) // the chat's one message a second
	s.tg.Throttle(1, 3)
	throttled := time.Now()
	pause(t, s.rdb)
	got := s.waitMessages(t, 2)
	var at time.Time
	for _, m := range s.tg.Messages() {
		if strings.Contains(m.Text, "paused") {
			at = m.At
		}
	}
	if wait := at.Sub(throttled); wait < 3*time.Second {
		t.Fatalf("sent %s after the 429 with retry_after 3 s", wait)
	}
	time.Sleep(time.Second)
	if n := len(s.messages()); n != 2 {
		t.Fatalf("%d messages, want the link's reply and the pause once: %q", n, got)
	}
	var attempts int
	if err := s.db.QueryRow(context.Background(), `SELECT attempts FROM notify_outbox WHERE state = 'sent'`).Scan(&attempts); err != nil || attempts != 2 {
		t.Fatalf("attempts %d %v, want 2 (the refused one and the sent one)", attempts, err)
	}
}

// A bot's own choice wins over the user's: its pause is not told. In quiet hours a message
// arrives without a sound.
func TestPerBotChoiceAndQuietHours(t *testing.T) {
	s := newStack(t)
	s.link(t)
	ctx := context.Background()
	if err := s.set.SetPrefs(ctx, user, notify.Prefs{Events: map[notify.Kind]bool{notify.BotPaused: true},
		Bots: map[string]map[notify.Kind]bool{bot: {notify.BotPaused: false}}}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(route.Fresh)
	pause(t, s.rdb)
	time.Sleep(2 * time.Second)
	if n := len(s.messages()); n != 1 {
		t.Fatalf("the bot's pause was told against its choice: %q", s.messages())
	}
	now := time.Now().UTC()
	m := now.Hour()*60 + now.Minute()
	quiet := &notify.Quiet{From: (m + 1440 - 60) % 1440, To: (m + 60) % 1440}
	if err := s.set.SetPrefs(ctx, user, notify.Prefs{Quiet: quiet}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(route.Fresh)
	reg := registry.New(s.rdb)
	p, err := reg.ReadPause(ctx, bot, time.Now())
	if err != nil || p == nil {
		t.Fatalf("pause %v %v", p, err)
	}
	if ok, err := reg.Resume(ctx, bot, *p); err != nil || !ok {
		t.Fatalf("resume %v %v", ok, err)
	}
	s.waitMessages(t, 2)
	last := s.tg.Messages()[len(s.tg.Messages())-1]
	if !strings.Contains(last.Text, "resumed") || !last.Silent {
		t.Fatalf("in quiet hours: %+v", last)
	}
}
