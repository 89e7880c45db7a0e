package backtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/backtest/candlegen"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/strategy"
)

// pick is one of xs.
func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// randomParams are parameters of f drawn from its ranges (the defaults when a few draws
// break a cross-field rule).
func randomParams(r *rand.Rand, f strategy.Family) strategy.Params {
	for range 20 {
		var p strategy.Params
		for _, rg := range f.Ranges() {
			// Periods up to 60 keep the indicators warm enough to trade on short series.
			hi := rg.Max
			if rg.Integer {
				hi = min(hi, 60)
			}
			v := rg.Min + float64(r.IntN(int((hi-rg.Min)/rg.Step)+1))*rg.Step
			p.Set(rg.Name, v)
		}
		if (strategy.Spec{Family: f, Timeframe: "1m", Symbol: "BTC/USDT", Params: p}).Validate() == nil {
			return p
		}
	}
	return f.Defaults()
}

// randomCase is a seeded experiment: a generated series on a paper market (its tick and
// step, or finer ones) and a config drawn across families, parameters, spot and futures,
// leverage 1–20, stop-losses and take-profits (percentages and prices), limit entries,
// balances, sizes and fee rates.
func randomCase(t *testing.T, seed uint64) (*Series, Config) {
	t.Helper()
	r := rand.New(rand.NewPCG(seed, 7))
	d := decimal.RequireFromString
	sym := pick(r, "BTC/USDT", "ETH/USDT", "DOGE/USDT", "XRP/USDT", "SOL/USDT")
	cs, err := candlegen.Generate(candlegen.Options{Seed: seed, Count: 1500 + r.IntN(2500), Symbol: sym})
	if err != nil {
		t.Fatal(err)
	}
	kind := pick(r, exchange.Spot, exchange.Futures, exchange.Futures)
	m, _ := paper.Market(kind, sym)
	switch r.IntN(7) {
	case 0: // a finer tick and step
		m.TickSize, m.StepSize, m.MinQty = m.TickSize.Shift(-1), m.StepSize.Shift(-2), m.StepSize.Shift(-2)
	case 1: // a tick beyond 8 places: the decimal path only
		m.TickSize = d("0.000000001")
	case 2: // a tick that is not a power of ten: the decimal path only
		m.TickSize = m.TickSize.Mul(d("5"))
		for i := range cs {
			for _, p := range []*decimal.Decimal{&cs[i].Open, &cs[i].High, &cs[i].Low, &cs[i].Close} {
				*p = p.Div(m.TickSize).Floor().Mul(m.TickSize).Add(m.TickSize)
			}
			cs[i].High = decimal.Max(cs[i].High, cs[i].Open, cs[i].Close)
			cs[i].Low = decimal.Min(cs[i].Low, cs[i].Open, cs[i].Close)
		}
	case 3: // an odd minimum notional and quantity
		m.MinNotional, m.MinQty = d("7.35"), m.StepSize.Mul(d("3"))
	case 4, 5: // gaps of up to ±12 % every few hundred candles: liquidations, bankrupt closes
		f := decimal.NewFromInt(1)
		for i := range cs {
			if i > 0 && r.IntN(300) == 0 {
				f = f.Mul(decimal.NewFromInt(int64(88 + r.IntN(25)))).Div(decimal.NewFromInt(100))
			}
			for _, p := range []*decimal.Decimal{&cs[i].Open, &cs[i].High, &cs[i].Low, &cs[i].Close} {
				*p = decimal.Max(m.RoundPrice(p.Mul(f)), m.TickSize)
			}
		}
	}
	s, err := NewSeries(cs, m, "1m")
	if err != nil {
		t.Fatal(err)
	}
	f := pick(r, strategy.Families()...)
	cfg := Config{Strategy: strategy.Spec{Family: f, Timeframe: "1m", Symbol: sym, Params: randomParams(r, f)}}
	cfg.InitialBalance = pick(r, d("0"), d("10000"), d("123.45"), d("50"), d("987654.321"), d("1000000000"), d("0.00012345"), d("25000.5"))
	switch r.IntN(4) {
	case 0:
	case 1:
		cfg.PositionSize = signal.Amount{Value: httpapi.Num(d("100")), Percent: true}
	case 2:
		cfg.PositionSize = signal.Amount{Value: httpapi.Num(d(pick(r, "12.5", "3", "50", "0.37", "99.999", "33.3333333333"))), Percent: true}
	case 3:
		cfg.PositionSize = signal.Amount{Value: httpapi.Num(s.price(s.close[0]).Shift(-3).Mul(d(pick(r, "0.0001", "0.01", "0.5"))).Round(6))}
		if !cfg.PositionSize.Value.IsPositive() {
			cfg.PositionSize.Value = httpapi.Num(d("1"))
		}
	}
	if kind == exchange.Futures {
		cfg.Leverage = pick(r, 0, 1, 1+r.IntN(20), 1+r.IntN(20), 20)
	}
	exit := func(stopLoss bool) *signal.Amount {
		switch r.IntN(4) {
		case 0:
			return nil
		case 1, 2:
			return &signal.Amount{Value: httpapi.Num(d(pick(r, "0.5", "1", "2", "0.137", "7.25", "3.33333"))), Percent: true}
		}
		// An absolute price near the first close: most entries are refused by the side
		// check or trigger at once.
		f := d("0.97")
		if !stopLoss {
			f = d("1.03")
		}
		return &signal.Amount{Value: httpapi.Num(s.price(s.close[0]).Mul(f).Round(3))}
	}
	cfg.StopLoss, cfg.TakeProfit = exit(true), exit(false)
	cfg.FeeRate = d(pick(r, "0", "0.001", "0.0004", "0.00075", "0.000123", "0.002"))
	if r.IntN(3) == 0 {
		o := d(pick(r, "0", "0.1", "0.05", "1.25", "0.0333"))
		cfg.LimitOffset = &o
	}
	randomCosts(&cfg, s, seed)
	return s, cfg
}

// randomCosts gives half the cases a cost model (maker and taker rates, slippage caps,
// funding series), drawn from a generator of their own so that the rest of a seed's case
// is what it was before costs existed.
func randomCosts(cfg *Config, s *Series, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 11))
	if r.IntN(2) == 0 {
		return
	}
	d := decimal.RequireFromString
	k := &Costs{MakerFee: d(pick(r, "0", "0.0002", "0.0001", "0.00015")), TakerFee: d(pick(r, "0", "0.0005", "0.0004", "0.00075", "0.001"))}
	if r.IntN(3) != 0 {
		k.Slippage = &Slippage{Cap: d(pick(r, "0.005", "0.001", "0", "0.0123", "0.05"))}
	}
	if r.IntN(3) != 0 {
		k.Funding = fundingFor(s, seed)
	}
	cfg.FeeRate, cfg.Costs = decimal.Zero, k
}

// fundingFor is a funding series for s: a settlement every 8 hours from its first candle's
// open to past its end, with deterministic rates of 4 to 8 decimals, mostly positive.
func fundingFor(s *Series, seed uint64) []marketdata.FundingRate {
	r := rand.New(rand.NewPCG(seed, 13))
	const h8 = 8 * 3600000
	var out []marketdata.FundingRate
	for at := s.ts[0]; at <= s.ts[len(s.ts)-1]+h8; at += h8 {
		// −0.0003 to 0.0008 in millionths, then at 4 to 8 places.
		micro, places := int64(r.IntN(1101))-300, 4+r.IntN(5)
		v := micro / int64(pow10[max(6-places, 0)])
		if places > 6 {
			v = micro*int64(pow10[places-6]) + int64(r.IntN(int(pow10[places-6])))
		}
		out = append(out, marketdata.FundingRate{Time: at, Rate: decimal.New(v, -int32(places))})
	}
	return out
}

// mustRun runs cfg on s on both money paths, requires the same bytes when the ledger takes
// it, and returns the decimal path's result.
func mustRun(t *testing.T, s *Series, cfg Config) Result {
	t.Helper()
	c, err := normalise(cfg, s)
	if err != nil {
		t.Fatal(err)
	}
	run := func(fx bool) (Result, bool) {
		st, err := strategy.New(c.Strategy)
		if err != nil {
			t.Fatal(err)
		}
		r, ok, err := runWith(context.Background(), s, c, st, fx)
		if err != nil {
			t.Fatal(err)
		}
		return r, ok
	}
	want, _ := run(false)
	if got, ok := run(true); ok {
		sameJSON(t, got, want)
	}
	return want
}

// TestLedgerMatchesDecimal: over many seeded random experiments the integer ledger's
// result is the decimal path's, byte for byte in Result.JSON, and Run (the ledger, with
// its fallback) gives it too; the experiments reach every reason a strategy's trade closes
// for (reversals come from scripts: TestFuturesReversalWithLeverage, like every fill test, runs both paths), and the fallback for configs the ledger refuses. Half of them have
// a cost model (randomCosts), whose figures must add up.
func TestLedgerMatchesDecimal(t *testing.T) {
	n := 400
	if testing.Short() {
		n = 60
	}
	reasons := map[string]int{}
	var fixed, refused, trades, costed, costedFixed int
	for seed := range uint64(n) {
		s, cfg := randomCase(t, seed+1)
		c, err := normalise(cfg, s)
		if err != nil {
			t.Fatalf("seed %d: %v", seed+1, err)
		}
		run := func(fx bool) (Result, bool) {
			st, err := strategy.New(c.Strategy)
			if err != nil {
				t.Fatal(err)
			}
			r, ok, err := runWith(context.Background(), s, c, st, fx)
			if err != nil {
				t.Fatal(err)
			}
			return r, ok
		}
		want, _ := run(false)
		got, ok := run(true)
		label := fmt.Sprintf("seed %d (%s %s, %+v)", seed+1, s.market.Kind, s.market.Symbol, cfg)
		if ok {
			fixed++
			if cfg.Costs != nil {
				costedFixed++
			}
			t.Run(fmt.Sprint(seed+1), func(t *testing.T) { sameJSON(t, got, want) })
		} else {
			refused++
		}
		viaRun, err := Run(context.Background(), s, cfg)
		if err != nil {
			t.Fatal(label, err)
		}
		sameJSON(t, viaRun, want)
		if cfg.Costs != nil {
			costed++
			costsAddUp(t, want, initialOf(cfg))
		}
		for _, tr := range want.Trades {
			reasons[tr.Reason]++
		}
		trades += len(want.Trades)
	}
	t.Logf("%d experiments on the ledger, %d on decimals only, %d with costs (%d on the ledger); %d trades; reasons %v",
		fixed, refused, costed, costedFixed, trades, reasons)
	if fixed < n/2 || refused == 0 || costedFixed < costed/2 {
		t.Fatalf("%d on the ledger, %d refused: the cases do not exercise both paths", fixed, refused)
	}
	if testing.Short() {
		return // 60 cases need not reach a liquidation; the full run checks every reason
	}
	for _, r := range []string{ReasonSignal, ReasonStopLoss, ReasonTakeProfit, ReasonLiquidation, ReasonEnd} {
		if reasons[r] == 0 {
			t.Fatalf("no trade closed by %s: %v", r, reasons)
		}
	}
}

// TestLedgerMatchesDecimalWithCosts: on the 100,000 generated candles (futures), with
// maker and taker fees, slippage and funding on, the integer ledger takes every config
// and gives the decimal path's result to the byte; the costs add up.
func TestLedgerMatchesDecimalWithCosts(t *testing.T) {
	cs, err := candlegen.Generate(candlegen.Options{Seed: 1, Count: 100000, Symbol: "BTC/USDT"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := NewSeries(cs, futBTC(), "1m")
	if err != nil {
		t.Fatal(err)
	}
	d := decimal.RequireFromString
	pct := func(v string) *signal.Amount { return &signal.Amount{Value: httpapi.Num(d(v)), Percent: true} }
	off := d("0.05")
	funding := fundingFor(s, 1)
	cases := []struct {
		name string
		f    strategy.Family
		mod  func(*Config)
	}{
		{"leverage 1", strategy.EMACrossover, func(*Config) {}},
		{"leverage 5 stop-loss take-profit", strategy.DonchianBreakout, func(c *Config) {
			c.Leverage, c.StopLoss, c.TakeProfit = 5, pct("1"), pct("2")
		}},
		{"leverage 3 limit entries stop-loss", strategy.BollingerReversion, func(c *Config) {
			c.Leverage, c.LimitOffset, c.StopLoss = 3, &off, pct("0.5")
		}},
		{"leverage 20 liquidations", strategy.RSIReversion, func(c *Config) { c.Leverage = 20 }},
		{"all in, a wide cap", strategy.EMACrossover, func(c *Config) {
			c.PositionSize, c.Costs.Slippage.Cap = *pct("100"), d("0.05")
		}},
		{"fixed amount, limit entries, take-profit", strategy.DonchianBreakout, func(c *Config) {
			c.PositionSize = signal.Amount{Value: httpapi.Num(d("0.05"))}
			c.LimitOffset, c.TakeProfit, c.Leverage = &off, pct("0.7"), 2
		}},
		{"funding only", strategy.BollingerReversion, func(c *Config) {
			c.Costs.MakerFee, c.Costs.TakerFee, c.Costs.Slippage = decimal.Zero, decimal.Zero, nil
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := baseConfig()
			cfg.Strategy.Family, cfg.Strategy.Params = tc.f, tc.f.Defaults()
			cfg.Costs = &Costs{MakerFee: d("0.0002"), TakerFee: d("0.0005"), Slippage: &Slippage{Cap: d("0.005")}, Funding: funding}
			tc.mod(&cfg)
			c, err := normalise(cfg, s)
			if err != nil {
				t.Fatal(err)
			}
			if newLedger(s, c) == nil {
				t.Fatal("the ledger refuses the config")
			}
			r := mustRun(t, s, cfg)
			costsAddUp(t, r, DefaultInitialBalance)
			sides := map[string]int{}
			for _, tr := range r.Trades {
				sides[tr.Side]++
			}
			b := r.Costs
			t.Logf("%d trades %v; gross %s, fees %s, slippage %s, funding %s", len(r.Trades), sides, b.GrossPnl, b.Fees, b.Slippage, b.Funding)
			if sides["long"] == 0 || sides["short"] == 0 || b.Funding.IsZero() {
				t.Fatalf("%d trades %v, funding %s: the case exercises too little", len(r.Trades), sides, b.Funding)
			}
		})
	}
}

// TestLedgerRefuses: the ledger takes the paper markets' configs and refuses what it cannot
// hold exactly: a tick that is not a power of ten or beyond 8 places, a balance beyond
// int64 at the money scale, a stop-loss percentage past 14 places, a funding rate or a
// slippage cap past 18.
func TestLedgerRefuses(t *testing.T) {
	d := decimal.RequireFromString
	cs := []marketdata.Candle{bar(0, "100", "101", "99", "100")}
	mk := func(m exchange.MarketInfo, cfg Config) *ledger {
		s, err := NewSeries(cs, m, "1m")
		if err != nil {
			t.Fatal(err)
		}
		c, err := normalise(cfg, s)
		if err != nil {
			t.Fatal(err)
		}
		return newLedger(s, c)
	}
	l := mk(futBTC(), baseConfig())
	// BTC: tick 0.01, step 0.00001, fee 0.001: money at 5 + 2 + 3 = 10 places.
	if l == nil || l.scale != 10 || l.balance != 10000*1e10 {
		t.Fatalf("ledger %+v", l)
	}
	cfg := baseConfig()
	cfg.Leverage = 3
	// A margin takes 8 places; the fee product's 10 is more.
	if l := mk(futBTC(), cfg); l == nil || l.scale != 10 {
		t.Fatalf("ledger %+v", l)
	}
	odd := futBTC()
	odd.TickSize = d("0.5")
	fine := futBTC()
	fine.TickSize = d("0.000000001")
	big := baseConfig()
	big.InitialBalance = d("1000000000") // 10^9 × 10^10 > 2^63
	sl := baseConfig()
	sl.StopLoss = &signal.Amount{Value: httpapi.Num(d("1.000000000000001")), Percent: true}
	// Costs: maker 0.0002 and taker 0.0005 at 4 places (5 + 2 + 4 = 11); funding payments
	// are rounded to 8 places, which the scale already has, whatever the rates' places.
	costs := baseConfig()
	costs.Costs = &Costs{MakerFee: d("0.0002"), TakerFee: d("0.0005"), Slippage: &Slippage{Cap: d("0.005")},
		Funding: []marketdata.FundingRate{{Time: base, Rate: d("0.00012345")}, {Time: base + 1, Rate: d("-0.00000001")}}}
	if l := mk(futBTC(), costs); l == nil || l.scale != 11 || l.dF != 4 || l.taker != 5 || l.maker != 2 || l.dR != 8 ||
		l.rates[0] != 12345 || l.rates[1] != -1 || !l.slip || l.capN != 5 || l.dC != 3 {
		t.Fatalf("ledger %+v", l)
	}
	fineRate, fineCap := costs, costs
	fineRate.Costs = &Costs{Funding: []marketdata.FundingRate{{Time: base, Rate: d("0.0000000000000000001")}}}
	fineCap.Costs = &Costs{Slippage: &Slippage{Cap: d("0.0000000000000000001")}}
	for name, l := range map[string]*ledger{"tick 0.5": mk(odd, baseConfig()), "tick 1e-9": mk(fine, baseConfig()),
		"balance 1e9": mk(futBTC(), big), "stop-loss 15 places": mk(futBTC(), sl),
		"funding rate 19 places": mk(futBTC(), fineRate), "slippage cap 19 places": mk(futBTC(), fineCap)} {
		if l != nil {
			t.Fatalf("%s: the ledger takes it", name)
		}
	}
}

// TestQuo: the ledger's division rounds as the decimal library's Div (16 places) followed
// by a rounding down or up, by hand.
func TestQuo(t *testing.T) {
	var l ledger
	for _, c := range []struct {
		n      int64
		up     int
		d      int64
		digits int
		ceil   bool
		want   int64
	}{
		// 2/3 at 16 places is 0.6666666666666667: floored to the unit 0, ceiled 1.
		{2, 0, 3, 0, false, 0},
		{2, 0, 3, 0, true, 1},
		// 1 − 10^-17 = (10^17 − 1)/10^17 rounds at 16 places to 1.0000000000000000: floored
		// to the unit it is 1, not 0.
		{1e17 - 1, 0, 1e17, 0, false, 1},
		// 1 + 10^-17 rounds to 1: ceiled it stays 1 (the exact value would give 2).
		{1e17 + 1, 0, 1e17, 0, true, 1},
		// 1 + 5·10^-17 rounds half up to 1.0000000000000001: ceiled 2.
		{1e17 + 5, 0, 1e17, 0, true, 2},
		// At 8 digits (a margin in 10^-8 units) the rounding is at 8 more places:
		// 7/3 × 10^8 = 233333333.33333333|33 → 233333333.33333333, ceiled 233333334.
		{7, 8, 3, 8, true, 233333334},
		// 10 × 10^8 / 4 is exact: 250000000 either way.
		{10, 8, 4, 8, true, 250000000},
	} {
		if got := l.quo(c.n, c.up, c.d, c.digits, c.ceil); got != c.want || l.failed {
			t.Fatalf("quo(%d·10^%d / %d, %d digits, ceil %v) = %d (failed %v), want %d", c.n, c.up, c.d, c.digits, c.ceil, got, l.failed, c.want)
		}
	}
	if l.quo(1<<62, 18, 3, 0, false); !l.failed {
		t.Fatal("a quotient beyond int64 does not fail")
	}
}
