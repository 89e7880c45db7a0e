package chaos_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/exchange/paper"
	"github.com/sigops/sigops/test/load"
)

// watchReadiness polls every daemon's /readyz every 100 ms until the returned function is
// called, which returns how long each was not ready.
func (s *chaosStack) watchReadiness(ctx context.Context) func() map[string]time.Duration {
	ctx, cancel := context.WithCancel(ctx)
	hc := &http.Client{Timeout: 500 * time.Millisecond}
	var mu sync.Mutex
	unready := map[string]time.Duration{}
	var wg sync.WaitGroup
	ready := map[string]string{}
	for _, d := range s.Daemons() {
		if d.ReadyURL() != "" {
			ready[d.Name()] = d.ReadyURL()
		}
	}
	for name, url := range ready {
		wg.Go(func() {
			last := time.Now()
			for ctx.Err() == nil {
				ok := false
				if resp, err := hc.Get(url); err == nil {
					ok = resp.StatusCode == http.StatusOK
					_ = resp.Body.Close()
				}
				time.Sleep(100 * time.Millisecond)
				now := time.Now()
				if !ok {
					mu.Lock()
					unready[name] += now.Sub(last)
					mu.Unlock()
				}
				last = now
			}
		})
	}
	return func() map[string]time.Duration {
		cancel()
		wg.Wait()
		return unready
	}
}

// window is a stretch of the run whose figures are reported.
type window struct {
	name     string
	from, to time.Time
}

// aftermath is how long after its repair a fault still shows: a killed executor's
// partitions stay with it until their lease lapses (the queue's LeaseTTL, 5 s), and the
// backlog of the fault drains meanwhile.
const aftermath = 5 * time.Second

// report logs the run's figures: the totals, then per fault (from its injection until
// aftermath after its repair, or until it was whole again if that came later) and for the calm rest of the run, the requests meant to go
// then, how many were acknowledged with a signal ID, the p99 of their answers and from
// answer to stored result, each p99 also as a multiple of the calm rest's (the same run's
// bare reference).
func report(t *testing.T, res *load.Result, rec *load.Reconciliation, c *load.Checker, faults []*fault, unready map[string]time.Duration, reruns, dropped string) {
	var b strings.Builder
	fmt.Fprintf(&b, "chaos run: %d bots, %d signals/s for %s, %d connections through nginx\n", bots, rate, runFor, conns)
	fmt.Fprintf(&b, "sent %d, acknowledged %d, lost %d, duplicated %d, out of order %d; answers %v; results %v; %d orders\n",
		res.Sent, len(res.Accepted), rec.Lost, rec.DuplicatedTotal(), rec.OutOfOrder, res.Outcomes, rec.ResultCodes, rec.Orders)
	var windows []window
	for _, f := range faults {
		end := f.repaired.Add(aftermath)
		if f.restored.After(end) {
			end = f.restored // the old primary's rejoin and full sync belong to the fault too
		}
		windows = append(windows, window{f.name, f.injected, end})
	}
	calm := func(a load.Answer) bool {
		return !slices.ContainsFunc(windows, func(w window) bool { return !a.Sent.Before(w.from) && a.Sent.Before(w.to) })
	}
	ref := figuresOf(res, c, calm)
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "window\tlength\tsent\tacknowledged\tanswer p99\t× calm\tanswer to result p99\t× calm\t")
	for _, w := range windows {
		fig := figuresOf(res, c, func(a load.Answer) bool { return !a.Sent.Before(w.from) && a.Sent.Before(w.to) })
		fig.line(tw, w.name, w.to.Sub(w.from), ref)
	}
	ref.line(tw, "no fault", 0, ref)
	_ = tw.Flush()
	// The same p99s for each 5 s of the run, to see where a fault's effect ends.
	b.WriteString("per 5 s of the run, answer p99 / answer to result p99 (ms):")
	for at := res.Start; at.Before(res.Start.Add(runFor)); at = at.Add(5 * time.Second) {
		f := figuresOf(res, c, func(a load.Answer) bool { return !a.Sent.Before(at) && a.Sent.Before(at.Add(5*time.Second)) })
		fmt.Fprintf(&b, " %.0fs %.0f/%.0f", at.Sub(res.Start).Seconds(), float64(f.answered)/1e6, float64(f.toResult)/1e6)
	}
	b.WriteString("\n")
	names := make([]string, 0, len(unready))
	for name := range unready {
		names = append(names, name)
	}
	slices.Sort(names)
	b.WriteString("not ready during the run:")
	for _, name := range names {
		fmt.Fprintf(&b, " %s %.1f s", name, unready[name].Seconds())
	}
	fmt.Fprintf(&b, "\nexecutors now running: finished signals run again, unconfirmed (sigops_queue_unconfirmed_total) %s; entries not run, missing on the new master (sigops_queue_lost_entries_total) %s", reruns, dropped)
	t.Log(b.String())
}

// counter sums a counter over the executors' /metrics, as text ("unknown" when one cannot
// be read). A restarted executor counts from its restart.
func (s *chaosStack) counter(name string) string {
	hc := &http.Client{Timeout: 2 * time.Second}
	var sum float64
	for _, e := range s.executor {
		resp, err := hc.Get(strings.TrimSuffix(e.ReadyURL(), "/readyz") + "/metrics")
		if err != nil {
			return "unknown"
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			return "unknown"
		}
		for line := range strings.Lines(string(body)) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+" "); ok {
				var f float64
				if _, err := fmt.Sscan(v, &f); err == nil {
					sum += f
				}
			}
		}
	}
	return fmt.Sprint(sum)
}

// figures are one window's: the requests meant to go in it, how many were acknowledged,
// the p99 of their answers and from answer to stored result.
type figures struct {
	sent, acked        int
	answered, toResult time.Duration
}

// figuresOf measures the answers picks chooses.
func figuresOf(res *load.Result, c *load.Checker, picks func(load.Answer) bool) figures {
	var f figures
	f.sent, f.acked, f.answered = res.Among(picks)
	var results []time.Duration
	for _, a := range res.Answers {
		if at, ok := c.ExecutedAt(a.SignalID); ok && a.SignalID != "" && picks(a) {
			results = append(results, max(0, at.Sub(a.Answered)))
		}
	}
	slices.Sort(results)
	f.toResult = load.Percentile(results, 0.99)
	return f
}

// line writes the figures as a row, each p99 beside its multiple of ref's.
func (f figures) line(w io.Writer, name string, length time.Duration, ref figures) {
	span := "-"
	if length > 0 {
		span = fmt.Sprintf("%.1f s", length.Seconds())
	}
	fmt.Fprintf(w, "%s\t%s\t%d\t%d\t%s\t%s\t%s\t%s\t\n", name, span, f.sent, f.acked,
		ms(f.answered), times(f.answered, ref.answered), ms(f.toResult), times(f.toResult, ref.toResult))
}

// times is d as a multiple of ref.
func times(d, ref time.Duration) string {
	if ref <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", float64(d)/float64(ref))
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond)) }

// checkRecovered checks that every daemon is ready again, that each killed one was
// restarted exactly once and that no other one restarted (a fault of Redis must not crash
// the daemons using it: the manager, authd, nginx included), and that the stack has not
// failed.
func (s *chaosStack) checkRecovered(ctx context.Context, t *testing.T) {
	t.Helper()
	killed := 0
	for _, d := range s.Daemons() {
		if d.ReadyURL() != "" {
			if err := d.WaitReady(ctx, time.Minute); err != nil {
				t.Errorf("%s: %v", d.Name(), err)
			}
		}
		killed += d.Restarts()
		if d.Restarts() > 1 {
			t.Errorf("%s restarted %d times; it was killed at most once", d.Name(), d.Restarts())
		}
	}
	if killed != 2 {
		t.Errorf("%d daemon restarts; want 2 (the executor and the webhookd the test killed)", killed)
	}
	select {
	case err := <-s.Failed():
		t.Errorf("the stack failed: %v", err)
	default:
	}
}

// checkBalances closes every bot's position (a close to a flat bot fails harmlessly), then
// checks each bot's paper account to the last decimal: its USDT balance is the initial
// balance plus the net PnL of every trade its book recorded (price PnL minus entry and exit
// fees, as runtime/analytics sums it), with no BTC held and no margin locked.
func checkBalances(ctx context.Context, t *testing.T, rdb redis.UniversalClient, s *chaosStack, fleet *load.Fleet) {
	t.Helper()
	hc := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: s.roots, MinVersion: tls.VersionTLS12}}}
	for _, b := range fleet.Bots {
		resp, err := hc.Post(s.BaseURL()+b.Path, "application/json", bytes.NewReader([]byte(`{"action":"close"}`)))
		if err != nil {
			t.Fatalf("close %s: %v", b.Name, err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK && !strings.Contains(string(body), "POSITION_NOT_FOUND") {
			t.Fatalf("close %s: %d %s", b.Name, resp.StatusCode, body)
		}
	}
	initial := decimal.RequireFromString(load.DefaultBalance)
	books := analytics.New(rdb)
	trades := 0
	for _, b := range fleet.Bots {
		x := paper.NewExchange(rdb, b.AccountID, b.ID, nil)
		bal, err := x.Balance(ctx, paper.Quote)
		if err != nil {
			t.Fatal(err)
		}
		held, err := x.Holding(ctx, "BTC")
		if err != nil {
			t.Fatal(err)
		}
		pnl, err := books.Realised(ctx, b.ID)
		if err != nil {
			t.Fatal(err)
		}
		if want := initial.Add(pnl); !bal.Free.Equal(want) || !held.IsZero() || !bal.Locked.IsZero() {
			t.Errorf("%s: balance %s USDT (locked %s), %s BTC held; want %s + %s net PnL = %s, nothing held",
				b.Name, bal.Free, bal.Locked, held, initial, pnl, want)
		}
		if !pnl.IsZero() {
			trades++
		}
	}
	if trades == 0 {
		t.Error("no bot booked any PnL: the run traded nothing")
	}
	t.Logf("%d paper balances equal their initial balance plus booked net PnL, to the decimal (%d bots with PnL)", len(fleet.Bots), trades)
}
