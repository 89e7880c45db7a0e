package intake

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/result"
	"github.com/sigops/sigops/runtime/signal"
)

// NewRequest parses body as a webhook signal (runtime/signal's parser), resolves its symbol
// against symbols, and returns it as the intake admits it under a new signal ID (a random
// UUID, placed in the bot's partition once the intake knows the bot), at webhook priority. Only hashes of the body and of idempotencyKey (none when empty) reach Redis.
// WebhookHash is the caller's to set (Admit), or AdmitBot's. Errors are the parser's and
// the symbol index's *errs.Error.
func NewRequest(body []byte, symbols *signal.Symbols, idempotencyKey string, received time.Time) (Request, error) {
	sig, err := signal.Parse(body)
	if err != nil {
		return Request{}, err
	}
	if sig.Symbol != "" {
		if sig.Symbol, err = symbols.Resolve(sig.Symbol); err != nil {
			return Request{}, err
		}
	}
	payload, err := json.Marshal(sig)
	if err != nil {
		return Request{}, err
	}
	req := Request{SignalID: uuid.NewString(), Priority: queue.PriorityWebhook, Signal: payload, ReceivedAt: received,
		NeedsSymbol: sig.Action.IsEntry() && sig.Symbol == "", BodyHash: SHA256Hex(body)}
	if idempotencyKey != "" {
		req.IdempotencyHash = SHA256Hex([]byte(idempotencyKey))
	}
	return req, nil
}

// SHA256Hex is the hex SHA-256 of b: how bodies and Idempotency-Keys are stored.
func SHA256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// AdmitBot admits r for bot id as if it came in on the bot's current webhook: the same
// script, gates, duplicate checks and rate limit as Admit, for callers that know the bot
// (mcpd's send_signal) rather than its webhook ID. The caller checks that the user owns the
// bot. A bot that is not projected answers BOT_DELETED; a webhook regenerated between the
// read and the script is read once more.
func (in *Intake) AdmitBot(ctx context.Context, id string, r Request) (Admission, error) {
	for try := 0; ; try++ {
		hash, err := registry.WebhookHashOf(ctx, in.rdb, id)
		if errors.Is(err, registry.ErrNotFound) {
			return Admission{BotID: id}, refusal(errs.BotDeleted)
		}
		if err != nil {
			return Admission{BotID: id}, fmt.Errorf("intake: webhook of bot: %w", err)
		}
		r.WebhookHash = hash
		adm, err := in.admit(ctx, id, r)
		if !errors.Is(err, errStale) {
			return adm, err
		}
		if try == 1 {
			return Admission{BotID: id}, refusal(errs.BotDeleted)
		}
	}
}

// Answer is the webhook's success answer (spec: webhook success response), plus the order
// when one was placed. mcpd's send_signal answers the same shape.
type Answer struct {
	Success   bool          `json:"success"`
	Message   string        `json:"message"`
	SignalID  string        `json:"signalId"`
	Timestamp int64         `json:"timestamp"`
	Order     *result.Order `json:"order,omitempty"`
}

// Queued is the answer for a signal queued and not waited for, or waited for past the
// bound (stillRunning).
func Queued(signalID string, stillRunning bool, now time.Time) Answer {
	msg := "Signal queued"
	if stillRunning {
		msg = "Signal queued; execution is still in progress"
	}
	return Answer{Success: true, Message: msg, SignalID: signalID, Timestamp: now.UnixMilli()}
}

// Duplicate is the answer for a repeated signal whose first one has no result yet.
func Duplicate(firstID string, now time.Time) Answer {
	return Answer{Success: true, Message: "Duplicate signal; the first one stands", SignalID: firstID, Timestamp: now.UnixMilli()}
}

// Executed is the answer for a successful result.
func Executed(res result.Result) Answer {
	msg := res.Message
	if msg == "" {
		msg = "Signal executed"
	}
	return Answer{Success: true, Message: msg, SignalID: res.SignalID, Timestamp: res.Timestamp, Order: res.Order}
}
