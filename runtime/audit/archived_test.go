package audit_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/archive"
	"github.com/sigops/sigops/runtime/audit"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// With PostgreSQL the journal survives a lost Redis: entries the archiver copied are listed
// after FLUSHALL exactly as before, and pages across the seam between the archived
// entries and newer ones still only in Redis have no gap and no repeat.
func TestTheJournalSurvivesALostRedis(t *testing.T) {
	_, rdb := storetest.New(t)
	db := dbtest.New(t)
	clk := testkit.NewClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC))
	j := audit.New(rdb, audit.Options{Now: clk.Now, DB: db})
	ctx := t.Context()
	record := func(i int, ok bool) {
		e := audit.Entry{UserID: "u-1", ClientID: "c-1", ClientName: "Claude", Channel: audit.ChannelMCP, Tool: "place_order",
			Arguments: json.RawMessage(fmt.Sprintf(`{"i":%d,"apiSecret":"s3cret"}`, i)), Outcome: audit.Outcome{OK: ok}}
		if !ok {
			e.Outcome.Code, e.Outcome.Message = errs.PolicyLimit, "limit"
		}
		if err := j.Record(ctx, e); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Millisecond)
	}
	for i := range 5 {
		record(i, i%2 == 0)
	}
	a := archive.New(archive.Options{Redis: rdb, DB: db})
	if n, _, err := a.Step(ctx); err != nil || n != 5 {
		t.Fatalf("archived %d: %v", n, err)
	}
	before := pages(t, j, 2)
	if len(before) != 5 {
		t.Fatalf("%d entries before the loss", len(before))
	}
	if err := storetest.FlushAll(ctx, rdb); err != nil {
		t.Fatal(err)
	}
	after := pages(t, j, 2)
	if len(after) != 5 {
		t.Fatalf("%d entries after FLUSHALL, want 5", len(after))
	}
	for i := range before {
		b, a := before[i], after[i]
		if a.ID != b.ID || a.Tool != b.Tool || string(a.Arguments) != string(b.Arguments) || a.Outcome != b.Outcome ||
			!a.Time.Equal(b.Time) || a.ClientName != b.ClientName || a.Channel != b.Channel {
			t.Errorf("entry %d: %+v, was %+v", i, a, b)
		}
	}
	// Newer entries in Redis only, beside the archived ones: every page size lists all 8 once.
	for i := 5; i < 8; i++ {
		record(i, true)
	}
	for size := 1; size <= 9; size++ {
		all := pages(t, j, size)
		if len(all) != 8 {
			t.Fatalf("pages of %d: %d entries, want 8", size, len(all))
		}
		for k := 1; k < len(all); k++ {
			if all[k].ID >= all[k-1].ID && len(all[k].ID) == len(all[k-1].ID) {
				t.Fatalf("pages of %d: %s after %s", size, all[k].ID, all[k-1].ID)
			}
		}
	}
}

// pages lists the whole journal of u-1 a page of size at a time.
func pages(t *testing.T, j *audit.Journal, size int) []audit.Entry {
	t.Helper()
	var out []audit.Entry
	cursor := ""
	for range 100 {
		page, next, err := j.List(t.Context(), "u-1", cursor, size)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, page...)
		if next == "" {
			return out
		}
		cursor = next
	}
	t.Fatal("the pages never end")
	return nil
}
