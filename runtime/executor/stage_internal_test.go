package executor

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/shopspring/decimal"

	"github.com/sigops/sigops/runtime/exchange"
	"github.com/sigops/sigops/runtime/order"
	"github.com/sigops/sigops/runtime/queue"
	"github.com/sigops/sigops/runtime/registry"
	"github.com/sigops/sigops/runtime/store"
	"github.com/sigops/sigops/runtime/store/storetest"
)

// The first leg of a new plan is staged by stageWithPlanScript, the others (and a stored
// plan's) by position.StageOrder in a transaction: both must leave the same state.
func TestStageWithPlanWritesWhatStageOrderWrites(t *testing.T) {
	_, rdb := storetest.New(t)
	ctx := context.Background()
	e := New(Deps{Redis: rdb})
	now := time.UnixMilli(1_795_000_000_000)
	l := leg{Name: "close:BTC/USDT", Op: opReduce, Symbol: "BTC/USDT"}
	stage := func(sig string, unsaved []byte) (*job, error) {
		j := &job{env: queue.Envelope{SignalID: sig, BotID: "bot-" + sig}, bot: registry.Bot{ID: "bot-" + sig},
			now: now, progress: map[string]string{}, unsaved: unsaved}
		req := exchange.OrderRequest{ClientOrderID: order.ClientOrderID(sig, l.Name), Symbol: "BTC/USDT",
			Kind: exchange.Futures, Side: exchange.SideSell, Type: exchange.Limit, Amount: decimal.RequireFromString("0.015"),
			Price: decimal.RequireFromString("65000.5"), ReduceOnly: true, Leverage: 3}
		return j, e.stagePending(ctx, j, l, req)
	}
	type state struct {
		progress         map[string]string
		progressTTL      time.Duration
		record           string
		recordTTL        time.Duration
		orders           []string
		unsaved, planned bool
	}
	read := func(j *job) state {
		sig, bot, cid := j.env.SignalID, j.bot.ID, order.ClientOrderID(j.env.SignalID, l.Name)
		var s state
		s.progress = rdb.HGetAll(ctx, store.SignalProgress(sig)).Val()
		s.progressTTL = rdb.TTL(ctx, store.SignalProgress(sig)).Val().Round(time.Hour)
		s.record = rdb.Get(ctx, store.BookOrder(bot, cid)).Val()
		s.recordTTL = rdb.TTL(ctx, store.BookOrder(bot, cid)).Val().Round(time.Hour)
		s.orders = rdb.LRange(ctx, store.BookOrders(bot), 0, -1).Val()
		s.unsaved = j.unsaved != nil
		s.planned = j.progress[fieldPlan] != ""
		return s
	}

	plan := []byte(`{"legs":[{"name":"close:BTC/USDT","op":"reduce"}]}`)
	// Another order already listed, as a bot's list usually is.
	for _, b := range []string{"bot-signal-a", "bot-signal-b"} {
		rdb.LPush(ctx, store.BookOrders(b), "older")
	}
	a, err := stage("signal-a", plan)
	if err != nil {
		t.Fatal(err)
	}
	b, err := stage("signal-b", nil)
	if err != nil {
		t.Fatal(err)
	}
	sa, sb := read(a), read(b)
	if sa.progress[fieldPlan] != string(plan) || !sa.planned || sa.unsaved {
		t.Fatalf("the plan was not stored with the pending order: %+v", sa)
	}
	delete(sa.progress, fieldPlan)
	sa.planned = false
	// Both store the send time, Redis's clock at the staging; its value differs by a moment.
	for _, s := range []*state{&sa, &sb} {
		ms, err := strconv.ParseInt(s.progress[prefixSent+l.Name], 10, 64)
		if err != nil || time.Since(time.UnixMilli(ms)).Abs() > time.Minute {
			t.Fatalf("send time %q is not Redis's time of the staging (%v)", s.progress[prefixSent+l.Name], err)
		}
		delete(s.progress, prefixSent+l.Name)
	}
	// The same but for the IDs.
	norm := func(s state, sig string) string {
		cid := order.ClientOrderID(sig, l.Name)
		return strings.NewReplacer(cid, "<cid>", "bot-"+sig, "<bot>", sig, "<sig>").Replace(fmt.Sprintf("%+v", s))
	}
	if got, want := norm(sa, "signal-a"), norm(sb, "signal-b"); got != want {
		t.Fatalf("scripted staging differs from position.StageOrder's:\n got %s\nwant %s", got, want)
	}
	if sb.record == "" || len(sb.orders) != 2 || sb.progressTTL != ProgressTTL || sb.recordTTL <= 0 {
		t.Fatalf("unexpected staging: %+v", sb)
	}

	// Another attempt's plan is stored: nothing is staged, the attempt is told to follow it.
	rdb.HSet(ctx, store.SignalProgress("signal-c"), fieldPlan, `{"legs":[]}`)
	c, err := stage("signal-c", plan)
	if !errors.Is(err, errPlanLost) {
		t.Fatalf("stage with a plan already stored = %v, want errPlanLost", err)
	}
	sc := read(c)
	if len(sc.progress) != 1 || sc.record != "" || len(sc.orders) != 0 || sc.planned {
		t.Fatalf("a losing attempt staged something: %+v", sc)
	}
}
