package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StrategyFamily is a built-in strategy family (runtime/strategy.Family).
// +kubebuilder:validation:Enum=emaCrossover;rsiReversion;donchianBreakout;bollingerReversion;macdCrossover;supertrend
type StrategyFamily string

// StrategySpec makes the executor run a built-in strategy for the bot: on every closed
// candle of the timeframe it decides entries and exits, queued as the bot's own signals
// (strategy exits at priority 2, entries at 3). The bot still takes webhook signals.
// Parameters are the chosen family's block only; an omitted block or field takes the
// family's defaults. Ranges equal runtime/strategy's Family.Ranges() (a test holds them
// together); decimals are strings, like every amount of this API.
//
// +kubebuilder:validation:XValidation:rule="!has(self.emaCrossover) || self.family == 'emaCrossover'",message="emaCrossover parameters need family emaCrossover"
// +kubebuilder:validation:XValidation:rule="!has(self.rsiReversion) || self.family == 'rsiReversion'",message="rsiReversion parameters need family rsiReversion"
// +kubebuilder:validation:XValidation:rule="!has(self.donchianBreakout) || self.family == 'donchianBreakout'",message="donchianBreakout parameters need family donchianBreakout"
// +kubebuilder:validation:XValidation:rule="!has(self.bollingerReversion) || self.family == 'bollingerReversion'",message="bollingerReversion parameters need family bollingerReversion"
// +kubebuilder:validation:XValidation:rule="!has(self.macdCrossover) || self.family == 'macdCrossover'",message="macdCrossover parameters need family macdCrossover"
// +kubebuilder:validation:XValidation:rule="!has(self.supertrend) || self.family == 'supertrend'",message="supertrend parameters need family supertrend"
type StrategySpec struct {
	// family is the strategy: emaCrossover, rsiReversion, donchianBreakout,
	// bollingerReversion, macdCrossover or supertrend.
	// +required
	Family StrategyFamily `json:"family"`

	// timeframe is the candle length the strategy runs on.
	// +kubebuilder:validation:Enum="1m";"5m";"15m";"30m";"1h";"4h";"1d";"1w"
	// +required
	Timeframe string `json:"timeframe"`

	// symbol is the pair (BASE/QUOTE) the strategy trades; when absent, spec.symbol. When
	// both are set they must be equal.
	// +kubebuilder:validation:Pattern=`^[A-Z0-9]{1,20}/[A-Z0-9]{1,20}$`
	// +optional
	Symbol string `json:"symbol,omitempty"`

	// emaCrossover: long when the fast EMA crosses above the slow one, short when below.
	// +optional
	EMACrossover *EMACrossoverParams `json:"emaCrossover,omitempty"`

	// rsiReversion: Wilder's RSI crossing back from the oversold or overbought level.
	// +optional
	RSIReversion *RSIReversionParams `json:"rsiReversion,omitempty"`

	// donchianBreakout: a close beyond the period's channel enters, the exit channel exits.
	// +optional
	DonchianBreakout *DonchianBreakoutParams `json:"donchianBreakout,omitempty"`

	// bollingerReversion: a close back inside the bands enters, the middle band exits.
	// +optional
	BollingerReversion *BollingerReversionParams `json:"bollingerReversion,omitempty"`

	// macdCrossover: long when the MACD line crosses above its signal line, short when below.
	// +optional
	MACDCrossover *MACDCrossoverParams `json:"macdCrossover,omitempty"`

	// supertrend: long when the close turns the Supertrend up (above the final upper band),
	// short when it turns it down (below the final lower band).
	// +optional
	Supertrend *SupertrendParams `json:"supertrend,omitempty"`
}

// EMACrossoverParams are the EMA crossover's periods, in candles.
// +kubebuilder:validation:XValidation:rule="self.fastPeriod < self.slowPeriod",message="fastPeriod must be below slowPeriod"
type EMACrossoverParams struct {
	// fastPeriod is the fast EMA's period, in candles.
	// +kubebuilder:default=12
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=100
	// +optional
	FastPeriod int32 `json:"fastPeriod,omitempty"`

	// slowPeriod is the slow EMA's period, in candles.
	// +kubebuilder:default=26
	// +kubebuilder:validation:Minimum=3
	// +kubebuilder:validation:Maximum=400
	// +optional
	SlowPeriod int32 `json:"slowPeriod,omitempty"`
}

// RSIReversionParams are the RSI period (candles) and levels (0-100, decimal strings).
// +kubebuilder:validation:XValidation:rule="double(self.oversold) < double(self.overbought)",message="oversold must be below overbought"
type RSIReversionParams struct {
	// period is the indicator's period, in candles.
	// +kubebuilder:default=14
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=100
	// +optional
	Period int32 `json:"period,omitempty"`

	// oversold is the RSI level (0-100) below which the market is oversold.
	// +kubebuilder:default="30"
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:Pattern=`^[0-9]{1,3}(\.[0-9]{1,8})?$`
	// +kubebuilder:validation:XValidation:rule="double(self) >= 5.0 && double(self) <= 50.0",message="oversold must be between 5 and 50"
	// +optional
	Oversold string `json:"oversold,omitempty"`

	// overbought is the RSI level (0-100) above which the market is overbought.
	// +kubebuilder:default="70"
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:Pattern=`^[0-9]{1,3}(\.[0-9]{1,8})?$`
	// +kubebuilder:validation:XValidation:rule="double(self) >= 50.0 && double(self) <= 95.0",message="overbought must be between 50 and 95"
	// +optional
	Overbought string `json:"overbought,omitempty"`
}

// DonchianBreakoutParams are the entry and exit channels' periods, in candles.
// +kubebuilder:validation:XValidation:rule="self.exitPeriod <= self.period",message="exitPeriod must not exceed period"
type DonchianBreakoutParams struct {
	// period is the indicator's period, in candles.
	// +kubebuilder:default=20
	// +kubebuilder:validation:Minimum=5
	// +kubebuilder:validation:Maximum=200
	// +optional
	Period int32 `json:"period,omitempty"`

	// exitPeriod is the exit channel's period, in candles (at most period).
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=200
	// +optional
	ExitPeriod int32 `json:"exitPeriod,omitempty"`
}

// BollingerReversionParams are the bands' period (candles) and width (standard deviations,
// a decimal string).
type BollingerReversionParams struct {
	// period is the indicator's period, in candles.
	// +kubebuilder:default=20
	// +kubebuilder:validation:Minimum=5
	// +kubebuilder:validation:Maximum=200
	// +optional
	Period int32 `json:"period,omitempty"`

	// stdDev is the bands' distance from the middle band, in standard deviations.
	// +kubebuilder:default="2"
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:Pattern=`^[0-9](\.[0-9]{1,8})?$`
	// +kubebuilder:validation:XValidation:rule="double(self) >= 0.5 && double(self) <= 4.0",message="stdDev must be between 0.5 and 4"
	// +optional
	StdDev string `json:"stdDev,omitempty"`
}

// MACDCrossoverParams are the MACD's EMA periods, in candles.
// +kubebuilder:validation:XValidation:rule="self.fastPeriod < self.slowPeriod",message="fastPeriod must be below slowPeriod"
type MACDCrossoverParams struct {
	// fastPeriod is the fast EMA's period, in candles.
	// +kubebuilder:default=12
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=100
	// +optional
	FastPeriod int32 `json:"fastPeriod,omitempty"`

	// slowPeriod is the slow EMA's period, in candles.
	// +kubebuilder:default=26
	// +kubebuilder:validation:Minimum=3
	// +kubebuilder:validation:Maximum=400
	// +optional
	SlowPeriod int32 `json:"slowPeriod,omitempty"`

	// signalPeriod is the period of the signal line, the EMA of the MACD line, in candles.
	// +kubebuilder:default=9
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=100
	// +optional
	SignalPeriod int32 `json:"signalPeriod,omitempty"`
}

// SupertrendParams are the ATR period (candles) and the bands' distance from the candle's
// midpoint (ATRs, a decimal string).
type SupertrendParams struct {
	// period is the ATR's period, in candles.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=100
	// +optional
	Period int32 `json:"period,omitempty"`

	// multiplier is the bands' distance from the candle's midpoint, in ATRs.
	// +kubebuilder:default="3"
	// +kubebuilder:validation:MaxLength=16
	// +kubebuilder:validation:Pattern=`^[0-9]{1,2}(\.[0-9]{1,8})?$`
	// +kubebuilder:validation:XValidation:rule="double(self) >= 0.5 && double(self) <= 10.0",message="multiplier must be between 0.5 and 10"
	// +optional
	Multiplier string `json:"multiplier,omitempty"`
}

// StrategyStatus is what the strategy runner last did, mirrored from Redis.
type StrategyStatus struct {
	// family, timeframe and symbol the runner evaluates.
	// +optional
	Family StrategyFamily `json:"family,omitempty"`
	// +optional
	Timeframe string `json:"timeframe,omitempty"`
	// +optional
	Symbol string `json:"symbol,omitempty"`

	// lastEvaluatedCandle is the open time of the last candle evaluated. It is mirrored at
	// most once a minute while no signal is emitted.
	// +optional
	LastEvaluatedCandle *metav1.Time `json:"lastEvaluatedCandle,omitempty"`

	// lastSignal is the last signal the strategy queued.
	// +optional
	LastSignal *StrategySignalStatus `json:"lastSignal,omitempty"`
}

// StrategySignalStatus is one queued strategy signal.
type StrategySignalStatus struct {
	// action is buy, sell, close_long or close_short.
	Action string `json:"action"`
	// candle is the open time of the candle that decided it.
	Candle metav1.Time `json:"candle"`
	// signalId finds its result in the bot's signal history.
	SignalID string `json:"signalId"`
	// emittedAt is when it was queued.
	EmittedAt metav1.Time `json:"emittedAt"`
}
