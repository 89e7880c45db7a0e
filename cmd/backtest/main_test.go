package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/strategy"
)

var update = flag.Bool("update", false, "rewrite testdata/run.golden.json")

// fixture writes 3000 generated BTC/USDT candles (seed 1) to a file through the generate
// command.
func fixture(t *testing.T) string {
	t.Helper()
	var out bytes.Buffer
	if err := cli(context.Background(), []string{"generate", "--seed", "1", "--count", "3000"}, &out, os.Stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(out.String(), "timestamp,open,high,low,close,volume\n1704067200000,65000,") {
		t.Fatalf("generate wrote %q", out.String()[:80])
	}
	path := filepath.Join(t.TempDir(), "candles.csv")
	if err := os.WriteFile(path, out.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

type trade struct {
	Side       string          `json:"side"`
	EntryPrice decimal.Decimal `json:"entryPrice"`
	ExitPrice  decimal.Decimal `json:"exitPrice"`
	Amount     decimal.Decimal `json:"amount"`
	Fees       decimal.Decimal `json:"fees"`
	NetPnl     decimal.Decimal `json:"netPnl"`
	Reason     string          `json:"reason"`
}

// TestRunJSON runs a futures Donchian experiment with a stop-loss on the fixture and compares
// the JSON with the golden file byte for byte; the figures in it are checked against each
// other from first principles, so the golden cannot hold wrong figures.
func TestRunJSON(t *testing.T) {
	path := fixture(t)
	args := []string{"run", "--candles", path, "--family", "donchianBreakout", "--period", "30", "--exit-period", "15",
		"--market", "futures", "--leverage", "2", "--stop-loss", "0.3%", "--json"}
	var out bytes.Buffer
	if err := cli(context.Background(), args, &out, os.Stderr); err != nil {
		t.Fatal(err)
	}
	golden := filepath.Join("testdata", "run.golden.json")
	if *update {
		if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Fatalf("output differs from %s (go test ./cmd/backtest -update rewrites it after a deliberate change)", golden)
	}
	var r struct {
		Candles int             `json:"candles"`
		Final   decimal.Decimal `json:"finalEquity"`
		Trades  []trade         `json:"trades"`
		Report  struct {
			Metrics struct {
				TotalTrades int             `json:"totalTrades"`
				TotalPnL    decimal.Decimal `json:"totalPnL"`
			} `json:"metrics"`
		} `json:"report"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.Candles != 3000 || len(r.Trades) < 5 || r.Report.Metrics.TotalTrades != len(r.Trades) {
		t.Fatalf("%d candles, %d trades, report counts %d", r.Candles, len(r.Trades), r.Report.Metrics.TotalTrades)
	}
	rate := decimal.RequireFromString("0.001")
	sum := decimal.Zero
	reasons := map[string]int{}
	for i, tr := range r.Trades {
		// One entry and one full exit: fees = amount × (entry + exit) × rate; the net is the
		// price move times the amount, minus the fees (no trade here lost its whole margin).
		fees := tr.Amount.Mul(tr.EntryPrice.Add(tr.ExitPrice)).Mul(rate)
		move := tr.ExitPrice.Sub(tr.EntryPrice)
		if tr.Side == "short" {
			move = move.Neg()
		}
		if !tr.Fees.Equal(fees) || !tr.NetPnl.Equal(move.Mul(tr.Amount).Sub(fees)) {
			t.Fatalf("trade %d: %+v: fees want %s, net want %s", i, tr, fees, move.Mul(tr.Amount).Sub(fees))
		}
		// A stop-loss exit is 0.3 % from the entry, rounded down to the cent (or the open
		// of a candle that gapped past it).
		if tr.Reason == "stop_loss" && tr.Side == "long" && tr.ExitPrice.GreaterThan(tr.EntryPrice.Mul(decimal.RequireFromString("0.997"))) {
			t.Fatalf("trade %d: long stopped at %s above 99.7%% of %s", i, tr.ExitPrice, tr.EntryPrice)
		}
		reasons[tr.Reason]++
		sum = sum.Add(tr.NetPnl)
	}
	if !r.Final.Equal(decimal.NewFromInt(10000).Add(sum)) || !r.Report.Metrics.TotalPnL.Equal(sum) {
		t.Fatalf("final %s, total PnL %s; trades sum to %s", r.Final, r.Report.Metrics.TotalPnL, sum)
	}
	if reasons["stop_loss"] == 0 || reasons["signal"]+reasons["reversal"] == 0 {
		t.Fatalf("exit reasons %v: want stops and signal exits", reasons)
	}
}

func TestRunTable(t *testing.T) {
	path := fixture(t)
	var out bytes.Buffer
	if err := cli(context.Background(), []string{"run", "--candles", path, "--family", "emaCrossover", "--fast", "9", "--slow", "21"}, &out, os.Stderr); err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"candles         3000", "trades", "win rate", "total PnL", "profit factor", "max drawdown %", "Sharpe ratio", "final equity", "candles/s"} {
		if !strings.Contains(out.String(), row) {
			t.Errorf("no %q in\n%s", row, out.String())
		}
	}
}

func TestRunRefusals(t *testing.T) {
	path := fixture(t)
	for _, args := range [][]string{
		{"run", "--family", "emaCrossover"},
		{"run", "--candles", path, "--family", "emaCrossover", "--fast", "30", "--slow", "20"},
		{"run", "--candles", path, "--family", "nope"},
		{"run", "--candles", path, "--family", "emaCrossover", "--market", "margin"},
		{"run", "--candles", path, "--family", "emaCrossover", "--symbol", "NOPE/USDT"},
		{"run", "--candles", path, "--family", "macdCrossover", "--signal-period", "1"},
		{"run", "--candles", path, "--family", "supertrend", "--multiplier", "10.5"},
		{"frobnicate"},
	} {
		if err := cli(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

// The new families' flags reach their parameters; the others take the defaults.
func TestRunFlagsOfMACDAndSupertrend(t *testing.T) {
	path := fixture(t)
	cases := []struct {
		args []string
		want strategy.Params
	}{
		{[]string{"--family", "macdCrossover", "--fast", "8", "--signal-period", "5"},
			strategy.Params{FastPeriod: 8, SlowPeriod: 26, SignalPeriod: 5}},
		{[]string{"--family", "supertrend", "--period", "7", "--multiplier", "2.5"}, strategy.Params{Period: 7, Multiplier: 2.5}},
		{[]string{"--family", "supertrend", "--params", `{"multiplier":4}`}, strategy.Params{Period: 10, Multiplier: 4}},
	}
	for _, c := range cases {
		var f runFlags
		fs := flag.NewFlagSet("run", flag.ContinueOnError)
		f.bind(fs)
		if err := fs.Parse(append([]string{"--candles", path}, c.args...)); err != nil {
			t.Fatal(err)
		}
		cfg, _, err := f.config()
		if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if cfg.Strategy.Params != c.want {
			t.Errorf("%v: params %+v, want %+v", c.args, cfg.Strategy.Params, c.want)
		}
		var out bytes.Buffer
		if err := cli(context.Background(), append([]string{"run", "--candles", path}, c.args...), &out, os.Stderr); err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if !strings.Contains(out.String(), "final equity") {
			t.Errorf("%v: no final equity in\n%s", c.args, out.String())
		}
	}
}

// fundingFile writes a funding CSV for the fixture: a settlement every 8 hours from its
// first candle, rates alternating in sign.
func fundingFile(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	b.WriteString("time,rate\n")
	for i, rate := range []string{"0.0001", "0.00012345", "-0.00005", "0.0003", "-0.0002", "0.00007531", "0.0001"} {
		fmt.Fprintf(&b, "%d,%s\n", 1704067200000+int64(i)*8*3600000, rate)
	}
	path := filepath.Join(t.TempDir(), "funding.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRunCosts: with the cost flags, the JSON itemises the costs and they add up: gross −
// fees − funding is every trade's net summed, the report's total PnL and the final equity's
// gain; the table shows them. --fee is the maker and taker rate's default.
func TestRunCosts(t *testing.T) {
	path, funding := fixture(t), fundingFile(t)
	args := []string{"run", "--candles", path, "--family", "donchianBreakout", "--period", "30", "--exit-period", "15",
		"--market", "futures", "--leverage", "2", "--stop-loss", "0.3%", "--limit-offset", "0.02",
		"--maker-fee", "0.0002", "--taker-fee", "0.0005", "--slippage-cap", "0.005", "--funding-csv", funding}
	var out bytes.Buffer
	if err := cli(context.Background(), append(args, "--json"), &out, os.Stderr); err != nil {
		t.Fatal(err)
	}
	var r struct {
		Final decimal.Decimal `json:"finalEquity"`
		Costs *struct {
			GrossPnl decimal.Decimal `json:"grossPnl"`
			Fees     decimal.Decimal `json:"fees"`
			Slippage decimal.Decimal `json:"slippage"`
			Funding  decimal.Decimal `json:"funding"`
		} `json:"costs"`
		Trades []struct {
			trade
			Slippage *decimal.Decimal `json:"slippage"`
			Funding  *decimal.Decimal `json:"funding"`
		} `json:"trades"`
		Report struct {
			Metrics struct {
				TotalPnL decimal.Decimal `json:"totalPnL"`
			} `json:"metrics"`
		} `json:"report"`
	}
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	if r.Costs == nil || len(r.Trades) < 5 {
		t.Fatalf("costs %v, %d trades", r.Costs, len(r.Trades))
	}
	net, slip, fund := decimal.Zero, decimal.Zero, decimal.Zero
	for i, tr := range r.Trades {
		if tr.Slippage == nil || tr.Funding == nil {
			t.Fatalf("trade %d has no slippage or funding", i)
		}
		net, slip, fund = net.Add(tr.NetPnl), slip.Add(*tr.Slippage), fund.Add(*tr.Funding)
	}
	c := r.Costs
	if !c.GrossPnl.Sub(c.Fees).Sub(c.Funding).Equal(net) || !r.Report.Metrics.TotalPnL.Equal(net) ||
		!r.Final.Equal(decimal.NewFromInt(10000).Add(net)) || !c.Slippage.Equal(slip) || !c.Funding.Equal(fund) {
		t.Fatalf("costs %+v, final %s; the trades sum to net %s, slippage %s, funding %s", *c, r.Final, net, slip, fund)
	}
	if !c.Slippage.IsPositive() || c.Funding.IsZero() {
		t.Fatalf("costs %+v: no slippage or no funding", *c)
	}
	out.Reset()
	if err := cli(context.Background(), args, &out, os.Stderr); err != nil {
		t.Fatal(err)
	}
	for _, row := range []string{"gross PnL", "fees", "slippage (in gross PnL)", "funding paid", "final equity"} {
		if !strings.Contains(out.String(), row) {
			t.Errorf("no %q in\n%s", row, out.String())
		}
	}
}

// TestRunCostsAsFee: --taker-fee alone at --fee's rate (so the maker's too) is the run
// without costs, but for the costs it itemises.
func TestRunCostsAsFee(t *testing.T) {
	path := fixture(t)
	args := []string{"run", "--candles", path, "--family", "emaCrossover", "--market", "futures", "--fee", "0.0004", "--json"}
	var plain, costed bytes.Buffer
	if err := cli(context.Background(), args, &plain, os.Stderr); err != nil {
		t.Fatal(err)
	}
	if err := cli(context.Background(), append(args, "--taker-fee", "0.0004"), &costed, os.Stderr); err != nil {
		t.Fatal(err)
	}
	strip := func(b []byte) map[string]any {
		var m map[string]any
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "costs")
		for _, tr := range m["trades"].([]any) {
			delete(tr.(map[string]any), "slippage")
			delete(tr.(map[string]any), "funding")
		}
		return m
	}
	p, c := strip(plain.Bytes()), strip(costed.Bytes())
	pj, _ := json.Marshal(p)
	cj, _ := json.Marshal(c)
	if !bytes.Equal(pj, cj) || bytes.Contains(plain.Bytes(), []byte(`"costs"`)) || !bytes.Contains(costed.Bytes(), []byte(`"costs"`)) {
		t.Fatal("--taker-fee at --fee's rate changes the result")
	}
}

func TestRunCostRefusals(t *testing.T) {
	path := fixture(t)
	bad := filepath.Join(t.TempDir(), "bad.csv")
	if err := os.WriteFile(bad, []byte("ts,rate\n1,0.1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	run := []string{"run", "--candles", path, "--family", "emaCrossover", "--market", "futures"}
	for _, extra := range [][]string{
		{"--maker-fee", "x"},
		{"--taker-fee", "-0.001"},
		{"--slippage-cap", "1"},
		{"--funding-csv", filepath.Join(t.TempDir(), "none.csv")},
		{"--funding-csv", bad},
	} {
		if err := cli(context.Background(), append(append([]string(nil), run...), extra...), &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
			t.Errorf("%v accepted", extra)
		}
	}
}

// --out-of-sample 30 splits the 3000 candles as the Lab does (2100 + 900) and reports each
// window; the in-sample window is a run on its candles alone (a strategy of windows only,
// Donchian, decides the same), and the out-of-sample one trades only from the split on.
func TestRunOutOfSample(t *testing.T) {
	path := fixture(t)
	base := []string{"run", "--candles", path, "--family", "donchianBreakout", "--period", "30", "--exit-period", "15", "--json"}
	var out bytes.Buffer
	if err := cli(context.Background(), append(base, "--out-of-sample", "30"), &out, os.Stderr); err != nil {
		t.Fatal(err)
	}
	type result struct {
		Candles int             `json:"candles"`
		Final   decimal.Decimal `json:"finalEquity"`
		Trades  []trade         `json:"trades"`
	}
	var got struct{ InSample, OutOfSample result }
	if err := json.Unmarshal(out.Bytes(), &got); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if got.InSample.Candles != 2100 || got.OutOfSample.Candles != 900 || len(got.InSample.Trades) == 0 || len(got.OutOfSample.Trades) == 0 {
		t.Fatalf("in-sample %d candles %d trades, out-of-sample %d candles %d trades: want 2100 and 900, both trading",
			got.InSample.Candles, len(got.InSample.Trades), got.OutOfSample.Candles, len(got.OutOfSample.Trades))
	}
	// The in-sample window is the run on the first 2100 candles alone.
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.SplitAfter(string(raw), "\n")
	head := filepath.Join(t.TempDir(), "head.csv")
	if err := os.WriteFile(head, []byte(strings.Join(lines[:1+2100], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	var alone bytes.Buffer
	if err := cli(context.Background(), append([]string{"run", "--candles", head}, base[3:]...), &alone, os.Stderr); err != nil {
		t.Fatal(err)
	}
	var first result
	if err := json.Unmarshal(alone.Bytes(), &first); err != nil {
		t.Fatal(err)
	}
	if !first.Final.Equal(got.InSample.Final) || len(first.Trades) != len(got.InSample.Trades) {
		t.Fatalf("in-sample window: %v over %d trades; the first 2100 candles alone: %v over %d", got.InSample.Final,
			len(got.InSample.Trades), first.Final, len(first.Trades))
	}
	var table bytes.Buffer
	if err := cli(context.Background(), append(base[:len(base)-1], "--out-of-sample", "30"), &table, os.Stderr); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(table.String(), "in-sample\n") || !strings.Contains(table.String(), "\nout-of-sample\n") {
		t.Fatalf("table:\n%s", table.String())
	}
	if err := cli(context.Background(), append(base, "--out-of-sample", "60"), &out, io.Discard); err == nil {
		t.Fatal("--out-of-sample 60 was accepted")
	}
}
