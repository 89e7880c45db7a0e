package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/bookstate"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/risk"
	"github.com/sigops/sigops/runtime/store"
)

// The commit script: a booking's writes, and when the leg ends the signal its result, in one
// script on the bot's partition slot. Each write is the Lua of the package that owns the key
// (position, analytics, risk, registry, queue); this file only composes them and checks that
// the state they were computed from is still there.
//
// KEYS: 1 the signal's progress record, 2-4 the position with its set and watch index, 5-7
// the order record, the bot's order list and the partition's archive stream, 8-9 the trades
// and the archive stream again, 10 the days, 11 the risk counters, 12 the bot's hash (a
// pause), 13 the partition's book marker (store.BookRestored), and, only when the result is
// stored here, 14-16 the result, the bot's signal index and the archive stream, and, only
// when the queue entry is acknowledged here too, 17 its stream. Every fact the commit writes
// (order record, trade, result) is appended to the archive stream in the same script
// (runtime/archive copies it to PostgreSQL), and so is the bot's book state after it
// (runtime/bookstate), from which a Redis that lost the partition is restored.
//
// ARGV: 1 the done marker's field, 2 its value ("": the result is stored here and the
// progress record is deleted), 3 the progress TTL (s), 4 the plan this attempt made ("": it
// follows a stored one; another plan stored meanwhile wins, and an unstored one is stored
// with a done marker), 5-8 the expected texts of the position, the order record, the day field's name and
// the day ("": not checked; "-": absent; "=" and the text), 9 on those of the risk counter
// fields (risk.CounterFields), then the writes from argPos on, the book state fact at argState.
//
// Replies: {0, acked} written (acked 1: the queue entry was acknowledged too); {1} a checked key changed (nothing written); {2, done} the leg was
// booked already; {3} the signal's result is stored, under its key or in the order record
// (another attempt finished it); {4}
// another attempt stored its plan first; {5} the partition's book is not in Redis (lost:
// it is restored, then read again).
const (
	argCounted = 9
	// counterFields is how many fields the risk counters have.
	counterFields = len(risk.CounterFields)
	argPos        = argCounted + counterFields
	argOrder      = argPos + 4
	argTrade      = argOrder + 3
	argDay        = argTrade + 1
	argRisk       = argDay + 3
	argPause      = argRisk + 2*counterFields
	argState      = argPause + 4
	argResult     = argState + 1
	argAck        = argResult + queue.ResultArgs
	keysResult    = 14
	keysAck       = 17
)

var commitScript = registry.PauseScript(position.OrderStateLua + `
local function same(v, want)
  if want == '' then return true end
  if v then return want == '=' .. v end
  return want == '-'
end
if #KEYS >= 14 then
  if redis.call('EXISTS', KEYS[14]) == 1 then return {3} end
  local rec = redis.call('GET', KEYS[5])
  if rec and select(3, orderState(rec)) then return {3} end
end
local done = redis.call('HGET', KEYS[1], ARGV[1])
if done then return {2, done} end
if redis.call('EXISTS', KEYS[13]) == 0 then return {5} end
if not same(redis.call('GET', KEYS[2]), ARGV[5]) then return {1} end
if not same(redis.call('GET', KEYS[5]), ARGV[6]) then return {1} end
if ARGV[7] ~= '' and not same(redis.call('HGET', KEYS[10], ARGV[7]), ARGV[8]) then return {1} end
for i = 0, ` + fmt.Sprint(counterFields-1) + ` do
  if not same(redis.call('HGET', KEYS[11], ARGV[` + fmt.Sprint(argRisk) + ` + 2 * i]), ARGV[` + fmt.Sprint(argCounted) + ` + i]) then return {1} end
end
if ARGV[4] ~= '' then
  local plan = redis.call('HGET', KEYS[1], '` + fieldPlan + `')
  if plan and plan ~= ARGV[4] then return {4} end
  if not plan and ARGV[2] ~= '' then redis.call('HSET', KEYS[1], '` + fieldPlan + `', ARGV[4]) end
end
` + position.PositionLua(2, argPos) + `
if ARGV[` + fmt.Sprint(argOrder) + `] ~= '' then
` + position.OrderLua(5, argOrder) + `end
` + position.TradeLua(8, argTrade) + analytics.DayLua(10, argDay) + risk.CountersLua(11, argRisk) +
	registry.PauseLua(12, 9, argPause) + store.ArchiveLua(9, store.ArchiveState, argState) + `
if ARGV[2] ~= '' then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
  redis.call('EXPIRE', KEYS[1], ARGV[3])
else
  redis.call('DEL', KEYS[1])
end
if #KEYS >= 14 then
` + queue.ResultLua(keysResult, argResult) + `end
local acked = 0
if #KEYS >= 17 then
` + queue.AckLua(keysAck, argAck) + `end
return {0, acked}
`)

// commitBook runs commitScript for a booking computed from st. ok is false when a key
// changed under it (nothing was written; the caller reads again). On success it learns what
// it wrote into the job's view, and when it stored the signal's result, marks the job
// published.
func (e *Executor) commitBook(ctx context.Context, j *job, in bookIn, st bookRead, w bookWrites) (legDone, bool, error) {
	keys, args, fin, err := e.commitArgs(j, in, st, &w)
	if err != nil {
		return legDone{}, false, err
	}
	ack := ackedWith(ctx, j, fin)
	if ack != nil {
		keys = append(keys, ack.Stream)
		args = append(args, ack.AckArgs()...)
	}
	reply, err := e.co.Script(ctx, commitScript, keys, args...).Slice()
	if err != nil {
		return legDone{}, false, err
	}
	code, _ := reply[0].(int64)
	switch code {
	case 0:
	case 1:
		return legDone{}, false, nil
	case 2:
		var d legDone
		s, _ := reply[1].(string)
		return d, true, json.Unmarshal([]byte(s), &d)
	case 3:
		return legDone{}, false, errFinished
	case 4:
		return legDone{}, false, errPlanLost
	case 5:
		// Redis lost the partition since this booking read it: put it back, read again.
		return legDone{}, false, e.restoreBook(ctx, store.PartitionOf(in.botID))
	default:
		return legDone{}, false, fmt.Errorf("booking %s: unexpected reply %v", in.signalID, reply)
	}
	if acked, _ := reply[1].(int64); acked == 1 && ack != nil {
		ack.Acked()
	}
	if j.unsaved != nil && args[1] != "" {
		j.planSaved()
	}
	if fin != nil {
		j.published = fin
	}
	j.view.learn(in, w)
	if w.pause != nil {
		e.m.pauses.WithLabelValues(w.pause.Reason).Inc()
		e.log.Warn("bot paused by a risk limit", "signalId", in.signalID, "botId", in.botID,
			"reason", w.pause.Reason, "until", w.pause.Until)
	}
	return w.done, true, nil
}

// ackedWith is the queue entry the commit acknowledges with the result it stores, or nil.
// Only a successful result takes the acknowledgement with it: after a failure Handle may
// still count an execution error, which a crash in between would lose once the entry is
// acknowledged. The entry's stream is in the bot's slot (its partition's), as the result is
// when the commit stores it.
func ackedWith(ctx context.Context, j *job, fin *finalResult) *queue.Delivery {
	if fin == nil || !fin.res.Success {
		return nil
	}
	if d := queue.DeliveryOf(ctx); d != nil && d.Partition == store.PartitionOf(j.bot.ID) {
		return d
	}
	return nil
}

// errFinished: the signal's result is stored (another attempt finished it); Handle
// re-publishes it.
var errFinished = errors.New("the signal's result is stored by another attempt")

// commitArgs are commitScript's keys and arguments for a booking; fin is the signal's
// result when this commit stores it. When the leg's order record holds that result
// (keepInRecord), w.rec is the record with it, as the commit writes it.
func (e *Executor) commitArgs(j *job, in bookIn, st bookRead, w *bookWrites) ([]string, []any, *finalResult, error) {
	posW, err := position.NewPositionWrite(in.botID, in.leg.Symbol, w.pos)
	if err != nil {
		return nil, nil, nil, err
	}
	fin, err := e.finish(j, in, *w)
	if err != nil {
		return nil, nil, nil, err
	}
	var recW position.OrderWrite
	kept := false
	if fin != nil {
		var rec *position.OrderRecord
		if rec, recW, kept = keepInRecord(in, w.rec, w.newRec, fin); kept {
			w.rec = rec
			fin.write.KeepInRecord()
		}
	}
	switch {
	case kept:
	case w.rec != nil:
		if recW, err = position.NewOrderWrite(*w.rec, w.newRec); err != nil {
			return nil, nil, nil, err
		}
	default:
		recW = position.OrderWrite{Keys: []string{store.BookOrder(in.botID, in.cid()), store.BookOrders(in.botID), store.ArchiveOf(in.botID)},
			Args: []any{"", "", ""}}
	}
	tradeW, err := position.NewTradeWrite(in.botID, w.trade)
	if err != nil {
		return nil, nil, nil, err
	}
	dayKey, dayArgs, err := analytics.NewDayWrite(in.botID, in.date(), w.day, w.start)
	if err != nil {
		return nil, nil, nil, err
	}
	keys := append([]string{j.sigKey()}, posW.Keys...)
	keys = append(keys, recW.Keys...)
	keys = append(keys, tradeW.Keys...)
	keys = append(keys, dayKey, store.RiskCounters(in.botID), store.Bot(in.botID), store.BookRestored(store.PartitionOf(in.botID)))
	args := make([]any, 0, argResult+queue.ResultArgs)
	args = append(args, prefixDone+in.leg.Name, "", int64(ProgressTTL/time.Second), "", want(st.posText), "", "", "")
	if in.order != nil {
		args[5] = want(st.recText)
	}
	if in.readsDay() {
		args[6], args[7] = in.date().String(), want(st.dayText)
	}
	args[3] = j.planText
	cnt := risk.CountersArgs(w.counters)
	for i := 0; i < len(cnt); i += 2 {
		args = append(args, wantField(st.counterTexts, cnt[i].(string)))
	}
	args = append(args, posW.Args...)
	args = append(args, recW.Args...)
	args = append(args, tradeW.Args...)
	args = append(args, dayArgs...)
	args = append(args, cnt...)
	args = append(args, registry.PauseArgs(in.botID, w.pause, in.now)...)
	state, err := stateOf(j, in, posW, dayArgs, cnt)
	if err != nil {
		return nil, nil, nil, err
	}
	args = append(args, state)
	if fin != nil {
		keys = append(keys, fin.write.Keys...)
		args = append(args, fin.write.Args...)
		return keys, args, fin, nil
	}
	data, err := json.Marshal(w.done)
	if err != nil {
		return nil, nil, nil, err
	}
	args[1] = string(data)
	return keys, args, nil, nil
}

// stateOf is the bot's book state after the commit (bookstate.Fact), from the texts the
// commit writes: the position, the day and starting equity (analytics.NewDayWrite's
// arguments: date, day, start), the risk counters, and the paper account it trades on.
func stateOf(j *job, in bookIn, posW position.Write, dayArgs, cnt []any) (string, error) {
	f := bookstate.Fact{Bot: in.botID, Symbol: in.leg.Symbol, Position: posW.Args[0].(string),
		Date: dayArgs[0].(string), Day: dayArgs[1].(string), Start: dayArgs[2].(string), Risk: make([]string, len(cnt))}
	if j.bot.Account.Kind == registry.AccountPaper {
		f.Account = j.bot.Account.ID
	}
	for i, v := range cnt {
		f.Risk[i] = v.(string)
	}
	return f.Encode()
}

// wantField is want of a hash field as read with the whole hash.
func wantField(fields map[string]string, name string) string {
	if v, ok := fields[name]; ok {
		return "=" + v
	}
	return "-"
}

// finalResult is the signal's result stored by the commit of its last leg.
type finalResult struct {
	res   result.Result
	write queue.ResultWrite
}

// finish is the signal's result when the commit of this leg stores it: the leg ends the
// signal (the plan's last leg, or a risk pause halts the rest) and the result may be stored
// with the booking (foldsResult).
func (e *Executor) finish(j *job, in bookIn, w bookWrites) (*finalResult, error) {
	if !j.foldsResult() || (in.leg.Name != j.lastLeg && w.done.Halt == "") {
		return nil, nil
	}
	res := j.resultWith(w.done, e.now())
	rw, err := queue.NewResultWrite(j.env, res)
	if err != nil {
		return nil, err
	}
	return &finalResult{res: res, write: rw}, nil
}

// keepInRecord is rec holding the signal's result fin (position.Outcome) and its write
// (isNew: the record is listed too), when the record can hold the result instead of a key of
// the result's own; false when it cannot. It can when rec is the order of the signal's main
// leg (its key is then found from the signal ID alone, store.BookOrderIn), finished (a
// record that changes no more, so the result read from it stays the one stored), lives at
// least as long as a result, and the result read back from the record as written is exactly
// fin's, field for field (a message or a field that would not survive the record's form
// keeps its own key). This saves the result's key, about half of what a filled signal leaves
// in Redis.
func keepInRecord(in bookIn, rec *position.OrderRecord, isNew bool, fin *finalResult) (*position.OrderRecord, position.OrderWrite, bool) {
	res := fin.res
	if rec == nil || in.leg.Name != "" || !rec.Status.Terminal() || !res.Success || res.Order == nil ||
		position.RecordTTL() < queue.ResultTTL() {
		return nil, position.OrderWrite{}, false
	}
	kept := *rec
	kept.Outcome = &position.Outcome{Message: res.Message, At: res.Timestamp, OrderAt: res.Order.Timestamp}
	w, err := position.NewOrderWrite(kept, isNew)
	if err != nil {
		return nil, position.OrderWrite{}, false
	}
	back, err := position.DecodeOrder(w.Args[0].(string))
	if err != nil {
		return nil, position.OrderWrite{}, false
	}
	got, ok := back.KeptResult()
	if !ok {
		return nil, position.OrderWrite{}, false
	}
	if a, err := json.Marshal(got); err != nil || string(a) != string(fin.write.Args[0].([]byte)) {
		return nil, position.OrderWrite{}, false
	}
	return &kept, w, true
}

// foldsResult says whether the signal's result is stored by its last booking. It is not
// when the result's key is in another slot than the bot's book (a signal ID from before
// SignalIDFor, or a hand-made one), nor when something must happen between the last booking
// and the result: the fill's copies to the bot's followers, a copy signal's record on the
// follower (Handle). Those results are published after, as their own step.
func (j *job) foldsResult() bool {
	return j.env.BotID == j.bot.ID && len(j.followers) == 0 && j.env.Source != queue.SourceCopy &&
		store.SignalPartition(j.env.SignalID) == store.PartitionOf(j.bot.ID)
}

// learn records in the view what a commit wrote: the keys now hold exactly these texts.
func (v *bookView) learn(in bookIn, w bookWrites) {
	posW, err := position.NewPositionWrite(in.botID, in.leg.Symbol, w.pos)
	if err != nil {
		*v = bookView{}
		return
	}
	var t text
	if s := posW.Args[0].(string); s != "" {
		t = &s
	}
	v.setPos(in.leg.Symbol, viewPos{pos: w.pos, text: t})
	cnt := risk.CountersArgs(w.counters)
	texts := make(map[string]string, len(cnt)/2)
	for i := 0; i < len(cnt); i += 2 {
		texts[cnt[i].(string)] = cnt[i+1].(string)
	}
	v.counters = &viewCounters{c: w.counters, texts: texts}
	// Records and days are re-read when a later leg needs them (a different order, or a
	// second trade the same day): cheaper to forget than to encode again.
	delete(v.recs, in.cid())
	delete(v.days, in.date())
	if w.start != nil {
		started := true
		v.started = &started
	}
}
