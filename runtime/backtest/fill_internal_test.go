package backtest

import (
	"context"
	"errors"
	"strconv"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/strategy"
)

// base is 2024-01-01T00:00:00Z in ms.
const base = 1704067200000

func spotBTC() exchange.MarketInfo { m, _ := paper.Market(exchange.Spot, "BTC/USDT"); return m }
func futBTC() exchange.MarketInfo  { m, _ := paper.Market(exchange.Futures, "BTC/USDT"); return m }

// bar is candle i (1m) with prices o, h, l, c.
func bar(i int, o, h, l, c string) marketdata.Candle {
	d := decimal.RequireFromString
	ts := int64(base + i*60000)
	return marketdata.Candle{Timestamp: ts, Time: ts / 1000, Open: d(o), High: d(h), Low: d(l), Close: d(c), Volume: decimal.NewFromInt(1)}
}

// scripted returns sigs[k] at the close of candle k and records the bars it was fed.
type scripted struct {
	sigs map[int]strategy.Signal
	seen []strategy.Bar
}

func (s *scripted) Warmup() int { return 1 }

func (s *scripted) Next(b strategy.Bar) strategy.Signal {
	s.seen = append(s.seen, b)
	return s.sigs[len(s.seen)-1]
}

func baseConfig() Config {
	return Config{Strategy: strategy.Spec{Family: strategy.EMACrossover, Timeframe: "1m", Symbol: "BTC/USDT",
		Params: strategy.EMACrossover.Defaults()}}
}

func runScript(t *testing.T, m exchange.MarketInfo, cfg Config, cs []marketdata.Candle, sigs map[int]strategy.Signal) (Result, *scripted) {
	t.Helper()
	return runScriptTF(t, m, "1m", cfg, cs, sigs)
}

// runScriptTF is runScript on candles of timeframe tf (cfg's strategy must say it too).
func runScriptTF(t *testing.T, m exchange.MarketInfo, tf string, cfg Config, cs []marketdata.Candle, sigs map[int]strategy.Signal) (Result, *scripted) {
	t.Helper()
	s, err := NewSeries(cs, m, tf)
	if err != nil {
		t.Fatal(err)
	}
	c, err := normalise(cfg, s)
	if err != nil {
		t.Fatal(err)
	}
	// Both money paths run the script; the integer ledger's result must be the decimal
	// one's to the byte.
	st := &scripted{sigs: sigs}
	r, _, err := runWith(context.Background(), s, c, st, false)
	if err != nil {
		t.Fatal(err)
	}
	fr, ok, err := runWith(context.Background(), s, c, &scripted{sigs: sigs}, true)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatalf("the integer ledger refused %+v", cfg)
	}
	sameJSON(t, fr, r)
	return r, st
}

// sameJSON fails unless got and want have the same JSON.
func sameJSON(t *testing.T, got, want Result) {
	t.Helper()
	gj, err := got.JSON()
	if err != nil {
		t.Fatal(err)
	}
	wj, err := want.JSON()
	if err != nil {
		t.Fatal(err)
	}
	if string(gj) != string(wj) {
		t.Fatalf("the integer ledger's result differs from the decimal one:\n%s\n%s", gj, wj)
	}
}

// wantTrade compares a trade field by field (decimals by value).
func wantTrade(t *testing.T, got Trade, side string, entryAt, exitAt int, entry, exit, amount, fees, net, reason string) {
	t.Helper()
	d := testkit.D
	if got.Side != side || got.EntryTime != int64(base+entryAt*60000) || got.ExitTime != int64(base+exitAt*60000) ||
		!got.EntryPrice.Equal(d(entry)) || !got.ExitPrice.Equal(d(exit)) || !got.Amount.Equal(d(amount)) ||
		!got.Fees.Equal(d(fees)) || !got.NetPnl.Equal(d(net)) || got.Reason != reason {
		t.Fatalf("trade %+v\nwant %s at candle %d → %d, %s → %s, amount %s, fees %s, net %s, %s",
			got, side, entryAt, exitAt, entry, exit, amount, fees, net, reason)
	}
}

func TestMarketEntryAndExitAtNextOpenWithFees(t *testing.T) {
	cs := []marketdata.Candle{
		bar(0, "100", "101", "99", "100"),
		bar(1, "102", "103", "101", "102"),
		bar(2, "110", "111", "109", "110"),
		bar(3, "111", "112", "110", "111"),
	}
	r, _ := runScript(t, spotBTC(), baseConfig(), cs, map[int]strategy.Signal{0: strategy.EnterLong, 1: strategy.ExitLong})
	if len(r.Trades) != 1 {
		t.Fatalf("%d trades", len(r.Trades))
	}
	// Entry at candle 1's open, 102: 10 % of 10000 = 1000 of notional, amount
	// floor(1000/102 = 9.803921…, step 0.00001) = 9.80392; notional 999.99984, fee × 0.001 =
	// 0.99999984. Exit at candle 2's open, 110: value 1078.4312, fee 1.0784312.
	// Gross 1078.4312 − 999.99984 = 78.43136; fees 0.99999984 + 1.0784312 = 2.07843104;
	// net 76.35292896.
	wantTrade(t, r.Trades[0], "long", 1, 2, "102", "110", "9.80392", "2.07843104", "76.35292896", ReasonSignal)
	// Balance: 10000 − 1000.99983984 + (1078.4312 − 1.0784312) = 10076.35292896.
	testkit.EqualD(t, "final equity", r.Final, "10076.35292896")
	if r.Report.Metrics.TotalTrades != 1 || r.Report.Metrics.WinningTrades != 1 || !r.Report.Metrics.TotalPnL.Equal(testkit.D("76.35292896")) {
		t.Fatalf("report metrics %+v", r.Report.Metrics)
	}
}

// TestNoLookAhead: the strategy is fed each candle once, in order, only once it has closed,
// and the signal it returns at candle i's close is filled at candle i+1's open: never at a
// price of a candle it had not seen when it decided.
func TestNoLookAhead(t *testing.T) {
	cs := []marketdata.Candle{
		bar(0, "100", "101", "99", "100"),
		bar(1, "100", "101", "99", "101"),
		// Candle 2 gaps up from candle 1's close (101): a fill at the signal candle's close
		// or at this candle's close would show.
		bar(2, "105", "108", "104", "107"),
		bar(3, "107", "109", "106", "108"),
		bar(4, "99", "100", "98", "99"),
	}
	r, spy := runScript(t, spotBTC(), baseConfig(), cs, map[int]strategy.Signal{1: strategy.EnterLong, 3: strategy.ExitLong})
	if len(spy.seen) != len(cs) {
		t.Fatalf("the strategy saw %d candles, want %d", len(spy.seen), len(cs))
	}
	for i, b := range spy.seen {
		if b != strategy.BarOf(cs[i]) {
			t.Fatalf("call %d got bar %+v, want candle %d's", i, b, i)
		}
	}
	if len(r.Trades) != 1 {
		t.Fatalf("%d trades", len(r.Trades))
	}
	tr := r.Trades[0]
	if tr.EntryTime != cs[2].Timestamp || !tr.EntryPrice.Equal(cs[2].Open) || tr.ExitTime != cs[4].Timestamp || !tr.ExitPrice.Equal(cs[4].Open) {
		t.Fatalf("trade %+v: want entry at candle 2's open 105 and exit at candle 4's open 99", tr)
	}
}

func TestLimitEntryFillAndNonFill(t *testing.T) {
	off := decimal.NewFromInt(1)
	cfg := baseConfig()
	cfg.LimitOffset = &off
	cs := []marketdata.Candle{
		bar(0, "100", "100", "100", "100"), // EnterLong: limit 100 × 0.99 = 99.00
		bar(1, "100", "101", "99.5", "100.5"),
		bar(2, "99.8", "100", "99", "99.5"), // touches 99.00: not traded through, no fill
		bar(3, "99.5", "99.9", "98.9", "99.2"),
		bar(4, "99.2", "99.6", "99.1", "99.5"),
	}
	r, _ := runScript(t, spotBTC(), cfg, cs, map[int]strategy.Signal{0: strategy.EnterLong})
	if len(r.Trades) != 1 {
		t.Fatalf("%d trades", len(r.Trades))
	}
	// Fills in candle 3 at 99.00: amount floor(1000/99 = 10.101010…) = 10.10101, notional
	// 999.99999, entry fee 0.99999999. Closed at the end at 99.5 (stamped at candle 4's
	// close, candle 5's open time): value 1005.050495, exit fee 1.005050495.
	// Gross 1005.050495 − 999.99999 = 5.050505; fees 2.005050485; net 3.045454515.
	wantTrade(t, r.Trades[0], "long", 3, 5, "99", "99.5", "10.10101", "2.005050485", "3.045454515", ReasonEnd)

	// A limit that the market never trades through is never filled.
	cs2 := []marketdata.Candle{bar(0, "100", "100", "100", "100"), bar(1, "100", "101", "99.5", "100.5"), bar(2, "99.8", "100", "99", "99.5")}
	r, _ = runScript(t, spotBTC(), cfg, cs2, map[int]strategy.Signal{0: strategy.EnterLong})
	if len(r.Trades) != 0 || !r.Final.Equal(testkit.D("10000")) {
		t.Fatalf("unfilled limit: trades %+v final %s", r.Trades, r.Final)
	}
}

func TestLimitEntryAtABetterOpen(t *testing.T) {
	off := decimal.NewFromInt(1)
	cfg := baseConfig()
	cfg.LimitOffset = &off
	cs := []marketdata.Candle{
		bar(0, "100", "100", "100", "100"), // EnterShort: limit 100 × 1.01 = 101.00
		bar(1, "102", "102.5", "101.5", "102"),
		bar(2, "102", "102", "100", "100"),
	}
	r, _ := runScript(t, futBTC(), cfg, cs, map[int]strategy.Signal{0: strategy.EnterShort})
	if len(r.Trades) != 1 {
		t.Fatalf("%d trades", len(r.Trades))
	}
	// Candle 1 opens at 102, above the short's limit 101: filled at the open, 102.
	// Amount floor(1000/102) = 9.80392 (leverage 1: margin = notional 999.99984, fee
	// 0.99999984). End at 100: gross 999.99984 − 980.392 = 19.60784, exit fee 0.980392,
	// net 19.60784 − (0.980392 + 0.99999984 = 1.98039184) = 17.62744816.
	wantTrade(t, r.Trades[0], "short", 1, 3, "102", "100", "9.80392", "1.98039184", "17.62744816", ReasonEnd)
	testkit.EqualD(t, "final equity", r.Final, "10017.62744816")
}

func TestStopLossAndTakeProfitPathOrder(t *testing.T) {
	sl := signal.Amount{Value: httpapi.Num(decimal.NewFromInt(2)), Percent: true}
	tp := signal.Amount{Value: httpapi.Num(decimal.NewFromInt(4)), Percent: true}
	cfg := baseConfig()
	cfg.StopLoss, cfg.TakeProfit = &sl, &tp
	quiet := []marketdata.Candle{bar(0, "100", "100", "100", "100"), bar(1, "100", "100.5", "99.5", "100")}
	cases := []struct {
		name   string
		m      exchange.MarketInfo
		entry  strategy.Signal
		last   marketdata.Candle
		side   string
		exit   string
		fees   string
		net    string
		reason string
	}{
		// Long 10 at 100: stop-loss 98.00, take-profit 104.00. Entry fee 1.
		// Rising candle: open → low 97 (stop at 98) before the high 105.
		// Gross −20, exit fee 0.98, net −21.98.
		{"long rising both", spotBTC(), strategy.EnterLong, bar(2, "100", "105", "97", "101"), "long", "98", "1.98", "-21.98", ReasonStopLoss},
		// Falling candle: open → high 105 (take-profit at 104) first. Gross 40, exit fee
		// 1.04, net 37.96.
		{"long falling both", spotBTC(), strategy.EnterLong, bar(2, "100", "105", "97", "99"), "long", "104", "2.04", "37.96", ReasonTakeProfit},
		// Gap: the candle opens at 97, below the stop: filled at the open. Gross −30, exit
		// fee 0.97, net −31.97.
		{"long gap through stop", spotBTC(), strategy.EnterLong, bar(2, "97", "97.5", "96", "97"), "long", "97", "1.97", "-31.97", ReasonStopLoss},
		// Only the take-profit in reach on a rising candle: low 99 first, then high 104.5.
		{"long take-profit", spotBTC(), strategy.EnterLong, bar(2, "100", "104.5", "99", "104"), "long", "104", "2.04", "37.96", ReasonTakeProfit},
		// Short 10 at 100: stop-loss 102.00, take-profit 96.00.
		// Rising candle: the low 95 first, take-profit at 96. Gross 40, fees 1 + 0.96, net 38.04.
		{"short rising both", futBTC(), strategy.EnterShort, bar(2, "100", "103", "95", "101"), "short", "96", "1.96", "38.04", ReasonTakeProfit},
		// Falling candle: the high 103 first, stop at 102. Gross −20, fees 1 + 1.02, net −22.02.
		{"short falling both", futBTC(), strategy.EnterShort, bar(2, "100", "103", "95", "99"), "short", "102", "2.02", "-22.02", ReasonStopLoss},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs := append(append([]marketdata.Candle(nil), quiet...), c.last, bar(3, "100", "100", "100", "100"))
			r, _ := runScript(t, c.m, cfg, cs, map[int]strategy.Signal{0: c.entry})
			if len(r.Trades) != 1 {
				t.Fatalf("%d trades: %+v", len(r.Trades), r.Trades)
			}
			wantTrade(t, r.Trades[0], c.side, 1, 2, "100", c.exit, "10", c.fees, c.net, c.reason)
		})
	}
}

func TestFuturesReversalWithLeverage(t *testing.T) {
	cfg := baseConfig()
	cfg.Leverage = 2
	cs := []marketdata.Candle{
		bar(0, "100", "100", "100", "100"),
		bar(1, "100", "101", "99", "100"),
		bar(2, "110", "111", "109", "110"),
		bar(3, "105", "106", "104", "105"),
	}
	// EnterShort alone at candle 1's close, with the long open: a reversal at candle 2's open.
	r, _ := runScript(t, futBTC(), cfg, cs, map[int]strategy.Signal{0: strategy.EnterLong, 1: strategy.EnterShort})
	if len(r.Trades) != 2 {
		t.Fatalf("%d trades: %+v", len(r.Trades), r.Trades)
	}
	// Long: 10 % of 10000 as margin × 2 = 2000 of notional at 100: amount 20, margin 1000,
	// fee 2; balance 8998. Closed at 110: gross 2200 − 2000 = 200, exit fee 2.2, net 195.8;
	// credit 1000 + 200 − 2.2 = 1197.8, balance 10195.8.
	wantTrade(t, r.Trades[0], "long", 1, 2, "100", "110", "20", "4.2", "195.8", ReasonReversal)
	// Short at 110: 10195.8 × 10 % × 2 = 2039.16 of notional, amount floor(18.537818…) =
	// 18.53781, notional 2039.1591, margin 1019.57955, fee 2.0391591; closed at the end at
	// 105: gross 2039.1591 − 1946.47005 = 92.68905, exit fee 1.94647005, net 92.68905 −
	// 1.94647005 − 2.0391591 = 88.70342085.
	wantTrade(t, r.Trades[1], "short", 2, 4, "110", "105", "18.53781", "3.98562915", "88.70342085", ReasonEnd)
	// 10000 + 195.8 + 88.70342085.
	testkit.EqualD(t, "final equity", r.Final, "10284.50342085")
}

func TestSpotIgnoresShortsButExitsLongs(t *testing.T) {
	cs := []marketdata.Candle{
		bar(0, "100", "100", "100", "100"),
		bar(1, "100", "100", "100", "100"),
		bar(2, "101", "101", "101", "101"),
		bar(3, "102", "102", "102", "102"),
		bar(4, "103", "103", "103", "103"),
	}
	sigs := map[int]strategy.Signal{
		0: strategy.EnterShort,                     // ignored on spot
		1: strategy.EnterLong,                      // long at 101
		2: strategy.EnterLong,                      // ignored: no pyramiding
		3: strategy.ExitLong | strategy.EnterShort, // closes the long at 103, no short
	}
	r, _ := runScript(t, spotBTC(), baseConfig(), cs, sigs)
	if len(r.Trades) != 1 {
		t.Fatalf("%d trades: %+v", len(r.Trades), r.Trades)
	}
	// amount floor(1000/101 = 9.900990…) = 9.90099: notional 999.99999, fee 0.99999999;
	// exit 9.90099 × 103 = 1019.80197, fee 1.01980197; gross 19.80198, net 17.78217804.
	wantTrade(t, r.Trades[0], "long", 2, 4, "101", "103", "9.90099", "2.01980196", "17.78217804", ReasonSignal)
}

func TestMinimumAmountRefusal(t *testing.T) {
	cs := []marketdata.Candle{bar(0, "100", "100", "100", "100"), bar(1, "100", "100", "100", "100"), bar(2, "100", "100", "100", "100")}
	// 10 % of 40 is 4 USDT, below the 5 USDT minimum notional: no entry.
	cfg := baseConfig()
	cfg.InitialBalance = decimal.NewFromInt(40)
	r, _ := runScript(t, spotBTC(), cfg, cs, map[int]strategy.Signal{0: strategy.EnterLong})
	if len(r.Trades) != 0 || !r.Final.Equal(decimal.NewFromInt(40)) {
		t.Fatalf("trades %+v final %s", r.Trades, r.Final)
	}
	// 6 % of 100 is 6 USDT: 0.06 BTC at 100, above the minimum: an entry.
	cfg.InitialBalance = decimal.NewFromInt(100)
	cfg.PositionSize = signal.Amount{Value: httpapi.Num(decimal.NewFromInt(6)), Percent: true}
	r, _ = runScript(t, spotBTC(), cfg, cs, map[int]strategy.Signal{0: strategy.EnterLong})
	if len(r.Trades) != 1 {
		t.Fatalf("6%% of 100: %d trades", len(r.Trades))
	}
	// A fixed 1 BTC at 100 costs 100.1 with its fee, more than the balance of 100: refused.
	cfg.PositionSize = signal.Amount{Value: httpapi.Num(decimal.NewFromInt(1))}
	r, _ = runScript(t, spotBTC(), cfg, cs, map[int]strategy.Signal{0: strategy.EnterLong})
	if len(r.Trades) != 0 {
		t.Fatalf("unaffordable fixed size: %d trades", len(r.Trades))
	}
}

func TestLiquidation(t *testing.T) {
	cfg := baseConfig()
	cfg.Leverage = 10
	cs := []marketdata.Candle{
		bar(0, "100", "100", "100", "100"),
		bar(1, "100", "100", "100", "100"),
		bar(2, "100", "100", "85", "90"),
		bar(3, "90", "90", "90", "90"),
	}
	r, _ := runScript(t, futBTC(), cfg, cs, map[int]strategy.Signal{0: strategy.EnterLong})
	if len(r.Trades) != 1 {
		t.Fatalf("%d trades", len(r.Trades))
	}
	// Long 100 at 100 (10 % of 10000 × 10 = 10000 of notional), margin 1000, fee 10.
	// Liquidation (cost − margin) / (size × 0.995) = 9000/99.5 = 90.45226131, so the tick
	// level 90.45; the falling candle reaches it on its way to 85. Gross 9045 − 10000 = −955,
	// exit fee 9.045, net −955 − 9.045 − 10 = −974.045.
	wantTrade(t, r.Trades[0], "long", 1, 2, "100", "90.45", "100", "19.045", "-974.045", ReasonLiquidation)
}

// TestBankruptLiquidationAtAGap: a gap past the liquidation closes at the open, and the
// loss beyond the margin is absorbed (position.Settle's capped credit).
func TestBankruptLiquidationAtAGap(t *testing.T) {
	cfg := baseConfig()
	cfg.Leverage = 10
	cs := []marketdata.Candle{
		bar(0, "100", "100", "100", "100"),
		bar(1, "100", "100", "100", "100"),
		bar(2, "80", "80", "80", "80"),
	}
	r, _ := runScript(t, futBTC(), cfg, cs, map[int]strategy.Signal{0: strategy.EnterLong})
	// Long 100 at 100: notional 10000, margin 1000, fee 10. Candle 2 opens at 80, below the
	// liquidation level 90.45: exit value 8000, exit fee 8; the credit 1000 − 2000 − 8 is
	// negative, so it is 0 and the gross the margin lost net of the exit fee, 8 − 1000 =
	// −992; net −992 − 8 − 10 = −1010 (the margin and the entry fee), fees 18.
	if len(r.Trades) != 1 {
		t.Fatalf("%d trades", len(r.Trades))
	}
	wantTrade(t, r.Trades[0], "long", 1, 2, "100", "80", "100", "18", "-1010", ReasonLiquidation)
	testkit.EqualD(t, "final", r.Final, "8990")
}

func TestEquityCurveSampling(t *testing.T) {
	// Candles at 23:58, 23:59 of 2023-12-31 and 00:00, 00:01 of 2024-01-01.
	d := decimal.RequireFromString
	mk := func(ts int64, p string) marketdata.Candle {
		return marketdata.Candle{Timestamp: ts, Time: ts / 1000, Open: d(p), High: d(p), Low: d(p), Close: d(p), Volume: d("1")}
	}
	cs := []marketdata.Candle{mk(base-120000, "100"), mk(base-60000, "100"), mk(base, "110"), mk(base+60000, "110")}
	r, _ := runScript(t, spotBTC(), baseConfig(), cs, map[int]strategy.Signal{0: strategy.EnterLong, 1: strategy.ExitLong})
	// Long 10 at 100 (fee 1) from 23:59, closed at 110 at midnight (fee 1.1): gross 100,
	// net 97.9. Points: the start, midnight (before the exit), the exit, the end (00:02).
	want := []struct {
		ts     int64
		equity string
	}{{base - 120000, "10000"}, {base, "10000"}, {base, "10097.9"}, {base + 120000, "10097.9"}}
	if len(r.Equity) != len(want) {
		t.Fatalf("equity %+v", r.Equity)
	}
	for i, w := range want {
		if p := r.Equity[i]; p.Timestamp != w.ts || !p.Equity.Equal(d(w.equity)) || !p.Drawdown.IsZero() {
			t.Fatalf("point %d: %+v, want %d %s", i, p, w.ts, w.equity)
		}
	}
	if r.Report.StartDate != "2023-12-31" || r.Report.EndDate != "2024-01-01" {
		t.Fatalf("report period %s to %s", r.Report.StartDate, r.Report.EndDate)
	}
}

func TestNewSeriesRefusals(t *testing.T) {
	ok := bar(0, "100", "101", "99", "100")
	cases := map[string][]marketdata.Candle{
		"off the tick":    {bar(0, "100.005", "101", "99", "100")},
		"not increasing":  {ok, bar(0, "100", "101", "99", "100")},
		"high below open": {bar(0, "100", "99.5", "99", "99")},
		"low above close": {bar(0, "100", "101", "99", "98")},
		"zero price":      {bar(0, "0", "101", "0", "100")},
		"empty":           {},
	}
	for name, cs := range cases {
		_, err := NewSeries(cs, spotBTC(), "1m")
		var e *errs.Error
		if !errors.As(err, &e) || e.Code != errs.InvalidParameter {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := NewSeries([]marketdata.Candle{ok}, spotBTC(), "2m"); err == nil {
		t.Error("bad timeframe accepted")
	}
	// A tick that is not a power of ten: 100.05 is 2001 ticks of 0.05, 100.02 is off it.
	odd := spotBTC()
	odd.TickSize = decimal.RequireFromString("0.05")
	if s, err := NewSeries([]marketdata.Candle{bar(0, "100.05", "100.1", "100", "100.05")}, odd, "1m"); err != nil || s.open[0] != 2001 {
		t.Fatalf("tick 0.05: %v", err)
	}
	if _, err := NewSeries([]marketdata.Candle{bar(0, "100.02", "100.1", "100", "100.05")}, odd, "1m"); err == nil {
		t.Fatal("100.02 accepted on a tick of 0.05")
	}
	// A gap is kept: candles 0 and 5.
	s, err := NewSeries([]marketdata.Candle{ok, bar(5, "100", "101", "99", "100")}, spotBTC(), "1m")
	if err != nil || s.Len() != 2 {
		t.Fatalf("gap: %v", err)
	}
}

func TestConfigChecks(t *testing.T) {
	s, err := NewSeries([]marketdata.Candle{bar(0, "100", "101", "99", "100")}, spotBTC(), "1m")
	if err != nil {
		t.Fatal(err)
	}
	neg := decimal.NewFromInt(-1)
	cases := map[string]func(*Config){
		"symbol":    func(c *Config) { c.Strategy.Symbol = "ETH/USDT" },
		"timeframe": func(c *Config) { c.Strategy.Timeframe = "5m" },
		"balance":   func(c *Config) { c.InitialBalance = neg },
		"leverage":  func(c *Config) { c.Leverage = 3 },
		"fee":       func(c *Config) { c.FeeRate = neg },
		"stop-loss": func(c *Config) {
			c.StopLoss = &signal.Amount{Value: httpapi.Num(decimal.NewFromInt(100)), Percent: true}
		},
		"offset":     func(c *Config) { c.LimitOffset = &neg },
		"parameters": func(c *Config) { c.Strategy.Params.FastPeriod = 0 },
	}
	for name, mod := range cases {
		cfg := baseConfig()
		mod(&cfg)
		if _, err := Run(context.Background(), s, cfg); errs.CodeOf(err) != errs.InvalidParameter {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// never is a strategy that never signals: a run with it is the candle loop alone.
type never struct{}

func (never) Warmup() int                       { return 1 }
func (never) Next(strategy.Bar) strategy.Signal { return strategy.None }

// TestLoopDoesNotAllocate: the candle loop allocates nothing per candle, with costs (the
// funding settlements passing every 8 hours) or without; what a run allocates is fixed,
// plus the equity point of each UTC day (1 in 1440 one-minute candles).
func TestLoopDoesNotAllocate(t *testing.T) {
	cs := make([]marketdata.Candle, 20000)
	for i := range cs {
		cs[i] = bar(i, "100", "101", "99", "100")
	}
	allocs := func(n int, costs bool) float64 {
		m := spotBTC()
		if costs {
			m = futBTC() // funding is a futures cost
		}
		s, err := NewSeries(cs[:n], m, "1m")
		if err != nil {
			t.Fatal(err)
		}
		cfg := baseConfig()
		if costs {
			cfg.Costs = venue()
			cfg.Costs.Slippage = &Slippage{Cap: testkit.D("0.005")}
			cfg.Costs.Funding = fundingFor(s, 1)
		}
		c, err := normalise(cfg, s)
		if err != nil {
			t.Fatal(err)
		}
		return testing.AllocsPerRun(5, func() {
			if _, ok, err := runWith(context.Background(), s, c, never{}, true); err != nil || !ok {
				t.Fatal(err, ok)
			}
		})
	}
	for _, costs := range []bool{false, true} {
		short, long := allocs(100, costs), allocs(20000, costs)
		// 20,000 candles cross 13 UTC midnights; a day's point costs a few allocations (its
		// decimals and the slice's growth).
		if per := (long - short) / 19900; per > 0.01 {
			t.Fatalf("costs %v: %.0f allocations on 100 candles, %.0f on 20,000: %.4f a candle", costs, short, long, per)
		}
	}
}

// TestTradeFromWarmsUpOnly: the candles before TradeFrom reach the strategy and nothing
// else: a signal decided at one of them is not carried out (the entry at candle 1), the
// signal of the last of them is, at TradeFrom's open (candle 3), and the report, the
// equity curve and Candles start at TradeFrom.
func TestTradeFromWarmsUpOnly(t *testing.T) {
	cs := []marketdata.Candle{
		bar(0, "100", "101", "99", "100"),
		bar(1, "100", "101", "99", "101"),
		bar(2, "105", "108", "104", "107"),
		bar(3, "107", "109", "106", "108"),
		bar(4, "99", "100", "98", "99"),
	}
	cfg := baseConfig()
	cfg.TradeFrom = cs[3].Timestamp
	r, spy := runScript(t, spotBTC(), cfg, cs, map[int]strategy.Signal{0: strategy.EnterLong, 1: strategy.ExitLong, 2: strategy.EnterLong})
	if len(spy.seen) != len(cs) {
		t.Fatalf("the strategy saw %d candles, want all %d", len(spy.seen), len(cs))
	}
	if len(r.Trades) != 1 {
		t.Fatalf("%d trades, want the one entered at TradeFrom: %+v", len(r.Trades), r.Trades)
	}
	if tr := r.Trades[0]; tr.EntryTime != cs[3].Timestamp || !tr.EntryPrice.Equal(cs[3].Open) || tr.Reason != ReasonEnd {
		t.Fatalf("trade %+v: want an entry at candle 3's open 107, closed at the end", tr)
	}
	if r.Candles != 2 || r.Equity[0].Timestamp != cs[3].Timestamp {
		t.Fatalf("Candles %d, first equity point at %d: want 2 and TradeFrom %d", r.Candles, r.Equity[0].Timestamp, cs[3].Timestamp)
	}
	cfg.TradeFrom = cs[4].Timestamp + 1
	s, err := NewSeries(cs, spotBTC(), "1m")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Run(context.Background(), s, cfg); errs.CodeOf(err) != errs.InvalidParameter {
		t.Fatalf("TradeFrom after the last candle: %v, want INVALID_PARAMETER", err)
	}
}

// TestSliceReadsOnlyItsCandles: a run on a Slice is the run on a series of those candles
// alone, to the byte.
func TestSliceReadsOnlyItsCandles(t *testing.T) {
	cs := make([]marketdata.Candle, 0, 400)
	for i := range 400 {
		p := 100 + (i*37)%23 - (i*11)%7
		o, c := decimal.NewFromInt(int64(p)), decimal.NewFromInt(int64(p+(i%5)-2))
		cs = append(cs, marketdata.Candle{Timestamp: int64(base + i*60000), Open: o, Close: c,
			High: decimal.Max(o, c).Add(decimal.NewFromInt(1)), Low: decimal.Min(o, c).Sub(decimal.NewFromInt(1)), Volume: decimal.NewFromInt(3)})
	}
	whole, err := NewSeries(cs, futBTC(), "1m")
	if err != nil {
		t.Fatal(err)
	}
	part, err := NewSeries(cs[100:300], futBTC(), "1m")
	if err != nil {
		t.Fatal(err)
	}
	cfg := baseConfig()
	cfg.Strategy.Params = strategy.Params{FastPeriod: 3, SlowPeriod: 8}
	cfg.TradeFrom = cs[150].Timestamp
	got, err := Run(context.Background(), whole.Slice(100, 300), cfg)
	if err != nil {
		t.Fatal(err)
	}
	want, err := Run(context.Background(), part, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(want.Trades) == 0 {
		t.Fatal("the script's candles gave no trades: the comparison shows nothing")
	}
	sameJSON(t, got, want)
}

// TestEndCloseAtMidnightIsReported: a series of 24 one-hour candles ends at a UTC midnight
// with a position open; the end-of-series close is booked at that midnight, the next day's
// first instant, and the report includes it: its total PnL is the final equity's gain.
func TestEndCloseAtMidnightIsReported(t *testing.T) {
	var cs []marketdata.Candle
	for i := range 24 {
		cs = append(cs, hbar(i, strconv.Itoa(100+i)))
	}
	cfg := baseConfig()
	cfg.Strategy.Timeframe = "1h"
	r, _ := runScriptTF(t, spotBTC(), "1h", cfg, cs, map[int]strategy.Signal{2: strategy.EnterLong})
	end := int64(base + 24*3600000)
	if len(r.Trades) != 1 || r.Trades[0].ExitTime != end || r.Trades[0].Reason != ReasonEnd {
		t.Fatalf("trades %+v: want one closed at the end, %d", r.Trades, end)
	}
	if gain := r.Final.Sub(decimal.NewFromInt(10000)); !r.Report.Metrics.TotalPnL.Equal(gain) || r.Report.Metrics.TotalTrades != 1 {
		t.Fatalf("report total %v over %d trades; the final equity gained %v", r.Report.Metrics.TotalPnL, r.Report.Metrics.TotalTrades, gain)
	}
}
