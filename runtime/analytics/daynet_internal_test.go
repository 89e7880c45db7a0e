package analytics

import (
	"math/rand/v2"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/position"
)

// parseDayNet reads the trade count and net result parseDay reads, from the days the
// booking writes, and refuses a text that is not a day's eleven values or whose two values
// it reads are not numbers. The day's other values it does not read, nor check.
func TestParseDayNetIsParseDaysNet(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 8))
	for range 2000 {
		var d Day
		for range rng.IntN(6) + 1 {
			d.Add(position.Trade{NetPnl: httpapi.Num(decimal.New(rng.Int64N(20001)-10000, -int32(rng.IntN(5)))),
				Fees: httpapi.Num(decimal.New(rng.Int64N(100), -2))})
		}
		text, _ := d.MarshalJSON()
		full, err := parseDay(string(text))
		if err != nil {
			t.Fatal(err)
		}
		trades, net, err := parseDayNet(string(text))
		if err != nil || trades != full.Trades || !net.Equal(full.Net()) || net.Exponent() != full.Net().Exponent() {
			t.Fatalf("%s: net %d %s (%v), full %d %s", text, trades, net, err, full.Trades, full.Net())
		}
	}
	if trades, net, err := parseDayNet("[ 2 ,1,1,5,-3,0, 2.5 ,5,0,3,5]"); err != nil || trades != 2 || !net.Equal(decimal.RequireFromString("2.5")) {
		t.Fatalf("spaced day: %d %s, %v", trades, net, err)
	}
	for _, bad := range []string{"", "[]", "{}", "[1,1,0,2,0,0,2,2,0,0]", "[1,1,0,2,0,0,2,2,0,0,0,0]", "[x,1,0,2,0,0,2,2,0,0,0]",
		"[1,1,0,2,0,0,y,2,0,0,0]", "[1.5,1,0,2,0,0,2,2,0,0,0]", "1,1,0,2,0,0,2,2,0,0,0"} {
		if _, _, err := parseDayNet(bad); err == nil {
			t.Errorf("%q read as a day", bad)
		}
	}
	if _, _, err := parseDayNet("[1,1,0,x,0,0,2,2,0,0,0]"); err != nil {
		t.Errorf("a value the sums do not read was checked: %v", err)
	}
}
