package webhookd

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/intake"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/signal"
)

// handleWebhook: receive, validate, queue, wait for execute and confirm (spec: Processing order).
func (s *Server) handleWebhook(w http.ResponseWriter, r *http.Request) {
	received := s.opts.Now()
	id := chi.URLParam(r, "webhookId")
	// Decision 1: not a UUID is 404; a UUID that matches no bot is 401 (from the intake).
	if len(id) != 36 || uuid.Validate(id) != nil {
		s.metrics.signals.WithLabelValues("refused", "NOT_FOUND").Inc()
		writeNotFound(w)
		return
	}
	in, ref := s.readSignal(w, r)
	if ref != nil {
		s.refuse(w, "", ref.err, ref.status, received)
		return
	}

	req := in.intakeRequest(id, r.Header.Get("Idempotency-Key"), received)
	wait := r.URL.Query().Get("wait") != "false"
	var results <-chan resultT
	if wait {
		ch, cancel := s.opts.Waiter.Register(req.SignalID)
		defer cancel()
		results, req.ReplyTo = ch, s.opts.Waiter.Channel()
	}
	adm, err := s.opts.Intake.Admit(r.Context(), req)
	if err != nil {
		s.refuseBot(w, adm.BotID, err, received)
		return
	}
	s.metrics.intakeLatency.Observe(time.Since(received).Seconds())
	log := s.opts.Logger.With("signalId", adm.SignalID, "botId", adm.BotID)
	switch {
	case adm.Duplicate:
		s.metrics.signals.WithLabelValues("duplicate", "").Inc()
		log.Debug("duplicate signal dropped")
		s.answerDuplicate(w, r, adm.SignalID)
	case !wait:
		s.metrics.signals.WithLabelValues("queued", "").Inc()
		writeJSON(w, http.StatusOK, successBody{Success: true, Message: "Signal queued", SignalID: req.SignalID, Timestamp: received.UnixMilli()})
	default:
		s.awaitResult(w, r, results, req.SignalID, received, log)
	}
}

// inbound is a body that parsed and validated as a signal.
type inbound struct {
	body    []byte // as received: its hash tells a repeated body
	sig     signal.Signal
	payload []byte // sig as JSON, the form the queue carries
}

// refusal is a request refused before it reaches the intake: the error answered and its
// HTTP status (0: the error code's own).
type refusal struct {
	err    error
	status int
}

// readSignal reads the body (any Content-Type: TradingView sends JSON as text/plain), parses
// the signal and resolves its symbol against the markets the service trades.
func (s *Server) readSignal(w http.ResponseWriter, r *http.Request) (inbound, *refusal) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return inbound{}, &refusal{errs.New(errs.InvalidJSON, "body exceeds %d KiB", MaxBodyBytes>>10), http.StatusRequestEntityTooLarge}
		}
		return inbound{}, &refusal{errs.New(errs.InvalidJSON, "cannot read body"), 0}
	}
	sig, err := signal.Parse(body)
	if err != nil {
		return inbound{}, &refusal{err, 0}
	}
	if sig.Symbol != "" {
		if sig.Symbol, err = s.opts.Symbols().Resolve(sig.Symbol); err != nil {
			return inbound{}, &refusal{err, 0}
		}
	}
	payload, err := json.Marshal(sig)
	if err != nil {
		return inbound{}, &refusal{err, 0}
	}
	return inbound{body: body, sig: sig, payload: payload}, nil
}

// intakeRequest is the signal as the intake admits it, under a new signal ID. Only hashes of
// the webhook ID, the body and the Idempotency-Key reach Redis.
func (in inbound) intakeRequest(webhookID, idempotencyKey string, received time.Time) intake.Request {
	req := intake.Request{
		WebhookHash: registry.HashWebhookID(webhookID), SignalID: uuid.NewString(), Priority: queue.PriorityWebhook,
		Signal: in.payload, ReceivedAt: received,
		NeedsSymbol: in.sig.Action.IsEntry() && in.sig.Symbol == "",
		BodyHash:    sha256Hex(in.body),
	}
	if idempotencyKey != "" {
		req.IdempotencyHash = sha256Hex([]byte(idempotencyKey))
	}
	return req
}

// awaitResult answers the executor's result for signalID, or "queued" once the wait bound
// has passed.
func (s *Server) awaitResult(w http.ResponseWriter, r *http.Request, results <-chan resultT, signalID string, received time.Time, log *slog.Logger) {
	timer := time.NewTimer(s.opts.WaitBound)
	defer timer.Stop()
	select {
	case res := <-results:
		s.metrics.totalLatency.Observe(time.Since(received).Seconds())
		outcome := "executed"
		if !res.Success {
			outcome = "failed"
		}
		s.metrics.signals.WithLabelValues(outcome, string(res.Code)).Inc()
		writeResult(w, res)
	case <-timer.C:
		// Decision 2: past the bound the signal is still queued; its result is readable later.
		s.metrics.signals.WithLabelValues("queued", "").Inc()
		log.Info("result not ready within the wait bound; answered queued", "bound", s.opts.WaitBound)
		writeJSON(w, http.StatusOK, successBody{Success: true, Message: "Signal queued; execution is still in progress",
			SignalID: signalID, Timestamp: s.opts.Now().UnixMilli()})
	case <-r.Context().Done():
		// The client left; the signal still executes.
	}
}

// answerDuplicate answers with the first signal's ID, and its result when it is known.
func (s *Server) answerDuplicate(w http.ResponseWriter, r *http.Request, firstID string) {
	if s.opts.Results != nil {
		if stored, err := s.opts.Results.GetResult(r.Context(), firstID); err == nil && stored.Found {
			writeResult(w, stored.Result)
			return
		}
	}
	writeJSON(w, http.StatusOK, successBody{Success: true, Message: "Duplicate signal; the first one stands",
		SignalID: firstID, Timestamp: s.opts.Now().UnixMilli()})
}

// refuse answers a validation failure; status 0 means the code's own status.
func (s *Server) refuse(w http.ResponseWriter, botID string, err error, status int, now time.Time) {
	e, ok := errs.As(err)
	if !ok {
		s.opts.Logger.Error("webhook failed", "botId", botID, "error", err)
		e = errs.New(errs.InternalError, "internal error")
	}
	s.metrics.signals.WithLabelValues("refused", string(e.Code)).Inc()
	if status != 0 {
		writeJSON(w, status, failureBody{Error: e.Message, Code: e.Code, Timestamp: now.UnixMilli()})
		return
	}
	writeError(w, e, "", now)
}

func (s *Server) refuseBot(w http.ResponseWriter, botID string, err error, now time.Time) {
	if _, ok := errs.As(err); !ok {
		// Redis unreachable or the like: 503 so that senders retry (spec: 5xx, retry later).
		s.opts.Logger.Error("intake failed", "botId", botID, "error", err)
		s.metrics.signals.WithLabelValues("error", string(errs.InternalError)).Inc()
		writeJSON(w, http.StatusServiceUnavailable, failureBody{Error: "service unavailable; retry later", Timestamp: now.UnixMilli()})
		return
	}
	s.refuse(w, botID, err, 0, now)
}

func sha256Hex(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
