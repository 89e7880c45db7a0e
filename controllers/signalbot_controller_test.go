package controllers_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/controllers"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/risk"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// waitBot waits until the bot's status satisfies ok.
func waitBot(t *testing.T, ns, name, what string, ok func(*tradingv1.SignalBot) error) *tradingv1.SignalBot {
	t.Helper()
	return waitFor(t, &tradingv1.SignalBot{}, ns, name, what, ok)
}

func readyIs(want metav1.ConditionStatus, reason string) func(*tradingv1.SignalBot) error {
	return func(b *tradingv1.SignalBot) error {
		c := meta.FindStatusCondition(b.Status.Conditions, tradingv1.ConditionReady)
		if c == nil || c.Status != want || (reason != "" && c.Reason != reason) || b.Status.ObservedGeneration != b.Generation {
			return fmt.Errorf("ready = %+v, observedGeneration %d of %d", c, b.Status.ObservedGeneration, b.Generation)
		}
		return nil
	}
}

func webhookID(t *testing.T, ns, bot string) string {
	t.Helper()
	s := &corev1.Secret{}
	get(t, s, ns, bot+"-webhook")
	return string(s.Data[controllers.WebhookSecretKeyID])
}

func TestBotOnPaperAccountBecomesActive(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	create(t, paperAccount(ns, "paper", "Trader@Example.com"))
	create(t, paperBot(ns, "btc", "trader@example.com", "paper"))

	bot := waitBot(t, ns, "btc", "bot Ready", readyIs(metav1.ConditionTrue, "Active"))
	if bot.Status.Availability != tradingv1.AvailabilityActive || bot.Status.WebhookSecretName != "btc-webhook" {
		t.Fatalf("status = %+v", bot.Status)
	}
	// The cleanup is recorded on the webhook Secret, not on the bot: one API write less.
	if len(bot.Finalizers) != 0 {
		t.Fatalf("bot finalizers = %v; want none", bot.Finalizers)
	}
	for _, typ := range []string{tradingv1.ConditionReconciling, tradingv1.ConditionStalled} {
		if meta.FindStatusCondition(bot.Status.Conditions, typ) != nil {
			t.Fatalf("%s present on a settled bot", typ)
		}
	}

	// The Secret: a UUID v4, the URL built from it, owned by the bot.
	secret := &corev1.Secret{}
	get(t, secret, ns, "btc-webhook")
	id := string(secret.Data[controllers.WebhookSecretKeyID])
	if u, err := uuid.Parse(id); err != nil || u.Version() != 4 {
		t.Fatalf("webhookId %q is not a UUID v4", id)
	}
	if got := string(secret.Data[controllers.WebhookSecretKeyURL]); got != baseURL+"/api/webhooks/trade/"+id {
		t.Fatalf("url = %q", got)
	}
	if owner := metav1.GetControllerOf(secret); owner == nil || owner.UID != bot.UID {
		t.Fatalf("secret controller = %+v", owner)
	}
	if !containsString(secret.Finalizers, tradingv1.FinalizerRuntimeCleanup) ||
		secret.Annotations["trading.sigops.dev/signalbot-uid"] != string(bot.UID) {
		t.Fatalf("secret finalizers = %v, annotations %v; want the cleanup finalizer and the bot's UID", secret.Finalizers, secret.Annotations)
	}

	// Redis: the hash routes to the projected bot; the raw ID appears nowhere.
	reg := registry.New(rdb)
	route, err := reg.Resolve(ctx, registry.HashWebhookID(id))
	if err != nil || route.BotID != string(bot.UID) {
		t.Fatalf("resolve = %+v, %v", route, err)
	}
	p, err := reg.Get(ctx, string(bot.UID))
	if err != nil {
		t.Fatal(err)
	}
	if p.Owner != "trader@example.com" || p.Symbol != "BTC/USDT" || p.PositionSize != "10%" || p.Availability != "active" ||
		!p.WebhookEnabled || !p.Reversals || p.RateLimit.PerMinute != 60 || p.Account.Kind != registry.AccountPaper || p.Account.ID == "" {
		t.Fatalf("projection = %+v", p)
	}
	assertNotInRedis(t, id)

	// The Secret is never overwritten: a spec change keeps the same ID.
	patchBot(t, ns, "btc", func(b *tradingv1.SignalBot) { b.Spec.PositionSize = "25%" })
	waitProjection(t, string(bot.UID), func(p registry.Bot) bool { return p.PositionSize == "25%" })
	if got := webhookID(t, ns, "btc"); got != id {
		t.Fatalf("webhook ID changed on a spec update: %s -> %s", id, got)
	}
}

func TestSuspendPausesAtOnce(t *testing.T) {
	ns := namespace(t)
	create(t, paperAccount(ns, "paper", "a@x.io"))
	create(t, paperBot(ns, "bot", "a@x.io", "paper"))
	bot := waitBot(t, ns, "bot", "active", readyIs(metav1.ConditionTrue, "Active"))

	patchBot(t, ns, "bot", func(b *tradingv1.SignalBot) { b.Spec.Suspend = true })
	waitBot(t, ns, "bot", "paused", func(b *tradingv1.SignalBot) error {
		if b.Status.Availability != tradingv1.AvailabilityPaused || b.Status.PausedReason != tradingv1.PausedManual {
			return fmt.Errorf("availability %s/%s", b.Status.Availability, b.Status.PausedReason)
		}
		return readyIs(metav1.ConditionTrue, "Paused")(b)
	})
	waitProjection(t, string(bot.UID), func(p registry.Bot) bool { return p.Availability == "paused" && p.PausedReason == "Manual" })

	patchBot(t, ns, "bot", func(b *tradingv1.SignalBot) { b.Spec.Suspend = false })
	waitProjection(t, string(bot.UID), func(p registry.Bot) bool { return p.Availability == "active" && p.PausedReason == "" })
}

func TestRegenerateWebhook(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	create(t, paperAccount(ns, "paper", "a@x.io"))
	create(t, paperBot(ns, "bot", "a@x.io", "paper"))
	bot := waitBot(t, ns, "bot", "ready", readyIs(metav1.ConditionTrue, "Active"))
	oldID := webhookID(t, ns, "bot")
	reg := registry.New(rdb)

	patchBot(t, ns, "bot", func(b *tradingv1.SignalBot) {
		metav1.SetMetaDataAnnotation(&b.ObjectMeta, tradingv1.AnnotationRegenerateWebhook, "2026-11-21T10:00:00Z")
	})
	waitBot(t, ns, "bot", "regenerate echoed", func(b *tradingv1.SignalBot) error {
		if b.Status.LastHandledRegenerate != "2026-11-21T10:00:00Z" {
			return fmt.Errorf("lastHandledRegenerate = %q", b.Status.LastHandledRegenerate)
		}
		return nil
	})
	newID := webhookID(t, ns, "bot")
	if newID == oldID {
		t.Fatal("regenerate kept the old ID")
	}
	if _, err := reg.Resolve(ctx, registry.HashWebhookID(oldID)); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("old URL still resolves: %v", err)
	}
	if r, err := reg.Resolve(ctx, registry.HashWebhookID(newID)); err != nil || r.BotID != string(bot.UID) {
		t.Fatalf("new URL: %+v %v", r, err)
	}
	s := &corev1.Secret{}
	get(t, s, ns, "bot-webhook")
	if !strings.HasSuffix(string(s.Data[controllers.WebhookSecretKeyURL]), newID) {
		t.Fatalf("url not updated: %s", s.Data[controllers.WebhookSecretKeyURL])
	}

	// Another reconcile with the same annotation value makes no new ID.
	patchBot(t, ns, "bot", func(b *tradingv1.SignalBot) { b.Spec.PositionSize = "5%" })
	waitProjection(t, string(bot.UID), func(p registry.Bot) bool { return p.PositionSize == "5%" })
	if got := webhookID(t, ns, "bot"); got != newID {
		t.Fatalf("ID changed again without a new annotation value")
	}
}

func TestDeletedSecretGetsNewIDAndOldStops(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	create(t, paperAccount(ns, "paper", "a@x.io"))
	create(t, paperBot(ns, "bot", "a@x.io", "paper"))
	waitBot(t, ns, "bot", "ready", readyIs(metav1.ConditionTrue, "Active"))
	oldID := webhookID(t, ns, "bot")
	if err := k8s.Delete(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bot-webhook"}}); err != nil {
		t.Fatal(err)
	}
	reg := registry.New(rdb)
	eventually(t, "old ID dead", func() error {
		if _, err := reg.Resolve(ctx, registry.HashWebhookID(oldID)); !errors.Is(err, registry.ErrNotFound) {
			return fmt.Errorf("old id: %v", err)
		}
		s := &corev1.Secret{}
		if err := k8s.Get(ctx, keyOf(ns, "bot-webhook"), s); err != nil {
			return err
		}
		_, err := reg.Resolve(ctx, registry.HashWebhookID(string(s.Data[controllers.WebhookSecretKeyID])))
		return err
	})
	// For the moment between the old Secret and the new one nothing else recorded the
	// bot's cleanup: the bot took the finalizer itself before the old Secret went.
	b := &tradingv1.SignalBot{}
	get(t, b, ns, "bot")
	if !containsString(b.Finalizers, tradingv1.FinalizerRuntimeCleanup) {
		t.Fatalf("bot finalizers = %v; want the runtime-cleanup finalizer", b.Finalizers)
	}
}

func TestMissingAccountDisablesUntilCreated(t *testing.T) {
	ns := namespace(t)
	create(t, paperBot(ns, "bot", "a@x.io", "later"))
	bot := waitBot(t, ns, "bot", "disabled", readyIs(metav1.ConditionFalse, "PaperAccountNotFound"))
	if bot.Status.Availability != tradingv1.AvailabilityDisabled {
		t.Fatalf("availability = %s", bot.Status.Availability)
	}
	c := meta.FindStatusCondition(bot.Status.Conditions, tradingv1.ConditionReady)
	if !strings.Contains(c.Message, "later") {
		t.Fatalf("message does not name the account: %q", c.Message)
	}
	waitProjection(t, string(bot.UID), func(p registry.Bot) bool {
		return p.Availability == "disabled" && p.DisabledReason == "PaperAccountNotFound" &&
			p.DisabledCode == registry.DisabledAccountMissing
	})

	create(t, paperAccount(ns, "later", "a@x.io"))
	waitBot(t, ns, "bot", "active after account appears", readyIs(metav1.ConditionTrue, "Active"))
}

func TestAccountOfAnotherOwnerIsRefused(t *testing.T) {
	ns := namespace(t)
	create(t, paperAccount(ns, "paper", "victim@x.io"))
	create(t, paperBot(ns, "bot", "attacker@x.io", "paper"))
	bot := waitBot(t, ns, "bot", "refused", readyIs(metav1.ConditionFalse, "AccountOwnerMismatch"))
	if bot.Status.Availability != tradingv1.AvailabilityDisabled {
		t.Fatalf("availability = %s", bot.Status.Availability)
	}
	waitProjection(t, string(bot.UID), func(p registry.Bot) bool { return p.Availability == "disabled" })
}

func TestDeleteRemovesRuntimeStateAndLeavesTombstone(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	create(t, paperAccount(ns, "paper", "a@x.io"))
	create(t, paperBot(ns, "bot", "a@x.io", "paper"))
	bot := waitBot(t, ns, "bot", "ready", readyIs(metav1.ConditionTrue, "Active"))
	id := webhookID(t, ns, "bot")
	// Trading state of the bot: an open position in its book, its per-day aggregates and
	// its risk counters.
	uid := string(bot.UID)
	tradingKeys := []string{store.BookPositions(uid), store.BookPosition(uid, "BTC/USDT"), store.BookDays(uid), store.RiskCounters(uid)}
	rdb.SAdd(ctx, store.BookPositions(uid), "BTC/USDT")
	rdb.Set(ctx, store.BookPosition(uid, "BTC/USDT"), "{}", 0)
	rdb.HSet(ctx, store.BookDays(uid), "start", "1000")
	if _, err := risk.RecordError(ctx, rdb, uid, clock.Now()); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, tradingKeys...).Val(); n != int64(len(tradingKeys)) {
		t.Fatalf("%d of %d trading keys written", n, len(tradingKeys))
	}

	if err := k8s.Delete(ctx, bot); err != nil {
		t.Fatal(err)
	}
	waitForgotten(t, ns, "bot")
	reg := registry.New(rdb)
	r, err := reg.Resolve(ctx, registry.HashWebhookID(id))
	if err != nil || !r.Deleted || r.BotID != string(bot.UID) {
		t.Fatalf("after delete: %+v, %v; want a tombstone (BOT_DELETED)", r, err)
	}
	if _, err := reg.Get(ctx, string(bot.UID)); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("projection survives: %v", err)
	}
	ids, _ := reg.OwnerBots(ctx, "a@x.io")
	if containsString(ids, string(bot.UID)) {
		t.Fatal("owner index keeps the deleted bot")
	}
	if n := rdb.Exists(ctx, tradingKeys...).Val(); n != 0 {
		t.Fatalf("%d trading keys survive the delete", n)
	}
}

// The controller deletes the departed bot's webhook Secret itself once the runtime state is
// removed: the envtest API server runs no garbage collector, and a bot applied again under
// the same name must not wait for it ("a previous bot"'s Secret).
func TestDeletedBotTakesItsSecretAndReappliesWithNewID(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	create(t, paperAccount(ns, "paper", "a@x.io"))
	create(t, paperBot(ns, "bot", "a@x.io", "paper"))
	old := waitBot(t, ns, "bot", "ready", readyIs(metav1.ConditionTrue, "Active"))
	oldID := webhookID(t, ns, "bot")

	if err := k8s.Delete(ctx, old); err != nil {
		t.Fatal(err)
	}
	waitForgotten(t, ns, "bot")

	create(t, paperBot(ns, "bot", "a@x.io", "paper"))
	bot := waitBot(t, ns, "bot", "re-applied bot ready", readyIs(metav1.ConditionTrue, "Active"))
	if bot.UID == old.UID {
		t.Fatal("the re-applied bot has the old UID")
	}
	s := &corev1.Secret{}
	get(t, s, ns, "bot-webhook")
	newID := string(s.Data[controllers.WebhookSecretKeyID])
	if newID == oldID {
		t.Fatalf("webhook ID %s reused after delete and re-apply", newID)
	}
	if owner := metav1.GetControllerOf(s); owner == nil || owner.UID != bot.UID {
		t.Fatalf("Secret controller = %+v, want the new bot %s", owner, bot.UID)
	}
	reg := registry.New(rdb)
	if r, err := reg.Resolve(ctx, registry.HashWebhookID(newID)); err != nil || r.Deleted || r.BotID != string(bot.UID) {
		t.Fatalf("new ID routes to %+v, %v; want the new bot", r, err)
	}
	if r, err := reg.Resolve(ctx, registry.HashWebhookID(oldID)); err != nil || !r.Deleted || r.BotID != string(old.UID) {
		t.Fatalf("old ID routes to %+v, %v; want the old bot's tombstone (BOT_DELETED)", r, err)
	}
}

// A Secret of the bot's name that another object controls is not the bot's to delete.
func TestDeletedBotLeavesASecretItDoesNotOwn(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	owner := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keeper"}}
	create(t, owner)
	foreign := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bot-webhook",
			// The label puts it in the manager's cache, as a webhook Secret would be.
			Labels: map[string]string{controllers.LabelSecretKind: "webhook"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner.Name, UID: owner.UID,
				Controller: ptrTo(true)}}},
		Data: map[string][]byte{controllers.WebhookSecretKeyID: []byte(uuid.NewString())},
	}
	create(t, foreign)
	create(t, paperAccount(ns, "paper", "a@x.io"))
	create(t, paperBot(ns, "bot", "a@x.io", "paper"))
	bot := waitBot(t, ns, "bot", "stalled on the foreign Secret", func(b *tradingv1.SignalBot) error {
		if c := meta.FindStatusCondition(b.Status.Conditions, tradingv1.ConditionStalled); c == nil || c.Reason != "WebhookSecretInvalid" {
			return fmt.Errorf("stalled = %+v", c)
		}
		return nil
	})
	if len(bot.Finalizers) != 0 {
		t.Fatalf("finalizers = %v; want none (nothing of the bot reached Redis)", bot.Finalizers)
	}

	if err := k8s.Delete(ctx, bot); err != nil {
		t.Fatal(err)
	}
	eventually(t, "bot gone", func() error {
		if err := k8s.Get(ctx, keyOf(ns, "bot"), &tradingv1.SignalBot{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there: %v", err)
		}
		return nil
	})
	s := &corev1.Secret{}
	get(t, s, ns, "bot-webhook")
	if s.UID != foreign.UID || !s.DeletionTimestamp.IsZero() {
		t.Fatalf("the foreign Secret was touched: uid %s (want %s), deletionTimestamp %v", s.UID, foreign.UID, s.DeletionTimestamp)
	}
}

func ptrTo[T any](v T) *T { return &v }

// waitForgotten waits until the bot and its webhook Secret are gone: the Secret goes only
// once the bot's runtime state is removed.
func waitForgotten(t *testing.T, ns, bot string) {
	t.Helper()
	eventually(t, "bot and its webhook Secret gone", func() error {
		if err := k8s.Get(context.Background(), keyOf(ns, bot), &tradingv1.SignalBot{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("bot still there: %v", err)
		}
		if err := k8s.Get(context.Background(), keyOf(ns, bot+"-webhook"), &corev1.Secret{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("webhook Secret still there: %v", err)
		}
		return nil
	})
}

// A bot deleted while no manager ran left only its webhook Secret: the Secret's creation
// event at start-up (here: a Secret written for a bot that does not exist) wakes the
// controller, which removes the state the Secret records and then the Secret. The Secret
// names the bot by its owner reference, or, once a delete with orphan propagation has
// stripped that, by its label and annotation.
func TestSecretOfABotGoneWhileNoManagerRanIsForgotten(t *testing.T) {
	for _, orphaned := range []bool{false, true} {
		t.Run(fmt.Sprintf("orphaned=%v", orphaned), func(t *testing.T) {
			ctx := context.Background()
			ns := namespace(t)
			uid := uuid.NewString()
			id := uuid.NewString()
			rdb.SAdd(ctx, store.BookPositions(uid), "BTC/USDT")
			rdb.Set(ctx, store.BookPosition(uid, "BTC/USDT"), "{}", 0)
			rdb.HSet(ctx, store.BookDays(uid), "start", "1000")
			gone := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ghost-webhook",
					Labels:      map[string]string{controllers.LabelSecretKind: "webhook", "trading.sigops.dev/signalbot": "ghost"},
					Annotations: map[string]string{"trading.sigops.dev/signalbot-uid": uid},
					Finalizers:  []string{tradingv1.FinalizerRuntimeCleanup}},
				Data: map[string][]byte{controllers.WebhookSecretKeyID: []byte(id)},
			}
			if !orphaned {
				gone.OwnerReferences = []metav1.OwnerReference{{APIVersion: tradingv1.GroupVersion.String(), Kind: "SignalBot",
					Name: "ghost", UID: types.UID(uid), Controller: ptrTo(true)}}
			}
			create(t, gone)
			waitForgotten(t, ns, "ghost")
			r, err := registry.New(rdb).Resolve(ctx, registry.HashWebhookID(id))
			if err != nil || !r.Deleted || r.BotID != uid {
				t.Fatalf("the gone bot's URL routes to %+v, %v; want its tombstone (BOT_DELETED)", r, err)
			}
			if n := rdb.Exists(ctx, store.BookPositions(uid), store.BookPosition(uid, "BTC/USDT"), store.BookDays(uid)).Val(); n != 0 {
				t.Fatalf("%d trading keys of the gone bot survive", n)
			}
		})
	}
}

// A bot that carries the finalizer itself (made by a manager that put it there, or whose
// Secret was deleted under it) is finalized before Kubernetes lets it go.
func TestBotWithItsOwnFinalizerIsFinalized(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	create(t, paperAccount(ns, "paper", "a@x.io"))
	b := paperBot(ns, "bot", "a@x.io", "paper")
	b.Finalizers = []string{tradingv1.FinalizerRuntimeCleanup}
	create(t, b)
	bot := waitBot(t, ns, "bot", "ready", readyIs(metav1.ConditionTrue, "Active"))
	id := webhookID(t, ns, "bot")
	if err := k8s.Delete(ctx, bot); err != nil {
		t.Fatal(err)
	}
	waitForgotten(t, ns, "bot")
	reg := registry.New(rdb)
	if r, err := reg.Resolve(ctx, registry.HashWebhookID(id)); err != nil || !r.Deleted || r.BotID != string(bot.UID) {
		t.Fatalf("after delete: %+v, %v; want a tombstone (BOT_DELETED)", r, err)
	}
	if _, err := reg.Get(ctx, string(bot.UID)); !errors.Is(err, registry.ErrNotFound) {
		t.Fatalf("projection survives: %v", err)
	}
}

func TestWebhookDisabledIsProjected(t *testing.T) {
	ns := namespace(t)
	create(t, paperAccount(ns, "paper", "a@x.io"))
	off := false
	b := paperBot(ns, "bot", "a@x.io", "paper")
	b.Spec.Webhook.Enabled = &off
	create(t, b)
	bot := waitBot(t, ns, "bot", "ready", readyIs(metav1.ConditionTrue, "Active"))
	waitProjection(t, string(bot.UID), func(p registry.Bot) bool { return !p.WebhookEnabled })
}

func patchBot(t *testing.T, ns, name string, mutate func(*tradingv1.SignalBot)) {
	t.Helper()
	eventually(t, "update bot", func() error {
		b := &tradingv1.SignalBot{}
		if err := k8s.Get(context.Background(), keyOf(ns, name), b); err != nil {
			return err
		}
		mutate(b)
		return k8s.Update(context.Background(), b)
	})
}

func waitProjection(t *testing.T, id string, ok func(registry.Bot) bool) {
	t.Helper()
	reg := registry.New(rdb)
	eventually(t, "projection", func() error {
		p, err := reg.Get(context.Background(), id)
		if err != nil {
			return err
		}
		if !ok(p) {
			return fmt.Errorf("projection = %+v", p)
		}
		return nil
	})
}

// assertNotInRedis scans every key and value for s.
func assertNotInRedis(t *testing.T, s string) {
	t.Helper()
	ctx := context.Background()
	keys, err := storetest.Keys(ctx, rdb, "*")
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range keys {
		if strings.Contains(k, s) {
			t.Fatalf("key %s contains the secret", k)
		}
		switch rdb.Type(ctx, k).Val() {
		case "hash":
			for f, v := range rdb.HGetAll(ctx, k).Val() {
				if strings.Contains(f, s) || strings.Contains(v, s) {
					t.Fatalf("hash %s holds the secret", k)
				}
			}
		case "set":
			for _, v := range rdb.SMembers(ctx, k).Val() {
				if strings.Contains(v, s) {
					t.Fatalf("set %s holds the secret", k)
				}
			}
		case "string":
			if strings.Contains(rdb.Get(ctx, k).Val(), s) {
				t.Fatalf("string %s holds the secret", k)
			}
		}
	}
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
