package analytics

import (
	"encoding/json"
	"testing"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/position"
)

// TestReportOf: the backtester's entry point gives the figures of a hand-worked history.
func TestReportOf(t *testing.T) {
	list := []position.Trade{
		tr("100", "1", at(20, 10, 0)),
		tr("-40", "1", at(20, 11, 0)),
		tr("-20", "1", at(22, 9, 0)),
	}
	r := ReportOf(Header{BotID: "bt", Symbol: "ETH/USDT"}, list, testkit.DP("1000"), query(t, "7d", "", ""))
	// Wins 1 (100), losses 2 (−60): net 40, 4 % of 1000; profit factor 100/60; win rate
	// 33.3…%; drawdown: peak 1100 after the first trade, lowest 1040 after the third: 60,
	// 60/1100 × 100 = 5.4545…%. Average loss −60/2 = −30.
	if r.BotID != "bt" || r.Symbol != "ETH/USDT" || r.Formatted.TotalPnL != "+40.00 USDT" {
		t.Fatalf("header or formatting: %+v", r)
	}
	m := r.Metrics
	if m.TotalTrades != 3 || m.WinningTrades != 1 || m.LosingTrades != 2 || m.TotalPnLPercent != 4 {
		t.Fatalf("metrics %+v", m)
	}
	testkit.EqualD(t, "totalPnL", m.TotalPnL.Decimal, "40")
	testkit.EqualD(t, "avgLoss", m.AvgLoss.Decimal, "-30")
	testkit.EqualD(t, "maxDrawdown", m.MaxDrawdown.Decimal, "60")
	if d := m.MaxDrawdownPercent - 600.0/110; d > 1e-9 || d < -1e-9 {
		t.Fatalf("maxDrawdownPercent %v", m.MaxDrawdownPercent)
	}
	// The same history through the live path's computation gives the same report.
	live := compute(testBot, hist("1000", list...), query(t, "7d", "", ""))
	lj, _ := json.Marshal(live.Metrics)
	bj, _ := json.Marshal(r.Metrics)
	if string(lj) != string(bj) {
		t.Fatalf("live %+v\nbacktest %+v", live.Metrics, r.Metrics)
	}
}
