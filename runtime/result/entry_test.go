package result

import (
	"strings"
	"testing"
)

// An entry comes back from its stored form as it went in, whatever its action holds; a
// signal ID holding the separator is stored as JSON and comes back too; the old sorted
// set's JSON members take their time from the score.
func TestEntryRoundTrips(t *testing.T) {
	for _, e := range []Entry{
		{SignalID: "0192f3a4-0000-7000-8000-000000000001", Source: "webhook", Action: "buy", ReceivedAt: 1795262400000},
		{SignalID: "s", Source: "manual", ReceivedAt: 1},
		{SignalID: "s-2", Source: "webhook", Action: "a\x1fb\x1f{\"x\"}", ReceivedAt: 7},
		{SignalID: "odd\x1fid", Source: "copy", Action: "close", ReceivedAt: 9},
	} {
		enc := e.Encode()
		if strings.Contains(e.SignalID, entrySep) != strings.HasPrefix(enc, "{") {
			t.Fatalf("%+v stored as %q", e, enc)
		}
		got, err := DecodeEntry(enc, 0)
		if err != nil || got != e {
			t.Fatalf("%+v: stored %q, read %+v, %v", e, enc, got, err)
		}
	}
	got, err := DecodeEntry(`{"id":"s-1","source":"webhook","action":"buy"}`, 1000)
	if want := (Entry{SignalID: "s-1", Source: "webhook", Action: "buy", ReceivedAt: 1000}); err != nil || got != want {
		t.Fatalf("old member: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "12", "x\x1fwebhook\x1fs\x1fbuy", "12\x1fwebhook\x1f\x1fbuy", "{"} {
		if _, err := DecodeEntry(bad, 0); err == nil {
			t.Fatalf("%q decoded", bad)
		}
	}
}
