// Package registry is the runtime's view of the bots: the controllers project each
// SignalBot into Redis here, and webhookd, mcpd and the executor read it back without
// calling the Kubernetes API. It also maps webhook IDs (by their SHA-256 only) to bots.
package registry

import (
	"crypto/sha256"
	"encoding/hex"

	"github.com/sigops/sigops/runtime/strategy"
)

// Bot is a SignalBot as the runtime needs it. The controller writes it; nothing on the hot
// path may change it (runtime pauses such as Errors or Risk live in their own keys).
type Bot struct {
	// ID is the SignalBot's Kubernetes UID: stable, unique, never reused.
	ID        string `json:"id"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Owner is the owner's email, lower-cased.
	Owner   string  `json:"owner"`
	Account Account `json:"account"`

	Market       string `json:"market"`
	Symbol       string `json:"symbol,omitempty"`
	PositionSize string `json:"positionSize"`
	Leverage     int32  `json:"leverage"`
	StopLoss     string `json:"stopLoss,omitempty"`
	TakeProfit   string `json:"takeProfit,omitempty"`
	DCA          DCA    `json:"dca"`
	Risk         Risk   `json:"risk"`
	RateLimit    Limit  `json:"rateLimit"`
	// DedupeWindowMillis drops byte-identical bodies inside the window; 0 is off.
	DedupeWindowMillis int64 `json:"dedupeWindowMillis"`
	// MaxSignalAgeMillis is how long an entry (open or add) may wait before execution;
	// older ones fail with SIGNAL_EXPIRED. 0 is off.
	MaxSignalAgeMillis int64 `json:"maxSignalAgeMillis"`
	Reversals          bool  `json:"reversals"`
	WebhookEnabled     bool  `json:"webhookEnabled"`

	// Availability is active, paused or disabled as the controller decided it.
	Availability string `json:"availability"`
	// PausedReason is Manual, Errors, Risk or Downgrade while paused.
	PausedReason string `json:"pausedReason,omitempty"`
	// DisabledCode says why a disabled bot is disabled; webhookd, the executor and manual
	// orders answer by it (DisabledError).
	DisabledCode DisabledCode `json:"disabledCode,omitempty"`
	// DisabledReason is the human-readable cause (the Ready condition's reason, for example
	// ExchangeConnectionNotReady), for messages and status only.
	DisabledReason string `json:"disabledReason,omitempty"`
	// Generation is the SignalBot's metadata.generation this projection came from.
	Generation int64 `json:"generation"`
	// Strategy is the built-in strategy the executor runs for the bot on every closed
	// candle (runtime/strategyrun), with every parameter filled in; nil for a bot driven by
	// webhooks only. Its Symbol is always set.
	Strategy *strategy.Spec `json:"strategy,omitempty"`

	// CopyFrom is the master bot whose fills this bot copies (nil: none). The controller
	// projects it only once the master passed its checks (it exists, copies no bot itself,
	// and is the same owner's or copyable).
	CopyFrom *CopyFrom `json:"copyFrom,omitempty"`
	// Copyable lets bots of other owners copy this one.
	Copyable bool `json:"copyable,omitempty"`
}

// CopyFrom is what a follower copies.
type CopyFrom struct {
	// MasterID is the master bot's ID (its Kubernetes UID).
	MasterID string `json:"masterId"`
	// Ratio scales the follower's share (a decimal string in (0, 100], "1" by default).
	Ratio string `json:"ratio"`
}

// Account is what the bot trades on.
type Account struct {
	// Kind is AccountPaper or AccountExchange.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// ID is the account object's UID; empty while the account is missing.
	ID string `json:"id,omitempty"`
}

// Account kinds.
const (
	AccountPaper    = "paper"
	AccountExchange = "exchange"
)

// DCA is the bot's dollar-cost-averaging setting.
type DCA struct {
	Enabled   bool  `json:"enabled"`
	MaxLevels int32 `json:"maxLevels"`
}

// Risk bounds; empty strings and zero mean no limit. Amounts are decimal strings.
type Risk struct {
	MaxExposure          string `json:"maxExposure,omitempty"`
	DailyLossLimit       string `json:"dailyLossLimit,omitempty"`
	MaxConsecutiveLosses int32  `json:"maxConsecutiveLosses,omitempty"`
}

// Limit is a per-bot signal rate.
type Limit struct {
	PerMinute int32 `json:"perMinute"`
	Burst     int32 `json:"burst"`
}

// HashWebhookID is how a webhook ID is stored and looked up: SHA-256, hex. A UUID v4 has
// 122 random bits, so a fast unsalted hash is enough to make the stored value useless to
// someone who reads Redis.
func HashWebhookID(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}
