package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/shopspring/decimal"
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
		{"frobnicate"},
	} {
		if err := cli(context.Background(), args, &bytes.Buffer{}, &bytes.Buffer{}); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}
