// Package trading is the manual-signal Go API that authd and mcpd expose: place an order of
// the internal trading API for a bot (queued for the executor like any signal), and read the
// bot's positions, orders, trades, risk metrics and signal results. Callers check that the
// user owns the bot before calling.
package trading

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/history"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/risk"
	"github.com/sigops/sigops/runtime/store"
)

// Bots reads projected bots; *registry.Registry is one.
type Bots interface {
	Get(ctx context.Context, id string) (registry.Bot, error)
}

// API is the manual trading API.
type API struct {
	rdb  redis.UniversalClient
	bots Bots
	// pauses reads the bots' runtime pauses (on rdb, whatever Bots reads).
	pauses *registry.Registry
	book   *position.Book
	// history reads orders, trades and results past the hot window too (WithHistory).
	history *history.Reader
	// guard refuses new orders while Redis is above its memory watermark (nil: never).
	guard  *store.MemoryGuard
	prices paper.PriceSource
	// Now is the clock (tests pin it).
	Now func() time.Time
}

// New builds the API. prices values positions (may be nil: positions then carry no
// current price and no unrealised PnL).
func New(rdb redis.UniversalClient, bots Bots, prices paper.PriceSource) *API {
	pauses := registry.New(rdb)
	if bots == nil {
		bots = pauses
	}
	return &API{rdb: rdb, bots: bots, pauses: pauses, book: position.NewBook(rdb), history: history.New(rdb, nil, nil),
		prices: prices, Now: time.Now}
}

// WithMemoryGuard makes the API refuse new manual orders with SERVICE_UNAVAILABLE while
// Redis is above g's watermark, as the webhook intake refuses signals; it returns a.
func (a *API) WithMemoryGuard(g *store.MemoryGuard) *API {
	a.guard = g
	return a
}

// WithHistory makes the API read history through h (runtime/history: Redis's hot window
// and PostgreSQL's archive); it returns a.
func (a *API) WithHistory(h *history.Reader) *API {
	a.history = h
	return a
}

// PlaceManual validates req and queues it for the bot's executor; the outcome is read with
// Result(signalID). Closes, cancels, orders that reduce an open position and stop_loss /
// take_profit changes go at priority 1 (manual close), other orders at priority 3. Errors
// are *errs.Error: the request's validation codes (1001-1003), BOT_DELETED, BOT_DISABLED or
// EXCHANGE_DISCONNECTED (registry.Bot.DisabledError), BOT_PAUSED (2002) for an order that
// opens or adds (exits and cancels run on a paused bot: its owner must be able to get out); anything
// else is an infrastructure failure. Execution failures (INSUFFICIENT_BALANCE 3001,
// POSITION_NOT_FOUND 3002, EXCHANGE_ERROR 3003, ...) are in the stored result.
func (a *API) PlaceManual(ctx context.Context, botID string, req order.Request) (string, error) {
	placed, err := a.PlaceAdmitted(ctx, botID, "", "", req, nil)
	return placed.SignalID, err
}

// IdempotencyTTL is how long an idempotency key of PlaceManualOnce names its first order:
// a day, as long as a result is kept by default (queue.DefaultResultTTL).
const IdempotencyTTL = queue.DefaultResultTTL

// Placed is the answer of PlaceManualOnce.
type Placed struct {
	SignalID string
	// Repeat: the key named an earlier order, whose signal ID SignalID is; nothing was queued.
	Repeat bool
}

// PlaceManualOnce is PlaceManual under an idempotency key of userID's: the first call with
// key queues the order; a repeat within IdempotencyTTL queues nothing and answers the first
// order's signal ID, on any replica (the key's record and the order's entry are written by
// one script in the bot's slot, queue.EnqueueOnce). A repeat is answered before the bot's
// gates are read, so a bot paused since the first call still answers that call's signal.
// The same key with another request is INVALID_PARAMETER (details: parameter
// idempotencyKey, signalId of the first order), and nothing is queued.
func (a *API) PlaceManualOnce(ctx context.Context, botID, userID, key string, req order.Request) (Placed, error) {
	return a.PlaceAdmitted(ctx, botID, userID, key, req, nil)
}

// PlaceAdmitted is PlaceManual (key "") or PlaceManualOnce (userID's key) of an order
// whose entry amounts a connected app's policy admitted (queue.Envelope.Admitted; nil:
// the executor sizes the order itself).
func (a *API) PlaceAdmitted(ctx context.Context, botID, userID, key string, req order.Request, admitted map[string]httpapi.Number) (Placed, error) {
	// An exit or a cancel is never refused for memory: it frees the user's money, and
	// what it writes is bounded by the positions already open.
	if !req.IsExit() {
		if err := a.guard.Admit(ctx); err != nil {
			return Placed{}, err
		}
	}
	if key == "" {
		env, err := a.Draft(ctx, botID, req)
		if err != nil {
			return Placed{}, err
		}
		env.Admitted = admitted
		if _, err := queue.Enqueue(ctx, a.rdb, env); err != nil {
			return Placed{}, err
		}
		return Placed{SignalID: env.SignalID}, nil
	}
	if err := req.Validate(); err != nil {
		return Placed{}, err
	}
	data, err := json.Marshal(req)
	if err != nil {
		return Placed{}, err
	}
	keySum := sha256.Sum256([]byte(userID + "\n" + key))
	reqSum := sha256.Sum256(data)
	marker := store.ManualIdempotency(botID, hex.EncodeToString(keySum[:]))
	reqHash := hex.EncodeToString(reqSum[:])
	repeat := func(prev string) (Placed, error) {
		id, hash, _ := strings.Cut(prev, " ")
		if hash != reqHash {
			return Placed{}, errs.New(errs.InvalidParameter,
				"idempotencyKey %q was used for a different order (signal %s); use a new key for a new order", key, id).
				WithDetails(map[string]any{"parameter": "idempotencyKey", "signalId": id})
		}
		return Placed{SignalID: id, Repeat: true}, nil
	}
	prev, err := a.rdb.Get(ctx, marker).Result()
	if err == nil {
		return repeat(prev)
	}
	if !errors.Is(err, redis.Nil) {
		return Placed{}, err
	}
	env, err := a.Draft(ctx, botID, req)
	if err != nil {
		return Placed{}, err
	}
	env.Admitted = admitted
	prev, enqueued, err := queue.EnqueueOnce(ctx, a.rdb, env, marker, env.SignalID+" "+reqHash, IdempotencyTTL)
	if err != nil {
		return Placed{}, err
	}
	if !enqueued {
		return repeat(prev) // another call with the key won between the read and the script
	}
	return Placed{SignalID: env.SignalID}, nil
}

// Draft validates req, applies the bot's gates and builds the queue envelope of a new
// manual signal, queued by PlaceAdmitted or previewed as it is (executor.Preview: a dry run,
// a connected app's notional caps).
func (a *API) Draft(ctx context.Context, botID string, req order.Request) (queue.Envelope, error) {
	if err := req.Validate(); err != nil {
		return queue.Envelope{}, err
	}
	bot, err := a.bots.Get(ctx, botID)
	if errors.Is(err, registry.ErrNotFound) {
		return queue.Envelope{}, errs.New(errs.BotDeleted, "bot not found")
	}
	if err != nil {
		return queue.Envelope{}, err
	}
	switch {
	case bot.Availability == "disabled":
		return queue.Envelope{}, bot.DisabledError()
	case req.IsExit():
	case bot.Availability == "paused":
		return queue.Envelope{}, errs.New(errs.BotPaused, "bot paused (%s)", bot.PausedReason)
	default:
		if p, err := a.pauses.ReadPause(ctx, botID, a.Now()); err != nil {
			return queue.Envelope{}, err
		} else if p != nil {
			return queue.Envelope{}, errs.New(errs.BotPaused, "bot paused (%s)", p.Reason)
		}
	}
	prio := queue.PriorityStrategyEntry
	switch req.Type {
	case exchange.StopLoss, exchange.TakeProfit, order.Close, order.Cancel:
		prio = queue.PriorityManualClose
	default:
		pos, err := a.book.Get(ctx, botID, req.Symbol)
		if err != nil {
			return queue.Envelope{}, err
		}
		if pos != nil && pos.Side != position.SideOf(req.Side) {
			prio = queue.PriorityManualClose
		}
	}
	data, err := json.Marshal(req)
	if err != nil {
		return queue.Envelope{}, err
	}
	// "m-" and a UUID, placed in the bot's partition (its last two hex digits re-chosen).
	return queue.Envelope{SignalID: queue.SignalIDFor(botID, "m-"+uuid.NewString()), BotID: botID, Priority: prio, Source: queue.SourceManual,
		Signal: data, ReceivedAt: a.Now().UnixMilli()}, nil
}

// Close queues a manual close of the bot's position on symbol: all of it, or percent of it
// (nil: 100). POSITION_NOT_FOUND (3002) in the result when nothing is open there.
func (a *API) Close(ctx context.Context, botID, symbol string, percent *decimal.Decimal) (string, error) {
	if symbol == "" {
		return "", errs.New(errs.InvalidSymbol, "symbol required; CloseAll closes every position")
	}
	return a.PlaceManual(ctx, botID, order.Request{Type: order.Close, Symbol: symbol, ClosePercent: httpapi.NumOrNil(percent)})
}

// CloseAll queues a manual close of every position the bot holds, one leg per symbol, at
// priority 1.
func (a *API) CloseAll(ctx context.Context, botID string) (string, error) {
	return a.PlaceManual(ctx, botID, order.Request{Type: order.Close})
}

// Cancel queues a manual cancel of the bot's order clientOrderID, still open on its
// exchange, at priority 1. The executor cancels it there and books the cancelled status and
// any partial fill on the order record. INVALID_ACTION in the result for an order that is no
// longer open (filled, cancelled, rejected, expired: the message says which; a paper bot's
// orders fill at once, so they are never open), NOT_FOUND for an order the bot's book does
// not hold.
func (a *API) Cancel(ctx context.Context, botID, clientOrderID string) (string, error) {
	return a.PlaceManual(ctx, botID, order.Request{Type: order.Cancel, ClientOrderID: clientOrderID})
}

// Result is a signal's stored result; not Found while it is queued (or, without an
// archive, after it expired).
func (a *API) Result(ctx context.Context, signalID string) (result.Stored, error) {
	return a.history.Result(ctx, signalID)
}

// resultPoll is how often WaitResult reads the result.
const resultPoll = 50 * time.Millisecond

// WaitResult is Result once the signal has one, or not Found after within (or when ctx
// ends): a caller that placed an order answers its outcome when the executor is quick, and
// otherwise the signal ID to read it later with Result.
func (a *API) WaitResult(ctx context.Context, signalID string, within time.Duration) (result.Stored, error) {
	deadline := time.Now().Add(within)
	for {
		// A result being waited for arrives in Redis: the archive is not asked each poll.
		st, err := queue.GetResult(ctx, a.rdb, signalID)
		if err != nil || st.Found {
			return st, err
		}
		left := time.Until(deadline)
		if left <= 0 {
			return st, nil
		}
		select {
		case <-ctx.Done():
			return st, nil
		case <-time.After(min(resultPoll, left)):
		}
	}
}

// Results are the stored results of signalIDs, in that order, read in one round trip.
func (a *API) Results(ctx context.Context, signalIDs []string) ([]result.Stored, error) {
	reads := make([]func() (result.Stored, error), len(signalIDs))
	if _, err := a.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range signalIDs {
			reads[i] = queue.GetResultLater(ctx, p, id)
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return nil, err
	}
	out := make([]result.Stored, len(signalIDs))
	for i, read := range reads {
		st, err := read()
		if err != nil {
			return nil, err
		}
		out[i] = st
	}
	return out, nil
}

// RecentSignals is the bot's index of recent signals, newest first (queue.RecentSignals):
// the manual-signal API's, mcpd's and the dashboard's signal log.
func (a *API) RecentSignals(ctx context.Context, botID string) ([]queue.SignalEntry, error) {
	return queue.RecentSignals(ctx, a.rdb, botID)
}

// NewestSignals are the newest n signals of botIDs together, newest first
// (queue.NewestSignals): the dashboard's activity across a user's bots, in one round trip.
func (a *API) NewestSignals(ctx context.Context, botIDs []string, n int) ([]queue.BotSignal, error) {
	return queue.NewestSignals(ctx, a.rdb, botIDs, n)
}

// Positions are the bot's open positions (spec: Position) at the current market price.
func (a *API) Positions(ctx context.Context, botID string) ([]position.View, error) {
	open, err := a.book.List(ctx, botID)
	if err != nil {
		return nil, err
	}
	out := make([]position.View, 0, len(open))
	for _, p := range open {
		price := decimal.Zero
		if a.prices != nil {
			if price, err = a.prices.Price(ctx, p.Kind, p.Symbol); err != nil {
				price = decimal.Zero // the position is still shown, without a valuation
			}
		}
		out = append(out, p.View(price))
	}
	return out, nil
}

// Orders are the bot's newest orders (at most limit; 0 means 100).
func (a *API) Orders(ctx context.Context, botID string, limit int) ([]position.OrderRecord, error) {
	if limit <= 0 {
		limit = 100
	}
	page, err := a.history.OrderPage(ctx, botID, position.OrderQuery{Limit: limit})
	return page.Orders, err
}

// OrderPage is a page of the bot's orders, newest first (runtime/history).
func (a *API) OrderPage(ctx context.Context, botID string, q position.OrderQuery) (position.OrderPage, error) {
	return a.history.OrderPage(ctx, botID, q)
}

// Order is one of the bot's orders by client order ID, or nil.
func (a *API) Order(ctx context.Context, botID, clientOrderID string) (*position.OrderRecord, error) {
	return a.history.Order(ctx, botID, clientOrderID)
}

// Trades is a page of the bot's realised trades (runtime/history).
func (a *API) Trades(ctx context.Context, botID string, q history.TradeQuery) (history.TradePage, error) {
	return a.history.Trades(ctx, botID, q)
}

// HistoryFrom is the history retention's cutoff for the bot: the trades closed before it
// are kept only in the per-day analytics; false when none was ever removed, or when the
// archive keeps every trade.
func (a *API) HistoryFrom(ctx context.Context, botID string) (time.Time, bool, error) {
	if a.history.Archived() {
		return time.Time{}, false, nil
	}
	return analytics.Cutoff(ctx, a.rdb, botID)
}

// RiskMetrics is the spec's Bot risk metrics. Exposure is the margin (spot: cost) of the
// bot's open positions over the account's free quote balance plus that margin.
func (a *API) RiskMetrics(ctx context.Context, botID string) (risk.BotMetrics, error) {
	bot, err := a.bots.Get(ctx, botID)
	if errors.Is(err, registry.ErrNotFound) {
		return risk.BotMetrics{}, errs.New(errs.BotDeleted, "bot not found")
	}
	if err != nil {
		return risk.BotMetrics{}, err
	}
	return a.RiskMetricsOf(ctx, bot)
}

// RiskMetricsOf is RiskMetrics of a bot the caller has read already (the read API checks
// ownership on it, so the figures are of that same read).
func (a *API) RiskMetricsOf(ctx context.Context, bot registry.Bot) (risk.BotMetrics, error) {
	// The counters, the open symbols and the paper account in one round trip, the
	// positions in a second.
	pipe := a.rdb.Pipeline()
	r := a.stageRisk(ctx, pipe, bot.ID)
	readAccount := stageAccount(ctx, pipe, bot)
	_, _ = pipe.Exec(ctx) // each read's error is its own
	return a.riskOf(ctx, bot, r, readAccount)
}

// OwnedRiskMetrics is RiskMetricsOf owner's bot id, read in the same round trip as its
// counters and open symbols (mcpd's get_bot_risk: one round trip for a bot with nothing
// open and no paper account; the paper account and the open positions, which depend on
// what that read found, take one more each).
// registry.ErrBotNotFound: no such bot, or another owner's.
func (a *API) OwnedRiskMetrics(ctx context.Context, bots *registry.Registry, id, owner string) (risk.BotMetrics, error) {
	pipe := a.rdb.Pipeline()
	readBot := bots.GetLater(ctx, pipe, id)
	r := a.stageRisk(ctx, pipe, id)
	_, _ = pipe.Exec(ctx) // each read's error is its own
	bot, err := readBot()
	if bot, err = registry.OwnedRead(bot, err, owner); err != nil {
		return risk.BotMetrics{}, err
	}
	return a.riskOf(ctx, bot, r, stageAccount(ctx, a.rdb, bot))
}

// stagedRisk are a bot's risk reads queued on a pipeline.
type stagedRisk struct {
	counters func() (risk.Counters, error)
	open     func(context.Context, redis.Cmdable) ([]position.Position, error)
}

func (a *API) stageRisk(ctx context.Context, pipe redis.Pipeliner, botID string) stagedRisk {
	return stagedRisk{counters: risk.ReadCountersLater(ctx, pipe, botID), open: position.ListLater(ctx, pipe, botID)}
}

// stageAccount queues the read of bot's paper account; nil for a bot on an exchange.
func stageAccount(ctx context.Context, c redis.Cmdable, bot registry.Bot) func() (paper.State, error) {
	if bot.Account.Kind != registry.AccountPaper || bot.Account.ID == "" {
		return nil
	}
	return paper.ReadAccountLater(ctx, c, bot.Account.ID)
}

// riskOf computes bot's metrics from its staged reads, once their pipeline has run.
func (a *API) riskOf(ctx context.Context, bot registry.Bot, r stagedRisk, readAccount func() (paper.State, error)) (risk.BotMetrics, error) {
	limits, err := risk.LimitsOf(bot.Risk)
	if err != nil {
		return risk.BotMetrics{}, errs.Wrap(err, errs.InternalError, "the bot's risk settings are invalid")
	}
	counters, err := r.counters()
	if err != nil {
		return risk.BotMetrics{}, err
	}
	open, err := r.open(ctx, a.rdb)
	if err != nil {
		return risk.BotMetrics{}, err
	}
	free := decimal.Zero
	if readAccount != nil {
		st, err := readAccount()
		if err != nil && !errors.Is(err, paper.ErrNotFound) {
			return risk.BotMetrics{}, err
		}
		if emails.Same(st.Owner, bot.Owner) {
			free = st.Balance
		}
	}
	equity, used := risk.Equity(free, open)
	return risk.Metrics(bot.ID, limits, counters, risk.Exposure(used, equity), a.Now()), nil
}
