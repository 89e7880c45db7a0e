package load

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Row is one scenario's measurement and its reconciliation.
type Row struct {
	Result *Result
	Check  *Reconciliation // nil when not reconciled
}

// WriteTable prints the rows as an aligned table, then each scenario's answers and
// results by outcome.
func WriteTable(w io.Writer, rows []Row) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "scenario\twait\trate\tconns\tsent\taccepted\tsignals/s\tp50\tp90\tp99\tmax\tlost\tduplicated\tdrained in\t")
	for _, r := range rows {
		s := r.Result.Scenario
		rate := "max"
		if s.Rate > 0 {
			rate = fmt.Sprintf("%.0f/s", s.Rate)
		}
		lost, dup, drained := "-", "-", "-"
		if r.Check != nil {
			lost, dup = fmt.Sprint(r.Check.Lost), fmt.Sprint(r.Check.DuplicatedTotal())
			drained = ms(r.Check.Waited)
		}
		fmt.Fprintf(tw, "%s\t%t\t%s\t%d\t%d\t%d\t%.0f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n",
			s.Name, s.Wait, rate, s.Connections, r.Result.Sent, len(r.Result.Accepted), r.Result.Throughput(),
			ms(r.Result.Percentile(0.50)), ms(r.Result.Percentile(0.90)), ms(r.Result.Percentile(0.99)), ms(r.Result.Max()),
			lost, dup, drained)
	}
	_ = tw.Flush()
	for _, r := range rows {
		fmt.Fprintf(w, "%s: answers %s", r.Result.Scenario.Name, counts(r.Result.Outcomes))
		if r.Result.TransportErrors > 0 {
			fmt.Fprintf(w, "; %d transport errors (%s)", r.Result.TransportErrors, r.Result.FirstError)
		}
		if r.Result.MaxBehind > time.Millisecond {
			fmt.Fprintf(w, "; the sender fell up to %s behind schedule", ms(r.Result.MaxBehind))
		}
		if c := r.Check; c != nil {
			fmt.Fprintf(w, "; results %s; %d orders, %d exchange fills", counts(c.ResultCodes), c.Orders, c.Fills)
			if !c.OK() {
				fmt.Fprintf(w, "; FAILED: %s", c.Problems())
			}
		}
		fmt.Fprintln(w)
	}
}

// ms formats a duration in milliseconds with two decimals.
func ms(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

func counts(m map[string]int) string {
	keys := slices.Sorted(maps.Keys(m))
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
