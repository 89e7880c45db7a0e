package lab

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"
	"golang.org/x/sync/singleflight"

	"github.com/sigops/sigops/runtime/backtest"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/strategy"
	"github.com/sigops/sigops/runtime/wallet"
)

// Group is the consumer group of the dispatch streams.
const Group = "lab"

// Engine defaults.
const (
	DefaultPoll        = 500 * time.Millisecond
	DefaultSeriesCache = 4
	// historyAttempts is how many times a job's candles are asked for before its missing
	// experiments are recorded as failed (and refunded).
	historyAttempts = 3
)

// InsufficientCandles is a failed experiment's code when the period has fewer candles than
// its parameter set needs to emit a first signal (strategy.Strategy.Warmup plus the candle
// a signal is executed on).
const InsufficientCandles = "INSUFFICIENT_CANDLES"

// EngineOptions configure an Engine.
type EngineOptions struct {
	// Redis should be a client of the engine's own (queue.DedicatedClient): the engine keeps
	// one blocking read open per partition it serves, up to 32, which would take the
	// connections of a shared pool from the executor's signals.
	Redis redis.UniversalClient
	// DB, when set, is PostgreSQL: the wallet's record and the jobs' outbox, which the
	// engine relays (outbox.go). With Wallets given, their database is used instead.
	DB      *pgxpool.Pool
	Wallets *wallet.Wallets
	History marketdata.History
	// Owned lists the queue partitions this executor holds (queue.Consumer.Owned): the
	// engine serves exactly their dispatch streams.
	Owned func() []int
	// Name is this instance's consumer name in the dispatch groups (queue.Consumer.Name).
	Name string
	// Workers is how many experiments run at once across all jobs (default GOMAXPROCS).
	Workers int
	// Poll is how often Owned is read, and the longest an idle read blocks (default
	// DefaultPoll).
	Poll time.Duration
	// SeriesCache is how many candle series are kept for later jobs (default
	// DefaultSeriesCache; about 5 MB each for 100,000 candles).
	SeriesCache int
	// HistoryBackoff is the wait between two attempts at a job's candles (default 1 s).
	HistoryBackoff time.Duration
	// Market finds a symbol's market rules (default paper.Market, as Options.Market).
	Market  func(exchange.Kind, string) (exchange.MarketInfo, bool)
	Metrics *Metrics
	Logger  *slog.Logger
	Now     func() time.Time
}

// Engine runs the jobs queued on the partitions its executor holds.
type Engine struct {
	o      EngineOptions
	slots  chan struct{}
	series *seriesCache
	log    *slog.Logger
	// afterExperiment, when set (tests), is called after each experiment's outcome is
	// stored.
	afterExperiment func(jobID string, index int)
}

// NewEngine returns an Engine; Run starts it.
func NewEngine(o EngineOptions) *Engine {
	if o.Workers <= 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	if o.Poll <= 0 {
		o.Poll = DefaultPoll
	}
	if o.SeriesCache <= 0 {
		o.SeriesCache = DefaultSeriesCache
	}
	if o.HistoryBackoff <= 0 {
		o.HistoryBackoff = time.Second
	}
	fillShared(o.Redis, &o.DB, &o.Market, &o.Now, &o.Wallets, &o.Metrics)
	if o.Logger == nil {
		o.Logger = slog.Default()
	}
	if o.Name == "" {
		o.Name = "lab-" + strconv.FormatInt(randomSeed(), 36)
	}
	return &Engine{o: o, slots: make(chan struct{}, o.Workers), series: newSeriesCache(o.SeriesCache),
		log: o.Logger.With("component", "lab", "consumer", o.Name)}
}

// Run serves the dispatch streams of the partitions Owned lists, polled every Poll, until
// ctx ends. A partition no longer owned stops its job in hand (the new owner finishes it);
// so does the end of ctx, leaving the job's entry pending for whoever owns the partition
// next. Redis failures are logged and retried.
func (e *Engine) Run(ctx context.Context) error {
	readers := map[int]context.CancelFunc{}
	var wg sync.WaitGroup
	follow := func() {
		owned := map[int]bool{}
		for _, p := range e.o.Owned() {
			owned[p] = true
			if _, ok := readers[p]; ok {
				continue
			}
			pctx, cancel := context.WithCancel(ctx)
			readers[p] = cancel
			wg.Add(1)
			go func() {
				defer wg.Done()
				e.serve(pctx, p)
			}()
		}
		for p, cancel := range readers {
			if !owned[p] {
				cancel()
				delete(readers, p)
			}
		}
	}
	tick := time.NewTicker(e.o.Poll)
	defer tick.Stop()
	var relayed time.Time
	follow()
	for {
		select {
		case <-ctx.Done():
			for _, cancel := range readers {
				cancel()
			}
			wg.Wait()
			return nil
		case <-tick.C:
			follow()
			if e.o.DB != nil && time.Since(relayed) >= relayEvery {
				relayed = time.Now()
				if _, err := e.relay(ctx); err != nil && ctx.Err() == nil {
					e.log.Warn("lab relay: undispatched jobs wait for the next pass", "error", err)
				}
			}
		}
	}
}

// sweepEvery is how often a partition's reader claims entries delivered to another
// consumer after it took the partition (a previous owner frozen, not dead).
const sweepEvery = 5 * time.Second

// serve reads one partition's dispatch stream: first the entries pending for any consumer
// (claimed, XAUTOCLAIM with min-idle 0: the partition lease already proves the previous
// owner stopped), then new ones, one job at a time.
func (e *Engine) serve(ctx context.Context, p int) {
	stream := store.LabDispatch(p)
	for !e.retry(ctx, "taking over the lab stream", func() error { return e.takeOver(ctx, stream) }) {
		if ctx.Err() != nil {
			return
		}
	}
	cursor, swept := "0", time.Now()
	for ctx.Err() == nil {
		if time.Since(swept) >= sweepEvery {
			if n, err := e.claim(ctx, stream); err == nil && n > 0 {
				cursor = "0"
			}
			swept = time.Now()
		}
		block := time.Duration(-1)
		if cursor == ">" {
			block = e.o.Poll
		}
		res, err := e.o.Redis.XReadGroup(ctx, &redis.XReadGroupArgs{Group: Group, Consumer: e.o.Name,
			Streams: []string{stream, cursor}, Count: 1, Block: block}).Result()
		if errors.Is(err, redis.Nil) || (err == nil && (len(res) == 0 || len(res[0].Messages) == 0)) {
			cursor = ">"
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if store.IsNoGroup(err) {
				_ = e.takeOver(ctx, stream)
			}
			e.log.Warn("reading the lab stream failed", "partition", p, "err", err)
			sleep(ctx, time.Second)
			continue
		}
		msg := res[0].Messages[0]
		if err := e.runEntry(ctx, stream, msg); err != nil {
			if ctx.Err() != nil {
				return
			}
			e.log.Warn("lab job failed, will retry", "partition", p, "entry", msg.ID, "err", err)
			sleep(ctx, time.Second)
		}
		cursor = "0"
	}
}

func (e *Engine) retry(ctx context.Context, what string, fn func() error) bool {
	err := fn()
	if err == nil {
		return true
	}
	if ctx.Err() == nil {
		e.log.Warn(what+" failed", "err", err)
		sleep(ctx, time.Second)
	}
	return false
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

// takeOver creates the stream's group if needed and claims every pending entry.
func (e *Engine) takeOver(ctx context.Context, stream string) error {
	if err := e.o.Redis.XGroupCreateMkStream(ctx, stream, Group, "0").Err(); err != nil && !store.IsBusyGroup(err) {
		return err
	}
	_, err := e.claim(ctx, stream)
	return err
}

// claim moves every entry pending for another consumer to this one.
func (e *Engine) claim(ctx context.Context, stream string) (int, error) {
	total := 0
	for start := "0-0"; ; {
		ids, next, err := e.o.Redis.XAutoClaimJustID(ctx, &redis.XAutoClaimArgs{Stream: stream, Group: Group,
			Consumer: e.o.Name, Start: start, Count: 100}).Result()
		if err != nil {
			return total, err
		}
		total += len(ids)
		if next == "0-0" || next == "" {
			return total, nil
		}
		start = next
	}
}

// runEntry runs the job of one dispatch entry, then acknowledges and deletes the entry
// (one slot: the stream's). A nil error means the job is finished (or was not a job).
func (e *Engine) runEntry(ctx context.Context, stream string, msg redis.XMessage) error {
	jobID, _ := msg.Values[dispatchJF].(string)
	userID, _ := msg.Values[dispatchUF].(string)
	if jobID != "" && userID != "" {
		if err := e.runJob(ctx, userID, jobID); err != nil {
			return err
		}
	}
	_, err := e.o.Redis.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.XAck(ctx, stream, Group, msg.ID)
		p.XDel(ctx, stream, msg.ID)
		return nil
	})
	return err
}

// markRunning moves a queued job to running (never back from done).
var markRunning = redis.NewScript(`
if redis.call('HGET', KEYS[1], 'state') == 'queued' then redis.call('HSET', KEYS[1], 'state', 'running') end
return 1`)

// runJob runs a job's missing experiments and finishes it.
func (e *Engine) runJob(ctx context.Context, userID, jobID string) error {
	rec, err := e.o.Redis.HGetAll(ctx, store.LabJob(userID, jobID)).Result()
	if err != nil {
		return err
	}
	if len(rec) == 0 || rec[fUser] != userID {
		e.log.Warn("lab entry names no job", "job", jobID, "user", userID)
		return nil
	}
	if s := rec[fState]; s == StateDone || s == StateFailed {
		return nil // finished before its entry was acknowledged
	}
	job, err := decodeJob(jobID, rec)
	if err != nil || job.Request.Seed == nil {
		e.log.Error("lab job unreadable; dropped", "job", jobID, "user", userID, "err", err)
		return nil
	}
	if err := markRunning.Run(ctx, e.o.Redis, []string{store.LabJob(userID, jobID)}).Err(); err != nil {
		return err
	}
	done, err := e.stored(ctx, userID, jobID)
	if err != nil {
		return err
	}
	r := job.Request
	sets := ParameterSets(r.Family, r.Experiments, *r.Seed)
	var missing []int
	for i := range r.Experiments {
		if _, ok := done[i]; !ok {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		if err := e.runExperiments(ctx, userID, jobID, r, sets, missing); err != nil {
			return err
		}
	}
	return e.finish(ctx, userID, job)
}

// stored reads the outcomes stored so far, by index.
func (e *Engine) stored(ctx context.Context, userID, jobID string) (map[int]Experiment, error) {
	m, err := e.o.Redis.HGetAll(ctx, store.LabExperiments(userID, jobID)).Result()
	if err != nil {
		return nil, err
	}
	out := make(map[int]Experiment, len(m))
	for k, v := range m {
		i, err := strconv.Atoi(k)
		if err != nil {
			continue
		}
		var x Experiment
		if err := json.Unmarshal([]byte(v), &x); err != nil {
			return nil, fmt.Errorf("lab: job %s experiment %s: %w", jobID, k, err)
		}
		out[i] = x
	}
	return out, nil
}

// runExperiments runs the missing experiments of a job on the engine's worker slots, over
// one shared Series, storing each outcome as it completes. Candles that cannot be had
// fail every missing experiment (recorded, so refunded); a cancelled ctx records nothing
// more and returns its error.
func (e *Engine) runExperiments(ctx context.Context, userID, jobID string, r Request, sets []strategy.Params, missing []int) error {
	market, candles, err := e.seriesOf(ctx, r)
	if err != nil {
		if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			// Ours ended, or the fetch we shared was another job's that ended: not the
			// candles' fault, so nothing is recorded and the job runs again.
			return errors.Join(err, ctx.Err())
		}
		for _, i := range missing {
			if err := e.record(ctx, userID, jobID, failed(i, paramsAt(sets, i), err, 0)); err != nil {
				return err
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	errc := make(chan error, len(missing))
	for _, i := range missing {
		select {
		case e.slots <- struct{}{}:
		case <-ctx.Done():
			wg.Wait()
			return ctx.Err()
		}
		wg.Add(1)
		go func() {
			defer func() { <-e.slots; wg.Done() }()
			if ctx.Err() != nil {
				return
			}
			x, err := e.experiment(ctx, r, market, candles, i, sets)
			if err == nil {
				err = e.record(ctx, userID, jobID, x)
			}
			if err != nil {
				errc <- err
			}
		}()
	}
	wg.Wait()
	close(errc)
	if err := ctx.Err(); err != nil {
		return err
	}
	return <-errc // nil when the channel is empty
}

func paramsAt(sets []strategy.Params, i int) strategy.Params {
	if i < len(sets) {
		return sets[i]
	}
	return strategy.Params{}
}

// experiment backtests parameter set i; an error is returned only when ctx ended (the
// outcome is then not recorded).
func (e *Engine) experiment(ctx context.Context, r Request, m *jobMarket, candles, i int, sets []strategy.Params) (Experiment, error) {
	s := m.series
	if i >= len(sets) {
		return failed(i, strategy.Params{}, errors.New("the search found no further distinct parameter set"), candles), nil
	}
	spec := r.spec(sets[i])
	st, err := strategy.New(spec)
	if err != nil {
		return failed(i, sets[i], err, candles), nil
	}
	ws := r.windows(candles)
	if short := shortWindow(ws, candles, st.Warmup()+1); short != "" {
		x := failed(i, sets[i], nil, candles)
		x.Error = &ExperimentError{Code: InsufficientCandles, Message: short}
		return x, nil
	}
	cfg, err := r.configWith(spec, m)
	if err != nil {
		return failed(i, sets[i], err, candles), nil
	}
	start := time.Now()
	parts, err := runWindows(ctx, s, cfg, ws)
	e.o.Metrics.duration.Observe(time.Since(start).Seconds())
	if err != nil {
		if ctx.Err() != nil {
			return Experiment{}, ctx.Err()
		}
		return failed(i, sets[i], err, candles), nil
	}
	x := Experiment{Index: i, Params: sets[i], Candles: candles, equity: curveOf(chained(parts, cfg.InitialBalance))}
	for j, p := range parts {
		x.Windows = append(x.Windows, figuresOf(s, ws[j], p))
		x.Returns = append(x.Returns, dailyReturns(p.Equity)...)
	}
	ranked := x.Windows[len(ws)-2]
	x.Trades, x.Metrics, x.FinalEquity = ranked.Trades, &ranked.Metrics, &ranked.FinalEquity
	x.OutOfSample = &x.Windows[len(ws)-1]
	return x, nil
}

// shortWindow says why the period's candles, cut into ws, cannot be run by a strategy that
// needs need candles to trade: too few in all, or in the first window (which has no
// candles before it to warm up on), or a window left empty; empty when they can.
func shortWindow(ws []window, candles, need int) string {
	if candles < need {
		return fmt.Sprintf("the period has %d candles; these parameters need at least %d", candles, need)
	}
	if n := ws[0].hi - ws[0].lo; n < need {
		return fmt.Sprintf("the first window of the period has %d candles; these parameters need at least %d", n, need)
	}
	for _, w := range ws[1:] {
		if w.hi <= w.lo {
			return "the period has too few candles to split into its windows"
		}
	}
	return ""
}

func failed(i int, p strategy.Params, err error, candles int) Experiment {
	x := Experiment{Index: i, Params: p, Candles: candles}
	if err != nil {
		x.Error = &ExperimentError{Code: string(errs.CodeOf(err)), Message: err.Error()}
		if e, ok := errs.As(err); ok {
			x.Error.Message = e.Message
		}
	}
	return x
}

// record stores an experiment's outcome and its equity curve once (HSETNX, one MULTI in
// the job's slot): a resumed job's repeat of an experiment in flight when its executor died
// leaves the first outcome and the curve that goes with it.
func (e *Engine) record(ctx context.Context, userID, jobID string, x Experiment) error {
	b, err := json.Marshal(x)
	if err != nil {
		return err
	}
	var curve []byte
	if len(x.equity) > 0 {
		if curve, err = json.Marshal(x.equity); err != nil {
			return err
		}
	}
	field := strconv.Itoa(x.Index)
	if _, err := e.o.Redis.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSetNX(ctx, store.LabExperiments(userID, jobID), field, b)
		if curve != nil {
			p.HSetNX(ctx, store.LabEquity(userID, jobID), field, curve)
		}
		return nil
	}); err != nil {
		return err
	}
	outcome := "ok"
	if x.Error != nil {
		outcome = "failed"
	}
	e.o.Metrics.experiments.WithLabelValues(outcome).Inc()
	if e.afterExperiment != nil {
		e.afterExperiment(jobID, x.Index)
	}
	return nil
}

// finish ranks the stored outcomes and, in one transaction guarded by the job's state,
// stores the result, marks the job done (failed when no experiment ran) and refunds the
// failed experiments with their ledger entry: a second finish (another replica, a
// re-delivered entry) finds the state and writes nothing.
func (e *Engine) finish(ctx context.Context, userID string, job Job) error {
	r := job.Request
	done, err := e.stored(ctx, userID, job.ID)
	if err != nil {
		return err
	}
	exps := make([]Experiment, 0, r.Experiments)
	for i := range r.Experiments {
		x, ok := done[i]
		if !ok {
			return fmt.Errorf("lab: job %s: experiment %d has no outcome", job.ID, i)
		}
		exps = append(exps, x)
	}
	res := Result{Objective: Objective, MinTrades: r.MinTrades, Seed: *r.Seed}
	for _, x := range exps {
		res.Candles = max(res.Candles, x.Candles)
		if x.Error != nil {
			res.Failed++
		}
	}
	if err := e.validate(ctx, r, &res, exps); err != nil {
		return err
	}
	Rank(exps, r.MinTrades)
	res.Experiments = exps
	if len(exps) > 0 && exps[0].Error == nil {
		if res.Best, err = bestOf(r, exps[0]); err != nil {
			return err
		}
		res.Overfitting.noteLoss(res.Best)
	}
	body, err := json.Marshal(res)
	if err != nil {
		return err
	}
	state := StateDone
	if res.Failed == len(exps) {
		state = StateFailed
	}
	refund := UnitCostUsd.Mul(decimal.NewFromInt(int64(res.Failed)))
	key := store.LabJob(userID, job.ID)
	finished := false
	_, err = e.o.Wallets.Apply(ctx, userID, wallet.Change{Kind: wallet.Refund, Amount: refund, JobID: job.ID}, &wallet.With{
		Watch: []string{key},
		Check: func(ctx context.Context, tx *redis.Tx) error {
			s, err := tx.HGet(ctx, key, fState).Result()
			if err != nil {
				return err
			}
			if s == StateDone || s == StateFailed {
				return wallet.ErrSkip
			}
			return nil
		},
		Stage: func(ctx context.Context, p redis.Pipeliner, _ decimal.Decimal) error {
			p.HSet(ctx, key, fState, state, fResult, body, fRefunded, refund.String(),
				fFinished, strconv.FormatInt(e.o.Now().UnixMilli(), 10))
			finished = true
			return nil
		}})
	if err != nil {
		return err
	}
	if finished {
		event := jobFinished
		if state == StateFailed {
			event = jobFailed
		}
		e.o.Metrics.jobs.WithLabelValues(event).Inc()
		e.o.Metrics.refunds.Add(float64(res.Failed))
		e.log.Info("lab job finished", "job", job.ID, "state", state, "experiments", len(exps), "failed", res.Failed)
	}
	return nil
}

// validate adds the split, the overfitting estimate and a walk-forward job's stitched
// record to res, and drops the experiments' daily returns, which only the estimate reads.
// Jobs whose experiments ran before the split have no windows and get none of it.
func (e *Engine) validate(ctx context.Context, r Request, res *Result, exps []Experiment) error {
	ran := false
	for _, x := range exps {
		ran = ran || (x.Error == nil && len(x.Windows) > 0)
	}
	if ran {
		o := overfittingOf(exps)
		res.Overfitting = &o
		m, _, err := e.seriesOf(ctx, r)
		if err != nil {
			return err
		}
		v := r.validation(m.series)
		res.Validation = &v
		if r.WalkForwardFolds > 0 {
			if res.WalkForward, err = walkForward(ctx, m, r, exps); err != nil {
				return err
			}
		}
	}
	for i := range exps {
		exps[i].Returns = nil
	}
	return nil
}

// jobMarket is what a job's backtests read: its candle series and, on futures, the
// period's funding settlements. fundingErr says why they could not be had: only the jobs
// that charge funding fail for it.
type jobMarket struct {
	series     *backtest.Series
	funding    []marketdata.FundingRate
	fundingErr error
}

// seriesOf is the job's market, from the cache or fetched once however many jobs ask at
// the same time.
func (e *Engine) seriesOf(ctx context.Context, r Request) (*jobMarket, int, error) {
	kind := exchange.Kind(r.Market)
	key := fmt.Sprintf("%s|%s|%s|%d|%d", kind, r.Symbol, r.Timeframe, r.From.UnixMilli(), r.To.UnixMilli())
	return e.series.get(key, func() (*jobMarket, error) {
		m, ok := e.o.Market(kind, r.Symbol)
		if !ok {
			return nil, errs.New(errs.InvalidSymbol, "symbol %q is not a %s market the Strategy Lab backtests", r.Symbol, kind)
		}
		var candles []marketdata.Candle
		err := e.attempts(ctx, func() (err error) {
			candles, err = e.o.History.CandlesBetween(ctx, kind, r.Symbol, r.Timeframe, r.From, r.To)
			return err
		})
		if err != nil {
			return nil, err
		}
		s, err := backtest.NewSeries(candles, m, r.Timeframe)
		if err != nil {
			return nil, err
		}
		jm := &jobMarket{series: s}
		if kind == exchange.Futures {
			jm.funding, jm.fundingErr = e.fundingOf(ctx, r)
		}
		return jm, nil
	})
}

// attempts calls fetch up to historyAttempts times, HistoryBackoff apart, until it succeeds
// or ctx ends.
func (e *Engine) attempts(ctx context.Context, fetch func() error) error {
	var err error
	for attempt := range historyAttempts {
		if attempt > 0 {
			sleep(ctx, e.o.HistoryBackoff)
		}
		if err = fetch(); err == nil || ctx.Err() != nil {
			break
		}
	}
	return err
}

// fundingOf is the period's funding settlements of r's perpetual (never nil without an
// error).
func (e *Engine) fundingOf(ctx context.Context, r Request) ([]marketdata.FundingRate, error) {
	fh, ok := e.o.History.(marketdata.FundingHistory)
	if !ok {
		return nil, errs.New(errs.ExchangeError, "the market data source has no funding history for %s; run with funding off", r.Symbol)
	}
	var rates []marketdata.FundingRate
	err := e.attempts(ctx, func() (err error) {
		rates, err = fh.FundingBetween(ctx, r.Symbol, r.From, r.To)
		return err
	})
	if err != nil {
		return nil, err
	}
	if rates == nil {
		rates = []marketdata.FundingRate{}
	}
	return rates, nil
}

// seriesCache keeps the last few markets (least recently used out) and fetches a missing
// one once for all its concurrent askers.
type seriesCache struct {
	max    int
	flight singleflight.Group

	mu    sync.Mutex
	order *list.List // of *cached, most recent first
	byKey map[string]*list.Element
}

type cached struct {
	key    string
	market *jobMarket
}

func newSeriesCache(n int) *seriesCache {
	return &seriesCache{max: n, order: list.New(), byKey: map[string]*list.Element{}}
}

func (c *seriesCache) get(key string, fetch func() (*jobMarket, error)) (*jobMarket, int, error) {
	c.mu.Lock()
	if el, ok := c.byKey[key]; ok {
		c.order.MoveToFront(el)
		m := el.Value.(*cached).market
		c.mu.Unlock()
		return m, m.series.Len(), nil
	}
	c.mu.Unlock()
	v, err, _ := c.flight.Do(key, func() (any, error) {
		m, err := fetch()
		if err != nil {
			return nil, err
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		if _, ok := c.byKey[key]; !ok {
			c.byKey[key] = c.order.PushFront(&cached{key: key, market: m})
			for c.order.Len() > c.max {
				last := c.order.Back()
				delete(c.byKey, last.Value.(*cached).key)
				c.order.Remove(last)
			}
		}
		return m, nil
	})
	if err != nil {
		return nil, 0, err
	}
	m := v.(*jobMarket)
	return m, m.series.Len(), nil
}
