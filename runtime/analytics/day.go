package analytics

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/position"
)

// Path is the run of a sequence of trade results (NetPnl, in order) as far as drawdown
// needs it: a monoid, so that per-day values combine into any range of days exactly.
// Prefix sums are relative to the start of the sequence and include the empty prefix (0).
type Path struct {
	// Sum is the total of the results.
	Sum decimal.Decimal `json:"sum"`
	// High and Low are the largest and smallest prefix sums.
	High decimal.Decimal `json:"hi"`
	Low  decimal.Decimal `json:"lo"`
	// DD is the largest fall from a running peak to a later prefix sum (0: none), and Peak
	// the prefix sum it fell from. Among equal falls Peak is the lowest, so that the
	// percentage reported is the largest of them; with no fall Peak is 0.
	DD   decimal.Decimal `json:"dd"`
	Peak decimal.Decimal `json:"pk"`
}

// Step is the path of one result x.
func Step(x decimal.Decimal) Path {
	p := Path{Sum: x}
	if x.IsPositive() {
		p.High = x
	} else {
		p.Low = x
		p.DD = x.Neg()
	}
	return p
}

// Then is a followed by b. The largest fall lies in a, in b (its peak raised by a's sum),
// or runs from a's highest prefix to b's lowest.
func (a Path) Then(b Path) Path {
	out := Path{
		Sum:  a.Sum.Add(b.Sum),
		High: decimal.Max(a.High, a.Sum.Add(b.High)),
		Low:  decimal.Min(a.Low, a.Sum.Add(b.Low)),
		DD:   a.DD,
		Peak: a.Peak,
	}
	out.fall(b.DD, a.Sum.Add(b.Peak))
	out.fall(a.High.Sub(a.Sum.Add(b.Low)), a.High)
	if !out.DD.IsPositive() {
		out.DD, out.Peak = decimal.Zero, decimal.Zero
	}
	return out
}

// fall keeps the fall dd from peak when it is larger, or as large from a lower peak.
func (p *Path) fall(dd, peak decimal.Decimal) {
	switch c := dd.Cmp(p.DD); {
	case c > 0, c == 0 && peak.LessThan(p.Peak):
		p.DD, p.Peak = dd, peak
	}
}

// Day is one UTC day of a bot's trades in aggregate: the value stored per day (store.go)
// and, combined with Then, the aggregate of any run of days.
type Day struct {
	// Trades counts every trade; Wins those with NetPnl > 0, Losses those with NetPnl < 0
	// (a break-even trade is neither).
	Trades int `json:"n"`
	Wins   int `json:"w"`
	Losses int `json:"l"`
	// GrossProfit sums the winners' NetPnl, GrossLoss the losers' (negative or 0).
	GrossProfit decimal.Decimal `json:"gp"`
	GrossLoss   decimal.Decimal `json:"gl"`
	// Fees sums the trades' fees (entry-fee share and exit fee).
	Fees decimal.Decimal `json:"fee"`
	// Path is the day's run of NetPnl; Path.Sum is the day's net result.
	Path
}

// MarshalJSON writes the day compactly, as the array [trades, wins, losses, grossProfit,
// grossLoss, fees, sum, high, low, drawdown, peak] with the decimals as numbers in their
// exact text: a report decodes a day per calendar day with trades, and an array of numbers
// decodes several times faster than an object of decimal strings.
func (d Day) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 96)
	b = append(b, '[')
	b = strconv.AppendInt(b, int64(d.Trades), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(d.Wins), 10)
	b = append(b, ',')
	b = strconv.AppendInt(b, int64(d.Losses), 10)
	for _, v := range d.decimals() {
		b = append(b, ',')
		b = append(b, v.String()...)
	}
	return append(b, ']'), nil
}

// UnmarshalJSON reads what MarshalJSON writes.
func (d *Day) UnmarshalJSON(data []byte) error {
	out, err := parseDay(string(data))
	if err != nil {
		return err
	}
	*d = out
	return nil
}

// parseDay reads a day's stored text. It walks the values in place rather than splitting
// the text: a portfolio or an overview decodes every day of every bot of a user, and the
// slice of parts was a third of the allocations.
func parseDay(s string) (Day, error) {
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return Day{}, errors.New("analytics: a day is a JSON array")
	}
	s = s[1 : len(s)-1]
	var out Day
	ptrs := out.decimalPtrs()
	if n := strings.Count(s, ",") + 1; n != dayValues {
		return Day{}, fmt.Errorf("analytics: a day has %d values, want %d", n, dayValues)
	}
	for i := range dayValues {
		p, rest, _ := strings.Cut(s, ",")
		s = rest
		p = strings.TrimSpace(p)
		if i < 3 {
			n, err := strconv.Atoi(p)
			if err != nil {
				return Day{}, fmt.Errorf("analytics: day value %d: %w", i, err)
			}
			*[3]*int{&out.Trades, &out.Wins, &out.Losses}[i] = n
			continue
		}
		v, err := decimal.NewFromString(p)
		if err != nil {
			return Day{}, fmt.Errorf("analytics: day value %d: %w", i, err)
		}
		*ptrs[i-3] = v
	}
	return out, nil
}

// dayValues is the number of values of a day's text.
const dayValues = 11

// parseDayNet reads of a day's text its trade count and net result (values 0 and 6), what
// summing days needs: one decimal of the eight.
func parseDayNet(s string) (trades int, net decimal.Decimal, err error) {
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' {
		return 0, decimal.Zero, errors.New("analytics: a day is a JSON array")
	}
	s = s[1 : len(s)-1]
	if n := strings.Count(s, ",") + 1; n != dayValues {
		return 0, decimal.Zero, fmt.Errorf("analytics: a day has %d values, want %d", n, dayValues)
	}
	for i := 0; i <= 6; i++ {
		p, rest, _ := strings.Cut(s, ",")
		s = rest
		switch i {
		case 0:
			trades, err = strconv.Atoi(strings.TrimSpace(p))
		case 6:
			net, err = decimal.NewFromString(strings.TrimSpace(p))
		}
		if err != nil {
			return 0, decimal.Zero, fmt.Errorf("analytics: day value %d: %w", i, err)
		}
	}
	return trades, net, nil
}

func (d Day) decimals() [8]decimal.Decimal {
	return [8]decimal.Decimal{d.GrossProfit, d.GrossLoss, d.Fees, d.Sum, d.High, d.Low, d.DD, d.Peak}
}

func (d *Day) decimalPtrs() [8]*decimal.Decimal {
	return [8]*decimal.Decimal{&d.GrossProfit, &d.GrossLoss, &d.Fees, &d.Sum, &d.High, &d.Low, &d.DD, &d.Peak}
}

// Net is the day's net result.
func (d Day) Net() decimal.Decimal { return d.Sum }

// Then is d followed by e.
func (d Day) Then(e Day) Day {
	return Day{
		Trades: d.Trades + e.Trades, Wins: d.Wins + e.Wins, Losses: d.Losses + e.Losses,
		GrossProfit: d.GrossProfit.Add(e.GrossProfit), GrossLoss: d.GrossLoss.Add(e.GrossLoss),
		Fees: d.Fees.Add(e.Fees), Path: d.Path.Then(e.Path),
	}
}

// Add counts trade t after the day's earlier trades.
func (d *Day) Add(t position.Trade) { *d = d.Then(dayOf(t)) }

// dayOf is the day of the one trade t.
func dayOf(t position.Trade) Day {
	d := Day{Trades: 1, Fees: t.Fees.Decimal, Path: Step(t.NetPnl.Decimal)}
	switch t.NetPnl.Sign() {
	case 1:
		d.Wins, d.GrossProfit = 1, t.NetPnl.Decimal
	case -1:
		d.Losses, d.GrossLoss = 1, t.NetPnl.Decimal
	}
	return d
}

// DateLayout is a day's name: its field in the days hash and the API's dates.
const DateLayout = time.DateOnly

// msPerDay is the length of a UTC day (Unix time has no leap seconds).
const msPerDay = 24 * 60 * 60 * 1000

// Date is the UTC day of a time: days since 1970-01-01.
type Date int64

// DateOf is the UTC day of t.
func DateOf(t time.Time) Date { return DateOfMS(t.UnixMilli()) }

// DateOfMS is the UTC day of a Unix time in milliseconds (a trade's ClosedAt).
func DateOfMS(ms int64) Date {
	d := ms / msPerDay
	if ms%msPerDay < 0 {
		d--
	}
	return Date(d)
}

// ParseDate reads YYYY-MM-DD, accepting exactly what time.Parse(DateLayout, s) accepts
// (TestParseDateIsTimeParse). It reads the digits itself: every field name of a bot's days
// hash goes through it on every read of the days, and time.Parse was a tenth of a read.
func ParseDate(s string) (Date, bool) {
	if len(s) != len(DateLayout) || s[4] != '-' || s[7] != '-' {
		return 0, false
	}
	year, ok1 := digits(s[0:4])
	month, ok2 := digits(s[5:7])
	day, ok3 := digits(s[8:10])
	if !ok1 || !ok2 || !ok3 || month < 1 || month > 12 || day < 1 || day > daysIn(month, year) {
		return 0, false
	}
	return civilDate(year, month, day), true
}

// digits is the value of a run of ASCII digits; false when another byte is among them.
func digits(s string) (int, bool) {
	n := 0
	for i := range len(s) {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// daysIn is the number of days of month in year (proleptic Gregorian, as package time).
func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}

// civilDate is the day number of year-month-day (Howard Hinnant's days_from_civil; the
// years here are 0 to 9999, so the era arithmetic never sees a negative year).
func civilDate(year, month, day int) Date {
	if month <= 2 {
		year--
	}
	era := year / 400
	if year < 0 {
		era = (year - 399) / 400
	}
	yoe := year - era*400
	mp := (month + 9) % 12
	doy := (153*mp+2)/5 + day - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return Date(era*146097 + doe - 719468)
}

// Start is the day's first millisecond (UTC midnight).
func (d Date) Start() time.Time { return time.UnixMilli(int64(d) * msPerDay).UTC() }

// String is YYYY-MM-DD.
func (d Date) String() string { return d.Start().Format(DateLayout) }
