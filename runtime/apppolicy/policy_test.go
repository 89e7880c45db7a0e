package apppolicy_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/store/storetest"
)

func limitOf(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	e, ok := errs.As(err)
	if !ok || e.Code != errs.PolicyLimit {
		t.Fatalf("not a POLICY_LIMIT: %v", err)
	}
	return e.Details["limit"].(string)
}

func TestAdmit(t *testing.T) { onBothStores(t, testAdmit) }

func testAdmit(t *testing.T, newPolicies func(now func() time.Time) *apppolicy.Policies) {
	clk := testkit.NewClock(time.Date(2026, 12, 6, 9, 59, 0, 0, time.UTC))
	ps := newPolicies(clk.Now)
	ctx := t.Context()
	call := apppolicy.Call{UserID: "u1", ClientID: "c1", BotID: "b1", Order: true}

	// No policy: the defaults admit any bot, live, and count orders.
	if err := ps.Admit(ctx, apppolicy.Call{UserID: "u1", ClientID: "c0", BotID: "bx", Live: true, Order: true}); err != nil {
		t.Fatal(err)
	}
	if err := ps.Set(ctx, "u1", "c1", apppolicy.Policy{Bots: []string{"b1", "b2"}, OrdersPerHour: 2}); err != nil {
		t.Fatal(err)
	}
	if got, _ := ps.Get(ctx, "u1", "c1"); got.Live || got.OrdersPerHour != 2 || len(got.Bots) != 2 {
		t.Fatalf("stored policy %+v", got)
	}
	// An app limited to chosen bots creates none and acts on no other; nothing is counted.
	if l := limitOf(t, ps.Admit(ctx, apppolicy.Call{UserID: "u1", ClientID: "c1", CreatesBot: true})); l != apppolicy.LimitBots {
		t.Fatalf("create with a bot list: %q", l)
	}
	if l := limitOf(t, ps.Admit(ctx, apppolicy.Call{UserID: "u1", ClientID: "c1", BotID: "b3", Order: true})); l != apppolicy.LimitBots {
		t.Fatalf("another bot: %q", l)
	}
	// "b" is not "b1": the list is matched by whole IDs.
	if l := limitOf(t, ps.Admit(ctx, apppolicy.Call{UserID: "u1", ClientID: "c1", BotID: "b", Order: true})); l != apppolicy.LimitBots {
		t.Fatalf("a prefix of an allowed ID: %q", l)
	}
	if l := limitOf(t, ps.Admit(ctx, apppolicy.Call{UserID: "u1", ClientID: "c1", BotID: "b1", Live: true, Order: true})); l != apppolicy.LimitVenue {
		t.Fatalf("live on a paper-only app: %q", l)
	}
	// Two orders, then the cap; an exit passes and is counted; the next hour starts again.
	for i := range 2 {
		if err := ps.Admit(ctx, call); err != nil {
			t.Fatalf("order %d: %v", i, err)
		}
	}
	err := ps.Admit(ctx, call)
	if e, _ := errs.As(err); limitOf(t, err) != apppolicy.LimitOrdersPerHour || e.Details["resetsAt"] != "2026-12-06T10:00:00Z" ||
		e.Details["used"] != 2 || e.Details["value"] != 2 {
		t.Fatalf("third order: %v %+v", err, e)
	}
	exit := call
	exit.Exit = true
	if err := ps.Admit(ctx, exit); err != nil {
		t.Fatalf("exit at the cap: %v", err)
	}
	if n, _ := ps.HourUsed(ctx, "u1", "c1"); n != 3 {
		t.Fatalf("used %d, want 3", n)
	}
	clk.Advance(time.Minute)
	if err := ps.Admit(ctx, call); err != nil {
		t.Fatalf("next hour: %v", err)
	}
	// The kill switch comes first.
	if _, err := ps.Suspend(ctx, "u1"); err != nil {
		t.Fatal(err)
	}
	if l := limitOf(t, ps.Admit(ctx, call)); l != apppolicy.LimitKillSwitch {
		t.Fatalf("under the switch: %q", l)
	}
	// A policy that cannot be used is refused.
	if err := ps.Set(ctx, "u1", "c1", apppolicy.Policy{OrdersPerHour: 0}); err == nil {
		t.Fatal("0 orders an hour stored")
	}
}

// The notional caps refuse exactly at the boundary, to the last unit (1e-8 USDT), under
// concurrent calls; exits pass them and add nothing; the day starts over at midnight UTC.
func TestNotionalCapsAtTheBoundary(t *testing.T) {
	_, rdb := storetest.New(t)
	clk := testkit.NewClock(time.Date(2026, 12, 6, 23, 0, 0, 0, time.UTC))
	ps := apppolicy.NewPolicies(rdb, clk.Now)
	ctx := t.Context()
	p := apppolicy.DefaultPolicy()
	p.OrdersPerHour, p.Approve = 1000, false
	if err := ps.Set(ctx, "u1", "c1", p); err != nil {
		t.Fatal(err)
	}
	entry := func(n string) apppolicy.Call {
		return apppolicy.Call{UserID: "u1", ClientID: "c1", BotID: "b1", Live: true, Order: true, Notional: httpapi.Num(testkit.D(n))}
	}
	// Per order: 100 exactly passes (dry), one unit more is refused.
	if err := ps.Check(ctx, entry("100")); err != nil {
		t.Fatalf("100 USDT: %v", err)
	}
	err := ps.Check(ctx, entry("100.00000001"))
	if e, _ := errs.As(err); limitOf(t, err) != apppolicy.LimitOrderNotional || e.Details["value"] != "100" {
		t.Fatalf("100.00000001 USDT: %v", err)
	}
	// Per day, 20 concurrent entries of 33.33333333: 15 fit in 500 (499.99999995).
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted, refused := 0, 0
	for range 20 {
		wg.Go(func() {
			err := ps.Admit(ctx, entry("33.33333333"))
			mu.Lock()
			defer mu.Unlock()
			switch l := limitOf(t, err); l {
			case "":
				admitted++
			case apppolicy.LimitDayNotional:
				refused++
			default:
				t.Errorf("refused by %s", l)
			}
		})
	}
	wg.Wait()
	if admitted != 15 || refused != 5 {
		t.Fatalf("admitted %d, refused %d; want 15 and 5", admitted, refused)
	}
	if got, _ := ps.DayCommitted(ctx, "u1", "c1"); !got.Equal(testkit.D("499.99999995")) {
		t.Fatalf("committed %s", got)
	}
	// 0.00000006 is one unit too many, 0.00000005 is the rest of the day exactly.
	err = ps.Admit(ctx, entry("0.00000006"))
	if e, _ := errs.As(err); limitOf(t, err) != apppolicy.LimitDayNotional || e.Details["used"] != "499.99999995" ||
		e.Details["resetsAt"] != "2026-12-07T00:00:00Z" {
		t.Fatalf("one unit past the day: %v", err)
	}
	if err := ps.Admit(ctx, entry("0.00000005")); err != nil {
		t.Fatalf("the day's last unit: %v", err)
	}
	// An exit passes at the cap and adds nothing; a dry run counts nothing.
	exit := entry("1000")
	exit.Exit = true
	if err := ps.Admit(ctx, exit); err != nil {
		t.Fatalf("exit: %v", err)
	}
	if got, _ := ps.DayCommitted(ctx, "u1", "c1"); !got.Equal(testkit.D("500")) {
		t.Fatalf("committed %s after the exit", got)
	}
	if n, _ := ps.HourUsed(ctx, "u1", "c1"); n != 17 {
		t.Fatalf("%d orders counted, want 17 (15 + 1 entries, 1 exit)", n)
	}
	clk.Advance(time.Hour)
	if err := ps.Admit(ctx, entry("100")); err != nil {
		t.Fatalf("the next day: %v", err)
	}
	// A policy may lift a cap (0) and refuses a negative or over-precise one.
	p.DayNotional = httpapi.Num(testkit.D("0"))
	if err := ps.Set(ctx, "u1", "c1", p); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if err := ps.Admit(ctx, entry("100")); err != nil {
			t.Fatalf("no day cap: %v", err)
		}
	}
	for _, bad := range []string{"-1", "0.000000001", "10000000.1"} {
		p.OrderNotional = httpapi.Num(testkit.D(bad))
		if err := ps.Set(ctx, "u1", "c1", p); err == nil {
			t.Fatalf("order cap %s stored", bad)
		}
	}
}

// A live entry above the approval threshold is held (nothing counted) once every limit has
// passed; admitted again as approved, it is counted. Paper entries and exits never wait.
func TestApprovalThreshold(t *testing.T) {
	_, rdb := storetest.New(t)
	ps := apppolicy.NewPolicies(rdb, testkit.NewClock(time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)).Now)
	ctx := t.Context()
	p := apppolicy.DefaultPolicy()
	p.ApproveAbove = httpapi.Num(testkit.D("50"))
	if err := ps.Set(ctx, "u1", "c1", p); err != nil {
		t.Fatal(err)
	}
	call := func(n string, live bool) apppolicy.Call {
		return apppolicy.Call{UserID: "u1", ClientID: "c1", BotID: "b1", Live: live, Order: true, Notional: httpapi.Num(testkit.D(n))}
	}
	if err := ps.Admit(ctx, call("50", true)); err != nil {
		t.Fatalf("50 at a threshold of 50: %v", err)
	}
	var held *apppolicy.ApprovalNeeded
	if err := ps.Admit(ctx, call("50.00000001", true)); !errors.As(err, &held) || !held.Above.Equal(testkit.D("50")) {
		t.Fatalf("above the threshold: %v", err)
	}
	// Caps refuse before an approval is asked for.
	if l := limitOf(t, ps.Admit(ctx, call("100.5", true))); l != apppolicy.LimitOrderNotional {
		t.Fatalf("over the order cap: %q", l)
	}
	if got, _ := ps.DayCommitted(ctx, "u1", "c1"); !got.Equal(testkit.D("50")) {
		t.Fatalf("held entries counted: %s", got)
	}
	approved := call("50.00000001", true)
	approved.Approved = true
	if err := ps.Admit(ctx, approved); err != nil {
		t.Fatalf("approved: %v", err)
	}
	if got, _ := ps.DayCommitted(ctx, "u1", "c1"); !got.Equal(testkit.D("100.00000001")) {
		t.Fatalf("committed %s after the approval", got)
	}
	exit := call("80", true)
	exit.Exit = true
	for _, c := range []apppolicy.Call{call("80", false), exit} {
		if err := ps.Admit(ctx, c); err != nil {
			t.Fatalf("%+v: %v", c, err)
		}
	}
	if got, _ := ps.Get(ctx, "u1", "c1"); !got.Approve || !got.ApproveAbove.Equal(testkit.D("50")) || got.ApprovalMode() != "above" {
		t.Fatalf("stored %+v", got)
	}
}
