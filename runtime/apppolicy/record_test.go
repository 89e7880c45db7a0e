package apppolicy_test

import (
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/apppolicy"
	"github.com/sigops/sigops/runtime/database/dbtest"
	"github.com/sigops/sigops/runtime/errs"
	"github.com/sigops/sigops/runtime/httpapi"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// onBothStores runs test with policies on Redis alone and with PostgreSQL as their record:
// every admission decides the same either way.
func onBothStores(t *testing.T, test func(*testing.T, func(now func() time.Time) *apppolicy.Policies)) {
	for _, withDB := range []bool{false, true} {
		name := "redis"
		if withDB {
			name = "postgresql"
		}
		t.Run(name, func(t *testing.T) {
			_, rdb := storetest.New(t)
			o := apppolicy.Options{}
			if withDB {
				o.DB = dbtest.New(t)
			}
			test(t, func(now func() time.Time) *apppolicy.Policies {
				o.Now = now
				return apppolicy.New(rdb, o)
			})
		})
	}
}

func codeOf(err error) errs.Code {
	if e, ok := errs.As(err); ok {
		return e.Code
	}
	return ""
}

// A guardrail does not lapse with Redis: after FLUSHALL the kill switch is still on, since
// the same time, and once lifted, the app's policy refuses what it refused before.
func TestGuardrailsSurviveALostRedis(t *testing.T) {
	_, rdb := storetest.New(t)
	clk := testkit.NewClock(time.Date(2026, 12, 6, 9, 30, 0, 0, time.UTC))
	ps := apppolicy.New(rdb, apppolicy.Options{Now: clk.Now, DB: dbtest.New(t)})
	ctx := t.Context()
	policy := apppolicy.Policy{Bots: []string{"b1"}, OrdersPerHour: 1, OrderNotional: httpapi.Num(decimal.RequireFromString("25.5")),
		DayNotional: httpapi.Num(decimal.RequireFromString("100")), Approve: true, ApproveAbove: httpapi.Num(decimal.RequireFromString("10"))}
	if err := ps.Set(ctx, "u1", "c1", policy); err != nil {
		t.Fatal(err)
	}
	since, err := ps.Suspend(ctx, "u1")
	if err != nil {
		t.Fatal(err)
	}
	flush(t, rdb)

	// The first call after the loss is decided on the record's copy: refused by the switch.
	err = ps.Admit(ctx, apppolicy.Call{UserID: "u1", ClientID: "c1", BotID: "b1", Order: true})
	if e, _ := errs.As(err); limitOf(t, err) != apppolicy.LimitKillSwitch || e.Details["since"] != since.Format(time.RFC3339) {
		t.Fatalf("after FLUSHALL: %v", err)
	}
	if got, on, err := ps.Since(ctx, "u1"); !on || !got.Equal(since) || err != nil {
		t.Fatalf("switch after FLUSHALL: %v %v %v", got, on, err)
	}
	if err := ps.Lift(ctx, "u1"); err != nil {
		t.Fatal(err)
	}
	got, err := ps.Get(ctx, "u1", "c1")
	if err != nil || strings.Join(got.Words(nil), "|") != strings.Join(policy.Words(nil), "|") || !got.OrderNotional.Equal(policy.OrderNotional.Decimal) {
		t.Fatalf("policy after FLUSHALL: %+v %v, want %+v", got, err, policy)
	}
	// The policy is in force: another bot, live trading and a second order are refused.
	if l := limitOf(t, ps.Admit(ctx, apppolicy.Call{UserID: "u1", ClientID: "c1", BotID: "b2", Order: true})); l != apppolicy.LimitBots {
		t.Fatalf("another bot: %q", l)
	}
	if l := limitOf(t, ps.Admit(ctx, apppolicy.Call{UserID: "u1", ClientID: "c1", BotID: "b1", Live: true, Order: true})); l != apppolicy.LimitVenue {
		t.Fatalf("live: %q", l)
	}
	if err := ps.Admit(ctx, apppolicy.Call{UserID: "u1", ClientID: "c1", BotID: "b1", Order: true}); err != nil {
		t.Fatal(err)
	}
	if l := limitOf(t, ps.Admit(ctx, apppolicy.Call{UserID: "u1", ClientID: "c1", BotID: "b1", Order: true})); l != apppolicy.LimitOrdersPerHour {
		t.Fatalf("second order: %q", l)
	}
	// A lift is recorded too: the next loss does not turn the switch back on.
	flush(t, rdb)
	if _, on, err := ps.Since(ctx, "u1"); on || err != nil {
		t.Fatalf("lifted switch after a second FLUSHALL: %v %v", on, err)
	}
}

// With Redis lost and PostgreSQL down, nothing is admitted (503, never a switch read as
// off), and a change PostgreSQL refuses is made nowhere.
func TestPostgreSQLDownRefusesRatherThanGuess(t *testing.T) {
	_, rdb := storetest.New(t)
	url := dbtest.NewURL(t)
	up := apppolicy.New(rdb, apppolicy.Options{DB: dbtest.Pool(t, url)})
	downPool := dbtest.Pool(t, url)
	downPool.Close()
	down := apppolicy.New(rdb, apppolicy.Options{DB: downPool})
	ctx := t.Context()
	if err := up.Set(ctx, "u1", "c1", apppolicy.Policy{OrdersPerHour: 3}); err != nil {
		t.Fatal(err)
	}
	if _, err := up.Suspend(ctx, "u1"); err != nil {
		t.Fatal(err)
	}

	// Redis intact: admissions need no database.
	if l := limitOf(t, down.Admit(ctx, apppolicy.Call{UserID: "u1", ClientID: "c1", Order: true})); l != apppolicy.LimitKillSwitch {
		t.Fatalf("PostgreSQL down, Redis intact: %q", l)
	}
	// Refused changes: the lift leaves the switch on, the policy keeps its limit.
	if err := down.Lift(ctx, "u1"); codeOf(err) != errs.ServiceUnavailable {
		t.Fatalf("lift with PostgreSQL down: %v", err)
	}
	if _, on, _ := up.Since(ctx, "u1"); !on {
		t.Fatal("a refused lift turned the switch off")
	}
	if err := down.Set(ctx, "u1", "c1", apppolicy.Policy{OrdersPerHour: 50}); codeOf(err) != errs.ServiceUnavailable {
		t.Fatalf("set with PostgreSQL down: %v", err)
	}
	if p, _ := up.Get(ctx, "u1", "c1"); p.OrdersPerHour != 3 {
		t.Fatalf("a refused change was made: %+v", p)
	}
	// A suspension holds at once even when it cannot be recorded.
	if _, err := down.Suspend(ctx, "u2"); codeOf(err) != errs.ServiceUnavailable {
		t.Fatalf("suspend with PostgreSQL down: %v", err)
	}
	if l := limitOf(t, down.Admit(ctx, apppolicy.Call{UserID: "u2", ClientID: "c1", Order: true})); l != apppolicy.LimitKillSwitch {
		t.Fatalf("an unrecorded suspension: %q", l)
	}

	// Redis lost as well: no call is admitted until the record answers.
	flush(t, rdb)
	if err := down.Admit(ctx, apppolicy.Call{UserID: "u1", ClientID: "c1", Order: true}); codeOf(err) != errs.ServiceUnavailable {
		t.Fatalf("Redis and PostgreSQL lost: %v", err)
	}
	if n, _ := rdb.Exists(ctx, store.UserAppsCached("u1")).Result(); n != 0 {
		t.Fatal("marked as copied without a copy")
	}
	if l := limitOf(t, up.Admit(ctx, apppolicy.Call{UserID: "u1", ClientID: "c1", Order: true})); l != apppolicy.LimitKillSwitch {
		t.Fatalf("PostgreSQL back: %q", l)
	}
}

// Policies and switches that Redis held before PostgreSQL did are recorded by Adopt (never
// over a record) and so survive the next loss.
func TestAdoptRecordsWhatRedisHeldAlone(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := t.Context()
	before := apppolicy.NewPolicies(rdb, nil)
	if err := before.Set(ctx, "u1", "c1", apppolicy.Policy{OrdersPerHour: 7, Live: true}); err != nil {
		t.Fatal(err)
	}
	if err := before.Set(ctx, "u1", "c2", apppolicy.Policy{OrdersPerHour: 9}); err != nil {
		t.Fatal(err)
	}
	since, err := before.Suspend(ctx, "u1")
	if err != nil {
		t.Fatal(err)
	}
	ps := apppolicy.New(rdb, apppolicy.Options{DB: dbtest.New(t)})
	// c2 is recorded already (changed since): Adopt leaves that record as it is.
	if err := ps.Set(ctx, "u1", "c2", apppolicy.Policy{OrdersPerHour: 11}); err != nil {
		t.Fatal(err)
	}
	if n, err := ps.Adopt(ctx, "u1", []string{"c1", "c2", "c3"}); n != 1 || err != nil {
		t.Fatalf("adopt: %d %v", n, err)
	}
	if n, err := ps.Adopt(ctx, "u1", []string{"c1", "c2"}); n != 0 || err != nil {
		t.Fatalf("adopt again: %d %v", n, err)
	}
	flush(t, rdb)
	for client, want := range map[string]int{"c1": 7, "c2": 11} {
		if p, err := ps.Get(ctx, "u1", client); err != nil || p.OrdersPerHour != want {
			t.Fatalf("%s after FLUSHALL: %+v %v, want %d orders an hour", client, p, err, want)
		}
	}
	if got, on, err := ps.Since(ctx, "u1"); !on || !got.Equal(since) || err != nil {
		t.Fatalf("switch after FLUSHALL: %v %v %v", got, on, err)
	}
}

func flush(t *testing.T, rdb redis.UniversalClient) {
	t.Helper()
	if err := storetest.FlushAll(t.Context(), rdb); err != nil {
		t.Fatal(err)
	}
}
