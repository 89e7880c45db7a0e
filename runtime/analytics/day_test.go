package analytics_test

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
)

// naive is the path of results by a scan of the prefix sums (0 included): the running
// peak, and the largest fall from it to a later prefix, the lowest peak among equal falls.
func naive(results []decimal.Decimal) analytics.Path {
	var p analytics.Path
	sum, runPeak := decimal.Zero, decimal.Zero
	for _, x := range results {
		sum = sum.Add(x)
		p.High = decimal.Max(p.High, sum)
		p.Low = decimal.Min(p.Low, sum)
		runPeak = decimal.Max(runPeak, sum)
		dd := runPeak.Sub(sum)
		if c := dd.Cmp(p.DD); c > 0 || (c == 0 && dd.IsPositive() && runPeak.LessThan(p.Peak)) {
			p.DD, p.Peak = dd, runPeak
		}
	}
	p.Sum = sum
	return p
}

func samePath(a, b analytics.Path) bool {
	return a.Sum.Equal(b.Sum) && a.High.Equal(b.High) && a.Low.Equal(b.Low) && a.DD.Equal(b.DD) && a.Peak.Equal(b.Peak)
}

// The per-day values combine into exactly the path a scan of every trade gives, however
// the trades are cut into days and however the days are grouped.
func TestPathMonoidMatchesANaiveScan(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for iter := range 5000 {
		n := rng.IntN(40)
		results := make([]decimal.Decimal, n)
		for i := range results {
			// Cents in −50.00..50.00, with many repeats and zeros, so that equal falls
			// from different peaks (the tie rule) and break-even trades occur.
			results[i] = decimal.New(int64(rng.IntN(21)-10)*500+int64(rng.IntN(3)-1), -2)
		}
		want := naive(results)
		// Trade by trade.
		var byTrade analytics.Path
		for _, x := range results {
			byTrade = byTrade.Then(analytics.Step(x))
		}
		if !samePath(byTrade, want) {
			t.Fatalf("iteration %d: %v: trade by trade %+v, want %+v", iter, results, byTrade, want)
		}
		// Cut into days at random, each day built by Day.Add, then the days folded.
		var days []analytics.Day
		for i := 0; i < n; {
			size := 1 + rng.IntN(6)
			var d analytics.Day
			for _, x := range results[i:min(n, i+size)] {
				d.Add(position.Trade{NetPnl: httpapi.Num(x)})
			}
			days = append(days, d)
			i += size
		}
		var folded analytics.Day
		for _, d := range days {
			folded = folded.Then(d)
		}
		if !samePath(folded.Path, want) {
			t.Fatalf("iteration %d: %v: by days %+v, want %+v", iter, results, folded.Path, want)
		}
		// Grouped the other way: right to left (associativity).
		var right analytics.Day
		for i := len(days) - 1; i >= 0; i-- {
			right = days[i].Then(right)
		}
		if !samePath(right.Path, want) {
			t.Fatalf("iteration %d: %v: grouped right %+v, want %+v", iter, results, right.Path, want)
		}
	}
}

func TestDayAdd(t *testing.T) {
	var d analytics.Day
	for _, tr := range []struct{ net, fees string }{{"12.5", "0.5"}, {"0", "0.2"}, {"-20", "1"}, {"-2.5", "0.1"}, {"4", "0.3"}} {
		d.Add(position.Trade{NetPnl: httpapi.Num(testkit.D(tr.net)), Fees: httpapi.Num(testkit.D(tr.fees))})
	}
	// 5 trades: wins 12.5 and 4, losses −20 and −2.5, one break-even.
	if d.Trades != 5 || d.Wins != 2 || d.Losses != 2 {
		t.Fatalf("counts %d/%d/%d, want 5/2/2", d.Trades, d.Wins, d.Losses)
	}
	testkit.EqualD(t, "gross profit", d.GrossProfit, "16.5") // 12.5 + 4
	testkit.EqualD(t, "gross loss", d.GrossLoss, "-22.5")    // −20 − 2.5
	testkit.EqualD(t, "fees", d.Fees, "2.1")                 // 0.5 + 0.2 + 1 + 0.1 + 0.3
	// prefixes 0, 12.5, 12.5, −7.5, −10, −6: high 12.5, low −10, fall 12.5 − (−10) = 22.5
	testkit.EqualD(t, "net", d.Net(), "-6")
	testkit.EqualD(t, "high", d.High, "12.5")
	testkit.EqualD(t, "low", d.Low, "-10")
	testkit.EqualD(t, "drawdown", d.DD, "22.5")
	testkit.EqualD(t, "drawdown peak", d.Peak, "12.5")
}

func TestDates(t *testing.T) {
	for _, tc := range []struct {
		ms   int64
		want string
	}{
		{0, "1970-01-01"},
		{-1, "1969-12-31"},
		{1795564799999, "2026-11-24"}, // 2026-11-24T23:59:59.999Z
		{1795564800000, "2026-11-25"}, // the next midnight
	} {
		if got := analytics.DateOfMS(tc.ms).String(); got != tc.want {
			t.Errorf("DateOfMS(%d) = %s, want %s", tc.ms, got, tc.want)
		}
	}
	d, ok := analytics.ParseDate("2026-11-24")
	if !ok || d.Start().UnixMilli() != 1795478400000 {
		t.Fatalf("ParseDate = %v %v (%d)", d, ok, d.Start().UnixMilli())
	}
	for _, bad := range []string{"2026-11-31", "2026-1-24", "24.11.2026", "", "2026-11-24T00:00:00Z"} {
		if _, ok := analytics.ParseDate(bad); ok {
			t.Errorf("ParseDate(%q) accepted", bad)
		}
	}
}

// ParseDate accepts exactly the names time.Parse accepts with DateLayout, as the same day:
// every month and day number around the valid ones, in leap and common years and at the
// ends of the four-digit years, and malformed names.
func TestParseDateIsTimeParse(t *testing.T) {
	var names []string
	for _, y := range []string{"0000", "0001", "0004", "0100", "1900", "1969", "1970", "2000", "2023", "2024", "2026", "2100", "9999"} {
		for m := range 14 {
			for d := range 33 {
				names = append(names, fmt.Sprintf("%s-%02d-%02d", y, m, d))
			}
		}
	}
	names = append(names, "", "2026-11-2", "2026-11-240", "2026/11/24", "2026-1a-24", "+026-11-24", "-026-11-24",
		"2026-+1-24", "2026-11-+4", "2026-11- 4", " 2026-11-24", "2026-11-24 ", "２026-11-24", "start", "trades", "dropped", "cutoff")
	for _, s := range names {
		got, ok := analytics.ParseDate(s)
		tm, err := time.Parse(analytics.DateLayout, s)
		if ok != (err == nil) {
			t.Fatalf("ParseDate(%q) ok %v, time.Parse error %v", s, ok, err)
		}
		if ok && got != analytics.DateOf(tm) {
			t.Fatalf("ParseDate(%q) = %d, time.Parse %d", s, got, analytics.DateOf(tm))
		}
	}
}

// A day reads back from its stored text exactly, and a text that is not a day's fails.
func TestDayText(t *testing.T) {
	d := analytics.Day{Trades: 3, Wins: 2, Losses: 1, GrossProfit: testkit.D("20.5"), GrossLoss: testkit.D("-7.25"),
		Fees: testkit.D("0.125"), Path: analytics.Path{Sum: testkit.D("13.25"), High: testkit.D("20.5"), Low: testkit.D("-1"),
			DD: testkit.D("7.25"), Peak: testkit.D("20.5")}}
	data, err := d.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	var back analytics.Day
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	again, _ := back.MarshalJSON()
	if string(again) != string(data) || back.Trades != 3 || !back.Net().Equal(testkit.D("13.25")) {
		t.Fatalf("%s read back as %s", data, again)
	}
	// Spaces around the values are allowed, as a JSON array has them.
	if err := back.UnmarshalJSON([]byte("[ 1, 1, 0, 2, 0, 0, 2, 2, 0, 0, 0 ]")); err != nil || !back.Net().Equal(testkit.D("2")) {
		t.Fatalf("spaced day: %+v, %v", back, err)
	}
	for _, bad := range []string{"", "[]", "{}", "[1,1,0,2,0,0,2,2,0,0]", "[1,1,0,2,0,0,2,2,0,0,0,0]", "[1.5,1,0,2,0,0,2,2,0,0,0]",
		"[1,1,0,x,0,0,2,2,0,0,0]", "[1,1,0,2,0,0,2,2,0,0,]", "1,1,0,2,0,0,2,2,0,0,0"} {
		if err := back.UnmarshalJSON([]byte(bad)); err == nil {
			t.Errorf("%q read as a day", bad)
		}
	}
}
