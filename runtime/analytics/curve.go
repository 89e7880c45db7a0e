package analytics

import (
	"context"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/position"
)

// The equity curve of a report (Report.EquityCurve) has a point per closed trade on the
// days whose trades are still kept, and a point per day on the others (docs/decisions.md,
// "Bot analytics", equity curve):
//   - the equity at the period's start (its first UTC midnight);
//   - for each day of the period, when the day's trades are kept: one point per trade, at
//     its ClosedAt, with the equity after it;
//   - then the day's closing point, at the day's end (the next UTC midnight; the last day's
//     at the report's Now), with the equity after the day.
//
// Each point's drawdown is the running peak (over the points before it and, on a day drawn
// as one point, that day's highest equity) less its equity. A day is drawn per trade only
// when the trades read reproduce the day's aggregate exactly (the same count, wins, sums
// and path, see drawable), so that the curve's largest drawdown is the one the metrics
// report whenever every day of the period is drawn per trade.

// MaxCurveTrades bounds the trades one curve draws: the newest days of the period are
// drawn per trade while their trades add up to at most this many, older days per day. A
// chart has no use for more points, an agent's context none for a longer answer, and
// reading and checking them costs the report about 5 ms per thousand.
const MaxCurveTrades = 1000

// TradeReader reads the trades an equity curve draws: the newest limit of a bot's trades
// closed in [fromMS, toMS) (Unix ms), oldest first, in the order the bot booked them.
// history.Reader is one (the bot's trade list in Redis and PostgreSQL's archive); the
// default reads the trade list alone (position.TradeResultsIn).
type TradeReader interface {
	TradeResultsIn(ctx context.Context, botID string, fromMS, toMS int64, limit int) ([]position.TradeResult, error)
}

// WithTrades makes a's equity curves read their trades with r, and returns a.
func (a *Analytics) WithTrades(r TradeReader) *Analytics {
	a.trades = r
	return a
}

// listTrades reads the trades of a bot's trade list in Redis (the history retention's
// window).
type listTrades struct{ rdb redis.UniversalClient }

func (l listTrades) TradeResultsIn(ctx context.Context, botID string, fromMS, toMS int64, limit int) ([]position.TradeResult, error) {
	return position.TradeResultsIn(ctx, l.rdb, botID, fromMS, toMS, limit)
}

// mark is one trade as the curve draws it: when it closed (ms) and its net result.
type mark struct {
	at  int64
	net decimal.Decimal
}

// readCurveTrades gives the days of h that q's curve can draw per trade (the newest of the
// period, within MaxCurveTrades) the trades tr reads for them (attach): one read, of those
// days' trades alone, and none when they have their trades already (days built from the
// trade list).
func readCurveTrades(ctx context.Context, tr TradeReader, botID string, h *history, q Query) error {
	from, to := q.From, q.To
	if q.AllFrom && len(h.days) > 0 {
		from = min(h.days[0].date, q.To)
	}
	first, n, missing := to+1, 0, false
	for i := len(h.days) - 1; i >= 0; i-- {
		d := h.days[i]
		if d.date > to {
			continue
		}
		if d.date < from || n+d.day.Trades > MaxCurveTrades {
			break
		}
		first, n = d.date, n+d.day.Trades
		missing = missing || d.marks == nil
	}
	if !missing {
		return nil
	}
	trades, err := tr.TradeResultsIn(ctx, botID, first.Start().UnixMilli(), (to + 1).Start().UnixMilli(), n)
	if err != nil {
		return err
	}
	h.attach(trades)
	return nil
}

// attach gives each day of h without marks the trades among trades (oldest first) that
// closed on it, when they are the day's trades exactly (drawable).
func (h *history) attach(trades []position.TradeResult) {
	byDate := map[Date][]mark{}
	for _, t := range trades {
		d := DateOfMS(t.ClosedAt)
		byDate[d] = append(byDate[d], mark{at: t.ClosedAt, net: t.NetPnl.Decimal})
	}
	for i := range h.days {
		d := &h.days[i]
		if ms := byDate[d.date]; d.marks == nil && drawable(d.day, ms) {
			d.marks = ms
		}
	}
}

// drawable reports whether the trades ms, in their order, make the day d: as many trades,
// as many winners and losers, and the same path (the sum, the highest and lowest running
// sums, the largest fall) to the last digit. A day the retention trimmed in part, a trade
// the archive did not answer, or trades read in another order than they were booked
// (whose path may differ) fail, and the day is drawn as one point.
func drawable(d Day, ms []mark) bool {
	if len(ms) != d.Trades || d.Trades == 0 {
		return false
	}
	sum, high, low, dd := decimal.Zero, decimal.Zero, decimal.Zero, decimal.Zero
	wins, losses := 0, 0
	for _, m := range ms {
		switch m.net.Sign() {
		case 1:
			wins++
		case -1:
			losses++
		}
		sum = sum.Add(m.net)
		switch {
		case sum.GreaterThan(high):
			high = sum
		case sum.LessThan(low):
			low = sum
		}
		if fall := high.Sub(sum); fall.GreaterThan(dd) {
			dd = fall
		}
	}
	return wins == d.Wins && losses == d.Losses && sum.Equal(d.Sum) && high.Equal(d.High) && low.Equal(d.Low) && dd.Equal(d.DD)
}

// curveDays are the days of the period [from, to] drawn per trade: the days with marks,
// from the newest back, while their trades add up to at most MaxCurveTrades.
func curveDays(h history, from, to Date) map[Date][]mark {
	out := map[Date][]mark{}
	budget := MaxCurveTrades
	for i := len(h.days) - 1; i >= 0; i-- {
		d := h.days[i]
		if d.date < from {
			break
		}
		if d.date > to || d.marks == nil {
			continue
		}
		if d.day.Trades > budget {
			break
		}
		out[d.date] = d.marks
		budget -= d.day.Trades
	}
	return out
}

// curve builds Report.EquityCurve as report walks the period (see the comment at the top).
type curve struct {
	points []Point
	peak   decimal.Decimal
	last   int64
	now    int64
	marks  map[Date][]mark
}

func newCurve(h history, q Query, equity decimal.Decimal) *curve {
	c := &curve{peak: equity, now: q.Now.UnixMilli(), marks: curveDays(h, q.From, q.To)}
	n := int(q.To-q.From) + 2
	for _, m := range c.marks {
		n += len(m)
	}
	c.points = make([]Point, 0, n)
	c.add(q.From.Start().UnixMilli(), equity)
	return c
}

// add appends the point of equity at ts (kept at or after the previous point's).
func (c *curve) add(ts int64, equity decimal.Decimal) {
	c.peak = decimal.Max(c.peak, equity)
	c.last = max(c.last, ts)
	c.points = append(c.points, pointOf(c.last, equity, c.peak.Sub(equity)))
}

// day draws day d, whose aggregate is day, begun at equity before and ended at after.
func (c *curve) day(d Date, day Day, before, after decimal.Decimal) {
	closing := min((d + 1).Start().UnixMilli(), c.now)
	if marks, ok := c.marks[d]; ok {
		level := before
		for _, m := range marks {
			level = level.Add(m.net)
			c.add(min(m.at, closing), level)
		}
	} else {
		// The day's own highest equity counts towards the peak, though it is not drawn.
		c.peak = decimal.Max(c.peak, before.Add(day.High))
	}
	c.add(closing, after)
}
