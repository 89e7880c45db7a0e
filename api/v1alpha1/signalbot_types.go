package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// DefaultMaxSignalAge is spec.maxSignalAge when it is not set (the CRD's default too).
const DefaultMaxSignalAge = 60 * time.Second

// Market is where a bot trades.
// +kubebuilder:validation:Enum=spot;futures
type Market string

const (
	MarketSpot    Market = "spot"
	MarketFutures Market = "futures"
)

// Availability says whether a bot takes signals.
// +kubebuilder:validation:Enum=active;paused;disabled
type Availability string

const (
	AvailabilityActive   Availability = "active"
	AvailabilityPaused   Availability = "paused"
	AvailabilityDisabled Availability = "disabled"
)

// PausedReason says why a bot is paused.
// +kubebuilder:validation:Enum=Manual;Errors;Risk;Downgrade
type PausedReason string

const (
	PausedManual    PausedReason = "Manual"
	PausedErrors    PausedReason = "Errors"
	PausedRisk      PausedReason = "Risk"
	PausedDowngrade PausedReason = "Downgrade"
)

// SignalBotSpec is how a bot trades. Amounts are decimal strings, never floats, so that
// they survive YAML and JSON without rounding.
//
// +kubebuilder:validation:XValidation:rule="has(self.paperAccountRef) != has(self.exchangeConnectionRef)",message="exactly one of paperAccountRef or exchangeConnectionRef must be set"
// +kubebuilder:validation:XValidation:rule="!has(self.leverage) || self.leverage == 1 || (has(self.market) && self.market == 'futures')",message="leverage above 1 needs market futures"
// +kubebuilder:validation:XValidation:rule="!has(self.strategy) || has(self.symbol) || has(self.strategy.symbol)",message="a strategy needs a symbol: set spec.symbol or spec.strategy.symbol"
// +kubebuilder:validation:XValidation:rule="!has(self.strategy) || !has(self.symbol) || !has(self.strategy.symbol) || self.symbol == self.strategy.symbol",message="spec.strategy.symbol must equal spec.symbol when both are set"
type SignalBotSpec struct {
	// owner is the email of the account that owns the bot. The referenced paper account or
	// exchange connection must have the same owner.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=254
	// +kubebuilder:validation:Pattern=`^[^@\s]+@[^@\s]+$`
	// +required
	Owner string `json:"owner"`

	// paperAccountRef makes the bot trade on a simulated account.
	// +optional
	PaperAccountRef *LocalObjectReference `json:"paperAccountRef,omitempty"`

	// exchangeConnectionRef makes the bot trade on a real exchange account.
	// +optional
	ExchangeConnectionRef *LocalObjectReference `json:"exchangeConnectionRef,omitempty"`

	// market is spot or futures.
	// +kubebuilder:default=spot
	// +optional
	Market Market `json:"market,omitempty"`

	// symbol fixes the pair (BASE/QUOTE); signals may then omit it.
	// +kubebuilder:validation:Pattern=`^[A-Z0-9]{1,20}/[A-Z0-9]{1,20}$`
	// +optional
	Symbol string `json:"symbol,omitempty"`

	// positionSize is the default size: a percentage of the available balance ("10%") or a
	// base-currency amount ("0.01").
	// +kubebuilder:default="10%"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?%?$`
	// +kubebuilder:validation:XValidation:rule="!self.endsWith('%') || (double(self.substring(0, size(self)-1)) > 0.0 && double(self.substring(0, size(self)-1)) <= 100.0)",message="a percentage must be above 0 and at most 100"
	// +kubebuilder:validation:XValidation:rule="self.endsWith('%') || double(self) > 0.0",message="an amount must be above 0"
	// +optional
	PositionSize string `json:"positionSize,omitempty"`

	// leverage is the default leverage (futures only).
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=125
	// +optional
	Leverage int32 `json:"leverage,omitempty"`

	// stopLoss is the default stop-loss: an absolute price or a percentage from entry.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?%?$`
	// +optional
	StopLoss string `json:"stopLoss,omitempty"`

	// takeProfit is the default take-profit: an absolute price or a percentage from entry.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?%?$`
	// +optional
	TakeProfit string `json:"takeProfit,omitempty"`

	// dca allows dollar-cost-averaging entries.
	// +optional
	DCA DCASpec `json:"dca,omitempty"`

	// risk bounds what the bot may lose.
	// +optional
	Risk RiskSpec `json:"risk,omitempty"`

	// rateLimit bounds signals per bot, across all webhookd replicas.
	// +kubebuilder:default={}
	// +optional
	RateLimit RateLimitSpec `json:"rateLimit,omitempty"`

	// dedupeWindow drops byte-identical signal bodies received within it; 0 turns it off.
	// +kubebuilder:default="0s"
	// +optional
	DedupeWindow *metav1.Duration `json:"dedupeWindow,omitempty"`

	// maxSignalAge is how long a signal that opens or adds to a position may wait between
	// its arrival and its execution. An older one is not executed: it fails with
	// SIGNAL_EXPIRED and its order shows as expired, so an exchange outage does not end in
	// a burst of stale entries. Exits (close, stop-loss, take-profit) are never dropped for
	// age. 0 turns the check off.
	// +kubebuilder:default="60s"
	// +optional
	MaxSignalAge *metav1.Duration `json:"maxSignalAge,omitempty"`

	// reversals lets an entry opposite to an open futures position close it and open the
	// other side; false rejects such entries.
	// +kubebuilder:default=true
	// +optional
	Reversals *bool `json:"reversals,omitempty"`

	// webhook controls the bot's webhook URL.
	// +kubebuilder:default={}
	// +optional
	Webhook WebhookSpec `json:"webhook,omitempty"`

	// suspend pauses the bot at once (paused reason Manual).
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// strategy runs a built-in strategy for the bot on every closed candle; webhook
	// signals are still taken.
	// +optional
	Strategy *StrategySpec `json:"strategy,omitempty"`

	// copyFrom makes the bot a follower: every fill of the master bot becomes a copy signal
	// for this bot, sized by this bot's equity over the master's times ratio, and executed on
	// this bot's own account with its own risk limits. The master must not copy a bot
	// itself, and must be this bot's owner's or copyable.
	// +optional
	CopyFrom *CopyFromSpec `json:"copyFrom,omitempty"`

	// copyable lets bots of other owners copy this bot. Bots of the same owner may copy it
	// either way.
	// +optional
	Copyable bool `json:"copyable,omitempty"`
}

// CopyFromSpec names the master bot and the share of it to copy.
type CopyFromSpec struct {
	// botRef is the master bot.
	// +required
	BotRef BotReference `json:"botRef"`

	// ratio scales the copy: amount = master amount × follower equity / master equity ×
	// ratio. A decimal string above 0 and at most 100.
	// +kubebuilder:default="1"
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +kubebuilder:validation:XValidation:rule="double(self) > 0.0 && double(self) <= 100.0",message="ratio must be above 0 and at most 100"
	// +optional
	Ratio string `json:"ratio,omitempty"`
}

// BotReference names a SignalBot, by default in the referring bot's namespace.
type BotReference struct {
	// name of the SignalBot.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// namespace of the SignalBot; the referring bot's when empty.
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace string `json:"namespace,omitempty"`
}

// DCASpec configures dollar-cost averaging.
type DCASpec struct {
	// enabled allows signals with dca true.
	// +optional
	Enabled bool `json:"enabled,omitempty"`

	// maxLevels is the highest dcaLevel accepted (level 1 is the initial entry).
	// +kubebuilder:default=5
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	// +optional
	MaxLevels int32 `json:"maxLevels,omitempty"`
}

// RiskSpec bounds a bot's risk; empty fields mean no limit.
type RiskSpec struct {
	// maxExposure is the largest fraction of the account the bot's positions may use (0-1].
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^(0(\.[0-9]+)?|1(\.0+)?)$`
	// +kubebuilder:validation:XValidation:rule="double(self) > 0.0",message="maxExposure must be above 0"
	// +optional
	MaxExposure string `json:"maxExposure,omitempty"`

	// dailyLossLimit is the realised loss, in quote currency, after which the bot pauses
	// (reason Risk) until the next UTC day.
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[0-9]+(\.[0-9]+)?$`
	// +optional
	DailyLossLimit string `json:"dailyLossLimit,omitempty"`

	// maxConsecutiveLosses pauses the bot (reason Risk) after that many losing trades in a row.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxConsecutiveLosses int32 `json:"maxConsecutiveLosses,omitempty"`
}

// RateLimitSpec bounds how many signals a bot takes.
type RateLimitSpec struct {
	// perMinute is the sustained rate.
	// +kubebuilder:default=60
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=60000
	// +optional
	PerMinute int32 `json:"perMinute,omitempty"`

	// burst is how many signals may arrive at once.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Burst int32 `json:"burst,omitempty"`
}

// WebhookSpec controls the webhook URL.
type WebhookSpec struct {
	// enabled false makes the URL answer WEBHOOK_DISABLED.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`
}

// RuntimePauseStatus is a runtime pause as recorded in status.
type RuntimePauseStatus struct {
	// reason is Errors, Risk, Downgrade or Manual; empty while the bot is not paused.
	// +kubebuilder:validation:Enum="";Errors;Risk;Downgrade;Manual
	// +optional
	Reason string `json:"reason,omitempty"`

	// since is when the pause was set.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`

	// until is when a timed pause (Risk) ends; absent for a pause that lasts until resumed.
	// +optional
	Until *metav1.Time `json:"until,omitempty"`

	// sequence is how many runtime pause changes (pauses and lifts) Redis had seen when
	// this was recorded.
	// +kubebuilder:validation:Minimum=0
	Sequence int64 `json:"sequence"`
}

// RiskCountersStatus is a bot's risk counters (the daily-loss and consecutive-loss rules'
// running figures) as last mirrored from Redis. A Redis that lost them, or holds a copy
// with fewer trades taken in, gets them back from here when the bot is projected, unless
// PostgreSQL's record is later still.
type RiskCountersStatus struct {
	// day is the UTC date (YYYY-MM-DD) dayPnl belongs to.
	// +kubebuilder:validation:MaxLength=10
	// +optional
	Day string `json:"day,omitempty"`

	// dayPnl is the day's net realised PnL after fees, in quote currency (a decimal).
	// +kubebuilder:validation:MaxLength=64
	// +optional
	DayPnl string `json:"dayPnl,omitempty"`

	// consecutiveLosses is the run of losing trades up to the last one.
	// +kubebuilder:validation:Minimum=0
	ConsecutiveLosses int32 `json:"consecutiveLosses"`

	// consecutiveErrors is the run of execution errors since the last success.
	// +kubebuilder:validation:Minimum=0
	ConsecutiveErrors int32 `json:"consecutiveErrors"`

	// trades is how many realised trades the counters have taken in: their version.
	// +kubebuilder:validation:Minimum=0
	Trades int64 `json:"trades"`
}

// SignalBotStatus is what the operator observed.
type SignalBotStatus struct {
	// availability is active, paused or disabled.
	// +optional
	Availability Availability `json:"availability,omitempty"`

	// pausedReason is set while availability is paused.
	// +optional
	PausedReason PausedReason `json:"pausedReason,omitempty"`

	// webhookSecretName is the Secret holding webhookId and url.
	// +optional
	WebhookSecretName string `json:"webhookSecretName,omitempty"`

	// lastHandledRegenerate echoes the last regenerate-webhook annotation value acted on.
	// +optional
	LastHandledRegenerate string `json:"lastHandledRegenerate,omitempty"`

	// lastHandledResume echoes the last resume annotation value acted on.
	// +optional
	LastHandledResume string `json:"lastHandledResume,omitempty"`

	// runtimePause is the record of the bot's runtime pause (Errors, Risk, Downgrade,
	// Manual), mirrored from Redis with the count of pause changes Redis had seen. When
	// Redis loses the pause (a flush, a lost volume, a restore from an older backup) its
	// count falls behind this one and the pause, if still due, is written back before the
	// bot takes another signal. Absent until the bot's first runtime pause.
	// +optional
	RuntimePause *RuntimePauseStatus `json:"runtimePause,omitempty"`

	// riskCounters are the bot's risk counters as last mirrored from Redis (at every
	// runtime pause, and periodically while the bot has a loss rule), which the projection
	// writes back over a Redis that lost them. Absent until the bot's first trade is seen.
	// +optional
	RiskCounters *RiskCountersStatus `json:"riskCounters,omitempty"`

	// strategy is what the strategy runner last evaluated and emitted (spec.strategy only).
	// +optional
	Strategy *StrategyStatus `json:"strategy,omitempty"`

	// copy is a follower's copy state: its master, its last copy signal and its last
	// failure (mirrored from the runtime).
	// +optional
	Copy *CopyStatus `json:"copy,omitempty"`

	// observedGeneration is the generation last reconciled successfully.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready always; Reconciling and Stalled only while true.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// CopyStatus is a follower's copy state.
type CopyStatus struct {
	// master is the master bot copied, as namespace/name.
	// +optional
	Master string `json:"master,omitempty"`

	// lastCopy is the last copy signal executed (or refused).
	// +optional
	LastCopy *CopyEvent `json:"lastCopy,omitempty"`

	// lastError is the last copy signal that failed, with its code.
	// +optional
	LastError *CopyError `json:"lastError,omitempty"`
}

// CopyEvent is one copy signal's outcome.
type CopyEvent struct {
	// signalId is the copy signal's ID (its result is read by it).
	SignalID string `json:"signalId"`
	// at is when the outcome was decided.
	At metav1.Time `json:"at"`
	// outcome is success or the failure's code.
	Outcome string `json:"outcome"`
}

// CopyError is a copy signal's failure.
type CopyError struct {
	// code is the failure's code (INSUFFICIENT_BALANCE, BOT_PAUSED, ...).
	Code string `json:"code"`
	// message says why.
	Message string `json:"message"`
	// at is when it failed.
	At metav1.Time `json:"at"`
}

// SignalBot turns webhook signals into orders on a paper account or an exchange.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 245",message="name must be at most 245 characters (the webhook Secret adds -webhook)"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.copyFrom) || has(self.spec.copyFrom.botRef.namespace) || self.spec.copyFrom.botRef.name != self.metadata.name",message="a bot cannot copy itself"
// +kubebuilder:resource:shortName=sbot;sbots,categories=sigops
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Availability",type=string,JSONPath=`.status.availability`
// +kubebuilder:printcolumn:name="Symbol",type=string,JSONPath=`.spec.symbol`
// +kubebuilder:printcolumn:name="Market",type=string,JSONPath=`.spec.market`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type SignalBot struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec SignalBotSpec `json:"spec"`

	// status is what the manager observed. The API server defaults it to observedGeneration
	// 0, so that an object the manager has not reconciled yet reads as in progress to
	// kstatus (generation 1 not observed) rather than as current.
	// +kubebuilder:default={observedGeneration: 0}
	// +optional
	Status SignalBotStatus `json:"status,omitempty"`
}

// SignalBotList is a list of SignalBots.
//
// +kubebuilder:object:root=true
type SignalBotList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []SignalBot `json:"items"`
}
