// Package trading is the manual-signal Go API that authd and mcpd expose: place an order of
// the internal trading API for a bot (queued for the executor like any signal), and read the
// bot's positions, orders, trades, risk metrics and signal results. Callers check that the
// user owns the bot before calling.
package trading

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/google/uuid"
	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/risk"
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
	return &API{rdb: rdb, bots: bots, pauses: pauses, book: position.NewBook(rdb), prices: prices, Now: time.Now}
}

// PlaceManual validates req and queues it for the bot's executor; the outcome is read with
// Result(signalID). Closes, orders that reduce an open position and stop_loss /
// take_profit changes go at priority 1 (manual close), other orders at priority 3. Errors
// are *errs.Error: the request's validation codes (1001-1003), BOT_DELETED, BOT_DISABLED or
// EXCHANGE_DISCONNECTED (registry.Bot.DisabledError), BOT_PAUSED (2002) for an order that
// opens or adds (exits run on a paused bot: its owner must be able to get out); anything
// else is an infrastructure failure. Execution failures (INSUFFICIENT_BALANCE 3001,
// POSITION_NOT_FOUND 3002, EXCHANGE_ERROR 3003, ...) are in the stored result.
func (a *API) PlaceManual(ctx context.Context, botID string, req order.Request) (string, error) {
	if err := req.Validate(); err != nil {
		return "", err
	}
	bot, err := a.bots.Get(ctx, botID)
	if errors.Is(err, registry.ErrNotFound) {
		return "", errs.New(errs.BotDeleted, "bot not found")
	}
	if err != nil {
		return "", err
	}
	switch {
	case bot.Availability == "disabled":
		return "", bot.DisabledError()
	case req.IsExit():
	case bot.Availability == "paused":
		return "", errs.New(errs.BotPaused, "bot paused (%s)", bot.PausedReason)
	default:
		if p, err := a.pauses.ReadPause(ctx, botID, a.Now()); err != nil {
			return "", err
		} else if p != nil {
			return "", errs.New(errs.BotPaused, "bot paused (%s)", p.Reason)
		}
	}
	prio := queue.PriorityStrategyEntry
	switch req.Type {
	case exchange.StopLoss, exchange.TakeProfit, order.Close:
		prio = queue.PriorityManualClose
	default:
		pos, err := a.book.Get(ctx, botID, req.Symbol)
		if err != nil {
			return "", err
		}
		if pos != nil && pos.Side != position.SideOf(req.Side) {
			prio = queue.PriorityManualClose
		}
	}
	data, err := json.Marshal(req)
	if err != nil {
		return "", err
	}
	id := "m-" + uuid.NewString()
	env := queue.Envelope{SignalID: id, BotID: botID, Priority: prio, Source: queue.SourceManual,
		Signal: data, ReceivedAt: a.Now().UnixMilli()}
	if _, err := queue.Enqueue(ctx, a.rdb, env); err != nil {
		return "", err
	}
	return id, nil
}

// Close queues a manual close of the bot's position on symbol: all of it, or percent of it
// (nil: 100). POSITION_NOT_FOUND (3002) in the result when nothing is open there.
func (a *API) Close(ctx context.Context, botID, symbol string, percent *decimal.Decimal) (string, error) {
	if symbol == "" {
		return "", errs.New(errs.InvalidSymbol, "symbol required; CloseAll closes every position")
	}
	return a.PlaceManual(ctx, botID, order.Request{Type: order.Close, Symbol: symbol, ClosePercent: percent})
}

// CloseAll queues a manual close of every position the bot holds, one leg per symbol, at
// priority 1.
func (a *API) CloseAll(ctx context.Context, botID string) (string, error) {
	return a.PlaceManual(ctx, botID, order.Request{Type: order.Close})
}

// Result is a signal's stored result; not Found while it is queued (or after it expired).
func (a *API) Result(ctx context.Context, signalID string) (result.Stored, error) {
	return queue.GetResult(ctx, a.rdb, signalID)
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
	return a.book.Orders(ctx, botID, limit)
}

// Trades are the bot's realised trades, oldest first.
func (a *API) Trades(ctx context.Context, botID string) ([]position.Trade, error) {
	return a.book.Trades(ctx, botID)
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
	botID := bot.ID
	limits, err := risk.LimitsOf(bot.Risk)
	if err != nil {
		return risk.BotMetrics{}, errs.Wrap(err, errs.InternalError, "the bot's risk settings are invalid")
	}
	counters, err := risk.ReadCounters(ctx, a.rdb, botID)
	if err != nil {
		return risk.BotMetrics{}, err
	}
	open, err := a.book.List(ctx, botID)
	if err != nil {
		return risk.BotMetrics{}, err
	}
	free := decimal.Zero
	if bot.Account.Kind == registry.AccountPaper && bot.Account.ID != "" {
		st, err := paper.NewAccounts(a.rdb).Get(ctx, bot.Account.ID)
		if err != nil && !errors.Is(err, paper.ErrNotFound) {
			return risk.BotMetrics{}, err
		}
		if emails.Same(st.Owner, bot.Owner) {
			free = st.Balance
		}
	}
	equity, used := risk.Equity(free, open)
	return risk.Metrics(botID, limits, counters, risk.Exposure(used, equity), a.Now()), nil
}
