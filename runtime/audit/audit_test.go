package audit

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

func newJournal(t testing.TB) (*Journal, redis.UniversalClient, *testkit.Clock) {
	t.Helper()
	_, rdb := storetest.New(t)
	clk := testkit.NewClock(t0)
	return New(rdb, Options{Now: clk.Now}), rdb, clk
}

func call(user, tool string, i int) Entry {
	return Entry{UserID: user, ClientID: "c-1", ClientName: "Claude", Channel: ChannelMCP, Tool: tool,
		Arguments: json.RawMessage(fmt.Sprintf(`{"i":%d,"amount":"0.10000000"}`, i)), Outcome: Outcome{OK: true}}
}

func TestRecordAndListNewestFirstInPages(t *testing.T) {
	j, _, clk := newJournal(t)
	ctx := t.Context()
	for i := range 5 {
		if err := j.Record(ctx, call("alice", "place_order", i)); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
	}
	// Two entries in one millisecond keep both, in order.
	clk.Advance(-time.Second)
	if err := j.Record(ctx, call("alice", "place_order", 5)); err != nil {
		t.Fatal(err)
	}
	var got []int
	cursor := ""
	pages := 0
	for {
		es, next, err := j.List(ctx, "alice", cursor, 4)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, e := range es {
			var a struct{ I int }
			if err := json.Unmarshal(e.Arguments, &a); err != nil {
				t.Fatal(err)
			}
			got = append(got, a.I)
		}
		if next == "" {
			break
		}
		cursor = next
	}
	if fmt.Sprint(got) != "[5 4 3 2 1 0]" || pages != 2 {
		t.Fatalf("order %v over %d pages", got, pages)
	}
	es, _, _ := j.List(ctx, "alice", "", 1)
	e := es[0]
	// Entry 4 was recorded at t0+4s; entry 5 at t0+5s-1s = t0+4s too.
	if e.Tool != "place_order" || e.ClientID != "c-1" || e.ClientName != "Claude" || e.Channel != ChannelMCP ||
		!e.Outcome.OK || !e.Time.Equal(t0.Add(4*time.Second)) || e.UserID != "alice" ||
		string(e.Arguments) != `{"amount":"0.10000000","i":5}` {
		t.Fatalf("entry %+v args %s", e, e.Arguments)
	}
}

func TestAnotherUsersEntriesAreInvisible(t *testing.T) {
	j, _, _ := newJournal(t)
	ctx := t.Context()
	if err := j.Record(ctx, call("alice", "delete_bot", 1)); err != nil {
		t.Fatal(err)
	}
	es, next, err := j.List(ctx, "bob", "", 10)
	if err != nil || len(es) != 0 || next != "" {
		t.Fatalf("bob sees %v %q %v", es, next, err)
	}
	if err := j.Record(ctx, call("bob", "pause_bot", 2)); err != nil {
		t.Fatal(err)
	}
	es, _, _ = j.List(ctx, "bob", "", 10)
	if len(es) != 1 || es[0].Tool != "pause_bot" {
		t.Fatalf("bob's journal %+v", es)
	}
	es, _, _ = j.List(ctx, "alice", "", 10)
	if len(es) != 1 || es[0].Tool != "delete_bot" {
		t.Fatalf("alice's journal %+v", es)
	}
}

func TestRetentionTrimsOldEntries(t *testing.T) {
	j, rdb, clk := newJournal(t)
	ctx := t.Context()
	key := store.UserAudit("alice")
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(j.Record(ctx, call("alice", "old", 0)))    // t0
	clk.Advance(10 * 24 * time.Hour)                // t0+10d
	must(j.Record(ctx, call("alice", "newer", 1)))  // t0+10d
	clk.Advance(80*24*time.Hour + time.Millisecond) // t0+90d+1ms: "old" is 1 ms past 90 days
	es, _, err := j.List(ctx, "alice", "", 10)      // hidden before any trim
	if err != nil || len(es) != 1 || es[0].Tool != "newer" {
		t.Fatalf("list past retention %+v %v", es, err)
	}
	if n, _ := rdb.XLen(ctx, key).Result(); n != 2 {
		t.Fatalf("nothing trims before a write: %d", n)
	}
	must(j.Record(ctx, call("alice", "latest", 2)))
	if n, _ := rdb.XLen(ctx, key).Result(); n != 2 { // "old" trimmed, "newer" and "latest" kept
		t.Fatalf("after trim: %d entries", n)
	}
	// The key lives one retention past its newest entry.
	ttl, _ := rdb.PTTL(ctx, key).Result()
	if ttl <= 89*24*time.Hour || ttl > 90*24*time.Hour {
		t.Fatalf("ttl %v", ttl)
	}
}

func TestClockGoingBackStillRecords(t *testing.T) {
	j, _, clk := newJournal(t)
	ctx := t.Context()
	if err := j.Record(ctx, call("alice", "a", 0)); err != nil {
		t.Fatal(err)
	}
	clk.Advance(-time.Minute)
	if err := j.Record(ctx, call("alice", "b", 1)); err != nil {
		t.Fatal(err)
	}
	es, _, _ := j.List(ctx, "alice", "", 10)
	if len(es) != 2 || es[0].Tool != "b" || !strings.HasPrefix(es[0].ID, fmt.Sprint(t0.UnixMilli())+"-") {
		t.Fatalf("%+v", es)
	}
}

func TestListBoundsAndBadCursor(t *testing.T) {
	j, _, clk := newJournal(t)
	ctx := t.Context()
	for i := range MaxPageSize + 5 {
		if err := j.Record(ctx, call("alice", "x", i)); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Millisecond)
	}
	es, next, err := j.List(ctx, "alice", "", 10_000)
	if err != nil || len(es) != MaxPageSize || next == "" {
		t.Fatalf("%d %q %v", len(es), next, err)
	}
	es, _, _ = j.List(ctx, "alice", "", 0)
	if len(es) != DefaultPageSize {
		t.Fatalf("default page %d", len(es))
	}
	for _, c := range []string{"abc", "1-", "+", "(1-0", "1-0 2"} {
		if _, _, err := j.List(ctx, "alice", c, 1); errs.CodeOf(err) != errs.InvalidParameter {
			t.Fatalf("cursor %q: %v", c, err)
		}
	}
}

func TestRecordRefusesIncompleteEntries(t *testing.T) {
	j, _, _ := newJournal(t)
	for _, e := range []Entry{{Tool: "x", Channel: ChannelMCP}, {UserID: "u", Channel: ChannelMCP}, {UserID: "u", Tool: "x", Channel: "cli"}} {
		if err := j.Record(t.Context(), e); err == nil {
			t.Fatalf("accepted %+v", e)
		}
	}
}

func TestOutcomeOf(t *testing.T) {
	if o := OutcomeOf(nil); !o.OK || o.Code != "" {
		t.Fatalf("%+v", o)
	}
	wrapped := fmt.Errorf("fleet: %w", errs.Wrap(errors.New("dial 10.0.0.7:6379: refused"), errs.NotFound, "bot not found"))
	if o := OutcomeOf(wrapped); o.OK || o.Code != errs.NotFound || o.Message != "bot not found" {
		t.Fatalf("%+v", o)
	}
	if o := OutcomeOf(errors.New("dial 10.0.0.7:6379: refused")); o.Code != errs.InternalError || o.Message != InternalMessage {
		t.Fatalf("%+v", o)
	}
}

func TestRecordStoresTheFailureOutcome(t *testing.T) {
	j, _, _ := newJournal(t)
	e := call("alice", "place_order", 1)
	e.Outcome = OutcomeOf(errs.New(errs.InsufficientBalance, "need 10 USDT"))
	e.ClientID, e.ClientName, e.Channel = "", "", ChannelDashboard
	if err := j.Record(t.Context(), e); err != nil {
		t.Fatal(err)
	}
	es, _, _ := j.List(t.Context(), "alice", "", 1)
	if es[0].Outcome != (Outcome{Code: errs.InsufficientBalance, Message: "need 10 USDT"}) ||
		es[0].Channel != ChannelDashboard || es[0].ClientID != "" {
		t.Fatalf("%+v", es[0])
	}
}

func BenchmarkRecord(b *testing.B) {
	j, _, _ := newJournal(b)
	e := call("alice", "place_order", 1)
	for b.Loop() {
		if err := j.Record(b.Context(), e); err != nil {
			b.Fatal(err)
		}
	}
}

func TestEntryCapDropsTheOldest(t *testing.T) {
	_, rdb := storetest.New(t)
	clk := testkit.NewClock(t0)
	j := New(rdb, Options{Now: clk.Now, MaxEntries: 3})
	for i := range 5 {
		if err := j.Record(t.Context(), call("alice", "x", i)); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
	}
	es, _, _ := j.List(t.Context(), "alice", "", 10)
	var got []int
	for _, e := range es {
		var a struct{ I int }
		if err := json.Unmarshal(e.Arguments, &a); err != nil {
			t.Fatal(err)
		}
		got = append(got, a.I)
	}
	if fmt.Sprint(got) != "[4 3 2]" {
		t.Fatalf("%v", got)
	}
}

func TestBindFlags(t *testing.T) {
	var o Options
	fs := flag.NewFlagSet("x", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	BindFlags(fs, &o)
	if o.Retention != 2160*time.Hour || o.MaxEntries != DefaultMaxEntries {
		t.Fatalf("defaults %+v", o)
	}
	if err := fs.Parse([]string{"--audit-retention=720h", "--audit-max-entries=7"}); err != nil || o.Retention != 720*time.Hour || o.MaxEntries != 7 {
		t.Fatalf("%+v %v", o, err)
	}
	if err := fs.Parse([]string{"--audit-retention=-1h"}); err == nil {
		t.Fatal("a negative retention parsed")
	}
}

func BenchmarkListPage(b *testing.B) {
	j, _, clk := newJournal(b)
	for i := range 1000 {
		if err := j.Record(b.Context(), call("alice", "place_order", i)); err != nil {
			b.Fatal(err)
		}
		clk.Advance(time.Millisecond)
	}
	for b.Loop() {
		if es, _, err := j.List(b.Context(), "alice", "", DefaultPageSize); err != nil || len(es) != DefaultPageSize {
			b.Fatal(len(es), err)
		}
	}
}
