package webhookd

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
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

	// Any Content-Type: TradingView sends JSON as text/plain.
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.refuse(w, "", errs.New(errs.InvalidJSON, "body exceeds %d KiB", MaxBodyBytes>>10), http.StatusRequestEntityTooLarge, received)
			return
		}
		s.refuse(w, "", errs.New(errs.InvalidJSON, "cannot read body"), 0, received)
		return
	}
	sig, err := signal.Parse(body)
	if err != nil {
		s.refuse(w, "", err, 0, received)
		return
	}
	if sig.Symbol != "" {
		if sig.Symbol, err = s.opts.Symbols().Resolve(sig.Symbol); err != nil {
			s.refuse(w, "", err, 0, received)
			return
		}
	}
	payload, err := json.Marshal(sig)
	if err != nil {
		s.refuse(w, "", err, 0, received)
		return
	}

	signalID := uuid.NewString()
	wait := r.URL.Query().Get("wait") != "false"
	req := intake.Request{
		WebhookHash: registry.HashWebhookID(id), SignalID: signalID, Priority: queue.PriorityWebhook,
		Signal: payload, ReceivedAt: received,
		NeedsSymbol: sig.Action.IsEntry() && sig.Symbol == "",
		BodyHash:    sha256Hex(body),
	}
	if key := r.Header.Get("Idempotency-Key"); key != "" {
		req.IdempotencyHash = sha256Hex([]byte(key))
	}
	var results <-chan resultT
	if wait {
		ch, cancel := s.opts.Waiter.Register(signalID)
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
	if adm.Duplicate {
		s.metrics.signals.WithLabelValues("duplicate", "").Inc()
		log.Debug("duplicate signal dropped")
		s.answerDuplicate(w, r, adm.SignalID)
		return
	}
	if !wait {
		s.metrics.signals.WithLabelValues("queued", "").Inc()
		writeJSON(w, http.StatusOK, successBody{Success: true, Message: "Signal queued", SignalID: signalID, Timestamp: received.UnixMilli()})
		return
	}

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
		if res, ok, err := s.opts.Results.GetResult(r.Context(), firstID); err == nil && ok {
			writeResult(w, res)
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
