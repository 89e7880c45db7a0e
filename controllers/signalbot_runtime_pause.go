package controllers

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/registry"
)

// mirrorRuntimePause records in status the bot's runtime pause (status.runtimePause, which
// the projection writes back when Redis loses it: recordedPause) and shows it in the bot's
// availability: the runtime pause (registry.Pause: Errors after
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
	pause, seq, err := r.Registry.ReadPauseSeq(ctx, id, now)
	if err != nil {
		return 0, err
	}
	recordPause(bot, pause, seq)
	if pause == nil {
		return 0, nil
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

// recordPause records the pause Redis holds and its change count in status. A count behind
// the recorded one means Redis lost the latest change and the projection could not write
// it back (the hash went away meanwhile): the record stays as it is for the next reconcile.
func recordPause(bot *tradingv1.SignalBot, pause *registry.Pause, seq int64) {
	rec := bot.Status.RuntimePause
	if rec == nil && pause == nil && seq == 0 {
		return
	}
	if rec != nil && seq < rec.Sequence {
		return
	}
	next := &tradingv1.RuntimePauseStatus{Sequence: seq}
	if pause != nil {
		next.Reason = pause.Reason
		if !pause.Since.IsZero() {
			since := metav1.NewTime(pause.Since)
			next.Since = &since
		}
		if !pause.Until.IsZero() {
			until := metav1.NewTime(pause.Until)
			next.Until = &until
		}
	}
	bot.Status.RuntimePause = next
}

// recordedPause is the status' record as the projection writes it back (nil: nothing
// recorded yet).
func recordedPause(rec *tradingv1.RuntimePauseStatus) *registry.Recorded {
	if rec == nil {
		return nil
	}
	out := &registry.Recorded{Seq: rec.Sequence}
	if rec.Reason != "" {
		p := &registry.Pause{Reason: rec.Reason}
		if rec.Since != nil {
			p.Since = rec.Since.Time
		}
		if rec.Until != nil {
			p.Until = rec.Until.Time
		}
		out.Pause = p
	}
	return out
}

func (r *SignalBotReconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}
