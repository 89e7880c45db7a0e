// Package intake admits webhook signals into the queue in one Redis round trip: it resolves
// the webhook route, applies the bot's gates (deleted, webhook disabled, disabled, paused,
// missing symbol), drops duplicates (Idempotency-Key and the bot's dedupeWindow), enforces
// the bot's rate limit across every webhookd replica, and XADDs the signal to the bot's
// partition stream.
//
// Why a hand-written script and not go-redis/redis_rate: redis_rate runs the same GCRA
// algorithm, but as its own round trip; a signal would then cost two or more Redis calls,
// and the per-signal round trips are what bound intake throughput. The script keeps it to one.
package intake

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/store"
)

//go:embed intake.lua
var script string

var intakeScript = redis.NewScript(script)

// IdempotencyTTL is how long an Idempotency-Key remembers its first signal.
const IdempotencyTTL = 24 * time.Hour

// Request is one signal to admit.
type Request struct {
	WebhookHash string // sha256 of the webhook ID from the URL
	SignalID    string
	Priority    queue.Priority
	Signal      json.RawMessage // the parsed signal.Signal as JSON
	ReplyTo     string          // the waiting webhookd's channel, or ""
	ReceivedAt  time.Time
	// NeedsSymbol: an entry without a symbol, acceptable only if the bot has a fixed pair.
	NeedsSymbol bool
	// IdempotencyHash and BodyHash are SHA-256 hex of the Idempotency-Key header and the
	// body; empty to skip.
	IdempotencyHash string
	BodyHash        string
}

// Admission is an accepted signal.
type Admission struct {
	BotID    string
	SignalID string
	// Duplicate: the signal repeats an earlier one, whose ID SignalID now is; nothing was queued.
	Duplicate bool
}

// Intake admits signals.
type Intake struct{ rdb redis.Scripter }

// New returns an Intake on rdb.
func New(rdb redis.Scripter) *Intake { return &Intake{rdb: rdb} }

// envelope is queue.Envelope without the bot ID, which the script adds once it knows it.
type envelope struct {
	SignalID   string          `json:"signalId"`
	Priority   queue.Priority  `json:"priority"`
	Source     string          `json:"source"`
	Signal     json.RawMessage `json:"signal"`
	ReceivedAt int64           `json:"receivedAt"`
	ReplyTo    string          `json:"replyTo,omitempty"`
}

// Admit runs the gates and queues the signal. A refusal is an *errs.Error with the spec's
// code (INVALID_WEBHOOK, BOT_DELETED, WEBHOOK_DISABLED, BOT_DISABLED, EXCHANGE_DISCONNECTED,
// BOT_PAUSED, MISSING_SYMBOL, RATE_LIMITED with RetryAfter); the Admission's BotID is set
// whenever the route resolved, for logs and metrics.
func (in *Intake) Admit(ctx context.Context, r Request) (Admission, error) {
	env, err := json.Marshal(envelope{SignalID: r.SignalID, Priority: r.Priority, Source: queue.SourceWebhook,
		Signal: r.Signal, ReceivedAt: r.ReceivedAt.UnixMilli(), ReplyTo: r.ReplyTo})
	if err != nil {
		return Admission{}, err
	}
	needs := "0"
	if r.NeedsSymbol {
		needs = "1"
	}
	before, after := store.QueueStreamParts(int(r.Priority))
	res, err := intakeScript.Run(ctx, in.rdb, []string{store.Webhook(r.WebhookHash)},
		r.ReceivedAt.UnixMilli(), r.SignalID, env, needs, r.IdempotencyHash, r.BodyHash,
		store.BotKeyPrefix(), store.RateLimitPrefix(), store.IdempotencyPrefix(), store.DedupePrefix(),
		before, after, IdempotencyTTL.Milliseconds(), queue.MaxLen).Slice()
	if err != nil {
		return Admission{}, fmt.Errorf("intake script: %w", err)
	}
	if len(res) != 4 {
		return Admission{}, fmt.Errorf("intake script: unexpected reply %v", res)
	}
	status, _ := res[0].(string)
	value, _ := res[1].(string)
	bot, _ := res[3].(string)
	switch status {
	case "ok":
		return Admission{BotID: bot, SignalID: value}, nil
	case "dup":
		return Admission{BotID: bot, SignalID: value, Duplicate: true}, nil
	case "err":
		e := errs.New(errs.Code(value), "%s", messages[errs.Code(value)])
		if retry, ok := res[2].(int64); ok && retry > 0 {
			e.RetryAfter = time.Duration(retry) * time.Millisecond
			e.Message += " (retry after " + strconv.FormatInt((retry+999)/1000, 10) + " s)"
		}
		return Admission{BotID: bot}, e
	}
	return Admission{}, fmt.Errorf("intake script: unknown status %q", status)
}

// messages are the client-facing texts of the intake's refusals.
var messages = map[errs.Code]string{
	errs.InvalidWebhook:       "webhook ID not found or regenerated",
	errs.BotDeleted:           "bot deleted",
	errs.WebhookDisabled:      "webhook disabled",
	errs.BotDisabled:          "bot disabled",
	errs.ExchangeDisconnected: "exchange not connected",
	errs.BotPaused:            "bot paused",
	errs.MissingSymbol:        "symbol required: the bot has no fixed pair",
	errs.RateLimited:          "too many signals for this bot",
}
