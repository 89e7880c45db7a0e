package analytics

import (
	"context"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/httpapi"
)

// Combined is the realised history of several bots together (a user's bots: the
// dashboard's total equity curve), read from their per-day aggregates.
type Combined struct {
	// From and To are the first and last day covered, both included.
	From, To Date
	// Realised is the net PnL of every trade of the bots, Today that of the trades closed on
	// the UTC day of the query's Now.
	Realised, Today decimal.Decimal
	// Trades counts every trade of the bots.
	Trades int
	// nets[i] is the bots' net result on day From+i; after is the net result of days after
	// To (a clock behind a booking's).
	nets  []decimal.Decimal
	after decimal.Decimal
	now   int64 // ms
}

// History is one bot's realised history as its per-day aggregates hold it: each day's
// trade count and net result, oldest first. A caller that computes several figures from
// the same bots (a page with the portfolio's realised PnL and the combined equity curve)
// reads and decodes it once (HistoryLater) and hands it to each: Realised and Combine.
type History struct{ days []netDay }

// netDay is a day of a History.
type netDay struct {
	date   Date
	trades int
	net    decimal.Decimal
}

// HistoryLater queues the reads of the bot's history on c (a pipeline, which may carry the
// caller's other per-bot reads in the same round trip) and returns the decoder to call
// once it has run. It decodes of each day only what Realised and Combine sum, its trade
// count and net result: a user's page decodes every day of every bot. Outside a MULTI a
// booking may land between the history's two reads; the counts then differ and its days
// are built from the trade list on rdb (one more round trip, for that bot): slower, never
// wrong.
func HistoryLater(ctx context.Context, c redis.Cmdable, rdb redis.UniversalClient, botID string) func() (History, error) {
	read := readDaysLater(ctx, c, rdb, botID)
	return func() (History, error) {
		st, err := read()
		if err != nil {
			return History{}, err
		}
		if st.listed {
			return historyOf(fromTrades(st.trades)), nil
		}
		h := History{days: make([]netDay, 0, len(st.fields))}
		err = st.each(func(date Date, field, text string) error {
			trades, net, err := decodeNet(botID, field, text)
			h.days = append(h.days, netDay{date: date, trades: trades, net: net})
			return err
		})
		return h, err
	}
}

// historyOf is the History of full days.
func historyOf(days []dated) History {
	h := History{days: make([]netDay, len(days))}
	for i, d := range days {
		h.days[i] = netDay{date: d.date, trades: d.day.Trades, net: d.day.Net()}
	}
	return h
}

// Realised is the net PnL of every trade of the bot.
func (h History) Realised() decimal.Decimal {
	sum := decimal.Zero
	for _, d := range h.days {
		sum = sum.Add(d.net)
	}
	return sum
}

// Combined reads the histories of botIDs in one pipelined round trip and sums their days
// over q's days (q.AllFrom: from the first trade of any of them).
func (a *Analytics) Combined(ctx context.Context, botIDs []string, q Query) (Combined, error) {
	hs, err := loadMany(ctx, a.rdb, botIDs)
	if err != nil {
		return Combined{}, err
	}
	return Combine(hs, q), nil
}

// RealisedOf is Realised of each of botIDs, in that order, read in one pipelined round trip.
func (a *Analytics) RealisedOf(ctx context.Context, botIDs []string) ([]decimal.Decimal, error) {
	hs, err := loadMany(ctx, a.rdb, botIDs)
	if err != nil {
		return nil, err
	}
	out := make([]decimal.Decimal, len(hs))
	for i, h := range hs {
		out[i] = h.Realised()
	}
	return out, nil
}

// Combine sums the histories' days over q's days (q.AllFrom: from the first trade of any
// of them): the realised history of several bots together.
func Combine(hs []History, q Query) Combined {
	today := DateOf(q.Now)
	if q.AllFrom {
		for _, h := range hs {
			if len(h.days) > 0 {
				q.From = min(q.From, h.days[0].date)
			}
		}
	}
	c := Combined{From: q.From, To: q.To, Realised: decimal.Zero, Today: decimal.Zero, after: decimal.Zero,
		nets: make([]decimal.Decimal, int(q.To-q.From)+1), now: q.Now.UnixMilli()}
	for i := range c.nets {
		c.nets[i] = decimal.Zero
	}
	for _, h := range hs {
		for _, d := range h.days {
			net := d.net
			c.Realised = c.Realised.Add(net)
			c.Trades += d.trades
			if d.date == today {
				c.Today = c.Today.Add(net)
			}
			switch {
			case d.date > q.To:
				c.after = c.after.Add(net)
			case d.date >= q.From:
				c.nets[d.date-q.From] = c.nets[d.date-q.From].Add(net)
			}
		}
	}
	return c
}

// Curve is an equity curve with its drawdowns.
type Curve struct {
	// Points are the equity at the first day's midnight, then one point per day stamped at
	// the day's end (the next UTC midnight; the last day's at Now), each with its drawdown
	// (running peak − equity).
	Points []Point
	// MaxDrawdown is the largest fall from a running peak to a later point (0: none) and
	// MaxDrawdownPercent that fall over the peak it fell from × 100 (0 when the peak is not
	// positive); among equal falls the lowest peak is taken, as in a bot's report.
	MaxDrawdown        decimal.Decimal
	MaxDrawdownPercent float64
	// Drawdown is the current one: the running peak − the last point, and DrawdownPercent
	// it over that peak × 100 (0 when the peak is not positive).
	Drawdown        decimal.Decimal
	DrawdownPercent float64
}

// Curve is the equity curve that ends at equity (the equity now, realised and unrealised):
// each day's point is equity less the net results of the trades closed after that day.
// Only realised results move it between days: deposits, refills and the unrealised PnL of
// past days are not recorded, so the curve is the realised path leading to the equity now.
// Several bots' trades of one day have no common order, so drawdowns are measured between
// the daily points (a bot's own report also counts its intraday peaks).
func (c Combined) Curve(equity decimal.Decimal) Curve {
	level := equity.Sub(c.after)
	for _, n := range c.nets {
		level = level.Sub(n)
	}
	out := Curve{Points: make([]Point, 0, len(c.nets)+1), MaxDrawdown: decimal.Zero, Drawdown: decimal.Zero}
	peak, ddPeak := level, decimal.Zero
	add := func(ts int64, v decimal.Decimal) {
		peak = decimal.Max(peak, v)
		dd := peak.Sub(v)
		if cmp := dd.Cmp(out.MaxDrawdown); cmp > 0 || (cmp == 0 && dd.IsPositive() && peak.LessThan(ddPeak)) {
			out.MaxDrawdown, ddPeak = dd, peak
		}
		out.Points = append(out.Points, Point{Timestamp: ts, Equity: httpapi.Num(v), Drawdown: httpapi.Num(dd)})
	}
	add(c.From.Start().UnixMilli(), level)
	for i, n := range c.nets {
		level = level.Add(n)
		add(min((c.From+Date(i)+1).Start().UnixMilli(), c.now), level)
	}
	out.MaxDrawdownPercent = percentOf(out.MaxDrawdown, ddPeak)
	out.Drawdown = peak.Sub(level)
	out.DrawdownPercent = percentOf(out.Drawdown, peak)
	return out
}

// percentOf is part over whole × 100, 0 when part is 0 or whole is not positive.
func percentOf(part, whole decimal.Decimal) float64 {
	if !part.IsPositive() || !whole.IsPositive() {
		return 0
	}
	return part.Mul(hundred).Div(whole).InexactFloat64()
}
