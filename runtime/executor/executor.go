// Package executor turns queued signals into orders: for each Envelope it loads the bot,
// checks its availability and account, plans the legs (entry, DCA add, reversal, close,
// exit-price change), sizes and places each leg on the bot's exchange with a client order
// ID derived from the signalId, books the fill (order, position, trade, risk counters) in
// one Redis script guarded by the signal's done markers and result, which stores the result
// with the last leg's booking.
//
// Exactly once: a signal whose result is stored is only re-published; a leg whose fill is
// booked is never booked again; a leg that reached the exchange is looked up by its client
// order ID (GetOrder) before it is ever placed again. So a reclaimed or retried signal,
// even one whose executor died between the fill and the booking, makes one order and moves
// the money once.
package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/bookstate"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/history"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/risk"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/store"
)

// ProgressTTL is how long a signal's progress record (plan, staged requests, done markers
// of booked legs) is kept while the signal is unfinished. The booking that stores the
// signal's result deletes it: from then on the stored result is the signal's guard, and the
// acknowledged entry is deleted from its stream.
const ProgressTTL = 7 * 24 * time.Hour

// Bots reads projected bots; *registry.Registry is one.
type Bots interface {
	Get(ctx context.Context, id string) (registry.Bot, error)
}

// Deps are the executor's dependencies.
type Deps struct {
	// Redis is required.
	Redis redis.UniversalClient
	// Bots defaults to registry.New(Redis).
	Bots Bots
	// Prices feed the default Venues (paper fills); required unless Venues is given.
	Prices paper.PriceSource
	// Venues defaults to &Paper{Redis, Prices} (live accounts: EXCHANGE_DISCONNECTED).
	Venues Venues
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
	// CoalesceWait is the longest a signal's Redis step waits for the other running
	// signals' (store.Coalescer; 0: store.DefaultCoalesceWait).
	CoalesceWait time.Duration
}

// Executor executes signals; Handle is its queue.Handler.
type Executor struct {
	rdb  redis.UniversalClient
	bots Bots
	// pauses reads and writes the bots' runtime pauses (on rdb, whatever Bots reads).
	pauses *registry.Registry
	venues Venues
	book   *position.Book
	log    *slog.Logger
	now    func() time.Time
	m      *metrics
	// afterPlace is a test hook run after a leg's exchange call and before its booking; an
	// error simulates a crash there.
	afterPlace func(leg string) error
	// beforeFanOut is a test hook run after a leg's booking and before its copies are
	// enqueued; an error simulates a crash there.
	beforeFanOut func(leg string) error

	// restorer puts a partition that Redis lost back (WithBookRecord).
	restorer *bookstate.Restorer
	// archived reads a signal's result from PostgreSQL (WithBookRecord; nil without it),
	// for an entry older than the results' life in Redis (late.go).
	archived func(ctx context.Context, signalID string) (result.Stored, error)

	// pipelineBots: bots are read in the signal's first pipeline (Deps.Bots was not given),
	// their projections decoded through decoded.
	pipelineBots bool
	decoded      registry.Decoded
	// paper is the default paper venue when it trades on Redis: its accounts are read in
	// the first pipeline too (see prefetch.go).
	paper *Paper
	// co sends the first pipeline, the paper fill and the commit of concurrent signals
	// together (store.Coalescer); Gate gives it to the queue consumer.
	co         *store.Coalescer
	hints      hints
	catalogues catalogues
}

// New builds an Executor.
func New(d Deps) *Executor {
	e := &Executor{rdb: d.Redis, bots: d.Bots, pauses: registry.New(d.Redis), venues: d.Venues, log: d.Logger, now: d.Now, m: newMetrics()}
	if e.bots == nil {
		e.bots = e.pauses
	}
	if e.venues == nil {
		e.venues = &Paper{Redis: d.Redis, Prices: d.Prices}
	}
	if e.log == nil {
		e.log = slog.Default()
	}
	if e.now == nil {
		e.now = time.Now
	}
	e.book = position.NewBook(d.Redis)
	e.restorer = bookstate.NewRestorer(d.Redis, nil)
	e.pipelineBots = d.Bots == nil
	e.co = store.NewCoalescer(d.Redis, d.CoalesceWait)
	if p, ok := e.venues.(*Paper); ok && sameClient(p.Redis, d.Redis) {
		e.paper = p
		if p.Coalescer == nil {
			p.Coalescer = e.co
		}
	}
	return e
}

// Gate is what the queue consumer tells how many signals it runs at once, so that their
// Redis commands go out together (queue.Options.Gate).
func (e *Executor) Gate() *store.Coalescer { return e.co }

// WithBookRecord restores a partition that Redis lost from db, PostgreSQL's copy of the
// book state (runtime/bookstate), and records the paper accounts' changes there too;
// without it a lost partition starts again empty. Call it before Handle runs.
func (e *Executor) WithBookRecord(db *pgxpool.Pool) *Executor {
	e.restorer = bookstate.NewRestorer(e.rdb, db)
	e.archived = history.New(e.rdb, db, e.log).ArchivedResult
	// The paper accounts' money is recorded with the positions it stands on.
	if p, ok := e.venues.(*Paper); ok {
		p.Records = paper.NewRecords(p.Redis, db)
	}
	return e
}

// BookRestorer is the restorer Handle uses (WithBookRecord's, or one that only marks a lost
// partition), for the daemon's restore loop (bookstate.Restorer.Run) and its metrics.
func (e *Executor) BookRestorer() *bookstate.Restorer { return e.restorer }

// restoreBook puts partition part's book state back into Redis, unless it is there.
func (e *Executor) restoreBook(ctx context.Context, part int) error {
	n, err := e.restorer.Partition(ctx, part)
	if err != nil {
		return fmt.Errorf("restoring partition %d's book: %w", part, err)
	}
	if n > 0 {
		e.log.Warn("Redis had lost a partition's book state; restored from PostgreSQL", "partition", part, "bots", n)
	}
	return nil
}

// ready prepares a signal whose result Redis does not hold for its execution: a late entry
// (late.go) answers its archived result (stored) or has its paper orders recalled from the
// archive (the returned ctx), and a partition Redis lost is restored and read again (the
// returned pre), so that nothing is decided on an empty book.
func (e *Executor) ready(ctx context.Context, env queue.Envelope, pre *prefetch, now time.Time) (context.Context, *prefetch, result.Stored, error) {
	if pre.err != nil {
		return ctx, pre, result.Stored{}, pre.err
	}
	stored, recall, err := e.late(ctx, env, now)
	if err != nil || stored.Found {
		return ctx, pre, stored, err
	}
	if recall {
		ctx = paper.Recall(ctx)
	}
	if pre.unrestored() {
		if err := e.restoreBook(ctx, store.PartitionOf(env.BotID)); err != nil {
			return ctx, pre, result.Stored{}, err
		}
		pre = e.begin(ctx, env, now)
	}
	return ctx, pre, result.Stored{}, pre.err
}

// republish announces again the result another attempt of the signal stored, and counts
// it as a duplicate.
func (e *Executor) republish(ctx context.Context, env queue.Envelope, res result.Result) error {
	e.m.signals.WithLabelValues("duplicate", string(res.Code)).Inc()
	return queue.PublishResult(ctx, e.rdb, env, res)
}

// Collectors are the executor's (and its watchers') Prometheus metrics, for the caller to
// register.
func (e *Executor) Collectors() []prometheus.Collector { return e.m.collectors() }

// Handle executes one envelope; it is a queue.Handler. Business failures become failure
// results (published, nil returned); only infrastructure failures return an error, and the
// queue then redelivers the envelope.
func (e *Executor) Handle(ctx context.Context, env queue.Envelope) error {
	start := time.Now()
	// The signal's logger is built only when something is logged.
	log := func() *slog.Logger {
		return e.log.With("signalId", env.SignalID, "botId", env.BotID, "source", env.Source)
	}
	now := e.now()
	// One round trip for the independent reads (prefetch.go), each decoded below or in
	// execute at the point where it is needed.
	pre := e.begin(ctx, env, now)
	if stored, err := pre.result(); err != nil {
		return err
	} else if stored.Found {
		if e.log.Enabled(ctx, slog.LevelInfo) {
			log().Info("signal already executed; result re-published")
		}
		return e.republish(ctx, env, stored.Result)
	}
	ctx, pre, stored, err := e.ready(ctx, env, pre, now)
	if err != nil {
		return err
	} else if stored.Found {
		log().Info("signal already executed (its result is in the archive); result re-published")
		return e.republish(ctx, env, stored.Result)
	}
	out, err := e.execute(ctx, env, pre, now)
	if errors.Is(err, errFinished) {
		// Another attempt stored the result while this one ran: re-publish it.
		stored, gerr := queue.GetResult(ctx, e.rdb, env.SignalID)
		if gerr != nil || !stored.Found {
			return errors.Join(err, gerr)
		}
		return e.republish(ctx, env, stored.Result)
	}
	if err != nil {
		e.m.signals.WithLabelValues("retry", "").Inc()
		log().Error("signal not executed; it will be retried", "err", err)
		return err
	}
	res := out.res
	if !res.Success && (out.execErr || res.Code == errs.InternalError) {
		if err := e.countError(ctx, env, log()); err != nil {
			return err
		}
	}
	if env.Source == queue.SourceCopy {
		if err := e.recordCopy(ctx, env, res); err != nil {
			return err
		}
	}
	if out.published {
		// Stored and announced by the booking of its last leg (commitScript).
	} else if err := queue.PublishResult(ctx, e.rdb, env, res); err != nil {
		log().Error("result not published; the signal will be retried", "err", err)
		return err
	}
	label := "success"
	if !res.Success {
		label = "failure"
	}
	e.m.signals.WithLabelValues(label, string(res.Code)).Inc()
	e.m.execute.Observe(time.Since(start).Seconds())
	if env.ReceivedAt > 0 {
		e.m.queued.Observe(max(0, float64(e.now().UnixMilli()-env.ReceivedAt)/1000))
	}
	if res.Success {
		if e.log.Enabled(ctx, slog.LevelInfo) {
			log().Info("signal executed", "message", res.Message)
		}
	} else {
		log().Warn("signal failed", "code", res.Code, "error", res.Error)
	}
	return nil
}

// DeadLettered is the queue's Options.OnDeadLetter: a signal the queue gave up on (retry
// budget spent, a panic) counts as an execution error of its bot, so that a bot whose
// exchange keeps failing pauses (Errors) instead of dead-lettering signal after signal.
func (e *Executor) DeadLettered(ctx context.Context, env queue.Envelope, dl queue.DeadLetter) error {
	e.m.signals.WithLabelValues("dead_letter", string(dl.Code)).Inc()
	return e.countError(ctx, env, e.log.With("signalId", env.SignalID, "botId", env.BotID))
}

// countError counts an execution error once per signal and pauses the bot (reason Errors)
// at the fifth in a row.
func (e *Executor) countError(ctx context.Context, env queue.Envelope, log *slog.Logger) error {
	key := store.SignalProgress(env.BotID, env.SignalID)
	first, err := e.rdb.HSetNX(ctx, key, "errorCounted", "1").Result()
	if err != nil {
		return err
	}
	if !first {
		return nil
	}
	e.rdb.Expire(ctx, key, ProgressTTL)
	pause, err := risk.RecordError(ctx, e.rdb, env.BotID, e.now())
	if err != nil {
		return err
	}
	if pause != nil {
		e.m.pauses.WithLabelValues(pause.Reason).Inc()
		log.Warn("bot paused after consecutive execution errors", "reason", pause.Reason, "errors", risk.MaxConsecutiveErrors)
	}
	return nil
}

// job is one signal being executed.
type job struct {
	env      queue.Envelope
	bot      registry.Bot
	acct     Account
	kind     exchange.Kind
	markets  map[string]exchange.MarketInfo
	symbols  *signal.Symbols
	limits   risk.Limits
	progress map[string]string
	now      time.Time
	// snap is what the attempt read before its first leg ran (prefetch.go); nil after.
	snap *snapshot
	// sig is the signal parsed once (nil: manual or malformed).
	sig *signal.Signal
	// unsaved is a plan made by this attempt and not stored yet (see loadOrPlan).
	unsaved []byte
	// planText is the plan this attempt made, stored or not ("": it follows a stored plan).
	planText string
	// free is the free quote balance each entry leg sized in this attempt was sized from,
	// by leg name (see bookIn.free).
	free map[string]decimal.Decimal
	// followers are the IDs in the bot's followers set (copy.go), read with the first reads.
	followers []string
	// equity is the bot's equity the entry leg being staged was sized from, when the bot
	// has followers ("": none); staging keeps it in the progress record (prefixEquity).
	equity string
	// view is what the job knows of the bot's book, with the texts stored (book.go).
	view bookView
	// msgs and last are the messages and the last order of the legs run so far, lastLeg
	// the name of the plan's last leg: the result is built from them (resultWith).
	msgs    []string
	last    *result.Order
	lastLeg string
	// published is the result the booking of the last leg stored (nil: none yet).
	published *finalResult
}

// sigKey is the signal's progress record, in the slot of the bot it was queued for (the
// booking transaction's other keys are the projected bot's: the same one).
func (j *job) sigKey() string { return store.SignalProgress(j.env.BotID, j.env.SignalID) }

// outcome is a signal's result, success or business failure, and whether a failure counts
// as an execution error of the bot (countError).
type outcome struct {
	res     result.Result
	execErr bool
	// published: the result is stored and announced already (by the last booking).
	published bool
}

// execError marks an error of the execution on the exchange (it refused the order, or did
// not list its markets): the failure it becomes counts as an execution error. It wraps the
// error, so errs.As still finds its code.
type execError struct{ error }

func (e execError) Unwrap() error { return e.error }

// execute returns the signal's outcome, or an infrastructure error (the signal is retried).
func (e *Executor) execute(ctx context.Context, env queue.Envelope, pre *prefetch, now time.Time) (outcome, error) {
	j, err := e.newJob(ctx, env, pre, now)
	if err == nil {
		var out outcome
		if out, err = e.planAndRun(ctx, j); err == nil {
			return out, nil
		}
	}
	if _, ok := errs.As(err); !ok {
		return outcome{}, err
	}
	return outcome{res: result.Failure(env.SignalID, env.BotID, err, now.UnixMilli()),
		execErr: errors.As(err, new(execError))}, nil
}

// newJob loads what the signal's execution needs, checking on the way that the bot may
// trade now: it exists, is neither disabled nor paused (a watcher exit runs while paused),
// has valid risk settings and an account that opens, and the account's exchange lists its
// markets.
func (e *Executor) newJob(ctx context.Context, env queue.Envelope, pre *prefetch, now time.Time) (*job, error) {
	bot, err := e.admit(ctx, env, pre, now)
	if err != nil {
		return nil, err
	}
	return e.jobFor(ctx, env, pre, now, bot)
}

// jobFor loads the rest of what an admitted bot's signal needs: its risk limits, its
// account and the account's markets, the signal's progress and the bot's followers.
func (e *Executor) jobFor(ctx context.Context, env queue.Envelope, pre *prefetch, now time.Time, bot registry.Bot) (*job, error) {
	j := &job{env: env, bot: bot, now: now, kind: exchange.Spot, sig: pre.sig}
	var err error
	if bot.Market == string(exchange.Futures) {
		j.kind = exchange.Futures
	}
	if j.limits, err = risk.LimitsOf(bot.Risk); err != nil {
		return nil, errs.Wrap(err, errs.InternalError, "the bot's risk settings are invalid")
	}
	if j.acct, err = e.open(ctx, pre, bot); err != nil {
		return nil, err
	}
	markets, err := j.acct.Exchange.Markets(ctx, j.kind)
	if err != nil {
		return nil, execError{err}
	}
	cat := e.catalogues.of(j.acct.Venue, j.kind, markets)
	j.markets, j.symbols = cat.markets, cat.symbols
	if j.progress, err = pre.progress.Result(); err != nil {
		return nil, err
	}
	if pre.followers != nil && bot.ID == env.BotID {
		if j.followers, err = pre.followers(); err != nil {
			return nil, err
		}
	}
	j.view = viewOf(pre.book, j)
	j.snap = snapshotOf(pre, j)
	return j, nil
}

// admit is the signal's bot, when it may trade now: it exists and is neither disabled nor
// paused. Exits from the price watcher and manual exits (close, stop-loss, take-profit)
// protect open positions and run even while paused: a bot paused for risk must still let
// its owner get out.
func (e *Executor) admit(ctx context.Context, env queue.Envelope, pre *prefetch, now time.Time) (registry.Bot, error) {
	bot, err := e.getBot(ctx, pre, env.BotID)
	if errors.Is(err, registry.ErrNotFound) {
		return bot, errs.New(errs.BotDeleted, "bot deleted")
	}
	if err != nil {
		return bot, err
	}
	protective := env.Source == queue.SourceWatcher || manualExit(env)
	switch bot.Availability {
	case "disabled":
		return bot, bot.DisabledError()
	case "paused":
		if !protective {
			return bot, errs.New(errs.BotPaused, "bot paused (%s)", bot.PausedReason)
		}
	}
	if protective {
		return bot, nil
	}
	// Read ahead under env.BotID: the same bot's unless the projection's ID differs.
	readPause := pre.pause
	if bot.ID != env.BotID {
		readPause = func() (*registry.Pause, error) { return e.pauses.ReadPause(ctx, bot.ID, now) }
	}
	p, err := readPause()
	if err != nil {
		return bot, err
	}
	if p != nil {
		return bot, errs.New(errs.BotPaused, "bot paused (%s)", p.Reason)
	}
	return bot, nil
}

// manualExit: env is a manual close, stop-loss or take-profit request.
func manualExit(env queue.Envelope) bool {
	if env.Source != queue.SourceManual {
		return false
	}
	var req order.Request
	return json.Unmarshal(env.Signal, &req) == nil && req.IsExit()
}

// planAndRun follows the signal's stored plan or makes one, and runs it. When another
// attempt stores its plan first, it follows that plan, as the first attempt's, from fresh
// reads (nothing of this attempt's plan was stored or sent).
func (e *Executor) planAndRun(ctx context.Context, j *job) (outcome, error) {
	if req, ok := manualCancel(j.env); ok {
		res, err := e.cancelOrder(ctx, j, req)
		return outcome{res: res}, err
	}
	p, err := e.loadOrPlan(ctx, j)
	if err != nil {
		return outcome{}, err
	}
	if len(p.Legs) > 0 {
		// What the next signal of this bot reads ahead.
		h := hint{symbol: p.Legs[0].Symbol}
		if e.paper != nil && j.bot.Account.Kind == registry.AccountPaper {
			h.account = j.bot.Account.ID
		}
		e.hints.set(j.env.BotID, h)
	}
	res, err := e.run(ctx, j, p)
	for tries := 0; errors.Is(err, errPlanLost); tries++ {
		if tries == maxTxRetries {
			return outcome{}, fmt.Errorf("planning %s: too much contention", j.env.SignalID)
		}
		j.snap, j.unsaved = nil, nil
		if j.progress, err = e.rdb.HGetAll(ctx, j.sigKey()).Result(); err != nil {
			return outcome{}, err
		}
		if p, err = e.loadOrPlan(ctx, j); err != nil {
			return outcome{}, err
		}
		res, err = e.run(ctx, j, p)
	}
	return outcome{res: res, published: j.published != nil}, err
}

// loadOrPlan returns the signal's stored plan (a retry continues the first attempt's plan,
// whatever the book says now) or plans it. A new plan is kept in j.unsaved: it is stored
// together with the first leg's pending order (stagePending), or by itself (savePlan) before
// anything else of the signal is written or sent; either way with HSETNX, so that when
// another attempt stored a plan first, this one follows that plan (errPlanLost).
func (e *Executor) loadOrPlan(ctx context.Context, j *job) (plan, error) {
	j.planText = ""
	if s := j.progress[fieldPlan]; s != "" {
		var p plan
		err := json.Unmarshal([]byte(s), &p)
		return p, err
	}
	p, err := e.plan(ctx, j)
	if err != nil {
		return plan{}, err
	}
	if j.unsaved, err = json.Marshal(p); err != nil {
		return plan{}, err
	}
	j.planText = string(j.unsaved)
	return p, nil
}

// errPlanLost: another attempt of the signal stored its plan first; execute follows it.
var errPlanLost = errors.New("another attempt stored its plan first")

// savePlan stores the attempt's new plan by itself, if it has one.
func (e *Executor) savePlan(ctx context.Context, j *job) error {
	if j.unsaved == nil {
		return nil
	}
	var set *redis.BoolCmd
	if _, err := e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		set = p.HSetNX(ctx, j.sigKey(), fieldPlan, j.unsaved)
		p.Expire(ctx, j.sigKey(), ProgressTTL)
		return nil
	}); err != nil {
		return err
	}
	if !set.Val() {
		return errPlanLost
	}
	j.planSaved()
	return nil
}

func (j *job) planSaved() {
	j.progress[fieldPlan] = string(j.unsaved)
	j.unsaved = nil
}

// run executes the legs in order and builds the result.
func (e *Executor) run(ctx context.Context, j *job, p plan) (result.Result, error) {
	j.msgs, j.last, j.lastLeg = nil, nil, ""
	if len(p.Legs) > 0 {
		j.lastLeg = p.Legs[len(p.Legs)-1].Name
	}
	for _, l := range p.Legs {
		if j.expired(l) {
			// A paper leg is placed without a staged request: its order, if an earlier
			// attempt placed it, says the leg is not stale.
			if placed, err := e.placedUnstaged(ctx, j, l); err != nil {
				return result.Result{}, err
			} else if !placed {
				return e.expire(ctx, j, l, j.msgs)
			}
		}
		done, err := e.runLeg(ctx, j, l)
		// The leg may have moved the position and the balance: later legs read them anew.
		j.snap = nil
		if err != nil {
			if ee, ok := errs.As(err); ok && len(j.msgs) > 0 {
				// Earlier legs happened: say so in the failure.
				ee.Message = strings.Join(j.msgs, "; ") + "; then failed: " + ee.Message
			}
			return result.Result{}, err
		}
		j.addDone(done)
		if e.beforeFanOut != nil {
			if err := e.beforeFanOut(l.Name); err != nil {
				return result.Result{}, err
			}
		}
		if j.published != nil {
			return j.published.res, nil
		}
		if err := e.fanOut(ctx, j, done); err != nil {
			return result.Result{}, err
		}
		if done.Halt != "" {
			break
		}
	}
	if err := e.savePlan(ctx, j); err != nil { // a plan of no legs (none is made today)
		return result.Result{}, err
	}
	return j.resultWith(legDone{}, e.now()), nil
}

// addDone adds a run leg's message (and the halt it caused) and order to the result's.
func (j *job) addDone(d legDone) {
	j.msgs = append(j.msgs, d.Message)
	if d.Halt != "" {
		j.msgs = append(j.msgs, d.Halt)
	}
	if d.Order != nil {
		j.last = d.Order
	}
}

// resultWith is the signal's success after the legs run so far and d (the zero legDone:
// none more), at now.
func (j *job) resultWith(d legDone, now time.Time) result.Result {
	msgs, last := j.msgs, j.last
	if d.Message != "" {
		msgs = append(msgs[:len(msgs):len(msgs)], d.Message)
	}
	if d.Halt != "" {
		msgs = append(msgs, d.Halt)
	}
	if d.Order != nil {
		last = d.Order
	}
	return result.Result{SignalID: j.env.SignalID, BotID: j.bot.ID, Success: true,
		Message: strings.Join(msgs, "; "), Timestamp: now.UnixMilli(), Order: last}
}
