package registry

import (
	"strconv"
)

// Gate fields: the few facts the webhook intake checks on every signal, kept as plain hash
// fields beside the config JSON so that the intake's single Lua call can read them without
// decoding JSON. The controller writes them with the projection, except the runtime pause
// fields (FieldPause, FieldPauseUntil), which only this package's pause API writes
// (pause.go) and the projection never touches.
const (
	FieldAvailability   = "availability"
	FieldPausedReason   = "pausedReason"
	FieldDisabledCode   = "disabledCode"
	FieldDisabledReason = "disabledReason"
	FieldWebhookEnabled = "webhookEnabled" // "1" or "0"
	FieldSymbol         = "symbol"
	FieldRatePerMinute  = "ratePerMinute"
	FieldRateBurst      = "rateBurst"
	FieldDedupeMillis   = "dedupeMillis"

	// FieldPause is the runtime pause's reason (PauseErrors, PauseRisk, PauseDowngrade,
	// PauseManual); FieldPauseUntil is when it ends in ms since epoch (0: until resumed);
	// FieldPauseSince when it was written (ms).
	FieldPause      = "pause"
	FieldPauseUntil = "pauseUntil"
	FieldPauseSince = "pauseSince"
	// FieldPauseSeq counts the runtime pause changes this hash has seen (each pause and
	// each lift). The SignalBot's status records the count with the pause it mirrors, so a
	// Redis whose count is behind the record has lost the latest change (pause.go,
	// "Recorded pauses").
	FieldPauseSeq = "pauseSeq"
)

func gateFields(b Bot) []any {
	enabled := "0"
	if b.WebhookEnabled {
		enabled = "1"
	}
	return []any{
		FieldAvailability, b.Availability,
		FieldPausedReason, b.PausedReason,
		FieldDisabledCode, string(b.DisabledCode),
		FieldDisabledReason, b.DisabledReason,
		FieldWebhookEnabled, enabled,
		FieldSymbol, b.Symbol,
		FieldRatePerMinute, strconv.Itoa(int(b.RateLimit.PerMinute)),
		FieldRateBurst, strconv.Itoa(int(b.RateLimit.Burst)),
		FieldDedupeMillis, strconv.FormatInt(b.DedupeWindowMillis, 10),
	}
}
