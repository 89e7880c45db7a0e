package webhookd

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/google/uuid"

	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/intake"
	"github.com/sigops/sigops/runtime/registry"
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
	req, ref := s.readSignal(w, r, received)
	if ref != nil {
		s.refuse(w, "", ref.err, ref.status, received)
		return
	}
	// Only the webhook ID's hash reaches Redis.
	req.WebhookHash = registry.HashWebhookID(id)
	wait := r.URL.Query().Get("wait") != "false"
	pending := &pendingResult{w: s.opts.Waiter}
	defer pending.stop()
	if wait {
		req.Listen, req.ReplyTo = pending.listen, s.opts.Waiter.Channel()
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
		writeJSON(w, http.StatusOK, intake.Queued(adm.SignalID, false, received))
	default:
		s.awaitResult(w, r, pending.results, adm.SignalID, received, log)
	}
}

// pendingResult is a request's wait for its signal's result. It is registered with the
// Waiter from intake.Request.Listen, before the signal is queued, under the ID the intake
// queues it under: that ID is placed in the bot's partition, and the bot is known only
// once the intake has resolved the webhook's route.
type pendingResult struct {
	w       Waiter
	id      string
	results <-chan resultT
	cancel  func()
}

// listen registers the wait for id, in place of one for another ID (a try of the intake
// that queued nothing).
func (p *pendingResult) listen(id string) {
	if p.cancel != nil {
		if id == p.id {
			return
		}
		p.cancel()
	}
	p.id = id
	p.results, p.cancel = p.w.Register(id)
}

func (p *pendingResult) stop() {
	if p.cancel != nil {
		p.cancel()
	}
}

// refusal is a request refused before it reaches the intake: the error answered and its
// HTTP status (0: the error code's own).
type refusal struct {
	err    error
	status int
}

// readSignal reads the body (any Content-Type: TradingView sends JSON as text/plain) and
// makes it the intake's request (intake.NewRequest: the signal parsed, its symbol resolved
// against the markets the service trades).
func (s *Server) readSignal(w http.ResponseWriter, r *http.Request, received time.Time) (intake.Request, *refusal) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			return intake.Request{}, &refusal{errs.New(errs.InvalidJSON, "body exceeds %d KiB", MaxBodyBytes>>10), http.StatusRequestEntityTooLarge}
		}
		return intake.Request{}, &refusal{errs.New(errs.InvalidJSON, "cannot read body"), 0}
	}
	req, err := intake.NewRequest(body, s.opts.Symbols(), r.Header.Get("Idempotency-Key"), received)
	if err != nil {
		return intake.Request{}, &refusal{err, 0}
	}
	return req, nil
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
		writeJSON(w, http.StatusOK, intake.Queued(signalID, true, s.opts.Now()))
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
	writeJSON(w, http.StatusOK, intake.Duplicate(firstID, s.opts.Now()))
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
