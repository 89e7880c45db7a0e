package executor

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/risk"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/store"
)

// One pipeline to start a signal (docs/benchmarks.md, "Signal pipeline under load").
//
// A signal starts with reads that do not depend on one another: the stored result, the bot
// projection, the runtime pause, the signal's progress record and, for a paper bot, its
// paper account. They go to Redis in one pipeline (begin), together with reads guessed from
// the bot's previous signal (hints): the position it planned on and, for a close without a
// symbol, the set of its open positions. Each value is decoded at the point of Handle and
// execute that needs it, so the checks run in their fixed order with their codes: the
// stored result first (found: re-published, nothing else looked at), then deleted,
// disabled, paused; a watcher exit never looks at the pause and so never clears one; the
// account's errors come after the risk settings'.
//
// Why a value read ahead is as good as one read where it is used: from the pipeline to that
// point, the attempt writes none of the keys read ahead. Its only write before the first
// leg's exchange call, other than an expired pause cleared from the bot's hash (ReadPause;
// nothing read ahead reads those fields afterwards), is the plan with the first pending
// order (stagePending), into the progress record and the order records: no position,
// balance or position set. When that plan loses to another attempt's (HSETNX), the record
// is read again and every later read is fresh. So each value is one a read at the point of
// use would have returned had the attempt run a few hundred microseconds earlier. Writers
// outside the attempt (another bot on a shared paper account, an attempt of the same signal
// reclaimed by another executor) are not ordered against these reads in either case, and
// what must be exact is decided where no value read ahead is trusted unchecked: the plan's
// HSETNX, the exchange's placement by client order ID (for paper, a compare-and-set script
// that checks the values read ahead its fill was computed from) and the booking's commit
// script, which checks every book value read ahead against what Redis holds (book.go).
//
// The same argument lets the first leg's sizing reuse the position and the quote balance
// read for planning and with the account (snapshot), instead of reading the same keys again
// (it happens before the plan is stored); run drops the snapshot once a leg has run, so a
// later leg (a reversal's entry) is sized from fresh reads of what the earlier legs left.

// prefetch is a signal's first pipeline; each field decodes one of its reads.
type prefetch struct {
	// err is the pipeline's error when it is not a Redis reply (the connection failed).
	err      error
	result   func() (result.Stored, error)
	bot      func() (registry.Bot, error) // nil: read through Deps.Bots
	pause    func() (*registry.Pause, error)
	progress *redis.MapStringStringCmd
	// account opens the bot's paper account from the read ahead; nil or not ok: Venues.Open.
	account func(registry.Bot) (aheadAccount, error)
	// book is the bot's book state the booking needs, read ahead; members its open
	// positions' symbols.
	book    aheadBook
	members *redis.StringSliceCmd
	// sig is the webhook or watcher signal, parsed once (nil: manual, or malformed: plan
	// parses it again and answers INVALID_JSON).
	sig *signal.Signal
	// followers decodes the bot's followers set (nil: a copy signal, which never fans out).
	followers func() ([]string, error)
	// restored reads the marker of the bot's partition's book (store.BookRestored).
	restored *redis.IntCmd
}

// unrestored says that Redis lost the bot's partition (its book marker is absent).
func (pre *prefetch) unrestored() bool {
	return pre.restored != nil && pre.restored.Err() == nil && pre.restored.Val() == 0
}

// begin sends a signal's first pipeline (see above).
func (e *Executor) begin(ctx context.Context, env queue.Envelope, now time.Time) *prefetch {
	pre := &prefetch{}
	if env.Source != queue.SourceManual && env.Source != queue.SourceCopy {
		var sig signal.Signal
		if json.Unmarshal(env.Signal, &sig) == nil {
			pre.sig = &sig
		}
	}
	h := e.hints.get(env.BotID)
	err := e.co.Pipelined(ctx, func(p redis.Pipeliner) error {
		pre.result = queue.GetResultLater(ctx, p, env.SignalID)
		if e.pipelineBots {
			pre.bot = e.decoded.GetLater(ctx, p, env.BotID)
		}
		pre.pause = e.pauses.ReadPauseLater(ctx, p, env.BotID, now)
		pre.progress = p.HGetAll(ctx, store.SignalProgress(env.BotID, env.SignalID))
		if env.Source != queue.SourceCopy {
			pre.followers = registry.FollowersLater(ctx, p, env.BotID)
		}
		if e.paper != nil && h.account != "" {
			pre.account = e.paper.prefetchPaper(ctx, p, h.account, paperReadsOf(env, pre.sig, h))
		}
		pre.book = prefetchBook(ctx, p, env.BotID, h.symbol, now)
		pre.restored = p.Exists(ctx, store.BookRestored(store.PartitionOf(env.BotID)))
		if s := pre.sig; s != nil && s.Symbol == "" && (s.Action == signal.Close || s.Action == signal.CloseLong || s.Action == signal.CloseShort) {
			pre.members = p.SMembers(ctx, store.BookPositions(env.BotID))
		}
		return nil
	})
	// A reply error (redis.Nil for a missing key included) belongs to its command and is
	// decoded there; any other error failed the round trip.
	if tripFailed(err) {
		pre.err = err
	}
	return pre
}

// tripFailed reports whether a pipeline's error failed the round trip, rather than being
// one command's Redis reply (redis.Nil for a missing key included), which that command's
// decoder reports.
func tripFailed(err error) bool {
	var re redis.Error
	return err != nil && !errors.As(err, &re)
}

// getBot decodes the bot read ahead, or reads it.
func (e *Executor) getBot(ctx context.Context, pre *prefetch, id string) (registry.Bot, error) {
	if pre.bot != nil {
		return pre.bot()
	}
	return e.bots.Get(ctx, id)
}

// open opens the bot's account from the read ahead when it was the right one. An exchange
// account's calls are away from the coalescer (a paper account's fills go through it).
func (e *Executor) open(ctx context.Context, pre *prefetch, bot registry.Bot) (Account, error) {
	if pre.account != nil {
		if a, err := pre.account(bot); a.ok {
			return a.acct, err
		}
	}
	a, err := e.venues.Open(ctx, bot)
	if err == nil && a.Venue != "paper" && a.Exchange != nil {
		a.Exchange = awayExchange{x: a.Exchange, co: e.co}
	}
	return a, err
}

// snapshotOf starts the attempt's snapshot with the quote balance read with the account
// and the reads ahead of the bot's positions (when they are this bot's).
func snapshotOf(pre *prefetch, j *job) *snapshot {
	s := &snapshot{quote: j.acct.quote, positions: map[string]*position.Position{}}
	if j.bot.ID != j.env.BotID {
		return s // read ahead under another ID: not this bot's keys
	}
	if p, ok := j.view.pos[pre.book.sym]; ok {
		s.positions[pre.book.sym] = p.pos
	}
	if pre.members != nil {
		if m, err := pre.members.Result(); err == nil {
			s.members, s.listed = m, true
		}
	}
	return s
}

// aheadBook is the book state a booking needs, read in the first pipeline: the position on
// the hinted symbol, the risk counters and the day's aggregate with their stored texts, so
// that a steady-state booking reads nothing more before its commit script (book.go).
type aheadBook struct {
	sym      string
	date     analytics.Date
	pos      func() (*position.Position, *string, error)
	counters func() (risk.Counters, map[string]string, error)
	day      func() (analytics.Day, *string, bool, error)
}

// prefetchBook queues the reads of aheadBook for bot botID on p: the position when a symbol
// is hinted ("": none), the day of now.
func prefetchBook(ctx context.Context, p redis.Pipeliner, botID, sym string, now time.Time) aheadBook {
	b := aheadBook{sym: sym, date: analytics.DateOf(now)}
	if sym != "" {
		b.pos = position.ReadTextLater(ctx, p, botID, sym)
	}
	b.counters = risk.ReadCountersTextLater(ctx, p, botID)
	b.day = analytics.ReadDayTextLater(ctx, p, botID, b.date)
	return b
}

// viewOf is the job's first view of its book, from the reads ahead (when they were under
// the bot's own ID). A read that failed is left out: the booking reads it again and meets
// the error there.
func viewOf(b aheadBook, j *job) bookView {
	var v bookView
	if j.bot.ID != j.env.BotID || b.counters == nil {
		return v
	}
	if b.pos != nil {
		if p, t, err := b.pos(); err == nil {
			v.setPos(b.sym, viewPos{pos: p, text: t})
		}
	}
	if c, t, err := b.counters(); err == nil {
		v.counters = &viewCounters{c: c, texts: t}
	}
	if d, t, started, err := b.day(); err == nil {
		v.setDay(b.date, viewDay{day: d, text: t})
		v.started = &started
	}
	return v
}

// snapshot is what an attempt read before its first leg ran (see above).
type snapshot struct {
	// quote is the account's quote balance, read with the account (nil: not read).
	quote *exchange.Balance
	// positions by symbol (a nil value: none open).
	positions map[string]*position.Position
	// members are the bot's open-position symbols, when listed.
	members []string
	listed  bool
}

// position is the bot's open position on symbol, or nil (position.Book.Get), from the
// snapshot while there is one.
func (e *Executor) position(ctx context.Context, j *job, symbol string) (*position.Position, error) {
	if j.snap == nil {
		return e.book.Get(ctx, j.bot.ID, symbol)
	}
	p, ok := j.snap.positions[symbol]
	if !ok {
		var err error
		if p, err = e.book.Get(ctx, j.bot.ID, symbol); err != nil {
			return nil, err
		}
		j.snap.positions[symbol] = p
	}
	if p == nil {
		return nil, nil
	}
	cp := *p
	return &cp, nil
}

// openPositions is every open position of the bot, by symbol (position.Book.List), its
// records read in one pipeline, from the snapshot while there is one.
func (e *Executor) openPositions(ctx context.Context, j *job) ([]position.Position, error) {
	s := j.snap
	if s == nil {
		s = &snapshot{positions: map[string]*position.Position{}}
	}
	if err := e.listOpen(ctx, j.bot.ID, s); err != nil {
		return nil, err
	}
	return (&decideIn{book: s}).openPositions()
}

// listOpen reads into s the bot's open-position symbols (unless listed already) and every
// one of their positions it does not hold yet, in one pipeline.
func (e *Executor) listOpen(ctx context.Context, botID string, s *snapshot) error {
	if !s.listed {
		members, err := e.rdb.SMembers(ctx, store.BookPositions(botID)).Result()
		if err != nil {
			return err
		}
		s.members, s.listed = members, true
	}
	var unread []string
	for _, sym := range s.members {
		if _, ok := s.positions[sym]; !ok {
			unread = append(unread, sym)
		}
	}
	if len(unread) == 0 {
		return nil
	}
	reads := make([]func() (*position.Position, error), len(unread))
	_, err := e.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for i, sym := range unread {
			reads[i] = position.ReadLater(ctx, p, botID, sym)
		}
		return nil
	})
	if tripFailed(err) {
		return err
	}
	for i, sym := range unread {
		p, err := reads[i]()
		if err != nil {
			return err
		}
		s.positions[sym] = p
	}
	return nil
}

// refPrice is the price an entry is expected to fill at: the limit price or the market
// (sizing and previews; decide has its own, from the prices in hand).
func (e *Executor) refPrice(ctx context.Context, j *job, m exchange.MarketInfo, limit *httpapi.Number) (decimal.Decimal, error) {
	if limit != nil {
		return limit.Decimal, nil
	}
	return j.acct.Exchange.Ticker(ctx, j.kind, m.Symbol)
}

// quoteBalance is the account's balance of asset (Exchange.Balance), from the snapshot
// while there is one and it holds that asset.
func (e *Executor) quoteBalance(ctx context.Context, j *job, asset string) (exchange.Balance, error) {
	if j.snap != nil && j.snap.quote != nil && j.snap.quote.Asset == asset {
		return *j.snap.quote, nil
	}
	return j.acct.Exchange.Balance(ctx, asset)
}

// hints remember, per bot, the paper account and the symbol of its last signal: they only
// choose what the first pipeline reads ahead. A wrong or missing hint costs a wasted read
// or a round trip more, never a wrong value (the read ahead is used only when the bot turns
// out to trade on that account, or planning asks for that symbol).
type hints struct {
	mu sync.Mutex
	m  map[string]hint
}

type hint struct{ account, symbol string }

// maxHints bounds the hints; past it they start over.
const maxHints = 1 << 16

func (h *hints) get(botID string) hint {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.m[botID]
}

func (h *hints) set(botID string, v hint) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.m[botID] == v {
		return
	}
	if h.m == nil || len(h.m) >= maxHints {
		h.m = make(map[string]hint)
	}
	h.m[botID] = v
}

// catalogue is a venue's market list of one kind, indexed for jobs (read-only once built).
type catalogue struct {
	list    []exchange.MarketInfo
	markets map[string]exchange.MarketInfo
	symbols *signal.Symbols
}

type catalogueKey struct {
	venue string
	kind  exchange.Kind
}

// catalogues keep the last index built per venue and kind.
type catalogues struct {
	mu sync.RWMutex
	m  map[catalogueKey]*catalogue
}

// of indexes markets, reusing the index of the same venue and kind when the list is the
// same (the paper catalogue never changes).
func (c *catalogues) of(venue string, kind exchange.Kind, markets []exchange.MarketInfo) *catalogue {
	key := catalogueKey{venue, kind}
	c.mu.RLock()
	cat := c.m[key]
	c.mu.RUnlock()
	if cat != nil && slices.Equal(cat.list, markets) {
		return cat
	}
	cat = &catalogue{list: slices.Clone(markets), markets: make(map[string]exchange.MarketInfo, len(markets))}
	names := make([]string, 0, len(markets))
	for _, m := range markets {
		cat.markets[m.Symbol] = m
		names = append(names, m.Symbol)
	}
	cat.symbols = signal.NewSymbols(names)
	c.mu.Lock()
	if c.m == nil {
		c.m = map[catalogueKey]*catalogue{}
	}
	c.m[key] = cat
	c.mu.Unlock()
	return cat
}

// sameClient reports whether two clients are the same one.
func sameClient(a, b redis.UniversalClient) bool {
	if a == nil || b == nil || reflect.TypeOf(a) != reflect.TypeOf(b) || !reflect.TypeOf(a).Comparable() {
		return false
	}
	return a == b
}
