package controllers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/shopspring/decimal"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/intake"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/risk"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// A bot paused for safety stays paused when Redis loses the pause: each reason is recorded
// in the SignalBot's status, and the re-projection after a FLUSHALL, after a restart of
// an empty Redis, and after a restore from a backup older than the pause writes it back,
// so the intake refuses the bot's signals with BOT_PAUSED throughout. (A consecutive-loss
// stop is a Risk pause like a daily-loss one.) The risk counters come back with them, from
// the status' record: the daily-loss rule goes on from the amount it had reached.
func TestRuntimePausesSurviveALostRedis(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	create(t, paperAccount(ns, "paper", "a@x.io"))
	until := clock.Now().Add(24 * time.Hour).Truncate(time.Second)
	pauses := map[string]registry.Pause{
		"errors":    {Reason: registry.PauseErrors},
		"risk":      {Reason: registry.PauseRisk, Until: until},
		"downgrade": {Reason: registry.PauseDowngrade},
		"manual":    {Reason: registry.PauseManual},
	}
	ids, hooks := map[string]string{}, map[string]string{}
	for name, p := range pauses {
		create(t, paperBot(ns, name, "a@x.io", "paper"))
		b := waitBot(t, ns, name, "bot Ready", readyIs(metav1.ConditionTrue, "Active"))
		ids[name], hooks[name] = string(b.UID), webhookID(t, ns, name)
		pauseBot(t, ids[name], p)
	}
	// The daily-loss bot lost 75.25 today over four trades, the last three losing: the
	// counters the rule goes on from.
	lossDay := clock.Now().UTC().Format("2006-01-02")
	lost := risk.Counters{Day: lossDay, DayPnl: decimal.RequireFromString("-75.25"), ConsecutiveLosses: 3, Trades: 4}
	if err := rdb.HSet(ctx, store.RiskCounters(ids["risk"]), risk.CountersArgs(lost)...).Err(); err != nil {
		t.Fatal(err)
	}
	annotateBot(t, ns, "risk", "example.com/poke", "0")
	waitBot(t, ns, "risk", "risk counters recorded", func(b *tradingv1.SignalBot) error {
		rc := b.Status.RiskCounters
		if rc == nil || rc.Day != lossDay || rc.DayPnl != "-75.25" || rc.ConsecutiveLosses != 3 || rc.Trades != 4 {
			return fmt.Errorf("riskCounters = %+v", rc)
		}
		return nil
	})
	for name, p := range pauses {
		waitBot(t, ns, name, "pause recorded", func(b *tradingv1.SignalBot) error {
			rec := b.Status.RuntimePause
			if rec == nil || rec.Reason != p.Reason || rec.Sequence != 1 || rec.Since == nil {
				return fmt.Errorf("runtimePause = %+v", rec)
			}
			if (rec.Until != nil) != !p.Until.IsZero() || rec.Until != nil && !rec.Until.Time.Equal(p.Until) {
				return fmt.Errorf("until = %v, want %v", rec.Until, p.Until)
			}
			return nil
		})
	}
	in := intake.New(rdb)
	stillPaused := func(what string) {
		t.Helper()
		reg := registry.New(rdb)
		eventually(t, what, func() error {
			for name, p := range pauses {
				got, err := reg.ReadPause(ctx, ids[name], clock.Now())
				if err != nil || got == nil || got.Reason != p.Reason || !got.Until.Equal(p.Until) {
					return fmt.Errorf("bot %s: pause %+v, %v", name, got, err)
				}
				if err := admit(ctx, in, hooks[name], ids[name]); errs.CodeOf(err) != errs.BotPaused {
					return fmt.Errorf("bot %s: a signal got %v, want BOT_PAUSED", name, err)
				}
			}
			// The daily-loss rule goes on from the same amount and run.
			c, err := risk.ReadCounters(ctx, rdb, ids["risk"])
			if err != nil || !c.DailyLossUsed(clock.Now()).Equal(decimal.RequireFromString("75.25")) || c.ConsecutiveLosses != 3 || c.Trades != 4 {
				return fmt.Errorf("risk counters %+v, %v", c, err)
			}
			return nil
		})
	}

	if err := storetest.FlushAll(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	stillPaused("paused again after FLUSHALL")

	if err := redisServer.Restart(); err != nil {
		t.Fatal(err)
	}
	stillPaused("paused again after an empty Redis restarted")

	// A backup taken before the pauses, restored: the hashes are there, without the pause
	// fields and with the change count they had then.
	for _, id := range ids {
		if err := rdb.HDel(ctx, store.Bot(id), registry.FieldPause, registry.FieldPauseUntil, registry.FieldPauseSince).Err(); err != nil {
			t.Fatal(err)
		}
		if err := rdb.HSet(ctx, store.Bot(id), registry.FieldPauseSeq, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	older := risk.Counters{Day: lossDay, DayPnl: decimal.RequireFromString("-10"), ConsecutiveLosses: 1, Trades: 2}
	if err := rdb.HSet(ctx, store.RiskCounters(ids["risk"]), risk.CountersArgs(older)...).Err(); err != nil {
		t.Fatal(err)
	}
	for name := range pauses {
		annotateBot(t, ns, name, "example.com/poke", "1") // any reconcile re-projects
	}
	stillPaused("paused again after an older backup was restored")

	// A resume clears both: Redis and the record, and the bot trades again.
	annotateBot(t, ns, "errors", tradingv1.AnnotationResume, "r1")
	b := waitBot(t, ns, "errors", "resumed", availabilityIs(tradingv1.AvailabilityActive, ""))
	if rec := b.Status.RuntimePause; rec == nil || rec.Reason != "" || rec.Sequence != 2 {
		t.Fatalf("after the resume: runtimePause = %+v", rec)
	}
	if err := admit(ctx, in, hooks["errors"], ids["errors"]); err != nil {
		t.Fatalf("a resumed bot refuses a signal: %v", err)
	}
	if err := storetest.FlushAll(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the resumed bot stays resumed after FLUSHALL", func() error {
		return admit(ctx, in, hooks["errors"], ids["errors"])
	})
}
