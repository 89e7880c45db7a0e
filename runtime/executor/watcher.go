package executor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/store"
)

// Watcher triggers.
const (
	TriggerStopLoss    = "stop_loss"
	TriggerTakeProfit  = "take_profit"
	TriggerLiquidation = "liquidation"
)

// DefaultWatchInterval is how often the watcher scans open positions.
const DefaultWatchInterval = 250 * time.Millisecond

// FiredTTL is how long a trigger's "enqueued" marker lives. A trigger whose exit was
// executed is gone from the watch index long before; one whose enqueue was lost with a
// crashed process is enqueued again after this.
const FiredTTL = time.Minute

// Watcher scans the open positions that have a stop-loss, take-profit or (futures)
// liquidation price and, when the market crosses one, enqueues an exit signal at priority
// 2 (strategy exit, source watcher). Each trigger has a deterministic signalId (position,
// trigger, price), and a marker makes every replica enqueue it once; the executor's
// signalId check makes a second enqueue harmless anyway. An exit that failed is retried
// under the next attempt's signalId (at most MaxTriggerAttempts).
type Watcher struct {
	rdb      redis.UniversalClient
	prices   paper.PriceSource
	interval time.Duration
	log      *slog.Logger
	now      func() time.Time
	m        *metrics
	enqueue  func(context.Context, redis.UniversalClient, queue.Envelope) (string, error)
}

// WatcherDeps are a Watcher's dependencies.
type WatcherDeps struct {
	Redis  redis.UniversalClient
	Prices paper.PriceSource
	// Interval defaults to DefaultWatchInterval.
	Interval time.Duration
	Logger   *slog.Logger
	Now      func() time.Time
}

// NewWatcher builds a watcher; its metrics are among the Executor's Collectors.
func (e *Executor) NewWatcher(d WatcherDeps) *Watcher {
	w := &Watcher{rdb: d.Redis, prices: d.Prices, interval: d.Interval, log: d.Logger, now: d.Now,
		m: e.m, enqueue: queue.Enqueue}
	if w.rdb == nil {
		w.rdb = e.rdb
	}
	if w.interval <= 0 {
		w.interval = DefaultWatchInterval
	}
	if w.log == nil {
		w.log = e.log
	}
	if w.now == nil {
		w.now = time.Now
	}
	return w
}

// Run scans every interval until ctx ends.
func (w *Watcher) Run(ctx context.Context) error {
	t := time.NewTicker(w.interval)
	defer t.Stop()
	for {
		if _, err := w.Scan(ctx); err != nil && ctx.Err() == nil {
			w.log.Error("price watcher scan failed", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// Scan checks every watched position once and returns the signalIds it enqueued.
func (w *Watcher) Scan(ctx context.Context) ([]string, error) {
	items, err := position.Watched(ctx, w.rdb)
	if err != nil {
		return nil, err
	}
	type key struct {
		kind   exchange.Kind
		symbol string
	}
	prices := map[key]decimal.Decimal{}
	var out []string
	for _, it := range items {
		k := key{it.Kind, it.Symbol}
		price, ok := prices[k]
		if !ok {
			if price, err = w.prices.Price(ctx, it.Kind, it.Symbol); err != nil {
				w.log.Warn("price watcher: no price", "symbol", it.Symbol, "err", err)
				continue
			}
			prices[k] = price
		}
		trigger, level, closePct := Crossed(it, price)
		if trigger == "" {
			continue
		}
		id, err := w.fire(ctx, it, trigger, level, closePct)
		if err != nil {
			return out, err
		}
		if id != "" {
			out = append(out, id)
		}
	}
	return out, nil
}

// Crossed says which exit price (if any) price has crossed: liquidation first, then the
// stop-loss, then the take-profit. A long's stop-loss triggers at or below its price, its
// take-profit at or above; a short the reverse.
func Crossed(it position.WatchItem, price decimal.Decimal) (trigger string, level, closePercent decimal.Decimal) {
	long := it.Side == position.Long
	below := func(l decimal.Decimal) bool { return price.LessThanOrEqual(l) }
	above := func(l decimal.Decimal) bool { return price.GreaterThanOrEqual(l) }
	adverse, favourable := below, above
	if !long {
		adverse, favourable = above, below
	}
	full := decimal.NewFromInt(100)
	if it.Liquidate.IsPositive() && adverse(it.Liquidate.Decimal) {
		return TriggerLiquidation, it.Liquidate.Decimal, full
	}
	if e := it.StopLoss; e != nil && adverse(e.Price.Decimal) {
		return TriggerStopLoss, e.Price.Decimal, e.ClosePercent.Decimal
	}
	if e := it.TakeProfit; e != nil && favourable(e.Price.Decimal) {
		return TriggerTakeProfit, e.Price.Decimal, e.ClosePercent.Decimal
	}
	return "", decimal.Zero, decimal.Zero
}

// TriggerSignalID is the deterministic name of a trigger: its first attempt's, before the
// signalId is placed in the bot's partition (TriggerAttemptID).
func TriggerSignalID(positionID, trigger string, level decimal.Decimal) string {
	sum := sha256.Sum256([]byte(positionID + "|" + trigger + "|" + level.String()))
	return "wt-" + hex.EncodeToString(sum[:])[:32]
}

// TriggerAttemptID is the signalId of a trigger's attempt (0 the first) for bot botID: the
// trigger's name (TriggerSignalID) with the attempt's suffix, placed in the bot's partition
// (queue.SignalIDFor). The same trigger, attempt and bot always give the same ID.
func TriggerAttemptID(botID, name string, attempt int) string {
	return queue.SignalIDFor(botID, triggerAttempt(name, attempt))
}

// triggerAttempt is attempt's name of the trigger named name, before placement.
func triggerAttempt(name string, attempt int) string {
	if attempt == 0 {
		return name
	}
	return name + "-" + strconv.Itoa(attempt)
}

// MaxTriggerAttempts bounds how often one trigger is retried after its exit failed.
const MaxTriggerAttempts = 10

// triggerID picks the signalId for a trigger: the first attempt's, or, when that exit
// already failed (the exchange was down, say), the next attempt's, so that a failed exit is
// retried instead of being answered from its stored failure. "" means nothing to enqueue:
// an exit succeeded, or the attempts are used up. name is the attempt's name before
// placement, which names its fired marker.
//
// An attempt's result is looked for under its signalId and under its name: a version that
// queues exits under their names (unplaced) may have run the attempt, and its result
// stays readable for queue.ResultTTL().
func (w *Watcher) triggerID(ctx context.Context, it position.WatchItem, trigger string, level decimal.Decimal) (id, name string, err error) {
	base := TriggerSignalID(it.PositionID, trigger, level)
	for attempt := 0; attempt < MaxTriggerAttempts; attempt++ {
		name, id := triggerAttempt(base, attempt), TriggerAttemptID(it.BotID, base, attempt)
		var placed, unplaced func() (result.Stored, error)
		if _, err := w.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
			placed, unplaced = queue.GetResultLater(ctx, p, id), queue.GetResultLater(ctx, p, name)
			return nil
		}); err != nil && !errors.Is(err, redis.Nil) {
			return "", "", err
		}
		stored, err := placed()
		if err == nil && !stored.Found {
			stored, err = unplaced()
		}
		if err != nil {
			return "", "", err
		}
		if !stored.Found {
			return id, name, nil
		}
		if res := stored.Result; res.Success || res.Code == errs.PositionNotFound || res.Code == errs.BotDeleted {
			return "", "", nil
		}
	}
	return "", "", nil
}

func (w *Watcher) fire(ctx context.Context, it position.WatchItem, trigger string, level, closePct decimal.Decimal) (string, error) {
	if n, err := w.rdb.Exists(ctx, store.Bot(it.BotID)).Result(); err != nil {
		return "", err
	} else if n == 0 {
		// The bot is gone: stop watching its position.
		return "", position.Unwatch(ctx, w.rdb, it.BotID, it.Symbol)
	}
	id, name, err := w.triggerID(ctx, it, trigger, level)
	if err != nil || id == "" {
		return "", err
	}
	// The marker is named by the attempt's name, which does not depend on placement: a
	// replica of a version that queues the attempt unplaced finds it too.
	first, err := w.rdb.SetNX(ctx, store.WatchFired(it.BotID, name), "1", FiredTTL).Result()
	if err != nil || !first {
		return "", err
	}
	action := signal.CloseLong
	if it.Side == position.Short {
		action = signal.CloseShort
	}
	sig := signal.Signal{Action: action, Symbol: it.Symbol, Comment: watcherTag + ":" + trigger + ":" + it.PositionID}
	if closePct.IsPositive() && closePct.LessThan(decimal.NewFromInt(100)) {
		sig.Size = &signal.Amount{Value: httpapi.Num(closePct), Percent: true}
	}
	data, err := json.Marshal(sig)
	if err != nil {
		return "", err
	}
	env := queue.Envelope{SignalID: id, BotID: it.BotID, Priority: queue.PriorityStrategyExit,
		Source: queue.SourceWatcher, Signal: data, ReceivedAt: w.now().UnixMilli()}
	if _, err := w.enqueue(ctx, w.rdb, env); err != nil {
		// Let the next scan try again.
		w.rdb.Del(ctx, store.WatchFired(it.BotID, name))
		return "", err
	}
	w.m.triggers.WithLabelValues(trigger).Inc()
	w.log.Info("exit triggered", "signalId", id, "botId", it.BotID, "symbol", it.Symbol, "trigger", trigger, "level", level)
	return id, nil
}
