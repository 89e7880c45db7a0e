package apppolicy_test

import (
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

func TestSwitch(t *testing.T) {
	_, rdb := storetest.New(t)
	clk := testkit.NewClock(time.Date(2026, 12, 6, 9, 30, 0, 0, time.UTC))
	sw := apppolicy.New(rdb, apppolicy.Options{Now: clk.Now, DB: dbtest.New(t)})
	ctx := t.Context()
	if _, on, err := sw.Since(ctx, "u1"); on || err != nil {
		t.Fatalf("off at first: %v %v", on, err)
	}
	first, err := sw.Suspend(ctx, "u1")
	if err != nil || !first.Equal(clk.Now()) {
		t.Fatalf("suspend: %v %v", first, err)
	}
	// A second suspension keeps the first time; another user is not affected.
	clk.Advance(time.Minute)
	if again, err := sw.Suspend(ctx, "u1"); err != nil || !again.Equal(first) {
		t.Fatalf("second suspend: %v %v", again, err)
	}
	if _, on, _ := sw.Since(ctx, "u2"); on {
		t.Fatal("u2 suspended by u1's switch")
	}
	e := apppolicy.Refusal(first)
	if e.Code != errs.PolicyLimit || e.Details["limit"] != apppolicy.LimitKillSwitch || e.Details["since"] != "2026-12-06T09:30:00Z" ||
		e.Code.HTTPStatus() != 403 {
		t.Fatalf("refusal %+v", e)
	}
	if err := sw.Lift(ctx, "u1"); err != nil {
		t.Fatal(err)
	}
	if _, on, _ := sw.Since(ctx, "u1"); on {
		t.Fatal("still on after lift")
	}
	// A value that cannot be read still reads as on: never off because of its format.
	if err := rdb.Set(ctx, store.UserAppsSuspended("u3"), "garbage", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if _, on, err := sw.Since(ctx, "u3"); !on || err != nil {
		t.Fatalf("unreadable switch: %v %v", on, err)
	}
}
