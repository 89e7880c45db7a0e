package executor

import (
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/risk"
	"github.com/sigops/sigops/runtime/signal"
)

// applyNow is the booking time of every row: 2026-11-21 12:00 UTC.
var applyNow = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

var btc = exchange.MarketInfo{Symbol: "BTC/USDT", Base: "BTC", Quote: "USDT",
	TickSize: testkit.D("0.01"), StepSize: testkit.D("0.00001")}

// fill is an order the exchange reports filled at once: amount at price, fee in feeAsset
// ("" is the quote currency).
func fill(cid string, side exchange.Side, amount, price, fee, feeAsset string) *exchange.Order {
	return &exchange.Order{ID: "X-" + cid, ClientOrderID: cid, Symbol: btc.Symbol, Side: side, Type: exchange.Market,
		Status: exchange.StatusFilled, Amount: testkit.D(amount), FilledAmount: testkit.D(amount),
		AvgPrice: testkit.D(price), Fee: testkit.D(fee), FeeAsset: feeAsset}
}

// held is an open position as the book stores it.
func held(kind exchange.Kind, side position.Side, lev int, size, cost, margin, fees string) *position.Position {
	return &position.Position{ID: "pos-held", BotID: "bot", Symbol: btc.Symbol, Kind: kind, Side: side,
		Size: httpapi.Num(testkit.D(size)), Cost: httpapi.Num(testkit.D(cost)), Margin: httpapi.Num(testkit.D(margin)), Leverage: lev,
		EntryFees: httpapi.Num(testkit.D(fees)), DCALevel: 1, OpenedBy: "sig-0", CreatedAt: 1, UpdatedAt: 1}
}

// wantPos is the position after a step; stop and take are exit prices, "" for none.
type wantPos struct {
	side                            position.Side
	size, cost, margin, fees, entry string
	leverage, dca                   int
	stop, take                      string
}

// wantTrade is the realised trade of a step.
type wantTrade struct {
	size, entry, exit, pnl, fees, net string
	closed                            bool
}

// wantDay is the day's aggregate a trade's booking writes.
type wantDay struct {
	trades, wins, losses             int
	profit, loss, fees               string
	sum, high, low, drawdown, peakAt string
}

type applyStep struct {
	leg   leg
	order *exchange.Order
	// free is the balance the leg was sized from ("": not sized in this attempt); start
	// the starting equity the booking records ("": none).
	free, start string
	day         *wantDay // the trade's day after the booking; nil: no trade
	// what the booking must write
	msg    string
	pos    *wantPos   // nil: none open
	trade  *wantTrade // nil: none
	dayPnl string
	losses int
	halt   string // the risk pause's message, "" for none
	status exchange.OrderStatus
	err    errs.Code // the booking is refused
}

func TestApplyLeg(t *testing.T) {
	lossLimit := risk.Limits{DailyLossLimit: testkit.D("100")}
	pct := func(v string) *signal.Amount { return &signal.Amount{Value: httpapi.Num(testkit.D(v)), Percent: true} }
	abs := func(v string) *signal.Amount { return &signal.Amount{Value: httpapi.Num(testkit.D(v))} }
	for _, tc := range []struct {
		name     string
		kind     exchange.Kind
		limits   risk.Limits
		pos      *position.Position
		counters risk.Counters
		day      analytics.Day // the stored aggregate of the booking's day
		steps    []applyStep
	}{{
		name: "spot buy opens", kind: exchange.Spot,
		counters: risk.Counters{ConsecutiveErrors: 2},
		steps: []applyStep{{
			leg: leg{Op: opOpen, Symbol: btc.Symbol, Side: position.Long, StopLoss: pct("2"), TakeProfit: abs("70000")},
			// fee 0.01 × 65000 × 0.001 = 0.65 USDT
			order: fill("c1", exchange.SideBuy, "0.01", "65000", "0.65", "USDT"),
			msg:   "opened long 0.01 BTC/USDT at 65000",
			// cost 0.01 × 65000 = 650; spot margin is the cost; stop 65000 × (1 − 0.02) = 63700
			pos:    &wantPos{side: position.Long, size: "0.01", cost: "650", margin: "650", fees: "0.65", entry: "65000", leverage: 1, dca: 1, stop: "63700", take: "70000"},
			dayPnl: "0", status: exchange.StatusFilled,
		}},
	}, {
		name: "spot sell closes the holding", kind: exchange.Spot,
		pos:      held(exchange.Spot, position.Long, 1, "0.01", "650", "650", "0.65"),
		counters: risk.Counters{Day: "2026-11-21", DayPnl: testkit.D("-5"), ConsecutiveLosses: 2},
		steps: []applyStep{{
			leg: leg{Name: "close:BTC/USDT", Op: opReduce, Symbol: btc.Symbol, Side: position.Long, Reason: "signal"},
			// fee 0.01 × 66000 × 0.001 = 0.66
			order: fill("c2", exchange.SideSell, "0.01", "66000", "0.66", ""),
			// gross 0.01 × 66000 − 650 = 10; net 10 − 0.66 exit fee − 0.65 entry fee = 8.69
			msg:   "closed long 0.01 BTC/USDT at 66000, net PnL 8.69",
			trade: &wantTrade{size: "0.01", entry: "65000", exit: "66000", pnl: "10", fees: "1.31", net: "8.69", closed: true},
			// day −5 + 8.69 = 3.69; a win ends the run of losses
			dayPnl: "3.69", losses: 0, status: exchange.StatusFilled,
			// the day's first trade alone: n 1, w 1, profit 8.69, path sum = high = 8.69
			day: &wantDay{trades: 1, wins: 1, profit: "8.69", loss: "0", fees: "1.31", sum: "8.69", high: "8.69", low: "0", drawdown: "0", peakAt: "0"},
		}},
	}, {
		name: "futures long opens at 10x", kind: exchange.Futures,
		steps: []applyStep{{
			leg: leg{Op: opOpen, Symbol: btc.Symbol, Side: position.Long, Leverage: 10, DCALevel: 1},
			// fee 0.1 × 60000 × 0.001 = 6
			order: fill("c3", exchange.SideBuy, "0.1", "60000", "6", "USDT"),
			msg:   "opened long 0.1 BTC/USDT at 60000",
			// cost 0.1 × 60000 = 6000; margin 6000 / 10 = 600
			pos:    &wantPos{side: position.Long, size: "0.1", cost: "6000", margin: "600", fees: "6", entry: "60000", leverage: 10, dca: 1},
			dayPnl: "0", status: exchange.StatusFilled,
		}},
	}, {
		name: "futures short closed at a loss pauses the bot", kind: exchange.Futures, limits: lossLimit,
		pos:      held(exchange.Futures, position.Short, 5, "0.1", "6000", "1200", "6"),
		counters: risk.Counters{Day: "2026-11-20", DayPnl: testkit.D("-90"), ConsecutiveLosses: 1},
		steps: []applyStep{{
			leg: leg{Name: "close:BTC/USDT", Op: opReduce, Symbol: btc.Symbol, Side: position.Short, Reason: "signal"},
			// bought back: fee 0.1 × 61000 × 0.001 = 6.1
			order: fill("c4", exchange.SideBuy, "0.1", "61000", "6.1", "USDT"),
			// gross 6000 − 0.1 × 61000 = −100; net −100 − 6.1 − 6 = −112.1
			msg:   "closed short 0.1 BTC/USDT at 61000, net PnL -112.1",
			trade: &wantTrade{size: "0.1", entry: "60000", exit: "61000", pnl: "-100", fees: "12.1", net: "-112.1", closed: true},
			// yesterday's −90 does not count: today −112.1, past the limit of 100
			dayPnl: "-112.1", losses: 2, halt: "bot paused (Risk) until 2026-11-22T00:00:00Z: loss limit reached",
			status: exchange.StatusFilled,
			// one loss: the path falls from 0 to −112.1
			day: &wantDay{trades: 1, losses: 1, profit: "0", loss: "-112.1", fees: "12.1", sum: "-112.1", high: "0", low: "-112.1", drawdown: "112.1", peakAt: "0"},
		}},
	}, {
		name: "partial take-profit of a futures long", kind: exchange.Futures,
		pos: func() *position.Position {
			// 0.04 at an average 61500 (cost 2460), 10x: margin 246
			p := held(exchange.Futures, position.Long, 10, "0.04", "2460", "246", "2.46")
			p.StopLoss = &position.Exit{Price: httpapi.Num(testkit.D("60000")), ClosePercent: httpapi.Num(testkit.D("100"))}
			p.TakeProfit = &position.Exit{Price: httpapi.Num(testkit.D("63000")), ClosePercent: httpapi.Num(testkit.D("25"))}
			return p
		}(),
		steps: []applyStep{{
			leg: leg{Name: "close:BTC/USDT", Op: opReduce, Symbol: btc.Symbol, Side: position.Long,
				Reason: TriggerTakeProfit, PositionID: "pos-held", ClearExit: TriggerTakeProfit},
			// a quarter: fee 0.01 × 63000 × 0.001 = 0.63
			order: fill("c5", exchange.SideSell, "0.01", "63000", "0.63", "USDT"),
			// cost share 2460 × 0.01 / 0.04 = 615, gross 630 − 615 = 15; entry fee share
			// 2.46 / 4 = 0.615; net 15 − 0.63 − 0.615 = 13.755
			msg:   "reduced long 0.01 BTC/USDT at 63000, net PnL 13.755",
			trade: &wantTrade{size: "0.01", entry: "61500", exit: "63000", pnl: "15", fees: "1.245", net: "13.755"},
			// the rest: 0.03, cost 1845, margin 246 − 61.5 = 184.5, fees 1.845; the fired
			// take-profit is gone, the stop-loss stays
			pos:    &wantPos{side: position.Long, size: "0.03", cost: "1845", margin: "184.5", fees: "1.845", entry: "61500", leverage: 10, dca: 1, stop: "60000"},
			dayPnl: "13.755", status: exchange.StatusFilled,
			// a partial close is a trade of its own
			day: &wantDay{trades: 1, wins: 1, profit: "13.755", loss: "0", fees: "1.245", sum: "13.755", high: "13.755", low: "0", drawdown: "0", peakAt: "0"},
		}},
	}, {
		name: "reversal closes the short and opens a long", kind: exchange.Futures,
		pos: held(exchange.Futures, position.Short, 10, "0.1", "6000", "600", "6"),
		steps: []applyStep{{
			leg: leg{Name: "reverse", Op: opReduce, Symbol: btc.Symbol, Side: position.Short, Reason: "reversal"},
			// fee 0.1 × 59000 × 0.001 = 5.9
			order: fill("c6r", exchange.SideBuy, "0.1", "59000", "5.9", "USDT"),
			// gross 6000 − 5900 = 100; net 100 − 5.9 − 6 = 88.1
			msg:    "closed short 0.1 BTC/USDT at 59000, net PnL 88.1",
			trade:  &wantTrade{size: "0.1", entry: "60000", exit: "59000", pnl: "100", fees: "11.9", net: "88.1", closed: true},
			dayPnl: "88.1", status: exchange.StatusFilled,
			day: &wantDay{trades: 1, wins: 1, profit: "88.1", loss: "0", fees: "11.9", sum: "88.1", high: "88.1", low: "0", drawdown: "0", peakAt: "0"},
		}, {
			// sized from the balance after the close: the starting equity only if none is
			// recorded (HSETNX at commit)
			leg:   leg{Op: opOpen, Symbol: btc.Symbol, Side: position.Long, Leverage: 10},
			order: fill("c6", exchange.SideBuy, "0.1", "59000", "5.9", "USDT"),
			free:  "10088.1", start: "10088.1",
			msg: "opened long 0.1 BTC/USDT at 59000",
			// cost 5900, margin 5900 / 10 = 590
			pos:    &wantPos{side: position.Long, size: "0.1", cost: "5900", margin: "590", fees: "5.9", entry: "59000", leverage: 10, dca: 1},
			dayPnl: "88.1", status: exchange.StatusFilled,
		}},
	}, {
		name: "DCA add re-averages the entry and moves the percentage stop", kind: exchange.Futures,
		pos: func() *position.Position {
			p := held(exchange.Futures, position.Long, 10, "0.01", "600", "60", "0.6")
			// 2 % below the entry of 60000
			p.StopLoss = &position.Exit{Price: httpapi.Num(testkit.D("58800")), Percent: httpapi.Num(testkit.D("2")), ClosePercent: httpapi.Num(testkit.D("100"))}
			return p
		}(),
		steps: []applyStep{{
			leg: leg{Op: opAdd, Symbol: btc.Symbol, Side: position.Long, Leverage: 10, DCALevel: 2},
			// fee 0.03 × 62000 × 0.001 = 1.86
			order: fill("c7", exchange.SideBuy, "0.03", "62000", "1.86", "USDT"),
			// size 0.01 + 0.03 = 0.04; cost 600 + 1860 = 2460; entry 2460 / 0.04 = 61500;
			// margin 60 + 1860 / 10 = 246; fees 0.6 + 1.86 = 2.46; stop 61500 × 0.98 = 60270
			msg:    "DCA level 2: added 0.03 to long BTC/USDT at 62000; entry now 61500, size 0.04",
			pos:    &wantPos{side: position.Long, size: "0.04", cost: "2460", margin: "246", fees: "2.46", entry: "61500", leverage: 10, dca: 2, stop: "60270"},
			dayPnl: "0", status: exchange.StatusFilled,
		}},
	}, {
		name: "a sized entry records the starting equity", kind: exchange.Spot,
		steps: []applyStep{{
			leg:   leg{Op: opOpen, Symbol: btc.Symbol, Side: position.Long},
			order: fill("c12", exchange.SideBuy, "0.01", "65000", "0.65", "USDT"),
			free:  "10000", start: "10000",
			msg:    "opened long 0.01 BTC/USDT at 65000",
			pos:    &wantPos{side: position.Long, size: "0.01", cost: "650", margin: "650", fees: "0.65", entry: "65000", leverage: 1, dca: 1},
			dayPnl: "0", status: exchange.StatusFilled,
		}},
	}, {
		name: "a second losing trade of the day extends its aggregate", kind: exchange.Futures,
		pos: held(exchange.Futures, position.Long, 10, "0.1", "6000", "600", "6"),
		// earlier today: one win of +20 (fees 2), then one loss of −50 (fees 3): prefix
		// sums 0, 20, −30; high 20, low −30, fall 20 − (−30) = 50 from 20
		day: analytics.Day{Trades: 2, Wins: 1, Losses: 1, GrossProfit: testkit.D("20"), GrossLoss: testkit.D("-50"),
			Fees: testkit.D("5"), Path: analytics.Path{Sum: testkit.D("-30"), High: testkit.D("20"), Low: testkit.D("-30"),
				DD: testkit.D("50"), Peak: testkit.D("20")}},
		steps: []applyStep{{
			leg: leg{Name: "close:BTC/USDT", Op: opReduce, Symbol: btc.Symbol, Side: position.Long, Reason: "signal"},
			// fee 0.1 × 59500 × 0.001 = 5.95
			order: fill("c13", exchange.SideSell, "0.1", "59500", "5.95", "USDT"),
			// gross 5950 − 6000 = −50; net −50 − 5.95 − 6 = −61.95
			msg:    "closed long 0.1 BTC/USDT at 59500, net PnL -61.95",
			trade:  &wantTrade{size: "0.1", entry: "60000", exit: "59500", pnl: "-50", fees: "11.95", net: "-61.95", closed: true},
			dayPnl: "-61.95", losses: 1, status: exchange.StatusFilled,
			// n 3, w 1, l 2; loss −50 − 61.95 = −111.95; fees 5 + 11.95 = 16.95; sum −30 −
			// 61.95 = −91.95 = low; high stays 20; fall 20 − (−91.95) = 111.95 from 20
			day: &wantDay{trades: 3, wins: 1, losses: 2, profit: "20", loss: "-111.95", fees: "16.95",
				sum: "-91.95", high: "20", low: "-91.95", drawdown: "111.95", peakAt: "20"},
		}},
	}, {
		name: "spot buy whose fee is taken in the base coin", kind: exchange.Spot,
		steps: []applyStep{{
			leg: leg{Op: opOpen, Symbol: btc.Symbol, Side: position.Long},
			// 0.1 % of 0.01 BTC = 0.00001 BTC kept by the exchange
			order: fill("c8", exchange.SideBuy, "0.01", "65000", "0.00001", "BTC"),
			// held 0.01 − 0.00001 = 0.00999, cost 0.00999 × 65000 = 649.35; the fee in quote
			// is 0.00001 × 65000 = 0.65
			msg:    "opened long 0.00999 BTC/USDT at 65000",
			pos:    &wantPos{side: position.Long, size: "0.00999", cost: "649.35", margin: "649.35", fees: "0.65", entry: "65000", leverage: 1, dca: 1},
			dayPnl: "0", status: exchange.StatusFilled,
		}},
	}, {
		name: "an order not filled yet moves nothing but its record", kind: exchange.Spot,
		steps: []applyStep{{
			leg: leg{Op: opOpen, Symbol: btc.Symbol, Side: position.Long},
			order: func() *exchange.Order {
				o := fill("c9", exchange.SideBuy, "0.01", "65000", "0", "")
				o.Status, o.FilledAmount = exchange.StatusOpen, decimal.Zero
				return o
			}(),
			msg: "order c9 is open", dayPnl: "0", status: exchange.StatusOpen,
		}},
	}, {
		name: "an entry against the open side is refused", kind: exchange.Futures,
		pos: held(exchange.Futures, position.Short, 10, "0.1", "6000", "600", "6"),
		steps: []applyStep{{
			leg:   leg{Op: opAdd, Symbol: btc.Symbol, Side: position.Long},
			order: fill("c10", exchange.SideBuy, "0.1", "60000", "6", ""),
			err:   errs.InternalError,
		}},
	}, {
		name: "a filled exit without its position is refused", kind: exchange.Futures,
		steps: []applyStep{{
			leg:   leg{Op: opReduce, Symbol: btc.Symbol, Side: position.Long},
			order: fill("c11", exchange.SideSell, "0.1", "60000", "6", ""),
			err:   errs.InternalError,
		}},
	}, {
		name: "protect sets the stop-loss", kind: exchange.Futures,
		pos: held(exchange.Futures, position.Long, 10, "0.1", "6000", "600", "6"),
		steps: []applyStep{{
			leg: leg{Op: opProtect, Symbol: btc.Symbol, Side: position.Long, PositionID: "pos-held",
				StopLoss: abs("57000.009"), ClosePercent: httpapi.Num(testkit.D("50"))},
			// rounded down to the tick of 0.01
			msg:    "stop-loss of the long BTC/USDT position set at 57000 (closes 50%)",
			pos:    &wantPos{side: position.Long, size: "0.1", cost: "6000", margin: "600", fees: "6", entry: "60000", leverage: 10, dca: 1, stop: "57000"},
			dayPnl: "0",
		}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			st := bookState{pos: tc.pos, counters: tc.counters, day: tc.day}
			for i, s := range tc.steps {
				in := bookIn{leg: s.leg, signalID: "sig-1", botID: "bot", kind: tc.kind, market: btc,
					limits: tc.limits, order: s.order, now: applyNow}
				if s.free != "" {
					in.free = testkit.DP(s.free)
				}
				if s.order != nil {
					in.req = &exchange.OrderRequest{ClientOrderID: s.order.ClientOrderID, Symbol: btc.Symbol, Kind: tc.kind,
						Side: s.order.Side, Type: s.order.Type, Amount: s.order.Amount, Leverage: max(s.leg.Leverage, 1)}
				}
				read := func() string { return jsonOf([]any{st.pos, st.counters, st.rec, st.day}) }
				before := read()
				w, err := applyLeg(in, st)
				if after := read(); after != before {
					t.Fatalf("step %d changed the state read:\n%s\nbecame\n%s", i, before, after)
				}
				if s.err != "" {
					if errs.CodeOf(err) != s.err {
						t.Fatalf("step %d: error %v, want %s", i, err, s.err)
					}
					return
				}
				if err != nil {
					t.Fatalf("step %d: %v", i, err)
				}
				checkWrites(t, i, s, w)
				st = bookState{pos: w.pos, counters: w.counters, day: st.day}
				if w.day != nil {
					st.day = *w.day
				}
			}
		})
	}
}

func checkWrites(t *testing.T, step int, s applyStep, w bookWrites) {
	t.Helper()
	eq := func(what string, got decimal.Decimal, want string) {
		t.Helper()
		if !got.Equal(testkit.D(want)) {
			t.Errorf("step %d: %s = %s, want %s", step, what, got, want)
		}
	}
	exit := func(what string, got *position.Exit, want string) {
		t.Helper()
		switch {
		case got == nil && want != "":
			t.Errorf("step %d: no %s, want %s", step, what, want)
		case got != nil && want == "":
			t.Errorf("step %d: %s at %s, want none", step, what, got.Price)
		case got != nil:
			eq(what, got.Price.Decimal, want)
		}
	}
	if w.done.Message != s.msg {
		t.Errorf("step %d: message %q, want %q", step, w.done.Message, s.msg)
	}
	if w.done.Halt != s.halt || (w.pause != nil) != (s.halt != "") {
		t.Errorf("step %d: halt %q (pause %+v), want %q", step, w.done.Halt, w.pause, s.halt)
	}
	if w.pause != nil && (w.pause.Reason != registry.PauseRisk || !w.pause.Until.Equal(time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC))) {
		t.Errorf("step %d: pause %+v, want Risk until the next UTC day", step, *w.pause)
	}
	if p, want := w.pos, s.pos; (p == nil) != (want == nil) {
		t.Errorf("step %d: position %+v, want %+v", step, p, want)
	} else if p != nil {
		if p.Side != want.side || p.Leverage != want.leverage || p.DCALevel != want.dca {
			t.Errorf("step %d: %s ×%d level %d, want %s ×%d level %d", step, p.Side, p.Leverage, p.DCALevel, want.side, want.leverage, want.dca)
		}
		eq("size", p.Size.Decimal, want.size)
		eq("cost", p.Cost.Decimal, want.cost)
		eq("margin", p.Margin.Decimal, want.margin)
		eq("entry fees", p.EntryFees.Decimal, want.fees)
		eq("entry price", p.EntryPrice(), want.entry)
		exit("stop-loss", p.StopLoss, want.stop)
		exit("take-profit", p.TakeProfit, want.take)
	}
	if tr, want := w.trade, s.trade; (tr == nil) != (want == nil) {
		t.Errorf("step %d: trade %+v, want %+v", step, tr, want)
	} else if tr != nil {
		eq("trade size", tr.Size.Decimal, want.size)
		eq("trade entry", tr.EntryPrice.Decimal, want.entry)
		eq("trade exit", tr.ExitPrice.Decimal, want.exit)
		eq("trade pnl", tr.Pnl.Decimal, want.pnl)
		eq("trade fees", tr.Fees.Decimal, want.fees)
		eq("trade net", tr.NetPnl.Decimal, want.net)
		if tr.Closed != want.closed || tr.Reason != s.leg.Reason || tr.ID != s.order.ClientOrderID {
			t.Errorf("step %d: trade %+v", step, *tr)
		}
	}
	eq("day PnL", w.counters.DayPnl, s.dayPnl)
	switch {
	case (w.start == nil) != (s.start == ""):
		t.Errorf("step %d: starting equity %v, want %q", step, w.start, s.start)
	case w.start != nil:
		eq("starting equity", *w.start, s.start)
	}
	if d, want := w.day, s.day; (d == nil) != (want == nil) {
		t.Errorf("step %d: day %+v, want %+v", step, d, want)
	} else if d != nil {
		if d.Trades != want.trades || d.Wins != want.wins || d.Losses != want.losses {
			t.Errorf("step %d: day counts %d/%d/%d, want %d/%d/%d", step, d.Trades, d.Wins, d.Losses, want.trades, want.wins, want.losses)
		}
		eq("day profit", d.GrossProfit, want.profit)
		eq("day loss", d.GrossLoss, want.loss)
		eq("day fees", d.Fees, want.fees)
		eq("day sum", d.Sum, want.sum)
		eq("day high", d.High, want.high)
		eq("day low", d.Low, want.low)
		eq("day drawdown", d.DD, want.drawdown)
		eq("day drawdown peak", d.Peak, want.peakAt)
	}
	if w.counters.ConsecutiveLosses != s.losses || w.counters.ConsecutiveErrors != 0 {
		t.Errorf("step %d: counters %+v, want %d losses and the errors reset", step, w.counters, s.losses)
	}
	if s.order == nil {
		if w.rec != nil || w.done.Order != nil {
			t.Errorf("step %d: a leg without an order wrote a record %+v", step, w.rec)
		}
		return
	}
	if w.rec == nil || !w.newRec || w.rec.Status != s.status || w.done.Order == nil || w.done.Order.OrderID != s.order.ID || w.done.Order.Status != string(s.order.Status) {
		t.Fatalf("step %d: record %+v (new %v), want a new one %s", step, w.rec, w.newRec, s.status)
	}
	if s.status == exchange.StatusFilled && (!w.rec.FilledAmount.Equal(s.order.FilledAmount) || !w.rec.AvgPrice.Equal(s.order.AvgPrice)) {
		t.Errorf("step %d: record %+v does not hold the fill", step, *w.rec)
	}
}

// A stored pending record is moved on, not replaced: it keeps what staging wrote.
func TestApplyLegMovesTheStoredRecord(t *testing.T) {
	o := fill("c1", exchange.SideBuy, "0.01", "65000", "0.65", "USDT")
	req := exchange.OrderRequest{ClientOrderID: "c1", Symbol: btc.Symbol, Kind: exchange.Spot, Side: exchange.SideBuy,
		Type: exchange.Market, Amount: testkit.D("0.01"), Leverage: 1}
	stored := position.PendingOrder(req, "sig-1", "bot", "", applyNow.Add(-time.Second).UnixMilli())
	in := bookIn{leg: leg{Op: opOpen, Symbol: btc.Symbol, Side: position.Long}, signalID: "sig-1", botID: "bot",
		kind: exchange.Spot, market: btc, req: &req, order: o, now: applyNow}
	w, err := applyLeg(in, bookState{rec: &stored})
	if err != nil {
		t.Fatal(err)
	}
	if w.newRec || w.rec.CreatedAt != stored.CreatedAt || w.rec.UpdatedAt != applyNow.UnixMilli() ||
		w.rec.Status != exchange.StatusFilled || w.rec.OrderID != "X-c1" || stored.Status != exchange.StatusPending {
		t.Fatalf("record %+v (new %v); stored %+v", *w.rec, w.newRec, stored)
	}
}

func TestFeeInQuote(t *testing.T) {
	o := exchange.Order{Fee: testkit.D("0.00001538"), AvgPrice: testkit.D("65000")}
	for asset, want := range map[string]string{"": "0.00001538", "USDT": "0.00001538", "BTC": "0.9997", "BNB": "0"} {
		o.FeeAsset = asset
		if got := feeInQuote(o, btc); !got.Equal(testkit.D(want)) {
			t.Errorf("fee in %q = %s, want %s", asset, got, want)
		}
	}
}
