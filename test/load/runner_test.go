package load

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeHook answers like webhookd: wait=false queues; a buy fills; a close fails with
// POSITION_NOT_FOUND; every third request to bot "b" is refused without a signal ID.
type fakeHook struct {
	n       atomic.Int64
	mu      sync.Mutex
	bodies  map[string][]string // path -> bodies in arrival order
	noProto atomic.Int64
}

func (f *fakeHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	if r.Header.Get("X-Forwarded-Proto") != "https" {
		f.noProto.Add(1)
	}
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.bodies[r.URL.Path] = append(f.bodies[r.URL.Path], string(body))
	f.mu.Unlock()
	id := fmt.Sprintf("sig-%d", f.n.Add(1))
	w.Header().Set("Content-Type", "application/json")
	switch {
	case strings.HasSuffix(r.URL.Path, "/b") && f.n.Load()%3 == 0:
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"success":false,"error":"slow down","code":"RATE_LIMITED"}`)
	case r.URL.Query().Get("wait") == "false":
		fmt.Fprintf(w, `{"success":true,"message":"Signal queued","signalId":%q}`, id)
	case strings.Contains(string(body), "buy"):
		fmt.Fprintf(w, `{"success":true,"message":"Bought","signalId":%q,"order":{"orderId":"o"}}`, id)
	default:
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprintf(w, `{"success":false,"error":"nothing open","code":"POSITION_NOT_FOUND","signalId":%q}`, id)
	}
}

func TestRunnerFixedRate(t *testing.T) {
	f := &fakeHook{bodies: map[string][]string{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	r, err := NewRunner(Target{BaseURL: srv.URL, ForwardedProto: true}, []string{"/hook/a", "/hook/b"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), Scenario{Name: "t", Rate: 200, Duration: 500 * time.Millisecond, Connections: 4, Wait: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 100 || res.TransportErrors != 0 {
		t.Fatalf("sent %d (errors %d: %s), want 100", res.Sent, res.TransportErrors, res.FirstError)
	}
	if f.noProto.Load() != 0 {
		t.Errorf("%d requests without X-Forwarded-Proto", f.noProto.Load())
	}
	limited := res.Outcomes["429 RATE_LIMITED"]
	if limited == 0 || len(res.Accepted) != 100-limited {
		t.Errorf("accepted %d, rate limited %d: want the rest accepted; outcomes %v", len(res.Accepted), limited, res.Outcomes)
	}
	if res.Outcomes["200 filled"] == 0 || res.Outcomes["404 POSITION_NOT_FOUND"] == 0 {
		t.Errorf("outcomes %v: want fills and failures", res.Outcomes)
	}
	// Open loop: 100 requests at 200/s take about 0.5 s, not less.
	if res.Elapsed < 450*time.Millisecond || res.Elapsed > 2*time.Second {
		t.Errorf("elapsed %s for 0.5 s of schedule", res.Elapsed)
	}
	if len(res.Latencies) != 100 || res.Percentile(0.5) > res.Percentile(0.99) || res.Percentile(0.99) > res.Max() {
		t.Errorf("latencies: %d samples, p50 %s p99 %s max %s", len(res.Latencies), res.Percentile(0.5), res.Percentile(0.99), res.Max())
	}
	// One record per request, bots in round-robin order; the whole schedule's window holds
	// them all, an empty one none.
	perBot := map[int]int{}
	accepted := 0
	for _, a := range res.Answers {
		perBot[a.Bot]++
		if a.SignalID != "" {
			accepted++
		}
		if a.Answered.Before(a.Sent) || a.Outcome == "" {
			t.Errorf("answer %+v: answered before sent, or no outcome", a)
		}
	}
	if len(res.Answers) != 100 || perBot[0] != 50 || perBot[1] != 50 || accepted != len(res.Accepted) {
		t.Errorf("%d answer records (by bot %v, %d with a signal ID); want 100, 50 each, %d accepted", len(res.Answers), perBot, accepted, len(res.Accepted))
	}
	all := func(Answer) bool { return true }
	if sent, acc, p99 := res.Among(all); sent != 100 || acc != len(res.Accepted) || p99 != res.Percentile(0.99) {
		t.Errorf("window over the run: %d sent, %d accepted, p99 %s; want 100, %d, %s", sent, acc, p99, len(res.Accepted), res.Percentile(0.99))
	}
	if sent, _, _ := res.Among(func(a Answer) bool { return a.Sent.Before(res.Start) }); sent != 0 {
		t.Errorf("%d requests meant to go before the run", sent)
	}
	// Each bot alternates buy and close, starting with a buy.
	for path, bodies := range f.bodies {
		if len(bodies) != 50 {
			t.Errorf("%s got %d requests, want 50", path, len(bodies))
		}
		buys := 0
		for _, b := range bodies {
			if strings.Contains(b, `"buy"`) {
				buys++
			}
		}
		if buys != 25 {
			t.Errorf("%s got %d buys of %d", path, buys, len(bodies))
		}
	}
}

func TestRunnerFullSpeedNoWait(t *testing.T) {
	f := &fakeHook{bodies: map[string][]string{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	r, err := NewRunner(Target{BaseURL: srv.URL}, []string{"/hook/a"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), Scenario{Name: "t", Duration: 200 * time.Millisecond, Connections: 3})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent == 0 || res.Outcomes["200 queued"] != res.Sent || len(res.Accepted) != res.Sent {
		t.Fatalf("sent %d, accepted %d, outcomes %v", res.Sent, len(res.Accepted), res.Outcomes)
	}
	if res.Throughput() <= 0 {
		t.Error("no throughput")
	}
}

// A full-speed run bounded by count sends exactly that many, and its rate is the answers
// over the time they took.
func TestRunnerFullSpeedStopsAtMaxSignals(t *testing.T) {
	f := &fakeHook{bodies: map[string][]string{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	r, err := NewRunner(Target{BaseURL: srv.URL}, []string{"/hook/a"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), Scenario{Name: "t", Duration: time.Minute, Connections: 4, MaxSignals: 25})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent != 25 || len(res.Accepted) != 25 {
		t.Fatalf("sent %d, accepted %d, want 25", res.Sent, len(res.Accepted))
	}
	if res.Elapsed >= time.Minute || res.Throughput() <= 0 {
		t.Fatalf("elapsed %s, throughput %.0f/s", res.Elapsed, res.Throughput())
	}
}

func TestPercentile(t *testing.T) {
	r := &Result{}
	for i := 1; i <= 100; i++ {
		r.Latencies = append(r.Latencies, time.Duration(i)*time.Millisecond)
	}
	for _, c := range []struct {
		p    float64
		want time.Duration
	}{{0.5, 50 * time.Millisecond}, {0.99, 99 * time.Millisecond}, {1, 100 * time.Millisecond}, {0, time.Millisecond}} {
		if got := r.Percentile(c.p); got != c.want {
			t.Errorf("p%v = %s, want %s", c.p*100, got, c.want)
		}
	}
}

func TestParseScenario(t *testing.T) {
	s, err := ParseScenario("name=x,wait=false,rate=1000,duration=3s,conns=8")
	if err != nil {
		t.Fatal(err)
	}
	if s != (Scenario{Name: "x", Wait: false, Rate: 1000, Duration: 3 * time.Second, Connections: 8}) {
		t.Errorf("parsed %+v", s)
	}
	if _, err := ParseScenario("rate=fast"); err == nil {
		t.Error("rate=fast accepted")
	}
}

// TestArrivalOrder compares only signals whose order of arrival is certain, and reads the
// order of execution from the book's places first, then from result timestamps.
func TestArrivalOrder(t *testing.T) {
	at := func(ms int) time.Time { return time.UnixMilli(int64(1_000_000 + ms)) }
	res := &Result{Answers: []Answer{
		{Bot: 0, SignalID: "a1", Sent: at(0), Answered: at(5)},
		{Bot: 0, SignalID: "a2", Sent: at(10), Answered: at(15)}, // after a1's answer
		{Bot: 0, SignalID: "a3", Sent: at(12), Answered: at(40)}, // overlaps a2: not compared with it
		{Bot: 0, Sent: at(20), Answered: at(21)},                 // refused: no signal
		{Bot: 1, SignalID: "b1", Sent: at(0), Answered: at(5)},
		{Bot: 1, SignalID: "b2", Sent: at(10), Answered: at(15)},
	}}
	c := &Checker{
		// a3 placed its order before a2's (allowed: they overlapped), b2 before b1 (not).
		placed:     map[string]int{"a1": 0, "a3": 1, "a2": 2, "b2": 0, "b1": 1},
		executedAt: map[string]int64{"a1": 1, "a2": 3, "a3": 2, "b1": 9, "b2": 9},
	}
	rec := &Reconciliation{}
	c.checkArrivalOrder(res, rec)
	if rec.OutOfOrder != 1 || len(rec.OutOfOrderIDs) != 1 || rec.OutOfOrderIDs[0] != "b1>b2" || rec.OK() {
		t.Fatalf("out of order %d %v (OK %v); want b1>b2 only", rec.OutOfOrder, rec.OutOfOrderIDs, rec.OK())
	}
	// Without places (no orders), result timestamps decide; equal ones say nothing.
	c.placed = map[string]int{}
	rec = &Reconciliation{}
	c.checkArrivalOrder(res, rec)
	if rec.OutOfOrder != 0 {
		t.Fatalf("by timestamps: %d out of order %v; want none (b1 and b2 share a millisecond)", rec.OutOfOrder, rec.OutOfOrderIDs)
	}
	c.executedAt["a1"] = 4 // after a2 (3) and a3 (2), though it arrived before both
	c.checkArrivalOrder(res, rec)
	if rec.OutOfOrder != 2 || rec.OutOfOrderIDs[0] != "a1>a2" || rec.OutOfOrderIDs[1] != "a1>a3" {
		t.Fatalf("by timestamps: %d out of order %v; want a1>a2 and a1>a3", rec.OutOfOrder, rec.OutOfOrderIDs)
	}
}

// flakyHook stores every signal on its first try but loses that answer (a dropped
// connection for even keys, a 503 for odd ones); a retry with the same Idempotency-Key is
// answered as webhookd answers a duplicate: 200 with the first signal's ID.
type flakyHook struct {
	mu    sync.Mutex
	ids   map[string]string // Idempotency-Key -> signal ID
	tries int
}

func (f *flakyHook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.NotFound(w, r)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	f.mu.Lock()
	f.tries++
	id, seen := f.ids[key]
	if !seen {
		id = fmt.Sprintf("sig-%d", len(f.ids)+1)
		f.ids[key] = id
	}
	drop := len(f.ids)%2 == 0
	f.mu.Unlock()
	switch {
	case key == "":
		http.Error(w, `{"success":false,"code":"NO_KEY"}`, http.StatusBadRequest)
	case seen:
		fmt.Fprintf(w, `{"success":true,"message":"Duplicate signal ignored","signalId":%q}`, id)
	case drop:
		conn, _, _ := w.(http.Hijacker).Hijack()
		_ = conn.Close()
	default:
		w.WriteHeader(http.StatusServiceUnavailable)
		fmt.Fprint(w, `{"success":false,"code":"SERVICE_UNAVAILABLE"}`)
	}
}

func TestRunnerRetriesWithIdempotencyKey(t *testing.T) {
	f := &flakyHook{ids: map[string]string{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	r, err := NewRunner(Target{BaseURL: srv.URL}, []string{"/api/webhooks/a", "/api/webhooks/b"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(t.Context(), Scenario{Name: "retry", Rate: 200, Duration: 100 * time.Millisecond, Connections: 4, Retry: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// Every request's signal was stored once by its first try and acknowledged by its
	// second: each ID accepted once, none repeated, and no request needed a third try.
	if len(res.Accepted) != 20 || len(f.ids) != 20 || res.RepeatedIDs != 0 || f.tries != 40 {
		t.Fatalf("%d accepted, %d stored, %d repeated IDs, %d tries; want 20, 20, 0, 40 (outcomes %v)", len(res.Accepted), len(f.ids), res.RepeatedIDs, f.tries, res.Outcomes)
	}
	retried := 0
	for _, a := range res.Answers {
		if a.SignalID == "" || a.Outcome != "200 duplicate" {
			t.Errorf("answer %+v; want a duplicate's answer with the signal ID", a)
		}
		retried += a.Tries - 1
	}
	// The 503s are retried by the runner; the dropped connections by net/http itself (the
	// key makes the request idempotent to it), which the runner does not see.
	if retried != 10 {
		t.Errorf("the runner retried %d times; want 10 (the 503s)", retried)
	}
	if res.TransportErrors != 0 || res.Sent != 20 {
		t.Errorf("%d sent, %d transport errors; want 20 sent, the lost answers retried", res.Sent, res.TransportErrors)
	}

	// Without Retry no key is sent and nothing is resent.
	f2 := &flakyHook{ids: map[string]string{}}
	srv2 := httptest.NewServer(f2)
	defer srv2.Close()
	r2, err := NewRunner(Target{BaseURL: srv2.URL}, []string{"/api/webhooks/a"})
	if err != nil {
		t.Fatal(err)
	}
	res2, err := r2.Run(t.Context(), Scenario{Name: "no retry", Rate: 100, Duration: 100 * time.Millisecond, Connections: 2})
	if err != nil {
		t.Fatal(err)
	}
	if f2.tries != 10 || res2.Outcomes["400 NO_KEY"] != 10 || len(res2.Accepted) != 0 {
		t.Errorf("without Retry: %d tries, outcomes %v; want 10 tries, each without a key", f2.tries, res2.Outcomes)
	}
}
