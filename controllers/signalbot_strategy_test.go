package controllers_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/marketdata"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/strategy"
	"github.com/sigops/sigops/runtime/strategyrun"
)

// strategyBlock is spec.strategy of family f with the parameters in values (JSON names), the
// others omitted. Decimal parameters are written as the API writes them, as strings.
func strategyBlock(f strategy.Family, values map[string]float64) *tradingv1.StrategySpec {
	i := func(name string) int32 { return int32(values[name]) }
	d := func(name string) string {
		if v, ok := values[name]; ok {
			return strconv.FormatFloat(v, 'f', -1, 64)
		}
		return ""
	}
	s := &tradingv1.StrategySpec{Family: tradingv1.StrategyFamily(f), Timeframe: "1h"}
	switch f {
	case strategy.EMACrossover:
		s.EMACrossover = &tradingv1.EMACrossoverParams{FastPeriod: i("fastPeriod"), SlowPeriod: i("slowPeriod")}
	case strategy.RSIReversion:
		s.RSIReversion = &tradingv1.RSIReversionParams{Period: i("period"), Oversold: d("oversold"), Overbought: d("overbought")}
	case strategy.DonchianBreakout:
		s.DonchianBreakout = &tradingv1.DonchianBreakoutParams{Period: i("period"), ExitPeriod: i("exitPeriod")}
	case strategy.BollingerReversion:
		s.BollingerReversion = &tradingv1.BollingerReversionParams{Period: i("period"), StdDev: d("stdDev")}
	case strategy.MACDCrossover:
		s.MACDCrossover = &tradingv1.MACDCrossoverParams{FastPeriod: i("fastPeriod"), SlowPeriod: i("slowPeriod"),
			SignalPeriod: i("signalPeriod")}
	case strategy.Supertrend:
		s.Supertrend = &tradingv1.SupertrendParams{Period: i("period"), Multiplier: d("multiplier")}
	default:
		panic("strategyBlock: no CRD block for family " + string(f))
	}
	return s
}

// lowerParams are the smaller side of each cross-field rule (fast < slow for both
// crossovers, oversold < overbought, exitPeriod <= period): while one parameter is probed,
// these sit at their minimum and every other parameter at its maximum, so only the probed
// bound can fail.
var lowerParams = map[string]bool{"fastPeriod": true, "oversold": true, "exitPeriod": true}

// Every bound of every family's parameters, probed on the real API server: Min and Max are
// accepted, one Step beyond either is refused naming the field. The numbers come from
// strategy.Family.Ranges(), so the CRD's markers and CEL rules cannot drift from them.
func TestStrategyParameterBoundsMatchRanges(t *testing.T) {
	ns := namespace(t)
	n := 0
	try := func(f strategy.Family, values map[string]float64) error {
		n++
		bot := paperBot(ns, fmt.Sprintf("s%d", n), "a@x.io", "acct")
		bot.Spec.Strategy = strategyBlock(f, values)
		return k8s.Create(context.Background(), bot)
	}
	for _, f := range strategy.Families() {
		ranges := f.Ranges()
		if len(ranges) == 0 {
			t.Fatalf("%s has no ranges", f)
		}
		for _, probe := range ranges {
			values := func(v float64) map[string]float64 {
				m := map[string]float64{}
				for _, r := range ranges {
					switch {
					case r.Name == probe.Name:
						m[r.Name] = v
					case lowerParams[r.Name]:
						m[r.Name] = r.Min
					default:
						m[r.Name] = r.Max
					}
				}
				return m
			}
			for _, v := range []float64{probe.Min, probe.Max} {
				if err := try(f, values(v)); err != nil {
					t.Errorf("%s %s = %v refused: %v", f, probe.Name, v, err)
				}
			}
			field := "spec.strategy." + string(f) + "." + probe.Name
			for _, v := range []float64{probe.Min - probe.Step, probe.Max + probe.Step} {
				v = float64(int64(v*1e6+0.5*sign(v))) / 1e6 // 0.5 - 0.1 is 0.4, not 0.39999…
				err := try(f, values(v))
				if err == nil || !strings.Contains(err.Error(), field) {
					t.Errorf("%s %s = %v: err = %v, want one naming %s", f, probe.Name, v, err, field)
				}
			}
		}
	}
}

func sign(v float64) float64 {
	if v < 0 {
		return -1
	}
	return 1
}

// The rules between fields and between blocks.
func TestStrategyValidation(t *testing.T) {
	ns := namespace(t)
	cases := []struct {
		name    string
		mutate  func(*tradingv1.SignalBotSpec)
		wantErr string
	}{
		{"fast not below slow", func(s *tradingv1.SignalBotSpec) {
			s.Strategy = strategyBlock(strategy.EMACrossover, map[string]float64{"fastPeriod": 30, "slowPeriod": 30})
		}, "fastPeriod must be below slowPeriod"},
		{"fast above the default slow", func(s *tradingv1.SignalBotSpec) {
			s.Strategy = strategyBlock(strategy.EMACrossover, map[string]float64{"fastPeriod": 40})
		}, "fastPeriod must be below slowPeriod"},
		{"oversold not below overbought", func(s *tradingv1.SignalBotSpec) {
			s.Strategy = strategyBlock(strategy.RSIReversion, map[string]float64{"period": 14, "oversold": 50, "overbought": 50})
		}, "oversold must be below overbought"},
		{"macd fast not below slow", func(s *tradingv1.SignalBotSpec) {
			s.Strategy = strategyBlock(strategy.MACDCrossover, map[string]float64{"fastPeriod": 26, "slowPeriod": 26, "signalPeriod": 9})
		}, "fastPeriod must be below slowPeriod"},
		{"macd fast above the default slow", func(s *tradingv1.SignalBotSpec) {
			s.Strategy = strategyBlock(strategy.MACDCrossover, map[string]float64{"fastPeriod": 40})
		}, "fastPeriod must be below slowPeriod"},
		{"exit channel longer than entry", func(s *tradingv1.SignalBotSpec) {
			s.Strategy = strategyBlock(strategy.DonchianBreakout, map[string]float64{"period": 20, "exitPeriod": 21})
		}, "exitPeriod must not exceed period"},
		{"another family's block", func(s *tradingv1.SignalBotSpec) {
			s.Strategy = strategyBlock(strategy.EMACrossover, map[string]float64{"fastPeriod": 12, "slowPeriod": 26})
			s.Strategy.Family = tradingv1.StrategyFamily(strategy.RSIReversion)
		}, "emaCrossover parameters need family emaCrossover"},
		{"a macdCrossover block on emaCrossover", func(s *tradingv1.SignalBotSpec) {
			s.Strategy = strategyBlock(strategy.MACDCrossover, nil)
			s.Strategy.Family = tradingv1.StrategyFamily(strategy.EMACrossover)
		}, "macdCrossover parameters need family macdCrossover"},
		{"a supertrend block on bollingerReversion", func(s *tradingv1.SignalBotSpec) {
			s.Strategy = strategyBlock(strategy.Supertrend, nil)
			s.Strategy.Family = tradingv1.StrategyFamily(strategy.BollingerReversion)
		}, "supertrend parameters need family supertrend"},
		{"decimal as a float-like word", func(s *tradingv1.SignalBotSpec) {
			s.Strategy = strategyBlock(strategy.BollingerReversion, nil)
			s.Strategy.BollingerReversion.StdDev = "2e0"
		}, "spec.strategy.bollingerReversion.stdDev"},
		{"multiplier as a float-like word", func(s *tradingv1.SignalBotSpec) {
			s.Strategy = strategyBlock(strategy.Supertrend, nil)
			s.Strategy.Supertrend.Multiplier = "3e0"
		}, "spec.strategy.supertrend.multiplier"},
		{"multiplier of three digits", func(s *tradingv1.SignalBotSpec) {
			s.Strategy = strategyBlock(strategy.Supertrend, nil)
			s.Strategy.Supertrend.Multiplier = "100"
		}, "spec.strategy.supertrend.multiplier"},
		{"unknown family", func(s *tradingv1.SignalBotSpec) {
			s.Strategy = &tradingv1.StrategySpec{Family: "macd", Timeframe: "1h"}
		}, "spec.strategy.family"},
		{"unknown timeframe", func(s *tradingv1.SignalBotSpec) {
			s.Strategy = strategyBlock(strategy.EMACrossover, nil)
			s.Strategy.Timeframe = "2h"
		}, "spec.strategy.timeframe"},
		{"no symbol anywhere", func(s *tradingv1.SignalBotSpec) {
			s.Symbol = ""
			s.Strategy = strategyBlock(strategy.EMACrossover, nil)
		}, "a strategy needs a symbol"},
		{"two different symbols", func(s *tradingv1.SignalBotSpec) {
			s.Strategy = strategyBlock(strategy.EMACrossover, nil)
			s.Strategy.Symbol = "ETH/USDT"
		}, "spec.strategy.symbol must equal spec.symbol"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bot := paperBot(ns, "bad-"+strconv.Itoa(i), "a@x.io", "acct")
			tc.mutate(&bot.Spec)
			err := k8s.Create(context.Background(), bot)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("create: err = %v, want one mentioning %q", err, tc.wantErr)
			}
		})
	}
	// The timeframe enum is marketdata's list.
	for _, tf := range marketdata.Timeframes() {
		bot := paperBot(ns, "tf-"+tf, "a@x.io", "acct")
		bot.Spec.Strategy = strategyBlock(strategy.EMACrossover, nil)
		bot.Spec.Strategy.Timeframe = tf
		create(t, bot)
	}
	// The strategy's own symbol alone is enough.
	bot := paperBot(ns, "own-symbol", "a@x.io", "acct")
	bot.Spec.Symbol = ""
	bot.Spec.Strategy = strategyBlock(strategy.DonchianBreakout, nil)
	bot.Spec.Strategy.Symbol = "ETH/USDT"
	create(t, bot)
}

// An empty parameter block gets the family's Defaults from the API server; an omitted block
// gets them from the projection.
func TestStrategyDefaults(t *testing.T) {
	ns := namespace(t)
	create(t, paperAccount(ns, "paper", "a@x.io"))
	for _, f := range strategy.Families() {
		d := f.Defaults()
		want := map[string]float64{}
		for _, r := range f.Ranges() {
			want[r.Name] = d.Get(r.Name)
		}
		bot := paperBot(ns, "empty-"+strings.ToLower(string(f)), "a@x.io", "paper")
		bot.Spec.Strategy = strategyBlock(f, nil) // every field zero, so omitted
		create(t, bot)
		if got := strategyBlock(f, want); !equalBlocks(bot.Spec.Strategy, got) {
			t.Errorf("%s: defaults %+v, want %+v", f, blockString(bot.Spec.Strategy), blockString(got))
		}

		omitted := paperBot(ns, "omitted-"+strings.ToLower(string(f)), "a@x.io", "paper")
		omitted.Spec.Strategy = &tradingv1.StrategySpec{Family: tradingv1.StrategyFamily(f), Timeframe: "4h"}
		create(t, omitted)
		waitProjection(t, string(omitted.UID), func(p registry.Bot) bool {
			return p.Strategy != nil && *p.Strategy == strategy.Spec{Family: f, Timeframe: "4h", Symbol: "BTC/USDT", Params: d}
		})
	}
}

func equalBlocks(a, b *tradingv1.StrategySpec) bool { return blockString(a) == blockString(b) }

func blockString(s *tradingv1.StrategySpec) string {
	return fmt.Sprintf("%+v %+v %+v %+v %+v %+v", s.EMACrossover, s.RSIReversion, s.DonchianBreakout, s.BollingerReversion,
		s.MACDCrossover, s.Supertrend)
}

// The runner's evaluations and emissions reach status.strategy without any change to the
// object: the runner announces the bot on store.BotEvents.
func TestStrategyStatusMirrorsTheRunner(t *testing.T) {
	ns := namespace(t)
	create(t, paperAccount(ns, "paper", "a@x.io"))
	bot := paperBot(ns, "ema", "a@x.io", "paper")
	bot.Spec.Market = tradingv1.MarketFutures
	bot.Spec.Strategy = strategyBlock(strategy.EMACrossover, map[string]float64{"fastPeriod": 3, "slowPeriod": 8})
	bot.Spec.Strategy.Timeframe = "1m"
	create(t, bot)
	bot = waitBot(t, ns, "ema", "active", readyIs(metav1.ConditionTrue, "Active"))
	if s := bot.Status.Strategy; s == nil || s.Family != "emaCrossover" || s.Timeframe != "1m" || s.Symbol != "BTC/USDT" || s.LastEvaluatedCandle != nil {
		t.Fatalf("status.strategy before any evaluation: %+v", s)
	}
	id := string(bot.UID)
	waitProjection(t, id, func(p registry.Bot) bool { return p.Strategy != nil })

	// A runner on a clock of its own, walking minute by minute until the strategy emits.
	at := testkit.NewClock(time.Date(2026, 11, 21, 12, 0, 2, 0, time.UTC))
	mkt := marketdata.NewSimulated(marketdata.SimulatedOptions{Seed: 7, Volatility: 0.2, Now: at.Now})
	r := strategyrun.New(strategyrun.Options{Redis: rdb, Market: mkt, Owner: partitionOf(store.PartitionOf(id)),
		Now: at.Now, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	var st strategyrun.State
	for m := 0; m < 120 && st.LastSignal == nil; m++ {
		r.Evaluate(context.Background())
		var err error
		if st, err = strategyrun.ReadState(context.Background(), rdb, id); err != nil {
			t.Fatal(err)
		}
		at.Advance(time.Minute)
	}
	if st.LastSignal == nil {
		t.Fatal("no emission in two hours of the walk")
	}
	waitBot(t, ns, "ema", "status.strategy mirrored", func(b *tradingv1.SignalBot) error {
		s := b.Status.Strategy
		if s == nil || s.LastEvaluatedCandle == nil || !s.LastEvaluatedCandle.Time.Equal(st.LastEvaluated) {
			return fmt.Errorf("status.strategy %+v, want last evaluated %s", s, st.LastEvaluated)
		}
		e := s.LastSignal
		if e == nil || e.Action != string(st.LastSignal.Action) || e.SignalID != st.LastSignal.SignalID ||
			!e.Candle.Time.Equal(st.LastSignal.Candle) || e.EmittedAt.Unix() != st.LastSignal.At.Unix() {
			return fmt.Errorf("lastSignal %+v, want %+v", e, st.LastSignal)
		}
		return nil
	})
}

// partitionOf is an ownership source holding one partition.
type partitionOf int

func (p partitionOf) Owned() []int { return []int{int(p)} }
