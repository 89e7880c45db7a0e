package analytics

import (
	"encoding/json"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
)

// lowest is the curve's point of least equity and its largest drawdown.
func lowest(curve []Point) (low Point, maxDD decimal.Decimal) {
	low, maxDD = curve[0], decimal.Zero
	for _, p := range curve {
		if p.Equity.LessThan(low.Equity.Decimal) {
			low = p
		}
		maxDD = decimal.Max(maxDD, p.Drawdown.Decimal)
	}
	return low, maxDD
}

// Three trades today, the middle one a big loss: the curve shows the dip, and its lowest
// point is the drawdown the metrics report, to the last decimal.
func TestCurveShowsTheDipOfADay(t *testing.T) {
	h := hist("1000",
		tr("120.125", "1", at(24, 8, 0)),
		tr("-400.0625", "1", at(24, 9, 30)),
		tr("250.5", "1", at(24, 11, 0)))
	r := compute(testBot, h, query(t, "today", "", ""))
	checkCurve(t, r.EquityCurve, []point{
		{at(24, 0, 0), "1000", "0"},
		{at(24, 8, 0), "1120.125", "0"},
		{at(24, 9, 30), "720.0625", "400.0625"},
		{at(24, 11, 0), "970.5625", "149.5625"},
		{reportNow, "970.5625", "149.5625"},
	})
	low, maxDD := lowest(r.EquityCurve)
	testkit.EqualD(t, "metrics' maxDrawdown", r.Metrics.MaxDrawdown.Decimal, "400.0625")
	if !maxDD.Equal(r.Metrics.MaxDrawdown.Decimal) || !low.Drawdown.Equal(r.Metrics.MaxDrawdown.Decimal) {
		t.Fatalf("curve: lowest %+v, largest drawdown %s; metrics %s", low, maxDD, r.Metrics.MaxDrawdown)
	}
	// The percentage is that fall over the peak it fell from: 400.0625 / 1120.125.
	want, _ := decimal.RequireFromString("40006.25").Div(decimal.RequireFromString("1120.125")).Float64()
	if r.Metrics.MaxDrawdownPercent != want {
		t.Fatalf("maxDrawdownPercent %v, want %v", r.Metrics.MaxDrawdownPercent, want)
	}
	// As one point a day (the trades no longer kept) the dip is hidden: the day's close is
	// 149.5625 below its intraday peak, not 400.0625.
	h.days[0].marks = nil
	r = compute(testBot, h, query(t, "today", "", ""))
	checkCurve(t, r.EquityCurve, []point{{at(24, 0, 0), "1000", "0"}, {reportNow, "970.5625", "149.5625"}})
}

// Random histories drawn per trade: the curve's largest drawdown is the metrics' exactly,
// whatever the period.
func TestCurveDrawdownIsTheMetrics(t *testing.T) {
	for seed := range uint64(200) {
		rng := rand.New(rand.NewPCG(seed, 11))
		var trades []position.Trade
		ms := at(1, 0, 0).UnixMilli()
		for range rng.IntN(60) {
			ms += rng.Int64N(msPerDay)
			net := decimal.New(rng.Int64N(20_000)-10_000, -int32(rng.IntN(5)))
			trades = append(trades, position.Trade{NetPnl: httpapi.Num(net), ClosedAt: min(ms, reportNow.UnixMilli())})
		}
		for _, period := range []string{"all", "7d", "30d", "today"} {
			r := compute(testBot, hist("5000", trades...), query(t, period, "", ""))
			if _, dd := lowest(r.EquityCurve); !dd.Equal(r.Metrics.MaxDrawdown.Decimal) {
				t.Fatalf("seed %d %s: curve's drawdown %s, metrics' %s", seed, period, dd, r.Metrics.MaxDrawdown)
			}
			for i := 1; i < len(r.EquityCurve); i++ {
				if r.EquityCurve[i].Timestamp < r.EquityCurve[i-1].Timestamp {
					t.Fatalf("seed %d %s: point %d goes back in time", seed, period, i)
				}
			}
		}
	}
}

// A day is drawn per trade only when the trades read are exactly its trades.
func TestAttachChecksTheDay(t *testing.T) {
	list := []position.Trade{tr("10", "0", at(23, 9, 0)), tr("-30", "0", at(23, 10, 0)), tr("5", "0", at(23, 11, 0)),
		tr("7", "0", at(24, 9, 0))}
	results := func(ts ...position.Trade) []position.TradeResult {
		out := make([]position.TradeResult, len(ts))
		for i, t := range ts {
			out[i] = position.TradeResult{NetPnl: httpapi.Num(t.NetPnl.Decimal), ClosedAt: t.ClosedAt}
		}
		return out
	}
	for _, c := range []struct {
		name     string
		read     []position.TradeResult
		d23, d24 bool
	}{
		{"every trade", results(list...), true, true},
		{"the 23rd trimmed in part", results(list[1:]...), false, true},
		{"the 23rd in another order", results(list[1], list[0], list[2], list[3]), false, true},
		{"a trade of the 23rd changed", append(results(list[:2]...), position.TradeResult{NetPnl: httpapi.Num(testkit.D("5.01")), ClosedAt: list[2].ClosedAt}, results(list[3])[0]), false, true},
		{"nothing", nil, false, false},
	} {
		h := hist("1000", list...)
		for i := range h.days {
			h.days[i].marks = nil
		}
		h.attach(c.read)
		if (h.days[0].marks != nil) != c.d23 || (h.days[1].marks != nil) != c.d24 {
			t.Errorf("%s: 23rd drawn %v, 24th %v; want %v, %v", c.name, h.days[0].marks != nil, h.days[1].marks != nil, c.d23, c.d24)
		}
	}
	// Equal paths in another order are drawable: the curve falls as far either way.
	h := hist("1000", tr("1", "0", at(24, 1, 0)), tr("1", "0", at(24, 2, 0)))
	h.days[0].marks = nil
	h.attach(results(tr("1", "0", at(24, 2, 0)), tr("1", "0", at(24, 1, 0))))
	if h.days[0].marks == nil {
		t.Error("the same results in another order are refused")
	}
}

// The newest days are drawn per trade while their trades fit MaxCurveTrades; older days
// get a point each.
func TestCurveTradeBudget(t *testing.T) {
	var trades []position.Trade
	// 22nd: 600 trades; 23rd: 300; 24th: 200. 200 + 300 fit, 600 more do not.
	for _, d := range []struct{ day, n int }{{22, 600}, {23, 300}, {24, 200}} {
		for i := range d.n {
			trades = append(trades, tr("1", "0", at(d.day, 0, 0).Add(time.Duration(i+1)*time.Second)))
		}
	}
	r := compute(testBot, hist("1000", trades...), query(t, "7d", "", ""))
	// 7 days' closing points, the starting point, and 500 trades.
	if len(r.EquityCurve) != 7+1+500 {
		t.Fatalf("%d points, want 508", len(r.EquityCurve))
	}
	// The 22nd is one point at its end, after its 600 trades.
	for _, p := range r.EquityCurve {
		if p.Timestamp > at(22, 0, 0).UnixMilli() && p.Timestamp < at(23, 0, 0).UnixMilli() {
			t.Fatalf("a point inside the 22nd: %+v", p)
		}
	}
	data, _ := json.Marshal(r.EquityCurve[len(r.EquityCurve)-1])
	if string(data) != `{"timestamp":`+strconv.FormatInt(reportNow.UnixMilli(), 10)+`,"equity":2100,"drawdown":0}` {
		t.Fatalf("last point %s", data)
	}
}
