package queue

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// A signal whose handler hangs holds up its own bot only: the other bots of its partition
// keep being served while it hangs, and the hanging bot's later signals run after it, in
// order, once it returns.
func TestHangingSignalHoldsUpItsOwnBotOnly(t *testing.T) {
	_, rdb := storetest.New(t)
	bots := botsIn(4, 4)
	stuck, others := bots[0], bots[1:]
	release := make(chan struct{})
	rec := &recorder{}
	startConsumer(t, dedicated(t, rdb), Options{}, func(_ context.Context, env Envelope) error {
		rec.add(env.SignalID)
		if env.SignalID == stuck+"/0" {
			<-release
		}
		return nil
	})
	for i := 0; i < 3; i++ {
		mustEnqueue(t, rdb, testEnv(stuck, i, PriorityWebhook))
	}
	testkit.EventuallyTrue(t, 10*time.Second, "the stuck signal started", func() bool { return slices.Contains(rec.snapshot(), stuck+"/0") })
	for i := 0; i < 5; i++ {
		for _, b := range others {
			mustEnqueue(t, rdb, testEnv(b, i, PriorityWebhook))
		}
	}
	testkit.EventuallyTrue(t, 10*time.Second, "the other bots' 15 signals handled while one hangs", func() bool { return rec.len() == 16 })
	for _, id := range rec.snapshot() {
		if strings.HasPrefix(id, stuck+"/") && id != stuck+"/0" {
			t.Fatalf("%s ran while %s/0 was still running", id, stuck)
		}
	}
	close(release)
	testkit.EventuallyTrue(t, 10*time.Second, "the stuck bot's later signals handled", func() bool { return rec.len() == 18 })
	perBot := map[string][]string{}
	for _, id := range rec.snapshot() {
		b, _, _ := strings.Cut(id, "/")
		perBot[b] = append(perBot[b], id)
	}
	for _, b := range bots {
		want := []string{b + "/0", b + "/1", b + "/2"}
		if b != stuck {
			want = append(want, b+"/3", b+"/4")
		}
		if !slices.Equal(perBot[b], want) {
			t.Errorf("bot %s order %v, want %v", b, perBot[b], want)
		}
	}
}

// A signal that keeps failing is retried within its budget, then finished with a failure
// result carrying its error's code and moved to the dead-letter stream; the bot's next
// signal runs after it, and an operator can retry it.
func TestRetryBudgetDeadLetters(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	bot := botsIn(8, 1)[0]
	var calls, healthy atomic.Int32
	rec := &recorder{}
	var hooked atomic.Value
	r := startConsumer(t, dedicated(t, rdb), Options{MaxAttempts: 3, OnDeadLetter: func(_ context.Context, env Envelope, dl DeadLetter) error {
		hooked.Store(dl.SignalID)
		return nil
	}}, func(_ context.Context, env Envelope) error {
		rec.add(env.SignalID)
		if env.SignalID == bot+"/0" && healthy.Load() == 0 {
			calls.Add(1)
			return errs.Wrap(errors.New("dial tcp: i/o timeout"), errs.ExchangeError, "exchange did not answer")
		}
		return PublishResult(ctx, rdb, env, okResult(env))
	})
	mustEnqueue(t, rdb, testEnv(bot, 0, PriorityWebhook))
	mustEnqueue(t, rdb, testEnv(bot, 1, PriorityWebhook))
	testkit.EventuallyTrue(t, 20*time.Second, "both signals finished", func() bool { return rec.len() == 4 })
	if got, want := rec.snapshot(), []string{bot + "/0", bot + "/0", bot + "/0", bot + "/1"}; !slices.Equal(got, want) {
		t.Fatalf("calls %v, want %v", got, want)
	}
	st, err := GetResult(ctx, rdb, bot+"/0")
	res, ok := st.Result, st.Found
	if err != nil || !ok || res.Success || res.Code != errs.ExchangeError || !strings.Contains(res.Error, "3 attempts") {
		t.Fatalf("result %+v %v %v: want a failure with EXCHANGE_ERROR after 3 attempts", res, ok, err)
	}
	dls, err := ListDeadLetters(ctx, rdb, "", 10)
	if err != nil || len(dls) != 1 {
		t.Fatalf("dead letters %v %v", dls, err)
	}
	dl := dls[0]
	if dl.SignalID != bot+"/0" || dl.BotID != bot || dl.Reason != ReasonBudget || dl.Attempts != 3 ||
		dl.Code != errs.ExchangeError || !strings.Contains(dl.LastError, "i/o timeout") || dl.Partition != 8 {
		t.Errorf("dead letter %+v", dl)
	}
	if hooked.Load() != bot+"/0" {
		t.Errorf("OnDeadLetter saw %v", hooked.Load())
	}
	if n := metricValue(t, r.c.m.deadLetters.WithLabelValues(ReasonBudget)); n != 1 {
		t.Errorf("dead letters metric %v, want 1", n)
	}
	if n := rdb.Exists(ctx, store.SignalAttempts(bot, bot+"/0")).Val(); n != 0 {
		t.Error("the attempt count outlived the dead letter")
	}
	testkit.EventuallyTrue(t, 5*time.Second, "stream emptied", func() bool { return rdb.XLen(ctx, StreamOf(bot, PriorityWebhook)).Val() == 0 })

	// The operator fixes the cause and retries: it runs again and succeeds.
	healthy.Store(1)
	// A failure result under the legacy key (stored by an older version) goes too: left, it
	// would answer for the signal while the retry runs.
	rdb.Set(ctx, store.LegacySignalResult(bot+"/0"), `{"signalId":"`+bot+`/0","success":false}`, time.Hour)
	if _, err := RetryDeadLetter(ctx, rdb, dl.ID, false); err != nil {
		t.Fatal(err)
	}
	if n := rdb.Exists(ctx, store.LegacySignalResult(bot+"/0")).Val(); n != 0 {
		t.Error("the retry left the legacy result")
	}
	testkit.EventuallyTrue(t, 10*time.Second, "the retried signal succeeded", func() bool {
		st, _ := GetResult(ctx, rdb, bot+"/0")
		res, ok := st.Result, st.Found
		return ok && res.Success
	})
	if n, _ := CountDeadLetters(ctx, rdb); n != 0 {
		t.Errorf("%d dead letters left after the retry", n)
	}
	if calls.Load() != 3 {
		t.Errorf("failing calls %d, want 3", calls.Load())
	}
}

// The budget also runs out by time, and the attempts already counted in Redis (by another
// executor) count.
func TestRetryBudgetByTimeAndAcrossExecutors(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	bots := botsIn(9, 2)
	slow, counted := bots[0], bots[1]
	// Another executor already spent 4 of 5 attempts on counted/0.
	rdb.HSet(ctx, store.SignalAttempts(counted, counted+"/0"), "n", 4, "first", time.Now().UnixMilli())
	var calls [2]atomic.Int32
	startConsumer(t, dedicated(t, rdb), Options{MaxAttempts: 5, MaxElapsed: 700 * time.Millisecond}, func(_ context.Context, env Envelope) error {
		if env.BotID == slow {
			calls[0].Add(1)
		} else {
			calls[1].Add(1)
		}
		return errors.New("redis: connection refused")
	})
	mustEnqueue(t, rdb, testEnv(slow, 0, PriorityWebhook))
	mustEnqueue(t, rdb, testEnv(counted, 0, PriorityWebhook))
	testkit.EventuallyTrue(t, 20*time.Second, "both dead-lettered", func() bool { n, _ := CountDeadLetters(ctx, rdb); return n == 2 })
	if n := calls[1].Load(); n != 1 {
		t.Errorf("counted/0 was called %d times; the fifth attempt should have been its last", n)
	}
	if n := calls[0].Load(); n < 2 || n >= 5 {
		t.Errorf("slow/0 was called %d times; want its 700 ms to run out before 5 attempts", n)
	}
	st, _ := GetResult(ctx, rdb, slow+"/0")
	res := st.Result
	if res.Success || res.Code != errs.InternalError || strings.Contains(res.Error, "refused") {
		t.Errorf("untyped failure result %+v: want INTERNAL_ERROR without internals", res)
	}
}

// A panic dead-letters the signal at once: the handler is not called again.
func TestPanicDeadLettersAtOnce(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	bot := botsIn(10, 1)[0]
	var calls atomic.Int32
	rec := &recorder{}
	startConsumer(t, dedicated(t, rdb), Options{}, func(_ context.Context, env Envelope) error {
		rec.add(env.SignalID)
		if env.SignalID == bot+"/0" {
			calls.Add(1)
			var m map[string]int
			//lint:ignore SA5000 the handler must panic as real code does: a write to a nil map
			m["boom"]++
		}
		return nil
	})
	mustEnqueue(t, rdb, testEnv(bot, 0, PriorityWebhook))
	mustEnqueue(t, rdb, testEnv(bot, 1, PriorityWebhook))
	testkit.EventuallyTrue(t, 10*time.Second, "the next signal ran", func() bool { return slices.Contains(rec.snapshot(), bot+"/1") })
	if calls.Load() != 1 {
		t.Errorf("panicking handler called %d times", calls.Load())
	}
	dls, _ := ListDeadLetters(ctx, rdb, "", 10)
	if len(dls) != 1 || dls[0].Reason != ReasonPanic || dls[0].Attempts != 1 || !strings.Contains(dls[0].LastError, "nil map") {
		t.Fatalf("dead letters %+v", dls)
	}
	st, _ := GetResult(ctx, rdb, bot+"/0")
	res, ok := st.Result, st.Found
	if !ok || res.Success || res.Code != errs.InternalError {
		t.Errorf("result %+v", res)
	}
	if err := DropDeadLetter(ctx, rdb, dls[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := DropDeadLetter(ctx, rdb, dls[0].ID); !errors.Is(err, ErrDeadLetterNotFound) {
		t.Errorf("second drop: %v", err)
	}
}

func okResult(env Envelope) result.Result {
	return result.Result{SignalID: env.SignalID, BotID: env.BotID, Success: true, Timestamp: time.Now().UnixMilli()}
}

// The failure result of a signal given up on is stored before the transaction that moves it
// to the dead letters and acknowledges it (they are in different Redis Cluster slots). An
// executor that dies between the two leaves the entry queued with its result stored: the
// next owner's "already done" check finishes it without executing it again.
func TestDeadLetterInterruptedAfterItsResult(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	bot := botsIn(11, 1)[0]
	var executions atomic.Int32
	h := Idempotent(rdb, func(_ context.Context, env Envelope) error {
		executions.Add(1)
		return errs.New(errs.ExchangeError, "exchange did not answer")
	})
	ca := dedicated(t, rdb)
	crash := &storetest.Crash{}
	crash.At(func(c redis.Cmder) bool {
		return c.Name() == "xadd" && slices.Contains(c.Args(), any(store.QueueDeadLetters(PartitionOf(bot))))
	})
	ca.AddHook(crash)
	a := startConsumer(t, ca, Options{Name: "A", MaxAttempts: 1, LeaseTTL: time.Second}, h)
	mustEnqueue(t, rdb, testEnv(bot, 0, PriorityWebhook))
	testkit.EventuallyTrue(t, 10*time.Second, "the failure result stored", func() bool {
		st, _ := GetResult(ctx, rdb, bot+"/0")
		ok := st.Found
		return ok
	})
	a.stop(t) // dies with the dead-lettering half done

	startConsumer(t, dedicated(t, rdb), Options{Name: "B", LeaseTTL: time.Second}, h)
	testkit.EventuallyTrue(t, 20*time.Second, "the entry finished", func() bool {
		return rdb.XLen(ctx, StreamOf(bot, PriorityWebhook)).Val() == 0
	})
	if n := executions.Load(); n != 1 {
		t.Fatalf("executed %d times, want once", n)
	}
	if st, err := GetResult(ctx, rdb, bot+"/0"); err != nil || !st.Found || st.Result.Success || st.Result.Code != errs.ExchangeError {
		t.Fatalf("result %+v %v", st, err)
	}
	if n, _ := CountDeadLetters(ctx, rdb); n != 0 {
		t.Fatalf("%d dead letters; the interrupted one is lost, not half-written", n)
	}
}
