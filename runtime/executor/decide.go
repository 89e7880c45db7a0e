package executor

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/signal"
)

// Read, decide, act, commit.
//
// A signal's plan is decided by decide, a pure function of values already read: the
// envelope and its parsed signal, the bot, its market catalogue, and the book values and
// market prices in hand. decide does no I/O, and cannot: its input (decideIn) holds data
// only, with no function, interface, channel or client anywhere inside it, which
// TestDecideInputHoldsNoIO checks on the type, so nothing decide calls can reach Redis or an
// exchange. A test hands it a snapshot and compares plans (TestDecideIsAPureFunction).
//
// When a value the decision needs is not in hand (a position the first pipeline did not
// read ahead, the open positions of a close without a symbol, the market price an absolute
// stop-loss is checked against), decide answers which one (a *missing) and nothing else;
// the executor reads it (Executor.plan) and decides again. Each answer names a value not
// asked for before, so the loop ends after at most one read per kind of value; in the
// steady state the first pipeline read everything and decide runs once.
//
// What follows a decision is unchanged: the plan is stored with the first leg's pending
// order, each leg is sized and sent (the act), and the booking's commit script writes it.

// decideIn is everything decide reads.
type decideIn struct {
	env queue.Envelope
	// sig is the webhook or watcher signal parsed ahead (nil: decide parses env.Signal).
	sig     *signal.Signal
	bot     registry.Bot
	kind    exchange.Kind
	markets map[string]exchange.MarketInfo
	symbols *signal.Symbols
	// book holds the bot's positions by symbol (a nil value: none open) and, when listed,
	// its open-position symbols.
	book *snapshot
	// tickers are market prices by symbol.
	tickers map[string]decimal.Decimal
}

// missing is a value decide needs and was not given: exactly one field is set.
type missing struct {
	// position: the bot's position on this symbol.
	position string
	// members: the bot's open-position symbols, with their positions.
	members bool
	// ticker: the market price of this symbol.
	ticker string
}

func (m *missing) Error() string {
	switch {
	case m.position != "":
		return "decide needs the position on " + m.position
	case m.members:
		return "decide needs the open positions"
	}
	return "decide needs the price of " + m.ticker
}

// position is the bot's open position on symbol (a copy), or nil.
func (d *decideIn) position(symbol string) (*position.Position, error) {
	p, ok := d.book.positions[symbol]
	if !ok {
		return nil, &missing{position: symbol}
	}
	if p == nil {
		return nil, nil
	}
	cp := *p
	return &cp, nil
}

// openPositions is every open position of the bot, by symbol.
func (d *decideIn) openPositions() ([]position.Position, error) {
	if !d.book.listed {
		return nil, &missing{members: true}
	}
	out := make([]position.Position, 0, len(d.book.members))
	for _, sym := range slices.Sorted(slices.Values(d.book.members)) {
		p, ok := d.book.positions[sym]
		if !ok {
			return nil, &missing{members: true}
		}
		if p != nil {
			out = append(out, *p)
		}
	}
	return out, nil
}

// refPrice is the price an entry is expected to fill at: the limit price or the market.
func (d *decideIn) refPrice(m exchange.MarketInfo, limit *httpapi.Number) (decimal.Decimal, error) {
	if limit != nil {
		return limit.Decimal, nil
	}
	return d.ticker(m.Symbol)
}

// ticker is the market price of symbol.
func (d *decideIn) ticker(symbol string) (decimal.Decimal, error) {
	p, ok := d.tickers[symbol]
	if !ok {
		return decimal.Decimal{}, &missing{ticker: symbol}
	}
	return p, nil
}

// maxDecideReads bounds the reads between two decisions of one signal: one per position
// named, the open positions, one price. More means decide asked for the same value twice.
const maxDecideReads = 8

// plan decides the signal's plan: decide on what the job holds, then each value it asks
// for read and decide again. The book values are the job's snapshot (what the first
// pipeline read ahead), which the reads add to, so that the first leg is sized from the
// same values it was planned on; without a snapshot (an attempt whose plan lost to
// another's) they start from nothing, read fresh.
func (e *Executor) plan(ctx context.Context, j *job) (plan, error) {
	book := j.snap
	if book == nil {
		book = &snapshot{positions: map[string]*position.Position{}}
	}
	in := &decideIn{env: j.env, sig: j.sig, bot: j.bot, kind: j.kind, markets: j.markets, symbols: j.symbols, book: book,
		tickers: map[string]decimal.Decimal{}}
	for range maxDecideReads {
		p, err := decide(in)
		var m *missing
		if !errors.As(err, &m) {
			return p, err
		}
		if err := e.readFor(ctx, j, in, m); err != nil {
			return plan{}, err
		}
	}
	return plan{}, fmt.Errorf("deciding %s: more than %d reads", j.env.SignalID, maxDecideReads)
}

// readFor reads what decide said it was missing into its input.
func (e *Executor) readFor(ctx context.Context, j *job, in *decideIn, m *missing) error {
	switch {
	case m.position != "":
		p, err := e.book.Get(ctx, j.bot.ID, m.position)
		if err != nil {
			return err
		}
		in.book.positions[m.position] = p
	case m.members:
		return e.listOpen(ctx, j.bot.ID, in.book)
	default:
		p, err := j.acct.Exchange.Ticker(ctx, j.kind, m.ticker)
		if err != nil {
			return err
		}
		in.tickers[m.ticker] = p
	}
	return nil
}
