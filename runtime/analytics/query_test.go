package analytics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/analytics"
	"github.com/sigops/sigops/runtime/errs"
)

func TestParseQuery(t *testing.T) {
	// Tuesday 24 November 2026, 12:00 UTC (13:00 in Paris: the UTC day rules).
	now := time.Date(2026, 11, 24, 13, 0, 0, 0, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		period, start, end, equity string
		value, label, from, to     string
		withEquity                 bool
	}{
		{"", "", "", "", "30d", "Last 30 days", "2026-10-26", "2026-11-24", false},
		{"today", "", "", "true", "today", "Today", "2026-11-24", "2026-11-24", true},
		{"week", "", "", "1", "week", "This week", "2026-11-23", "2026-11-24", true}, // Monday the 23rd
		{"month", "", "", "0", "month", "This month", "2026-11-01", "2026-11-24", false},
		{"7d", "", "", "false", "7d", "Last 7 days", "2026-11-18", "2026-11-24", false},
		{"30d", "", "", "", "30d", "Last 30 days", "2026-10-26", "2026-11-24", false},
		{"90d", "", "", "", "90d", "Last 90 days", "2026-08-27", "2026-11-24", false},
		{"ytd", "", "", "", "ytd", "Year to date", "2026-01-01", "2026-11-24", false},
		{"all", "", "", "", "all", "All time", "2026-11-24", "2026-11-24", false}, // From: the first trade, once read
		{"", "2026-11-01", "2026-11-10", "", "custom", "2026-11-01 to 2026-11-10", "2026-11-01", "2026-11-10", false},
		{"", "2026-11-01", "", "", "custom", "2026-11-01 to 2026-11-24", "2026-11-01", "2026-11-24", false},
		{"", "2026-11-24", "2026-11-24", "", "custom", "2026-11-24 to 2026-11-24", "2026-11-24", "2026-11-24", false},
		// An end after today stops at today.
		{"", "2026-11-20", "2027-01-01", "", "custom", "2026-11-20 to 2026-11-24", "2026-11-20", "2026-11-24", false},
	} {
		q, err := analytics.ParseQuery(tc.period, tc.start, tc.end, tc.equity, now)
		if err != nil {
			t.Errorf("%q %q %q: %v", tc.period, tc.start, tc.end, err)
			continue
		}
		if q.Period != tc.value || q.Label != tc.label || q.From.String() != tc.from || q.To.String() != tc.to ||
			q.Equity != tc.withEquity || q.AllFrom != (tc.value == "all") {
			t.Errorf("%q %q %q: %+v, want %s %q %s..%s equity %v", tc.period, tc.start, tc.end, q, tc.value, tc.label, tc.from, tc.to, tc.withEquity)
		}
	}
	// A week starting today: Monday 23 November is its own first day; Sunday 29 is the last.
	for day, from := range map[int]string{23: "2026-11-23", 29: "2026-11-23", 30: "2026-11-30"} {
		q, err := analytics.ParseQuery("week", "", "", "", time.Date(2026, 11, day, 1, 0, 0, 0, time.UTC))
		if err != nil || q.From.String() != from {
			t.Errorf("week on the %d: %s %v, want %s", day, q.From, err, from)
		}
	}
}

func TestParseQueryRefusals(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		period, start, end, equity string
		names                      string // the parameter the message names
	}{
		{"1y", "", "", "", "period"},
		{"ALL", "", "", "", "period"},
		{"7d", "2026-11-01", "", "", "period"},
		{"", "", "2026-11-10", "", "endDate"},
		{"", "2026-11-31", "", "", "startDate"},
		{"", "2026/11/01", "", "", "startDate"},
		{"", "2026-11-01", "10 Nov", "", "endDate"},
		{"", "2026-11-10", "2026-11-01", "", "startDate"},
		{"", "2026-11-25", "", "", "startDate"},
		{"", "", "", "yes", "includeEquity"},
		{"", "", "", "TRUE", "includeEquity"},
	} {
		_, err := analytics.ParseQuery(tc.period, tc.start, tc.end, tc.equity, now)
		e, ok := errs.As(err)
		if !ok || e.Code != errs.InvalidParameter || !strings.HasPrefix(e.Message, tc.names) {
			t.Errorf("%q %q %q %q: %v, want INVALID_PARAMETER naming %s", tc.period, tc.start, tc.end, tc.equity, err, tc.names)
		}
	}
}

func TestPeriods(t *testing.T) {
	p := analytics.Periods()
	var values []string
	for _, v := range p {
		values = append(values, v.Value)
		if v.Label == "" {
			t.Errorf("%s has no label", v.Value)
		}
	}
	if got := strings.Join(values, ","); got != "today,week,month,7d,30d,90d,ytd,all" {
		t.Errorf("periods %s", got)
	}
	p[0].Label = "changed"
	if analytics.Periods()[0].Label != "Today" {
		t.Error("Periods shares its slice with callers")
	}
}
