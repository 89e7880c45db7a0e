package load

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// The two bodies each bot alternates, so that its position opens and closes and its
// balance stays put however long the run. A close that finds nothing open (or a buy that
// finds a position already open, when a bot's signals overtake each other across
// connections) is a business failure with its own code: still a result, counted as such.
var (
	buyBody   = []byte(`{"action":"buy","symbol":"BTCUSDT","size":"` + PositionSize + `"}`)
	closeBody = []byte(`{"action":"close"}`)
)

// Target is where the signals go.
type Target struct {
	// BaseURL is the origin: http://127.0.0.1:<port> for webhookd itself, or
	// https://127.0.0.1:8443 for nginx in front of it (the local stack).
	BaseURL string
	// ForwardedProto sends X-Forwarded-Proto: https, as the Ingress does; webhookd serves
	// plain HTTP only from --trusted-proxies that say so.
	ForwardedProto bool
	// RootCAs verify an https BaseURL (nil: the system's).
	RootCAs *x509.CertPool
}

// Scenario is one load step.
type Scenario struct {
	Name string
	// Rate is signals per second on an open-loop schedule; 0 sends at full speed, each
	// connection's next request right after its last answer (closed loop).
	Rate     float64
	Duration time.Duration
	// MaxSignals, when positive, ends a full-speed run once that many requests are sent,
	// before Duration if the host is fast: every signal a step sends stays in Redis for the
	// rest of the run (results, records), and a sequence of steps must fit under the
	// stack's memory refusal whatever the host's speed. The rate is still the answers over
	// the time they took.
	MaxSignals int
	// Connections is how many keep-alive connections (and senders) are used.
	Connections int
	// Wait makes webhookd wait for the execution result (false adds ?wait=false).
	Wait bool
	// Retry, when positive, makes every request carry an Idempotency-Key of its own and
	// be sent again with it while it gets no answer or a 502, 503 or 504, for up to Retry
	// after its first try: what a careful sender does through a fault, so that a signal
	// stored by a try whose answer was lost is answered with its ID by a later try (a
	// duplicate's answer) rather than left executed and unknown to its sender.
	Retry time.Duration
}

func (s Scenario) String() string {
	rate := "full speed"
	if s.Rate > 0 {
		rate = strconv.FormatFloat(s.Rate, 'f', -1, 64) + "/s"
	}
	bound := ""
	if s.MaxSignals > 0 && s.Rate == 0 {
		bound = fmt.Sprintf(" (at most %d signals)", s.MaxSignals)
	}
	return fmt.Sprintf("%s: wait=%t, %s, %d connections, %s%s", s.Name, s.Wait, rate, s.Connections, s.Duration, bound)
}

// Result is what one scenario measured.
type Result struct {
	Scenario Scenario
	// Sent is how many requests got an answer or a transport error.
	Sent int
	// Accepted are the signal IDs of answers that carry one: queued (wait=false), executed,
	// failed in execution, or still executing when the wait bound passed.
	Accepted []string
	// Outcomes counts answers by HTTP status and code (see outcomeOf).
	Outcomes map[string]int
	// TransportErrors counts requests without an HTTP answer; FirstError is one of them.
	TransportErrors int
	FirstError      string
	// RepeatedIDs counts answers that repeated a signal ID another answer carried.
	RepeatedIDs int
	// Latencies of every answered request, sorted. At a fixed rate each is measured from
	// the request's intended send time on the schedule, so a stall that delays later sends
	// shows in their latency too (no coordinated omission).
	Latencies []time.Duration
	// Elapsed is from the first intended send to the last answer.
	Elapsed time.Duration
	// MaxBehind is how far behind its schedule the sender fell at worst (fixed rate).
	MaxBehind time.Duration
	// Start is when the scenario began.
	Start time.Time
	// Answers are every request's record, in no particular order.
	Answers []Answer
}

// Answer is what one request was told, and when.
type Answer struct {
	// Bot is the index of the bot it went to, in the runner's paths.
	Bot int
	// SignalID is the signal ID the answer carried ("" for none, and for a duplicate's).
	SignalID string
	// Sent is when the request was meant to go (its place on a fixed-rate schedule, or the
	// moment it went at full speed); Answered when the answer, or the transport error, came.
	Sent, Answered time.Time
	// Outcome is outcomeOf the answer, "not JSON", or "transport error".
	Outcome string
	// Tries is how many times it was sent (more than one only with Scenario.Retry).
	Tries int
}

// Among is what the requests that picks chooses were told: how many there were, how many
// were accepted (a signal ID), and their latencies' p99 (transport errors have none).
func (r *Result) Among(picks func(Answer) bool) (sent, accepted int, p99 time.Duration) {
	var lat []time.Duration
	for _, a := range r.Answers {
		if !picks(a) {
			continue
		}
		sent++
		if a.SignalID != "" {
			accepted++
		}
		if a.Outcome != outcomeTransport {
			lat = append(lat, a.Answered.Sub(a.Sent))
		}
	}
	slices.Sort(lat)
	return sent, accepted, Percentile(lat, 0.99)
}

// outcomeTransport is the Outcome of a request that got no HTTP answer.
const outcomeTransport = "transport error"

// Throughput is accepted signals per second.
func (r *Result) Throughput() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(len(r.Accepted)) / r.Elapsed.Seconds()
}

// Percentile is the latency below which a fraction p (0-1) of the samples fall (nearest
// rank on the sorted samples).
func (r *Result) Percentile(p float64) time.Duration { return Percentile(r.Latencies, p) }

// Percentile is the value below which a fraction p (0-1) of the sorted samples fall
// (nearest rank); 0 for none.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	i := int(p*float64(n)+0.999999999) - 1
	return sorted[min(max(i, 0), n-1)]
}

// Max is the slowest answer.
func (r *Result) Max() time.Duration {
	if len(r.Latencies) == 0 {
		return 0
	}
	return r.Latencies[len(r.Latencies)-1]
}

// Runner sends signals to a fleet's webhooks. It keeps each bot's place in its buy/close
// alternation across scenarios.
type Runner struct {
	target Target
	paths  []string
	seq    []atomic.Uint64 // per bot: how many signals it was sent
	next   atomic.Uint64   // which bot gets the next request
	// nonce starts every Idempotency-Key, so that two runners' keys never meet in a bot's
	// 24-hour idempotency records.
	nonce string
}

// NewRunner returns a Runner sending to the given webhook paths (Fleet.Paths).
func NewRunner(target Target, paths []string) (*Runner, error) {
	if len(paths) == 0 {
		return nil, errors.New("load: no webhook paths")
	}
	if !strings.HasPrefix(target.BaseURL, "http://") && !strings.HasPrefix(target.BaseURL, "https://") {
		return nil, fmt.Errorf("load: target %q is not an http(s) URL", target.BaseURL)
	}
	target.BaseURL = strings.TrimSuffix(target.BaseURL, "/")
	return &Runner{target: target, paths: paths, seq: make([]atomic.Uint64, len(paths)), nonce: strconv.FormatInt(time.Now().UnixNano(), 36)}, nil
}

// call is one request to make: to which bot, which body, when it is meant to go, and the
// Idempotency-Key its tries carry with Scenario.Retry.
type call struct {
	bot  int
	body []byte
	at   time.Time
	key  string
}

// request picks the next bot round-robin and its next body.
func (r *Runner) request(at time.Time) call {
	i := int(r.next.Add(1)-1) % len(r.paths)
	n := r.seq[i].Add(1)
	body := closeBody
	if n%2 == 1 {
		body = buyBody
	}
	return call{bot: i, body: body, at: at, key: fmt.Sprintf("%s-%d-%d", r.nonce, i, n)}
}

func (r *Runner) client(conns int) *http.Client {
	tr := &http.Transport{
		DialContext:         (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		MaxConnsPerHost:     conns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
		TLSHandshakeTimeout: 5 * time.Second,
		// Responses are small; smaller buffers than the 4 KiB default halve the memory
		// per connection and change nothing else.
		WriteBufferSize: 1024,
		ReadBufferSize:  2048,
	}
	if r.target.RootCAs != nil {
		tr.TLSClientConfig = &tls.Config{RootCAs: r.target.RootCAs, MinVersion: tls.VersionTLS12}
	}
	// Past webhookd's 2 s wait bound and its write timeout, an answer is not coming.
	return &http.Client{Transport: tr, Timeout: 15 * time.Second}
}

// worker is one sender's tallies, merged when the scenario ends.
type worker struct {
	lat      []time.Duration
	ids      []string
	outcomes map[string]int
	errs     int
	firstErr string
	last     time.Time
	answers  []Answer
}

// answer is the part of webhookd's answers a load run reads.
type answer struct {
	Success  bool            `json:"success"`
	Message  string          `json:"message"`
	SignalID string          `json:"signalId"`
	Code     string          `json:"code"`
	Order    json.RawMessage `json:"order"`
}

// outcomeOf names an answer: "200 queued", "200 filled", "200 still executing" (the wait
// bound passed), "200 duplicate", or the status and the spec's code of a refusal or a
// failed execution ("404 POSITION_NOT_FOUND", "429 RATE_LIMITED").
func outcomeOf(status int, a *answer) string {
	s := strconv.Itoa(status)
	switch {
	case status == http.StatusOK && len(a.Order) > 0 && string(a.Order) != "null":
		return s + " filled"
	case status == http.StatusOK && a.Message == "Signal queued":
		return s + " queued"
	case status == http.StatusOK && strings.HasPrefix(a.Message, "Signal queued;"):
		return s + " still executing"
	case status == http.StatusOK && strings.HasPrefix(a.Message, "Duplicate"):
		return s + " duplicate"
	case status == http.StatusOK:
		return s + " executed"
	case a.Code != "":
		return s + " " + a.Code
	}
	return s + " " + http.StatusText(status)
}

// send makes one request and records it; c.at is when the latency starts. With
// Scenario.Retry it resends the request (same body, same Idempotency-Key) while it gets no
// answer or a 502, 503 or 504, until Retry after its first try; the record is the last
// try's answer, its latency from c.at, so the retries show in it.
func (r *Runner) send(ctx context.Context, hc *http.Client, s Scenario, query string, c call, w *worker) {
	rec := Answer{Bot: c.bot, Sent: c.at, Outcome: outcomeTransport}
	defer func() {
		if ctx.Err() == nil {
			if rec.Answered.IsZero() {
				rec.Answered = time.Now()
			}
			w.answers = append(w.answers, rec)
		}
	}()
	first := time.Now()
	for {
		rec.Tries++
		status, a, err := r.try(ctx, hc, s, query, c)
		if ctx.Err() != nil {
			return
		}
		if (err != nil || retryable(status)) && s.Retry > 0 && time.Since(first) < s.Retry {
			select {
			case <-ctx.Done():
				return
			case <-time.After(retryPause):
			}
			continue
		}
		if err != nil {
			w.fail(err)
			return
		}
		now := time.Now()
		w.lat = append(w.lat, now.Sub(c.at))
		rec.Answered = now
		w.last = now
		if a == nil {
			w.outcomes[strconv.Itoa(status)+" not JSON"]++
			rec.Outcome = "not JSON"
			return
		}
		o := outcomeOf(status, a)
		w.outcomes[o]++
		rec.Outcome = o
		// A duplicate's answer names the first signal's ID. Without Retry that is another
		// request's signal. With it, the request's own key names its own signal, stored by
		// a try whose answer was lost (a try of ours, or one net/http made again by itself:
		// it resends a request with an Idempotency-Key whose connection closed unanswered).
		if a.SignalID != "" && (!strings.HasSuffix(o, " duplicate") || s.Retry > 0) {
			w.ids = append(w.ids, a.SignalID)
			rec.SignalID = a.SignalID
		}
		return
	}
}

// retryPause is how long a retrying sender waits between two tries of a request.
const retryPause = 200 * time.Millisecond

// retryable reports whether a status says the intake could not confirm the signal, so
// that a retry with the same Idempotency-Key is how a sender learns its fate: nginx found
// no webhookd (502, 504), or webhookd could not store or replicate it (503).
func retryable(status int) bool {
	return status == http.StatusBadGateway || status == http.StatusServiceUnavailable || status == http.StatusGatewayTimeout
}

// try makes one HTTP request of c: the status and decoded answer (nil when the body is
// not JSON), or the transport error.
func (r *Runner) try(ctx context.Context, hc *http.Client, s Scenario, query string, c call) (int, *answer, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.target.BaseURL+r.paths[c.bot]+query, bytes.NewReader(c.body))
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if r.target.ForwardedProto {
		req.Header.Set("X-Forwarded-Proto", "https")
	}
	if s.Retry > 0 {
		req.Header.Set("Idempotency-Key", c.key)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, nil, err
	}
	data, err := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return 0, nil, err
	}
	var a answer
	if err := json.Unmarshal(data, &a); err != nil {
		return resp.StatusCode, nil, nil
	}
	return resp.StatusCode, &a, nil
}

func (w *worker) fail(err error) {
	w.errs++
	if w.firstErr == "" {
		w.firstErr = err.Error()
	}
}

// warm opens the scenario's connections before the clock starts, with requests that make
// no signal (a GET that webhookd and nginx answer 404 or 405).
func (r *Runner) warm(ctx context.Context, hc *http.Client, conns int) {
	for range 2 {
		var wg sync.WaitGroup
		for range conns {
			wg.Go(func() {
				req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.target.BaseURL+"/api/webhooks/warm", nil)
				if err != nil {
					return
				}
				if resp, err := hc.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, resp.Body)
					_ = resp.Body.Close()
				}
			})
		}
		wg.Wait()
	}
}

// Run runs one scenario and returns what it measured. Its error is only for a scenario
// that cannot run; failed requests are counted in the Result.
func (r *Runner) Run(ctx context.Context, s Scenario) (*Result, error) {
	if s.Connections <= 0 {
		return nil, fmt.Errorf("load: scenario %s: connections must be positive", s.Name)
	}
	if s.Duration <= 0 {
		return nil, fmt.Errorf("load: scenario %s: duration must be positive", s.Name)
	}
	hc := r.client(s.Connections)
	defer hc.CloseIdleConnections()
	r.warm(ctx, hc, s.Connections)

	query := ""
	if !s.Wait {
		query = "?wait=false"
	}
	workers := make([]*worker, s.Connections)
	for i := range workers {
		workers[i] = &worker{outcomes: map[string]int{}}
	}
	res := &Result{Scenario: s, Outcomes: map[string]int{}}
	start := time.Now()
	res.Start = start
	var wg sync.WaitGroup
	if s.Rate > 0 {
		res.MaxBehind = r.runFixed(ctx, hc, s, query, start, workers, &wg)
	} else {
		deadline := start.Add(s.Duration)
		var n atomic.Int64
		for _, w := range workers {
			wg.Go(func() {
				for ctx.Err() == nil {
					sent := time.Now()
					if !sent.Before(deadline) || (s.MaxSignals > 0 && n.Add(1) > int64(s.MaxSignals)) {
						return
					}
					r.send(ctx, hc, s, query, r.request(sent), w)
				}
			})
		}
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	end := start
	seen := map[string]struct{}{}
	for _, w := range workers {
		res.Latencies = append(res.Latencies, w.lat...)
		res.Answers = append(res.Answers, w.answers...)
		for _, id := range w.ids {
			if _, dup := seen[id]; dup {
				res.RepeatedIDs++
				continue
			}
			seen[id] = struct{}{}
			res.Accepted = append(res.Accepted, id)
		}
		for k, v := range w.outcomes {
			res.Outcomes[k] += v
		}
		res.TransportErrors += w.errs
		if res.FirstError == "" {
			res.FirstError = w.firstErr
		}
		if w.last.After(end) {
			end = w.last
		}
	}
	slices.Sort(res.Latencies)
	res.Sent = len(res.Latencies) + res.TransportErrors
	res.Elapsed = end.Sub(start)
	return res, nil
}

// runFixed schedules Rate×Duration requests at start + i/Rate and hands each to the next
// free sender; senders measure latency from the intended time. It returns how far the
// schedule slipped at worst (the scheduler itself running late).
func (r *Runner) runFixed(ctx context.Context, hc *http.Client, s Scenario, query string, start time.Time, workers []*worker, wg *sync.WaitGroup) time.Duration {
	total := int(s.Rate * s.Duration.Seconds())
	// Buffered for the whole run, so the scheduler never waits on a busy sender: a backlog
	// waits in the channel and its latency keeps counting.
	jobs := make(chan call, total)
	for _, w := range workers {
		wg.Go(func() {
			for j := range jobs {
				if ctx.Err() != nil {
					continue
				}
				r.send(ctx, hc, s, query, j, w)
			}
		})
	}
	interval := float64(time.Second) / s.Rate
	var behind time.Duration
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
	for i := range total {
		at := start.Add(time.Duration(float64(i) * interval))
		if d := time.Until(at); d > 0 {
			timer.Reset(d)
			select {
			case <-ctx.Done():
			case <-timer.C:
			}
		} else if -d > behind {
			behind = -d
		}
		if ctx.Err() != nil {
			break
		}
		jobs <- r.request(at)
	}
	close(jobs)
	return behind
}
