package load

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// PipelineScenarios are the pipeline benchmark's steps, in order:
//
//	intake-max   wait=false, full speed over 50 connections, 5 s   (target: ≥ 10,000 signals/s)
//	intake-1000  wait=false, 1,000 signals/s, 10 s                  (target: p99 < 5 ms)
//	fill-500     wait=true, 500 signals/s, 10 s                     (target: p50 < 2 ms, p99 < 10 ms)
//	fill-max     wait=true, full speed over 50 connections, 5 s     (reference)
func PipelineScenarios() []Scenario {
	return []Scenario{
		// The full-speed steps are bounded by count too (maxFullSpeed), so that the whole
		// sequence fits under the stack's Redis memory refusal on a fast host.
		{Name: "intake-max", Duration: 5 * time.Second, Connections: 50, Wait: false, MaxSignals: maxFullSpeed},
		{Name: "intake-1000", Rate: 1000, Duration: 10 * time.Second, Connections: 50, Wait: false},
		{Name: "fill-500", Rate: 500, Duration: 10 * time.Second, Connections: 50, Wait: true},
		{Name: "fill-max", Duration: 5 * time.Second, Connections: 50, Wait: true, MaxSignals: maxFullSpeed},
	}
}

// maxFullSpeed bounds each full-speed step of PipelineScenarios. intake-max runs twice
// (without and with the executor), so the sequence sends at most 3 × 25,000 + 10,000 +
// 5,000 = 90,000 signals. At the 4 KB each one leaves in the benchmark's Redis (no archive:
// the history stays there) that is about 360 MB, under the 512 MB stack's refusal at 90 %.
// A 2-core host that sends them in under 5 s (one measured 23,000/s) stops at the count.
const maxFullSpeed = 25_000

// Goal is a scenario's target figures (docs/benchmarks.md lists them); a zero field sets
// no target.
type Goal struct {
	MinThroughput  float64
	MaxP50, MaxP99 time.Duration
}

// Goals are the targets of PipelineScenarios: the intake with the executor busy on the
// same cores, and the executor's own ceiling and latency, with persistence off and as
// shipped alike.
var Goals = map[string]Goal{
	"intake-max":  {MinThroughput: 8000},
	"intake-1000": {MaxP99: 5 * time.Millisecond},
	"fill-max":    {MinThroughput: 4000},
	"fill-500":    {MaxP50: 2 * time.Millisecond, MaxP99: 5 * time.Millisecond},
}

// Verdicts compares a result with its goal: one line per target, "met" or "missed".
func (g Goal) Verdicts(r *Result) []string {
	var out []string
	say := func(ok bool, what string) {
		v := "met"
		if !ok {
			v = "MISSED"
		}
		out = append(out, fmt.Sprintf("%s: %s %s", r.Scenario.Name, what, v))
	}
	if g.MinThroughput > 0 {
		say(r.Throughput() >= g.MinThroughput, fmt.Sprintf("throughput %.0f/s (target ≥ %.0f/s)", r.Throughput(), g.MinThroughput))
	}
	if g.MaxP50 > 0 {
		say(r.Percentile(0.5) < g.MaxP50, fmt.Sprintf("p50 %s (target < %s)", ms(r.Percentile(0.5)), ms(g.MaxP50)))
	}
	if g.MaxP99 > 0 {
		say(r.Percentile(0.99) < g.MaxP99, fmt.Sprintf("p99 %s (target < %s)", ms(r.Percentile(0.99)), ms(g.MaxP99)))
	}
	return out
}

// ParseScenario reads "name=x,wait=false,rate=1000,duration=10s,conns=50" (rate 0 or
// absent: full speed; wait defaults to true, conns to 50, duration to 10s).
func ParseScenario(spec string) (Scenario, error) {
	s := Scenario{Duration: 10 * time.Second, Connections: 50, Wait: true}
	for _, part := range strings.Split(spec, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return s, fmt.Errorf("scenario %q: %q is not key=value", spec, part)
		}
		var err error
		switch k {
		case "name":
			s.Name = v
		case "wait":
			s.Wait, err = strconv.ParseBool(v)
		case "rate":
			s.Rate, err = strconv.ParseFloat(v, 64)
		case "duration":
			s.Duration, err = time.ParseDuration(v)
		case "conns", "connections":
			s.Connections, err = strconv.Atoi(v)
		default:
			return s, fmt.Errorf("scenario %q: unknown key %q (name, wait, rate, duration, conns)", spec, k)
		}
		if err != nil {
			return s, fmt.Errorf("scenario %q: %s: %w", spec, k, err)
		}
	}
	if s.Rate < 0 || s.Duration <= 0 || s.Connections <= 0 {
		return s, fmt.Errorf("scenario %q: rate must be ≥ 0, duration and conns positive", spec)
	}
	if s.Name == "" {
		s.Name = "custom"
	}
	return s, nil
}
