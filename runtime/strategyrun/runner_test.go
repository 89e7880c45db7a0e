package strategyrun_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
	"github.com/sigops/sigops/runtime/strategy"
	"github.com/sigops/sigops/runtime/strategyrun"
)

// owner is a controllable ownership source: the partitions a runner believes it holds.
type owner struct {
	mu    sync.Mutex
	parts []int
}

func (o *owner) Owned() []int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.parts)
}

func (o *owner) set(parts ...int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.parts = parts
}

// fixture is Redis, a simulated market on a pinned clock and one projected strategy bot.
type fixture struct {
	t     *testing.T
	ctx   context.Context
	rdb   redis.UniversalClient
	clock *testkit.Clock
	mkt   *marketdata.Simulated
	bot   registry.Bot
	part  int
	quiet *slog.Logger
}

// start is 2 s after a minute boundary: the runner's settle delay.
var start = time.Date(2026, 11, 21, 12, 0, 2, 0, time.UTC)

// emaSpec is a fast EMA crossover on one-minute BTC/USDT candles, so an hour of the
// simulated walk crosses several times.
func emaSpec() *strategy.Spec {
	return &strategy.Spec{Family: strategy.EMACrossover, Timeframe: "1m", Symbol: "BTC/USDT",
		Params: strategy.Params{FastPeriod: 3, SlowPeriod: 8}}
}

func newFixture(t *testing.T, market string) *fixture {
	t.Helper()
	_, rdb := storetest.New(t)
	f := &fixture{t: t, ctx: context.Background(), rdb: rdb, clock: testkit.NewClock(start),
		quiet: slog.New(slog.NewTextHandler(io.Discard, nil))}
	// A volatile walk (20 % a day) ticking every second, so crossings come often.
	f.mkt = marketdata.NewSimulated(marketdata.SimulatedOptions{Seed: 7, Volatility: 0.2, Now: f.clock.Now})
	f.bot = registry.Bot{ID: "0b5e4a2c-7d1f-4f6e-9a3b-2c8d9e0f1a2b", Namespace: "ns", Name: "ema", Owner: "a@x.io",
		Account: registry.Account{Kind: registry.AccountPaper, Name: "paper", ID: "acct-1"},
		Market:  market, Symbol: "BTC/USDT", PositionSize: "10%", Leverage: 1, DCA: registry.DCA{MaxLevels: 5},
		Reversals: true, WebhookEnabled: true, Availability: "active", MaxSignalAgeMillis: 60_000,
		Strategy: emaSpec()}
	f.part = store.PartitionOf(f.bot.ID)
	f.project()
	return f
}

func (f *fixture) project() {
	f.t.Helper()
	if err := registry.New(f.rdb).Project(f.ctx, f.bot, "hook-"+f.bot.ID); err != nil {
		f.t.Fatal(err)
	}
}

func (f *fixture) runner(o strategyrun.Ownership) *strategyrun.Runner {
	return strategyrun.New(strategyrun.Options{Redis: f.rdb, Market: f.mkt, Owner: o, Now: f.clock.Now, Logger: f.quiet})
}

// got is one queued strategy envelope, decoded.
type got struct {
	env    queue.Envelope
	sig    signal.Signal
	candle int64 // open time, from ReceivedAt (the candle's close) minus one minute
}

// queued reads every envelope of the bot's strategy streams, exits then entries.
func (f *fixture) queued() []got {
	f.t.Helper()
	var out []got
	for _, p := range []queue.Priority{queue.PriorityStrategyExit, queue.PriorityStrategyEntry} {
		msgs, err := f.rdb.XRange(f.ctx, queue.StreamOf(f.bot.ID, p), "-", "+").Result()
		if err != nil {
			f.t.Fatal(err)
		}
		for _, m := range msgs {
			var g got
			if err := json.Unmarshal([]byte(m.Values[queue.EnvelopeField].(string)), &g.env); err != nil {
				f.t.Fatal(err)
			}
			if err := json.Unmarshal(g.env.Signal, &g.sig); err != nil {
				f.t.Fatal(err)
			}
			if g.env.Priority != p || g.env.Source != queue.SourceStrategy || g.env.BotID != f.bot.ID {
				f.t.Fatalf("envelope %+v in the priority %d stream", g.env, p)
			}
			g.candle = g.env.ReceivedAt - time.Minute.Milliseconds()
			out = append(out, g)
		}
	}
	return out
}

type emission struct {
	candle int64
	action signal.Action
}

// expected computes, independently of the runner, what the strategy decides at each
// one-minute candle opened in [from, to]: a fresh strategy fed the Lookback candles ending
// with it, as the contract defines the live signal; EnterShort dropped on spot.
func (f *fixture) expected(from, to time.Time, spot bool) []emission {
	f.t.Helper()
	cs, err := f.mkt.Candles(f.ctx, exchange.Spot, "BTC/USDT", "1m", marketdata.MaxLimit)
	if err != nil {
		f.t.Fatal(err)
	}
	spec := *f.bot.Strategy
	var out []emission
	for i, c := range cs {
		if c.Timestamp < from.UnixMilli() || c.Timestamp > to.UnixMilli() {
			continue
		}
		st, err := strategy.New(spec)
		if err != nil {
			f.t.Fatal(err)
		}
		var s strategy.Signal
		for _, k := range cs[max(0, i-spec.Lookback()+1) : i+1] {
			s = st.Next(strategy.BarOf(k))
		}
		for _, a := range []struct {
			bit    strategy.Signal
			action signal.Action
		}{{strategy.ExitLong, signal.CloseLong}, {strategy.ExitShort, signal.CloseShort},
			{strategy.EnterLong, signal.Buy}, {strategy.EnterShort, signal.Sell}} {
			if s.Has(a.bit) && !(spot && (a.bit == strategy.EnterShort || a.bit == strategy.ExitShort)) {
				out = append(out, emission{c.Timestamp, a.action})
			}
		}
	}
	return out
}

// check asserts that the streams hold exactly want, once each, with the deterministic IDs,
// exits at priority 2 and entries at 3.
func (f *fixture) check(want []emission) {
	f.t.Helper()
	var have []emission
	seen := map[string]bool{}
	for _, g := range f.queued() {
		e := emission{g.candle, g.sig.Action}
		have = append(have, e)
		if seen[g.env.SignalID] {
			f.t.Errorf("signal %s queued twice", g.env.SignalID)
		}
		seen[g.env.SignalID] = true
		if id := strategyrun.SignalID(f.bot.ID, g.candle, g.sig.Action); g.env.SignalID != id || !queue.InBotPartition(f.bot.ID, id) {
			f.t.Errorf("signal ID %s, want %s, in the bot's partition", g.env.SignalID, id)
		}
		if g.sig.Symbol != "BTC/USDT" {
			f.t.Errorf("symbol %q", g.sig.Symbol)
		}
		if g.sig.Action.IsEntry() != (g.env.Priority == queue.PriorityStrategyEntry) {
			f.t.Errorf("%s at priority %d", g.sig.Action, g.env.Priority)
		}
	}
	order := func(a, b emission) int {
		if a.candle != b.candle {
			return int(a.candle - b.candle)
		}
		return slices.Index(actionOrder, a.action) - slices.Index(actionOrder, b.action)
	}
	slices.SortFunc(have, order)
	slices.SortFunc(want, order)
	if !slices.Equal(have, want) {
		f.t.Fatalf("queued %v\nwant   %v", have, want)
	}
}

var actionOrder = []signal.Action{signal.CloseLong, signal.CloseShort, signal.Buy, signal.Sell}

func (f *fixture) mark() time.Time {
	f.t.Helper()
	st, err := strategyrun.ReadState(f.ctx, f.rdb, f.bot.ID)
	if err != nil {
		f.t.Fatal(err)
	}
	return st.LastEvaluated
}

// The partition moves from one runner to another mid-run, with a gap while nobody holds it,
// and later both believe they own it and evaluate at the same time: every candle's signals
// are queued exactly once, none skipped.
func TestEmitsOncePerCandleAcrossALeaseMove(t *testing.T) {
	f := newFixture(t, "futures")
	oa, ob := &owner{}, &owner{}
	a, b := f.runner(oa), f.runner(ob)
	oa.set(f.part)
	first := start.Truncate(time.Minute).Add(-time.Minute) // the newest closed candle at start
	const minutes = 90
	for m := 0; m < minutes; m++ {
		switch {
		case m == 30: // A's lease expires; nobody holds the partition for three minutes
			oa.set()
		case m == 33: // B takes it over and catches up
			ob.set(f.part)
		case m >= 60 && m < 70: // a hand-over race: both believe they own it
			oa.set(f.part)
		case m == 70:
			oa.set()
		}
		var wg sync.WaitGroup
		for _, r := range []*strategyrun.Runner{a, b} {
			wg.Add(1)
			go func() { defer wg.Done(); r.Evaluate(f.ctx) }()
		}
		wg.Wait()
		if m < minutes-1 {
			f.clock.Advance(time.Minute)
		}
	}
	last := f.clock.Now().Truncate(time.Minute).Add(-time.Minute)
	want := f.expected(first, last, false)
	if len(want) < 4 {
		t.Fatalf("the walk crosses only %d times in %d minutes: the test proves nothing", len(want), minutes)
	}
	f.check(want)
	if got := f.mark(); !got.Equal(last) {
		t.Fatalf("mark %s, want %s", got, last)
	}
	// Every candle was evaluated once, by one of the two.
	evaluated := testutil.ToFloat64(a.Collectors()[0]) + testutil.ToFloat64(b.Collectors()[0])
	if evaluated != minutes {
		t.Fatalf("evaluations %v, want %d", evaluated, minutes)
	}
}

// A runner that comes back after more closed candles than the catch-up bound evaluates the
// newest CatchUp candles in order and counts the older ones as skipped; a new bot starts at
// the newest closed candle.
func TestCatchUpIsBounded(t *testing.T) {
	f := newFixture(t, "futures")
	o := &owner{}
	o.set(f.part)
	r := f.runner(o)
	r.Evaluate(f.ctx)
	first := start.Truncate(time.Minute).Add(-time.Minute)
	if got := f.mark(); !got.Equal(first) {
		t.Fatalf("a new bot's mark %s, want the newest closed candle %s", got, first)
	}
	bound := strategyrun.CatchUp(*f.bot.Strategy)
	gap := bound + 25
	f.clock.Advance(time.Duration(gap) * time.Minute)
	r.Evaluate(f.ctx)
	last := first.Add(time.Duration(gap) * time.Minute)
	if got := f.mark(); !got.Equal(last) {
		t.Fatalf("mark %s, want %s", got, last)
	}
	// Skipped: the gap candles after the first, minus the bound evaluated.
	if got := testutil.ToFloat64(r.Collectors()[4]); got != 25 {
		t.Fatalf("skipped %v, want 25", got)
	}
	want := append(f.expected(first, first, false), f.expected(last.Add(-time.Duration(bound-1)*time.Minute), last, false)...)
	if len(want) == 0 {
		t.Fatal("no signal in the evaluated candles: the test proves nothing")
	}
	f.check(want)
}

// A paused bot's candles are evaluated and marked but nothing is queued; after the resume
// the next crossing is queued.
func TestPausedBotIsMarkedNotEmitted(t *testing.T) {
	f := newFixture(t, "futures")
	o := &owner{}
	o.set(f.part)
	r := f.runner(o)
	reg := registry.New(f.rdb)
	if _, err := reg.Pause(f.ctx, f.bot.ID, registry.Pause{Reason: registry.PauseErrors}, f.clock.Now()); err != nil {
		t.Fatal(err)
	}
	first := start.Truncate(time.Minute).Add(-time.Minute)
	for m := 0; m < 60; m++ {
		r.Evaluate(f.ctx)
		f.clock.Advance(time.Minute)
	}
	pausedUntil := f.clock.Now().Truncate(time.Minute).Add(-time.Minute)
	if len(f.expected(first, pausedUntil.Add(-time.Minute), false)) == 0 {
		t.Fatal("no crossing while paused: the test proves nothing")
	}
	if q := f.queued(); len(q) != 0 {
		t.Fatalf("a paused bot queued %d signals", len(q))
	}
	if got := testutil.ToFloat64(r.Collectors()[2]); got == 0 {
		t.Fatal("no suppressed signal counted")
	}
	p, err := reg.ReadPause(f.ctx, f.bot.ID, f.clock.Now())
	if err != nil || p == nil {
		t.Fatalf("pause %v %v", p, err)
	}
	if _, err := reg.Resume(f.ctx, f.bot.ID, *p); err != nil {
		t.Fatal(err)
	}
	for m := 0; m < 60; m++ {
		r.Evaluate(f.ctx)
		f.clock.Advance(time.Minute)
	}
	last := f.clock.Now().Truncate(time.Minute).Add(-2 * time.Minute)
	want := f.expected(pausedUntil, last, false)
	if len(want) == 0 {
		t.Fatal("no crossing after the resume: the test proves nothing")
	}
	f.check(want)
}

// Above Redis's memory watermark a strategy bot's entries are not queued (counted as
// suppressed) and its exits are: the same rule as a webhook's signal, with exits let
// through because they free money.
func TestEntriesWaitForRoomExitsDoNot(t *testing.T) {
	f := newFixture(t, "futures")
	o := &owner{}
	o.set(f.part)
	used, err := storetest.UsedMemory(f.ctx, f.rdb)
	if err != nil {
		t.Fatal(err)
	}
	// Half of maxmemory free and 90 % asked for: above the watermark, while Redis still
	// takes writes.
	if err := storetest.ConfigSet(f.ctx, f.rdb, "maxmemory", fmt.Sprint(2*used)); err != nil {
		t.Fatal(err)
	}
	r := strategyrun.New(strategyrun.Options{Redis: f.rdb, Market: f.mkt, Owner: o, Now: f.clock.Now, Logger: f.quiet,
		Headroom: 0.9})
	first := start.Truncate(time.Minute).Add(-time.Minute)
	for m := 0; m < 60; m++ {
		r.Evaluate(f.ctx)
		f.clock.Advance(time.Minute)
	}
	last := f.clock.Now().Truncate(time.Minute).Add(-2 * time.Minute)
	var exits []emission
	entries := 0
	for _, e := range f.expected(first, last, false) {
		if e.action == signal.CloseLong || e.action == signal.CloseShort {
			exits = append(exits, e)
		} else {
			entries++
		}
	}
	if len(exits) == 0 || entries == 0 {
		t.Fatal("no crossing in an hour: the test proves nothing")
	}
	f.check(exits)
	if got := testutil.ToFloat64(r.Collectors()[2]); got != float64(entries) {
		t.Fatalf("%v entries counted as suppressed, want %d", got, entries)
	}
}

// On spot the short side is never queued; exits of the long side are.
func TestSpotQueuesNoShortSide(t *testing.T) {
	f := newFixture(t, "spot")
	o := &owner{}
	o.set(f.part)
	r := f.runner(o)
	first := start.Truncate(time.Minute).Add(-time.Minute)
	for m := 0; m < 60; m++ {
		r.Evaluate(f.ctx)
		f.clock.Advance(time.Minute)
	}
	last := f.clock.Now().Truncate(time.Minute).Add(-2 * time.Minute)
	want := f.expected(first, last, true)
	if !slices.ContainsFunc(want, func(e emission) bool { return e.action == signal.CloseLong }) {
		t.Fatal("no exit of a long in an hour: the test proves nothing")
	}
	f.check(want)
	for _, g := range f.queued() {
		if g.sig.Action == signal.Sell || g.sig.Action == signal.CloseShort {
			t.Fatalf("spot bot queued %s", g.sig.Action)
		}
	}
}

// An emission announces the bot on store.BotEvents at once; evaluations without a signal
// announce it at most once a minute (AnnounceEvery), and the state reads back.
func TestStateAndAnnouncements(t *testing.T) {
	f := newFixture(t, "futures")
	sub := f.rdb.Subscribe(f.ctx, store.BotEvents())
	defer sub.Close()
	if _, err := sub.Receive(f.ctx); err != nil {
		t.Fatal(err)
	}
	o := &owner{}
	o.set(f.part)
	r := f.runner(o)
	announced := 0
	drain := func() {
		for {
			select {
			case m := <-sub.Channel():
				if m.Payload != f.bot.ID {
					t.Fatalf("announced %q", m.Payload)
				}
				announced++
			case <-time.After(100 * time.Millisecond):
				return
			}
		}
	}
	// The same minute evaluated twice (two wakes, or two replicas) announces once.
	r.Evaluate(f.ctx)
	r.Evaluate(f.ctx)
	drain()
	if announced != 1 {
		t.Fatalf("first evaluation: %d announcements, want 1", announced)
	}
	for m := 0; m < 60; m++ {
		f.clock.Advance(time.Minute)
		r.Evaluate(f.ctx)
	}
	drain()
	// One announcement per one-minute evaluation: 60 more.
	if announced != 61 {
		t.Fatalf("%d announcements, want 61", announced)
	}
	st, err := strategyrun.ReadState(f.ctx, f.rdb, f.bot.ID)
	if err != nil {
		t.Fatal(err)
	}
	q := f.queued()
	if len(q) == 0 {
		t.Fatal("nothing queued: the test proves nothing")
	}
	// The state names the newest emission; within a candle the entry is queued last.
	slices.SortFunc(q, func(a, b got) int {
		if a.candle != b.candle {
			return int(a.candle - b.candle)
		}
		return int(a.env.Priority - b.env.Priority) // the entry (3) after the exit (2)
	})
	newest := q[len(q)-1]
	want := strategyrun.Emitted{Action: newest.sig.Action, Candle: time.UnixMilli(newest.candle).UTC(),
		SignalID: newest.env.SignalID}
	if st.LastSignal == nil || st.LastSignal.Action != want.Action || !st.LastSignal.Candle.Equal(want.Candle) ||
		st.LastSignal.SignalID != want.SignalID || st.LastSignal.At.IsZero() {
		t.Fatalf("last signal %+v, want %+v", st.LastSignal, want)
	}
	if err := strategyrun.Purge(f.ctx, f.rdb, f.bot.ID); err != nil {
		t.Fatal(err)
	}
	if st, _ := strategyrun.ReadState(f.ctx, f.rdb, f.bot.ID); !st.LastEvaluated.IsZero() || st.LastSignal != nil {
		t.Fatalf("state after purge: %+v", st)
	}
}

// A bot whose projection drops its strategy leaves the partition's index and is no longer
// evaluated; a removed bot leaves it too.
func TestStrategyRemovedStopsEvaluation(t *testing.T) {
	f := newFixture(t, "futures")
	o := &owner{}
	o.set(f.part)
	r := f.runner(o)
	r.Evaluate(f.ctx)
	f.bot.Strategy = nil
	f.project()
	ids, err := registry.StrategyBots(f.ctx, f.rdb, f.part)
	if err != nil || len(ids) != 0 {
		t.Fatalf("index %v %v", ids, err)
	}
	before := f.mark()
	f.clock.Advance(10 * time.Minute)
	r.Evaluate(f.ctx)
	if got := f.mark(); !got.Equal(before) {
		t.Fatalf("mark moved to %s for a bot without a strategy", got)
	}
	// Back in the index with a strategy, out of it when the bot is removed.
	f.bot.Strategy = emaSpec()
	f.project()
	if ids, _ := registry.StrategyBots(f.ctx, f.rdb, f.part); !slices.Equal(ids, []string{f.bot.ID}) {
		t.Fatalf("index %v", ids)
	}
	if err := registry.New(f.rdb).Remove(f.ctx, f.bot.ID, time.Minute); err != nil {
		t.Fatal(err)
	}
	if ids, err := registry.StrategyBots(f.ctx, f.rdb, f.part); err != nil || len(ids) != 0 {
		t.Fatalf("index after removal %v %v", ids, err)
	}
}

// Run evaluates a partition as soon as it is taken over (not at the next minute) and
// returns when its context ends, as the executor's shutdown needs.
func TestRunResumesATakenPartitionAndStops(t *testing.T) {
	f := newFixture(t, "futures")
	wall := marketdata.NewSimulated(marketdata.SimulatedOptions{Seed: 7})
	o := &owner{}
	r := strategyrun.New(strategyrun.Options{Redis: f.rdb, Market: wall, Owner: o, Logger: f.quiet})
	ctx, cancel := context.WithCancel(f.ctx)
	done := make(chan error, 1)
	go func() { done <- r.Run(ctx) }()
	time.Sleep(1500 * time.Millisecond)
	if !f.mark().IsZero() {
		t.Fatal("evaluated a partition it does not hold")
	}
	o.set(f.part)
	testkit.EventuallyTrue(t, 5*time.Second, "the taken partition evaluated", func() bool { return !f.mark().IsZero() })
	newest := time.Now().Add(-time.Minute).Truncate(time.Minute)
	if got := f.mark(); got.Before(newest.Add(-time.Minute)) {
		t.Fatalf("mark %s, want the newest closed candle (about %s)", got, newest)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

// A strategy signal's ID is placed in its bot's partition and deterministic: the same bot,
// candle and action give the same ID; another candle or action another.
func TestSignalIDIsPlacedAndDeterministic(t *testing.T) {
	seen := map[string]bool{}
	for b := range 30 {
		bot := fmt.Sprintf("bot-%d", b)
		for c := range 5 {
			open := int64(1_800_000_000_000 + c*60_000)
			for _, a := range []signal.Action{signal.Buy, signal.CloseLong} {
				id := strategyrun.SignalID(bot, open, a)
				if !queue.InBotPartition(bot, id) || id != strategyrun.SignalID(bot, open, a) || seen[id] {
					t.Fatalf("%s %d %s: %s (placed %v, seen %v)", bot, open, a, id, queue.InBotPartition(bot, id), seen[id])
				}
				seen[id] = true
			}
		}
	}
}
