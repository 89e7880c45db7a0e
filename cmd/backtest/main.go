// Command backtest runs a built-in strategy over a candle file (runtime/backtest) and writes
// the generated candle fixture (runtime/backtest/candlegen).
//
//	backtest run --candles FILE.csv --family F [--timeframe 1m] [--symbol BTC/USDT]
//	    [--fast 12 --slow 26 [--signal-period 9] | --period 14 --oversold 30 --overbought 70 |
//	     --exit-period 10 | --std-dev 2 | --multiplier 3 | --params JSON] [--market spot|futures]
//	    [--balance 10000] [--size 10%]
//	    [--leverage 1] [--stop-loss 2%] [--take-profit 4%] [--fee 0.001] [--limit-offset 0.1]
//	    [--maker-fee 0.0002] [--taker-fee 0.0005] [--slippage-cap 0.005]
//	    [--funding-csv FUNDING.csv] [--json]
//	backtest generate [--seed 1] [--count 100000] [--symbol BTC/USDT] > FILE.csv
//
// Parameters not given take the family's defaults. The market's tick, step and minimums are
// the paper exchange's. run prints every analytics metric with the candles, trades, final
// equity and speed, or with --json the result as JSON (deterministic: the same file and
// flags give the same bytes).
//
// The cost model (backtest.Costs) is off unless one of its flags is given: --maker-fee and
// --taker-fee (each defaults to --fee's rate then), --slippage-cap (slippage by the
// candle's range and volume, capped at this fraction of the price), --funding-csv (a
// time,rate file of the perpetual's funding settlements, time in ms; futures only). With
// it on, the table adds the gross PnL, fees, slippage and funding, and the JSON a "costs"
// object and each trade's slippage and funding; without it, the output is what it was.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"text/tabwriter"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/backtest"
	"github.com/sigops/sigops/runtime/backtest/candlegen"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/strategy"
)

const usage = `usage: backtest run --candles FILE.csv --family F [flags]
       backtest generate [--seed N] [--count N] [--symbol BTC/USDT] > FILE.csv
`

func main() {
	if err := cli(context.Background(), os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "backtest:", err)
		}
		os.Exit(2)
	}
}

// cli runs one subcommand with its arguments.
func cli(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command")
	}
	switch args[0] {
	case "run":
		return run(ctx, args[1:], stdout, stderr)
	case "generate":
		return generate(args[1:], stdout, stderr)
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", args[0])
}

func generate(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("generate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	seed := fs.Uint64("seed", 1, "the series' seed")
	count := fs.Int("count", 100000, "number of one-minute candles")
	symbol := fs.String("symbol", "BTC/USDT", "a paper catalogue symbol")
	if err := fs.Parse(args); err != nil {
		return err
	}
	cs, err := candlegen.Generate(candlegen.Options{Seed: *seed, Count: *count, Symbol: *symbol})
	if err != nil {
		return err
	}
	return backtest.WriteCSV(stdout, cs)
}

// runFlags are run's flags.
type runFlags struct {
	candles, family, timeframe, symbol, market, params string
	balance, size, stopLoss, takeProfit, fee, offset   string
	makerFee, takerFee, slippageCap, fundingCSV        string
	outOfSample                                        int
	leverage                                           int
	asJSON                                             bool
	p                                                  strategy.Params
}

func (f *runFlags) bind(fs *flag.FlagSet) {
	fs.StringVar(&f.candles, "candles", "", "candle CSV file (timestamp,open,high,low,close,volume)")
	fs.StringVar(&f.family, "family", "", "emaCrossover, rsiReversion, donchianBreakout, bollingerReversion, macdCrossover or supertrend")
	fs.StringVar(&f.timeframe, "timeframe", "1m", "the candles' timeframe")
	fs.StringVar(&f.symbol, "symbol", "BTC/USDT", "the candles' symbol (a paper catalogue symbol)")
	fs.StringVar(&f.market, "market", "spot", "spot or futures")
	fs.StringVar(&f.params, "params", "", `parameters as JSON, e.g. {"fastPeriod":9,"slowPeriod":21}`)
	fs.IntVar(&f.p.FastPeriod, "fast", 0, "emaCrossover, macdCrossover fastPeriod")
	fs.IntVar(&f.p.SlowPeriod, "slow", 0, "emaCrossover, macdCrossover slowPeriod")
	fs.IntVar(&f.p.SignalPeriod, "signal-period", 0, "macdCrossover signalPeriod (the signal line's EMA period)")
	fs.IntVar(&f.p.Period, "period", 0, "rsiReversion, donchianBreakout, bollingerReversion period; supertrend ATR period")
	fs.Float64Var(&f.p.Oversold, "oversold", 0, "rsiReversion oversold level")
	fs.Float64Var(&f.p.Overbought, "overbought", 0, "rsiReversion overbought level")
	fs.IntVar(&f.p.ExitPeriod, "exit-period", 0, "donchianBreakout exitPeriod")
	fs.Float64Var(&f.p.StdDev, "std-dev", 0, "bollingerReversion stdDev")
	fs.Float64Var(&f.p.Multiplier, "multiplier", 0, "supertrend multiplier (the bands' distance in ATRs)")
	fs.StringVar(&f.balance, "balance", "10000", "initial quote balance")
	fs.StringVar(&f.size, "size", "10%", "position size: a percentage of the balance or a base amount")
	fs.IntVar(&f.leverage, "leverage", 1, "futures leverage")
	fs.StringVar(&f.stopLoss, "stop-loss", "", "stop-loss: a percentage from the entry or a price")
	fs.StringVar(&f.takeProfit, "take-profit", "", "take-profit: a percentage from the entry or a price")
	fs.StringVar(&f.fee, "fee", "0.001", "fee rate per fill")
	fs.StringVar(&f.offset, "limit-offset", "", "enter with limit orders this percentage beyond the signal close")
	fs.StringVar(&f.makerFee, "maker-fee", "", "cost model: fee rate of a limit entry filled at its price (default --fee)")
	fs.StringVar(&f.takerFee, "taker-fee", "", "cost model: fee rate of every other fill (default --fee)")
	fs.StringVar(&f.slippageCap, "slippage-cap", "", "cost model: slippage by range × amount / volume, capped at this fraction of the price")
	fs.StringVar(&f.fundingCSV, "funding-csv", "", "cost model: funding settlements, a time,rate CSV (time in ms; futures)")
	fs.BoolVar(&f.asJSON, "json", false, "print the result as JSON")
	fs.IntVar(&f.outOfSample, "out-of-sample", 0, "keep the last this percent (10-50) of the candles as an out-of-sample window, reported beside the in-sample one (0: one run over all)")
}

// config builds the experiment the flags describe.
func (f *runFlags) config() (backtest.Config, exchange.Kind, error) {
	spec := strategy.Spec{Family: strategy.Family(f.family), Timeframe: f.timeframe, Symbol: f.symbol}
	if f.params != "" {
		if err := json.Unmarshal([]byte(f.params), &spec.Params); err != nil {
			return backtest.Config{}, "", fmt.Errorf("--params: %w", err)
		}
	}
	// Flags given one by one win over --params.
	for _, r := range spec.Family.Ranges() {
		if v := f.p.Get(r.Name); v != 0 {
			spec.Params.Set(r.Name, v)
		}
	}
	spec = spec.WithDefaults()
	cfg := backtest.Config{Strategy: spec, Leverage: f.leverage}
	kind := exchange.Kind(f.market)
	if kind != exchange.Spot && kind != exchange.Futures {
		return cfg, "", fmt.Errorf("--market must be spot or futures")
	}
	var err error
	if cfg.InitialBalance, err = decimal.NewFromString(f.balance); err != nil {
		return cfg, "", fmt.Errorf("--balance: %w", err)
	}
	if cfg.FeeRate, err = decimal.NewFromString(f.fee); err != nil {
		return cfg, "", fmt.Errorf("--fee: %w", err)
	}
	size, err := order.ParseAmount(f.size)
	if err != nil || size == nil {
		return cfg, "", fmt.Errorf("--size: %q is not an amount or percentage", f.size)
	}
	cfg.PositionSize = *size
	if cfg.StopLoss, err = order.ParseAmount(f.stopLoss); err != nil {
		return cfg, "", fmt.Errorf("--stop-loss: %w", err)
	}
	if cfg.TakeProfit, err = order.ParseAmount(f.takeProfit); err != nil {
		return cfg, "", fmt.Errorf("--take-profit: %w", err)
	}
	if f.offset != "" {
		o, err := decimal.NewFromString(f.offset)
		if err != nil {
			return cfg, "", fmt.Errorf("--limit-offset: %w", err)
		}
		cfg.LimitOffset = &o
	}
	if cfg.Costs, err = f.costs(cfg.FeeRate); err != nil {
		return cfg, "", err
	}
	if cfg.Costs != nil {
		// Costs' rates replace the single fee rate.
		cfg.FeeRate = decimal.Zero
	}
	return cfg, kind, nil
}

// costs is the cost model the flags describe, nil when none of its flags is given; fee is
// --fee's rate, the maker and taker rates' default.
func (f *runFlags) costs(fee decimal.Decimal) (*backtest.Costs, error) {
	if f.makerFee == "" && f.takerFee == "" && f.slippageCap == "" && f.fundingCSV == "" {
		return nil, nil
	}
	c := &backtest.Costs{MakerFee: fee, TakerFee: fee}
	var err error
	for _, x := range [...]struct {
		name, v string
		dst     *decimal.Decimal
	}{{"maker-fee", f.makerFee, &c.MakerFee}, {"taker-fee", f.takerFee, &c.TakerFee}} {
		if x.v == "" {
			continue
		}
		if *x.dst, err = decimal.NewFromString(x.v); err != nil {
			return nil, fmt.Errorf("--%s: %w", x.name, err)
		}
	}
	if f.slippageCap != "" {
		c.Slippage = &backtest.Slippage{}
		if c.Slippage.Cap, err = decimal.NewFromString(f.slippageCap); err != nil {
			return nil, fmt.Errorf("--slippage-cap: %w", err)
		}
	}
	if f.fundingCSV != "" {
		file, err := os.Open(f.fundingCSV)
		if err != nil {
			return nil, fmt.Errorf("--funding-csv: %w", err)
		}
		defer file.Close()
		if c.Funding, err = backtest.ReadFundingCSV(file); err != nil {
			return nil, fmt.Errorf("--funding-csv: %w", err)
		}
	}
	return c, nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var f runFlags
	f.bind(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if f.candles == "" || f.family == "" {
		fs.Usage()
		return errors.New("--candles and --family are required")
	}
	cfg, kind, err := f.config()
	if err != nil {
		return err
	}
	m, ok := paper.Market(kind, f.symbol)
	if !ok {
		return fmt.Errorf("--symbol %q is not in the paper %s catalogue", f.symbol, kind)
	}
	file, err := os.Open(f.candles)
	if err != nil {
		return err
	}
	defer file.Close()
	cs, err := backtest.ReadCSV(file)
	if err != nil {
		return err
	}
	s, err := backtest.NewSeries(cs, m, f.timeframe)
	if err != nil {
		return err
	}
	if f.outOfSample != 0 {
		return split(ctx, stdout, s, cfg, f.outOfSample, f.asJSON)
	}
	start := time.Now()
	r, err := backtest.Run(ctx, s, cfg)
	if err != nil {
		return err
	}
	elapsed := time.Since(start)
	if f.asJSON {
		b, err := r.JSON()
		if err != nil {
			return err
		}
		_, err = stdout.Write(append(b, '\n'))
		return err
	}
	return table(stdout, r, elapsed)
}

// split runs cfg on the in-sample and the out-of-sample window of s (the last pct percent
// of the candles, as the Strategy Lab splits a job's period) and prints both: two tables
// under their names, or JSON {"inSample": …, "outOfSample": …}.
func split(ctx context.Context, w io.Writer, s *backtest.Series, cfg backtest.Config, pct int, asJSON bool) error {
	if pct < 10 || pct > 50 {
		return fmt.Errorf("--out-of-sample must be 10 to 50 (got %d)", pct)
	}
	at := backtest.SplitAt(s.Len(), pct)
	if at == 0 || at == s.Len() {
		return fmt.Errorf("%d candles are too few to split", s.Len())
	}
	var parts [2]backtest.Result
	var took [2]time.Duration
	for i, win := range [2][2]int{{0, at}, {at, s.Len()}} {
		start := time.Now()
		r, err := backtest.RunWindow(ctx, s, cfg, win[0], win[1])
		if err != nil {
			return err
		}
		parts[i], took[i] = r, time.Since(start)
	}
	if asJSON {
		var js [2][]byte
		for i, r := range parts {
			b, err := r.JSON()
			if err != nil {
				return err
			}
			js[i] = b
		}
		_, err := fmt.Fprintf(w, "{\"inSample\":%s,\"outOfSample\":%s}\n", js[0], js[1])
		return err
	}
	for i, name := range [2]string{"in-sample", "out-of-sample"} {
		fmt.Fprintf(w, "%s\n", name)
		if err := table(w, parts[i], took[i]); err != nil {
			return err
		}
	}
	return nil
}

// table prints the result's figures, one a line.
func table(w io.Writer, r backtest.Result, elapsed time.Duration) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	m := r.Report.Metrics
	rows := []struct{ k, v string }{
		{"period", r.Report.StartDate + " to " + r.Report.EndDate},
		{"candles", fmt.Sprint(r.Candles)},
		{"trades", fmt.Sprint(len(r.Trades))},
		{"winning trades", fmt.Sprint(m.WinningTrades)},
		{"losing trades", fmt.Sprint(m.LosingTrades)},
		{"win rate", r.Report.Formatted.WinRate},
		{"total PnL", m.TotalPnL.String()},
		{"total PnL %", fmt.Sprintf("%.4f", m.TotalPnLPercent)},
		{"average win", m.AvgWin.String()},
		{"average loss", m.AvgLoss.String()},
		{"profit factor", r.Report.Formatted.ProfitFactor},
		{"max drawdown", m.MaxDrawdown.String()},
		{"max drawdown %", fmt.Sprintf("%.4f", m.MaxDrawdownPercent)},
		{"Sharpe ratio", fmt.Sprintf("%.4f", m.SharpeRatio)},
		{"final equity", r.Final.String()},
	}
	if c := r.Costs; c != nil {
		// Gross − fees − funding is the total PnL; the slippage is inside the gross.
		rows = append(rows, []struct{ k, v string }{{"gross PnL", c.GrossPnl.String()}, {"fees", c.Fees.String()},
			{"slippage (in gross PnL)", c.Slippage.String()}, {"funding paid", c.Funding.String()}}...)
	}
	rows = append(rows, struct{ k, v string }{"candles/s", fmt.Sprintf("%.0f", float64(r.Candles)/max(elapsed.Seconds(), 1e-9))})
	for _, row := range rows {
		fmt.Fprintf(tw, "%s\t%s\n", row.k, row.v)
	}
	return tw.Flush()
}
