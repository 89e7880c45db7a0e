package analytics

import (
	"math"

	"github.com/shopspring/decimal"
)

// FixedTrade is what the report needs of one trade, its money as integers at a scale
// (value × 10^scale): the backtester's integer ledger hands its trades over in this form.
type FixedTrade struct {
	ClosedAt int64 // ms
	NetPnl   int64
	Fees     int64
}

// ReportOfFixed is ReportOf for trades (in the order of their ClosedAt) whose money is
// integer at scale decimal places: the UTC days are aggregated in int64, with the Day and
// Path arithmetic in integers, then handed to the same report as ReportOf's. Integer sums,
// maxima and comparisons are exact, so the report is ReportOf's to the last digit. ok is
// false when a sum would overflow int64 or the trades are not in ClosedAt order; the caller
// then uses ReportOf.
func ReportOfFixed(hdr Header, trades []FixedTrade, scale int32, startingEquity *decimal.Decimal, q Query) (Report, bool) {
	var days []dated
	var cur fixedDay
	var marks []mark
	var date Date
	ok := true
	flush := func() {
		if cur.trades > 0 {
			days = append(days, dated{date: date, day: cur.day(scale), marks: marks})
		}
	}
	for i, t := range trades {
		d := DateOfMS(t.ClosedAt)
		if i > 0 && d != date {
			if d < date {
				return Report{}, false
			}
			flush()
			cur, marks = fixedDay{}, nil
		}
		date = d
		cur.add(t, &ok)
		if q.Equity {
			marks = append(marks, mark{at: t.ClosedAt, net: decimal.New(t.NetPnl, -scale)})
		}
		if !ok {
			return Report{}, false
		}
	}
	flush()
	return report(hdr, history{days: days, start: startingEquity}, q), true
}

// fixedDay is Day in integers (the same fields, the same definitions).
type fixedDay struct {
	trades, wins, losses     int
	grossProfit, grossLoss   int64
	fees                     int64
	sum, high, low, dd, peak int64
}

// add counts t after the day's earlier trades: Day.Add.
func (d *fixedDay) add(t FixedTrade, ok *bool) {
	x := t.NetPnl
	d.trades++
	switch {
	case x > 0:
		d.wins++
		d.grossProfit = addOK(d.grossProfit, x, ok)
	case x < 0:
		d.losses++
		d.grossLoss = addOK(d.grossLoss, x, ok)
	}
	d.fees = addOK(d.fees, t.Fees, ok)
	// Path.Then of the day so far with Step(x): Step(x) has Sum x, High max(x, 0),
	// Low min(x, 0), DD max(-x, 0) from Peak 0.
	if x == math.MinInt64 {
		*ok = false
		return
	}
	bHigh, bLow, bDD := max(x, 0), min(x, 0), max(-x, 0)
	sum := addOK(d.sum, x, ok)
	high := max(d.high, addOK(d.sum, bHigh, ok))
	lowB := addOK(d.sum, bLow, ok)
	low := min(d.low, lowB)
	dd, peak := d.dd, d.peak
	fall := func(f, p int64) {
		if f > dd || (f == dd && p < peak) {
			dd, peak = f, p
		}
	}
	fall(bDD, d.sum)
	fall(subOK(d.high, lowB, ok), d.high)
	if dd <= 0 {
		dd, peak = 0, 0
	}
	d.sum, d.high, d.low, d.dd, d.peak = sum, high, low, dd, peak
}

// day is d as a Day.
func (d fixedDay) day(scale int32) Day {
	n := func(v int64) decimal.Decimal { return decimal.New(v, -scale) }
	return Day{Trades: d.trades, Wins: d.wins, Losses: d.losses, GrossProfit: n(d.grossProfit), GrossLoss: n(d.grossLoss),
		Fees: n(d.fees), Path: Path{Sum: n(d.sum), High: n(d.high), Low: n(d.low), DD: n(d.dd), Peak: n(d.peak)}}
}

// addOK is a + b; ok becomes false when that overflows.
func addOK(a, b int64, ok *bool) int64 {
	s := a + b
	if (s > a) != (b > 0) {
		*ok = false
	}
	return s
}

// subOK is a - b; ok becomes false when that overflows.
func subOK(a, b int64, ok *bool) int64 {
	s := a - b
	if (s < a) != (b > 0) {
		*ok = false
	}
	return s
}
