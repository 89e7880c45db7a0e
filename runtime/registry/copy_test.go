package registry_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// The followers index follows the followers' projections: a follower joins its master's
// set, moves when it copies another master, leaves it when it stops copying or is removed,
// and a removed master's set goes with it.
func TestFollowersIndex(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	reg := registry.New(rdb)
	followers := func(master string) []string {
		t.Helper()
		m, err := registry.FollowersLater(ctx, rdb, master)()
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(m)
		return m
	}
	project := func(b registry.Bot) {
		t.Helper()
		if err := reg.Project(ctx, b, "hook-"+b.ID); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{"m1", "m2"} {
		project(bot(id, "a@x.io"))
	}
	f1, f2 := bot("f1", "a@x.io"), bot("f2", "b@x.io")
	f1.CopyFrom = &registry.CopyFrom{MasterID: "m1", Ratio: "1"}
	f2.CopyFrom = &registry.CopyFrom{MasterID: "m1", Ratio: "0.5"}
	project(f1)
	project(f2)
	if got := followers("m1"); !slices.Equal(got, []string{"f1", "f2"}) {
		t.Fatalf("m1 followers = %v", got)
	}
	got, err := reg.Get(ctx, "f2")
	if err != nil || got.CopyFrom == nil || got.CopyFrom.MasterID != "m1" || got.CopyFrom.Ratio != "0.5" {
		t.Fatalf("f2 = %+v, %v", got.CopyFrom, err)
	}

	f1.CopyFrom.MasterID = "m2"
	project(f1)
	if got := followers("m1"); !slices.Equal(got, []string{"f2"}) {
		t.Fatalf("after the move, m1 followers = %v", got)
	}
	if got := followers("m2"); !slices.Equal(got, []string{"f1"}) {
		t.Fatalf("after the move, m2 followers = %v", got)
	}
	f1.CopyFrom = nil
	project(f1)
	if got := followers("m2"); len(got) != 0 {
		t.Fatalf("f1 stopped copying; m2 followers = %v", got)
	}
	if err := reg.Remove(ctx, "f2", time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := followers("m1"); len(got) != 0 {
		t.Fatalf("f2 removed; m1 followers = %v", got)
	}
	f1.CopyFrom = &registry.CopyFrom{MasterID: "m2", Ratio: "1"}
	project(f1)
	if err := reg.Remove(ctx, "m2", time.Hour); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.Exists(ctx, store.CopyFollowers("m2")).Result(); err != nil || n != 0 {
		t.Fatalf("a removed master's followers set exists: %d, %v", n, err)
	}
}

// Who may copy whom at fan-out time.
func TestFollows(t *testing.T) {
	master, own, foreign := bot("m", "a@x.io"), bot("f", " A@X.io "), bot("g", "b@x.io")
	own.CopyFrom = &registry.CopyFrom{MasterID: "m"}
	foreign.CopyFrom = &registry.CopyFrom{MasterID: "m"}
	if !registry.Follows(own, master) {
		t.Error("the same owner's bot is refused")
	}
	if registry.Follows(foreign, master) {
		t.Error("another owner's bot copies a master that is not copyable")
	}
	master.Copyable = true
	if !registry.Follows(foreign, master) {
		t.Error("another owner's bot cannot copy a copyable master")
	}
	if registry.Follows(bot("x", "a@x.io"), master) {
		t.Error("a bot that copies nothing follows")
	}
	other := own
	other.CopyFrom = &registry.CopyFrom{MasterID: "n"}
	if registry.Follows(other, master) {
		t.Error("a follower of another master follows")
	}
	master.CopyFrom = &registry.CopyFrom{MasterID: "z"}
	if registry.Follows(own, master) {
		t.Error("a master that copies another bot feeds a follower")
	}
}

// The copy state: the last outcome, the last failure kept past a success, nothing written
// for a bot that is gone.
func TestRecordCopy(t *testing.T) {
	ctx := context.Background()
	_, rdb := storetest.New(t)
	reg := registry.New(rdb)
	if err := reg.Project(ctx, bot("f", "a@x.io"), "hook-f"); err != nil {
		t.Fatal(err)
	}
	if err := reg.RecordCopy(ctx, "f", registry.CopyEvent{SignalID: "c-1", At: 1, Outcome: "BOT_PAUSED"},
		&registry.CopyError{Code: "BOT_PAUSED", Message: "bot paused (Errors)", At: 1}); err != nil {
		t.Fatal(err)
	}
	if err := reg.RecordCopy(ctx, "f", registry.CopyEvent{SignalID: "c-2", At: 2, Outcome: registry.CopyOutcomeSuccess}, nil); err != nil {
		t.Fatal(err)
	}
	st, err := reg.ReadCopy(ctx, "f")
	if err != nil || st.Last == nil || *st.Last != (registry.CopyEvent{SignalID: "c-2", At: 2, Outcome: "success"}) ||
		st.Error == nil || *st.Error != (registry.CopyError{Code: "BOT_PAUSED", Message: "bot paused (Errors)", At: 1}) {
		t.Fatalf("copy state = %+v %+v, %v", st.Last, st.Error, err)
	}
	// The projection does not touch the copy state.
	if err := reg.Project(ctx, bot("f", "a@x.io"), "hook-f"); err != nil {
		t.Fatal(err)
	}
	if st, err := reg.ReadCopy(ctx, "f"); err != nil || st.Last == nil || st.Last.SignalID != "c-2" {
		t.Fatalf("after a projection: %+v, %v", st.Last, err)
	}
	if err := reg.Remove(ctx, "f", time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := reg.RecordCopy(ctx, "f", registry.CopyEvent{SignalID: "c-3"}, nil); err != nil {
		t.Fatal(err)
	}
	if n, err := rdb.Exists(ctx, store.Bot("f")).Result(); err != nil || n != 0 {
		t.Fatalf("a late record re-created a removed bot's hash: %d, %v", n, err)
	}
}
