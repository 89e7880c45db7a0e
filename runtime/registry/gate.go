package registry

import (
	"context"
	"strconv"

	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/store"
)

// Gate fields: the few facts the webhook intake checks on every signal, kept as plain hash
// fields beside the config JSON so that the intake's single Lua call can read them without
// decoding JSON. The controller writes them with the projection; the executor writes the
// runtime pause fields (FieldPause, FieldPauseUntil) and the controller never touches those.
const (
	FieldAvailability   = "availability"
	FieldPausedReason   = "pausedReason"
	FieldDisabledReason = "disabledReason"
	FieldWebhookEnabled = "webhookEnabled" // "1" or "0"
	FieldSymbol         = "symbol"
	FieldRatePerMinute  = "ratePerMinute"
	FieldRateBurst      = "rateBurst"
	FieldDedupeMillis   = "dedupeMillis"
	FieldPartition      = "partition"

	// FieldPause is a runtime pause (Errors or Risk) set by the executor; FieldPauseUntil is
	// when it ends in ms since epoch (0: until resumed).
	FieldPause      = "pause"
	FieldPauseUntil = "pauseUntil"
)

func gateFields(b Bot) []any {
	enabled := "0"
	if b.WebhookEnabled {
		enabled = "1"
	}
	return []any{
		FieldAvailability, b.Availability,
		FieldPausedReason, b.PausedReason,
		FieldDisabledReason, b.DisabledReason,
		FieldWebhookEnabled, enabled,
		FieldSymbol, b.Symbol,
		FieldRatePerMinute, strconv.Itoa(int(b.RateLimit.PerMinute)),
		FieldRateBurst, strconv.Itoa(int(b.RateLimit.Burst)),
		FieldDedupeMillis, strconv.FormatInt(b.DedupeWindowMillis, 10),
		FieldPartition, strconv.Itoa(queue.PartitionOf(b.ID)),
	}
}

// RuntimePause is a pause the executor set (Errors or Risk).
type RuntimePause struct {
	Reason string
	// Until is when it ends; zero means until resumed.
	Until int64 // ms since epoch
}

// GetRuntimePause reads a bot's runtime pause; Reason is empty when there is none or it
// has ended at nowMillis.
func (r *Registry) GetRuntimePause(ctx context.Context, id string, nowMillis int64) (RuntimePause, error) {
	v, err := r.rdb.HMGet(ctx, store.Bot(id), FieldPause, FieldPauseUntil).Result()
	if err != nil {
		return RuntimePause{}, err
	}
	p := RuntimePause{Reason: asString(v[0])}
	if u := asString(v[1]); u != "" {
		p.Until, _ = strconv.ParseInt(u, 10, 64)
	}
	if p.Reason == "" || (p.Until > 0 && p.Until <= nowMillis) {
		return RuntimePause{}, nil
	}
	return p, nil
}

// ClearRuntimePause resumes a bot the executor paused.
func (r *Registry) ClearRuntimePause(ctx context.Context, id string) error {
	return r.rdb.HDel(ctx, store.Bot(id), FieldPause, FieldPauseUntil).Err()
}
