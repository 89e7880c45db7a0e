package executor

import (
	"context"
	"errors"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/store"
)

// Account is the exchange account a bot trades on, opened for one signal.
type Account struct {
	Exchange exchange.Exchange
	// FeeRate is the account's fee rate, used to size "N%" orders so that the fee fits.
	FeeRate decimal.Decimal
	// Venue names the exchange in metrics and logs (paper, binance, bybit, okx).
	Venue string

	// quote is the account's quote balance when it was read together with the account
	// (paper), as Exchange.Balance of that asset would answer; nil otherwise.
	quote *exchange.Balance
}

// Venues opens the account of a bot. An implementation must refuse an account whose owner
// is not the bot's owner (BOT_DISABLED), and answer EXCHANGE_DISCONNECTED when the
// account cannot be reached for a reason the user must fix. Other errors are retried.
type Venues interface {
	Open(ctx context.Context, bot registry.Bot) (Account, error)
}

// Paper opens paper accounts itself and hands exchange accounts to Live.
type Paper struct {
	Redis  redis.UniversalClient
	Prices paper.PriceSource
	// Live opens exchange connections (LiveVenues in the executor binary). Nil runs a
	// paper-only executor, for tests that need no exchange: a live bot's signal then fails
	// with EXCHANGE_DISCONNECTED, which the user can act on, instead of being retried.
	Live Venues
	// Records, when set, records the accounts' changes in PostgreSQL and restores an
	// account Redis lost before its next fill (paper.WithRecord).
	Records *paper.Records
	// Coalescer, when set, sends the paper fills' scripts with the executor's other
	// commands of the same moment (the executor sets its own when it shares the client).
	Coalescer *store.Coalescer
}

// Open implements Venues.
func (v *Paper) Open(ctx context.Context, bot registry.Bot) (Account, error) {
	switch bot.Account.Kind {
	case registry.AccountPaper:
		if bot.Account.ID == "" {
			return Account{}, errs.New(errs.BotDisabled, "the bot's paper account %q does not exist", bot.Account.Name)
		}
		st, err := paper.NewAccounts(v.Redis).Get(ctx, bot.Account.ID)
		return v.openPaper(bot, st, nil, err)
	case registry.AccountExchange:
		if v.Live == nil {
			return Account{}, errs.New(errs.ExchangeDisconnected, "this executor trades paper accounts only")
		}
		return v.Live.Open(ctx, bot)
	}
	return Account{}, errs.New(errs.BotDisabled, "the bot has no account")
}

// openPaper opens the paper account bot.Account.ID from its state as read (st, err), its
// exchange with the values read ahead for its fills (nil: none).
func (v *Paper) openPaper(bot registry.Bot, st paper.State, ahead *paper.Ahead, err error) (Account, error) {
	if errors.Is(err, paper.ErrNotFound) {
		return Account{}, errs.New(errs.BotDisabled, "the bot's paper account %q does not exist", bot.Account.Name)
	}
	if err != nil {
		return Account{}, err
	}
	if st.Owner == "" || !emails.Same(st.Owner, bot.Owner) {
		return Account{}, errs.New(errs.BotDisabled, "paper account %q does not belong to the bot's owner", bot.Account.Name)
	}
	return Account{
		Exchange: paper.NewExchange(v.Redis, bot.Account.ID, bot.ID, v.Prices, paper.WithAhead(ahead), v.recorded(), paper.WithCoalescer(v.Coalescer)),
		FeeRate:  st.FeeRate, Venue: "paper",
		// The same two fields the paper exchange's Balance(Quote) reads.
		quote: &exchange.Balance{Asset: paper.Quote, Free: st.Balance, Locked: st.Margin},
	}, nil
}

// aheadAccount is an account opened from a read ahead; ok is false when the read was not
// of the bot's account (Open must then be called).
type aheadAccount struct {
	acct Account
	ok   bool
}

// prefetchPaper queues the read of paper account accountID on p, for a signal whose bot
// is not read yet, with what the fills of r need (paper.ReadAheadLater). The returned
// open, called with the bot once the pipeline has run, opens the account as Open would
// from that read, its exchange with the fill values read ahead, or reports it not ok when
// the bot does not trade on that paper account.
func (v *Paper) prefetchPaper(ctx context.Context, p redis.Pipeliner, accountID string, r paperReads) (open func(registry.Bot) (aheadAccount, error)) {
	read := paper.ReadAheadLater(ctx, p, accountID, r.scope, r.symbols, r.cids)
	return func(bot registry.Bot) (aheadAccount, error) {
		if bot.Account.Kind != registry.AccountPaper || bot.Account.ID == "" || bot.Account.ID != accountID {
			return aheadAccount{}, nil
		}
		st, ahead, err := read()
		a, err := v.openPaper(bot, st, ahead, err)
		return aheadAccount{acct: a, ok: true}, err
	}
}

// paperReads are what a signal's first pipeline reads ahead for its paper fills: the
// bot's (scope's) holdings on symbols and the orders under client order IDs cids.
type paperReads struct {
	scope         string
	symbols, cids []string
}

// paperSymbols resolves a signal's symbol on the paper catalogue (the same names for spot
// and futures) before the bot, and so its exchange, is known.
var paperSymbols = signal.NewSymbols(paper.Symbols())

// paperReadsOf chooses paperReads for env: the holdings on the hinted symbol and on the
// signal's own, and the order of the one leg a single-leg plan places (plan.go names it:
// "" for an entry or a sell, "close:<symbol>" for a close). A guess that misses costs the
// fill one read, never a wrong value: the fill script compares what it was computed from.
func paperReadsOf(env queue.Envelope, sig *signal.Signal, h hint) paperReads {
	r := paperReads{scope: env.BotID}
	if h.symbol != "" {
		r.symbols = append(r.symbols, h.symbol)
	}
	if sig != nil && sig.Symbol != "" {
		if sym, err := paperSymbols.Resolve(sig.Symbol); err == nil && sym != h.symbol {
			r.symbols = append(r.symbols, sym)
		}
	}
	closing := sig != nil && (sig.Action == signal.Close || sig.Action == signal.CloseLong || sig.Action == signal.CloseShort)
	if !closing {
		r.cids = []string{order.ClientOrderID(env.SignalID, "")}
		return r
	}
	for _, sym := range r.symbols {
		r.cids = append(r.cids, order.ClientOrderID(env.SignalID, "close:"+sym))
	}
	return r
}

// recorded is the exchange option that records fills (none without Records).
func (v *Paper) recorded() paper.Option {
	return paper.WithRecord(v.Records)
}
