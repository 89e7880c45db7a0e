package portfolio

import (
	"context"
	"errors"
	"slices"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/emails"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
)

// Books are an owner's bots as one read finds them: each projected bot with its open
// positions and its realised history (the per-day aggregates). A page that shows the
// portfolio beside other figures of the same bots (the dashboard's overview: the bot list
// and the equity curve) reads them once (ReadBooks) and computes every figure from that
// read: the portfolio with OfBooks, the combined history with Combined.
type Books struct {
	// owner is canonical.
	owner string
	// bots are every projected bot of the owner, by ID.
	bots []*botBook
}

// botBook is one of the owner's bots with its open positions and realised history.
type botBook struct {
	bot registry.Bot
	// positions are read for a bot on an account only (a bot without one holds nothing).
	positions []position.Position
	history   analytics.History
	// realised is the net PnL of all the bot's trades (history.Realised: the figure the
	// bot's analytics report as totalPnL over "all"), in the quote of its trades.
	realised decimal.Decimal
}

// Bots are the owner's projected bots, by ID.
func (b Books) Bots() []registry.Bot {
	out := make([]registry.Bot, len(b.bots))
	for i, bb := range b.bots {
		out[i] = bb.bot
	}
	return out
}

// Combined is the realised history of all the owner's bots together over q's days
// (analytics.Combine): the figures of the overview's equity curve, from the days the
// portfolio's realised PnL was summed from.
func (b Books) Combined(q analytics.Query) analytics.Combined {
	hs := make([]analytics.History, len(b.bots))
	for i, bb := range b.bots {
		hs[i] = bb.history
	}
	return analytics.Combine(hs, q)
}

// byAccount are the books of the bots on an account, by account.
func (b Books) byAccount() map[accountKey][]*botBook {
	out := map[accountKey][]*botBook{}
	for _, bb := range b.bots {
		if bb.bot.Account.ID != "" {
			k := accountKey{bb.bot.Account.Kind, bb.bot.Account.ID}
			out[k] = append(out[k], bb)
		}
	}
	return out
}

// ReadBooks reads the owner's books in three round trips whatever the number of bots and
// positions: the owner's bot IDs; then, in one pipeline, every bot's projection, open
// symbols and day aggregates; then every open position. (A bot whose days count fewer
// trades than its list holds costs one more, for its trade list; on a Cluster each
// pipeline is sent to the nodes side by side.)
func (s *Service) ReadBooks(ctx context.Context, owner string) (Books, error) {
	owner = emails.Canonical(owner)
	ids, err := s.reg.OwnerBots(ctx, owner)
	if err != nil {
		return Books{}, err
	}
	slices.Sort(ids)
	reads := make([]bookReads, len(ids))
	if _, err := s.o.Redis.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, id := range ids {
			reads[i] = s.bookLater(ctx, p, id)
		}
		return nil
	}); err != nil && !errors.Is(err, redis.Nil) {
		return Books{}, err
	}
	out := Books{owner: owner}
	var symbols []*redis.StringSliceCmd
	for _, r := range reads {
		b, ok, err := r.decode(owner)
		if err != nil {
			return Books{}, err
		}
		if ok {
			out.bots = append(out.bots, &b)
			symbols = append(symbols, r.symbols)
		}
	}
	if err := s.readPositions(ctx, out.bots, symbols); err != nil {
		return Books{}, err
	}
	return out, nil
}

// bookReads are one bot's reads queued on the books' pipeline.
type bookReads struct {
	bot     func() (registry.Bot, error)
	symbols *redis.StringSliceCmd
	history func() (analytics.History, error)
}

// bookLater queues the reads of bot id's projection (decoded through the service's cache:
// a projection changes far less often than a page is shown), open symbols and history.
func (s *Service) bookLater(ctx context.Context, p redis.Pipeliner, id string) bookReads {
	return bookReads{bot: s.decoded.GetLater(ctx, p, id), symbols: p.SMembers(ctx, store.BookPositions(id)),
		history: analytics.HistoryLater(ctx, p, s.o.Redis, id)}
}

// decode is the bot's book without its positions; false when the bot is gone (deleted since
// it was listed) or another owner's, whose history is then not decoded.
func (r bookReads) decode(owner string) (botBook, bool, error) {
	bot, err := r.bot()
	if errors.Is(err, registry.ErrNotFound) {
		return botBook{}, false, nil
	}
	if err != nil {
		return botBook{}, false, err
	}
	if !emails.Same(bot.Owner, owner) {
		return botBook{}, false, nil
	}
	h, err := r.history()
	if err != nil {
		return botBook{}, false, err
	}
	return botBook{bot: bot, history: h, realised: h.Realised()}, true, nil
}

// readPositions reads the open positions of the books' bots on an account (symbols: each
// one's open symbols, as listed) in one pipelined round trip, each bot's by symbol. A
// position closed since its symbol was listed is left out.
func (s *Service) readPositions(ctx context.Context, books []*botBook, symbols []*redis.StringSliceCmd) error {
	ids := make([]string, len(books))
	syms := make([][]string, len(books))
	for i, b := range books {
		if b.bot.Account.ID == "" {
			continue
		}
		if err := symbols[i].Err(); err != nil {
			return err
		}
		ids[i], syms[i] = b.bot.ID, symbols[i].Val()
	}
	positions, err := position.ReadMany(ctx, s.o.Redis, ids, syms)
	if err != nil {
		return err
	}
	for i, b := range books {
		if b.bot.Account.ID != "" {
			b.positions = positions[i]
		}
	}
	return nil
}
