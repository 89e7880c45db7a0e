// Package feed reads what notifyd tells users from the streams the runtime already writes:
// each partition's archive stream (a signal's result: a fill, a refusal, an expiry; a
// trade, for an exit's PnL; a bot's pause and resume; a user's fact: approvals) and its
// dead-letter stream. It writes nothing to Redis: its position in each stream is kept in
// PostgreSQL with the deliveries it queued (runtime/notify/outbox), and the archiver trims
// an archive stream no further than that position while notifyd reads.
//
// An event's ID is made from the fact (the signal, or the stream entry), so reading an
// entry again (after a crash, before the position was saved) makes the same event, which
// the outbox queues once.
package feed

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/notify"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/store"
)

// refusals are the result codes of an order refused after it was queued: by the exchange,
// or by the amount rules (the exchange's minimums, the bot's exposure limit), which a
// sender that ignores the webhook's answer (a TradingView alert) would never see.
var refusals = map[errs.Code]bool{errs.ExchangeError: true, errs.InsufficientBalance: true, errs.InvalidAmount: true}

// Decoder turns one archive stream's entries into events. It remembers, per signal, the
// realised PnL of the trades read before the signal's result (a commit appends its trades
// before its result), so a fill that closed a position carries its PnL.
type Decoder struct {
	// pnl is the net PnL of each signal's trades read so far, and first the earliest
	// entry of a signal still waiting for its result.
	pnl   map[string]decimal.Decimal
	first map[string]string
	// latest is the last entry read.
	latest string
}

// pendingFor bounds how long a trade waits for its signal's result: a trade booked with no
// result of its own (a protective order's, say) is let go, so that the saved position
// moves on and the archive stream can be trimmed.
const pendingFor = time.Minute

// NewDecoder is a Decoder with nothing pending.
func NewDecoder() *Decoder {
	return &Decoder{pnl: map[string]decimal.Decimal{}, first: map[string]string{}}
}

// maxPending bounds the signals with trades and no result yet (a result is appended in
// the same script as its last trades, so only an interrupted read leaves any).
const maxPending = 10000

// Archive is the event of one archive stream entry, if it tells anything. An event of a
// bot carries BotID and no User (the router finds the owner); a user's fact carries User.
func (d *Decoder) Archive(msg redis.XMessage) (notify.Event, bool) {
	d.latest = msg.ID
	kind, _ := msg.Values["k"].(string)
	v, _ := msg.Values["v"].(string)
	switch kind {
	case store.ArchiveTrade:
		d.trade(msg.ID, v)
	case store.ArchiveResult:
		var r result.Result
		if json.Unmarshal([]byte(v), &r) != nil {
			return notify.Event{}, false
		}
		return d.result(r)
	case store.ArchivePause, store.ArchiveResume:
		return pauseEvent(msg, kind, v)
	case store.ArchiveUserFact:
		var e notify.Event
		if json.Unmarshal([]byte(v), &e) != nil || !e.Kind.Valid() {
			return notify.Event{}, false
		}
		e.User, _ = msg.Values["u"].(string)
		return e, e.User != "" && e.ID != ""
	}
	return notify.Event{}, false
}

// Pending is the earliest entry ID whose signal's result has not been read yet ("" for
// none): the position saved must stay before it, so that a restart reads its trades again.
func (d *Decoder) Pending() string {
	latest, _, _ := store.SplitStreamID(d.latest)
	min := ""
	for sig, id := range d.first {
		if ms, _, _ := store.SplitStreamID(id); ms < latest-pendingFor.Milliseconds() {
			delete(d.first, sig)
			delete(d.pnl, sig)
			continue
		}
		if min == "" || Before(id, min) {
			min = id
		}
	}
	return min
}

func (d *Decoder) trade(entryID, v string) {
	t, err := position.DecodeTrade(v)
	if err != nil || t.SignalID == "" {
		return
	}
	if _, ok := d.first[t.SignalID]; !ok {
		if len(d.first) >= maxPending {
			return
		}
		d.first[t.SignalID] = entryID
	}
	d.pnl[t.SignalID] = d.pnl[t.SignalID].Add(t.NetPnl.Decimal)
}

func (d *Decoder) result(r result.Result) (notify.Event, bool) {
	pnl, closed := d.pnl[r.SignalID]
	delete(d.pnl, r.SignalID)
	delete(d.first, r.SignalID)
	e := notify.Event{BotID: r.BotID, At: time.UnixMilli(r.Timestamp)}
	if o := r.Order; o != nil {
		e.Symbol, e.Side, e.Amount, e.Price = o.Symbol, o.Side, o.FilledAmount, o.AvgPrice
	}
	switch {
	case r.Success && r.Order != nil && r.Order.FilledAmount.IsPositive():
		e.Kind = notify.Fill
		if closed {
			p := httpapi.Number{Decimal: pnl}
			e.PnL = &p
		}
	case !r.Success && refusals[r.Code]:
		e.Kind, e.Reason = notify.OrderRefused, string(r.Code)
	case !r.Success && r.Code == errs.SignalExpired:
		e.Kind, e.Reason = notify.SignalExpired, string(r.Code)
	default:
		return notify.Event{}, false
	}
	e.ID = string(e.Kind) + ":" + r.SignalID
	return e, r.BotID != "" && r.SignalID != ""
}

// pauseEvent is a pause or resume fact (runtime/registry pause_fact).
func pauseEvent(msg redis.XMessage, kind, v string) (notify.Event, bool) {
	var f struct {
		Reason string `json:"r"`
		Until  string `json:"u"`
		At     string `json:"at"`
	}
	bot, _ := msg.Values["b"].(string)
	if json.Unmarshal([]byte(v), &f) != nil || bot == "" {
		return notify.Event{}, false
	}
	e := notify.Event{BotID: bot, Reason: f.Reason, Kind: notify.BotPaused}
	if kind == store.ArchiveResume {
		e.Kind = notify.BotResumed
	}
	if ms, err := strconv.ParseInt(f.At, 10, 64); err == nil {
		e.At = time.UnixMilli(ms)
	}
	if ms, err := strconv.ParseInt(f.Until, 10, 64); err == nil && ms > 0 {
		e.Expires = time.UnixMilli(ms)
	}
	e.ID = string(e.Kind) + ":" + bot + ":" + msg.ID
	return e, true
}

// DeadLetter is the event of a dead-letter stream entry (runtime/queue DeadLetter).
func DeadLetter(msg redis.XMessage) (notify.Event, bool) {
	str := func(k string) string { s, _ := msg.Values[k].(string); return s }
	sig, bot := str("signalId"), str("botId")
	if sig == "" || bot == "" {
		return notify.Event{}, false
	}
	e := notify.Event{ID: string(notify.SignalDeadLettered) + ":" + sig, Kind: notify.SignalDeadLettered,
		BotID: bot, Reason: strings.ToUpper(str("code"))}
	e.Attempts, _ = strconv.Atoi(str("attempts"))
	if ms, err := strconv.ParseInt(str("at"), 10, 64); err == nil {
		e.At = time.UnixMilli(ms)
	}
	return e, true
}

// Before says whether stream entry ID a comes before b.
func Before(a, b string) bool {
	am, as, _ := store.SplitStreamID(a)
	bm, bs, _ := store.SplitStreamID(b)
	return am < bm || am == bm && as < bs
}
