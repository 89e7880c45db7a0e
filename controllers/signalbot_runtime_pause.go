package controllers

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/registry"
)

// mirrorRuntimePause shows in status the bot's runtime pause (registry.Pause: Errors after
// five consecutive execution errors, Risk until the next UTC day, Downgrade while the
// owner's tier lacks live trading), and lifts it when the resume annotation carries a new
// value. The projection keeps the spec-level availability: the intake reads the runtime
// pause itself, so a Risk pause ends at midnight UTC without waiting for this controller.
// It returns when to look again (the end of a timed pause).
func (r *SignalBotReconciler) mirrorRuntimePause(ctx context.Context, bot *tradingv1.SignalBot) (time.Duration, error) {
	id := string(bot.UID)
	now := r.now()
	if want := bot.Annotations[tradingv1.AnnotationResume]; want != "" && want != bot.Status.LastHandledResume {
		current, err := r.Registry.ReadPause(ctx, id, now)
		if err != nil {
			return 0, err
		}
		allowed := true
		if current != nil && current.Reason == registry.PauseDowngrade {
			// A Downgrade pause ends with the tier, not with an annotation.
			if allowed, err = r.liveTradingAllowed(ctx, bot); err != nil {
				return 0, err
			}
		}
		if allowed {
			// Only the pause read is lifted: one written since (a Downgrade) stays.
			if current != nil {
				if _, err := r.Registry.Resume(ctx, id, *current); err != nil {
					return 0, err
				}
			}
			r.Recorder.Eventf(bot, nil, corev1.EventTypeNormal, "Resumed", "Resume", "runtime pause cleared")
		} else {
			r.Recorder.Eventf(bot, nil, corev1.EventTypeWarning, "ResumeRefused", "Resume",
				"paused by a tier downgrade: the owner's tier must include live trading first")
		}
		bot.Status.LastHandledResume = want
	}
	pause, err := r.Registry.ReadPause(ctx, id, now)
	if err != nil || pause == nil {
		return 0, err
	}
	// Disabled and Manual win over a runtime pause: they need the user either way.
	if bot.Status.Availability == tradingv1.AvailabilityActive {
		bot.Status.Availability, bot.Status.PausedReason = tradingv1.AvailabilityPaused, tradingv1.PausedReason(pause.Reason)
	}
	if !pause.Until.IsZero() {
		return pause.Until.Sub(now) + time.Second, nil
	}
	return 0, nil
}

func (r *SignalBotReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
