package analytics

import (
	"time"

	"github.com/sigops/sigops/runtime/errs"
)

// Period is a choice of the period parameter.
type Period struct {
	Value string `json:"value"`
	Label string `json:"label"`
}

// The periods, by value. Every period ends today (UTC) and starts at a UTC midnight.
const (
	PeriodToday  = "today" // today
	PeriodWeek   = "week"  // since Monday of the current ISO week
	PeriodMonth  = "month" // since the 1st of the current month
	Period7d     = "7d"    // today and the 6 days before
	Period30d    = "30d"   // today and the 29 days before
	Period90d    = "90d"   // today and the 89 days before
	PeriodYTD    = "ytd"   // since 1 January of the current year
	PeriodAll    = "all"   // since the bot's first trade
	PeriodCustom = "custom"
	// DefaultPeriod is the period of a request that names none.
	DefaultPeriod = Period30d
)

var periods = []Period{
	{PeriodToday, "Today"},
	{PeriodWeek, "This week"},
	{PeriodMonth, "This month"},
	{Period7d, "Last 7 days"},
	{Period30d, "Last 30 days"},
	{Period90d, "Last 90 days"},
	{PeriodYTD, "Year to date"},
	{PeriodAll, "All time"},
}

// Periods lists the period parameter's values with their labels, in display order.
func Periods() []Period { return append([]Period(nil), periods...) }

// Query is what a report covers: the days From to To, both included, and whether it
// carries the equity curve.
type Query struct {
	// Period is the period's value (PeriodCustom for dates), Label its label.
	Period string
	Label  string
	// From and To are the first and last day. For PeriodAll From is the bot's first
	// trade day, known only once its history is read (AllFrom is true).
	From, To Date
	AllFrom  bool
	// Equity asks for the equity curve.
	Equity bool
	// Now is the time the report is made at; To is never later than its day.
	Now time.Time
}

// ParseQuery reads the query parameters of a report made at now:
//   - period: one of Periods (default 30d);
//   - startDate and endDate: a custom range of UTC days, YYYY-MM-DD, both included.
//     startDate alone runs through today; endDate needs startDate; startDate may not be
//     after endDate or after today; an endDate after today stops at today. Dates together
//     with period are refused: the request would be ambiguous;
//   - includeEquity: true, false, 1 or 0 (default false).
//
// A bad parameter is INVALID_PARAMETER naming it.
func ParseQuery(period, startDate, endDate, includeEquity string, now time.Time) (Query, error) {
	now = now.UTC()
	today := DateOf(now)
	q := Query{Now: now, To: today}
	switch includeEquity {
	case "", "false", "0":
	case "true", "1":
		q.Equity = true
	default:
		return Query{}, errs.New(errs.InvalidParameter, "includeEquity must be true, false, 1 or 0")
	}
	if startDate != "" || endDate != "" {
		if period != "" {
			return Query{}, errs.New(errs.InvalidParameter, "period cannot be combined with startDate or endDate")
		}
		return q.custom(startDate, endDate, today)
	}
	if period == "" {
		period = DefaultPeriod
	}
	q.Period = period
	y, _, d := now.Date()
	switch period {
	case PeriodToday:
		q.From = today
	case PeriodWeek:
		// Monday is the first day of an ISO week; time.Weekday counts from Sunday.
		q.From = today - Date((int(now.Weekday())+6)%7)
	case PeriodMonth:
		q.From = today - Date(d-1)
	case Period7d:
		q.From = today - 6
	case Period30d:
		q.From = today - 29
	case Period90d:
		q.From = today - 89
	case PeriodYTD:
		q.From = DateOf(time.Date(y, time.January, 1, 0, 0, 0, 0, time.UTC))
	case PeriodAll:
		q.From, q.AllFrom = today, true
	default:
		return Query{}, errs.New(errs.InvalidParameter,
			"period must be one of today, week, month, 7d, 30d, 90d, ytd, all")
	}
	for _, p := range periods {
		if p.Value == period {
			q.Label = p.Label
		}
	}
	return q, nil
}

// custom is a query of the range startDate..endDate.
func (q Query) custom(startDate, endDate string, today Date) (Query, error) {
	if startDate == "" {
		return Query{}, errs.New(errs.InvalidParameter, "endDate needs a startDate")
	}
	from, ok := ParseDate(startDate)
	if !ok {
		return Query{}, errs.New(errs.InvalidParameter, "startDate must be a date YYYY-MM-DD")
	}
	to := today
	if endDate != "" {
		if to, ok = ParseDate(endDate); !ok {
			return Query{}, errs.New(errs.InvalidParameter, "endDate must be a date YYYY-MM-DD")
		}
	}
	switch {
	case from > to:
		return Query{}, errs.New(errs.InvalidParameter, "startDate must not be after endDate")
	case from > today:
		return Query{}, errs.New(errs.InvalidParameter, "startDate must not be after today (UTC)")
	}
	q.Period, q.From, q.To = PeriodCustom, from, min(to, today)
	q.Label = from.String() + " to " + q.To.String()
	return q, nil
}
