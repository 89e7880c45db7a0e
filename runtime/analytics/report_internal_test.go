package analytics

import (
	"math"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/registry"
)

// reportNow is when every report here is made: Tuesday 2026-11-24 12:00 UTC.
var reportNow = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

var testBot = registry.Bot{ID: "bot-1", Name: "grid", Symbol: "BTC/USDT"}

// at is a UTC time on November 2026.
func at(day, hour, minute int) time.Time {
	return time.Date(2026, 11, day, hour, minute, 0, 0, time.UTC)
}

// tr is a trade of net result net and fees closed at t.
func tr(net, fees string, t time.Time) position.Trade {
	n := testkit.D(net)
	f := testkit.D(fees)
	return position.Trade{NetPnl: httpapi.Num(n), Fees: httpapi.Num(f), Pnl: httpapi.Num(n.Add(f)), ClosedAt: t.UnixMilli()}
}

// hist is the history of trades with starting equity start ("": unknown).
func hist(start string, trades ...position.Trade) history {
	h := history{days: fromTrades(trades)}
	if start != "" {
		h.start = testkit.DP(start)
	}
	return h
}

func query(t *testing.T, period, startDate, endDate string) Query {
	t.Helper()
	q, err := ParseQuery(period, startDate, endDate, "true", reportNow)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// want is a report's metrics; floats are checked to 1e-9.
type want struct {
	trades, wins, losses            int
	winRate, pnlPct, pf, ddPct, shp float64
	pnl, avgWin, avgLoss, dd        string
	fmtPnl, fmtWin, fmtPF, fmtDD    string
}

func check(t *testing.T, r Report, w want) {
	t.Helper()
	m := r.Metrics
	if m.TotalTrades != w.trades || m.WinningTrades != w.wins || m.LosingTrades != w.losses {
		t.Errorf("trades %d, wins %d, losses %d; want %d, %d, %d", m.TotalTrades, m.WinningTrades, m.LosingTrades, w.trades, w.wins, w.losses)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %.12f, want %.12f", what, got, want)
		}
	}
	near("winRate", m.WinRate, w.winRate)
	near("totalPnLPercent", m.TotalPnLPercent, w.pnlPct)
	near("profitFactor", m.ProfitFactor, w.pf)
	near("maxDrawdownPercent", m.MaxDrawdownPercent, w.ddPct)
	near("sharpeRatio", m.SharpeRatio, w.shp)
	testkit.EqualD(t, "totalPnL", m.TotalPnL.Decimal, w.pnl)
	testkit.EqualD(t, "avgWin", m.AvgWin.Decimal, w.avgWin)
	testkit.EqualD(t, "avgLoss", m.AvgLoss.Decimal, w.avgLoss)
	testkit.EqualD(t, "maxDrawdown", m.MaxDrawdown.Decimal, w.dd)
	f := r.Formatted
	if f.TotalPnL != w.fmtPnl || f.WinRate != w.fmtWin || f.ProfitFactor != w.fmtPF || f.MaxDrawdown != w.fmtDD {
		t.Errorf("formatted %+v, want {%s %s %s %s}", f, w.fmtPnl, w.fmtWin, w.fmtPF, w.fmtDD)
	}
}

// point is an equity curve point: day end (or now), equity, drawdown.
type point struct {
	ts             time.Time
	equity, drawdn string
}

func checkCurve(t *testing.T, got []Point, want []point) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d curve points, want %d: %+v", len(got), len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if g.Timestamp != w.ts.UnixMilli() || !g.Equity.Equal(testkit.D(w.equity)) || !g.Drawdown.Equal(testkit.D(w.drawdn)) {
			t.Errorf("point %d = %d %s %s, want %d (%s) %s %s", i, g.Timestamp, g.Equity, g.Drawdown,
				w.ts.UnixMilli(), w.ts.Format(time.RFC3339), w.equity, w.drawdn)
		}
	}
}

func TestNoTrades(t *testing.T) {
	r := compute(testBot, hist("1000"), query(t, "7d", "", ""))
	// Everything zero; nothing to divide by is 0, never NaN.
	check(t, r, want{pnl: "0", avgWin: "0", avgLoss: "0", dd: "0",
		fmtPnl: "0.00 USDT", fmtWin: "0.0%", fmtPF: "0.00", fmtDD: "0.00 USDT (0.0%)"})
	if r.Period != "Last 7 days" || r.StartDate != "2026-11-18" || r.EndDate != "2026-11-24" || r.BotName != "grid" || r.Symbol != "BTC/USDT" {
		t.Errorf("report %+v", r)
	}
	// The starting point and one point per day, 18 to 24 November: flat at 1000. Today's
	// point is stamped now.
	var pts []point
	pts = append(pts, point{at(18, 0, 0), "1000", "0"})
	for d := 19; d <= 24; d++ {
		pts = append(pts, point{at(d, 0, 0), "1000", "0"})
	}
	pts = append(pts, point{reportNow, "1000", "0"})
	checkCurve(t, r.EquityCurve, pts)
	// All time of a bot without trades is today.
	r = compute(testBot, hist("1000"), query(t, "all", "", ""))
	if r.StartDate != "2026-11-24" || len(r.EquityCurve) != 2 {
		t.Errorf("all time without trades: %s, %d points", r.StartDate, len(r.EquityCurve))
	}
}

func TestOneTrade(t *testing.T) {
	r := compute(testBot, hist("1000", tr("50", "1", at(24, 10, 0))), query(t, "today", "", ""))
	// 1 win of 50 on 1000: 5 %; no loss: the profit factor cap; one day: Sharpe 0.
	check(t, r, want{trades: 1, wins: 1, winRate: 100, pnlPct: 5, pf: ProfitFactorCap,
		pnl: "50", avgWin: "50", avgLoss: "0", dd: "0",
		fmtPnl: "+50.00 USDT", fmtWin: "100.0%", fmtPF: "999.99", fmtDD: "0.00 USDT (0.0%)"})
	// The start, the trade, the day's close (now).
	checkCurve(t, r.EquityCurve, []point{{at(24, 0, 0), "1000", "0"}, {at(24, 10, 0), "1050", "0"}, {reportNow, "1050", "0"}})
}

func TestAllWinners(t *testing.T) {
	h := hist("1000", tr("10", "1", at(22, 9, 0)), tr("20", "1", at(23, 9, 0)), tr("30", "1", at(24, 9, 0)))
	r := compute(testBot, h, query(t, "7d", "", ""))
	// 60 on 1000 = 6 %; avg win 60 / 3 = 20. Sharpe over 22-24 November (the first trade
	// day on): returns 10/1000 = 0.01, 20/1010 = 0.0198019802, 30/1030 = 0.0291262136;
	// mean 0.0196427313, sample std 0.0095641012; 0.0196427313 / 0.0095641012 × √365
	// = 39.237754392.
	check(t, r, want{trades: 3, wins: 3, winRate: 100, pnlPct: 6, pf: ProfitFactorCap, shp: 39.23775439217875,
		pnl: "60", avgWin: "20", avgLoss: "0", dd: "0",
		fmtPnl: "+60.00 USDT", fmtWin: "100.0%", fmtPF: "999.99", fmtDD: "0.00 USDT (0.0%)"})
}

func TestAllLosers(t *testing.T) {
	h := hist("1000", tr("-10", "1", at(24, 9, 0)), tr("-20", "1", at(24, 10, 0)))
	r := compute(testBot, h, query(t, "30d", "", ""))
	// −30 on 1000 = −3 %; avg loss −30 / 2 = −15; no win: profit factor 0; the fall from
	// 1000 to 970 is 30, 3 % of 1000.
	check(t, r, want{trades: 2, losses: 2, pnlPct: -3, ddPct: 3,
		pnl: "-30", avgWin: "0", avgLoss: "-15", dd: "30",
		fmtPnl: "-30.00 USDT", fmtWin: "0.0%", fmtPF: "0.00", fmtDD: "-30.00 USDT (3.0%)"})
}

func TestBreakEvenTrades(t *testing.T) {
	h := hist("1000", tr("0", "1", at(24, 8, 0)), tr("10", "1", at(24, 9, 0)), tr("-5", "1", at(24, 10, 0)))
	r := compute(testBot, h, query(t, "today", "", ""))
	// 3 trades, 1 win, 1 loss, 1 break-even: win rate 1/3 = 33.33 %; profit factor
	// 10 / 5 = 2; net 5 = 0.5 %; fall 1010 → 1005 = 5, 5/1010 = 0.4950495 %.
	check(t, r, want{trades: 3, wins: 1, losses: 1, winRate: 100.0 / 3, pnlPct: 0.5, pf: 2, ddPct: 500.0 / 1010,
		pnl: "5", avgWin: "10", avgLoss: "-5", dd: "5",
		fmtPnl: "+5.00 USDT", fmtWin: "33.3%", fmtPF: "2.00", fmtDD: "-5.00 USDT (0.5%)"})
}

func TestFeesTurnAWinnerIntoALoser(t *testing.T) {
	// gross +5, fees 6: net −1, a loss.
	h := hist("1000", tr("-1", "6", at(24, 8, 0)), tr("4", "1", at(24, 9, 0)))
	r := compute(testBot, h, query(t, "today", "", ""))
	// win rate 1/2; profit factor 4 / 1 = 4; net 3 = 0.3 %; fall 1000 → 999 = 1, 0.1 %.
	check(t, r, want{trades: 2, wins: 1, losses: 1, winRate: 50, pnlPct: 0.3, pf: 4, ddPct: 0.1,
		pnl: "3", avgWin: "4", avgLoss: "-1", dd: "1",
		fmtPnl: "+3.00 USDT", fmtWin: "50.0%", fmtPF: "4.00", fmtDD: "-1.00 USDT (0.1%)"})
}

func TestPeriodBoundariesAtUTCMidnight(t *testing.T) {
	last := time.Date(2026, 11, 17, 23, 59, 59, 999e6, time.UTC) // the last ms before 7d
	h := hist("1000", tr("100", "1", last), tr("-40", "1", at(18, 0, 0)), tr("25", "1", at(24, 0, 0)))
	r := compute(testBot, h, query(t, "7d", "", ""))
	// 7d is 18-24 November: the trade of the 17th is before it, and moves the equity at
	// the period's start to 1100. In it: −40 and +25, net −15 = −15/1100 = −1.3636 %; the
	// fall 1100 → 1060 = 40, 40/1100 = 3.6364 %; profit factor 25/40 = 0.625.
	// Sharpe, 18-24 November, every day: −40/1100 = −0.0363636364, five days of 0, then
	// 25/1060 = 0.0235849057; mean −0.0018255330, sample std 0.0175842440;
	// −0.0018255330 / 0.0175842440 × √365 = −1.9834095857.
	returns := []float64{-40.0 / 1100, 0, 0, 0, 0, 0, 25.0 / 1060}
	check(t, r, want{trades: 2, wins: 1, losses: 1, winRate: 50, pnlPct: -1500.0 / 1100, pf: 0.625, ddPct: 4000.0 / 1100,
		shp: refSharpe(returns), pnl: "-15", avgWin: "25", avgLoss: "-40", dd: "40",
		fmtPnl: "-15.00 USDT", fmtWin: "50.0%", fmtPF: "0.63", fmtDD: "-40.00 USDT (3.6%)"})
	if math.Abs(refSharpe(returns)-(-1.9834095857)) > 1e-9 {
		t.Errorf("reference Sharpe %.9f", refSharpe(returns))
	}
	if r.EquityCurve[0].Equity.String() != "1100" {
		t.Errorf("starting point %+v, want 1100", r.EquityCurve[0])
	}
}

// refSharpe is the Sharpe ratio by its definition, written out again.
func refSharpe(r []float64) float64 {
	var mean float64
	for _, x := range r {
		mean += x / float64(len(r))
	}
	var v float64
	for _, x := range r {
		v += (x - mean) * (x - mean) / float64(len(r)-1)
	}
	return mean / math.Sqrt(v) * math.Sqrt(365)
}

func TestCustomRangeAndDrawdownCurve(t *testing.T) {
	h := hist("1000",
		tr("7", "1", at(19, 12, 0)), // before the range: equity at its start 1007
		tr("100", "1", at(20, 12, 0)),
		tr("-50", "1", at(21, 8, 0)),
		tr("-100", "1", at(21, 9, 0)),
		tr("30", "1", at(22, 12, 0)), // after the range
	)
	r := compute(testBot, h, query(t, "", "2026-11-20", "2026-11-21"))
	// Equity 1007 → 1107 → 1057 → 957: net −50 = −4.965243 % of 1007; the fall from 1107
	// to 957 is 150, 13.550136 % of 1107; profit factor 100 / 150 = 0.6667.
	// Sharpe over 20-21 November: 100/1007 = 0.0993048659 and −150/1107 = −0.1355013550;
	// mean −0.0180982445, sample std 0.1660330711; × √365 = −2.0825156946.
	check(t, r, want{trades: 3, wins: 1, losses: 2, winRate: 100.0 / 3, pnlPct: -5000.0 / 1007, pf: 100.0 / 150, ddPct: 15000.0 / 1107,
		shp: -2.08251569464905, pnl: "-50", avgWin: "100", avgLoss: "-75", dd: "150",
		fmtPnl: "-50.00 USDT", fmtWin: "33.3%", fmtPF: "0.67", fmtDD: "-150.00 USDT (13.6%)"})
	if r.Period != "2026-11-20 to 2026-11-21" || r.StartDate != "2026-11-20" || r.EndDate != "2026-11-21" {
		t.Errorf("period %q %s..%s", r.Period, r.StartDate, r.EndDate)
	}
	// A point per trade, each day closed at its end: the 21st falls 50, then 100 more.
	checkCurve(t, r.EquityCurve, []point{{at(20, 0, 0), "1007", "0"}, {at(20, 12, 0), "1107", "0"}, {at(21, 0, 0), "1107", "0"},
		{at(21, 8, 0), "1057", "50"}, {at(21, 9, 0), "957", "150"}, {at(22, 0, 0), "957", "150"}})
	// The same days without their trades (no longer kept): a point per day, and the
	// intraday peak still counts: the 21st ends 150 below the 1107 it fell from.
	for i := range h.days {
		h.days[i].marks = nil
	}
	r = compute(testBot, h, query(t, "", "2026-11-20", "2026-11-21"))
	checkCurve(t, r.EquityCurve, []point{{at(20, 0, 0), "1007", "0"}, {at(21, 0, 0), "1107", "0"}, {at(22, 0, 0), "957", "150"}})
}

// Trades made by the book's own arithmetic: a futures short, a DCA-averaged long and a
// long closed in two parts.
func TestTradesFromTheBook(t *testing.T) {
	fill := func(amount, price, fee string, t time.Time) position.Fill {
		return position.Fill{Amount: testkit.D(amount), Price: testkit.D(price), Fee: testkit.D(fee), At: t.UnixMilli()}
	}
	var trades []position.Trade
	// Short 0.1 at 60000 (fee 6), bought back at 59000 (fee 5.9): gross 100, net 88.1.
	short := position.Open("s", "bot-1", "BTC/USDT", exchange.Futures, position.Short, 10, fill("0.1", "60000", "6", at(23, 1, 0)), "sig")
	_, t1, _ := short.Reduce(fill("0.1", "59000", "5.9", at(23, 2, 0)), "t1", "sig", "signal")
	trades = append(trades, t1)
	// Long 0.01 at 60000 (fee 0.6), DCA 0.03 at 62000 (fee 1.86): entry 61500, fees 2.46.
	long := position.Open("l", "bot-1", "BTC/USDT", exchange.Futures, position.Long, 10, fill("0.01", "60000", "0.6", at(23, 3, 0)), "sig")
	long.Add(fill("0.03", "62000", "1.86", at(23, 4, 0)))
	// Half at 61000 (fee 1.22): gross 0.02 × (61000 − 61500) = −10; fee share 1.23;
	// net −10 − 1.22 − 1.23 = −12.45.
	_, t2, _ := long.Reduce(fill("0.02", "61000", "1.22", at(24, 1, 0)), "t2", "sig", "signal")
	// The rest at 63000 (fee 1.26): gross 0.02 × 1500 = 30; net 30 − 1.26 − 1.23 = 27.51.
	_, t3, closed := long.Reduce(fill("0.02", "63000", "1.26", at(24, 2, 0)), "t3", "sig", "take_profit")
	trades = append(trades, t2, t3)
	if !closed || !t1.NetPnl.Equal(testkit.D("88.1")) || !t2.NetPnl.Equal(testkit.D("-12.45")) || !t3.NetPnl.Equal(testkit.D("27.51")) {
		t.Fatalf("book made %s, %s, %s (closed %v)", t1.NetPnl, t2.NetPnl, t3.NetPnl, closed)
	}
	r := compute(testBot, hist("5000", trades...), query(t, "7d", "", ""))
	// Net 88.1 − 12.45 + 27.51 = 103.16 = 2.0632 % of 5000; wins 88.1 and 27.51 (avg
	// 57.805), loss −12.45; profit factor 115.61 / 12.45 = 9.28594; the fall 5088.1 →
	// 5075.65 = 12.45, 0.24469 % of 5088.1. Sharpe over 23-24 November: 88.1/5000 =
	// 0.01762 and (−12.45 + 27.51)/5088.1 = 0.0029598475; mean 0.0102899237, sample std
	// 0.0103662933; × √365 = 18.9642249409.
	check(t, r, want{trades: 3, wins: 2, losses: 1, winRate: 200.0 / 3, pnlPct: 2.0632, pf: 115.61 / 12.45, ddPct: 1245.0 / 5088.1,
		shp: 18.964224940856813, pnl: "103.16", avgWin: "57.805", avgLoss: "-12.45", dd: "12.45",
		fmtPnl: "+103.16 USDT", fmtWin: "66.7%", fmtPF: "9.29", fmtDD: "-12.45 USDT (0.2%)"})
}

func TestUnknownStartingEquity(t *testing.T) {
	h := hist("", tr("10", "1", at(23, 9, 0)), tr("-4", "1", at(24, 9, 0)))
	r := compute(testBot, h, query(t, "7d", "", ""))
	// No base: percentages and Sharpe are 0; the money figures stand, the curve is the
	// cumulative result.
	check(t, r, want{trades: 2, wins: 1, losses: 1, winRate: 50, pf: 2.5,
		pnl: "6", avgWin: "10", avgLoss: "-4", dd: "4",
		fmtPnl: "+6.00 USDT", fmtWin: "50.0%", fmtPF: "2.50", fmtDD: "-4.00 USDT (0.0%)"})
	if r.StartingEquity != nil {
		t.Errorf("starting equity %v, want null", r.StartingEquity)
	}
	// Seven days and their two trades after the starting point.
	if n := len(r.EquityCurve); n != 10 || !r.EquityCurve[n-1].Equity.Equal(testkit.D("6")) {
		t.Errorf("curve %+v", r.EquityCurve)
	}
}

func TestSharpeNeedsPositiveEquity(t *testing.T) {
	// Equity 10 → −90 → −80: the 24th starts below zero, its return has no base.
	h := hist("10", tr("-100", "0", at(23, 9, 0)), tr("10", "0", at(24, 9, 0)))
	r := compute(testBot, h, query(t, "7d", "", ""))
	if r.Metrics.SharpeRatio != 0 {
		t.Errorf("Sharpe %v, want 0", r.Metrics.SharpeRatio)
	}
	// The fall 10 → −90 is 100, 1000 % of the peak of 10.
	if r.Metrics.MaxDrawdownPercent != 1000 || !r.Metrics.MaxDrawdown.Equal(testkit.D("100")) {
		t.Errorf("drawdown %s %v", r.Metrics.MaxDrawdown, r.Metrics.MaxDrawdownPercent)
	}
}

func TestAllTimeStartsAtTheFirstTrade(t *testing.T) {
	h := hist("1000", tr("5", "0", time.Date(2025, 12, 31, 23, 0, 0, 0, time.UTC)), tr("5", "0", at(24, 9, 0)))
	r := compute(testBot, h, query(t, "all", "", ""))
	// 2025-12-31 to 2026-11-24: 329 days and 2 trades, plus the starting point.
	if r.StartDate != "2025-12-31" || len(r.EquityCurve) != 332 || r.Metrics.TotalTrades != 2 || r.Period != "All time" {
		t.Errorf("all time: %s, %d points, %d trades", r.StartDate, len(r.EquityCurve), r.Metrics.TotalTrades)
	}
	// ytd starts on 1 January: the trade of 31 December is before it.
	r = compute(testBot, h, query(t, "ytd", "", ""))
	if r.StartDate != "2026-01-01" || r.Metrics.TotalTrades != 1 || !r.EquityCurve[0].Equity.Equal(testkit.D("1005")) {
		t.Errorf("ytd: %s, %d trades, starts at %s", r.StartDate, r.Metrics.TotalTrades, r.EquityCurve[0].Equity)
	}
	// Without includeEquity there is no curve.
	q := query(t, "all", "", "")
	q.Equity = false
	if r := compute(testBot, h, q); r.EquityCurve != nil {
		t.Errorf("curve without includeEquity: %d points", len(r.EquityCurve))
	}
}

func TestProfitFactorIsCapped(t *testing.T) {
	h := hist("1000", tr("5000", "0", at(24, 9, 0)), tr("-0.01", "0", at(24, 10, 0)))
	r := compute(testBot, h, query(t, "today", "", ""))
	// 5000 / 0.01 = 500000, above the cap.
	if r.Metrics.ProfitFactor != ProfitFactorCap {
		t.Errorf("profit factor %v, want %v", r.Metrics.ProfitFactor, ProfitFactorCap)
	}
}

func TestMeanIsExactWhenItTerminates(t *testing.T) {
	for _, c := range []struct {
		sum  string
		n    int
		want string
	}{
		{"-1.9996667862", 1, "-1.9996667862"}, // one trade: its own net PnL, every decimal
		{"0.0000000000000000001", 1, "0.0000000000000000001"},
		{"12.3456789", 2, "6.17283945"}, // terminates: 6.17283945
		{"1", 3, "0.33333333"},          // 0.333…: rounded to 8 places
		{"-2", 3, "-0.66666667"},        // half away from zero
	} {
		got := mean(testkit.D(c.sum), c.n)
		if !got.Equal(testkit.D(c.want)) {
			t.Errorf("mean(%s, %d) = %s, want %s", c.sum, c.n, got, c.want)
		}
	}
}
