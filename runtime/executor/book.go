package executor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/risk"
	"github.com/sigops/sigops/runtime/store"
)

// maxTxRetries bounds optimistic-transaction retries of a booking.
const maxTxRetries = 20

// legDone is a booked leg, stored under the signal so that a retry rebuilds its result.
type legDone struct {
	Message string          `json:"message"`
	Order   *exchange.Order `json:"order,omitempty"`
	// Halt says why the remaining legs were not run (a risk pause this leg triggered).
	Halt string `json:"halt,omitempty"`
	// Copy is the fill as the master's followers copy it (nil: nothing filled).
	Copy *CopyRequest `json:"copy,omitempty"`
}

// bookLeg books one leg in one transaction guarded by the leg's done marker: the order
// record's status, the position, the trade and its day's aggregate, the starting equity
// of a first entry, the risk counters (and a risk pause they trigger). A leg already booked
// returns its stored outcome.
//
// The transaction is three steps: readBook (what the booking needs, watched), applyLeg (the
// booking itself, without Redis: apply.go) and commitBook (its writes, MULTI/EXEC). A
// concurrent change of a watched key aborts the commit and the three run again.
func (e *Executor) bookLeg(ctx context.Context, j *job, l leg, req *exchange.OrderRequest, o *exchange.Order) (legDone, error) {
	in := bookIn{leg: l, signalID: j.env.SignalID, botID: j.bot.ID, kind: j.kind, market: j.markets[l.Symbol],
		limits: j.limits, req: req, order: o, now: e.now()}
	if v, ok := j.free[l.Name]; ok {
		in.free = &v
	}
	if s := j.progress[prefixEquity+l.Name]; s != "" {
		v, err := decimal.NewFromString(s)
		if err != nil {
			return legDone{}, fmt.Errorf("signal %s: leg %q: corrupt equity %q", in.signalID, l.Name, s)
		}
		in.equity = &v
	}
	keys := []string{j.sigKey(), store.BookPosition(in.botID, l.Symbol), store.RiskCounters(in.botID)}
	if req != nil {
		keys = append(keys, store.BookOrder(in.botID, req.ClientOrderID))
	}
	if in.readsDay() {
		keys = append(keys, store.BookDays(in.botID))
	}
	// On a plain client the WATCH goes out with the reads, in their round trip, instead of
	// in one of its own (Client.Watch without keys sends none): Redis runs the pipeline in
	// order on the transaction's connection, so the keys are watched before they are read,
	// exactly as with a separate WATCH, and EXEC still fails if any of them changed since.
	// Tx.Close releases only a watch set through Tx.Watch, so txf releases this one itself
	// (UNWATCH) when it returns without EXEC having run, before the connection goes back to
	// the pool.
	// A single-server client and a Sentinel failover client are both a *redis.Client; a
	// Cluster client needs WATCH's keys to pick the node, so it gets them in Watch.
	_, watchInPipeline := e.rdb.(*redis.Client)
	watchKeys, readWatch := keys, []string(nil)
	if watchInPipeline {
		watchKeys, readWatch = nil, keys
	}
	var w bookWrites
	txf := func(tx *redis.Tx) error {
		w = bookWrites{}
		watching := watchInPipeline
		defer func() {
			if watching {
				_ = tx.Unwatch(ctx).Err()
			}
		}()
		st, err := readBook(ctx, tx, in, j.sigKey(), readWatch)
		if err != nil {
			return err
		}
		if st.booked != nil {
			w.done = *st.booked
			return nil
		}
		if w, err = applyLeg(in, st); err != nil {
			return err
		}
		err = commitBook(ctx, tx, in, j.sigKey(), w)
		if err == nil || errors.Is(err, redis.TxFailedErr) {
			watching = false // EXEC ran: committed or aborted, it released the watch
		}
		return err
	}
	for i := 0; i < maxTxRetries; i++ {
		err := e.rdb.Watch(ctx, txf, watchKeys...)
		if errors.Is(err, redis.TxFailedErr) {
			continue
		}
		if err != nil {
			return legDone{}, err
		}
		if w.pause != nil {
			e.m.pauses.WithLabelValues(w.pause.Reason).Inc()
			e.log.Warn("bot paused by a risk limit", "signalId", in.signalID, "botId", in.botID,
				"reason", w.pause.Reason, "until", w.pause.Until)
		}
		return w.done, nil
	}
	return legDone{}, fmt.Errorf("booking %s: too much contention", in.signalID)
}

// readBook reads, in one round trip on tx, the leg's done marker (under sigKey) and the
// state its booking needs; the WATCH of watch, when given, goes first in that round trip.
func readBook(ctx context.Context, tx *redis.Tx, in bookIn, sigKey string, watch []string) (bookState, error) {
	var watchCmd *redis.Cmd
	var doneCmd *redis.StringCmd
	var readPos func() (*position.Position, error)
	var readCnt func() (risk.Counters, error)
	readRec := func() (*position.OrderRecord, error) { return nil, nil }
	readDay := func() (analytics.Day, error) { return analytics.Day{}, nil }
	_, err := tx.Pipelined(ctx, func(p redis.Pipeliner) error {
		if len(watch) > 0 {
			args := make([]any, 0, 1+len(watch))
			args = append(args, "watch")
			for _, k := range watch {
				args = append(args, k)
			}
			watchCmd = p.Do(ctx, args...)
		}
		doneCmd = p.HGet(ctx, sigKey, prefixDone+in.leg.Name)
		readPos = position.ReadLater(ctx, p, in.botID, in.leg.Symbol)
		readCnt = risk.ReadCountersLater(ctx, p, in.botID)
		if in.order != nil {
			readRec = position.ReadOrderLater(ctx, p, in.botID, in.req.ClientOrderID)
		}
		if in.readsDay() {
			readDay = analytics.ReadDayLater(ctx, p, in.botID, in.date())
		}
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return bookState{}, err
	}
	if watchCmd != nil && watchCmd.Err() != nil {
		return bookState{}, watchCmd.Err()
	}
	if s, err := doneCmd.Result(); err == nil {
		var done legDone
		if err := json.Unmarshal([]byte(s), &done); err != nil {
			return bookState{}, err
		}
		return bookState{booked: &done}, nil
	} else if !errors.Is(err, redis.Nil) {
		return bookState{}, err
	}
	var st bookState
	var posErr, cntErr, recErr, dayErr error
	st.pos, posErr = readPos()
	st.counters, cntErr = readCnt()
	st.rec, recErr = readRec()
	st.day, dayErr = readDay()
	return st, errors.Join(posErr, cntErr, recErr, dayErr)
}

// readsDay says whether the leg may book a trade, whose day's aggregate the booking then
// reads (and watches: the aggregate is read, changed and written back).
func (in bookIn) readsDay() bool { return in.leg.Op == opReduce && in.order != nil }

// commitBook makes a booking's writes in one MULTI/EXEC on tx, the leg's done marker (under
// sigKey) with them.
func commitBook(ctx context.Context, tx *redis.Tx, in bookIn, sigKey string, w bookWrites) error {
	data, err := json.Marshal(w.done)
	if err != nil {
		return err
	}
	_, err = tx.TxPipelined(ctx, func(p redis.Pipeliner) error {
		if err := position.StagePosition(ctx, p, in.botID, in.leg.Symbol, w.pos); err != nil {
			return err
		}
		if w.rec != nil {
			if err := position.StageOrder(ctx, p, *w.rec, w.newRec); err != nil {
				return err
			}
		}
		if w.trade != nil {
			if err := position.StageTrade(ctx, p, *w.trade); err != nil {
				return err
			}
		}
		if w.day != nil {
			if err := analytics.StageDay(ctx, p, in.botID, in.date(), *w.day); err != nil {
				return err
			}
		}
		if w.start != nil {
			analytics.StageStart(ctx, p, in.botID, *w.start)
		}
		risk.StageCounters(ctx, p, in.botID, w.counters)
		if w.pause != nil {
			registry.StagePause(ctx, p, in.botID, *w.pause, in.now)
		}
		p.HSet(ctx, sigKey, prefixDone+in.leg.Name, data)
		p.Expire(ctx, sigKey, ProgressTTL)
		return nil
	})
	return err
}
