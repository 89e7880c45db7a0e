package backtest_test

import (
	"bytes"
	"context"
	"runtime"
	"sync"
	"testing"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/backtest"
	"github.com/sigops/sigops/runtime/backtest/candlegen"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/signal"
	"github.com/sigops/sigops/runtime/strategy"
)

var (
	fixtureOnce sync.Once
	fixture     []marketdata.Candle
)

// candles are 100,000 generated one-minute BTC/USDT candles (seed 1), made once.
func candles(t testing.TB) []marketdata.Candle {
	fixtureOnce.Do(func() {
		cs, err := candlegen.Generate(candlegen.Options{Seed: 1, Count: 100000, Symbol: "BTC/USDT"})
		if err != nil {
			panic(err)
		}
		fixture = cs
	})
	return fixture
}

func series(t testing.TB, kind exchange.Kind, n int) *backtest.Series {
	t.Helper()
	m, _ := paper.Market(kind, "BTC/USDT")
	s, err := backtest.NewSeries(candles(t)[:n], m, "1m")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func config(f strategy.Family) backtest.Config {
	return backtest.Config{Strategy: strategy.Spec{Family: f, Timeframe: "1m", Symbol: "BTC/USDT", Params: f.Defaults()}}
}

func TestDeterministicAcrossRunsAndGOMAXPROCS(t *testing.T) {
	s := series(t, exchange.Futures, 100000)
	sl := signal.Amount{Value: httpapi.Num(decimal.NewFromInt(2)), Percent: true}
	for _, f := range strategy.Families() {
		cfg := config(f)
		cfg.Leverage = 3
		cfg.StopLoss = &sl
		first, err := backtest.Run(context.Background(), s, cfg)
		if err != nil {
			t.Fatal(err)
		}
		want, err := first.JSON()
		if err != nil {
			t.Fatal(err)
		}
		if len(first.Trades) < 20 {
			t.Fatalf("%s: only %d trades on 100,000 candles", f, len(first.Trades))
		}
		// Concurrent runs on the shared series, under one and two Ps.
		for _, procs := range []int{1, 2} {
			old := runtime.GOMAXPROCS(procs)
			var wg sync.WaitGroup
			outs := make([][]byte, 4)
			for i := range outs {
				wg.Go(func() {
					r, err := backtest.Run(context.Background(), s, cfg)
					if err != nil {
						t.Error(err)
						return
					}
					outs[i], _ = r.JSON()
				})
			}
			wg.Wait()
			runtime.GOMAXPROCS(old)
			for i, got := range outs {
				if !bytes.Equal(got, want) {
					t.Fatalf("%s: run %d under GOMAXPROCS %d differs", f, i, procs)
				}
			}
		}
	}
}

// TestFiguresAddUp checks a long run's figures against each other: the final equity is the
// initial balance plus every trade's net result, the report counts every trade and sums
// their results, and the equity curve ends at the final equity.
func TestFiguresAddUp(t *testing.T) {
	s := series(t, exchange.Spot, 100000)
	for _, f := range strategy.Families() {
		r, err := backtest.Run(context.Background(), s, config(f))
		if err != nil {
			t.Fatal(err)
		}
		sum := decimal.Zero
		for i, tr := range r.Trades {
			sum = sum.Add(tr.NetPnl)
			if tr.Side != "long" {
				t.Fatalf("%s: a %s trade on spot", f, tr.Side)
			}
			if i > 0 && tr.EntryTime < r.Trades[i-1].ExitTime {
				t.Fatalf("%s: trade %d opens before the previous one closed (pyramiding)", f, i)
			}
		}
		if want := backtest.DefaultInitialBalance.Add(sum); !r.Final.Equal(want) {
			t.Fatalf("%s: final %s, want %s", f, r.Final, want)
		}
		m := r.Report.Metrics
		if m.TotalTrades != len(r.Trades) || !m.TotalPnL.Equal(sum) || r.Candles != 100000 {
			t.Fatalf("%s: report %+v for %d trades summing %s", f, m, len(r.Trades), sum)
		}
		if last := r.Equity[len(r.Equity)-1]; !last.Equity.Equal(r.Final) {
			t.Fatalf("%s: equity curve ends at %s, final %s", f, last.Equity, r.Final)
		}
		// About 69 days: a point at least once a day.
		if len(r.Equity) < 70 {
			t.Fatalf("%s: %d equity points", f, len(r.Equity))
		}
	}
}

func TestCSVRoundTrip(t *testing.T) {
	cs := candles(t)[:500]
	var buf bytes.Buffer
	if err := backtest.WriteCSV(&buf, cs); err != nil {
		t.Fatal(err)
	}
	text := buf.String()
	back, err := backtest.ReadCSV(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(cs) {
		t.Fatalf("%d candles back", len(back))
	}
	for i := range cs {
		a, b := cs[i], back[i]
		if a.Timestamp != b.Timestamp || a.Time != b.Time || !a.Open.Equal(b.Open) || !a.High.Equal(b.High) ||
			!a.Low.Equal(b.Low) || !a.Close.Equal(b.Close) || !a.Volume.Equal(b.Volume) {
			t.Fatalf("candle %d: %+v back as %+v", i, a, b)
		}
	}
	if want := "timestamp,open,high,low,close,volume\n1704067200000,65000,65026.05,64988.65,64988.65,11.5872\n"; text[:len(want)] != want {
		t.Fatalf("CSV starts %q", text[:len(want)])
	}
	for _, bad := range []string{"", "time,open,high,low,close,volume\n", "timestamp,open,high,low,close,volume\n1,2,3,4,x,6\n"} {
		if _, err := backtest.ReadCSV(bytes.NewBufferString(bad)); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestContextEndsARun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := backtest.Run(ctx, series(t, exchange.Spot, 1000), config(strategy.EMACrossover)); err == nil {
		t.Fatal("a cancelled run finished")
	}
}
