package fleet_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/controllers"
	"github.com/sigops/sigops/fleet"
	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/test/testenv"
)

// The suite runs the real controllers on the control plane and Redis test/testenv starts,
// so a bot fleet creates is reconciled, projected and paused exactly as in production.
var (
	env    *testenv.Env
	k8s    client.Client
	fl     *fleet.Fleet
	serial atomic.Int64
)

const baseURL = "https://sigops.test"

func TestMain(m *testing.M) { os.Exit(runSuite(m)) }

func runSuite(m *testing.M) int {
	var err error
	if env, err = testenv.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer env.Stop()
	ctx, cancel := context.WithCancel(context.Background())
	done, err := env.StartControllers(ctx, controllers.Options{
		Redis: env.RDB, BaseURL: baseURL, TombstoneTTL: time.Hour, MaxConcurrentReconciles: 2,
		PaperSyncPeriod: time.Second, CredentialsRetryPeriod: time.Second,
	})
	if err != nil {
		cancel()
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() { cancel(); <-done }()
	if k8s, err = env.Client(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fl = fleet.New(fleet.Options{Client: k8s, Redis: env.RDB})
	return m.Run()
}

// newCaller is a user of its own for one test.
func newCaller() fleet.Caller {
	n := serial.Add(1)
	return fleet.Caller{UserID: fmt.Sprintf("u-%d-%d", time.Now().UnixNano()%1e9, n), Email: fmt.Sprintf("User%d@Example.io", n)}
}

func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	testkit.Eventually(t, 20*time.Second, what, check)
}

// paperAccount creates a paper account of c in ns and returns its name.
func paperAccount(t *testing.T, ns string, c fleet.Caller) string {
	t.Helper()
	acc := &tradingv1.PaperAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "paper"}, Spec: tradingv1.PaperAccountSpec{Owner: c.Email}}
	if err := k8s.Create(context.Background(), acc); err != nil {
		t.Fatal(err)
	}
	return acc.Name
}

// code is err's errs code, or "" when it carries none.
func code(err error) errs.Code {
	var e *errs.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func wantCode(t *testing.T, what string, err error, want errs.Code) *errs.Error {
	t.Helper()
	var e *errs.Error
	if !errors.As(err, &e) || e.Code != want {
		t.Fatalf("%s: got %v, want code %s", what, err, want)
	}
	return e
}

// projected waits until bot id is in Redis and accepted by ok.
func projected(t *testing.T, c fleet.Caller, id, what string, ok func(registry.Bot) error) registry.Bot {
	t.Helper()
	var bot registry.Bot
	eventually(t, what, func() error {
		var err error
		if bot, err = fl.Get(context.Background(), c, id); err != nil {
			return err
		}
		return ok(bot)
	})
	return bot
}

func active(b registry.Bot) error {
	if b.Availability != string(tradingv1.AvailabilityActive) {
		return fmt.Errorf("availability %s (%s)", b.Availability, b.DisabledReason)
	}
	return nil
}

func TestNamespaceIsDerivedCreatedAndRecorded(t *testing.T) {
	ctx := context.Background()
	c := newCaller()
	ns, err := fl.Namespace(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	if ns != fleet.NamespaceFor(c.UserID) || !strings.HasPrefix(ns, "sigops-u-") || len(ns) != 41 {
		t.Fatalf("namespace %q", ns)
	}
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		t.Fatal(msgs)
	}
	if fleet.NamespaceFor(c.UserID+"x") == ns {
		t.Fatal("two users share a namespace")
	}
	var got corev1.Namespace
	if err := k8s.Get(ctx, client.ObjectKey{Name: ns}, &got); err != nil {
		t.Fatal(err)
	}
	if got.Labels[fleet.LabelUser] != c.UserID {
		t.Fatalf("labels %v", got.Labels)
	}
	if rec, err := env.RDB.Get(ctx, store.UserNamespace(c.UserID)).Result(); err != nil || rec != ns {
		t.Fatalf("recorded %q, %v", rec, err)
	}
	// A second call finds it; a user whose ID hashes to a namespace labelled for someone
	// else is refused rather than let into it.
	if again, err := fl.Namespace(ctx, c); err != nil || again != ns {
		t.Fatalf("again: %q, %v", again, err)
	}
	if _, err := fl.Namespace(ctx, fleet.Caller{UserID: c.UserID}); code(err) != errs.Unauthorized {
		t.Fatalf("no e-mail: %v", err)
	}
	// An ID that is no valid label value is named by its hash instead.
	odd := fleet.Caller{UserID: fmt.Sprintf("odd/%d@x", serial.Add(1)), Email: "odd@x.io"}
	oddNS, err := fl.Namespace(ctx, odd)
	if err != nil {
		t.Fatal(err)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Name: oddNS}, &got); err != nil || got.Labels[fleet.LabelUser] != oddNS[len("sigops-u-"):] {
		t.Fatalf("odd ID's label %v, %v", got.Labels, err)
	}
	intruder := fleet.Caller{UserID: "intruder", Email: "i@x.io"}
	squatted := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleet.NamespaceFor(intruder.UserID), Labels: map[string]string{fleet.LabelUser: "someone-else"}}}
	if err := k8s.Create(ctx, squatted); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := fl.Namespace(ctx, intruder); code(err) != errs.InternalError {
		t.Fatalf("squatted namespace: %v", err)
	}
}

func TestCreateUpdateDelete(t *testing.T) {
	ctx := context.Background()
	c := newCaller()
	ns, err := fl.Namespace(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	acc := paperAccount(t, ns, c)
	bot, err := fl.Create(ctx, c, "trend", tradingv1.SignalBotSpec{
		Owner:           "someone@else.io", // ignored: the caller owns what it creates
		PaperAccountRef: &tradingv1.LocalObjectReference{Name: acc},
		Symbol:          "BTC/USDT",
	})
	if err != nil {
		t.Fatal(err)
	}
	if bot.Namespace != ns || bot.Labels[fleet.LabelManagedBy] != fleet.ManagedBySigops || bot.Spec.Owner != c.Email {
		t.Fatalf("created %s/%s labels %v owner %s", bot.Namespace, bot.Name, bot.Labels, bot.Spec.Owner)
	}
	id := string(bot.UID)
	got := projected(t, c, id, "bot projected and active", active)
	if got.Namespace != ns || got.Name != "trend" || got.PositionSize != "10%" {
		t.Fatalf("projection %+v", got)
	}
	eventually(t, "bot Ready", func() error {
		var b tradingv1.SignalBot
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(bot), &b); err != nil {
			return err
		}
		for _, cond := range b.Status.Conditions {
			if cond.Type == tradingv1.ConditionReady && cond.Status == metav1.ConditionTrue {
				return nil
			}
		}
		return fmt.Errorf("conditions %v", b.Status.Conditions)
	})
	if _, err := fl.Create(ctx, c, "trend", bot.Spec); code(err) != errs.InvalidParameter {
		t.Fatalf("same name again: %v", err)
	}
	list, err := fl.List(ctx, c)
	if err != nil || len(list) != 1 || list[0].ID != id {
		t.Fatalf("list %v, %v", list, err)
	}

	url, err := fl.WebhookURL(ctx, c, id)
	if err != nil || !strings.HasPrefix(url, baseURL+"/api/webhooks/trade/") {
		t.Fatalf("webhook URL %q, %v", url, err)
	}

	if _, err := fl.Update(ctx, c, id, json.RawMessage(`{"positionSize":"25%","leverage":null}`)); err != nil {
		t.Fatal(err)
	}
	projected(t, c, id, "update projected", func(b registry.Bot) error {
		if b.PositionSize != "25%" {
			return fmt.Errorf("positionSize %s", b.PositionSize)
		}
		return nil
	})
	e := wantCode(t, "owner change", mustErr(fl.Update(ctx, c, id, json.RawMessage(`{"owner":"x@y.io"}`))), errs.InvalidParameter)
	if !strings.Contains(e.Message, "owner") {
		t.Fatal(e.Message)
	}
	wantCode(t, "not an object", mustErr(fl.Update(ctx, c, id, json.RawMessage(`[1]`))), errs.InvalidParameter)

	// A spec the CRD's CEL rule refuses: the API server's field message, no Kubernetes words.
	e = wantCode(t, "CEL", mustErr(fl.Update(ctx, c, id, json.RawMessage(`{"positionSize":"150%"}`))), errs.InvalidParameter)
	if !strings.Contains(e.Message, "spec.positionSize") || !strings.Contains(e.Message, "a percentage must be above 0 and at most 100") {
		t.Fatalf("CEL message %q", e.Message)
	}
	t.Logf("CEL refusal: %s", e.Message)
	for _, jargon := range []string{"SignalBot.trading.sigops.dev", "is invalid", "apiVersion"} {
		if strings.Contains(e.Message, jargon) {
			t.Fatalf("message leaks %q: %s", jargon, e.Message)
		}
	}
	// Create goes through the same validation (the spec-level CEL rule: one account).
	e = wantCode(t, "create CEL", mustErr(fl.Create(ctx, c, "bad", tradingv1.SignalBotSpec{Symbol: "BTC/USDT",
		PaperAccountRef: &tradingv1.LocalObjectReference{Name: acc}, ExchangeConnectionRef: &tradingv1.LocalObjectReference{Name: acc}})),
		errs.InvalidParameter)
	if !strings.Contains(e.Message, "exactly one of paperAccountRef or exchangeConnectionRef must be set") {
		t.Fatalf("create CEL message %q", e.Message)
	}

	old, err := fl.WebhookURL(ctx, c, id)
	if err != nil {
		t.Fatal(err)
	}
	if err := fl.RegenerateWebhook(ctx, c, id); err != nil {
		t.Fatal(err)
	}
	eventually(t, "new webhook URL", func() error {
		u, err := fl.WebhookURL(ctx, c, id)
		if err == nil && u == old {
			return errors.New("URL unchanged")
		}
		return err
	})

	if err := fl.Delete(ctx, c, id); err != nil {
		t.Fatal(err)
	}
	eventually(t, "bot gone from Redis", func() error {
		if _, err := fl.Get(ctx, c, id); code(err) != errs.NotFound {
			return fmt.Errorf("get: %v", err)
		}
		return nil
	})
	wantCode(t, "delete again", fl.Delete(ctx, c, id), errs.NotFound)
}

func mustErr[T any](_ T, err error) error { return err }

// gitopsBot applies a bot the way a platform team's tooling does: no managed-by label, in a
// namespace of its own.
func gitopsBot(t *testing.T, c fleet.Caller) (*tradingv1.SignalBot, string) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("team-%d", serial.Add(1))}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	acc := paperAccount(t, ns.Name, c)
	bot := &tradingv1.SignalBot{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "platform"},
		Spec:       tradingv1.SignalBotSpec{Owner: c.Email, PaperAccountRef: &tradingv1.LocalObjectReference{Name: acc}, Symbol: "ETH/USDT"},
	}
	if err := k8s.Create(ctx, bot); err != nil {
		t.Fatal(err)
	}
	id := string(bot.UID)
	projected(t, c, id, "GitOps bot projected", active)
	return bot, id
}

func TestGitOpsBotIsReadPausedResumedButNotChanged(t *testing.T) {
	ctx := context.Background()
	c := newCaller()
	bot, id := gitopsBot(t, c)

	for what, err := range map[string]error{
		"update":     mustErr(fl.Update(ctx, c, id, json.RawMessage(`{"positionSize":"5%"}`))),
		"delete":     fl.Delete(ctx, c, id),
		"regenerate": fl.RegenerateWebhook(ctx, c, id),
	} {
		e := wantCode(t, what, err, errs.ManagedByGitOps)
		if !strings.Contains(e.Message, "managed by GitOps") {
			t.Fatalf("%s: %q", what, e.Message)
		}
	}
	var still tradingv1.SignalBot
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(bot), &still); err != nil || still.Spec.PositionSize != "10%" || still.DeletionTimestamp != nil {
		t.Fatalf("GitOps bot touched: %v %+v", err, still.Spec)
	}
	if _, err := fl.WebhookURL(ctx, c, id); err != nil {
		t.Fatalf("owner reads the GitOps bot's URL: %v", err)
	}

	if err := fl.Pause(ctx, c, id); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pause mirrored in status", func() error {
		var b tradingv1.SignalBot
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(bot), &b); err != nil {
			return err
		}
		if b.Status.Availability != tradingv1.AvailabilityPaused || b.Status.PausedReason != tradingv1.PausedManual {
			return fmt.Errorf("status %s %s", b.Status.Availability, b.Status.PausedReason)
		}
		return nil
	})
	if p, err := registry.New(env.RDB).ReadPause(ctx, id, time.Now()); err != nil || p == nil || p.Reason != registry.PauseManual || !p.Until.IsZero() {
		t.Fatalf("runtime pause %+v, %v", p, err)
	}
	// A sync of the repository (the same spec applied again) leaves the pause in force.
	eventually(t, "spec applied", func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(bot), &still); err != nil {
			return err
		}
		still.Spec.Copyable = true
		return k8s.Update(ctx, &still)
	})
	projected(t, c, id, "sync reconciled", func(b registry.Bot) error {
		if !b.Copyable {
			return errors.New("not yet")
		}
		return nil
	})
	if p, err := registry.New(env.RDB).ReadPause(ctx, id, time.Now()); err != nil || p == nil {
		t.Fatalf("pause after a sync: %+v, %v", p, err)
	}

	if err := fl.Resume(ctx, c, id); err != nil {
		t.Fatal(err)
	}
	if p, err := registry.New(env.RDB).ReadPause(ctx, id, time.Now()); err != nil || p != nil {
		t.Fatalf("pause after resume: %+v, %v", p, err)
	}
	eventually(t, "resume mirrored in status", func() error {
		var b tradingv1.SignalBot
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(bot), &b); err != nil {
			return err
		}
		if b.Status.Availability != tradingv1.AvailabilityActive {
			return fmt.Errorf("status %s %s", b.Status.Availability, b.Status.PausedReason)
		}
		return nil
	})
}

// An Errors pause is the executor's: Resume asks the controller through the resume
// annotation, whose rules apply.
func TestResumeOfAnErrorsPauseGoesThroughTheController(t *testing.T) {
	ctx := context.Background()
	c := newCaller()
	bot, id := gitopsBot(t, c)
	reg := registry.New(env.RDB)
	if ok, err := reg.Pause(ctx, id, registry.Pause{Reason: registry.PauseErrors}, time.Now()); err != nil || !ok {
		t.Fatalf("pause: %v %v", ok, err)
	}
	// A Manual pause does not replace an open-ended one: the bot stays paused by Errors.
	if err := fl.Pause(ctx, c, id); err != nil {
		t.Fatal(err)
	}
	if p, _ := reg.ReadPause(ctx, id, time.Now()); p == nil || p.Reason != registry.PauseErrors {
		t.Fatalf("pause %+v", p)
	}
	if err := fl.Resume(ctx, c, id); err != nil {
		t.Fatal(err)
	}
	eventually(t, "controller lifted the Errors pause", func() error {
		p, err := reg.ReadPause(ctx, id, time.Now())
		if err != nil || p != nil {
			return fmt.Errorf("pause %+v, %v", p, err)
		}
		var b tradingv1.SignalBot
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(bot), &b); err != nil {
			return err
		}
		if b.Status.LastHandledResume == "" || b.Status.LastHandledResume != b.Annotations[tradingv1.AnnotationResume] {
			return fmt.Errorf("resume %q handled %q", b.Annotations[tradingv1.AnnotationResume], b.Status.LastHandledResume)
		}
		return nil
	})
}

func TestAnotherOwnersBotAnswersLikeAMissingOne(t *testing.T) {
	ctx := context.Background()
	owner, other := newCaller(), newCaller()
	ns, err := fl.Namespace(ctx, owner)
	if err != nil {
		t.Fatal(err)
	}
	bot, err := fl.Create(ctx, owner, "mine", tradingv1.SignalBotSpec{PaperAccountRef: &tradingv1.LocalObjectReference{Name: paperAccount(t, ns, owner)}})
	if err != nil {
		t.Fatal(err)
	}
	id := string(bot.UID)
	projected(t, owner, id, "projected", active)
	missing := "00000000-0000-4000-8000-000000000000"
	for _, target := range []string{id, missing} {
		want := fmt.Sprintf("bot %s not found", target)
		for what, err := range map[string]error{
			"get":        mustErr(fl.Get(ctx, other, target)),
			"update":     mustErr(fl.Update(ctx, other, target, json.RawMessage(`{"positionSize":"5%"}`))),
			"delete":     fl.Delete(ctx, other, target),
			"pause":      fl.Pause(ctx, other, target),
			"resume":     fl.Resume(ctx, other, target),
			"regenerate": fl.RegenerateWebhook(ctx, other, target),
			"url":        mustErr(fl.WebhookURL(ctx, other, target)),
		} {
			if e := wantCode(t, what, err, errs.NotFound); e.Message != want {
				t.Fatalf("%s: %q, want %q", what, e.Message, want)
			}
		}
	}
	if list, err := fl.List(ctx, other); err != nil || len(list) != 0 {
		t.Fatalf("other's list %v, %v", list, err)
	}
	if p, _ := registry.New(env.RDB).ReadPause(ctx, id, time.Now()); p != nil {
		t.Fatalf("another user paused the bot: %+v", p)
	}
	// The owner's e-mail matches however it is cased.
	same := fleet.Caller{UserID: owner.UserID, Email: "  " + strings.ToUpper(owner.Email)}
	if _, err := fl.Get(ctx, same, id); err != nil {
		t.Fatal(err)
	}
}

// BenchmarkGet is the read behind every bot tool: the projection and the owner check.
func BenchmarkGet(b *testing.B) {
	ctx := context.Background()
	c := newCaller()
	ns, err := fl.Namespace(ctx, c)
	if err != nil {
		b.Fatal(err)
	}
	acc := &tradingv1.PaperAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "paper"}, Spec: tradingv1.PaperAccountSpec{Owner: c.Email}}
	if err := k8s.Create(ctx, acc); err != nil {
		b.Fatal(err)
	}
	bot, err := fl.Create(ctx, c, "bench", tradingv1.SignalBotSpec{PaperAccountRef: &tradingv1.LocalObjectReference{Name: acc.Name}})
	if err != nil {
		b.Fatal(err)
	}
	id := string(bot.UID)
	testkit.Eventually(b, 20*time.Second, "projected", func() error { _, err := fl.Get(ctx, c, id); return err })
	b.ResetTimer()
	for b.Loop() {
		if _, err := fl.Get(ctx, c, id); err != nil {
			b.Fatal(err)
		}
	}
}

func TestCreateMakesThePaperAccountOnFirstUse(t *testing.T) {
	ctx := context.Background()
	c := newCaller()
	ns, err := fl.Namespace(ctx, c)
	if err != nil {
		t.Fatal(err)
	}
	// No account named: the default paper account is made in the caller's namespace, owned
	// by the caller, and the bot trades on it at once.
	bot, err := fl.Create(ctx, c, "first", tradingv1.SignalBotSpec{Symbol: "BTC/USDT"})
	if err != nil {
		t.Fatal(err)
	}
	if bot.Spec.PaperAccountRef == nil || bot.Spec.PaperAccountRef.Name != fleet.DefaultPaperAccount {
		t.Fatalf("account ref %+v", bot.Spec.PaperAccountRef)
	}
	var acct tradingv1.PaperAccount
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: fleet.DefaultPaperAccount}, &acct); err != nil {
		t.Fatal(err)
	}
	if acct.Spec.Owner != c.Email || acct.Labels[fleet.LabelManagedBy] != fleet.ManagedBySigops {
		t.Fatalf("account owner %q labels %v", acct.Spec.Owner, acct.Labels)
	}
	projected(t, c, string(bot.UID), "bot on the new account active", active)
	// A second bot uses the same account.
	if _, err := fl.Create(ctx, c, "second", tradingv1.SignalBotSpec{Symbol: "ETH/USDT",
		PaperAccountRef: &tradingv1.LocalObjectReference{Name: fleet.DefaultPaperAccount}}); err != nil {
		t.Fatal(err)
	}
	var accts tradingv1.PaperAccountList
	if err := k8s.List(ctx, &accts, client.InNamespace(ns)); err != nil || len(accts.Items) != 1 {
		t.Fatalf("accounts in %s: %d, %v", ns, len(accts.Items), err)
	}

	// An account of the caller's in another namespace (applied by a platform team) is not
	// copied under the same name: the refusal says where it is.
	other := "team-" + strings.ToLower(strings.ReplaceAll(c.UserID, "-", ""))
	if err := k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: other}}); err != nil {
		t.Fatal(err)
	}
	if err := k8s.Create(ctx, &tradingv1.PaperAccount{ObjectMeta: metav1.ObjectMeta{Namespace: other, Name: "desk"},
		Spec: tradingv1.PaperAccountSpec{Owner: c.Email}}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the desk account indexed", func() error {
		mine, err := paper.NewAccounts(env.RDB).ListByOwner(ctx, c.Email)
		for _, a := range mine {
			if a.Namespace == other && a.Name == "desk" {
				return nil
			}
		}
		return fmt.Errorf("accounts %+v, %v", mine, err)
	})
	_, err = fl.Create(ctx, c, "on-desk", tradingv1.SignalBotSpec{Symbol: "BTC/USDT",
		PaperAccountRef: &tradingv1.LocalObjectReference{Name: "desk"}})
	if e := wantCode(t, "create on desk", err, errs.InvalidParameter); !strings.Contains(e.Message, "is in namespace "+other) {
		t.Fatalf("message %q", e.Message)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "desk"}, &tradingv1.PaperAccount{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a second desk account was made: %v", err)
	}
	// An exchange connection cannot be made without its key: a missing one is refused.
	_, err = fl.Create(ctx, c, "live", tradingv1.SignalBotSpec{Symbol: "BTC/USDT",
		ExchangeConnectionRef: &tradingv1.LocalObjectReference{Name: "binance"}})
	if e := wantCode(t, "missing exchange connection", err, errs.InvalidParameter); !strings.Contains(e.Message, "no exchange connection") {
		t.Fatalf("message %q", e.Message)
	}
}
