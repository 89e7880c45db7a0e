package controllers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
)

func availabilityIs(a tradingv1.Availability, reason tradingv1.PausedReason) func(*tradingv1.SignalBot) error {
	return func(b *tradingv1.SignalBot) error {
		if b.Status.Availability != a || b.Status.PausedReason != reason {
			return fmt.Errorf("availability %s/%s", b.Status.Availability, b.Status.PausedReason)
		}
		return nil
	}
}

func annotateBot(t *testing.T, ns, name, key, value string) {
	t.Helper()
	patchBot(t, ns, name, func(b *tradingv1.SignalBot) { metav1.SetMetaDataAnnotation(&b.ObjectMeta, key, value) })
}

func TestRuntimePauseIsMirroredAndResumed(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	create(t, paperAccount(ns, "paper", "a@x.io"))
	create(t, paperBot(ns, "bot", "a@x.io", "paper"))
	bot := waitBot(t, ns, "bot", "active", readyIs(metav1.ConditionTrue, "Active"))
	key := store.Bot(string(bot.UID))

	// The executor paused the bot after five errors.
	rdb.HSet(ctx, key, registry.FieldPause, "Errors", registry.FieldPauseUntil, "0")
	annotateBot(t, ns, "bot", "example.com/poke", "1")
	waitBot(t, ns, "bot", "paused by errors", availabilityIs(tradingv1.AvailabilityPaused, tradingv1.PausedErrors))

	// The projection keeps the spec-level availability; the intake reads the pause itself.
	waitProjection(t, string(bot.UID), func(p registry.Bot) bool { return p.Availability == "active" })

	annotateBot(t, ns, "bot", tradingv1.AnnotationResume, "r1")
	waitBot(t, ns, "bot", "resumed", func(b *tradingv1.SignalBot) error {
		if b.Status.LastHandledResume != "r1" {
			return fmt.Errorf("lastHandledResume = %q", b.Status.LastHandledResume)
		}
		return availabilityIs(tradingv1.AvailabilityActive, "")(b)
	})
	if n := rdb.HExists(ctx, key, registry.FieldPause).Val(); n {
		t.Fatal("pause field survives the resume")
	}

	// A Risk pause with an end: paused until then, active after without any poke.
	until := clock.Now().Add(2 * time.Second).UnixMilli()
	rdb.HSet(ctx, key, registry.FieldPause, "Risk", registry.FieldPauseUntil, until)
	annotateBot(t, ns, "bot", "example.com/poke", "2")
	waitBot(t, ns, "bot", "paused by risk", availabilityIs(tradingv1.AvailabilityPaused, tradingv1.PausedRisk))
	waitBot(t, ns, "bot", "active after the risk pause ends", availabilityIs(tradingv1.AvailabilityActive, ""))
}

func TestManualPauseWinsOverRuntimePause(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	create(t, paperAccount(ns, "paper", "a@x.io"))
	b := paperBot(ns, "bot", "a@x.io", "paper")
	b.Spec.Suspend = true
	create(t, b)
	bot := waitBot(t, ns, "bot", "manual", availabilityIs(tradingv1.AvailabilityPaused, tradingv1.PausedManual))
	rdb.HSet(ctx, store.Bot(string(bot.UID)), registry.FieldPause, "Errors")
	annotateBot(t, ns, "bot", "example.com/poke", "1")
	time.Sleep(300 * time.Millisecond)
	waitBot(t, ns, "bot", "still manual", availabilityIs(tradingv1.AvailabilityPaused, tradingv1.PausedManual))
}

// The executor announces a pause on store.BotEvents; status follows without any change to
// the object.
func TestPauseEventUpdatesStatusAtOnce(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	create(t, paperAccount(ns, "paper", "a@x.io"))
	create(t, paperBot(ns, "bot", "a@x.io", "paper"))
	bot := waitBot(t, ns, "bot", "active", readyIs(metav1.ConditionTrue, "Active"))
	rdb.HSet(ctx, store.Bot(string(bot.UID)), registry.FieldPause, "Errors", registry.FieldPauseUntil, "0")
	if err := rdb.Publish(ctx, store.BotEvents(), string(bot.UID)).Err(); err != nil {
		t.Fatal(err)
	}
	waitBot(t, ns, "bot", "paused by the event", availabilityIs(tradingv1.AvailabilityPaused, tradingv1.PausedErrors))
}
