package registry_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/risk"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

var noon = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// pauseFixture is a projected bot and a subscription to store.BotEvents.
type pauseFixture struct {
	t   *testing.T
	ctx context.Context
	rdb redis.UniversalClient
	reg *registry.Registry
	sub *redis.PubSub
}

func newPauseFixture(t *testing.T) *pauseFixture {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	f := &pauseFixture{t: t, ctx: ctx, rdb: rdb, reg: registry.New(rdb)}
	if err := f.reg.Project(ctx, bot("b", "a@x.io"), registry.HashWebhookID("99999999-9999-4999-8999-999999999999")); err != nil {
		t.Fatal(err)
	}
	f.sub = rdb.Subscribe(ctx, store.BotEvents())
	t.Cleanup(func() { f.sub.Close() })
	if _, err := f.sub.Receive(ctx); err != nil {
		t.Fatal(err)
	}
	return f
}

// set writes p and checks whether it was written (and published) as want says.
func (f *pauseFixture) set(p registry.Pause, now time.Time, want bool) {
	f.t.Helper()
	ok, err := f.reg.Pause(f.ctx, "b", p, now)
	if err != nil || ok != want {
		f.t.Fatalf("pause %+v = %v, %v; want %v", p, ok, err, want)
	}
	if want {
		f.published()
	} else {
		f.quiet()
	}
}

// quiet checks that nothing was published: a pause left as it was wakes no reconcile.
func (f *pauseFixture) quiet() {
	f.t.Helper()
	if m, err := f.sub.ReceiveTimeout(f.ctx, 50*time.Millisecond); err == nil {
		f.t.Fatalf("unexpected event %v", m)
	}
}

// published checks that an event names the bot.
func (f *pauseFixture) published() {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.ctx, 2*time.Second)
	defer cancel()
	m, err := f.sub.ReceiveMessage(ctx)
	if err != nil || m.Payload != "b" {
		f.t.Fatalf("event = %v, %v; want the bot's ID", m, err)
	}
}

// holds checks the pause in force at now.
func (f *pauseFixture) holds(now time.Time, want *registry.Pause) {
	f.t.Helper()
	got, err := f.reg.ReadPause(f.ctx, "b", now)
	if err != nil {
		f.t.Fatal(err)
	}
	if (got == nil) != (want == nil) || (got != nil && (got.Reason != want.Reason || !got.Until.Equal(want.Until))) {
		f.t.Fatalf("pause at %s = %+v; want %+v", now, got, want)
	}
}

func TestPauseLongerPauseStays(t *testing.T) {
	f := newPauseFixture(t)
	day := noon.Add(12 * time.Hour)
	risk := registry.Pause{Reason: registry.PauseRisk, Until: day}
	f.set(risk, noon, true)
	f.holds(noon, &risk)

	// A Risk pause ending sooner, or at the same time, leaves it.
	f.set(registry.Pause{Reason: registry.PauseRisk, Until: noon.Add(time.Hour)}, noon, false)
	f.set(risk, noon, false)
	// One ending later replaces it.
	later := registry.Pause{Reason: registry.PauseRisk, Until: day.Add(time.Hour)}
	f.set(later, noon, true)
	f.holds(noon, &later)
	// An open-ended Errors pause replaces a timed one and is never shortened by one.
	errors := registry.Pause{Reason: registry.PauseErrors}
	f.set(errors, noon, true)
	f.set(later, noon, false)
	f.set(errors, noon, false)
	f.holds(day.Add(365*24*time.Hour), &errors)
}

func TestPauseAfterAnEndedPause(t *testing.T) {
	f := newPauseFixture(t)
	f.set(registry.Pause{Reason: registry.PauseErrors}, noon, true)
	if ok, err := f.reg.Resume(f.ctx, "b", registry.Pause{Reason: registry.PauseErrors}); !ok || err != nil {
		t.Fatal(ok, err)
	}
	f.published()
	// A Risk pause whose time is over counts as none: a shorter one is written over it.
	f.set(registry.Pause{Reason: registry.PauseRisk, Until: noon.Add(time.Hour)}, noon, true)
	next := registry.Pause{Reason: registry.PauseRisk, Until: noon.Add(2 * time.Hour)}
	f.set(next, noon.Add(90*time.Minute), true)
	f.holds(noon.Add(90*time.Minute), &next)
}

// A Downgrade pause replaces any other (an Errors pause could be resumed, a Risk pause ends
// by itself) and stays under the executor's pauses.
func TestPauseDowngradeReplacesAndStays(t *testing.T) {
	f := newPauseFixture(t)
	f.set(registry.Pause{Reason: registry.PauseErrors}, noon, true)
	down := registry.Pause{Reason: registry.PauseDowngrade}
	f.set(down, noon, true)
	f.set(down, noon, false) // again: nothing changes, nothing is published
	f.set(registry.Pause{Reason: registry.PauseErrors}, noon, false)
	f.set(registry.Pause{Reason: registry.PauseRisk, Until: noon.Add(time.Hour)}, noon, false)
	f.holds(noon, &down)
	if v := f.rdb.HGet(f.ctx, store.Bot("b"), registry.FieldPauseUntil).Val(); v != "0" {
		t.Fatalf("pauseUntil = %q; want 0", v)
	}
	// Over a Risk pause too.
	if ok, _ := f.reg.Resume(f.ctx, "b", down); !ok {
		t.Fatal("downgrade not resumed")
	}
	f.published()
	f.set(registry.Pause{Reason: registry.PauseRisk, Until: noon.Add(time.Hour)}, noon, true)
	f.set(down, noon, true)
	f.holds(noon, &down)
}

// Resume lifts only the pause the caller read: one written since stays.
func TestResumeLiftsOnlyThePauseMeant(t *testing.T) {
	f := newPauseFixture(t)
	risk := registry.Pause{Reason: registry.PauseRisk, Until: noon.Add(time.Hour)}
	f.set(risk, noon, true)
	for _, other := range []registry.Pause{
		{Reason: registry.PauseErrors},
		{Reason: registry.PauseRisk, Until: noon.Add(2 * time.Hour)},
		{Reason: registry.PauseDowngrade},
	} {
		if ok, err := f.reg.Resume(f.ctx, "b", other); ok || err != nil {
			t.Fatalf("resume %+v = %v, %v; want the Risk pause left", other, ok, err)
		}
	}
	f.quiet()
	f.holds(noon, &risk)
	if ok, err := f.reg.Resume(f.ctx, "b", risk); !ok || err != nil {
		t.Fatal(ok, err)
	}
	f.published()
	f.holds(noon, nil)
	if n := f.rdb.HExists(f.ctx, store.Bot("b"), registry.FieldPause).Val(); n {
		t.Fatal("pause fields left after the resume")
	}
	// Nothing to resume: nothing changes.
	if ok, err := f.reg.Resume(f.ctx, "b", risk); ok || err != nil {
		t.Fatal(ok, err)
	}
	f.quiet()
}

func TestReadPauseLiftsAnEndedPause(t *testing.T) {
	f := newPauseFixture(t)
	until := noon.Add(12 * time.Hour)
	risk := registry.Pause{Reason: registry.PauseRisk, Until: until}
	f.set(risk, noon, true)
	f.holds(until.Add(-time.Millisecond), &risk)
	f.holds(until, nil)
	f.published()
	if n := f.rdb.HExists(f.ctx, store.Bot("b"), registry.FieldPause).Val(); n {
		t.Fatal("ended pause not cleared")
	}
}

// No pause for a bot that is not projected: a late pause must not re-create a deleted
// bot's hash.
func TestPauseOfAMissingBot(t *testing.T) {
	f := newPauseFixture(t)
	for _, p := range []registry.Pause{{Reason: registry.PauseErrors}, {Reason: registry.PauseDowngrade}} {
		if ok, err := f.reg.Pause(f.ctx, "gone", p, noon); ok || err != nil {
			t.Fatalf("pause %+v = %v, %v", p, ok, err)
		}
	}
	if n := f.rdb.Exists(f.ctx, store.Bot("gone")).Val(); n != 0 {
		t.Fatal("the bot's hash was created")
	}
}

// StagePause writes with the transaction it is part of.
func TestStagePause(t *testing.T) {
	f := newPauseFixture(t)
	risk := registry.Pause{Reason: registry.PauseRisk, Until: noon.Add(time.Hour)}
	if _, err := f.rdb.TxPipelined(f.ctx, func(p redis.Pipeliner) error {
		registry.StagePause(f.ctx, p, "b", risk, noon)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	f.published()
	f.holds(noon, &risk)
}

// The projection never touches the runtime pause.
func TestProjectKeepsThePause(t *testing.T) {
	f := newPauseFixture(t)
	errors := registry.Pause{Reason: registry.PauseErrors}
	f.set(errors, noon, true)
	if err := f.reg.Project(f.ctx, bot("b", "a@x.io"), registry.HashWebhookID("99999999-9999-4999-8999-999999999999")); err != nil {
		t.Fatal(err)
	}
	f.holds(noon, &errors)
}

// WithPauses shows a pause in force on an active bot, leaves a disabled bot as it is, and
// lifts a pause whose time is over.
func TestWithPauses(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	reg := registry.New(rdb)
	disabled := bot("off", "a@x.io")
	disabled.Availability = "disabled"
	bots := []registry.Bot{bot("manual", "a@x.io"), bot("over", "a@x.io"), disabled, bot("none", "a@x.io")}
	for i, b := range bots {
		if err := reg.Project(ctx, b, registry.HashWebhookID(fmt.Sprintf("99999999-9999-4999-8999-99999999999%d", i))); err != nil {
			t.Fatal(err)
		}
	}
	for id, p := range map[string]registry.Pause{"manual": {Reason: registry.PauseManual},
		"over": {Reason: registry.PauseRisk, Until: noon.Add(time.Hour)}, "off": {Reason: registry.PauseErrors}} {
		if ok, err := reg.Pause(ctx, id, p, noon); err != nil || !ok {
			t.Fatalf("pause %s: %v, %v", id, ok, err)
		}
	}
	// Two hours later the Risk pause is over.
	if err := reg.WithPauses(ctx, bots, noon.Add(2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	want := [][2]string{{"paused", "Manual"}, {"active", ""}, {"disabled", ""}, {"active", ""}}
	for i, b := range bots {
		if b.Availability != want[i][0] || b.PausedReason != want[i][1] {
			t.Errorf("%s: %s %q, want %v", b.ID, b.Availability, b.PausedReason, want[i])
		}
	}
	if p, err := reg.ReadPause(ctx, "over", noon); err != nil || p != nil {
		t.Fatalf("the Risk pause is not lifted: %+v, %v", p, err)
	}
	if err := reg.WithPauses(ctx, nil, noon); err != nil {
		t.Fatal(err)
	}
}

// Every pause and every lift counts one change, read with the pause in one step; a pause
// records when it was written.
func TestPauseChangesAreCounted(t *testing.T) {
	f := newPauseFixture(t)
	if p, seq, err := f.reg.ReadPauseSeq(f.ctx, "b", noon); err != nil || p != nil || seq != 0 {
		t.Fatalf("fresh bot: %+v %d %v", p, seq, err)
	}
	f.set(registry.Pause{Reason: registry.PauseErrors}, noon, true)
	p, seq, err := f.reg.ReadPauseSeq(f.ctx, "b", noon)
	if err != nil || p == nil || p.Reason != registry.PauseErrors || seq != 1 || !p.Since.Equal(noon) {
		t.Fatalf("after a pause: %+v %d %v", p, seq, err)
	}
	if ok, err := f.reg.Resume(f.ctx, "b", *p); err != nil || !ok {
		t.Fatal(ok, err)
	}
	if p, seq, err = f.reg.ReadPauseSeq(f.ctx, "b", noon); err != nil || p != nil || seq != 2 {
		t.Fatalf("after the resume: %+v %d %v", p, seq, err)
	}
	// A Risk pause that ends is lifted by the read, which counts it.
	f.set(registry.Pause{Reason: registry.PauseRisk, Until: noon.Add(time.Hour)}, noon, true)
	if p, seq, err = f.reg.ReadPauseSeq(f.ctx, "b", noon.Add(2*time.Hour)); err != nil || p != nil || seq != 4 {
		t.Fatalf("after the Risk pause ended: %+v %d %v", p, seq, err)
	}
}

// A projection writes back the recorded pause when Redis is behind the record (flushed, or
// restored from before the pause), in the step that writes the bot's hash; a Redis that
// saw every change the record saw keeps its own state.
func TestProjectionWritesBackALostPause(t *testing.T) {
	f := newPauseFixture(t)
	hook := registry.HashWebhookID("99999999-9999-4999-8999-999999999999")
	f.set(registry.Pause{Reason: registry.PauseManual}, noon, true)
	p, seq, err := f.reg.ReadPauseSeq(f.ctx, "b", noon)
	if err != nil || p == nil {
		t.Fatal(p, err)
	}
	rec := &registry.Recorded{Pause: p, Seq: seq}

	// Redis flushed: the re-created hash has the pause back, with the record's count.
	if err := storetest.FlushAll(f.ctx, f.rdb); err != nil {
		t.Fatal(err)
	}
	if err := f.reg.ProjectRecorded(f.ctx, bot("b", "a@x.io"), hook, rec, time.Now()); err != nil {
		t.Fatal(err)
	}
	f.published()
	got, gotSeq, err := f.reg.ReadPauseSeq(f.ctx, "b", noon)
	if err != nil || got == nil || got.Reason != registry.PauseManual || gotSeq != seq || !got.Since.Equal(noon) {
		t.Fatalf("after FLUSHALL: %+v %d %v", got, gotSeq, err)
	}
	// Projected again with the same record: nothing to write back.
	if err := f.reg.ProjectRecorded(f.ctx, bot("b", "a@x.io"), hook, rec, time.Now()); err != nil {
		t.Fatal(err)
	}
	f.quiet()

	// Resumed after the record was taken: Redis is ahead, and the lift stands.
	if ok, err := f.reg.Resume(f.ctx, "b", *got); err != nil || !ok {
		t.Fatal(ok, err)
	}
	f.published()
	if err := f.reg.ProjectRecorded(f.ctx, bot("b", "a@x.io"), hook, rec, time.Now()); err != nil {
		t.Fatal(err)
	}
	if got, _, err := f.reg.ReadPauseSeq(f.ctx, "b", noon); err != nil || got != nil {
		t.Fatalf("a resume seen by Redis was undone: %+v %v", got, err)
	}

	// Restored from a backup older than a Risk pause that is still due (the projection
	// judges that on the wall clock): written back.
	now := time.Now()
	risk := &registry.Recorded{Pause: &registry.Pause{Reason: registry.PauseRisk, Until: now.Add(time.Hour), Since: now}, Seq: 9}
	if err := f.rdb.HDel(f.ctx, store.Bot("b"), registry.FieldPause, registry.FieldPauseUntil).Err(); err != nil {
		t.Fatal(err)
	}
	if err := f.reg.ProjectRecorded(f.ctx, bot("b", "a@x.io"), hook, risk, time.Now()); err != nil {
		t.Fatal(err)
	}
	if got, gotSeq, err := f.reg.ReadPauseSeq(f.ctx, "b", now); err != nil || got == nil || got.Reason != registry.PauseRisk || gotSeq != 9 {
		t.Fatalf("after restoring an older backup: %+v %d %v", got, gotSeq, err)
	}
	// The record says no pause, and the older backup held one: lifted.
	older := &registry.Recorded{Seq: 20}
	if err := f.reg.ProjectRecorded(f.ctx, bot("b", "a@x.io"), hook, older, time.Now()); err != nil {
		t.Fatal(err)
	}
	if got, gotSeq, err := f.reg.ReadPauseSeq(f.ctx, "b", now); err != nil || got != nil || gotSeq != 20 {
		t.Fatalf("a pause the record had lifted: %+v %d %v", got, gotSeq, err)
	}
}

// The risk counters the status records are written back over a Redis that lost them or
// holds an older copy (fewer trades taken in), never over a newer one: the daily-loss and
// consecutive-loss rules go on from the same amounts.
func TestProjectionWritesBackLostRiskCounters(t *testing.T) {
	f := newPauseFixture(t)
	hook := registry.HashWebhookID("99999999-9999-4999-8999-999999999999")
	counters := func() risk.Counters {
		t.Helper()
		c, err := risk.ReadCounters(f.ctx, f.rdb, "b")
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	loss := risk.Counters{Day: "2026-11-21", DayPnl: decimal.RequireFromString("-75.25"), ConsecutiveLosses: 3, ConsecutiveErrors: 1, Trades: 7}
	rec := &registry.Recorded{}
	loss.RecordInto(rec)
	project := func(rec *registry.Recorded) {
		t.Helper()
		if err := f.reg.ProjectRecorded(f.ctx, bot("b", "a@x.io"), hook, rec, noon); err != nil {
			t.Fatal(err)
		}
	}

	// Lost with everything else: back as recorded, to the last decimal.
	if err := storetest.FlushAll(f.ctx, f.rdb); err != nil {
		t.Fatal(err)
	}
	project(rec)
	if got := counters(); got.Day != loss.Day || !got.DayPnl.Equal(loss.DayPnl) || got.ConsecutiveLosses != 3 || got.Trades != 7 {
		t.Fatalf("after FLUSHALL: %+v", got)
	}
	if used := counters().DailyLossUsed(noon); !used.Equal(decimal.RequireFromString("75.25")) {
		t.Fatalf("daily loss used after FLUSHALL = %s", used)
	}

	// An older backup restored (two trades fewer, a smaller loss): the record wins.
	older := risk.Counters{Day: "2026-11-21", DayPnl: decimal.RequireFromString("-20"), ConsecutiveLosses: 1, Trades: 5}
	f.rdb.Del(f.ctx, store.RiskCounters("b"))
	if err := f.rdb.HSet(f.ctx, store.RiskCounters("b"), risk.CountersArgs(older)...).Err(); err != nil {
		t.Fatal(err)
	}
	project(rec)
	if got := counters(); !got.DayPnl.Equal(loss.DayPnl) || got.Trades != 7 {
		t.Fatalf("over an older backup: %+v", got)
	}

	// Redis went on trading after the record was taken: its counters stand.
	newer := loss
	newer.AfterTrade(decimal.RequireFromString("10"), noon, risk.Limits{})
	if err := f.rdb.HSet(f.ctx, store.RiskCounters("b"), risk.CountersArgs(newer)...).Err(); err != nil {
		t.Fatal(err)
	}
	project(rec)
	if got := counters(); !got.DayPnl.Equal(decimal.RequireFromString("-65.25")) || got.ConsecutiveLosses != 0 || got.Trades != 8 {
		t.Fatalf("a newer Redis was written over: %+v", got)
	}

	// Nothing recorded (a bot that never traded): nothing written.
	f.rdb.Del(f.ctx, store.RiskCounters("b"))
	empty := &registry.Recorded{}
	risk.Counters{}.RecordInto(empty)
	project(empty)
	if n, _ := f.rdb.Exists(f.ctx, store.RiskCounters("b")).Result(); n != 0 {
		t.Fatal("counters written for a bot that never traded")
	}
}
