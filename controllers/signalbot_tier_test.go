package controllers_test

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/controllers"
	"github.com/sigops/sigops/runtime/auth"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// Live trading is a tier capability: a live bot of an owner without an account, or on the
// free tier, is disabled; a downgrade pauses a running live bot (Downgrade), which the
// resume annotation cannot lift; an upgrade resumes it.
func TestLiveBotFollowsItsOwnersTier(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	cr := newCreds(ns, "tier")
	exchanges.answer(cr.key, permsTrade, nil)
	create(t, credentialsSecret(ns, "creds", cr, false))

	// No account for the owner.
	create(t, connection(ns, "bn-ghost", "ghost@x.io", "creds"))
	waitConnection(t, ns, "bn-ghost", metav1.ConditionTrue, "Validated")
	create(t, exchangeBot(ns, "ghost", "ghost@x.io", "bn-ghost", tradingv1.MarketSpot))
	ghost := waitBot(t, ns, "ghost", "no owner account", readyIs(metav1.ConditionFalse, "OwnerAccountNotFound"))
	waitProjection(t, string(ghost.UID), func(p registry.Bot) bool {
		return p.Availability == "disabled" && p.DisabledCode == registry.DisabledTierNotAllowed
	})

	// A free-tier owner.
	free, err := users.Create(ctx, auth.NewUser{Email: "free-" + ns + "@x.io", Password: "correct horse battery", Tier: auth.TierFree})
	if err != nil {
		t.Fatal(err)
	}
	create(t, connection(ns, "bn-free", free.Email, "creds"))
	waitConnection(t, ns, "bn-free", metav1.ConditionTrue, "Validated")
	create(t, exchangeBot(ns, "free", free.Email, "bn-free", tradingv1.MarketSpot))
	freeBot := waitBot(t, ns, "free", "free tier", readyIs(metav1.ConditionFalse, "OwnerLacksLiveTrading"))
	waitProjection(t, string(freeBot.UID), func(p registry.Bot) bool {
		return p.Availability == "disabled" && p.DisabledCode == registry.DisabledTierNotAllowed
	})

	// A pro owner whose live bot runs, then is downgraded.
	pro, err := users.Create(ctx, auth.NewUser{Email: "pro-" + ns + "@x.io", Password: "correct horse battery", Tier: auth.TierPro})
	if err != nil {
		t.Fatal(err)
	}
	create(t, connection(ns, "bn-pro", pro.Email, "creds"))
	waitConnection(t, ns, "bn-pro", metav1.ConditionTrue, "Validated")
	create(t, exchangeBot(ns, "pro", pro.Email, "bn-pro", tradingv1.MarketSpot))
	bot := waitBot(t, ns, "pro", "pro bot active", readyIs(metav1.ConditionTrue, "Active"))

	ch, err := users.SetTier(ctx, pro.ID, auth.TierFree)
	if err != nil || len(ch.Paused) != 1 || ch.Paused[0] != string(bot.UID) {
		t.Fatalf("downgrade = %+v, %v", ch, err)
	}
	waitBot(t, ns, "pro", "paused by the downgrade", availabilityIs(tradingv1.AvailabilityPaused, tradingv1.PausedDowngrade))

	// The resume annotation does not lift a Downgrade pause while the tier lacks live trading.
	annotateBot(t, ns, "pro", tradingv1.AnnotationResume, "r1")
	waitBot(t, ns, "pro", "resume handled", func(b *tradingv1.SignalBot) error {
		if b.Status.LastHandledResume != "r1" {
			return errString("resume not handled yet")
		}
		return availabilityIs(tradingv1.AvailabilityPaused, tradingv1.PausedDowngrade)(b)
	})
	if p, _ := registry.New(rdb).ReadPause(ctx, string(bot.UID), clock.Now()); p == nil || p.Reason != registry.PauseDowngrade {
		t.Fatalf("runtime pause = %+v", p)
	}

	// An upgrade resumes it.
	if _, err := users.SetTier(ctx, pro.ID, auth.TierTeam); err != nil {
		t.Fatal(err)
	}
	waitBot(t, ns, "pro", "resumed by the upgrade", availabilityIs(tradingv1.AvailabilityActive, ""))
}

type errString string

func (e errString) Error() string { return string(e) }

// Fail closed: when the owner's tier cannot be read (here the reconciler's tier store is a
// redis-server that has been stopped), a running live bot is disabled with
// OwnerTierUnavailable, in its status and in the projection the intake reads, and the
// reconcile comes back soon to look again. It was Active before: an error must not leave
// it trading.
func TestLiveBotDisabledWhenTierUnreadable(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	cr := newCreds(ns, "tier-down")
	exchanges.answer(cr.key, permsTrade, nil)
	create(t, credentialsSecret(ns, "creds", cr, false))
	owner, err := users.Create(ctx, auth.NewUser{Email: "team-" + ns + "@x.io", Password: "correct horse battery", Tier: auth.TierTeam})
	if err != nil {
		t.Fatal(err)
	}
	create(t, connection(ns, "bn", owner.Email, "creds"))
	waitConnection(t, ns, "bn", metav1.ConditionTrue, "Validated")
	create(t, exchangeBot(ns, "live", owner.Email, "bn", tradingv1.MarketSpot))
	bot := waitBot(t, ns, "live", "live bot active", readyIs(metav1.ConditionTrue, "Active"))
	reg := registry.New(rdb)
	if p, err := reg.Get(ctx, string(bot.UID)); err != nil || p.Availability != string(tradingv1.AvailabilityActive) {
		t.Fatalf("projection before = %+v, %v", p, err)
	}

	down, err := storetest.Start()
	if err != nil {
		t.Fatal(err)
	}
	tiers := down.Client()
	defer tiers.Close()
	down.Stop()
	if err := tiers.Ping(ctx).Err(); err == nil {
		t.Fatal("the stopped Redis still answers")
	}
	r := &controllers.SignalBotReconciler{Client: k8s, Registry: reg, Redis: tiers,
		Recorder: events.NewFakeRecorder(16), BaseURL: baseURL, TombstoneTTL: time.Hour, Now: clock.Now}
	res, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: "live"}})
	if err != nil || res.RequeueAfter <= 0 || res.RequeueAfter > 30*time.Second {
		t.Fatalf("reconcile = %+v, %v; want a prompt requeue", res, err)
	}
	waitBot(t, ns, "live", "disabled while the tier is unreadable", func(b *tradingv1.SignalBot) error {
		if err := readyIs(metav1.ConditionFalse, "OwnerTierUnavailable")(b); err != nil {
			return err
		}
		return availabilityIs(tradingv1.AvailabilityDisabled, "")(b)
	})
	p, err := reg.Get(ctx, string(bot.UID))
	if err != nil || p.Availability != string(tradingv1.AvailabilityDisabled) || p.DisabledReason != "OwnerTierUnavailable" ||
		p.DisabledCode != registry.DisabledTierUnavailable {
		t.Fatalf("projection while the tier is unreadable = %+v, %v", p, err)
	}
	if e := p.DisabledError(); e == nil || e.Code != errs.BotDisabled {
		t.Fatalf("a signal would be answered %v; want BOT_DISABLED", e)
	}

	// With the tier readable again (the suite's manager, woken by an annotation) it trades.
	annotateBot(t, ns, "live", "test.sigops.dev/wake", "1")
	waitBot(t, ns, "live", "active again", readyIs(metav1.ConditionTrue, "Active"))
}
