package executor

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"strconv"
	"testing"
	"time"

	"github.com/sigops/sigops/internal/testkit"
	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/position"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// The first leg of a new plan is staged together with the plan, in one script, only if no
// other attempt's plan is stored; the order record in it is position's write (its tests are
// position's), here checked for what the executor gives it.
func TestStageWithPlanStoresPlanRequestAndPendingOrderOrNothing(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	e := New(Deps{Redis: rdb})
	now := time.UnixMilli(1_795_000_000_000)
	l := leg{Name: "close:BTC/USDT", Op: opReduce, Symbol: "BTC/USDT"}
	plan := []byte(`{"legs":[{"name":"close:BTC/USDT","op":"reduce"}]}`)
	stage := func(sig string) (*job, exchange.OrderRequest, error) {
		j := &job{env: queue.Envelope{SignalID: sig, BotID: "bot"}, bot: registry.Bot{ID: "bot"},
			now: now, progress: map[string]string{}, unsaved: plan}
		req := exchange.OrderRequest{ClientOrderID: order.ClientOrderID(sig, l.Name), Symbol: "BTC/USDT",
			Kind: exchange.Futures, Side: exchange.SideSell, Type: exchange.Limit, Amount: testkit.D("0.015"),
			Price: testkit.D("65000.5"), ReduceOnly: true, Leverage: 3}
		return j, req, e.stagePending(ctx, j, l, req)
	}
	rdb.LPush(ctx, store.BookOrders("bot"), "older")

	j, req, err := stage("signal-a")
	if err != nil {
		t.Fatal(err)
	}
	if j.unsaved != nil || j.progress[fieldPlan] != string(plan) {
		t.Fatalf("the attempt does not know its plan is stored: unsaved %s, progress %v", j.unsaved, j.progress)
	}
	progress := rdb.HGetAll(ctx, store.SignalProgress("bot", "signal-a")).Val()
	reqData, _ := json.Marshal(req)
	if progress[fieldPlan] != string(plan) || progress[prefixReq+l.Name] != string(reqData) || len(progress) != 3 {
		t.Fatalf("progress %v", progress)
	}
	ms, err := strconv.ParseInt(progress[prefixSent+l.Name], 10, 64)
	if err != nil || time.Since(time.UnixMilli(ms)).Abs() > time.Minute {
		t.Fatalf("send time %q is not Redis's time of the staging (%v)", progress[prefixSent+l.Name], err)
	}
	if ttl := rdb.TTL(ctx, store.SignalProgress("bot", "signal-a")).Val(); (ProgressTTL - ttl).Abs() > time.Minute {
		t.Fatalf("progress TTL %s", ttl)
	}
	rec, err := position.ReadOrder(ctx, rdb, "bot", req.ClientOrderID)
	want := position.PendingOrder(req, "signal-a", "bot", l.Name, now.UnixMilli())
	if g, w := jsonOf(rec), jsonOf(want); err != nil || g != w {
		t.Fatalf("pending record %s (%v), want %s", g, err, w)
	}
	if ttl := rdb.TTL(ctx, store.BookOrder("bot", req.ClientOrderID)).Val(); (position.OrderTTL - ttl).Abs() > time.Minute {
		t.Fatalf("record TTL %s", ttl)
	}
	if list := rdb.LRange(ctx, store.BookOrders("bot"), 0, -1).Val(); !reflect.DeepEqual(list, []string{req.ClientOrderID, "older"}) {
		t.Fatalf("order list %v", list)
	}

	// Another attempt's plan is stored: nothing is staged, the attempt is told to follow it.
	rdb.HSet(ctx, store.SignalProgress("bot", "signal-c"), fieldPlan, `{"legs":[]}`)
	c, req, err := stage("signal-c")
	if !errors.Is(err, errPlanLost) {
		t.Fatalf("stage with a plan already stored = %v, want errPlanLost", err)
	}
	if n := len(rdb.HGetAll(ctx, store.SignalProgress("bot", "signal-c")).Val()); n != 1 || c.progress[fieldPlan] != "" {
		t.Fatalf("a losing attempt staged %d progress fields, or took the plan as its own", n)
	}
	if rdb.Exists(ctx, store.BookOrder("bot", req.ClientOrderID)).Val() != 0 || rdb.LLen(ctx, store.BookOrders("bot")).Val() != 2 {
		t.Fatal("a losing attempt wrote an order record")
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
