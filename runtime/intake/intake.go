// Package intake admits webhook signals into the queue in one Redis round trip in the steady
// state: it resolves the webhook route, applies the bot's gates (deleted, webhook disabled,
// disabled, paused, missing symbol), drops duplicates (Idempotency-Key and the bot's
// dedupeWindow), enforces the bot's rate limit across every webhookd replica, and XADDs the
// signal to the bot's partition stream.
//
// The route (webhook hash -> bot ID) is a key of its own slot and the rest are in the bot's
// partition slot, so they cannot be one Redis Cluster script. The intake reads the route,
// then runs the script on the bot's keys; it remembers the routes it resolved (routes.go),
// so a known webhook costs the script alone. The script checks that the bot's hash still
// names the webhook hash the signal came in on and answers "stale" otherwise (the bot was
// deleted, or its webhook regenerated): the intake then forgets the route, reads it again
// and answers from what it finds (BOT_DELETED for a tombstone, INVALID_WEBHOOK for a
// regenerated ID). So the old URL stops working the moment the registry writes the new
// webhook hash into the bot's hash, whatever any replica remembers.
//
// Why a hand-written script and not go-redis/redis_rate: redis_rate runs the same GCRA
// algorithm, but as its own round trip; a signal would then cost two or more Redis calls,
// and the per-signal round trips are what bound intake throughput. The script keeps it to one.
package intake

import (
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
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
	// SignalID is the signal's ID as drawn; it is queued placed in the bot's partition
	// (queue.SignalIDFor), which Admission.SignalID answers.
	SignalID   string
	Priority   queue.Priority
	Signal     json.RawMessage // the parsed signal.Signal as JSON
	ReplyTo    string          // the waiting webhookd's channel, or ""
	ReceivedAt time.Time
	// NeedsSymbol: an entry without a symbol, acceptable only if the bot has a fixed pair.
	NeedsSymbol bool
	// IdempotencyHash and BodyHash are SHA-256 hex of the Idempotency-Key header and the
	// body; empty to skip.
	IdempotencyHash string
	BodyHash        string
	// Listen, when set, is called with the ID the signal is queued under before it is
	// queued: a caller that waits for the result registers its wait there (ReplyTo). The ID
	// is SignalID placed in the bot's partition (queue.SignalIDFor), known only once the
	// route has led to the bot. A stale route read again makes a second call, with the ID
	// for the bot found then; the ID of the last call is the one queued.
	Listen func(signalID string)
	// Admitted are entry amounts a connected app's policy admitted (queue.Envelope.Admitted).
	Admitted map[string]httpapi.Number
}

// Admission is an accepted signal.
type Admission struct {
	BotID string
	// SignalID is the ID the signal is queued under: Request.SignalID placed in the bot's
	// partition.
	SignalID string
	// Duplicate: the signal repeats an earlier one, whose ID SignalID now is; nothing was queued.
	Duplicate bool
}

// Client is what the intake needs of a Redis client: the route read and the script.
type Client interface {
	redis.Scripter
	redis.HashCmdable
}

// Intake admits signals.
type Intake struct {
	rdb Client
	// guard refuses new signals while Redis is above its memory watermark (nil: never).
	guard  *store.MemoryGuard
	routes routes
}

// New returns an Intake on rdb.
func New(rdb Client) *Intake { return &Intake{rdb: rdb} }

// WithMemoryGuard makes in refuse new signals with SERVICE_UNAVAILABLE (503, Retry-After)
// while Redis is above g's watermark, before anything is written: what is refused was
// never accepted, and what was accepted keeps the headroom for its booking and result.
func (in *Intake) WithMemoryGuard(g *store.MemoryGuard) *Intake {
	in.guard = g
	return in
}

// Admit runs the gates and queues the signal. A refusal is an *errs.Error with the spec's
// code (INVALID_WEBHOOK, BOT_DELETED, WEBHOOK_DISABLED, BOT_DISABLED, EXCHANGE_DISCONNECTED,
// BOT_PAUSED, MISSING_SYMBOL, RATE_LIMITED with RetryAfter); the Admission's BotID is set
// whenever the route resolved, for logs and metrics.
func (in *Intake) Admit(ctx context.Context, r Request) (Admission, error) {
	bot, known := in.routes.get(r.WebhookHash)
	for {
		if !known {
			route, err := registry.ResolveRoute(ctx, in.rdb, r.WebhookHash)
			if errors.Is(err, registry.ErrNotFound) {
				return Admission{}, refusal(errs.InvalidWebhook)
			}
			if err != nil {
				return Admission{}, fmt.Errorf("intake: route: %w", err)
			}
			if route.Deleted {
				return Admission{BotID: route.BotID}, refusal(errs.BotDeleted)
			}
			bot = route.BotID
			in.routes.put(r.WebhookHash, bot)
		}
		adm, err := in.admit(ctx, bot, r)
		if !errors.Is(err, errStale) {
			return adm, err
		}
		in.routes.drop(r.WebhookHash, bot)
		if !known {
			// Read just now, and already out of date: the route leads to a bot that is gone
			// or has another webhook (a projection or deletion in progress, or done).
			return Admission{BotID: bot}, refusal(errs.InvalidWebhook)
		}
		known = false // remembered: read the route again
	}
}

// errStale: the bot the route led to is gone or routes another webhook now.
var errStale = errors.New("intake: stale route")

// admit runs the script on bot's keys, under r.SignalID placed in bot's partition. Every
// try places the caller's ID afresh, so a try for another bot than the last gets that bot's.
func (in *Intake) admit(ctx context.Context, bot string, r Request) (Admission, error) {
	if err := in.guard.Admit(ctx); err != nil {
		return Admission{BotID: bot}, err
	}
	r.SignalID = queue.SignalIDFor(bot, r.SignalID)
	if r.Listen != nil {
		r.Listen(r.SignalID)
	}
	env, err := json.Marshal(queue.Envelope{SignalID: r.SignalID, BotID: bot, Priority: r.Priority,
		Source: queue.SourceWebhook, Signal: r.Signal, ReceivedAt: r.ReceivedAt.UnixMilli(), ReplyTo: r.ReplyTo, Admitted: r.Admitted})
	if err != nil {
		return Admission{}, err
	}
	keys := []string{store.Bot(bot), store.RateLimit(bot), store.Idempotency(bot, r.IdempotencyHash),
		store.Dedupe(bot, r.BodyHash), queue.StreamOf(bot, r.Priority)}
	// On the replicas before the sender hears "queued" (store.AckScript).
	res, err := store.AckScript(ctx, in.rdb, intakeScript, keys,
		r.ReceivedAt.UnixMilli(), r.SignalID, env, flag(r.NeedsSymbol), r.WebhookHash,
		flag(r.IdempotencyHash != ""), flag(r.BodyHash != ""), IdempotencyTTL.Milliseconds(), queue.MaxLen).Slice()
	if err != nil {
		return Admission{BotID: bot}, fmt.Errorf("intake script: %w", err)
	}
	if len(res) != 3 {
		return Admission{BotID: bot}, fmt.Errorf("intake script: unexpected reply %v", res)
	}
	status, _ := res[0].(string)
	value, _ := res[1].(string)
	switch status {
	case "ok":
		return Admission{BotID: bot, SignalID: value}, nil
	case "dup":
		return Admission{BotID: bot, SignalID: value, Duplicate: true}, nil
	case "stale":
		return Admission{BotID: bot}, errStale
	case "err":
		e := refusal(errs.Code(value))
		if retry, ok := res[2].(int64); ok && retry > 0 {
			e.RetryAfter = time.Duration(retry) * time.Millisecond
			e.Message += " (retry after " + strconv.FormatInt((retry+999)/1000, 10) + " s)"
		}
		return Admission{BotID: bot}, e
	}
	return Admission{BotID: bot}, fmt.Errorf("intake script: unknown status %q", status)
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// refusal is the intake's error for code, with its client-facing text.
func refusal(code errs.Code) *errs.Error { return errs.New(code, "%s", messages[code]) }

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
