package position_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/position"
)

func d(s string) decimal.Decimal { return decimal.RequireFromString(s) }

func eq(t *testing.T, what string, got decimal.Decimal, want string) {
	t.Helper()
	if !got.Equal(d(want)) {
		t.Errorf("%s = %s, want %s", what, got, want)
	}
}

func TestAddReaveragesAndReduceRealises(t *testing.T) {
	p := position.Open("pos-1", "bot", "BTC/USDT", exchange.Futures, position.Long, 10,
		position.Fill{Amount: d("0.01"), Price: d("60000"), Fee: d("0.6"), At: 1000}, "s1")
	eq(t, "margin", p.Margin, "60") // 600 / 10
	p.Add(position.Fill{Amount: d("0.03"), Price: d("62000"), Fee: d("1.86"), At: 2000})
	// (0.01 × 60000 + 0.03 × 62000) / 0.04 = (600 + 1860) / 0.04 = 61500
	eq(t, "entry", p.EntryPrice(), "61500")
	eq(t, "size", p.Size, "0.04")
	eq(t, "margin", p.Margin, "246")
	eq(t, "entry fees", p.EntryFees, "2.46")

	// Close a quarter at 63000: cost share 2460 × 0.01/0.04 = 615, gross 630 − 615 = 15,
	// exit fee 0.63, entry-fee share 0.615 → net 13.755; credit 61.5 + 15 − 0.63 = 75.87.
	s, tr, closed := p.Reduce(position.Fill{Amount: d("0.01"), Price: d("63000"), Fee: d("0.63"), At: 3000}, "t1", "s3", "signal")
	if closed || tr.Closed {
		t.Fatal("closed too early")
	}
	eq(t, "gross", tr.Pnl, "15")
	eq(t, "fees", tr.Fees, "1.245")
	eq(t, "net", tr.NetPnl, "13.755")
	eq(t, "credit", s.Credit, "75.87")
	eq(t, "trade entry", tr.EntryPrice, "61500")
	eq(t, "remaining size", p.Size, "0.03")
	eq(t, "remaining entry", p.EntryPrice(), "61500")

	// Close the rest at 61000: gross 1830 − 1845 = −15; everything left goes.
	_, tr, closed = p.Reduce(position.Fill{Amount: d("0.03"), Price: d("61000"), Fee: d("1.83"), At: 4000}, "t2", "s4", "signal")
	if !closed {
		t.Fatal("not closed")
	}
	eq(t, "gross", tr.Pnl, "-15")
	eq(t, "net", tr.NetPnl, "-18.675") // −15 − 1.83 − 1.845
	eq(t, "cost left", p.Cost, "0")
	eq(t, "margin left", p.Margin, "0")
	eq(t, "fees left", p.EntryFees, "0")
}

func TestPartialSharesRoundDownAndTheLastCloseTakesTheRest(t *testing.T) {
	p := position.Open("pos", "bot", "ETH/USDT", exchange.Futures, position.Short, 3,
		position.Fill{Amount: d("0.0003"), Price: d("3000.01"), Fee: d("0"), At: 1}, "s")
	eq(t, "margin (rounded up)", p.Margin, "0.30000100") // 0.900003 / 3 = 0.300001
	_, _, _ = p.Reduce(position.Fill{Amount: d("0.0001"), Price: d("3000"), At: 2}, "a", "s", "signal")
	// cost share 0.900003 / 3 = 0.300001 exactly
	eq(t, "cost", p.Cost, "0.600002")
	_, _, closed := p.Reduce(position.Fill{Amount: d("0.0002"), Price: d("3000"), At: 3}, "b", "s", "signal")
	if !closed || !p.Cost.IsZero() || !p.Margin.IsZero() {
		t.Fatalf("left %s cost, %s margin", p.Cost, p.Margin)
	}
}

func TestLiquidationPrice(t *testing.T) {
	// long 1 @ 100 ×10: (100 − 10) / (1 × 0.995) = 90.45226130653… → up to 8 dp
	eq(t, "long", position.LiquidationPrice(position.Long, d("1"), d("100"), d("10"), position.MaintenanceMarginRate), "90.45226131")
	// short 1 @ 100 ×10: (100 + 10) / 1.005 = 109.45273631840… → down
	eq(t, "short", position.LiquidationPrice(position.Short, d("1"), d("100"), d("10"), position.MaintenanceMarginRate), "109.45273631")
	// a long at leverage 1 cannot be liquidated
	eq(t, "1x long", position.LiquidationPrice(position.Long, d("1"), d("100"), d("100"), position.MaintenanceMarginRate), "0")
}

func TestExitsFromPercentFollowTheEntry(t *testing.T) {
	m, _ := paper.Market(exchange.Futures, "BTC/USDT")
	p := position.Open("pos", "bot", "BTC/USDT", exchange.Futures, position.Short, 5,
		position.Fill{Amount: d("0.01"), Price: d("60000"), At: 1}, "s")
	p.SetExit(true, d("2"), true, decimal.Zero, m) // short: stop 2% above = 61200
	p.SetExit(false, d("3"), true, d("50"), m)     // short: take 3% below = 58200, closes half
	eq(t, "stop", p.StopLoss.Price, "61200")
	eq(t, "take", p.TakeProfit.Price, "58200")
	eq(t, "close %", p.TakeProfit.ClosePercent, "50")
	p.Add(position.Fill{Amount: d("0.01"), Price: d("62000"), At: 2}) // entry 61000
	p.Reprice(m)
	eq(t, "stop after DCA", p.StopLoss.Price, "62220")
	eq(t, "take after DCA", p.TakeProfit.Price, "59170")
}

func TestViewHasEverySpecField(t *testing.T) {
	p := position.Open("pos-9", "bot", "BTC/USDT", exchange.Futures, position.Long, 10,
		position.Fill{Amount: d("0.1"), Price: d("50000"), At: 1795000000000}, "s")
	m, _ := paper.Market(exchange.Futures, "BTC/USDT")
	p.SetExit(true, d("45000"), false, decimal.Zero, m)
	v := p.View(d("51000"))
	eq(t, "pnl", v.Pnl, "100")
	eq(t, "pnl %", v.PnlPercent, "20") // 100 / 500 margin
	data, _ := json.Marshal(v)
	for _, f := range []string{"id", "symbol", "side", "size", "entryPrice", "currentPrice", "pnl", "pnlPercent",
		"leverage", "margin", "liquidationPrice", "stopLoss", "createdAt"} {
		if !strings.Contains(string(data), `"`+f+`":`) {
			t.Errorf("view lacks %s: %s", f, data)
		}
	}
	if !strings.Contains(string(data), `"createdAt":"2026-`) {
		t.Errorf("createdAt is not ISO 8601: %s", data)
	}
	spot := position.Open("p", "bot", "BTC/USDT", exchange.Spot, position.Long, 10, position.Fill{Amount: d("1"), Price: d("1"), At: 1}, "s")
	if spot.Leverage != 1 || spot.View(d("1")).LiquidationPrice != nil {
		t.Error("spot position with leverage or liquidation price")
	}
}

func TestOrderStatusMachine(t *testing.T) {
	r := position.OrderRecord{ClientOrderID: "c", Status: exchange.StatusPending}
	if ok, err := r.Transition(exchange.StatusOpen, 1); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := r.Transition(exchange.StatusFilled, 2); !ok || err != nil {
		t.Fatal(ok, err)
	}
	if ok, err := r.Transition(exchange.StatusFilled, 3); ok || err != nil {
		t.Fatal("same status again must be a no-op", ok, err)
	}
	for _, next := range []exchange.OrderStatus{exchange.StatusCancelled, exchange.StatusRejected, exchange.StatusOpen} {
		if _, err := r.Transition(next, 4); err == nil {
			t.Errorf("filled became %s", next)
		}
	}
	if r.Status != exchange.StatusFilled || r.UpdatedAt != 2 {
		t.Fatalf("%+v", r)
	}
	open := position.OrderRecord{Status: exchange.StatusOpen}
	if _, err := open.Transition(exchange.StatusRejected, 1); err == nil {
		t.Error("open became rejected")
	}
}

func TestCloneSharesNoExit(t *testing.T) {
	m, _ := paper.Market(exchange.Futures, "BTC/USDT")
	p := position.Open("pos", "bot", "BTC/USDT", exchange.Futures, position.Long, 5,
		position.Fill{Amount: d("0.01"), Price: d("60000"), At: 1}, "s")
	p.SetExit(true, d("2"), true, decimal.Zero, m)
	p.SetExit(false, d("3"), true, decimal.Zero, m)
	c := p.Clone()
	c.Add(position.Fill{Amount: d("0.01"), Price: d("62000"), At: 2})
	c.Reprice(m)
	eq(t, "original stop", p.StopLoss.Price, "58800")   // 60000 × 0.98
	eq(t, "original take", p.TakeProfit.Price, "61800") // 60000 × 1.03
	eq(t, "clone stop", c.StopLoss.Price, "59780")      // 61000 × 0.98
}
