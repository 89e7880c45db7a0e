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
	id := string(bot.UID)

	// The executor paused the bot after five errors.
	pauseBot(t, id, registry.Pause{Reason: registry.PauseErrors})
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
	if n := rdb.HExists(ctx, store.Bot(id), registry.FieldPause).Val(); n {
		t.Fatal("pause field survives the resume")
	}

	// A Risk pause with an end: paused until then, active after without any poke.
	pauseBot(t, id, registry.Pause{Reason: registry.PauseRisk, Until: clock.Now().Add(2 * time.Second)})
	waitBot(t, ns, "bot", "paused by risk", availabilityIs(tradingv1.AvailabilityPaused, tradingv1.PausedRisk))
	waitBot(t, ns, "bot", "active after the risk pause ends", availabilityIs(tradingv1.AvailabilityActive, ""))
}

// pauseBot writes a runtime pause as the executor does (which publishes it).
func pauseBot(t *testing.T, id string, p registry.Pause) {
	t.Helper()
	if ok, err := registry.New(rdb).Pause(context.Background(), id, p, clock.Now()); !ok || err != nil {
		t.Fatalf("pause %+v = %v, %v", p, ok, err)
	}
}

// A suspended bot stays Manual under a runtime pause. The spec change after the pause makes
// a reconcile that must have read the pause (its generation is observed only after the
// pause was written), so the test fails when that reconcile never runs as well as when it
// shows the runtime pause.
func TestManualPauseWinsOverRuntimePause(t *testing.T) {
	ns := namespace(t)
	create(t, paperAccount(ns, "paper", "a@x.io"))
	b := paperBot(ns, "bot", "a@x.io", "paper")
	b.Spec.Suspend = true
	create(t, b)
	bot := waitBot(t, ns, "bot", "manual", availabilityIs(tradingv1.AvailabilityPaused, tradingv1.PausedManual))
	pauseBot(t, string(bot.UID), registry.Pause{Reason: registry.PauseErrors})
	patchBot(t, ns, "bot", func(b *tradingv1.SignalBot) { b.Spec.Symbol = "ETH/USDT" })
	waitBot(t, ns, "bot", "reconciled after the pause, still manual", func(b *tradingv1.SignalBot) error {
		if b.Generation == bot.Generation || b.Status.ObservedGeneration != b.Generation {
			return fmt.Errorf("generation %d (%d before the pause) observed %d", b.Generation, bot.Generation, b.Status.ObservedGeneration)
		}
		return availabilityIs(tradingv1.AvailabilityPaused, tradingv1.PausedManual)(b)
	})
	waitProjection(t, string(bot.UID), func(p registry.Bot) bool {
		return p.Symbol == "ETH/USDT" && p.Availability == "paused" && p.PausedReason == "Manual"
	})
}

// The executor announces a pause on store.BotEvents; status follows without any change to
// the object.
func TestPauseEventUpdatesStatusAtOnce(t *testing.T) {
	ns := namespace(t)
	create(t, paperAccount(ns, "paper", "a@x.io"))
	create(t, paperBot(ns, "bot", "a@x.io", "paper"))
	bot := waitBot(t, ns, "bot", "active", readyIs(metav1.ConditionTrue, "Active"))
	pauseBot(t, string(bot.UID), registry.Pause{Reason: registry.PauseErrors})
	waitBot(t, ns, "bot", "paused by the event", availabilityIs(tradingv1.AvailabilityPaused, tradingv1.PausedErrors))
}
