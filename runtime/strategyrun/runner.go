// Package strategyrun holds the strategy runner of the executor: it evaluates every
// strategy bot (registry.Bot.Strategy) of the queue partitions this executor owns on each
// closed candle of the bot's timeframe, and queues the signals the strategy decides into the
// bot's own partition stream, where they run through the same risk checks, order building,
// DCA and recording as webhook signals.
//
// Ownership: a bot is run by the executor that holds the lease of its queue partition
// (Ownership, queue.Consumer.Owned). That lease is the runner's Redis lease too: no second
// lock exists. Exactly-once per candle does not rest on it, though: each bot has a mark (the
// open time of its last evaluated candle, store.StrategyState) which the same Lua script
// that XADDs a candle's envelopes checks and moves (emitScript). Two replicas that both
// believe they own a partition during a hand-over therefore emit a candle's signals once.
package strategyrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/strategy"
)

// DefaultSettle is how long after a candle's close the runner evaluates it: exchanges
// publish a closed kline a moment after the boundary, and a candle fetched too early would
// still be the open one.
const DefaultSettle = 2 * time.Second

// DefaultConcurrency is how many bots one runner evaluates at once (each evaluation waits
// mostly on the candle fetch).
const DefaultConcurrency = 8

// ownershipPoll is how often the runner looks at Ownership.Owned (memory, no Redis) for
// partitions it has just taken over, so that a lease move resumes the moved bots at once
// instead of at the next minute.
const ownershipPoll = time.Second

// Ownership says which queue partitions this executor holds; queue.Consumer implements it.
type Ownership interface {
	Owned() []int
}

// Options configure a Runner.
type Options struct {
	Redis  redis.UniversalClient
	Market marketdata.Provider
	Owner  Ownership
	// Settle is the delay after each minute boundary before evaluating (DefaultSettle).
	Settle time.Duration
	// Concurrency bounds bots evaluated at once (DefaultConcurrency).
	Concurrency int
	// Now is the clock (time.Now); candles closed before Now are the ones evaluated.
	Now    func() time.Time
	Logger *slog.Logger
	// Headroom, when above 0, keeps entries from being queued while less than that share
	// of Redis's maxmemory is free (store.MemoryGuard), as the intake refuses webhook
	// signals; exits are always queued.
	Headroom float64
}

// Runner evaluates the strategy bots of the owned partitions. See the package comment.
type Runner struct {
	rdb    redis.UniversalClient
	market marketdata.Provider
	owner  Ownership
	reg    *registry.Registry
	settle time.Duration
	conc   int
	now    func() time.Time
	log    *slog.Logger
	m      *metrics
	memory *store.MemoryGuard
}

// New builds a Runner; its metrics are in Collectors.
func New(o Options) *Runner {
	r := &Runner{rdb: o.Redis, market: o.Market, owner: o.Owner, reg: registry.New(o.Redis),
		settle: o.Settle, conc: o.Concurrency, now: o.Now, log: o.Logger, m: newMetrics()}
	if o.Headroom > 0 {
		r.memory = store.NewMemoryGuard(o.Redis, store.MemoryOptions{Headroom: o.Headroom})
	}
	if r.settle <= 0 {
		r.settle = DefaultSettle
	}
	if r.conc <= 0 {
		r.conc = DefaultConcurrency
	}
	if r.now == nil {
		r.now = time.Now
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	r.log = r.log.With("component", "strategy-runner")
	return r
}

// Collectors are the Runner's Prometheus metrics, for the daemon to register.
func (r *Runner) Collectors() []prometheus.Collector { return r.m.collectors() }

// Run evaluates until ctx ends. It wakes Settle after every minute boundary (every
// timeframe's boundaries are minute boundaries; a bot whose timeframe has no new closed
// candle costs one pipelined read and no candle fetch) and, between wakes, evaluates at once
// the partitions it has just taken over. It returns nil when ctx ends; an evaluation in
// progress is abandoned between two bots, never inside a bot's emit script.
func (r *Runner) Run(ctx context.Context) error {
	r.log.Info("strategy runner started", "settle", r.settle)
	var held []int
	next := nextWake(r.now(), r.settle)
	t := time.NewTicker(ownershipPoll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			r.log.Info("strategy runner stopped")
			return nil
		case <-t.C:
		}
		owned := r.owner.Owned()
		now := r.now()
		switch {
		case !now.Before(next):
			r.evaluate(ctx, owned)
			next = nextWake(r.now(), r.settle)
		default:
			if gained := newlyHeld(held, owned); len(gained) > 0 {
				r.evaluate(ctx, gained)
			}
		}
		held = owned
	}
}

// nextWake is the first minute boundary plus settle after now.
func nextWake(now time.Time, settle time.Duration) time.Time {
	return now.Add(-settle).Truncate(time.Minute).Add(time.Minute + settle)
}

// newlyHeld lists the partitions of owned that were not in held (both ascending).
func newlyHeld(held, owned []int) []int {
	var out []int
	for _, p := range owned {
		if _, found := slices.BinarySearch(held, p); !found {
			out = append(out, p)
		}
	}
	return out
}

// Evaluate evaluates, at the clock's time, every strategy bot of the partitions Ownership
// holds: each closed candle since the bot's mark, within the catch-up bound. Run calls
// it at every wake; tests call it on their own clock.
func (r *Runner) Evaluate(ctx context.Context) {
	r.evaluate(ctx, r.owner.Owned())
}

func (r *Runner) evaluate(ctx context.Context, partitions []int) {
	now := r.now()
	pass := &pass{r: r, now: now, fetched: map[fetchKey]fetched{}}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.conc)
	for _, p := range partitions {
		bots, err := r.due(gctx, p, now)
		if err != nil {
			if gctx.Err() == nil {
				r.m.errors.Inc()
				r.log.Error("strategy bots unreadable", "partition", p, "error", err)
			}
			continue
		}
		for _, b := range bots {
			g.Go(func() error {
				start := time.Now()
				if err := pass.bot(gctx, b); err != nil && gctx.Err() == nil {
					r.m.errors.Inc()
					r.log.Error("strategy evaluation failed", "botId", b.bot.ID, "error", err)
				}
				r.m.latency.Observe(time.Since(start).Seconds())
				return nil
			})
		}
	}
	_ = g.Wait()
}

// dueBot is a strategy bot with a closed candle it has not evaluated.
type dueBot struct {
	bot    registry.Bot
	tf     time.Duration
	mark   int64 // open time of the last evaluated candle; -1 for a bot never evaluated
	newest int64 // open time of the newest closed candle
}

// due reads a partition's strategy bots, their projections and marks in one round trip and
// keeps those with a closed candle past their mark.
func (r *Runner) due(ctx context.Context, p int, now time.Time) ([]dueBot, error) {
	ids, err := registry.StrategyBots(ctx, r.rdb, p)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	slices.Sort(ids)
	gets := make([]func() (registry.Bot, error), len(ids))
	marks := make([]*redis.StringCmd, len(ids))
	if _, err := r.rdb.Pipelined(ctx, func(pl redis.Pipeliner) error {
		for i, id := range ids {
			gets[i] = registry.GetLater(ctx, pl, id)
			marks[i] = pl.HGet(ctx, store.StrategyState(id), fieldMark)
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	var out []dueBot
	for i, id := range ids {
		bot, err := gets[i]()
		if errors.Is(err, registry.ErrNotFound) || (err == nil && bot.Strategy == nil) {
			continue // deleted, or its strategy removed: the index follows the projection
		}
		if err != nil {
			return nil, err
		}
		tf, err := marketdata.TimeframeDuration(bot.Strategy.Timeframe)
		if err != nil {
			r.m.errors.Inc()
			r.log.Error("strategy bot has an unknown timeframe", "botId", id, "error", err)
			continue
		}
		mark := int64(-1)
		if v, err := marks[i].Result(); err == nil {
			if mark, err = strconv.ParseInt(v, 10, 64); err != nil {
				return nil, fmt.Errorf("bot %s: mark %q: %w", id, v, err)
			}
		} else if !errors.Is(err, redis.Nil) {
			return nil, err
		}
		newest := marketdata.CandleOpenMs(now.UnixMilli(), tf) - tf.Milliseconds()
		if newest > mark {
			out = append(out, dueBot{bot: bot, tf: tf, mark: mark, newest: newest})
		}
	}
	return out, nil
}

// CatchUp is how many closed candles a bot can have evaluated in one wake after its mark:
// the candles the runner fetches in one request (marketdata.MaxLimit) must hold Lookback
// candles before the oldest one evaluated, so at most MaxLimit - Lookback; and never more
// than Lookback. Older unevaluated candles are skipped (logged, and counted in
// sigops_strategy_catchup_skipped_total): their entries would be expired by the bot's
// maxSignalAge anyway, and their exits are superseded by the newer candles'.
func CatchUp(spec strategy.Spec) int {
	lb := spec.Lookback()
	return max(1, min(lb, marketdata.MaxLimit-lb))
}

// pass is one wake's evaluation; bots on the same market, symbol and timeframe share one
// candle fetch.
type pass struct {
	r   *Runner
	now time.Time

	mu      sync.Mutex
	fetched map[fetchKey]fetched
}

type fetchKey struct {
	kind      exchange.Kind
	symbol    string
	timeframe string
}

type fetched struct {
	limit   int
	candles []marketdata.Candle
}

func (ps *pass) candles(ctx context.Context, k fetchKey, limit int) ([]marketdata.Candle, error) {
	ps.mu.Lock()
	f, ok := ps.fetched[k]
	ps.mu.Unlock()
	if ok && f.limit >= limit {
		return f.candles[max(0, len(f.candles)-limit):], nil
	}
	cs, err := ps.r.market.Candles(ctx, k.kind, k.symbol, k.timeframe, limit)
	if err != nil {
		return nil, err
	}
	ps.mu.Lock()
	ps.fetched[k] = fetched{limit: limit, candles: cs}
	ps.mu.Unlock()
	return cs, nil
}

// bot evaluates one due bot: the closed candles after its mark (a new bot: the newest
// only), oldest first, each by a fresh strategy fed the Lookback candles that end with it,
// and runs the emit script for each in order.
func (ps *pass) bot(ctx context.Context, d dueBot) error {
	spec := *d.bot.Strategy
	lookback := spec.Lookback()
	tfMs := d.tf.Milliseconds()
	from := d.mark // evaluate candles opened after from
	if from < 0 {
		from = d.newest - tfMs
	}
	pending := int((d.newest - from) / tfMs)
	if bound := CatchUp(spec); pending > bound {
		skip := pending - bound
		ps.r.m.skipped.Add(float64(skip))
		ps.r.log.Warn("strategy catch-up bound reached: older candles skipped", "botId", d.bot.ID,
			"skipped", skip, "from", time.UnixMilli(from+tfMs).UTC(), "bound", bound)
		from += int64(skip) * tfMs
		pending = bound
	}
	// Lookback closed candles end at the oldest pending one; one more for the open candle.
	limit := min(marketdata.MaxLimit, lookback+pending)
	cs, err := ps.candles(ctx, fetchKey{exchange.Kind(d.bot.Market), spec.Symbol, spec.Timeframe}, limit)
	if err != nil {
		return fmt.Errorf("candles %s %s %s: %w", d.bot.Market, spec.Symbol, spec.Timeframe, err)
	}
	// Drop what is not closed yet at now (the open candle).
	end := len(cs)
	for end > 0 && cs[end-1].Timestamp > d.newest {
		end--
	}
	cs = cs[:end]
	bars := make([]strategy.Bar, len(cs))
	for i, c := range cs {
		bars[i] = strategy.BarOf(c)
	}
	for i, c := range cs {
		if c.Timestamp <= from {
			continue
		}
		st, err := strategy.New(spec)
		if err != nil {
			return err
		}
		var sig strategy.Signal
		for _, b := range bars[max(0, i-lookback+1) : i+1] {
			sig = st.Next(b)
		}
		if err := ps.emit(ctx, d, c.Timestamp, sig); err != nil {
			return err
		}
	}
	// A candle the exchange has not published yet stays after the mark: the next wake
	// evaluates it.
	return nil
}

// emit queues the envelopes of the signal decided at the candle opened at openMs (exits
// first) and moves the mark, in one script. A paused or disabled bot has its candle marked
// and nothing queued: the executor would refuse every strategy signal of it (BOT_PAUSED,
// BOT_DISABLED), exits included.
func (ps *pass) emit(ctx context.Context, d dueBot, openMs int64, sig strategy.Signal) error {
	actions := actionsOf(sig, exchange.Kind(d.bot.Market))
	if len(actions) > 0 {
		ok, err := ps.mayTrade(ctx, d.bot)
		if err != nil {
			return err
		}
		if !ok {
			ps.r.m.suppressed.Add(float64(len(actions)))
			ps.r.log.Info("strategy signal not queued: bot paused or disabled", "botId", d.bot.ID,
				"candle", time.UnixMilli(openMs).UTC(), "signal", sig.String())
			actions = nil
		}
	}
	if len(actions) > 0 && ps.r.memory.Full(ctx) {
		// Above the watermark an entry is not accepted, as a webhook's would not be: the
		// candle is marked and its entry dropped; exits still go (they free money).
		var kept []queued
		for _, a := range actions {
			if a.priority == queue.PriorityStrategyExit {
				kept = append(kept, a)
			}
		}
		if dropped := len(actions) - len(kept); dropped > 0 {
			ps.r.m.suppressed.Add(float64(dropped))
			ps.r.log.Warn("strategy entry not queued: Redis is above its memory watermark", "botId", d.bot.ID,
				"candle", time.UnixMilli(openMs).UTC(), "signal", sig.String())
		}
		actions = kept
	}
	spec := d.bot.Strategy
	closeMs := openMs + d.tf.Milliseconds()
	args := []any{openMs, ps.now.UnixMilli(), AnnounceEvery.Milliseconds(), d.bot.ID, queue.MaxLen}
	ids := make([]string, len(actions))
	for i, a := range actions {
		ids[i] = SignalID(d.bot.ID, openMs, a.action)
		body, err := json.Marshal(signal.Signal{Action: a.action, Symbol: spec.Symbol,
			Comment: fmt.Sprintf("strategy %s %s candle %s", spec.Family, spec.Timeframe, time.UnixMilli(openMs).UTC().Format(time.RFC3339))})
		if err != nil {
			return err
		}
		env, err := json.Marshal(queue.Envelope{SignalID: ids[i], BotID: d.bot.ID, Priority: a.priority,
			Source: queue.SourceStrategy, Signal: body, ReceivedAt: closeMs})
		if err != nil {
			return err
		}
		args = append(args, int(a.priority), env, string(a.action), ids[i])
	}
	keys := []string{store.StrategyState(d.bot.ID), queue.StreamOf(d.bot.ID, queue.PriorityStrategyExit),
		queue.StreamOf(d.bot.ID, queue.PriorityStrategyEntry)}
	res, err := store.AckScript(ctx, ps.r.rdb, emitScript, keys, args...).Int64Slice()
	if err != nil {
		return fmt.Errorf("emit script: %w", err)
	}
	if res[0] == 0 {
		ps.r.log.Debug("candle already evaluated", "botId", d.bot.ID, "candle", time.UnixMilli(openMs).UTC())
		return nil
	}
	ps.r.m.evaluations.Inc()
	for i, a := range actions {
		ps.r.m.signals.WithLabelValues(string(a.action)).Inc()
		ps.r.log.Info("strategy signal queued", "botId", d.bot.ID, "signalId", ids[i], "action", a.action,
			"symbol", spec.Symbol, "family", spec.Family, "timeframe", spec.Timeframe, "candle", time.UnixMilli(openMs).UTC())
	}
	return nil
}

// mayTrade reports whether the executor would take a strategy signal of bot now: neither
// disabled nor paused (by spec or at runtime).
func (ps *pass) mayTrade(ctx context.Context, bot registry.Bot) (bool, error) {
	if bot.Availability != "" && bot.Availability != "active" {
		return false, nil
	}
	p, err := ps.r.reg.ReadPause(ctx, bot.ID, ps.now)
	return p == nil, err
}

type queued struct {
	action   signal.Action
	priority queue.Priority
}

// actionsOf turns a strategy signal into queued actions, exits before entries (the exit
// must run first when one candle both leaves a side and enters the other). On spot
// EnterShort and ExitShort are dropped: there are no spot shorts (a spot sell would close
// the long the ExitLong already closes, and there is never a short to exit).
func actionsOf(sig strategy.Signal, kind exchange.Kind) []queued {
	var out []queued
	spot := kind == exchange.Spot
	if sig.Has(strategy.ExitLong) {
		out = append(out, queued{signal.CloseLong, queue.PriorityStrategyExit})
	}
	if sig.Has(strategy.ExitShort) && !spot {
		out = append(out, queued{signal.CloseShort, queue.PriorityStrategyExit})
	}
	if sig.Has(strategy.EnterLong) {
		out = append(out, queued{signal.Buy, queue.PriorityStrategyEntry})
	}
	if sig.Has(strategy.EnterShort) && !spot {
		out = append(out, queued{signal.Sell, queue.PriorityStrategyEntry})
	}
	return out
}
