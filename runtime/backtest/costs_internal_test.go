package backtest

import (
	"context"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/backtest/candlegen"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/strategy"
)

// venue is the cost model of the hand-worked tests: maker 0.02 %, taker 0.05 %.
func venue() *Costs {
	return &Costs{MakerFee: testkit.D("0.0002"), TakerFee: testkit.D("0.0005")}
}

// vbar is bar with a volume.
func vbar(i int, o, h, l, c, volume string) marketdata.Candle {
	b := bar(i, o, h, l, c)
	b.Volume = testkit.D(volume)
	return b
}

// wantCosts checks a run's cost breakdown, and that it adds up: GrossPnl − Fees − Funding
// is the sum of the trades' NetPnl, Slippage and Funding the sums of the trades', and the
// final equity the initial balance plus the net results.
func wantCosts(t *testing.T, r Result, initial, gross, fees, slip, funding string) {
	t.Helper()
	b := r.Costs
	if b == nil {
		t.Fatal("no cost breakdown in a run with costs")
	}
	d := testkit.D
	if !b.GrossPnl.Equal(d(gross)) || !b.Fees.Equal(d(fees)) || !b.Slippage.Equal(d(slip)) || !b.Funding.Equal(d(funding)) {
		t.Fatalf("costs %+v, want gross %s, fees %s, slippage %s, funding %s", *b, gross, fees, slip, funding)
	}
	costsAddUp(t, r, d(initial))
}

// costsAddUp checks the identities of a run with costs.
func costsAddUp(t *testing.T, r Result, initial decimal.Decimal) {
	t.Helper()
	net, slip, fund, fees := decimal.Zero, decimal.Zero, decimal.Zero, decimal.Zero
	for _, tr := range r.Trades {
		net, slip, fund, fees = net.Add(tr.NetPnl), slip.Add(tr.Slippage), fund.Add(tr.Funding), fees.Add(tr.Fees)
	}
	b := r.Costs
	if !b.GrossPnl.Sub(b.Fees).Sub(b.Funding).Equal(net) {
		t.Fatalf("gross %s − fees %s − funding %s ≠ the trades' net %s", b.GrossPnl, b.Fees, b.Funding, net)
	}
	if !b.Slippage.Equal(slip) || !b.Funding.Equal(fund) || !b.Fees.Equal(fees) {
		t.Fatalf("breakdown %+v; the trades sum to slippage %s, funding %s, fees %s", *b, slip, fund, fees)
	}
	if !r.Final.Equal(initial.Add(net)) || !r.Report.Metrics.TotalPnL.Equal(net) {
		t.Fatalf("final %s, report total %s; initial %s + net %s", r.Final, r.Report.Metrics.TotalPnL, initial, net)
	}
	if last := r.Equity[len(r.Equity)-1]; !last.Equity.Equal(r.Final) {
		t.Fatalf("equity curve ends at %s, final %s", last.Equity, r.Final)
	}
}

// wantTradeCosts checks a trade's slippage and funding.
func wantTradeCosts(t *testing.T, tr Trade, slip, funding string) {
	t.Helper()
	if !tr.Slippage.Equal(testkit.D(slip)) || !tr.Funding.Equal(testkit.D(funding)) {
		t.Fatalf("trade %+v: want slippage %s, funding %s", tr, slip, funding)
	}
}

// TestMakerAndTakerFees: a resting limit entry reached inside a candle fills at its price
// as a maker; the market exit at an open, a limit entry at an open already beyond its
// price and the end-of-series close are taker fills.
func TestMakerAndTakerFees(t *testing.T) {
	off := decimal.NewFromInt(1)
	cfg := baseConfig()
	cfg.LimitOffset, cfg.Costs = &off, venue()
	cs := []marketdata.Candle{
		bar(0, "100", "100", "100", "100"), // EnterLong: limit 99.00
		bar(1, "100", "101", "99.5", "100.5"),
		bar(2, "99.8", "100", "99", "99.5"),
		bar(3, "99.5", "99.9", "98.9", "99.2"), // trades through 99.00; ExitLong at its close
		bar(4, "99.2", "99.6", "99.1", "99.5"),
	}
	r, _ := runScript(t, spotBTC(), cfg, cs, map[int]strategy.Signal{0: strategy.EnterLong, 3: strategy.ExitLong})
	if len(r.Trades) != 1 {
		t.Fatalf("%d trades", len(r.Trades))
	}
	// Maker fill at 99.00 in candle 3: amount floor(1000/99) = 10.10101, notional
	// 999.99999, fee × 0.0002 = 0.199999998. Taker exit at candle 4's open, 99.2: value
	// 1002.020192, fee × 0.0005 = 0.501010096. Gross 2.020202; fees 0.701010094; net
	// 1.319191906.
	wantTrade(t, r.Trades[0], "long", 3, 4, "99", "99.2", "10.10101", "0.701010094", "1.319191906", ReasonSignal)
	wantTradeCosts(t, r.Trades[0], "0", "0")
	wantCosts(t, r, "10000", "2.020202", "0.701010094", "0", "0")

	// A short limit at 101.00 whose candle opens at 102, beyond it: filled at the open as a
	// taker. Amount floor(1000/102) = 9.80392, notional 999.99984, fee × 0.0005 =
	// 0.49999992. End at 100 (taker): value 980.392, fee 0.490196. Gross 19.60784, fees
	// 0.99019592, net 18.61764408.
	cs = []marketdata.Candle{bar(0, "100", "100", "100", "100"), bar(1, "102", "102.5", "101.5", "102"), bar(2, "102", "102", "100", "100")}
	r, _ = runScript(t, futBTC(), cfg, cs, map[int]strategy.Signal{0: strategy.EnterShort})
	if len(r.Trades) != 1 {
		t.Fatalf("%d trades", len(r.Trades))
	}
	wantTrade(t, r.Trades[0], "short", 1, 3, "102", "100", "9.80392", "0.99019592", "18.61764408", ReasonEnd)
	wantCosts(t, r, "10000", "19.60784", "0.99019592", "0", "0")
}

// TestSlippage: a taker fill moves by the candle's half range × amount / volume, in whole
// ticks rounded up, at most the cap (itself rounded up to the tick); a candle without
// volume takes the cap; a limit fill at its price has none.
func TestSlippage(t *testing.T) {
	cfg := baseConfig()
	cfg.Costs = venue()
	cfg.Costs.Slippage = &Slippage{Cap: testkit.D("0.005")}
	cs := []marketdata.Candle{
		vbar(0, "100", "100", "100", "100", "1"),
		vbar(1, "100", "103", "99", "101", "700"),
		vbar(2, "110.01", "112", "108", "111", "0.5"),
		vbar(3, "100", "100.5", "99.5", "100", "0"),
	}
	sigs := map[int]strategy.Signal{0: strategy.EnterLong, 1: strategy.ExitLong, 2: strategy.EnterShort}
	r, _ := runScript(t, futBTC(), cfg, cs, sigs)
	if len(r.Trades) != 2 {
		t.Fatalf("%d trades: %+v", len(r.Trades), r.Trades)
	}
	// Long sized at the reference price, candle 1's open 100: floor(1000/100) = 10.
	// Slippage: range 103 − 99 = 4, 4/2 × 10 / 700 = 0.0285714…, 2.857… ticks, rounded up
	// to 3: a buy at 100.03 (the cap, 0.005 × 100 = 0.5, is far). Notional 1000.3, fee
	// 0.50015; slippage cost 0.03 × 10 = 0.3.
	// Exit at candle 2's open 110.01: 4/2 × 10 / 0.5 = 40 is past the cap 0.005 × 110.01 =
	// 0.55005, 55.005 ticks, rounded up to 56: a sell at 110.01 − 0.56 = 109.45. Value
	// 1094.5, fee 0.54725; slippage cost 5.6.
	// Gross 1094.5 − 1000.3 = 94.2; fees 1.0474; net 93.1526; slippage 5.9.
	wantTrade(t, r.Trades[0], "long", 1, 2, "100.03", "109.45", "10", "1.0474", "93.1526", ReasonSignal)
	wantTradeCosts(t, r.Trades[0], "5.9", "0")
	// Short at candle 3's open 100, sized there: 10 % of 10093.1526 = 1009.31526, /100 =
	// 10.09315. Candle 3 has no volume: the cap, 0.005 × 100 = 0.5, 50 ticks: a sell at
	// 99.50; notional 1004.268425, fee 0.5021342125; slippage cost 5.046575. The end
	// close in candle 3 at its close 100 takes the cap too: a buy at 100.50, value
	// 1014.361575, fee 0.5071807875. Gross 1004.268425 − 1014.361575 = −10.09315; fees
	// 1.009315; net −11.102465; slippage 10.09315.
	wantTrade(t, r.Trades[1], "short", 3, 4, "99.5", "100.5", "10.09315", "1.009315", "-11.102465", ReasonEnd)
	wantTradeCosts(t, r.Trades[1], "10.09315", "0")
	// Gross 94.2 − 10.09315 = 84.10685; fees 2.056715; slippage 15.99315; final
	// 10000 + 93.1526 − 11.102465 = 10082.050135.
	wantCosts(t, r, "10000", "84.10685", "2.056715", "15.99315", "0")
	testkit.EqualD(t, "final", r.Final, "10082.050135")

	// A limit entry filled at its price (99.00, inside candle 3) has no slippage; the end
	// close in candle 4 (range 0.5, volume 1) does: 0.25 × 10.10101 / 1 = 2.525…, past
	// the cap 0.005 × 99.5 = 0.4975, 49.75 ticks, rounded up to 50: a sell at 99.00.
	// Entry: maker fee 0.199999998 on 999.99999; exit value 999.99999, taker fee
	// 0.499999995. Gross 0, net −0.699999993, slippage 0.5 × 10.10101 = 5.050505.
	off := decimal.NewFromInt(1)
	cfg.LimitOffset = &off
	cs = []marketdata.Candle{
		bar(0, "100", "100", "100", "100"),
		bar(1, "100", "101", "99.5", "100.5"),
		bar(2, "99.8", "100", "99", "99.5"),
		vbar(3, "99.5", "99.9", "98.9", "99.2", "0.001"),
		bar(4, "99.2", "99.6", "99.1", "99.5"),
	}
	r, _ = runScript(t, spotBTC(), cfg, cs, map[int]strategy.Signal{0: strategy.EnterLong})
	if len(r.Trades) != 1 {
		t.Fatalf("%d trades", len(r.Trades))
	}
	wantTrade(t, r.Trades[0], "long", 3, 5, "99", "99", "10.10101", "0.699999993", "-0.699999993", ReasonEnd)
	wantTradeCosts(t, r.Trades[0], "5.050505", "0")
	wantCosts(t, r, "10000", "0", "0.699999993", "5.050505", "0")

	// The limit 99.00's candle opens at 98.99, below it: a taker fill at the open, sized
	// there (floor(1000/98.99) = 10.10203), whose slippage (the cap, 0.005 × 98.99 =
	// 0.49495, 50 ticks) would buy at 99.49: the limit bounds it to 99.00. Notional
	// 1000.10097, taker fee 0.500050485; slippage cost 0.01 × 10.10203 = 0.1010203. The
	// end close in a flat candle (no range) has no slippage: value 1010.203 at 100, fee
	// 0.5051015. Gross 10.10203; fees 1.005151985; net 9.096878015.
	cs = []marketdata.Candle{
		bar(0, "100", "100", "100", "100"),
		vbar(1, "98.99", "99.5", "98", "99.2", "0.001"),
		vbar(2, "100", "100", "100", "100", "1"),
	}
	r, _ = runScript(t, spotBTC(), cfg, cs, map[int]strategy.Signal{0: strategy.EnterLong})
	if len(r.Trades) != 1 {
		t.Fatalf("%d trades", len(r.Trades))
	}
	wantTrade(t, r.Trades[0], "long", 1, 3, "99", "100", "10.10203", "1.005151985", "9.096878015", ReasonEnd)
	wantCosts(t, r, "10000", "10.10203", "1.005151985", "0.1010203", "0")
}

// TestSlippageSizing: an entry is sized at the reference price; when the balance does not
// pay for that amount at the slipped price, it is sized again there and fills at that
// amount's slippage.
func TestSlippageSizing(t *testing.T) {
	cfg := baseConfig()
	cfg.InitialBalance = testkit.D("1000")
	cfg.PositionSize = signal.Amount{Value: httpapi.Num(testkit.D("100")), Percent: true}
	cfg.Costs = &Costs{TakerFee: testkit.D("0.001"), Slippage: &Slippage{Cap: testkit.D("0.01")}}
	cs := []marketdata.Candle{
		bar(0, "100", "100", "100", "100"),
		vbar(1, "100", "100", "100", "100", "0"),
		vbar(2, "110", "110", "110", "110", "1"),
	}
	r, _ := runScript(t, spotBTC(), cfg, cs, map[int]strategy.Signal{0: strategy.EnterLong})
	if len(r.Trades) != 1 {
		t.Fatalf("%d trades", len(r.Trades))
	}
	// At the reference 100: 1000/100 = 10 costs 1001 with its fee, so order.EntryAmount
	// cuts it to floor(1000 / (100 × 1.001)) = 9.99 (999.999). Candle 1 has no volume: the
	// cap, 0.01 × 100 = 1, 100 ticks, a buy at 101, where 9.99 costs 1009.99899. Sized
	// again at 101: 1000/101 = 9.90099 costs 1000.99998999, cut to floor(1000 / (101 ×
	// 1.001)) = 9.89109: 999.00009 + fee 0.99900009 = 999.99909009. Its slippage is the
	// cap again: filled at 101. Slippage cost 1 × 9.89109.
	// End at 110 in a flat candle (no slippage): value 1088.0199, fee 1.0880199. Gross
	// 89.01981; fees 2.08701999; net 86.93279001.
	wantTrade(t, r.Trades[0], "long", 1, 3, "101", "110", "9.89109", "2.08701999", "86.93279001", ReasonEnd)
	wantCosts(t, r, "1000", "89.01981", "2.08701999", "9.89109", "0")
}

// hbar is the flat one-hour candle i at price p.
func hbar(i int, p string) marketdata.Candle {
	ts := int64(base + i*3600000)
	d := testkit.D(p)
	return marketdata.Candle{Timestamp: ts, Time: ts / 1000, Open: d, High: d, Low: d, Close: d, Volume: decimal.NewFromInt(1)}
}

// TestFunding: a futures position open at a settlement pays (a long at a positive rate) or
// receives rate × its notional at the open of the candle at the settlement, and the trade's
// NetPnl and the final equity include it; a position opened at or after a settlement does
// not pay for it.
func TestFunding(t *testing.T) {
	// One-hour candles from 2024-01-01 00:00: 100 until 07:00, 105 from 08:00, 110 from
	// 16:00, 120 from 24:00; settlements every 8 hours from 00:00.
	var cs []marketdata.Candle
	for i := range 26 {
		cs = append(cs, hbar(i, [...]string{"100", "105", "110", "120"}[i/8]))
	}
	const h8 = 8 * 3600000
	cfg := baseConfig()
	cfg.Strategy.Timeframe = "1h"
	cfg.Costs = venue()
	cfg.Costs.Funding = []marketdata.FundingRate{
		{Time: base, Rate: testkit.D("0.0005")}, {Time: base + h8, Rate: testkit.D("0.0001")},
		{Time: base + 2*h8, Rate: testkit.D("-0.00005")}, {Time: base + 3*h8, Rate: testkit.D("0.000123")},
	}
	// Long at 01:00's open; reversed into a short at 16:00's open; the short closed at the end.
	sigs := map[int]strategy.Signal{0: strategy.EnterLong, 15: strategy.EnterShort}
	r, _ := runScriptTF(t, futBTC(), "1h", cfg, cs, sigs)
	if len(r.Trades) != 2 {
		t.Fatalf("%d trades: %+v", len(r.Trades), r.Trades)
	}
	at := func(hour int) int { return hour * 60 } // wantTrade counts minutes
	// Long 10 at 100 (fee 0.5), opened after 00:00's settlement: nothing for it. 08:00 at
	// 105: pays 0.0001 × 1050 = 0.105. 16:00 at 110, settled before that open's reversal:
	// receives 0.00005 × 1100 = 0.055. Funding 0.05. Closed at 110: gross 100, exit fee
	// 0.55, net 100 − 1.05 − 0.05 = 98.9.
	wantTrade(t, r.Trades[0], "long", at(1), at(16), "100", "110", "10", "1.05", "98.9", ReasonReversal)
	wantTradeCosts(t, r.Trades[0], "0", "0.05")
	// Short from 16:00's open (after its settlement): 10 % of 10098.9 / 110 = 9.18081,
	// notional 1009.8891, fee 0.50494455. 24:00 at 120: 9.18081 × 120 = 1101.6972 ×
	// 0.000123 = 0.1355087556, rounded to 8 places 0.13550876, received by the short. End
	// at 120: value 1101.6972, fee 0.5508486; gross −91.8081; fees 1.05579315; net
	// −91.8081 − 1.05579315 + 0.13550876 = −92.72838439.
	wantTrade(t, r.Trades[1], "short", at(16), at(26), "110", "120", "9.18081", "1.05579315", "-92.72838439", ReasonEnd)
	wantTradeCosts(t, r.Trades[1], "0", "-0.13550876")
	// Gross 100 − 91.8081 = 8.1919; fees 2.10579315; funding 0.05 − 0.13550876 =
	// −0.08550876; final 10000 + 98.9 − 92.72838439 = 10006.17161561.
	wantCosts(t, r, "10000", "8.1919", "2.10579315", "0", "-0.08550876")
	testkit.EqualD(t, "final", r.Final, "10006.17161561")

	// On spot the funding is ignored.
	r, _ = runScriptTF(t, spotBTC(), "1h", cfg, cs, map[int]strategy.Signal{0: strategy.EnterLong})
	if len(r.Trades) != 1 || !r.Costs.Funding.IsZero() || !r.Trades[0].Funding.IsZero() {
		t.Fatalf("spot: %+v, costs %+v", r.Trades, r.Costs)
	}
}

// TestEqualMakerAndTakerAreFeeRate: Costs with the same maker and taker rate and nothing
// else is FeeRate at that rate, to the byte (the breakdown aside), on both money paths.
func TestEqualMakerAndTakerAreFeeRate(t *testing.T) {
	for seed := range uint64(40) {
		s, cfg := randomCase(t, seed+1)
		cfg.Costs = nil
		rate := cfg.FeeRate
		if rate.IsZero() {
			rate = testkit.D("0.001")
		}
		cfg.FeeRate = rate
		want := mustRun(t, s, cfg)
		cfg.FeeRate, cfg.Costs = decimal.Zero, &Costs{MakerFee: rate, TakerFee: rate}
		got := mustRun(t, s, cfg)
		costsAddUp(t, got, initialOf(cfg))
		if !got.Costs.Slippage.IsZero() || !got.Costs.Funding.IsZero() {
			t.Fatalf("seed %d: costs %+v without slippage or funding", seed+1, *got.Costs)
		}
		got.Costs = nil
		sameJSON(t, got, want)
	}
}

// initialOf is cfg's initial balance with its default.
func initialOf(cfg Config) decimal.Decimal {
	if cfg.InitialBalance.IsZero() {
		return DefaultInitialBalance
	}
	return cfg.InitialBalance
}

// TestCostsConfigChecks: the cost model's refusals.
func TestCostsConfigChecks(t *testing.T) {
	s, err := NewSeries([]marketdata.Candle{bar(0, "100", "101", "99", "100")}, futBTC(), "1m")
	if err != nil {
		t.Fatal(err)
	}
	d := testkit.D
	cases := map[string]func(*Config){
		"fee rate too":   func(c *Config) { c.FeeRate = d("0.001") },
		"negative maker": func(c *Config) { c.Costs.MakerFee = d("-0.0001") },
		"negative taker": func(c *Config) { c.Costs.TakerFee = d("-0.0001") },
		"cap 1":          func(c *Config) { c.Costs.Slippage = &Slippage{Cap: d("1")} },
		"negative cap":   func(c *Config) { c.Costs.Slippage = &Slippage{Cap: d("-0.001")} },
		"funding order": func(c *Config) {
			c.Costs.Funding = []marketdata.FundingRate{{Time: base + 1, Rate: d("0.0001")}, {Time: base + 1, Rate: d("0.0001")}}
		},
	}
	for name, mod := range cases {
		cfg := baseConfig()
		cfg.Costs = venue()
		mod(&cfg)
		if _, err := normalise(cfg, s); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestSliceWithCosts: a run with costs on a Slice is the run on a series of those candles
// alone, to the byte, though the slice keeps its parent's volume decimals (dV) and the
// series of its own candles may have fewer.
func TestSliceWithCosts(t *testing.T) {
	cs, err := candlegen.Generate(candlegen.Options{Seed: 3, Count: 3000, Symbol: "ETH/USDT"})
	if err != nil {
		t.Fatal(err)
	}
	m, _ := paper.Market(exchange.Futures, "ETH/USDT")
	// One volume with 9 decimals in the parent, outside the slice.
	cs[10].Volume = testkit.D("12.123456789")
	whole, err := NewSeries(cs, m, "1m")
	if err != nil {
		t.Fatal(err)
	}
	part, err := NewSeries(cs[1000:2500], m, "1m")
	if err != nil {
		t.Fatal(err)
	}
	if whole.dV != 9 || part.dV == 9 {
		t.Fatalf("volume decimals %d and %d", whole.dV, part.dV)
	}
	cfg := baseConfig()
	cfg.Strategy.Symbol = "ETH/USDT"
	cfg.Strategy.Params = strategy.Params{FastPeriod: 5, SlowPeriod: 13}
	cfg.Leverage = 4
	cfg.Costs = venue()
	cfg.Costs.Slippage = &Slippage{Cap: testkit.D("0.002")}
	cfg.Costs.Funding = fundingFor(whole, 3)
	got := mustRun(t, whole.Slice(1000, 2500), cfg)
	want := mustRun(t, part, cfg)
	if len(want.Trades) == 0 || want.Costs.Slippage.IsZero() || want.Costs.Funding.IsZero() {
		t.Fatalf("%d trades, costs %+v: the comparison shows little", len(want.Trades), want.Costs)
	}
	sameJSON(t, got, want)
}

// TestVolumesBeyondInt64: volumes that int64 cannot hold (here 25 digits) are kept as
// decimals; the ledger then refuses a run with slippage, which Run makes on decimals
// instead, and takes one without.
func TestVolumesBeyondInt64(t *testing.T) {
	cs := []marketdata.Candle{
		vbar(0, "100", "100", "100", "100", "1"),
		vbar(1, "100", "103", "99", "101", "700"),
		vbar(2, "110.01", "112", "108", "111", "1234567890123456789.012345"),
		vbar(3, "100", "100.5", "99.5", "100", "0"),
	}
	s, err := NewSeries(cs, futBTC(), "1m")
	if err != nil {
		t.Fatal(err)
	}
	if s.vol != nil || s.volume == nil {
		t.Fatal("a 25-digit volume in int64")
	}
	cfg := baseConfig()
	cfg.Costs = venue()
	c, err := normalise(cfg, s)
	if err != nil {
		t.Fatal(err)
	}
	if newLedger(s, c) == nil {
		t.Fatal("the ledger refuses a run without slippage")
	}
	cfg.Costs.Slippage = &Slippage{Cap: testkit.D("0.005")}
	if c, err = normalise(cfg, s); err != nil || newLedger(s, c) != nil {
		t.Fatalf("the ledger takes slippage on decimal volumes (%v)", err)
	}
	sigs := map[int]strategy.Signal{0: strategy.EnterLong, 1: strategy.ExitLong, 2: strategy.EnterShort}
	st := &scripted{sigs: sigs}
	r, _, err := runWith(context.Background(), s, c, st, false)
	if err != nil {
		t.Fatal(err)
	}
	// As TestSlippage's first run but for the exit in candle 2, whose volume is so large
	// that 40 / 1.2 × 10^18 rounds up to one tick: a sell at 110.00.
	wantTrade(t, r.Trades[0], "long", 1, 2, "100.03", "110", "10", "1.05015", "98.64985", ReasonSignal)
	wantTradeCosts(t, r.Trades[0], "0.4", "0")
	// The ledger's attempt is void, so Run makes it again on decimals.
	if _, ok, err := runWith(context.Background(), s, c, &scripted{sigs: sigs}, true); ok || err != nil {
		t.Fatalf("the ledger's run: ok %v, %v", ok, err)
	}
}
