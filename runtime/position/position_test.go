package position_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/position"
)

func TestAddReaveragesAndReduceRealises(t *testing.T) {
	p := position.Open("pos-1", "bot", "BTC/USDT", exchange.Futures, position.Long, 10,
		position.Fill{Amount: testkit.D("0.01"), Price: testkit.D("60000"), Fee: testkit.D("0.6"), At: 1000}, "s1")
	testkit.EqualD(t, "margin", p.Margin.Decimal, "60") // 600 / 10
	p.Add(position.Fill{Amount: testkit.D("0.03"), Price: testkit.D("62000"), Fee: testkit.D("1.86"), At: 2000})
	// (0.01 × 60000 + 0.03 × 62000) / 0.04 = (600 + 1860) / 0.04 = 61500
	testkit.EqualD(t, "entry", p.EntryPrice(), "61500")
	testkit.EqualD(t, "size", p.Size.Decimal, "0.04")
	testkit.EqualD(t, "margin", p.Margin.Decimal, "246")
	testkit.EqualD(t, "entry fees", p.EntryFees.Decimal, "2.46")

	// Close a quarter at 63000: cost share 2460 × 0.01/0.04 = 615, gross 630 − 615 = 15,
	// exit fee 0.63, entry-fee share 0.615 → net 13.755; credit 61.5 + 15 − 0.63 = 75.87.
	s, tr, closed := p.Reduce(position.Fill{Amount: testkit.D("0.01"), Price: testkit.D("63000"), Fee: testkit.D("0.63"), At: 3000}, "t1", "s3", "signal")
	if closed || tr.Closed {
		t.Fatal("closed too early")
	}
	testkit.EqualD(t, "gross", tr.Pnl.Decimal, "15")
	testkit.EqualD(t, "fees", tr.Fees.Decimal, "1.245")
	testkit.EqualD(t, "net", tr.NetPnl.Decimal, "13.755")
	testkit.EqualD(t, "credit", s.Credit, "75.87")
	testkit.EqualD(t, "trade entry", tr.EntryPrice.Decimal, "61500")
	testkit.EqualD(t, "remaining size", p.Size.Decimal, "0.03")
	testkit.EqualD(t, "remaining entry", p.EntryPrice(), "61500")

	// Close the rest at 61000: gross 1830 − 1845 = −15; everything left goes.
	_, tr, closed = p.Reduce(position.Fill{Amount: testkit.D("0.03"), Price: testkit.D("61000"), Fee: testkit.D("1.83"), At: 4000}, "t2", "s4", "signal")
	if !closed {
		t.Fatal("not closed")
	}
	testkit.EqualD(t, "gross", tr.Pnl.Decimal, "-15")
	testkit.EqualD(t, "net", tr.NetPnl.Decimal, "-18.675") // −15 − 1.83 − 1.845
	testkit.EqualD(t, "cost left", p.Cost.Decimal, "0")
	testkit.EqualD(t, "margin left", p.Margin.Decimal, "0")
	testkit.EqualD(t, "fees left", p.EntryFees.Decimal, "0")
}

func TestPartialSharesRoundDownAndTheLastCloseTakesTheRest(t *testing.T) {
	p := position.Open("pos", "bot", "ETH/USDT", exchange.Futures, position.Short, 3,
		position.Fill{Amount: testkit.D("0.0003"), Price: testkit.D("3000.01"), Fee: testkit.D("0"), At: 1}, "s")
	testkit.EqualD(t, "margin (rounded up)", p.Margin.Decimal, "0.30000100") // 0.900003 / 3 = 0.300001
	_, _, _ = p.Reduce(position.Fill{Amount: testkit.D("0.0001"), Price: testkit.D("3000"), At: 2}, "a", "s", "signal")
	// cost share 0.900003 / 3 = 0.300001 exactly
	testkit.EqualD(t, "cost", p.Cost.Decimal, "0.600002")
	_, _, closed := p.Reduce(position.Fill{Amount: testkit.D("0.0002"), Price: testkit.D("3000"), At: 3}, "b", "s", "signal")
	if !closed || !p.Cost.IsZero() || !p.Margin.IsZero() {
		t.Fatalf("left %s cost, %s margin", p.Cost, p.Margin)
	}
}

func TestLiquidationPrice(t *testing.T) {
	// long 1 @ 100 ×10: (100 − 10) / (1 × 0.995) = 90.45226130653… → up to 8 dp
	testkit.EqualD(t, "long", position.LiquidationPrice(position.Long, testkit.D("1"), testkit.D("100"), testkit.D("10"), position.MaintenanceMarginRate), "90.45226131")
	// short 1 @ 100 ×10: (100 + 10) / 1.005 = 109.45273631840… → down
	testkit.EqualD(t, "short", position.LiquidationPrice(position.Short, testkit.D("1"), testkit.D("100"), testkit.D("10"), position.MaintenanceMarginRate), "109.45273631")
	// a long at leverage 1 cannot be liquidated
	testkit.EqualD(t, "1x long", position.LiquidationPrice(position.Long, testkit.D("1"), testkit.D("100"), testkit.D("100"), position.MaintenanceMarginRate), "0")
}

func TestExitsFromPercentFollowTheEntry(t *testing.T) {
	m, _ := paper.Market(exchange.Futures, "BTC/USDT")
	p := position.Open("pos", "bot", "BTC/USDT", exchange.Futures, position.Short, 5,
		position.Fill{Amount: testkit.D("0.01"), Price: testkit.D("60000"), At: 1}, "s")
	p.SetExit(true, testkit.D("2"), true, decimal.Zero, m)     // short: stop 2% above = 61200
	p.SetExit(false, testkit.D("3"), true, testkit.D("50"), m) // short: take 3% below = 58200, closes half
	testkit.EqualD(t, "stop", p.StopLoss.Price.Decimal, "61200")
	testkit.EqualD(t, "take", p.TakeProfit.Price.Decimal, "58200")
	testkit.EqualD(t, "close %", p.TakeProfit.ClosePercent.Decimal, "50")
	p.Add(position.Fill{Amount: testkit.D("0.01"), Price: testkit.D("62000"), At: 2}) // entry 61000
	p.Reprice(m)
	testkit.EqualD(t, "stop after DCA", p.StopLoss.Price.Decimal, "62220")
	testkit.EqualD(t, "take after DCA", p.TakeProfit.Price.Decimal, "59170")
}

func TestViewHasEverySpecField(t *testing.T) {
	p := position.Open("pos-9", "bot", "BTC/USDT", exchange.Futures, position.Long, 10,
		position.Fill{Amount: testkit.D("0.1"), Price: testkit.D("50000"), At: 1795000000000}, "s")
	m, _ := paper.Market(exchange.Futures, "BTC/USDT")
	p.SetExit(true, testkit.D("45000"), false, decimal.Zero, m)
	v := p.View(testkit.D("51000"))
	testkit.EqualD(t, "pnl", v.Pnl.Decimal, "100")
	testkit.EqualD(t, "pnl %", v.PnlPercent.Decimal, "20") // 100 / 500 margin
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
	spot := position.Open("p", "bot", "BTC/USDT", exchange.Spot, position.Long, 10, position.Fill{Amount: testkit.D("1"), Price: testkit.D("1"), At: 1}, "s")
	if spot.Leverage != 1 || spot.View(testkit.D("1")).LiquidationPrice != nil {
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
		position.Fill{Amount: testkit.D("0.01"), Price: testkit.D("60000"), At: 1}, "s")
	p.SetExit(true, testkit.D("2"), true, decimal.Zero, m)
	p.SetExit(false, testkit.D("3"), true, decimal.Zero, m)
	c := p.Clone()
	c.Add(position.Fill{Amount: testkit.D("0.01"), Price: testkit.D("62000"), At: 2})
	c.Reprice(m)
	testkit.EqualD(t, "original stop", p.StopLoss.Price.Decimal, "58800")   // 60000 × 0.98
	testkit.EqualD(t, "original take", p.TakeProfit.Price.Decimal, "61800") // 60000 × 1.03
	testkit.EqualD(t, "clone stop", c.StopLoss.Price.Decimal, "59780")      // 61000 × 0.98
}
