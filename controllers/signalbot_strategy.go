package controllers

import (
	"context"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	tradingv1 "github.com/sigops/sigops/api/v1alpha1"
	"github.com/sigops/sigops/runtime/strategy"
	"github.com/sigops/sigops/runtime/strategyrun"
)

// strategyOf is spec.strategy as the runner reads it (registry.Bot.Strategy): the family's
// block as parameters, any parameter still zero (a block omitted, or an object written
// before the CRD's defaults) from the family's Defaults, and the symbol from spec.symbol when
// the block has none. The CRD refuses what Validate would; Validate runs again here so a
// spec the schema let through never reaches the runner. nil without spec.strategy.
func strategyOf(bot *tradingv1.SignalBot) (*strategy.Spec, error) {
	in := bot.Spec.Strategy
	if in == nil {
		return nil, nil
	}
	s := strategy.Spec{Family: strategy.Family(in.Family), Timeframe: in.Timeframe, Symbol: orDefault(in.Symbol, bot.Spec.Symbol)}
	var err error
	decimal := func(v string) float64 {
		if v == "" || err != nil {
			return 0
		}
		var f float64
		f, err = strconv.ParseFloat(v, 64)
		return f
	}
	switch p := &s.Params; {
	case in.EMACrossover != nil:
		p.FastPeriod, p.SlowPeriod = int(in.EMACrossover.FastPeriod), int(in.EMACrossover.SlowPeriod)
	case in.RSIReversion != nil:
		p.Period, p.Oversold, p.Overbought = int(in.RSIReversion.Period), decimal(in.RSIReversion.Oversold), decimal(in.RSIReversion.Overbought)
	case in.DonchianBreakout != nil:
		p.Period, p.ExitPeriod = int(in.DonchianBreakout.Period), int(in.DonchianBreakout.ExitPeriod)
	case in.BollingerReversion != nil:
		p.Period, p.StdDev = int(in.BollingerReversion.Period), decimal(in.BollingerReversion.StdDev)
	case in.MACDCrossover != nil:
		m := in.MACDCrossover
		p.FastPeriod, p.SlowPeriod, p.SignalPeriod = int(m.FastPeriod), int(m.SlowPeriod), int(m.SignalPeriod)
	case in.Supertrend != nil:
		p.Period, p.Multiplier = int(in.Supertrend.Period), decimal(in.Supertrend.Multiplier)
	}
	if err != nil {
		return nil, err
	}
	s = s.WithDefaults()
	if err := s.Validate(); err != nil {
		return nil, err
	}
	return &s, nil
}

// mirrorStrategy shows in status.strategy what the runner last evaluated and emitted
// (strategyrun.ReadState). The runner announces the bot on store.BotEvents when it emits,
// and at most once a minute otherwise, which wakes this reconciler.
func (r *SignalBotReconciler) mirrorStrategy(ctx context.Context, bot *tradingv1.SignalBot, spec *strategy.Spec) error {
	if spec == nil || r.Redis == nil {
		bot.Status.Strategy = nil
		return nil
	}
	st, err := strategyrun.ReadState(ctx, r.Redis, string(bot.UID))
	if err != nil {
		return err
	}
	out := &tradingv1.StrategyStatus{Family: tradingv1.StrategyFamily(spec.Family), Timeframe: spec.Timeframe, Symbol: spec.Symbol}
	if !st.LastEvaluated.IsZero() {
		t := metav1.NewTime(st.LastEvaluated)
		out.LastEvaluatedCandle = &t
	}
	if e := st.LastSignal; e != nil {
		out.LastSignal = &tradingv1.StrategySignalStatus{Action: string(e.Action), Candle: metav1.NewTime(e.Candle),
			SignalID: e.SignalID, EmittedAt: metav1.NewTime(e.At)}
	}
	bot.Status.Strategy = out
	return nil
}
